"""One place that turns what a back end recorded into a :class:`~gpuviz.model.trace.Launch` and its
:class:`~gpuviz.model.trace.Trace`, for every back end.

A back end (:mod:`gpuviz.capture.backends`) runs the launch and hands back a :class:`Recorded`: the events,
the arrays, the device and its versions, timings, warnings and its own extras. :func:`build_trace` adds what
every trace shares and reads off the capture plan: the kernel's name, source span and lines, and the site table.
"""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass, field

import numpy as np

from ..model.trace import ArrayInfo, EventKind, Launch, Trace
from ..version import __version__
from .dtypes import plain
from .frontend.source import source_span


@dataclass
class Recorded:
    """What a back end recorded of one launch, before it is a trace.

    ``events``: the trace's field-major event arrays. ``meta``: the back end's extras, after the
    ``kernel_lines`` every trace starts its meta with. ``created``: the back end's own timestamp (the GPU
    takes it when the launch ended); empty: when the Launch is made."""

    grid: tuple
    block: tuple
    events: dict
    arrays: list[ArrayInfo]
    device: str
    versions: dict[str, str]
    timings: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    dropped: int = 0
    created: str = ""


def versions() -> dict[str, str]:
    """gpuviz's, Python's, numpy's and (when imported) numba's versions, as a trace reports them."""
    out = {"gpuviz": __version__, "python": platform.python_version(), "numpy": np.__version__}
    for mod in ("numba", "numba_cuda"):
        m = sys.modules.get(mod)
        if m is not None and getattr(m, "__version__", None):
            out[mod] = str(m.__version__)
    return out


def arrays_of(handles) -> list[ArrayInfo]:
    """The trace's arrays from the CPU executor's array handles (constant memory is shown as global)."""
    return [ArrayInfo.of(h.name, h.shape, plain(h.dtype), h.space if h.space != "const" else "global", h.line)
            for h in handles]


def build_launch(plan, backend: str, rec: Recorded, meta: dict | None = None) -> Launch:
    """The Launch of one recorded launch of ``plan``'s kernel on ``backend``, complete: ``meta``, what the caller
    of the capture adds to the back end's (a bundled kernel's name and size), and the lockstep steps' source go
    in here, since a launch does not change once made."""
    root = plan.root
    text, first, _last = source_span(root)
    return Launch(
        kernel_name=root.name, grid=rec.grid, block=rec.block, arrays=list(rec.arrays), source=text,
        source_file=root.file, first_line=first, backend=backend, device=rec.device, versions=rec.versions,
        timings=rec.timings, dropped=rec.dropped, warnings=rec.warnings,
        meta={"kernel_lines": [root.first_line, root.last_line], **rec.meta, **(meta or {})}, sites=plan.sites,
        created=rec.created,
    )


def build_trace(plan, backend: str, rec: Recorded, meta: dict | None = None) -> Trace:
    """The Trace of one recorded launch of ``plan``'s kernel on ``backend`` (``meta``: see :func:`build_launch`)."""
    return Trace(build_launch(plan, backend, rec, meta), rec.events)


def uninitialised_shared_reads(events: dict, arrays, grid, block, file: str) -> list[str]:
    """Warnings for the shared-array elements a thread reads that no thread of its block ever writes (stores
    or atomics) in the whole run: their value is whatever the shared memory held, as on any GPU. One warning per
    array and line, worded as the CPU executor words its own (which also sees reads that come before the
    block's first write; a GPU recording has no order between threads to tell those apart)."""
    kind = np.asarray(events["kind"])
    shared_ids = [i for i, a in enumerate(arrays) if a.space == "shared"]
    if not shared_ids or not len(kind):
        return []
    aid, blk = np.asarray(events["array"]), np.asarray(events["block"])
    on_shared = np.isin(aid, shared_ids)
    loads = np.flatnonzero(on_shared & (kind == EventKind.SHARED_LOAD))
    writes = np.flatnonzero(on_shared & ((kind == EventKind.SHARED_STORE) | (kind == EventKind.ATOMIC)))
    if not len(loads):
        return []
    index = np.asarray(events["index"], dtype=np.int64)
    # one int64 key per (block, array, element): every shared array is small (48 KiB a block at most)
    size = max(int(arrays[i].size) for i in shared_ids) + 1
    key = (blk.astype(np.int64) * len(arrays) + aid) * size + index
    unwritten = ~np.isin(key[loads], key[writes])
    out, seen = [], set()
    bx, by, _bz = (tuple(block) + (1, 1))[:3]
    gx, gy, _gz = (tuple(grid) + (1, 1))[:3]
    for e in loads[unwritten]:
        key = (int(aid[e]), int(events["line"][e]))
        if key in seen:
            continue
        seen.add(key)
        b, t = int(blk[e]), int(events["thread"][e])
        thread = (t % bx, (t // bx) % by, t // (bx * by))
        where = (b % gx, (b // gx) % gy, b // (gx * gy))
        out.append(f"{file}:{key[1]}: thread {thread} of block {where} [linear: block {b}, thread {t}] reads "
                   f"{arrays[key[0]].name} before any thread of its block wrote it (uninitialised shared memory "
                   "reads as garbage on a GPU)")
    return out
