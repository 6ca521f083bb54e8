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
import sys
from pathlib import Path

#: the package the bundled kernels install as (the repository's ``kernels/`` folder)
KERNELS_PACKAGE = "gpuviz.kernels"


def _checkout_kernels() -> Path | None:
    """The ``kernels/`` folder beside this package in a checkout (``gpuviz/`` and ``kernels/`` side by side)."""
    folder = Path(__file__).resolve().parent.parent / "kernels"
    return folder if (folder / "__init__.py").is_file() and (folder / "catalog.json").is_file() else None


def _package():
    """``gpuviz.kernels``: installed (a wheel, or ``pip install -e .``), else, in a checkout that was never installed
    (``PYTHONPATH=.``, as on the GPU machine), the checkout's ``kernels/`` folder loaded under that name."""
    try:
        return importlib.import_module(KERNELS_PACKAGE)
    except ModuleNotFoundError as exc:
        folder = _checkout_kernels()
        if exc.name != KERNELS_PACKAGE or folder is None:
            raise
    spec = importlib.util.spec_from_file_location(KERNELS_PACKAGE, folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[KERNELS_PACKAGE] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(KERNELS_PACKAGE, None)
        raise
    setattr(sys.modules["gpuviz"], "kernels", module)
    return module


def all_kernels() -> dict:
    """Every bundled kernel's :class:`~gpuviz.kernels.KernelSpec` by CLI name, in teaching order."""
    return _package().all_kernels()


def get_kernel(name: str):
    """One bundled kernel's spec; KeyError naming the known kernels when there is none of that name."""
    return _package().get_kernel(name)


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
    _package()
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
        return _package().KernelSpec
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def kernels_folder() -> Path:
    """The folder the bundled kernels' sources are in, as this installation has it (``kernels/`` of a checkout,
    ``site-packages/gpuviz/kernels`` of a wheel): found without importing them."""
    try:
        spec = importlib.util.find_spec(KERNELS_PACKAGE)
    except ModuleNotFoundError:
        spec = None
    if spec is None or not spec.submodule_search_locations:
        if _checkout_kernels() is not None:
            return _checkout_kernels()
        raise ModuleNotFoundError(f"{KERNELS_PACKAGE} is not installed", name=KERNELS_PACKAGE)
    return Path(next(iter(spec.submodule_search_locations)))


__all__ = ["KERNELS_PACKAGE", "all_kernels", "get_kernel", "kernel_catalog", "kernel_info", "kernel_module",
           "kernels_folder"]
