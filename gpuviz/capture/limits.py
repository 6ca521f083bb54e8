"""Launch limits every CUDA GPU since compute capability 3.0 enforces: refuse impossible launches before running."""

from __future__ import annotations

from dataclasses import dataclass

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


# ---- the size estimate: refuse, in seconds, a launch whose trace would pass the event limit ---------------
SAMPLE_BLOCKS = 8  # blocks run to estimate a launch's trace (spread over the grid, first and last included)
SAMPLE_SECONDS = 3.0  # the most a sample may take; past it the events counted so far give a lower bound
SAMPLE_MAX_EVENTS = 20_000_000  # counted, not kept
# below this many recorded threads no sample is run: the real run reaches the event limit (and stops) about as
# soon as a sample would, since the lockstep steps are narrow; a sample would only add its own time
SAMPLE_MIN_THREADS = 1 << 16


@dataclass
class SizeEstimate:
    """What a sample of a launch's blocks says about its whole trace."""

    events: int  # estimated events of the recorded blocks
    per_block: float
    sampled_blocks: int
    recorded_blocks: int
    complete: bool  # False: the sample was cut short (time or events), so ``events`` is a lower bound
    seconds: float

    def describe(self) -> str:
        how = "about" if self.complete else "at least"
        cut = "" if self.complete else ", cut short"
        return (f"{how} {self.events:,} events (estimated in {self.seconds:.1f} s from {self.sampled_blocks} of its "
                f"{self.recorded_blocks:,} recorded blocks{cut}: {self.per_block:,.0f} events per block)")


def sample_blocks(recorded: list[int], k: int = SAMPLE_BLOCKS) -> list[int]:
    """``k`` blocks spread evenly over ``recorded`` (sorted block ids), the first and the last among them."""
    if len(recorded) <= k:
        return list(recorded)
    picks = np.linspace(0, len(recorded) - 1, k).round().astype(np.int64)
    return sorted({int(recorded[i]) for i in picks})


def estimate_trace(ck, grid, block, args, *, record_blocks=None, seconds: float = SAMPLE_SECONDS,
                   sample_max_events: int = SAMPLE_MAX_EVENTS, min_threads: int = SAMPLE_MIN_THREADS,
                   dynamic_shared_bytes: int = 0) -> SizeEstimate | None:
    """Run a few blocks of the launch on copies of its inputs, counting events without keeping them, and
    scale up to the recorded blocks. None when the launch has so few blocks (or recorded threads, under
    ``min_threads``) that the real run is as quick to find out, or when the sample itself fails (the real
    run then reports the fault where it happens)."""
    import time

    from .errors import TraceTooLarge
    from .executor import make_runtime, run_cpu
    from .lockstep import copy_inputs
    from .watchdog import OverBudget, Watchdog

    n_blocks = grid[0] * grid[1] * grid[2]
    recorded = sorted({int(b) for b in record_blocks if 0 <= int(b) < n_blocks}) if record_blocks is not None else None
    n_recorded = len(recorded) if recorded is not None else n_blocks
    if n_recorded <= SAMPLE_BLOCKS or n_recorded * block[0] * block[1] * block[2] < min_threads:
        return None
    if recorded is None:
        picks = sorted({int(b) for b in np.linspace(0, n_blocks - 1, SAMPLE_BLOCKS).round().astype(np.int64)})
    else:
        picks = sample_blocks(recorded)
    t0 = time.monotonic()
    wd = Watchdog(timeout=None, deadline=t0 + seconds)
    rt = make_runtime(ck, grid, block, record=True, max_events=sample_max_events, watchdog=wd, blocks=picks,
                      max_loop_iterations=1 << 62, dynamic_shared_bytes=dynamic_shared_bytes)
    rt.count_only = True
    complete = True
    try:
        run_cpu(ck, rt, copy_inputs(args))
    except (OverBudget, TraceTooLarge):
        complete = False
    except Exception:  # noqa: BLE001 - a fault in the sample is the real run's to report, where it happens
        return None
    per_block = rt.n_events / len(picks)
    return SizeEstimate(events=int(per_block * n_recorded), per_block=per_block, sampled_blocks=len(picks),
                        recorded_blocks=n_recorded, complete=complete, seconds=time.monotonic() - t0)


#: what the refusal suggests (the runner says the same with its own option names)
TOO_LARGE_OPTIONS = ("record fewer blocks (--blocks 0,1 / record_blocks=[0, 1]: the other blocks still run), "
                     "capture a smaller problem (--size / a smaller grid), record per warp on a GPU "
                     "(--backend gpu, mode='warp'), or raise the limit (--max-events / max_events=)")


def refuse_if_too_large(ck, grid, block, args, *, record_blocks=None, max_events: int, file: str = "",
                        line: int = -1, kernel: str = "kernel", dynamic_shared_bytes: int = 0) -> SizeEstimate | None:
    """Raise TraceTooLarge, saying the estimate, the limit and the options, for a launch whose trace would
    pass ``max_events``; returns the estimate (None: too few blocks to sample)."""
    from .errors import TraceTooLarge

    est = estimate_trace(ck, grid, block, args, record_blocks=record_blocks, dynamic_shared_bytes=dynamic_shared_bytes)
    if est is not None and est.events > max_events:
        prefix = f"{file}:{line}: " if file else ""
        err = TraceTooLarge(
            f"{prefix}{kernel} with grid {_d(grid)} x block {_d(block)}: its trace would hold {est.describe()}, over "
            f"the event limit of {max_events:,}. Refused before running. To trace it: {TOO_LARGE_OPTIONS}",
            file=file, line=line)
        err.estimate = est
        err.limit = max_events
        raise err
    return est


def _d(dims) -> str:
    dims = list(dims)
    while len(dims) > 1 and dims[-1] == 1:
        dims.pop()
    return "x".join(str(x) for x in dims)


def check_before_inputs(grid, block, *, backend: str = "cpu", max_events: int = 50_000_000, record_blocks=None,
                        where: str = "", kernel: str = "kernel") -> None:
    """What can be refused from the launch shape alone, before any input is allocated or anything runs:
    impossible dimensions (LaunchConfigError), a trace that must pass ``max_events`` even at two events
    (start, end) per recorded thread, and more threads than the CPU executor holds (TraceTooLarge)."""
    from .errors import TraceTooLarge
    from .simt_runtime import MAX_CPU_THREADS

    grid, block = normalize_dims(grid, "grid"), normalize_dims(block, "block")
    check_launch(grid, block, where=where, kernel=kernel)
    tpb = block[0] * block[1] * block[2]
    n_blocks = grid[0] * grid[1] * grid[2]
    recorded = n_blocks if record_blocks is None else len({int(b) for b in record_blocks})
    prefix = f"{where}: " if where else ""
    if backend in ("cpu", "sim") and n_blocks * tpb > MAX_CPU_THREADS:
        raise TraceTooLarge(
            f"{prefix}{kernel} with grid {_d(grid)} x block {_d(block)} = {n_blocks * tpb:,} threads: more than gpuviz's "
            f"CPU executor runs at once ({MAX_CPU_THREADS:,}). Capture a smaller problem, or on a GPU (--backend gpu).")
    least = 2 * recorded * tpb
    if least > max_events:
        raise TraceTooLarge(
            f"{prefix}{kernel} with grid {_d(grid)} x block {_d(block)}: {recorded * tpb:,} recorded threads record at "
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
