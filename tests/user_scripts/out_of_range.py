import numpy as np
from numba import cuda


@cuda.jit
def shift_left(src, dst):
    i = cuda.grid(1)
    if i < dst.size:
        dst[i] = src[i + 1]  # the last thread reads one past the end


src = np.arange(64, dtype=np.float32)
dst = np.zeros(64, dtype=np.float32)
print("before the launch")
try:
    shift_left[2, 32](src, dst)
except Exception as exc:  # the program tries to carry on: gpuviz must still stop it
    print("caught", type(exc).__name__)
print("after the launch")
