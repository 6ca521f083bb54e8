import numpy as np
from numba import cuda


@cuda.jit
def shuffled_pairs(a, out):
    i = cuda.grid(1)
    if i < out.size:
        window = a[i:i + 2]  # slicing: gpuviz cannot instrument it, so the launch runs on numba's simulator
        v = cuda.shfl_down_sync(0xFFFFFFFF, window[0], 1)  # which has no warp shuffles
        out[i] = v + window[1]


a = np.arange(33, dtype=np.float64)
out = np.zeros(32)
shuffled_pairs[1, 32](a, out)
print("result", out.tolist())
