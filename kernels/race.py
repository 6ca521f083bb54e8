"""A missing cuda.syncthreads(): the adjacent-difference kernel, with and without its barrier.

Both kernels compute d[i] = x[i] - x[i - 1] (and d[0] = x[0]) through a shared tile: each thread
stores its element, then reads its left neighbour's slot. Without the barrier between the store and
the read, thread t may read slot t - 1 before thread t - 1 has written it. The two kernels differ in
that one line only.
"""

import numba
import numpy as np
from numba import cuda

from . import KernelSpec
from ._launch import launch_1d, require_block

BLOCK = 256


@cuda.jit
def race_missing_sync(x, d, n):
    tile = cuda.shared.array(shape=BLOCK, dtype=numba.float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    if i < n:
        tile[t] = x[i]
    if i < n:
        if t > 0:
            d[i] = tile[t] - tile[t - 1]  # the left neighbour's slot, stored by another thread
        elif i > 0:
            d[i] = tile[t] - x[i - 1]  # first thread of a block: the neighbour lives in the block before
        else:
            d[i] = tile[t]


@cuda.jit
def race_fixed(x, d, n):
    tile = cuda.shared.array(shape=BLOCK, dtype=numba.float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    if i < n:
        tile[t] = x[i]
    cuda.syncthreads()  # the whole tile is stored before anyone reads a neighbour (reached by every thread)
    if i < n:
        if t > 0:
            d[i] = tile[t] - tile[t - 1]  # the left neighbour's slot, stored by another thread
        elif i > 0:
            d[i] = tile[t] - x[i - 1]  # first thread of a block: the neighbour lives in the block before
        else:
            d[i] = tile[t]


def make_args(size, rng):
    x = rng.random(size, dtype=np.float32)
    d = np.zeros(size, dtype=np.float32)
    return [x, d, size]


def reference(args):
    """The intended result, as if every thread had stored its element before any neighbour read it."""
    x, _, n = args
    d = np.empty(n, dtype=np.float32)
    d[0] = x[0]
    d[1:] = x[1:n] - x[: n - 1]
    return {1: d}


def _launch(name):
    def launch(size, block):
        require_block(block, (BLOCK,), name, f"its shared tile holds {BLOCK} floats")
        return launch_1d(size, block, name)

    return launch


_COMMON = dict(
    default_size=4096,
    small_size=600,
    default_block=(BLOCK,),
    make_args=make_args,
    reference=reference,
    group="race",
    tile=BLOCK,
)

SPECS = [
    KernelSpec(
        name="race_missing_sync",
        kernel=race_missing_sync,
        description="adjacent difference through shared memory with the cuda.syncthreads() left out: a data race",
        note=(
            "Each thread stores one element in shared memory and then reads the slot of its left neighbour, but "
            "nothing makes the read wait for the neighbour's store: thread 32, the first lane of warp 1, may read "
            "slot 31 before warp 0 has written it. Whether the answer comes out right depends on scheduling: on "
            "an H200 it was right every time at 4,096 elements but about 9,000 of a million elements came out "
            "wrong, and that is what makes races dangerous: they pass small tests. Look for shared loads of a "
            "slot stored by a different thread in the same barrier phase."
        ),
        launch=_launch("race_missing_sync"),
        rank=0,
        has_race=True,
        **_COMMON,
    ),
    KernelSpec(
        name="race_fixed",
        kernel=race_fixed,
        description="the same adjacent difference with the barrier between the store and the read",
        note=(
            "One added line, cuda.syncthreads(), splits the kernel into two phases: every store to the tile "
            "happens before any read of it. The barrier sits outside the `if i < n` so that every thread of the "
            "block reaches it, including the idle ones past the end; a barrier inside a branch that only some "
            "threads take is a bug of its own. Step barrier by barrier and compare with race_missing_sync."
        ),
        launch=_launch("race_fixed"),
        rank=1,
        **_COMMON,
    ),
]
