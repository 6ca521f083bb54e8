"""One explicit step of 2-d heat diffusion: a 5-point stencil over a shared tile with a halo."""

import numba
import numpy as np
from numba import cuda

from . import KernelSpec
from ._launch import launch_square, require_block

TILE = 16  # the block is TILE x TILE threads; the shared tile adds a one-cell halo on every side
HALO_TILE = TILE + 2
ALPHA = 0.2  # diffusion number: the step is stable for ALPHA <= 0.25


@cuda.jit(device=True)
def read_clamped(u, row, col, n):
    """u[row, col], where a cell outside the grid reads as the nearest edge cell: an insulated border
    (no heat flows in or out)."""
    r = min(max(row, 0), n - 1)
    c = min(max(col, 0), n - 1)
    return u[r, c]


@cuda.jit
def stencil_heat(u, u_next, n, alpha):
    tile = cuda.shared.array(shape=(HALO_TILE, HALO_TILE), dtype=numba.float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    col = cuda.blockIdx.x * TILE + tx
    row = cuda.blockIdx.y * TILE + ty

    # every thread loads its own cell (shifted by one for the halo)...
    tile[ty + 1, tx + 1] = read_clamped(u, row, col, n)
    # ...and threads on the edge of the block also load the neighbouring cell just outside it
    if tx == 0:
        tile[ty + 1, 0] = read_clamped(u, row, col - 1, n)
    if tx == TILE - 1:
        tile[ty + 1, TILE + 1] = read_clamped(u, row, col + 1, n)
    if ty == 0:
        tile[0, tx + 1] = read_clamped(u, row - 1, col, n)
    if ty == TILE - 1:
        tile[TILE + 1, tx + 1] = read_clamped(u, row + 1, col, n)
    cuda.syncthreads()  # the halo cells were loaded by other threads

    if row < n and col < n:
        center = tile[ty + 1, tx + 1]
        up = tile[ty, tx + 1]
        down = tile[ty + 2, tx + 1]
        left = tile[ty + 1, tx]
        right = tile[ty + 1, tx + 2]
        u_next[row, col] = center + alpha * (up + down + left + right - 4.0 * center)


def make_args(size, rng):
    # a cool plate with some noise and a hot square off the middle
    u = (rng.random((size, size)) * 0.1).astype(np.float32)
    lo, hi = size // 4, size // 2
    u[lo:hi, lo:hi] = 1.0
    u_next = np.zeros((size, size), dtype=np.float32)
    return [u, u_next, size, ALPHA]


def reference(args):
    u, _, n, alpha = args
    p = np.pad(u.astype(np.float64), 1, mode="edge")  # the clamped (insulated) border
    center = p[1:-1, 1:-1]
    laplacian = p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4.0 * center
    return {1: (center + alpha * laplacian).astype(np.float32)}


def _launch(size, block):
    why = f"its shared tile is the block's {TILE}x{TILE} cells plus a halo"
    require_block(block, (TILE, TILE), "stencil_heat", why)
    return launch_square(size, block, "stencil_heat")


SPEC = KernelSpec(
    name="stencil_heat",
    kernel=stencil_heat,
    description=f"one step of 2-d heat diffusion: 5-point stencil on a {TILE}x{TILE} shared tile with a halo",
    note=(
        "Each new temperature is the old one plus a share of the difference from its four neighbours, so "
        "every cell is read by five threads. The block loads its cells once into shared memory, and threads "
        "on the block's edge also load a ring of neighbouring cells (the halo); after the barrier all five "
        "reads come from on-chip memory. Look at which threads load the halo (the edge of the block works "
        "more), and at the grid border, where cells outside read as the nearest edge cell."
    ),
    default_size=100,
    small_size=20,
    default_block=(TILE, TILE),
    make_args=make_args,
    launch=_launch,
    reference=reference,
    group="stencil",
    size_label="cells per side",
    tile=TILE,
)
