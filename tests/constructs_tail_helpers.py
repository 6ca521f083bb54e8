"""A module whose device function and number a kernel reaches as its attributes (tests/test_constructs_tail.py)."""

from numba import cuda

OFFSET = 7


@cuda.jit(device=True)
def scaled_load(a, i):
    return a[i] * 2 + 1
