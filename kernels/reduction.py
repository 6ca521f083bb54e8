"""Summing an array: each block reduces its chunk in shared memory and writes one partial sum.

``reduce_sum`` is the plain version; the ladder (``reduce_interleaved`` -> ``reduce_sequential`` ->
``reduce_first_add`` -> ``reduce_warp_shuffle``) follows the classic steps of Mark Harris's
"Optimizing Parallel Reduction in CUDA". Adding up the partial sums is left to the host (or a second
launch): there are few of them.
"""

import numba
import numpy as np
from numba import cuda

from . import KernelSpec
from ._launch import blocks_needed, launch_1d, require_block

BLOCK = 256  # threads per block, and the size of the shared tile (a power of two)


@cuda.jit
def reduce_sum(x, partial, n):
    cache = cuda.shared.array(shape=BLOCK, dtype=numba.float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + tid
    if i < n:
        cache[tid] = x[i]
    else:
        cache[tid] = 0.0  # threads past the end add nothing
    cuda.syncthreads()

    # halve the number of active threads each round: 128 add, then 64, ... then thread 0 alone
    s = cuda.blockDim.x // 2
    while s > 0:
        if tid < s:
            cache[tid] += cache[tid + s]
        cuda.syncthreads()  # every sum of this round is stored before the next round reads it
        s //= 2

    if tid == 0:
        partial[cuda.blockIdx.x] = cache[0]


@cuda.jit
def reduce_interleaved(x, partial, n):
    cache = cuda.shared.array(shape=BLOCK, dtype=numba.float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + tid
    if i < n:
        cache[tid] = x[i]
    else:
        cache[tid] = 0.0
    cuda.syncthreads()

    s = 1
    while s < cuda.blockDim.x:
        if tid % (2 * s) == 0:  # only every (2*s)-th thread works: the others in its warp wait
            cache[tid] += cache[tid + s]
        cuda.syncthreads()
        s *= 2

    if tid == 0:
        partial[cuda.blockIdx.x] = cache[0]


@cuda.jit
def reduce_sequential(x, partial, n):
    cache = cuda.shared.array(shape=BLOCK, dtype=numba.float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + tid
    if i < n:
        cache[tid] = x[i]
    else:
        cache[tid] = 0.0
    cuda.syncthreads()

    s = cuda.blockDim.x // 2
    while s > 0:
        if tid < s:  # the first s threads work: whole warps stay busy or idle together
            cache[tid] += cache[tid + s]
        cuda.syncthreads()
        s //= 2

    if tid == 0:
        partial[cuda.blockIdx.x] = cache[0]


@cuda.jit
def reduce_first_add(x, partial, n):
    cache = cuda.shared.array(shape=BLOCK, dtype=numba.float32)
    tid = cuda.threadIdx.x
    # each block covers two blocks' worth of input: every thread adds two elements while loading
    i = cuda.blockIdx.x * (cuda.blockDim.x * 2) + tid
    total = 0.0
    if i < n:
        total += x[i]
    if i + cuda.blockDim.x < n:
        total += x[i + cuda.blockDim.x]
    cache[tid] = total
    cuda.syncthreads()

    s = cuda.blockDim.x // 2
    while s > 0:
        if tid < s:
            cache[tid] += cache[tid + s]
        cuda.syncthreads()
        s //= 2

    if tid == 0:
        partial[cuda.blockIdx.x] = cache[0]


@cuda.jit
def reduce_warp_shuffle(x, partial, n):
    cache = cuda.shared.array(shape=BLOCK, dtype=numba.float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * (cuda.blockDim.x * 2) + tid
    total = 0.0
    if i < n:
        total += x[i]
    if i + cuda.blockDim.x < n:
        total += x[i + cuda.blockDim.x]
    cache[tid] = total
    cuda.syncthreads()

    # the shared-memory tree only until 64 partial sums are left...
    s = cuda.blockDim.x // 2
    while s > 32:
        if tid < s:
            cache[tid] += cache[tid + s]
        cuda.syncthreads()
        s //= 2

    # ...then the first warp finishes in registers: each lane adds the value of the lane `offset`
    # above it, with no shared memory and no barrier (a warp's lanes move in lockstep)
    if tid < 32:
        warp_sum = cache[tid] + cache[tid + 32]
        offset = 16
        while offset > 0:
            warp_sum += cuda.shfl_down_sync(0xFFFFFFFF, warp_sum, offset)
            offset //= 2
        if tid == 0:
            partial[cuda.blockIdx.x] = warp_sum


def _make_args(items_per_block):
    def make_args(size, rng):
        x = rng.random(size, dtype=np.float32)
        partial = np.zeros(blocks_needed(size, items_per_block), dtype=np.float32)
        return [x, partial, size]

    return make_args


def reference(args):
    """Per-block partial sums. The chunk a block covers is found from the array sizes alone: it is the
    power of two with len(partial) chunks covering n (unique whenever there is more than one block)."""
    x, partial, n = args
    chunk = 1
    while chunk * len(partial) < n:
        chunk *= 2
    padded = np.zeros(len(partial) * chunk, dtype=np.float64)
    padded[:n] = x[:n]
    return {1: padded.reshape(len(partial), chunk).sum(axis=1).astype(np.float32)}


def _launch(name, items_per_thread):
    why = (
        f"its shared tile holds {BLOCK} floats and its partial-sum array has one slot "
        f"per {BLOCK * items_per_thread} elements"
    )

    def launch(size, block):
        require_block(block, (BLOCK,), name, why)
        return launch_1d(size, block, name, items_per_thread)

    return launch


def _spec(name, kernel, rank, description, note, items_per_thread=1, **extra):
    return KernelSpec(
        name=name,
        kernel=kernel,
        description=description,
        note=note,
        default_size=16_384 * items_per_thread,
        small_size=1000,
        default_block=(BLOCK,),
        make_args=_make_args(BLOCK * items_per_thread),
        launch=_launch(name, items_per_thread),
        reference=reference,
        group="" if rank is None else "reduction",
        rank=rank or 0,
        tile=BLOCK,
        items_per_thread=items_per_thread,
        **extra,
    )


REDUCE_SUM = _spec(
    "reduce_sum",
    reduce_sum,
    None,
    "array sum: a shared-memory tree per block, one partial sum per block",
    "Adding numbers is not independent work, so threads must cooperate. Each block copies its chunk into "
    "shared memory, then half of the threads add pairs, then a quarter, and so on: 8 rounds instead of 255 "
    "additions in a row. The cuda.syncthreads() after each round matters: no thread may read a sum "
    "before its neighbour has stored it. Watch the active threads halve at every barrier.",
)

LADDER = [
    _spec(
        "reduce_interleaved",
        reduce_interleaved,
        0,
        "reduction with interleaved addressing: the divergent tid % (2*s) == 0 test",
        "The first version most people write: in round s only every (2*s)-th thread adds. It is correct, but "
        "the working threads are scattered over every warp: by the fourth round only 2 lanes of each warp add "
        "while the warp still issues for all 32 (divergence), and no warp can finish early. Compare how many "
        "warps are active per round with reduce_sequential.",
    ),
    _spec(
        "reduce_sequential",
        reduce_sequential,
        1,
        "reduction with sequential addressing: the first s threads add element tid + s",
        "The same tree, but the first s threads do the work, each adding the element s places above it. "
        "Whole warps are now either all busy or all idle, so from the second round on whole warps drop out "
        "and stop costing anything; only the last five rounds (s < 32) diverge inside a warp. Compare the "
        "active lanes per warp with reduce_interleaved: same result, far less waste.",
    ),
    _spec(
        "reduce_first_add",
        reduce_first_add,
        2,
        "reduction that adds two elements per thread while loading into shared memory",
        "In the plain tree, half of the threads only load: they are idle from the first round on. Here each "
        "thread adds two input elements as it loads them, so a block covers twice the data and half as many blocks are "
        "launched. The loads are still coalesced: the two reads of a warp are two runs of neighbouring floats.",
        items_per_thread=2,
    ),
    _spec(
        "reduce_warp_shuffle",
        reduce_warp_shuffle,
        3,
        "reduction that finishes the last 64 sums inside one warp with cuda.shfl_down_sync",
        "Once 64 partial sums are left, one warp can finish alone: cuda.shfl_down_sync hands a value "
        "straight from one lane's register to another, with no shared memory and no barrier. The last "
        "rounds stop paying for syncthreads and shared-memory traffic. numba's simulator has no shuffle, "
        "so this kernel runs on gpuviz's own executor or a real GPU.",
        items_per_thread=2,
        uses_warp_shuffle=True,
    ),
]
