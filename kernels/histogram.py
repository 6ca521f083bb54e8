"""Counting values into bins with atomics: straight into global memory, or first into a per-block
shared histogram that is merged at the end."""

import numba
import numpy as np
from numba import cuda

from . import KernelSpec
from ._launch import launch_1d

BINS = 64  # values are integers in [0, BINS)


@cuda.jit
def histogram_global(data, hist, n):
    i = cuda.grid(1)
    if i < n:
        cuda.atomic.add(hist, data[i], 1)  # threads with the same value queue up on one counter


@cuda.jit
def histogram_shared(data, hist, n):
    local_hist = cuda.shared.array(shape=BINS, dtype=numba.int32)
    tid = cuda.threadIdx.x
    # 1. clear this block's histogram (a loop, so any block size works)
    for b in range(tid, BINS, cuda.blockDim.x):
        local_hist[b] = 0
    cuda.syncthreads()

    # 2. count this block's elements in shared memory: contention stays inside the block
    i = cuda.grid(1)
    if i < n:
        cuda.atomic.add(local_hist, data[i], 1)
    cuda.syncthreads()

    # 3. add the block's counts to the global histogram: one atomic per bin, not one per element
    for b in range(tid, BINS, cuda.blockDim.x):
        cuda.atomic.add(hist, b, local_hist[b])


def make_args(size, rng):
    # a bell-shaped spread of values: the middle bins are hot, as in most real data
    values = np.rint(rng.normal(BINS / 2, BINS / 8, size))
    data = np.clip(values, 0, BINS - 1).astype(np.int32)
    hist = np.zeros(BINS, dtype=np.int32)
    return [data, hist, size]


def reference(args):
    data, hist, n = args
    return {1: hist + np.bincount(data[:n], minlength=BINS).astype(np.int32)}


_COMMON = dict(
    default_size=16_384,
    small_size=1000,
    default_block=(256,),
    make_args=make_args,
    reference=reference,
    rtol=0.0,
    group="histogram",
)

SPECS = [
    KernelSpec(
        name="histogram_global",
        kernel=histogram_global,
        description=f"{BINS}-bin histogram with cuda.atomic.add on the global counts",
        note=(
            "Many threads may add to the same counter at once, so a plain `hist[v] += 1` would lose updates "
            "(read, add, write back: two threads read the same old value). cuda.atomic.add makes each update "
            "indivisible, but updates to one address are served one at a time. The data is bell-shaped, so the "
            "middle bins are hot: look at how the atomics pile up on a few addresses of global memory."
        ),
        launch=lambda size, block: launch_1d(size, block, "histogram_global"),
        rank=0,
        **_COMMON,
    ),
    KernelSpec(
        name="histogram_shared",
        kernel=histogram_shared,
        description=f"{BINS}-bin histogram counted per block in shared memory, then merged with one atomic per bin",
        note=(
            "Each block keeps its own histogram in shared memory: it is cleared, filled with atomics on fast "
            "on-chip memory, and after a barrier added to the global one, one atomic per bin. Contention now "
            "stays inside a block and global memory sees 64 atomics per block instead of 256. Note the two "
            "barriers: counting must not start before the clear ends, nor the merge before counting ends."
        ),
        launch=lambda size, block: launch_1d(size, block, "histogram_shared"),
        rank=1,
        tile=BINS,
        **_COMMON,
    ),
]
