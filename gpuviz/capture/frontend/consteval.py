"""The one constant evaluator of the capture: what a kernel's expression is worth at compile time.

numba freezes module-level names and closure variables when it compiles a kernel; gpuviz evaluates a shared
array's shape and dtype, a ``cuda.grid(ndim)``, an exception's class, in the namespace the front end read
(:meth:`FunctionSource.names`). :func:`const_eval` is the strict reading (a shape must be constant: an error
otherwise); :func:`fold` the lenient one (the value numba would fold, or :data:`UNKNOWN`), which also takes
the compile-time values of a device function's locals and parameters.
"""

from __future__ import annotations

import ast

from ..dtypes import dtype_text
from ..errors import UnsupportedConstruct
from .names import scalar_type_name
from .source import assigned_names

#: what :func:`fold` returns for an expression numba would not fold
UNKNOWN = object()


def evaluate(fs, node, extra: dict | None = None):
    """``node`` evaluated in ``fs``'s namespace (and ``extra``); raises what the evaluation raises."""
    code = compile(ast.Expression(body=node), fs.file, "eval")
    return eval(code, {**fs.names(), **(extra or {})})  # noqa: S307 - the user's own module constants


def is_constant(fplan, node) -> bool:
    """Whether ``node`` reads only module-level names (and literals), as ``fplan`` resolved them: then it is
    known at compile time."""
    for x in ast.walk(node):
        if isinstance(x, ast.Name):
            ref = fplan.ref(x)
            if ref is not None and ref.is_local:
                return False
    return True


def const_eval(fs, node, error):
    """The compile-time constant ``node`` (a shape, a dtype); ``error(node, what)`` makes the
    UnsupportedConstruct raised when it is none."""
    try:
        return evaluate(fs, node)
    except Exception as exc:  # noqa: BLE001 - whatever the user's expression raises, said with its line
        raise error(node, f"expected a compile-time constant here ({type(exc).__name__}: {exc})") from exc


def np_dtype(fs, dtype, node) -> str:
    """The dtype's text: a plain name, or a record's layout (``dtypes.dtype_text``), which the CPU runtime reads
    back (str() of a record, aligned or with a nested array field, does not)."""
    try:
        return dtype_text(dtype)
    except (TypeError, ValueError, NotImplementedError) as exc:
        raise construct_error(fs, node, f"unknown dtype {dtype!r}") from exc


def construct_error(fs, node, what) -> UnsupportedConstruct:
    """The UnsupportedConstruct of ``node`` in ``fs``: file:line, what, and the line as written; ``.construct``
    names the AST node's type (the plan's diagnostics use it)."""
    line = getattr(node, "lineno", fs.first_line)
    exc = UnsupportedConstruct(f"{fs.file}:{line}: {what}\n    {fs.line_text(line)}", file=fs.file, line=line)
    exc.construct = type(node).__name__
    return exc


def fold(node, fs, constants: dict):
    """The value of ``node`` when it reads only module-level names, closure variables and ``constants``
    (else ``UNKNOWN``): what numba would fold into the compiled code."""
    if node is None:
        return UNKNOWN
    local = assigned_names(fs.tree) | set(fs.params)
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id in local and n.id not in constants:
            return UNKNOWN
        if isinstance(n, (ast.Call, ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.ListComp, ast.GeneratorExp)):
            if not isinstance(n, ast.Call) or not _is_type_call(n, fs):
                return UNKNOWN
    try:
        return evaluate(fs, node, constants)
    except Exception:  # noqa: BLE001 - not a constant numba could fold either
        return UNKNOWN


def _is_type_call(node: ast.Call, fs) -> bool:
    """``int(...)``, ``np.int32(...)``, ``numba.int64(...)``: a cast numba folds when its argument is constant."""
    if isinstance(node.func, ast.Name) and node.func.id in ("int", "float", "len", "tuple", "abs", "min", "max"):
        return True
    try:
        obj = evaluate(fs, node.func)
    except Exception:  # noqa: BLE001
        return False
    return scalar_type_name(obj) is not None
