"""A kernel at module level for tests/test_gpu_recorder_sets.py's PTX check (a child process imports it)."""

from numba import cuda, float32


@cuda.jit
def tiled(a, out):
    tile = cuda.shared.array(64, float32)
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    if i < a.size:
        tile[t] = a[i] * 2
    cuda.syncthreads()
    if i < a.size:
        out[i] = tile[63 - t] + a[i]


@cuda.jit
def stencil(a, out):
    i = cuda.grid(1)
    if 0 < i < a.size - 1:
        out[i] = a[i - 1] + a[i + 1] - 2 * a[i]


@cuda.jit
def both(a, out):
    tile = cuda.shared.array(64, float32)
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    if 0 < i < a.size - 1:
        tile[t] = a[i - 1] + a[i + 1]
    cuda.syncthreads()
    if i < a.size:
        out[i] = tile[63 - t] * a[i]
