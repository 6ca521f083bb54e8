"""The size estimate: refuse, in seconds, a launch whose trace would pass the event limit, by running a few of its
blocks on the CPU executor first (counting their events, keeping none) and scaling up to the recorded blocks."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ...errors import TraceTooLarge
from ...limits import TOO_LARGE_OPTIONS, dims_text
from ...lockstep import copy_inputs
from .executor import make_runtime, run_cpu
from .watchdog import OverBudget, Watchdog

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


def refuse_if_too_large(ck, grid, block, args, *, record_blocks=None, max_events: int, file: str = "",
                        line: int = -1, kernel: str = "kernel", dynamic_shared_bytes: int = 0) -> SizeEstimate | None:
    """Raise TraceTooLarge, saying the estimate, the limit and the options, for a launch whose trace would
    pass ``max_events``; returns the estimate (None: too few blocks to sample)."""
    est = estimate_trace(ck, grid, block, args, record_blocks=record_blocks, dynamic_shared_bytes=dynamic_shared_bytes)
    if est is not None and est.events > max_events:
        prefix = f"{file}:{line}: " if file else ""
        err = TraceTooLarge(
            f"{prefix}{kernel} with grid {dims_text(grid)} x block {dims_text(block)}: its trace would hold "
            f"{est.describe()}, over "
            f"the event limit of {max_events:,}. Refused before running. To trace it: {TOO_LARGE_OPTIONS}",
            file=file, line=line)
        err.estimate = est
        err.limit = max_events
        raise err
    return est
