import numpy as np
from numba import cuda


@cuda.jit
def sweep(a, out, n):
    i = cuda.grid(1)
    acc = 0.0
    for k in range(16):
        acc += a[(i + k) % n]
        out[(i + k) % n] = acc


a = np.ones(1024, np.float32)
out = np.zeros(1024, np.float32)
sweep[1, 32](a, out, 1024)  # small: traced
print("first launch done", flush=True)
sweep[1024, 64](a, out, 1024)  # 65,536 threads x 16 iterations: about 2.2 million events
print("second launch done:", out[:2])
