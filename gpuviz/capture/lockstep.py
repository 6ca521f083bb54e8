"""Lockstep steps for traces recorded per thread (numba's simulator, a real GPU).

A per-thread recording knows each thread's events in order but not which events of a warp's lanes
were one SIMT instruction: lanes that took different branches drift apart in their sequence numbers,
so grouping a warp's events by sequence number mixes instructions. gpuviz's CPU executor knows the
lockstep step of every event. When a per-thread trace holds, thread by thread, exactly the events the
executor records for the same launch and inputs (the test suite checks that they do for every bundled
kernel), the executor's steps carry over event for event.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..model.trace import Trace
from .args import host_array


def copy_inputs(args) -> list:
    """The launch's inputs as host copies, taken before a launch changes them."""
    def copy(a):
        if isinstance(a, tuple):  # a tuple's arrays too: the lockstep run must not write the caller's
            members = [copy(e) for e in a]
            return type(a)(*members) if hasattr(a, "_fields") else tuple(members)
        host, _ = host_array(a)
        return np.array(host, copy=True) if host is not None else a

    return [copy(a) for a in args]


def _sequence_key(trace: Trace, by_site: bool = False) -> tuple[np.ndarray, list[np.ndarray]]:
    order = trace.thread_order
    names = [a.name for a in trace.launch.arrays]
    # array ids may differ between backends (arrays register in different orders): compare by name
    name_ids = {n: i for i, n in enumerate(sorted(set(names)))}
    remap = np.array([name_ids[n] for n in names] + [-1], dtype=np.int64)
    arr = trace.array.astype(np.int64)
    arr = remap[np.where(arr >= 0, arr, len(names))]
    # the capture plan's site says which construct of the source each event came from (two loads of one line
    # are two sites); traces without sites fall back to the line
    where = trace.site if by_site else trace.line
    cols = [trace.block, trace.thread, trace.kind, arr, trace.index, where]
    return order, [c[order] for c in cols]


def by_sites(a: Trace, b: Trace) -> bool:
    """Whether two traces can be matched by site: both carry site ids from one site table (one plan)."""
    return a.has("site") and b.has("site") and bool(a.launch.sites) and a.launch.sites == b.launch.sites


def same_sequences(a: Trace, b: Trace) -> bool:
    """True when both traces hold the same events thread by thread (kind, array, index, and site, or line for
    traces without sites), in order."""
    if len(a) != len(b):
        return False
    sites = by_sites(a, b)
    _, ka = _sequence_key(a, sites)
    _, kb = _sequence_key(b, sites)
    return all(np.array_equal(x, y) for x, y in zip(ka, kb))


def with_lockstep_steps(recorded: Trace, reference: Trace) -> Trace:
    """``recorded`` with ``step`` taken from ``reference`` (a CPU-executor trace of the same launch).

    Returns ``recorded``'s events unchanged (a new trace: a launch does not change once made), with the reason in
    ``launch.meta["step_source"]``, when the two do not hold the same per-thread sequences (a data race that
    changed control flow, per-warp recording, ...).
    """
    if not same_sequences(recorded, reference):
        return recorded.with_launch(meta={**recorded.launch.meta, "step_source": (
            "none: the per-thread sequences differ from the CPU executor's, so frames group a warp's events by "
            "sequence number"
        )})
    steps = np.empty(len(recorded), dtype=np.int32)
    steps[recorded.thread_order] = reference.step[reference.thread_order]
    cols = {name: recorded.field(name) for name in recorded.recorded_fields}
    cols["step"] = steps
    launch = dataclasses.replace(recorded.launch, meta={**recorded.launch.meta, "step_source": (
        "gpuviz's CPU executor replaying the same launch: identical per-thread events, so its lockstep steps "
        "carry over"
    )})
    return Trace(launch, cols)
