"""A kernel compiled with debug=True that indexes past its array: numba-cuda checks the index on the device and
the launch raises IndexError naming the thread (used by the GPU tests)."""

import numpy as np
from numba import cuda


@cuda.jit(debug=True, opt=False)
def past_the_end(a):
    i = cuda.grid(1)
    a[i + 1000] = 1.0  # 8 elements: every thread indexes past the end


a = cuda.to_device(np.zeros(8, np.float32))
try:
    past_the_end[1, 32](a)
    cuda.synchronize()
except IndexError as exc:
    print("the program caught:", exc)
print("program went on")
