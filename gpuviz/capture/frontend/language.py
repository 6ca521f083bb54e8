"""The Python a kernel may use around the construct table's calls: operators, builtins, ``math``/``cmath``
functions, methods of values, ``cuda`` intrinsics, fp16 functions, vector types and the thread indexes, by name.

The front end's support check (:mod:`.support`) accepts what is listed here; each back end maps the same names to
what it runs (the CPU executor's generator: ``backends/cpu/tables.py``, whose tables have exactly these keys).
"""

from __future__ import annotations

import ast
import re
import sys

#: ``cuda.<index>.<axis>``: the thread and block indexes and sizes, and their axes
THREAD_INDEXES = frozenset({"threadIdx", "blockIdx", "blockDim", "gridDim"})
AXES = frozenset({"x", "y", "z"})

#: ``math.<name>(...)``
MATH_FUNCTIONS = frozenset({
    "sqrt", "exp", "log", "log2", "log10", "log1p", "expm1", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
    "sinh", "cosh", "tanh", "fabs", "pow", "floor", "ceil", "trunc", "isnan", "isinf", "isfinite", "copysign",
    "hypot", "fmod", "erf", "exp2", "acosh", "asinh", "atanh", "degrees", "radians", "ldexp", "frexp", "modf", "erfc",
    "gamma", "lgamma", "remainder", "nextafter",
})

#: ``cmath.<name>(...)``
CMATH_FUNCTIONS = frozenset({"sqrt", "exp", "log", "log10", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
                             "cosh", "tanh", "asinh", "acosh", "atanh", "phase", "polar", "rect", "isnan", "isinf",
                             "isfinite"})

#: ``value.<method>(...)``: methods of arrays and numbers (a local array's reductions are the construct table's)
METHODS = frozenset({"reshape", "bit_count", "conjugate", "view", "copy"})

#: ``cuda.<name>(x)``: bit and arithmetic intrinsics
INTRINSICS = frozenset({"popc", "clz", "ffs", "brev", "cbrt"})

#: ``cuda.fp16.<name>(...)``
FP16_FUNCTIONS = frozenset({"hadd", "hsub", "hmul", "hdiv", "hfma", "hneg", "habs", "hsin", "hcos", "hlog", "hlog2",
                            "hlog10", "hexp", "hexp2", "hexp10", "hsqrt", "hrsqrt", "hceil", "hfloor", "hrcp",
                            "htrunc", "hrint", "heq", "hne", "hge", "hgt", "hle", "hlt", "hmax", "hmin"})

#: builtins a kernel may call
BUILTIN_CALLS = frozenset({"min", "max", "abs", "int", "float", "bool", "round", "len", "pow", "complex", "tuple"})

#: functions of Python's ``operator`` module a kernel may call with two operands (``operator.add`` given to a
#: kernel factory), as the binary operators they are
OPERATOR_FUNCTIONS = frozenset({
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lshift", "rshift", "or_", "and_", "xor", "iadd", "isub",
    "imul", "itruediv", "ifloordiv", "imod", "ipow", "ilshift", "irshift", "ior", "iand", "ixor", "lt", "le", "gt",
    "ge", "eq", "ne",
})
#: ... and with one operand
UNARY_OPERATOR_FUNCTIONS = frozenset({"neg", "pos", "invert", "not_", "truth"})

#: binary operators (``@`` is not one)
BINARY_OPERATORS = frozenset({ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift,
                              ast.RShift, ast.BitOr, ast.BitAnd, ast.BitXor})

#: comparisons (``in`` and ``not in`` are not); numba types ``is`` for enum members, None and types
COMPARISONS = frozenset({ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq, ast.Is, ast.IsNot})

#: expressions a kernel cannot hold, and what to use instead (one message for them all)
CONTAINER_EXPRESSIONS = (ast.List, ast.ListComp, ast.Dict, ast.Set, ast.GeneratorExp, ast.Lambda, ast.JoinedStr)


def vector_type(name: str) -> str | None:
    """The canonical name of ``cuda.<name>`` when it is a CUDA vector type (``float64x4``; ``short2`` is
    ``int16x2``), else None. Read off numba's cuda module once something imported it (a kernel has: it is a
    ``@cuda.jit`` function); without it, no name is a vector type."""
    cuda_mod = sys.modules.get("numba.cuda")
    obj = getattr(cuda_mod, name, None) if cuda_mod is not None and name.isidentifier() else None
    canonical = getattr(obj, "__name__", "") if isinstance(obj, type) else ""
    return canonical if re.fullmatch(r"(u?int(8|16|32|64)|float(16|32|64))x[1-4]", canonical) else None


def text_of(node) -> str:
    """The source text of ``node`` (its type's name when ast cannot print it back)."""
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - an exotic node ast cannot print back
        return type(node).__name__


def field_key(sub: ast.Subscript) -> bool:
    """Whether ``sub`` indexes by a constant field name (``rec["x"]``)."""
    return isinstance(sub.slice, ast.Constant) and isinstance(sub.slice.value, str)
