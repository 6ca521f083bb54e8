"""Capture: run an unmodified Numba CUDA kernel instrumented and return its :class:`~gpuviz.model.Trace`.

Backends:
    "cpu"  gpuviz's own lockstep executor (numpy; no GPU; the default)
    "sim"  numba's CUDA simulator running a per-thread instrumented copy of the kernel (the reference)
    "gpu"  numba-cuda on a real NVIDIA GPU
"""

from __future__ import annotations

import platform
import time

import numpy as np

from ..model.trace import ArrayInfo, Launch, Trace
from . import faults
from .backends.cpu.watchdog import DEFAULT_STALL_S
from .dtypes import plain
from .errors import (
    BackendUnavailable,
    CaptureError,
    DivergentBarrierError,
    KernelFault,
    KernelStalled,
    LaunchConfigError,
    TraceTooLarge,
    UnsupportedConstruct,
)
from .limits import MAX_CPU_THREADS, check_launch, normalize_dims

__all__ = [
    "BackendUnavailable",
    "CaptureError",
    "DivergentBarrierError",
    "KernelFault",
    "KernelStalled",
    "LaunchConfigError",
    "TraceTooLarge",
    "UnsupportedConstruct",
    "capture",
]

BACKENDS = ("cpu", "sim", "gpu")
STALLED_TRACE_EVENTS = 1_000_000  # events a launch stopped by the watchdog keeps in its partial trace


def versions() -> dict[str, str]:
    import sys

    from ..version import __version__

    out = {"gpuviz": __version__, "python": platform.python_version(), "numpy": np.__version__}
    for mod in ("numba", "numba_cuda"):
        m = sys.modules.get(mod)
        if m is not None and getattr(m, "__version__", None):
            out[mod] = str(m.__version__)
    return out


def _arrays_of(rt) -> list[ArrayInfo]:
    out = []
    for h in rt.arrays:
        out.append(ArrayInfo.of(h.name, h.shape, plain(h.dtype), h.space if h.space != "const" else "global", h.line))
    return out


def capture(kernel, grid, block, *args, backend: str = "cpu", record_blocks=None, max_events: int = 50_000_000,
            time_plain: bool = False, lockstep: bool = True, watchdog: float | None = DEFAULT_STALL_S,
            progress=None, estimate: bool = True, dynamic_shared_bytes: int = 0, **options) -> Trace:
    """Run ``kernel[grid, block](*args)`` instrumented and return its trace (see :func:`gpuviz.capture`).

    ``lockstep``: for the per-thread backends ("sim", "gpu"), also replay the launch on the CPU executor
    and, where the per-thread events agree, take its lockstep steps (see :mod:`gpuviz.capture.lockstep`).
    ``watchdog``: seconds a launch on the CPU executor or on numba's simulator may go without progress
    before it is stopped with :class:`KernelStalled`, naming the loop's line (None or 0: never). On the
    simulator each CUDA thread of a block is a Python thread, which cannot be killed: the watchdog releases
    them (each is made to raise inside the kernel, and those parked at a barrier are woken by the simulator's
    abort flag) before the call raises; one that does not end in 2 s stays parked as a daemon thread, and
    the message says so. On a GPU the host cannot interrupt a kernel: ``gpuviz run`` (a worker process) can.
    ``progress``: called with a dict about once a second while
    the CPU executor runs. ``estimate``: on the cpu and sim backends, first run a few blocks to estimate
    the trace and refuse one that would pass ``max_events`` (TraceTooLarge) before the real run.
    ``dynamic_shared_bytes``: the launch's dynamic shared memory per block, the fourth item of
    ``kernel[grid, block, stream, nbytes]``: what ``cuda.shared.array(0, dtype)`` declares.
    """
    dynamic_shared_bytes = int(dynamic_shared_bytes or 0)
    if dynamic_shared_bytes < 0:
        raise ValueError(f"dynamic_shared_bytes must be 0 or more, not {dynamic_shared_bytes}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    grid, block = normalize_dims(grid, "grid"), normalize_dims(block, "block")
    if backend == "sim" and estimate:
        _refuse_if_too_large(kernel, grid, block, args, record_blocks, max_events, dynamic_shared_bytes)
    if backend in ("sim", "gpu"):
        from .lockstep import copy_inputs

        front_end_check(kernel, backend, grid[0] * grid[1] * grid[2])
        faults.check("plan", backend)
        inputs = copy_inputs(args) if lockstep else None
        if backend == "sim":
            from .perthread import capture_sim

            trace = capture_sim(kernel, grid, block, args, record_blocks=record_blocks, max_events=max_events,
                                dynamic_shared_bytes=dynamic_shared_bytes, watchdog=watchdog, **options)
        else:
            from .gpu import capture_gpu

            trace = capture_gpu(kernel, grid, block, args, record_blocks=record_blocks, max_events=max_events,
                                dynamic_shared_bytes=dynamic_shared_bytes, **options)
            for stage in ("run", "events", "assemble"):  # the GPU recorder's stages end inside capture_gpu
                faults.check(stage, "gpu")
        return (_add_lockstep_steps(trace, kernel, grid, block, inputs, record_blocks, max_events, dynamic_shared_bytes)
                if lockstep else trace)
    return _capture_cpu(kernel, grid, block, args, record_blocks=record_blocks, max_events=max_events,
                        time_plain=time_plain, watchdog=watchdog, progress=progress, estimate=estimate,
                        dynamic_shared_bytes=dynamic_shared_bytes, **options)


def _refuse_if_too_large(kernel, grid, block, args, record_blocks, max_events, dynamic_shared_bytes=0) -> None:
    """The size estimate for a kernel the CPU executor can run (the simulator backend: minutes saved)."""
    from .backends.cpu.estimate import refuse_if_too_large
    from .backends.cpu.executor import compile_for_cpu

    try:
        ck = compile_for_cpu(kernel)
    except CaptureError:  # the executor cannot run it: the simulator still can, unestimated
        return
    refuse_if_too_large(ck, grid, block, args, record_blocks=record_blocks, max_events=max_events,
                        file=ck.root.file, line=ck.root.first_line, kernel=ck.root.name,
                        dynamic_shared_bytes=dynamic_shared_bytes)


def front_end_check(kernel, backend: str | None = None, n_blocks: int = 1) -> None:
    """Refuse, on every backend alike, what gpuviz's reading of the kernel refuses.

    The kernel is read into its plan (:mod:`gpuviz.capture.plan`, cached) once: a construct gpuviz does
    not support raises the same UnsupportedConstruct, with the same file, line and message (and the plan's
    other diagnostics), whichever backend records the launch. Constructs that can only be judged at run time (a record field that is an
    array, a slice whose length differs between threads) are still checked by the backend that runs them.
    ``backend``: also refuse what the plan accepts and that back end does not model (``plan.BACKEND_LIMITS``: a
    grid-wide barrier across ``n_blocks`` > 1 on the simulator, ...)."""
    from .plan import plan_for

    plan = plan_for(kernel)
    plan.raise_if_unsupported()
    if backend is not None:
        plan.refuse_on(backend, n_blocks)


def _add_lockstep_steps(trace, kernel, grid, block, inputs, record_blocks, max_events, dynamic_shared_bytes=0) -> Trace:
    from .lockstep import with_lockstep_steps

    if trace.launch.meta.get("mode", "thread") != "thread":
        trace.launch.meta["step_source"] = "none: per-warp recording keeps lane 0's events only"
        return trace
    try:
        reference = _capture_cpu(kernel, grid, block, inputs, record_blocks=record_blocks, max_events=max_events,
                                 dynamic_shared_bytes=dynamic_shared_bytes)
    except CaptureError as exc:
        trace.launch.meta["step_source"] = f"none: the CPU executor could not replay the launch ({exc})"
        return trace
    return with_lockstep_steps(trace, reference)


def _capture_cpu(kernel, grid, block, args, *, record_blocks, max_events, time_plain=False, max_loop_iterations=5_000_000,
                 watchdog=DEFAULT_STALL_S, progress=None, estimate=True, dynamic_shared_bytes=0):
    from .backends.cpu.estimate import refuse_if_too_large
    from .backends.cpu.executor import compile_for_cpu, make_runtime, run_cpu
    from .source import source_span
    from .backends.cpu.watchdog import Watchdog

    ck = compile_for_cpu(kernel)
    faults.check("plan", "cpu")
    root = ck.root
    check_launch(grid, block, shared_bytes=ck.shared_bytes, where=f"{root.file}:{root.first_line}", kernel=root.name)
    timings = {"compile_s": ck.compile_seconds}
    if estimate:
        if grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2] > MAX_CPU_THREADS:
            from .backends.cpu.runtime import SimtRuntime

            SimtRuntime(grid, block, file=root.file)  # refuses with its own message, before any sample
        est = refuse_if_too_large(ck, grid, block, args, record_blocks=record_blocks, max_events=max_events,
                                  file=root.file, line=root.first_line, kernel=root.name,
                                  dynamic_shared_bytes=dynamic_shared_bytes)
        if est is not None:
            timings["estimate_s"] = round(est.seconds, 4)
    if time_plain:
        # the same lockstep code with recording off: what the executor costs without the trace
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        t0 = time.perf_counter()
        run_cpu(ck, make_runtime(ck, grid, block, record=False, max_loop_iterations=max_loop_iterations,
                                 dynamic_shared_bytes=dynamic_shared_bytes,
                                 watchdog=Watchdog(watchdog, progress) if watchdog or progress else None), copies)
        timings["plain_s"] = time.perf_counter() - t0
    text, first, _last = source_span(root)
    t0 = time.perf_counter()
    rt = make_runtime(ck, grid, block, record_blocks=record_blocks, max_events=max_events,
                      max_loop_iterations=max_loop_iterations, dynamic_shared_bytes=dynamic_shared_bytes,
                      watchdog=Watchdog(watchdog, progress) if watchdog or progress else None)
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
        exc.trace = _build_trace(rt, root, grid, block, text, first, timings, partial=True, sites=ck.plan.sites)
        raise
    faults.check("run", "cpu")  # the arguments hold the run's results: the fallback must restore them
    timings["instrumented_s"] = time.perf_counter() - t0
    return _build_trace(rt, root, grid, block, text, first, timings, sites=ck.plan.sites)


def _build_trace(rt, root, grid, block, text, first, timings, partial=False, sites=()) -> Trace:
    warnings = list(rt.warnings)
    if partial:
        warnings.insert(0, "partial trace: the launch stopped with an error")
    meta = {"kernel_lines": [root.first_line, root.last_line], "threads_recorded": "all" if rt.recorded is None else "chosen blocks"}
    if rt.dynamic_shared_bytes:
        meta["dynamic_shared_bytes"] = rt.dynamic_shared_bytes
    if rt.printed:
        meta["printed"] = rt.printed
    launch = Launch(
        kernel_name=root.name,
        grid=grid,
        block=block,
        arrays=_arrays_of(rt),
        source=text,
        source_file=root.file,
        first_line=first,
        backend="cpu",
        device="gpuviz CPU executor (lockstep SIMT, numpy)",
        versions=versions(),
        timings=timings,
        warnings=warnings,
        meta=meta,
        sites=list(sites),
    )
    faults.check("events", "cpu")
    events = rt.events()
    faults.check("assemble", "cpu")
    return Trace(launch, events)
