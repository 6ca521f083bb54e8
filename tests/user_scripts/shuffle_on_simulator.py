import numpy as np
from numba import cuda


@cuda.jit
def shifted(a, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = cuda.shfl_down_sync(0xFFFFFFFF, a[i], 1)  # numba's simulator has no warp shuffles


a = np.arange(32, dtype=np.float64)
out = np.zeros(32)
shifted[1, 32](a, out)
print("result", out.tolist())
