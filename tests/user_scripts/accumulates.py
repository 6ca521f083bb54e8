"""A program whose kernel adds into its output (y += 2x, on a device array), so a launch that ran twice, or on
the half-written results of a failed instrumented run, prints a wrong answer."""

import numpy as np
from numba import cuda


@cuda.jit
def accumulate(x, y):
    i = cuda.grid(1)
    if i < x.size:
        y[i] += 2 * x[i]


x = np.arange(100, dtype=np.float32)
y = np.ones(100, dtype=np.float32)
d_y = cuda.to_device(y)
accumulate[4, 32](x, d_y)
accumulate[4, 32](x, d_y)
out = d_y.copy_to_host()
print("max error", float(np.abs(out - (1 + 4 * x)).max()))
