"""Kernels of the constructs the GPU back end records since issue "every kernel on every backend": tuple(...), a
local array's reductions, a def inside a kernel, *args of a device function, a device function of another module
and a grid-wide barrier. At module level, so that a child process without numba's simulator (the PTX check of
tests/test_gpu_tail.py) imports them as the GPU tests do. Each compiles with numba-cuda as written (unlike
tests/test_constructs_tail.py's, whose .min()/.max() and heterogeneous *args loop numba-cuda does not type)."""

import numpy as np
from numba import cuda

from . import constructs_tail_helpers as helpers


@cuda.jit
def tuple_values(out):
    i = cuda.grid(1)
    t = tuple((i, i * 2, 3))
    u = tuple(t)
    out[i] = t[0] + u[1] * 10 + u[2] * 100 + len(tuple())


@cuda.jit
def local_reductions(a, out):
    i = cuda.grid(1)
    loc = cuda.local.array(4, np.float64)
    for j in range(4):
        loc[j] = a[(i + j) % a.size]
    out[i, 0] = loc.sum()
    out[i, 1] = loc.mean()
    out[i, 2] = loc.prod()
    out[i, 3] = loc.argmin()
    out[i, 4] = loc.argmax()
    out[i, 5] = loc.all() + 2 * loc.any()


@cuda.jit
def closures(a, out):
    i = cuda.grid(1)
    base = i * 100

    def load_plus(j, k):
        if j >= a.size:
            return base
        return a[j] + base + k

    def put(v):
        out[i] = v

    if i < out.size:
        put(load_plus(i, 1) + load_plus(i + 8, 2))


@cuda.jit(device=True)
def weighted(a, i, *ws):
    return a[i] * ws[0] + ws[1]


@cuda.jit(device=True)
def total(*xs):
    s = 0.0
    for x in xs:
        s += x
    return s


@cuda.jit
def device_varargs(a, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = weighted(a, i, 3.0, 1.0) + total(1.0, 2.0, a[i])


@cuda.jit
def module_device_function(a, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = helpers.scaled_load(a, i) + helpers.OFFSET


@cuda.jit
def grid_rotate(a, out):
    g = cuda.cg.this_grid()
    i = cuda.grid(1)
    a[i] = i * 10
    g.sync()
    out[i] = a[(i + 1) % a.size]


#: name -> (kernel, grid, block, a function making fresh arguments, the outputs numpy says: {argument: array})
CASES = {
    "tuple(...)": (tuple_values, 1, 8, lambda: [np.zeros(8)],
                   lambda: {0: np.array([i + i * 20 + 300 for i in range(8)], float)}),
    "local reductions": (local_reductions, 1, 4, lambda: [np.array([1.0, 5, 2, 4]), np.zeros((4, 6))],
                         lambda: {1: np.array([[w.sum(), w.mean(), w.prod(), w.argmin(), w.argmax(), 3.0]
                                               for w in (np.roll([1.0, 5, 2, 4], -i) for i in range(4))])}),
    "a def inside a kernel": (closures, 2, 8, lambda: [np.arange(16.0), np.zeros(16)],
                              lambda: {1: np.array([(i + i * 100 + 1) + (i + 8 + i * 100 + 2 if i + 8 < 16 else i * 100)
                                                    for i in range(16)], float)}),
    "*args of a device function": (device_varargs, 1, 8, lambda: [np.arange(8.0), np.zeros(8)],
                                   lambda: {1: np.array([i * 3.0 + 1 + 3.0 + i for i in range(8)])}),
    "a device function of another module": (module_device_function, 1, 8, lambda: [np.arange(8.0), np.zeros(8)],
                                            lambda: {1: np.array([i * 2 + 1 + 7.0 for i in range(8)])}),
    "grid.sync()": (grid_rotate, 4, 8, lambda: [np.zeros(32), np.zeros(32)],
                    lambda: {1: np.roll(np.arange(32) * 10.0, -1)}),
}
