import numpy as np
from numba import cuda


@cuda.jit
def touch(out):
    i = cuda.grid(1)
    out[i % out.size] = i


out = cuda.device_array(1024, dtype=np.int64)
touch[2**20, 1024](out)  # 1,073,741,824 threads
print("done")
