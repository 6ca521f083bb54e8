"""The ``cpu`` back end's adapter: one launch on gpuviz's lockstep executor, recorded (see
:class:`gpuviz.capture.backends.base.Backend`).

The executor compiles the kernel's plan to lockstep numpy code the first time it runs it, then reuses the code
(:mod:`.compile`, ``executor.compile_for_cpu``),
checks the launch, optionally estimates the trace's size on a few blocks first and times a run with recording off,
then runs it with recording on. A launch that fails keeps what it recorded: the error carries the partial trace.
"""

from __future__ import annotations

import time

import numpy as np

from ... import faults
from ...assemble import Recorded, arrays_of, build_trace, versions
from ...errors import CaptureError, KernelStalled
from ...limits import MAX_CPU_THREADS, check_launch
from .estimate import refuse_if_too_large
from .executor import compile_for_cpu, make_runtime, run_cpu
from .runtime import SimtRuntime
from .watchdog import DEFAULT_STALL_S, Watchdog
from ..base import LaunchSpec

STALLED_TRACE_EVENTS = 1_000_000  # events a launch stopped by the watchdog keeps in its partial trace
DEVICE = "gpuviz CPU executor (lockstep SIMT, numpy)"


class CpuBackend:
    """gpuviz's own lockstep executor (numpy; no GPU; the default)."""

    name = "cpu"
    per_thread = False
    estimated = False  # its own run estimates first (the ``estimate`` option)

    def run(self, plan, launch: LaunchSpec, args, options: dict) -> Recorded:
        """Record the launch. Options: ``time_plain``, ``max_loop_iterations``, ``watchdog``, ``progress``,
        ``estimate`` (see :func:`gpuviz.capture.capture`)."""
        return _run(launch, args, **options)  # an option the executor does not take is a TypeError, as it was

    @staticmethod
    def refuse_if_too_large(launch: LaunchSpec, args) -> None:
        """The size estimate for a kernel the CPU executor can run, for another back end (the simulator's:
        minutes saved); nothing when the executor cannot run the kernel (the other back end still can)."""
        try:
            ck = compile_for_cpu(launch.kernel)
        except CaptureError:
            return
        refuse_if_too_large(ck, launch.grid, launch.block, args, record_blocks=launch.record_blocks,
                            max_events=launch.max_events, file=ck.root.file, line=ck.root.first_line,
                            kernel=ck.root.name, dynamic_shared_bytes=launch.dynamic_shared_bytes)


def _watchdog(watchdog, progress):
    return Watchdog(watchdog, progress) if watchdog or progress else None


def _run(launch: LaunchSpec, args, *, time_plain=False, max_loop_iterations=5_000_000, watchdog=DEFAULT_STALL_S,
         progress=None, estimate=True) -> Recorded:
    grid, block, dsb = launch.grid, launch.block, launch.dynamic_shared_bytes
    ck = compile_for_cpu(launch.kernel)
    faults.check("plan", "cpu")
    root = ck.root
    check_launch(grid, block, shared_bytes=ck.shared_bytes, where=f"{root.file}:{root.first_line}", kernel=root.name)
    timings = {"compile_s": ck.compile_seconds}
    if estimate:
        if grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2] > MAX_CPU_THREADS:
            SimtRuntime(grid, block, file=root.file)  # refuses with its own message, before any sample
        est = refuse_if_too_large(ck, grid, block, args, record_blocks=launch.record_blocks,
                                  max_events=launch.max_events, file=root.file, line=root.first_line,
                                  kernel=root.name, dynamic_shared_bytes=dsb)
        if est is not None:
            timings["estimate_s"] = round(est.seconds, 4)
    if time_plain:
        # the same lockstep code with recording off: what the executor costs without the trace
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        t0 = time.perf_counter()
        run_cpu(ck, make_runtime(ck, grid, block, record=False, max_loop_iterations=max_loop_iterations,
                                 dynamic_shared_bytes=dsb, watchdog=_watchdog(watchdog, progress)), copies)
        timings["plain_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    rt = make_runtime(ck, grid, block, record_blocks=launch.record_blocks, max_events=launch.max_events,
                      max_loop_iterations=max_loop_iterations, dynamic_shared_bytes=dsb,
                      watchdog=_watchdog(watchdog, progress))
    try:
        run_cpu(ck, rt, args)
    except CaptureError as exc:
        # keep what was recorded up to the failure: the app can still show the partial launch
        if isinstance(exc, KernelStalled) and rt.record and rt.n_events > STALLED_TRACE_EVENTS:
            # an endless loop recorded for seconds: its first steps show the spin as well as all of them
            total = rt.n_events
            rt.keep_first(STALLED_TRACE_EVENTS)
            rt.warnings.insert(0, f"the partial trace keeps the first {rt.n_events:,} of the {total:,} events "
                                  "recorded before the watchdog stopped the launch")
        exc.trace = build_trace(ck.plan, "cpu", _recorded(rt, grid, block, timings, partial=True))
        raise
    faults.check("run", "cpu")  # the arguments hold the run's results: the fallback must restore them
    timings["instrumented_s"] = time.perf_counter() - t0
    return _recorded(rt, grid, block, timings)


def _recorded(rt, grid, block, timings, partial=False) -> Recorded:
    warnings = list(rt.warnings)
    if partial:
        warnings.insert(0, "partial trace: the launch stopped with an error")
    meta = {"threads_recorded": "all" if rt.recorded is None else "chosen blocks"}
    if rt.dynamic_shared_bytes:
        meta["dynamic_shared_bytes"] = rt.dynamic_shared_bytes
    if rt.printed:
        meta["printed"] = rt.printed
    arrays, vers = arrays_of(rt.arrays), versions()
    faults.check("events", "cpu")
    events = rt.events()
    faults.check("assemble", "cpu")
    return Recorded(grid, block, events, arrays, DEVICE, vers, timings=timings, warnings=warnings, meta=meta)
