"""Small kernels that exercise one instrumentation feature each (the bundled kernels live in kernels/)."""

import math

import numba
import numpy as np
from numba import cuda

SCALE = 3
OFFSETS = (1, 2)
WIDTH = 8
LUT = np.arange(8, dtype=np.int32) * 10


@cuda.jit(device=True)
def load_twice(arr, i):
    return arr[i] + arr[i]


@cuda.jit(device=True)
def clamp_store(out, i, v):
    if v > 100:
        out[i] = 100
        return
    out[i] = v


@cuda.jit
def grid2d(out):
    x, y = cuda.grid(2)
    w, h = cuda.gridsize(2)
    if x < out.shape[1] and y < out.shape[0]:
        out[y, x] = y * w + x + h * 0


@cuda.jit
def grid3d(out):
    x, y, z = cuda.grid(3)
    if z < out.shape[0] and y < out.shape[1] and x < out.shape[2]:
        out[z, y, x] = cuda.threadIdx.z * 100 + cuda.blockIdx.z * 10 + cuda.blockDim.z


@cuda.jit
def device_calls(a, out):
    i = cuda.grid(1)
    if i >= out.size:
        return
    v = load_twice(a, i) * SCALE + OFFSETS[1]
    clamp_store(out, i, v)


@cuda.jit
def loops_and_breaks(n_iters, out):
    i = cuda.grid(1)
    total = 0
    k = 0
    while True:
        k += 1
        if k > n_iters[i]:
            break
        if k % 2 == 0:
            continue
        total += k
    for j in range(i, 20, 7):
        total += j
    out[i] = total


@cuda.jit
def atomics_and_locals(values, hist, firsts):
    i = cuda.grid(1)
    tmp = cuda.local.array(4, numba.int32)
    for k in range(4):
        tmp[k] = values[i] + k
    old = cuda.atomic.add(hist, values[i] % 4, 1)
    firsts[i] = old
    cuda.atomic.max(hist, 4, tmp[3])


@cuda.jit
def warp_votes(x, out_shfl, out_ballot, out_lane):
    i = cuda.grid(1)
    v = x[i]
    out_shfl[i] = cuda.shfl_down_sync(0xFFFFFFFF, v, 1)
    out_ballot[i] = cuda.ballot_sync(0xFFFFFFFF, v % 2 == 0)
    out_lane[i] = cuda.laneid + cuda.warpsize * 0


@cuda.jit
def divergent_barrier(out):
    i = cuda.threadIdx.x
    if i < 16:
        cuda.syncthreads()
    out[i] = i


@cuda.jit
def early_exit_barrier(out):
    # threads that returned no longer count at a barrier (as on Volta and later GPUs)
    i = cuda.threadIdx.x
    if i >= 20:
        return
    s = cuda.shared.array(32, numba.float32)
    s[i] = i
    cuda.syncthreads()
    out[i] = s[(i + 1) % 20]


@cuda.jit
def out_of_range(a):
    i = cuda.grid(1)
    a[i + 1] = 1.0


@cuda.jit
def unsupported(a):
    d = {"x": 1.0}  # a dict: no CUDA kernel has one
    a[0] = d["x"]


@cuda.jit
def too_much_shared(a):
    s = cuda.shared.array(20000, numba.float32)
    s[0] = 1.0
    a[0] = s[0]


@cuda.jit
def shared_read_before_write(out):
    s = cuda.shared.array(64, numba.float32)
    t = cuda.threadIdx.x
    if cuda.blockIdx.x == 0:
        s[t] = 7.0
    cuda.syncthreads()
    out[cuda.grid(1)] = s[t]


@cuda.jit
def forever(a):
    i = 0
    while a[0] == 0:
        i += 1


@cuda.jit
def math_and_casts(x, out):
    i = cuda.grid(1)
    if i < x.size:
        y = math.sqrt(x[i]) + math.exp(-x[i]) + abs(x[i] - 2.0) + min(x[i], 1.5) + max(x[i], 0.5)
        out[i] = numba.float32(y) + math.floor(x[i]) + LUT[i % 8] + (1.0 if x[i] > 2.0 else -1.0)


@cuda.jit
def tuples_and_shorts(a, out):
    i = cuda.grid(1)
    pair = (i, i * 2)
    if i < a.size and a[i] > 0 and not (i == 3):
        out[i] = pair[1]
    elif i < a.size or a[0] > 100:
        out[i] = -1


@cuda.jit
def syncthreads_count_kernel(x, out):
    t = cuda.threadIdx.x
    n = cuda.syncthreads_count(x[cuda.grid(1)] > 0)
    if t == 0:
        out[cuda.blockIdx.x] = n


@cuda.jit(device=True)
def first_negative(arr, start, stop):
    # a device function with a loop, an early return of a value and a fall-through return
    for k in range(start, stop):
        if arr[k] < 0:
            return k
    return -1


@cuda.jit
def grid_stride_and_nested_control(x, out, hist):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, x.size, stride):  # per-thread bounds: a grid-stride loop
        v = x[i]
        j = 0
        while j < 4:
            j += 1
            if v > 2.0:
                if j == 2:
                    break
                v = v - 1.0
                continue
            v = v + 0.5
        out[i] = v
        cuda.atomic.add(hist, (i % 2, int(v) % 3), 1)
    tid = cuda.threadIdx.x
    if tid == 0:
        out[x.size + cuda.blockIdx.x] = first_negative(x, cuda.blockIdx.x * 4, cuda.blockIdx.x * 4 + 4)


@cuda.jit
def shared_3d_tile(src, dst):
    t = cuda.shared.array(shape=(2, 4, 8), dtype=numba.float32)
    x = cuda.threadIdx.x
    y = cuda.threadIdx.y
    z = cuda.threadIdx.z
    g = cuda.blockIdx.x * 64 + z * 32 + y * 8 + x
    t[z, y, x] = src[g]
    cuda.syncthreads()
    dst[g] = t[1 - z, 3 - y, 7 - x] + t[z, y, (x + 1) % 8]
