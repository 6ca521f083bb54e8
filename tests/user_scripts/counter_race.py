"""The counter race of CUDA Python tutorials: every thread of two blocks bumps one counter with `+=` (a race
within and across blocks: the count comes out wrong), then the same count with cuda.atomic.add (right)."""

import numpy as np
from numba import cuda


@cuda.jit
def k1(c):
    c[0] += 1


@cuda.jit
def k2(c):
    cuda.atomic.add(c, 0, 1)


racy = np.zeros(1, np.int32)
k1[2, 32](racy)
atomic = np.zeros(1, np.int32)
k2[2, 32](atomic)
print("racy", int(racy[0]), "atomic", int(atomic[0]))
