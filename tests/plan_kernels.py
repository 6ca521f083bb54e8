"""Kernels for tests/test_plan.py: each line's meaning is asserted there by its number, so keep them in place."""

import numba
import numpy as np
from numba import cuda

TILE = 4
WEIGHTS = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)


@cuda.jit(device=True)
def add_into(dst, i, v):
    dst[i] += v


@cuda.jit
def mixed(x, out, n):
    tile = cuda.shared.array((TILE, 2), dtype=numba.float32)
    scratch = cuda.local.array(2, numba.int32)
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    scratch[0] = t
    tile[t % TILE, 0] = x[i] + x[i + 1] * WEIGHTS[t % 4]
    cuda.syncthreads()
    if i < n:
        add_into(out, i, tile[t % TILE, 0])
        cuda.atomic.add(out, 0, 1.0)
        return


@cuda.jit
def two_refusals(a):
    d = {"x": 1.0}  # noqa: F841 - the dict literal is the construct the plan refuses, never run
    a[0] = 1.0
    while a[0] > 0:
        a[0] -= 1.0
    else:
        a[0] = 2.0


from math import sqrt as sqrt_of  # noqa: E402 - here, not at the top: the kernels above are asserted by line

SHIFT = 1.5 - 2j  # a module-level complex number: a constant, as numba freezes it


@cuda.jit
def complex_constant(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = SHIFT * i + sqrt_of(4.0)
