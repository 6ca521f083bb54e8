"""Kernels gpuviz refuses, one refusal each (and a few that mix them): tests/test_support.py holds the front end's
support check (gpuviz.capture.frontend.support) to the CPU executor's code generator on each. ``EXAMPLES`` pairs
every kernel with a piece of the message its refusal gives, so that each one is known to reach the refusal it is
here for. None of them is run: gpuviz refuses them before any launch."""
# ruff: noqa: F841, E731, E701 - the constructs below are what the kernels are for, not slips

import cmath
import enum
import math
import operator
import os
from operator import add

import numpy as np
from numba import cuda, float64

import tests.plan_kernels as other_module

LABEL = "not a number"


class Color(enum.Enum):
    RED = 1
    NAMED = "red"


@cuda.jit(device=True)
def helper(x):
    return x + 1


@cuda.jit
def while_else(a):
    while a[0] > 0:
        a[0] -= 1
    else:
        a[0] = 2


@cuda.jit
def kernel_returns_a_value(a):
    return a[0]


@cuda.jit
def bare_raise(a):
    if a[0] < 0:
        raise


@cuda.jit
def raise_a_number(a):
    if a[0] < 0:
        raise 5


@cuda.jit
def raise_an_unknown_name(a):
    if a[0] < 0:
        raise NoSuchError("no")  # noqa: F821 - the name the plan cannot evaluate


@cuda.jit
def with_statement(a):
    with open("x"):
        a[0] = 1


@cuda.jit
def try_statement(a):
    try:
        a[0] = 1
    except ValueError:
        a[0] = 2


@cuda.jit
def assert_and_del(a):
    x = a[0]
    assert x > 0
    del x


@cuda.jit
def inner_function_with_a_default(a):
    def f(x, y=1):
        return x + y

    a[0] = f(a[0])


@cuda.jit
def starred_target(a):
    x, *rest = (1, 2, 3)
    a[0] = x


@cuda.jit
def matmul_assign(a, b):
    x = a[0]
    x @= b[0]


@cuda.jit
def for_else(a):
    for i in range(3):
        a[i] = i
    else:
        a[0] = 9


@cuda.jit
def tuple_loop_variable(a):
    for i, j in range(3):
        a[0] = i


@cuda.jit
def ellipsis_constant(a):
    x = ...


@cuda.jit
def matmul(a, b):
    a[0] = a[0] @ b[0]


@cuda.jit
def membership(a):
    if 1 in (1, 2):
        a[0] = 1


@cuda.jit
def walrus(a):
    a[0] = (x := 2)


@cuda.jit
def containers(a):
    a[0] = [1, 2][0]
    a[1] = {1: 2}[1]
    a[2] = len({1, 2})
    a[3] = [i for i in range(2)][0]
    a[4] = sum(i for i in range(2))
    b = lambda x: x
    s = f"{a[0]}"


@cuda.jit
def other_expressions(a):
    s = {i for i in range(2)}
    d = {i: i for i in range(2)}
    (yield)


@cuda.jit
def enum_by_a_variable(a):
    a[0] = Color[str(a[0])]


@cuda.jit
def enum_that_is_no_number(a):
    a[0] = Color["NAMED"]
    a[1] = Color.NAMED


@cuda.jit
def names_as_values(a):
    f = len
    a[0] = undefined_thing  # noqa: F821 - the name the plan cannot find
    a[1] = LABEL


@cuda.jit
def module_attributes(a):
    x = cuda.nosuch
    y = math.nosuch
    z = os.sep
    a[0] = other_module.TILE  # a number of another module: fine


@cuda.jit
def calls_with_keywords(a, fn):
    def inner(x):
        return x

    a[0] = inner(x=1)
    a[1] = fn(a, 0, x=1)
    a[2] = helper(x=1)
    other_module.add_into(a, 0, v=1.0)


@cuda.jit
def methods(a):
    scratch = cuda.local.array(4, float64)
    x = scratch.sum(0)
    y = a.sum()
    a.fill(0)
    z = a.view(dtype=np.float32)
    w = a[0](1)


@cuda.jit
def names_called(a):
    a[0] = add(a[0], a[1], a[2])
    a[1] = sorted(a)
    a[2] = operator.add(a[0], a[1], a[2])


@cuda.jit
def module_functions(a):
    a[0] = cmath.nosuch(a[0])
    a[1] = math.factorial(3)
    a[2] = np.zeros(3)


@cuda.jit
def cuda_calls(a, n):
    i = cuda.grid()
    j = cuda.grid(n)
    s = cuda.shared.array(4, dtype=float64, alignment=16)
    t = cuda.shared.array(4, "no such dtype")
    u = cuda.nosuch(1)
    v = cuda.cg.this_grid(1)
    w = cuda.popc()


@cuda.jit
def dead_code_after_return(a):
    a[0] = 1
    return
    x = [1, 2]  # never reached: not refused


@cuda.jit
def refused_condition_and_branches(a):
    if [1][0]:
        d = {1: 2}  # inside a refused statement: not read
    if a[0] > 0:
        d = {1: 2}
    else:
        e = {3, 4}
    while a[0] > 0:
        a[0] -= 1
        f = [a[0]]
        break
        g = [0]  # dead code


@cuda.jit(device=True)
def device_with_refusals(x):
    y = [x]
    return x


@cuda.jit
def calls_a_refused_device_function(a):
    a[0] = device_with_refusals(a[0])
    a[1] = {1: 2}[1]


#: (kernel, a piece of the message of one of its refusals)
EXAMPLES = [
    (while_else, "'while ... else' is not supported"),
    (kernel_returns_a_value, "a kernel cannot return a value"),
    (bare_raise, "a bare 'raise' cannot be used"),
    (raise_a_number, "'raise' needs an exception class or instance"),
    (raise_an_unknown_name, "expected a compile-time constant here (NameError"),
    (with_statement, "'With' statements are not supported"),
    (try_statement, "'Try' statements are not supported"),
    (assert_and_del, "'Delete' statements are not supported"),
    (inner_function_with_a_default, "has **kwargs, keyword-only or default arguments"),
    (starred_target, "cannot assign to a Starred"),
    (matmul_assign, "operator MatMult is not supported"),
    (for_else, "'for ... else' is not supported"),
    (tuple_loop_variable, "the loop variable must be a plain name"),
    (ellipsis_constant, "constant Ellipsis is not supported"),
    (matmul, "operator MatMult is not supported"),
    (membership, "comparison In is not supported"),
    (walrus, "':=' is not supported"),
    (containers, "a ListComp cannot be used inside a CUDA kernel"),
    (other_expressions, "'Yield' expressions are not supported"),
    (enum_by_a_variable, "kernels look an enum member up by a constant name"),
    (enum_that_is_no_number, "Color.NAMED: kernels use enum members whose values are numbers"),
    (names_as_values, "'LABEL' (str) cannot be used as a value"),
    (module_attributes, "os.sep: a kernel reads another module's numbers"),
    (calls_with_keywords, "keyword arguments to device functions are not supported"),
    (methods, "the method .fill() is not supported by gpuviz"),
    (names_called, "calling 'sorted' is not supported"),
    (module_functions, "math.factorial() is not supported"),
    (cuda_calls, "cuda.grid: missing argument ndim"),
    (dead_code_after_return, None),  # nothing refused: the dead code is not read
    (refused_condition_and_branches, "a Set cannot be used"),
    (calls_a_refused_device_function, "a List cannot be used"),
]
