"""A kernel that writes far outside its array: on a GPU an illegal address (used by test_gpu.py)."""

from numba import cuda


@cuda.jit
def scribble(out):
    i = cuda.grid(1)
    out[i * 100_000_000] = 1.0  # no bounds check on a GPU: lands far outside the 8-element array


@cuda.jit(debug=True, opt=False)
def past_the_end(a):
    i = cuda.grid(1)
    a[i + 1000] = 1.0  # debug=True: numba-cuda checks the index on the device and the launch raises IndexError
