"""Launch limits every CUDA GPU since compute capability 3.0 enforces: refuse impossible launches before running."""

from __future__ import annotations

import numpy as np

from .errors import LaunchConfigError

MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIMS = (1024, 1024, 64)
MAX_GRID_DIMS = (2**31 - 1, 65535, 65535)
MAX_STATIC_SHARED_BYTES = 48 * 1024  # static __shared__ per block; more needs dynamic shared memory opt-in


def normalize_dims(v, what: str) -> tuple[int, int, int]:
    if isinstance(v, (int, np.integer)):
        v = (int(v),)
    try:
        v = tuple(int(x) for x in v)
    except TypeError as exc:
        raise LaunchConfigError(f"{what} must be an int or a tuple of 1-3 ints, not {v!r}") from exc
    if not 1 <= len(v) <= 3:
        raise LaunchConfigError(f"{what} must have 1 to 3 dimensions, got {len(v)}: {v}")
    return v + (1,) * (3 - len(v))


def check_launch(grid, block, *, shared_bytes: int = 0, where: str = "", kernel: str = "kernel"):
    """Raise LaunchConfigError, saying why, for a launch no CUDA GPU would accept."""
    prefix = f"{where}: " if where else ""
    for name, dims, limits in (("grid", grid, MAX_GRID_DIMS), ("block", block, MAX_BLOCK_DIMS)):
        for axis, d, lim in zip("xyz", dims, limits):
            if d < 1:
                raise LaunchConfigError(f"{prefix}cannot launch {kernel}: {name}.{axis} = {d}; every dimension must be at least 1")
            if d > lim:
                raise LaunchConfigError(f"{prefix}cannot launch {kernel}: {name}.{axis} = {d} exceeds the CUDA limit of {lim}")
    tpb = block[0] * block[1] * block[2]
    if tpb > MAX_THREADS_PER_BLOCK:
        raise LaunchConfigError(
            f"{prefix}cannot launch {kernel}: a block of {block[0]}x{block[1]}x{block[2]} = {tpb} threads exceeds the "
            f"CUDA limit of {MAX_THREADS_PER_BLOCK} threads per block"
        )
    if shared_bytes > MAX_STATIC_SHARED_BYTES:
        raise LaunchConfigError(
            f"{prefix}cannot launch {kernel}: its shared arrays need {shared_bytes:,} bytes per block, over the "
            f"{MAX_STATIC_SHARED_BYTES:,}-byte limit for static shared memory"
        )
