"""Capture: run an unmodified Numba CUDA kernel instrumented and return its :class:`~gpuviz.model.Trace`.

The kernel is read once by the front end (:mod:`.frontend`: its plan, refused constructs), recorded by a back end
chosen by name (:mod:`.backends`: the registry), and what it recorded becomes the trace (:mod:`.assemble`):

    "cpu"  gpuviz's own lockstep executor (numpy; no GPU; the default)
    "sim"  numba's CUDA simulator running a per-thread instrumented copy of the kernel (the reference)
    "gpu"  numba-cuda on a real NVIDIA GPU
"""

from __future__ import annotations

from ..model.trace import Trace
from . import faults
from .assemble import build_trace, versions
from .backends import BACKENDS as _REGISTRY, LaunchSpec, backend_named
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
from .frontend.plan import plan_for
from .limits import normalize_dims
from .lockstep import copy_inputs, with_lockstep_steps
from .backends.cpu.watchdog import DEFAULT_STALL_S

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
    "versions",
]

BACKENDS = tuple(_REGISTRY)
_CPU = _REGISTRY["cpu"]


def capture(kernel, grid, block, *args, backend: str = "cpu", record_blocks=None, max_events: int = 50_000_000,
            time_plain: bool = False, lockstep: bool = True, watchdog: float | None = DEFAULT_STALL_S,
            progress=None, estimate: bool = True, dynamic_shared_bytes: int = 0, meta: dict | None = None,
            **options) -> Trace:
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
    ``meta``: entries the trace's ``launch.meta`` gets besides the back end's (a bundled kernel's name and size:
    the launch does not change once made, so who asks for the capture says them here).
    """
    dynamic_shared_bytes = int(dynamic_shared_bytes or 0)
    if dynamic_shared_bytes < 0:
        raise ValueError(f"dynamic_shared_bytes must be 0 or more, not {dynamic_shared_bytes}")
    back = backend_named(backend)
    grid, block = normalize_dims(grid, "grid"), normalize_dims(block, "block")
    launch = LaunchSpec(kernel, grid, block, dynamic_shared_bytes, record_blocks, max_events)
    options = dict(options, time_plain=time_plain, watchdog=watchdog, progress=progress, estimate=estimate)
    if not back.per_thread:
        return build_trace(plan_for(kernel), back.name, back.run(plan_for(kernel), launch, args, options), meta)
    if back.estimated and estimate:
        _CPU.refuse_if_too_large(launch, args)
    front_end_check(kernel, back.name, grid[0] * grid[1] * grid[2])
    faults.check("plan", back.name)
    inputs = copy_inputs(args) if lockstep else None
    plan = plan_for(kernel)
    trace = build_trace(plan, back.name, back.run(plan, launch, args, options), meta)
    return _add_lockstep_steps(trace, plan, launch, inputs) if lockstep else trace


def front_end_check(kernel, backend: str | None = None, n_blocks: int = 1) -> None:
    """Refuse, on every backend alike, what gpuviz's reading of the kernel refuses.

    The kernel is read into its plan (:mod:`gpuviz.capture.frontend.plan`, cached) once: a construct gpuviz does
    not support raises the same UnsupportedConstruct, with the same file, line and message (and the plan's
    other diagnostics), whichever backend records the launch. Constructs that can only be judged at run time (a record field that is an
    array, a slice whose length differs between threads) are still checked by the backend that runs them.
    ``backend``: also refuse what the plan accepts and that back end does not model (the construct table's
    ``BACKEND_LIMITS``: a grid-wide barrier across ``n_blocks`` > 1 on the simulator, ...)."""
    plan = plan_for(kernel)
    plan.raise_if_unsupported()
    if backend is not None:
        plan.refuse_on(backend, n_blocks)


def _add_lockstep_steps(trace, plan, launch: LaunchSpec, inputs) -> Trace:
    """The per-thread trace with the CPU executor's lockstep issue steps, where its events agree."""
    if trace.launch.meta.get("mode", "thread") != "thread":
        return trace.with_launch(meta={**trace.launch.meta,
                                       "step_source": "none: per-warp recording keeps lane 0's events only"})
    try:
        reference = build_trace(plan, "cpu", _CPU.run(plan, launch, inputs, {}))
    except CaptureError as exc:
        return trace.with_launch(meta={**trace.launch.meta,
                                       "step_source": f"none: the CPU executor could not replay the launch ({exc})"})
    return with_lockstep_steps(trace, reference)
