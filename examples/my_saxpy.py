"""SAXPY, as you would write it for a GPU: y = a*x + y.

    python examples/my_saxpy.py             runs it (numba's CUDA simulator if you set NUMBA_ENABLE_CUDASIM=1)
    gpuviz run examples/my_saxpy.py         runs it with every launch captured -> my_saxpy.gpuviz
    gpuviz open examples/my_saxpy.py        runs it from the window and animates the launches
"""

import sys

import numpy as np
from numba import cuda


@cuda.jit
def saxpy(a, x, y):
    i = cuda.grid(1)
    if i < x.size:  # the last block has threads past the end of the arrays
        y[i] = a * x[i] + y[i]


def main(n: int = 1000, threads_per_block: int = 128):
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, dtype=np.float32)
    d_x, d_y = cuda.to_device(x), cuda.to_device(y)
    blocks = (n + threads_per_block - 1) // threads_per_block
    saxpy[blocks, threads_per_block](2.0, d_x, d_y)
    result = d_y.copy_to_host()
    print(f"saxpy on {n} elements in {blocks} blocks of {threads_per_block}: max error "
          f"{float(np.abs(result - (2 * x + y)).max())}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
