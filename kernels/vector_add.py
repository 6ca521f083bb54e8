"""c = a + b, one thread per element: the "hello world" of CUDA."""

import numpy as np
from numba import cuda

from . import KernelSpec
from ._launch import launch_1d


@cuda.jit
def vector_add(a, b, c, n):
    i = cuda.grid(1)  # this thread's element: blockIdx.x * blockDim.x + threadIdx.x
    if i < n:  # the last block sticks out past the end of the arrays
        c[i] = a[i] + b[i]


def make_args(size, rng):
    a = rng.random(size, dtype=np.float32)
    b = rng.random(size, dtype=np.float32)
    c = np.zeros(size, dtype=np.float32)
    return [a, b, c, size]


def reference(args):
    a, b, _, _ = args
    return {2: a + b}


SPEC = KernelSpec(
    name="vector_add",
    kernel=vector_add,
    description="c = a + b: one thread per element, with the i < n guard",
    note=(
        "Each thread computes its own index from its block and thread ids and adds one pair of numbers: "
        "thousands of simple threads instead of one fast loop. The size is not a multiple of the block, "
        "so the threads of the last block past the end do nothing: that is what the `if i < n` guard is for. "
        "Watch a warp's 32 loads land on 32 neighbouring floats (coalesced), and in the timings see that "
        "copying the arrays to and from the GPU costs far more than the addition itself."
    ),
    default_size=10_000,
    small_size=1000,
    default_block=(256,),
    make_args=make_args,
    launch=lambda size, block: launch_1d(size, block, "vector_add"),
    reference=reference,
)
