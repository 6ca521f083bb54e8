import numpy as np
from numba import cuda


@cuda.jit
def pair_sums(a, out):
    i = cuda.grid(1)
    if i < out.size:
        window = a[i:i + 2]  # slicing: gpuviz cannot record which elements a slice touches
        out[i] = window[0] + window[1]


@cuda.jit
def double(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = 2 * out[i]


a = np.arange(9, dtype=np.float64)
out = np.zeros(8)
pair_sums[1, 8](a, out)
double[1, 8](out)
print("result", out.tolist())
