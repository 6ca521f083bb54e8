"""A test hook: make gpuviz's own instrumentation fail on purpose, at one stage of a traced launch.

    GPUVIZ_INJECT_FAULT=run gpuviz run prog.py            every traced launch fails after its instrumented run
    GPUVIZ_INJECT_FAULT=save:sim gpuviz run --backend sim prog.py   only on the sim backend

The value is ``STAGE`` or ``STAGE:BACKEND`` (cpu, sim, gpu). Stages, in the order a traced launch meets them:

    plan      after the kernel is read and compiled for instrumenting (before it runs)
    run       after the instrumented run (the arguments already hold its results: a fallback must undo that)
    events    where the recorded events are collected
    assemble  where the trace is put together
    save      where ``gpuviz run``'s worker saves the launch's trace file

The failure is :class:`InjectedFault`, an ordinary exception as a gpuviz bug would be, raised only on the traced
path (an untraced or plain run never checks the hook). The promise it tests: the program still finishes with
numba's results, and the launch is listed as untraced with this failure as its cause
(:meth:`gpuviz.runner.intercept.LaunchPolicy.launch`). ``inject_fault(stage)`` does the same in-process.
"""

from __future__ import annotations

import os

ENV = "GPUVIZ_INJECT_FAULT"
STAGES = ("plan", "run", "events", "assemble", "save")

_in_process: str | None = None


class InjectedFault(RuntimeError):
    """The failure the hook injects (a RuntimeError, not a CaptureError: it stands for a bug of gpuviz's)."""


def inject_fault(spec: str | None) -> None:
    """Inject at ``spec`` (``STAGE`` or ``STAGE:BACKEND``) in this process from now on; None stops."""
    global _in_process
    if spec is not None:
        _parse(spec)
    _in_process = spec


def _parse(spec: str) -> tuple[str, str | None]:
    stage, _, backend = spec.strip().partition(":")
    if stage not in STAGES:
        raise ValueError(f"{ENV}={spec!r}: the stage must be one of {', '.join(STAGES)}")
    if backend and backend not in ("cpu", "sim", "gpu"):
        raise ValueError(f"{ENV}={spec!r}: the backend must be cpu, sim or gpu")
    return stage, backend or None


def check(stage: str, backend: str) -> None:
    """Raise :class:`InjectedFault` when the hook asks for a failure at ``stage`` on ``backend``."""
    spec = _in_process or os.environ.get(ENV, "").strip()
    if not spec:
        return
    want, only = _parse(spec)
    if want == stage and only in (None, backend):
        raise InjectedFault(f"injected failure at stage {stage!r} on the {backend} backend ({ENV}={spec})")
