import ctypes

import numpy as np
from numba import cuda

libc = ctypes.PyDLL(None)  # a PyDLL call keeps the interpreter lock: no other thread of the process runs


@cuda.jit
def hold(out):
    libc.sleep(600)
    out[0] = 1


out = np.zeros(1, np.int32)
print("launching", flush=True)
hold[1, 1](out)
print("never printed")
