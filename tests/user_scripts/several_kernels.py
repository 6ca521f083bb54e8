"""An ordinary Numba CUDA program: several kernels, several launches, device arrays and numpy arrays."""

import sys

import numpy as np
from numba import cuda

TPB = 32


@cuda.jit(device=True)
def scaled(x, factor):
    return x * factor


@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


@cuda.jit
def block_sums(values, sums):
    tile = cuda.shared.array(TPB, dtype=np.float32)
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    tile[t] = 0.0
    if i < values.size:
        tile[t] = scaled(values[i], 2.0)
    cuda.syncthreads()
    stride = TPB // 2
    while stride > 0:
        if t < stride:
            tile[t] += tile[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        sums[cuda.blockIdx.x] = tile[0]


@cuda.jit
def transpose(src, dst):
    x, y = cuda.grid(2)
    if y < src.shape[0] and x < src.shape[1]:
        dst[x, y] = src[y, x]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    a = np.arange(n, dtype=np.float32)
    b = np.full(n, 0.5, dtype=np.float32)
    d_a = cuda.to_device(a)
    d_b = cuda.to_device(b)
    d_out = cuda.device_array_like(a)
    blocks = (n + TPB - 1) // TPB
    vector_add[blocks, TPB](d_a, d_b, d_out)
    out = d_out.copy_to_host()
    print("vector_add ok:", bool(np.allclose(out, a + b)), "sum", float(out.sum()))

    sums = np.zeros(blocks, dtype=np.float32)
    block_sums[blocks, TPB](out, sums)  # a numpy array straight in: copied to and from the device
    print("block_sums:", [round(float(s), 1) for s in sums])

    m = np.arange(6 * 5, dtype=np.int32).reshape(6, 5)
    t = np.zeros((5, 6), dtype=np.int32)
    transpose[(1, 2), (8, 4)](m, t)
    print("transpose ok:", bool((t == m.T).all()))
    vector_add[blocks, TPB](d_out, d_b, d_out)  # a second launch of the same kernel, in place
    print("again:", float(d_out.copy_to_host()[-1]))


if __name__ == "__main__":
    main()
