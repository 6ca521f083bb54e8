"""What a kernel's names refer to, as the front end resolves them (:class:`Ref`), the diagnostic of a construct
gpuviz does not support (:class:`Diagnostic`), and the small readings of names every reader shares: a module's
role, a dtype's name, a scalar type, the grid group and its ``sync()``."""

from __future__ import annotations

import ast
import types
from dataclasses import dataclass

import numpy as np

#: what a name can refer to in a kernel
REF_KINDS = (
    "parameter", "local", "shared", "local_array", "const_array", "host_array", "device_array", "device_function",
    "constant", "cuda", "math", "numpy", "numba", "operator", "enum", "scalar_type", "builtin", "undefined",
    "unsupported", "module", "inner_function", "grid_group",
)
#: the kinds of a name bound inside the function (its parameters and locals, array declarations among them; a
#: function defined inside it; the grid group ``g = cuda.cg.this_grid()``)
LOCAL_KINDS = frozenset({"parameter", "local", "shared", "local_array", "const_array", "inner_function", "grid_group"})


@dataclass(frozen=True)
class Ref:
    """What one name of the source refers to. ``text``: the name, or the dotted chain it starts
    (``cuda.threadIdx.x``, ``math.sqrt``). ``target``: what the name itself stands for, as a dotted chain a back
    end reads without looking at the object: a module (``('cuda',)``, ``('math',)``), a function imported from
    one (``from math import sqrt as root``: ``('math', 'sqrt')``; ``from numba.cuda import syncthreads``:
    ``('cuda', 'syncthreads')``; ``operator.add``: ``('operator', 'add')``), a scalar type (``from numba import
    uint32``: ``('numba', 'uint32')``; ``np.float32`` imported: ``('numpy', 'float32')``); empty otherwise."""

    kind: str
    text: str
    target: tuple[str, ...] = ()

    @property
    def is_local(self) -> bool:
        return self.kind in LOCAL_KINDS


@dataclass(frozen=True)
class Diagnostic:
    """One construct gpuviz does not support: which (the AST node's type), where, and what to write instead
    (the message says)."""

    construct: str
    file: str
    line: int
    message: str



def module_role(obj) -> str | None:
    """'cuda', 'math', 'cmath', 'operator', 'numpy' or 'numba' for the modules a kernel may use, else None."""
    if not isinstance(obj, types.ModuleType):
        return None
    name = obj.__name__
    if name in ("math", "cmath", "operator"):
        return name
    if name == "numpy":
        return "numpy"
    if "cuda" in name.split(".")[-1] and name.startswith(("numba", "numba_cuda")):
        return "cuda"
    if name in ("numba", "numba.types", "numba.core.types"):
        return "numba"
    return None


def is_dtype_name(name: str) -> bool:
    try:
        np.dtype(name)
        return name not in ("object",)
    except TypeError:
        return False


def scalar_type_name(obj) -> str | None:
    """numpy's name for a scalar type object: numba's ``uint32``/``float64`` (``from numba import uint32``) or
    numpy's ``np.float32`` class; None for anything else."""
    if isinstance(obj, type) and issubclass(obj, np.generic):
        return np.dtype(obj).name
    if type(obj).__module__.startswith(("numba.core.types", "numba.cuda.types")):
        name = str(obj)
        if name in ("boolean", "bool_"):
            return "bool"
        if is_dtype_name(name) and np.dtype(name).kind in "biufc":
            return np.dtype(name).name
    return None


def is_this_grid(fp, node) -> bool:
    """Whether ``node`` is the call ``cuda.cg.this_grid()``: the grid group, whose ``.sync()`` is a grid-wide barrier."""
    return isinstance(node, ast.Call) and fp.chain(node.func) == ["cuda", "cg", "this_grid"] and not node.args


def is_grid_sync(fp, node) -> bool:
    """Whether ``node`` is ``g.sync()`` of a grid group ``g = cuda.cg.this_grid()`` (or ``cuda.cg.this_grid().sync()``)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "sync"
            and not node.args and not node.keywords):
        return False
    group = node.func.value
    if isinstance(group, ast.Name):
        return (fp.ref(group) or Ref("", "")).kind == "grid_group"
    return is_this_grid(fp, group)
