"""Sum an array in two launches: each block reduces its tile in shared memory, then one block sums the
partial sums. Shows shared memory, barriers, a device function and two launches of one kernel.

    gpuviz run examples/shared_reduce.py 4096
    gpuviz run examples/shared_reduce.py 4096 --launch 2      # trace only the second launch
"""

import sys

import numpy as np
from numba import cuda

TPB = 128


@cuda.jit(device=True)
def load_or_zero(values, i):
    if i < values.size:
        return values[i]
    return 0.0


@cuda.jit
def block_sum(values, partial):
    tile = cuda.shared.array(TPB, dtype=np.float32)
    t = cuda.threadIdx.x
    tile[t] = load_or_zero(values, cuda.grid(1))
    cuda.syncthreads()
    stride = TPB // 2
    while stride > 0:  # a tree: half the threads add, the others wait at the barrier
        if t < stride:
            tile[t] += tile[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = tile[0]


def main(n: int = 2048):
    values = np.random.default_rng(0).random(n).astype(np.float32)
    blocks = (n + TPB - 1) // TPB
    d_values = cuda.to_device(values)
    d_partial = cuda.device_array(blocks, dtype=np.float32)
    block_sum[blocks, TPB](d_values, d_partial)
    d_total = cuda.device_array(1, dtype=np.float32)
    block_sum[1, TPB](d_partial, d_total)  # blocks <= TPB: one block finishes the job
    total = float(d_total.copy_to_host()[0])
    print(f"sum of {n} values: {total:.3f} (numpy: {float(values.sum()):.3f})")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
