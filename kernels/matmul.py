"""C = A @ B for square float32 matrices: the naive kernel, and the shared-memory tiled one."""

import numba
import numpy as np
from numba import cuda

from . import KernelSpec
from ._launch import launch_square, require_block

TILE = 16  # side of the square shared-memory tiles; the tiled kernel's block is TILE x TILE threads


@cuda.jit
def matmul_naive(A, B, C, n):
    col, row = cuda.grid(2)  # x walks columns so that a warp's threads write neighbouring elements
    if row < n and col < n:
        acc = numba.float32(0.0)  # float32: float64 arithmetic is many times slower on most GPUs
        for k in range(n):
            acc += A[row, k] * B[k, col]  # every thread reads a whole row of A and column of B from global memory
        C[row, col] = acc


@cuda.jit
def matmul_tiled(A, B, C, n):
    sA = cuda.shared.array(shape=(TILE, TILE), dtype=numba.float32)
    sB = cuda.shared.array(shape=(TILE, TILE), dtype=numba.float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    col = cuda.blockIdx.x * TILE + tx
    row = cuda.blockIdx.y * TILE + ty

    acc = numba.float32(0.0)
    for t in range((n + TILE - 1) // TILE):
        # each thread copies one element of A's tile and one of B's tile; past the edge, zeros
        a_col = t * TILE + tx
        b_row = t * TILE + ty
        if row < n and a_col < n:
            sA[ty, tx] = A[row, a_col]
        else:
            sA[ty, tx] = 0.0
        if b_row < n and col < n:
            sB[ty, tx] = B[b_row, col]
        else:
            sB[ty, tx] = 0.0
        cuda.syncthreads()  # both tiles are complete before anyone uses them

        for k in range(TILE):
            acc += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()  # everyone is done with the tiles before the next loop overwrites them

    if row < n and col < n:
        C[row, col] = acc


def make_args(size, rng):
    A = rng.random((size, size), dtype=np.float32)
    B = rng.random((size, size), dtype=np.float32)
    C = np.zeros((size, size), dtype=np.float32)
    return [A, B, C, size]


def reference(args):
    A, B, _, _ = args
    return {2: (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)}


def _launch_tiled(size, block):
    require_block(block, (TILE, TILE), "matmul_tiled", f"its shared tiles are {TILE}x{TILE}")
    return launch_square(size, block, "matmul_tiled")


SPECS = [
    KernelSpec(
        name="matmul_naive",
        kernel=matmul_naive,
        description="C = A @ B with one thread per output element, reading A and B straight from global memory",
        note=(
            "The textbook first try: each thread walks a row of A and a column of B and writes one element of C. "
            "Every element of A and B is fetched from global memory n times, by n different threads, and the "
            "arithmetic waits on memory. Look at one warp's loads: with 16x16 blocks a warp spans two rows of C, so at "
            "each step its 32 lanes read just two elements of A (a broadcast) and 16 neighbouring elements of B."
        ),
        default_size=64,
        small_size=24,
        default_block=(TILE, TILE),
        make_args=make_args,
        launch=lambda size, block: launch_square(size, block, "matmul_naive"),
        reference=reference,
        rtol=1e-4,
        group="matmul",
        rank=0,
        size_label="matrix side",
    ),
    KernelSpec(
        name="matmul_tiled",
        kernel=matmul_tiled,
        description=f"C = A @ B with {TILE}x{TILE} tiles of A and B staged in shared memory between barriers",
        note=(
            f"The block first copies a {TILE}x{TILE} tile of A and of B into shared memory, waits at a barrier, "
            f"then every thread does {TILE} multiply-adds from the fast on-chip copy: each global element is now "
            f"read once per tile instead of once per thread, {TILE} times less traffic. The second barrier keeps "
            "fast threads from overwriting a tile others still read. Step barrier by barrier to see the load "
            "phase and the compute phase alternate."
        ),
        default_size=64,
        small_size=24,
        default_block=(TILE, TILE),
        make_args=make_args,
        launch=_launch_tiled,
        reference=reference,
        rtol=1e-4,
        group="matmul",
        rank=1,
        size_label="matrix side",
        tile=TILE,
        frame_notes=(
            ("first barrier", "The tiles of A and B are in shared memory now; from here every "
                              "multiply-add reads the fast on-chip copy instead of global memory."),
        ),
    ),
]
