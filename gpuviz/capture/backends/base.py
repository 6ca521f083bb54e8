"""The interface every capture back end has (:class:`Backend`), the launch it is given (:class:`LaunchSpec`) and
the per-plan cache a back end keeps its own products in (:class:`PlanCache`). The registry is
:data:`gpuviz.capture.backends.BACKENDS`."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class LaunchSpec:
    """One ``kernel[grid, block, 0, dynamic_shared_bytes](*args)`` to record, as every back end takes it."""

    kernel: Any  # the @cuda.jit dispatcher (or the simulator's), as the user launched it
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_shared_bytes: int = 0
    record_blocks: Any = None  # the blocks to record (None: all)
    max_events: int = 50_000_000


class Backend(Protocol):
    """What ``gpuviz.capture`` needs of a back end.

    ``per_thread``: it records thread by thread (each thread's events in its own order, no issue steps): the
    capture then replays the launch on the CPU executor for its lockstep steps (:mod:`gpuviz.capture.lockstep`),
    refuses first what the plan accepts and this back end does not model (``KernelPlan.refuse_on``), and copies the
    inputs for the replay before the run. ``estimated``: the capture first runs a few blocks on the CPU
    executor to refuse a trace that would pass ``max_events`` (the ``estimate`` option).
    ``run``: record the launch (the arguments hold its results after) and return what was recorded;
    ``options`` are the keyword options of ``gpuviz.capture`` this back end reads (others are ignored)."""

    name: str
    per_thread: bool
    estimated: bool

    def run(self, plan, launch: LaunchSpec, args, options: dict): ...


class PlanCache:
    """A back end's products of one capture plan (compiled code, variants), kept as long as the plan lives.

    Plans are cached per kernel object by the front end; a back end keys its own products by the plan here
    instead of setting attributes on it. The cache holds the plan weakly (by its id, with a weak reference that
    drops the entry when the plan goes): what a back end stores here must not refer back to the plan or to its
    kernel, or the plan could never go (the CPU executor's :class:`~.cpu.executor.CpuCode` refers to neither)."""

    def __init__(self):
        self._by_plan: dict[int, tuple[weakref.ref, dict]] = {}

    def of(self, plan) -> dict:
        """The back end's dict for ``plan`` (empty the first time)."""
        key = id(plan)
        hit = self._by_plan.get(key)
        if hit is not None and hit[0]() is plan:
            return hit[1]
        store: dict = {}
        self._by_plan[key] = (weakref.ref(plan, lambda _r, k=key: self._by_plan.pop(k, None)), store)
        return store
