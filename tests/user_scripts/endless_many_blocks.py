"""An endless kernel over many blocks: every thread waits for a flag that nothing sets."""

import numpy as np
from numba import cuda


@cuda.jit
def spin(flag, out):
    i = cuda.grid(1)
    while flag[0] == 0:
        out[i] += 1


flag = np.zeros(1, dtype=np.int32)
out = np.zeros(64 * 128, dtype=np.int64)
spin[64, 128](flag, out)
print("never printed")
