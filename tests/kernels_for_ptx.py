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
