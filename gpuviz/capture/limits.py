"""Launch limits every CUDA GPU since compute capability 3.0 enforces: refuse impossible launches before running."""

from __future__ import annotations

import numpy as np

from .errors import LaunchConfigError, TraceTooLarge

MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIMS = (1024, 1024, 64)
MAX_GRID_DIMS = (2**31 - 1, 65535, 65535)
MAX_STATIC_SHARED_BYTES = 48 * 1024  # static __shared__ per block; more needs dynamic shared memory opt-in
#: threads gpuviz's CPU executor (and the simulator's lockstep reference run) holds at once: ~33M threads, each
#: per-thread int64 variable then 256 MB
MAX_CPU_THREADS = 2**25


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


#: what the refusal suggests (the runner says the same with its own option names)
TOO_LARGE_OPTIONS = ("record fewer blocks (--blocks 0,1 / record_blocks=[0, 1]: the other blocks still run), "
                     "capture a smaller problem (--size / a smaller grid), record per warp on a GPU "
                     "(--backend gpu, mode='warp'), or raise the limit (--max-events / max_events=)")


def dims_text(dims) -> str:
    """(16, 16, 1) -> "16x16": launch dimensions as a message writes them."""
    dims = list(dims)
    while len(dims) > 1 and dims[-1] == 1:
        dims.pop()
    return "x".join(str(x) for x in dims)


def check_before_inputs(grid, block, *, backend: str = "cpu", max_events: int = 50_000_000, record_blocks=None,
                        where: str = "", kernel: str = "kernel") -> None:
    """What can be refused from the launch shape alone, before any input is allocated or anything runs:
    impossible dimensions (LaunchConfigError), a trace that must pass ``max_events`` even at two events
    (start, end) per recorded thread, and more threads than the CPU executor holds (TraceTooLarge)."""
    grid, block = normalize_dims(grid, "grid"), normalize_dims(block, "block")
    check_launch(grid, block, where=where, kernel=kernel)
    tpb = block[0] * block[1] * block[2]
    n_blocks = grid[0] * grid[1] * grid[2]
    recorded = n_blocks if record_blocks is None else len({int(b) for b in record_blocks})
    prefix = f"{where}: " if where else ""
    if backend in ("cpu", "sim") and n_blocks * tpb > MAX_CPU_THREADS:
        raise TraceTooLarge(
            f"{prefix}{kernel} with grid {dims_text(grid)} x block {dims_text(block)} = {n_blocks * tpb:,} threads: "
            "more than gpuviz's "
            f"CPU executor runs at once ({MAX_CPU_THREADS:,}). Capture a smaller problem, or on a GPU (--backend gpu).")
    least = 2 * recorded * tpb
    if least > max_events:
        raise TraceTooLarge(
            f"{prefix}{kernel} with grid {dims_text(grid)} x block {dims_text(block)}: {recorded * tpb:,} recorded "
            "threads record at "
            f"least {least:,} events (a start and an end each), over the event limit of {max_events:,}. Refused "
            f"before running. To trace it: {TOO_LARGE_OPTIONS}")


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation, or None where unknown: Linux's MemAvailable, and no more
    than what this process's address-space limit (``ulimit -v``, RLIMIT_AS) still leaves it, since past that
    limit an allocation fails however much memory the machine has free."""
    available = None
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource

        soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            with open("/proc/self/statm", encoding="ascii") as fh:
                in_use = int(fh.read().split()[0]) * resource.getpagesize()
            left = max(0, soft - in_use)
            available = left if available is None else min(available, left)
    except (ImportError, OSError, ValueError, IndexError):
        pass
    return available
