"""A trace prepared for showing: everything derived from its events that does not change per frame, in one object.

A :class:`~gpuviz.model.trace.Trace` is what a capture recorded and never changes once made: nothing derived is
written onto it. What the window, the exports, the lessons and the share derive from it lives in one
:class:`Prepared`, made by one function, :func:`prepare`, from the trace and, when its file carried one (or the
user's cache holds one, or one was built where the trace was made), its index (:mod:`gpuviz.model.index`):

    frames          :class:`~gpuviz.model.frames.Frames` in block order: adopted from the index when there is one
                    (nothing sorted again), else built from the events
    phase           the barrier phase of every event (the index's, else ``Trace.phase``)
    narration       the narrator's saved facts (the index's), handed to a :class:`Narrator` of these frames
    reports         the four analysis reports (:data:`~gpuviz.model.analysis.REPORT_NAMES`): the index's are
                    given to the analyses' cache of the trace, so any ``analysis.global_memory(trace)`` reads them
    index, crcs     the index in use and where it came from; the CRC-32 of each event field's member in the trace's
                    file (empty for a trace never read from a file): what ties an index to its events

:func:`prepare` keeps, for as long as the trace lives, what no one can derive again cheaply: the index, the CRCs,
and a weak reference to the frames and to the :class:`Prepared` in use (weakly keyed by the trace, as the analyses
keep their reports; nothing kept refers back to the trace, so a trace no one holds goes, with all of it). So the
frames are sorted or adopted once while anyone holds them, and whether they are adopted does not depend on which
module asked first: the file's loader hands its index to :func:`prepare` before anything else sees the trace.
:func:`prepare` is called where a trace is opened (the loader, the window's session and file-open job, the lesson
player, the exports' entry points); views, the narrator and the pages' builders take the :class:`Prepared` handed on.

numpy only: no Qt, no numba.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field

import numpy as np

from . import analysis
from .frames import Frames
from .index import TraceIndex, narration_state, report_from_parts
from .trace import Trace

__all__ = ["Prepared", "prepare", "has_index", "relaunched"]


@dataclass(eq=False)
class _Kept:
    """What :func:`prepare` keeps of a trace while it lives: nothing that refers back to it."""

    crcs: dict[str, int] = field(default_factory=dict)
    index: TraceIndex | None = None
    source: str | None = None
    narration: tuple | None = None
    frames: "weakref.ref[Frames] | None" = None
    prepared: "weakref.ref[Prepared] | None" = None
    lock: threading.RLock = field(default_factory=threading.RLock)


class Prepared:
    """One trace and what is derived from it (see the module's docstring). Get one with :func:`prepare`."""

    def __init__(self, trace: Trace, kept: _Kept):
        self.trace = trace
        self._kept = kept
        self._frames: Frames | None = None

    @property
    def launch(self):
        return self.trace.launch

    @property
    def index(self) -> TraceIndex | None:
        """The index in use (its file's, the cache's, or one built), or None."""
        return self._kept.index

    @property
    def source(self) -> str | None:
        """Where the index came from: "file", "cache" or "built" (None while there is none)."""
        return self._kept.source

    @property
    def crcs(self) -> dict[str, int]:
        """The CRC-32 of each event field's member in the trace's file ({} for a trace never read from one)."""
        return self._kept.crcs

    def use_index(self, index: TraceIndex, source: str) -> None:
        """Take ``index`` (checked to fit these events) as this trace's: frames built from now on adopt it, and the
        analyses return its reports."""
        kept = self._kept
        with kept.lock:
            kept.index, kept.source = index, source
            kept.narration = narration_state(index) if "narration" in index.info else None
            for name in analysis.REPORT_NAMES:
                analysis.seed_report(self.trace, name,
                                     report_from_parts(name, index.arrays, index.info["reports"][name]))

    @property
    def frames(self) -> Frames:
        """The block-order frames: the index's (adopted whole), else sorted from the events; once while anyone
        holds them."""
        kept = self._kept
        with kept.lock:
            frames = self._frames or (kept.frames() if kept.frames is not None else None)
            if frames is None:
                idx = kept.index
                if idx is None:
                    frames = Frames(self.trace)
                else:
                    arrays = {k[len("frames."):]: v for k, v in idx.arrays.items() if k.startswith("frames.")}
                    frames = Frames(self.trace, arrays=arrays, event_phase=idx.arrays["trace.phase"],
                                    narration=kept.narration)
                kept.frames = weakref.ref(frames)
            self._frames = frames
            return frames

    @property
    def phase(self) -> np.ndarray:
        """The barrier phase of every event (the index's when there is one)."""
        idx = self._kept.index
        return idx.arrays["trace.phase"] if idx is not None else self.trace.phase

    @property
    def narration(self):
        """The narrator's facts the index holds (``Narrator.state()``), or None."""
        return self._kept.narration

    def report(self, name: str):
        """The analysis report ``name`` (one of :data:`~gpuviz.model.analysis.REPORT_NAMES`): the index's, else
        computed now (and kept by the analyses' cache)."""
        if name not in analysis.REPORT_NAMES:
            raise KeyError(f"no analysis report named {name!r}; known: {', '.join(analysis.REPORT_NAMES)}")
        return getattr(analysis, name)(self.trace)

    def events_of_thread(self, block: int, thread: int) -> np.ndarray:
        """Indices of one thread's events in program order: from its block's frames when they are built or an
        index gives them (no whole-trace sort), else ``Trace.events_of_thread``."""
        kept = self._kept
        built = self._frames is not None or (kept.frames is not None and kept.frames() is not None)
        if "thread_order" not in self.trace.__dict__ and (built or kept.index is not None):
            return self.frames.thread_event_indices(block, thread)
        return self.trace.events_of_thread(block, thread)

    def __repr__(self) -> str:
        return f"<Prepared {self.trace!r} index={self.source or 'none'}>"


_KEPT: "weakref.WeakKeyDictionary[Trace, _Kept]" = weakref.WeakKeyDictionary()
_GUARD = threading.Lock()


def prepare(trace: Trace, index: TraceIndex | None = None, crcs: dict | None = None,
            source: str | None = None) -> Prepared:
    """The :class:`Prepared` of ``trace``: the one in use, else a new one (sharing what was kept of the trace).

    ``index``: an index of these events (read from the trace's file, the user's cache, or built where the trace
    was made; ``source`` says which: "file", "cache", "built"), taken when the trace has none yet; its frames are
    then adopted rather than sorted, unless they were built already. ``crcs``: the CRC-32 of the trace's event
    members in its file (the loader's), kept when none are known yet."""
    if not isinstance(trace, Trace):
        raise TypeError(f"prepare() takes a Trace, not a {type(trace).__name__}")
    with _GUARD:
        kept = _KEPT.get(trace)
        if kept is None:
            kept = _KEPT[trace] = _Kept()
        p = kept.prepared() if kept.prepared is not None else None
        if p is None:
            p = Prepared(trace, kept)
            kept.prepared = weakref.ref(p)
    with kept.lock:
        if crcs and not kept.crcs:
            kept.crcs = dict(crcs)
        if index is not None and kept.index is None:
            p.use_index(index, source or "file")
    return p


def relaunched(trace: Trace, **changes) -> Trace:
    """``trace.with_launch(**changes)``: its events under a changed launch (a new trace), with what was kept of
    ``trace`` carried over: its file's CRCs and its index, which describe those same events. For changes that
    leave what the index derived alone (a run's or a recording's notes in ``meta``, the warnings, the source's
    path), not the launch's shape, arrays, sites or the meta the analyses read."""
    new = trace.with_launch(**changes)
    with _GUARD:
        kept = _KEPT.get(trace)
    if kept is not None:
        with kept.lock:
            index, source, crcs = kept.index, kept.source, dict(kept.crcs)
        if index is not None or crcs:
            prepare(new, index=index, crcs=crcs, source=source)
    return new


def has_index(trace: Trace) -> bool:
    """Does ``trace`` have an index in use (its file's, the cache's, or one built)?"""
    return prepare(trace).index is not None
