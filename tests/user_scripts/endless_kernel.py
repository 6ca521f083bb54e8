import numpy as np
from numba import cuda


@cuda.jit
def wait_for_flag(flag, out):
    i = cuda.grid(1)
    while flag[0] == 0:  # nobody ever sets the flag
        out[i] += 1


flag = np.zeros(1, dtype=np.int32)
out = np.zeros(32, dtype=np.int64)
print("launching", flush=True)
wait_for_flag[1, 32](flag, out)
print("never printed")
