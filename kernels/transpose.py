"""out = in.T for a square float32 matrix: naive, through a shared tile, and through a padded tile.

As in NVIDIA's "An Efficient Matrix Transpose in CUDA C/C++": a block of 32 x 8 threads moves one
32 x 32 tile, each thread four elements, rows ty, ty + 8, ty + 16 and ty + 24 of the tile.
"""

import numba
import numpy as np
from numba import cuda

from . import KernelSpec
from ._launch import as_block, blocks_needed, require_block

TILE = 32  # a 32x32 tile; a warp is one row of it
BLOCK_ROWS = 8  # the block is TILE x BLOCK_ROWS threads: each thread moves TILE // BLOCK_ROWS elements
PADDED = TILE + 1  # one spare column shifts each row of the tile by one shared-memory bank


@cuda.jit
def transpose_naive(src, dst, n):
    col = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    for j in range(0, TILE, BLOCK_ROWS):
        row = cuda.blockIdx.y * TILE + cuda.threadIdx.y + j
        if row < n and col < n:
            dst[col, row] = src[row, col]  # reads along a row (coalesced), writes down a column (strided)


@cuda.jit
def transpose_shared(src, dst, n):
    tile = cuda.shared.array(shape=(TILE, TILE), dtype=numba.float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    # copy the source tile row by row: a warp reads 32 neighbouring floats
    in_col = cuda.blockIdx.x * TILE + tx
    for j in range(0, TILE, BLOCK_ROWS):
        in_row = cuda.blockIdx.y * TILE + ty + j
        if in_row < n and in_col < n:
            tile[ty + j, tx] = src[in_row, in_col]
    cuda.syncthreads()
    # write the mirrored destination tile row by row: each row is a column of the shared tile
    out_col = cuda.blockIdx.y * TILE + tx
    for j in range(0, TILE, BLOCK_ROWS):
        out_row = cuda.blockIdx.x * TILE + ty + j
        if out_row < n and out_col < n:
            dst[out_row, out_col] = tile[tx, ty + j]  # a warp reads down a column: 32 words, TILE apart


@cuda.jit
def transpose_padded(src, dst, n):
    tile = cuda.shared.array(shape=(TILE, PADDED), dtype=numba.float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    in_col = cuda.blockIdx.x * TILE + tx
    for j in range(0, TILE, BLOCK_ROWS):
        in_row = cuda.blockIdx.y * TILE + ty + j
        if in_row < n and in_col < n:
            tile[ty + j, tx] = src[in_row, in_col]
    cuda.syncthreads()
    out_col = cuda.blockIdx.y * TILE + tx
    for j in range(0, TILE, BLOCK_ROWS):
        out_row = cuda.blockIdx.x * TILE + ty + j
        if out_row < n and out_col < n:
            dst[out_row, out_col] = tile[tx, ty + j]  # rows are 33 words long: a column's words are 33 apart


def make_args(size, rng):
    src = rng.random((size, size), dtype=np.float32)
    dst = np.zeros((size, size), dtype=np.float32)
    return [src, dst, size]


def reference(args):
    src, _, _ = args
    return {1: np.ascontiguousarray(src.T)}


def _launch(name):
    def launch(size, block):
        require_block(
            block, (TILE, BLOCK_ROWS), name, f"a block of {TILE}x{BLOCK_ROWS} threads moves one {TILE}x{TILE} tile"
        )
        tiles = blocks_needed(size, TILE)
        return (tiles, tiles), as_block(block, 2, name)

    return launch


_COMMON = dict(
    default_size=128,
    small_size=40,
    default_block=(TILE, BLOCK_ROWS),
    make_args=make_args,
    reference=reference,
    rtol=0.0,
    group="transpose",
    size_label="matrix side",
    tile=TILE,
    items_per_thread=TILE // BLOCK_ROWS,
)

SPECS = [
    KernelSpec(
        name="transpose_naive",
        kernel=transpose_naive,
        description="matrix transpose straight through global memory: coalesced reads, strided writes",
        note=(
            "Each thread copies elements to their mirrored places. A warp reads 32 neighbouring floats of a row "
            "(one coalesced request) but writes them down a column, 32 floats n apart: 32 separate memory "
            "transactions for 128 useful bytes. Watch the global-memory view: tidy reads, scattered writes. "
            "A transpose is pure data movement, so this waste is the whole cost."
        ),
        launch=_launch("transpose_naive"),
        rank=0,
        **_COMMON,
    ),
    KernelSpec(
        name="transpose_shared",
        kernel=transpose_shared,
        description=f"matrix transpose through a {TILE}x{TILE} shared tile: coalesced reads and writes, bank conflicts",
        note=(
            "The block copies a 32x32 tile row by row into shared memory, waits at the barrier, then writes the "
            "transposed tile row by row: now both global reads and writes are coalesced. The price moved into "
            "shared memory: writing out, a warp reads a column of the tile, 32 words exactly 32 apart, which all "
            "sit in the same bank and are served one after another (a 32-way bank conflict). Look at the bank view."
        ),
        launch=_launch("transpose_shared"),
        rank=1,
        frame_notes=(
            ("first conflict", "This column read is the price of the shared tile; the padded "
                               "version adds one unused column so that a column spreads over all 32 banks."),
        ),
        **_COMMON,
    ),
    KernelSpec(
        name="transpose_padded",
        kernel=transpose_padded,
        description=f"matrix transpose through a shared tile padded to {PADDED} columns: no bank conflicts",
        note=(
            "The same kernel with one unused column added to the tile. Each row now starts one bank further "
            "along, so the 32 words of a column land in 32 different banks and are read in one go. One extra "
            "word per row (3% more shared memory) removes the 32-way conflict of transpose_shared: compare "
            "their bank views side by side."
        ),
        launch=_launch("transpose_padded"),
        rank=2,
        **_COMMON,
    ),
]
