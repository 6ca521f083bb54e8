"""Twenty kernel launches, half of them racing: a global counter bumped by one thread of every block (a race
across blocks), a shared slot every thread of a block writes (a race within a block), between clean vector
adds. An ordinary program: run it with `python twenty_launches.py` or `gpuviz run twenty_launches.py`."""

import numpy as np
from numba import cuda


@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


@cuda.jit
def count_blocks(counter):
    if cuda.threadIdx.x == 0:
        counter[0] += 1  # every block's thread 0 reads and writes counter[0]: a race across blocks


@cuda.jit
def last_writer(out):
    slot = cuda.shared.array(1, np.int32)
    slot[0] = cuda.threadIdx.x  # every thread of the block writes slot[0]: a race within the block
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = slot[0]


def main():
    n = 64
    a = np.arange(n, dtype=np.float32)
    b = np.ones(n, dtype=np.float32)
    out = np.zeros(n, dtype=np.float32)
    counter = np.zeros(1, dtype=np.int32)
    winners = np.zeros(2, dtype=np.int32)
    for k in range(20):
        if k % 2 == 0:
            vector_add[2, 32](a, b, out)
        elif k % 4 == 1:
            count_blocks[4, 32](counter)
        else:
            last_writer[2, 32](winners)
    print("sum", float(out.sum()), "counter", int(counter[0]), "winners", winners.tolist())


if __name__ == "__main__":
    main()
