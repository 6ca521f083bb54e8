"""The CPU code generator's tables: what each ``cuda.*`` index, ``math.*`` function, builtin, operator and comparison
of a kernel becomes in the generated lockstep code, and a helper to write its source. Their keys are the names the
front end accepts (:mod:`gpuviz.capture.frontend.language`), no more and no fewer (``tests/test_support.py``)."""

from __future__ import annotations

import ast
import math


# cuda.<attr>.<component> -> runtime expression
CUDA_DIMS = {"threadIdx": "rt.tid", "blockIdx": "rt.bid", "blockDim": "rt.bdim", "gridDim": "rt.gdim"}


XYZ = {"x": 0, "y": 1, "z": 2}


MATH = {
    "sqrt": "np.sqrt", "exp": "np.exp", "log": "np.log", "log2": "np.log2", "log10": "np.log10",
    "log1p": "np.log1p", "expm1": "np.expm1", "sin": "np.sin", "cos": "np.cos", "tan": "np.tan",
    "asin": "np.arcsin", "acos": "np.arccos", "atan": "np.arctan", "atan2": "np.arctan2",
    "sinh": "np.sinh", "cosh": "np.cosh", "tanh": "np.tanh", "fabs": "np.abs", "pow": "np.power",
    "floor": "rt.math_floor", "ceil": "rt.math_ceil", "trunc": "rt.math_trunc", "isnan": "np.isnan",
    "isinf": "np.isinf", "isfinite": "np.isfinite", "copysign": "np.copysign", "hypot": "np.hypot",
    "fmod": "np.fmod", "erf": "rt.math_erf", "exp2": "np.exp2",
    "acosh": "np.arccosh", "asinh": "np.arcsinh", "atanh": "np.arctanh", "degrees": "np.degrees",
    "radians": "np.radians", "ldexp": "np.ldexp", "frexp": "rt.math_frexp", "modf": "rt.math_modf",
    "erfc": "rt.math_vec('erfc')", "gamma": "rt.math_vec('gamma')", "lgamma": "rt.math_vec('lgamma')",
    "remainder": "rt.math_vec('remainder')", "nextafter": "np.nextafter",
}


BUILTINS = {"min": "rt.b_min", "max": "rt.b_max", "abs": "np.abs", "int": "rt.b_int", "float": "rt.b_float",
             "bool": "rt.truth", "round": "rt.b_round", "len": "rt.b_len", "pow": "rt.b_pow",
             "complex": "rt.b_complex", "tuple": "rt.b_tuple"}


# functions of Python's operator module (operator.add passed to a kernel factory) as the operators they are
OPERATOR = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
             "lshift": "<<", "rshift": ">>", "or_": "|", "and_": "&", "xor": "^", "iadd": "+", "isub": "-",
             "imul": "*", "itruediv": "/", "ifloordiv": "//", "imod": "%", "ipow": "**", "ilshift": "<<",
             "irshift": ">>", "ior": "|", "iand": "&", "ixor": "^", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
             "eq": "==", "ne": "!="}


BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
           ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|", ast.BitAnd: "&",
           ast.BitXor: "^"}


CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
           # numba types `is` for enum members, None and types: identity of compile-time values is equality
           ast.Is: "==", ast.IsNot: "!="}


def literal(v) -> str:
    """Source text for a constant; inf and nan have no literal of their own."""
    if isinstance(v, float) and not math.isfinite(v):
        return f"float({str(v)!r})"
    if isinstance(v, complex):
        return f"complex({literal(v.real)}, {literal(v.imag)})"
    return repr(v)
