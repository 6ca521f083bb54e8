"""A trace prepared for showing: everything derived from its events that does not change per frame, in one object.

A :class:`~gpuviz.model.trace.Trace` is what a capture recorded and never changes once made: nothing derived is
written onto it. What the window, the exports, the lessons and the share derive from it lives in one
:class:`Prepared`, built by one function, :func:`prepare`, from the trace and, when its file carried one (or the
user's cache holds one, or one was built where the trace was made), its index (:mod:`gpuviz.model.index`):

    frames          :class:`~gpuviz.model.frames.Frames` in block order: adopted from the index when there is one
                    (nothing sorted again), else built from the events
    phase           the barrier phase of every event (the index's, else ``Trace.phase``)
    narration       the narrator's saved facts (the index's), handed to a :class:`Narrator` of these frames
    reports         the four analysis reports (:data:`~gpuviz.model.analysis.REPORT_NAMES`): the index's are
                    given to the analyses' cache of the trace, so any ``analysis.global_memory(trace)`` reads them
    index, crcs     the index in use and where it came from; the CRC-32 of each event field's member in the trace's
                    file (empty for a trace never read from a file): what ties an index to its events

There is one :class:`Prepared` per trace, whoever asks first: :func:`prepare` keeps it for as long as the trace
lives (a weak reference, as the analyses keep their reports), so the frames are sorted or adopted once and the
answer does not depend on which module asked first: the file's loader hands its index to :func:`prepare` before
anything else sees the trace.

numpy only: no Qt, no numba.
"""

from __future__ import annotations

import threading
import weakref
from functools import cached_property

import numpy as np

from . import analysis
from .frames import Frames
from .index import TraceIndex, narration_state, report_from_parts
from .trace import Trace

__all__ = ["Prepared", "prepare", "has_index"]


class Prepared:
    """One trace and what is derived from it (see the module's docstring). Build one with :func:`prepare`."""

    def __init__(self, trace: Trace, index: TraceIndex | None = None, crcs: dict | None = None,
                 source: str | None = None):
        self.trace = trace
        self.crcs: dict[str, int] = dict(crcs or {})
        self.index: TraceIndex | None = None
        self._narration = None
        #: where the index came from: "file", "cache" or "built" (None while there is none)
        self.source: str | None = None
        self._lock = threading.RLock()
        if index is not None:
            self.use_index(index, source or "file")

    def use_index(self, index: TraceIndex, source: str) -> None:
        with self._lock:
            self.index, self.source = index, source
            self._narration = narration_state(index) if "narration" in index.info else None
            for name in analysis.REPORT_NAMES:
                analysis.seed_report(self.trace, name,
                                     report_from_parts(name, index.arrays, index.info["reports"][name]))

    @property
    def launch(self):
        return self.trace.launch

    @cached_property
    def frames(self) -> Frames:
        """The block-order frames: the index's (adopted whole), else sorted from the events, once."""
        with self._lock:
            if "frames" in self.__dict__:  # another thread built them while this one waited
                return self.__dict__["frames"]
            idx = self.index
            if idx is None:
                return Frames(self.trace)
            arrays = {k[len("frames."):]: v for k, v in idx.arrays.items() if k.startswith("frames.")}
            return Frames(self.trace, arrays=arrays, event_phase=idx.arrays["trace.phase"], narration=self._narration)

    @property
    def phase(self) -> np.ndarray:
        """The barrier phase of every event (the index's when there is one)."""
        if self.index is not None:
            return self.index.arrays["trace.phase"]
        return self.trace.phase

    @property
    def narration(self):
        """The narrator's facts the index holds (``Narrator.state()``), or None."""
        return self._narration

    def report(self, name: str):
        """The analysis report ``name`` (one of :data:`~gpuviz.model.analysis.REPORT_NAMES`): the index's, else
        computed now (and kept by the analyses' cache)."""
        if name not in analysis.REPORT_NAMES:
            raise KeyError(f"no analysis report named {name!r}; known: {', '.join(analysis.REPORT_NAMES)}")
        return getattr(analysis, name)(self.trace)

    def events_of_thread(self, block: int, thread: int) -> np.ndarray:
        """Indices of one thread's events in program order: from its block's frames when they are built or an
        index gives them (no whole-trace sort), else ``Trace.events_of_thread``."""
        if "thread_order" not in self.trace.__dict__ and ("frames" in self.__dict__ or self.index is not None):
            return self.frames.thread_event_indices(block, thread)
        return self.trace.events_of_thread(block, thread)

    def __repr__(self) -> str:
        return f"<Prepared {self.trace!r} index={self.source or 'none'}>"


_PREPARED: "weakref.WeakKeyDictionary[Trace, Prepared]" = weakref.WeakKeyDictionary()
_GUARD = threading.Lock()


def prepare(trace: Trace, index: TraceIndex | None = None, crcs: dict | None = None,
            source: str | None = None) -> Prepared:
    """The :class:`Prepared` of ``trace``: the one already made for it, else a new one.

    ``index``: an index of these events (read from the trace's file, the user's cache, or built where the trace
    was made; ``source`` says which: "file", "cache", "built"), used when the prepared trace has none yet; its
    frames are then adopted rather than sorted, unless they were built already. ``crcs``: the CRC-32 of the
    trace's event members in its file (the loader's), kept when none are known yet."""
    if not isinstance(trace, Trace):
        raise TypeError(f"prepare() takes a Trace, not a {type(trace).__name__}")
    with _GUARD:
        p = _PREPARED.get(trace)
        if p is None:
            p = _PREPARED[trace] = Prepared(trace, index, crcs, source)
            return p
    if crcs and not p.crcs:
        p.crcs = dict(crcs)
    if index is not None and p.index is None:
        p.use_index(index, source or "file")
    return p


def has_index(trace: Trace) -> bool:
    """Does ``trace`` have an index in use (its file's, the cache's, or one built)?"""
    return prepare(trace).index is not None
