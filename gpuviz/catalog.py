"""The one way into the bundled teaching kernels.

The kernels live in the repository's ``kernels/`` folder and install as the package ``gpuviz.kernels``
(``setup.py`` maps the one onto the other): a top-level ``kernels`` package in site-packages would be a name
any other project may claim. Every part of gpuviz, the tests and the benches reach them through this module
(``tests/test_packaging.py`` checks that nothing else imports them), so where they live is said here only.

Nothing here imports a kernel module, or numba, until it is asked for one: :func:`kernel_catalog` and
:func:`kernel_info` read the kernels' plain facts from ``catalog.json`` without numba; :func:`all_kernels`,
:func:`get_kernel` and :func:`kernel_module` import the kernels themselves (and so numba, which picks its
simulator at that moment: set ``NUMBA_ENABLE_CUDASIM`` before).
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

#: the package the bundled kernels install as (the repository's ``kernels/`` folder)
KERNELS_PACKAGE = "gpuviz.kernels"


def all_kernels() -> dict:
    """Every bundled kernel's :class:`~gpuviz.kernels.KernelSpec` by CLI name, in teaching order."""
    return importlib.import_module(KERNELS_PACKAGE).all_kernels()


def get_kernel(name: str):
    """One bundled kernel's spec; KeyError naming the known kernels when there is none of that name."""
    return importlib.import_module(KERNELS_PACKAGE).get_kernel(name)


def kernel_catalog() -> dict:
    """Every bundled kernel's plain facts (:class:`~gpuviz.kernels.catalog.KernelInfo`) by name, without numba."""
    return kernel_module("catalog").kernel_catalog()


def kernel_info(name: str):
    """One bundled kernel's plain facts, without numba; KeyError naming the known kernels."""
    return kernel_module("catalog").kernel_info(name)


def kernel_module(name: str):
    """The bundled kernel module ``name`` (``"vector_add"``, ``"matmul"``, ``"fusion"``, ``"catalog"`` ...), for
    what a spec does not carry: a module's other kernels and constants (``matmul.TILE``, ``fusion.A``)."""
    if not name or not name.isidentifier():
        raise ValueError(f"{name!r} is not the name of a bundled kernel module")
    try:
        return importlib.import_module(f"{KERNELS_PACKAGE}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{KERNELS_PACKAGE}.{name}":
            raise
        known = sorted(p.stem for p in kernels_folder().glob("*.py") if not p.stem.startswith("__"))
        raise ModuleNotFoundError(f"no bundled kernel module named {name!r}; modules: {', '.join(known)}",
                                  name=exc.name) from None


def __getattr__(name: str):
    # ``from gpuviz.catalog import KernelSpec``: the type of what get_kernel returns, imported when asked for
    # (gpuviz.kernels' own __init__ imports no kernel module and no numba)
    if name == "KernelSpec":
        return importlib.import_module(KERNELS_PACKAGE).KernelSpec
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def kernels_folder() -> Path:
    """The folder the bundled kernels' sources are in, as this installation has it (``kernels/`` of a checkout,
    ``site-packages/gpuviz/kernels`` of a wheel): found without importing them."""
    spec = importlib.util.find_spec(KERNELS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"{KERNELS_PACKAGE} is not installed", name=KERNELS_PACKAGE)
    return Path(next(iter(spec.submodule_search_locations)))


__all__ = ["KERNELS_PACKAGE", "all_kernels", "get_kernel", "kernel_catalog", "kernel_info", "kernel_module",
           "kernels_folder"]
