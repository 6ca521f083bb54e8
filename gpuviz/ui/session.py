"""The Session: one trace on screen, its frames, playback, linked selection and theme, as Qt signals.

The models it holds are Qt-free (:class:`~gpuviz.model.playback.Playback`,
:class:`~gpuviz.model.selection.Selection`, the trace's :class:`~gpuviz.model.prepared.Prepared`: its frames,
phases, reports, index); the session bridges their observer callbacks to Qt signals so views just connect slots.
It is where the window's trace is prepared (``prepare``): views read ``session.prepared``, never prepare one.

    trace_changed()          a new trace (and new frames) is loaded: rebuild layouts
    frame_changed(int)       the current frame changed: update colours only
    selection_changed()      the linked selection changed
    playback_changed(str)    playing / speed / loop / n_frames changed (the field name)
    theme_changed()          theme or scale changed: restyle

It also owns the playback clock: a QTimer that, while playing, calls ``playback.tick(now)``; the
playback model decides which frame is due and drops the ones drawing could not keep up with.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QObject, QTimer, Signal

from ..lessons.player import mask_answers
from ..model.frames import Frames
from ..model.playback import Playback, demo_fps
from ..model.prepared import Prepared, prepare
from ..model.selection import Selection
from ..model.trace import Trace
from ..style.theme import LIGHT, Theme, get_theme


class Session(QObject):
    trace_changed = Signal()
    frame_changed = Signal(int)
    selection_changed = Signal()
    playback_changed = Signal(str)
    theme_changed = Signal()

    #: how often the playback clock ticks while playing (ms); frames due in between are dropped
    TICK_MS = 15
    #: work kept for idle time (building items ahead for the next trace) waits until the window has shown no new
    #: frame and no view was resized for this long (s): it ran between a user's first steps (a colour bar built
    #: ahead, 47-70 ms of one turn, held back the step after it)
    IDLE_S = 0.5

    def __init__(self, trace: Trace | None = None, theme: Theme = LIGHT, parent: QObject | None = None):
        super().__init__(parent)
        self.prepared: Prepared | None = None
        self.playback = Playback()
        self.selection = Selection()
        self.theme = theme
        self.source_label = ""  # where the trace came from ("embedded default", a file path, ...)
        # a lesson's question waiting for its answer ("" when none): views and captions that would give the
        # answer away (an n-way conflict, a sector count) hold it back until it is revealed
        self.predicting = ""
        self._unobserve = [
            self.playback.observe(self._on_playback),
            self.selection.observe(self.selection_changed.emit),
        ]
        self._clock = QTimer(self)
        self._clock.setInterval(self.TICK_MS)
        self._clock.timeout.connect(self._tick)
        # calls waiting for a later event-loop turn (Session.later), one a turn, in the order queued
        self._later: dict = {}
        self._later_timer = QTimer(self)
        self._later_timer.setSingleShot(True)
        self._later_timer.setInterval(0)
        self._later_timer.timeout.connect(self._run_one_later)
        self._last_activity = time.perf_counter()
        if trace is not None:
            self.set_trace(trace)

    # ---- the trace -----------------------------------------------------------------------------
    @property
    def trace(self) -> Trace | None:
        return self.prepared.trace if self.prepared is not None else None

    @property
    def frames(self) -> Frames | None:
        return self.prepared.frames if self.prepared is not None else None

    def set_trace(self, trace: Trace | Prepared, source_label: str = "") -> None:
        """Show a new trace: new frames, frame 0, selection cleared, every view rebuilt. ``trace``: a trace (prepared
        here) or the :class:`Prepared` its opener made (a file's open job, the lesson player)."""
        prepared = trace if isinstance(trace, Prepared) else prepare(trace)
        trace, frames = prepared.trace, prepared.frames
        self.prepared = prepared
        self.source_label = source_label
        self.predicting = ""
        self.selection.warp_size = trace.launch.warp_size
        self.selection._state = type(self.selection.state)()  # cleared silently: trace_changed redraws all
        # views rebuild on trace_changed, then draw frame 0 on the frame_changed that set_frames sends
        self._quiet = True
        try:
            self.playback.set_frames(frames)
            # a demo's pace: the whole launch in about a minute at speed 1 (- and + still halve and double it)
            self.playback.fps = demo_fps(frames.n_frames)
            self.playback.speed = 1.0
        finally:
            self._quiet = False
        self.playback_changed.emit("fps")
        self.trace_changed.emit()
        self.frame_changed.emit(self.playback.frame)

    def show_again(self, source_label: str | None = None) -> None:
        """The trace on screen opened again (its file unchanged): back to frame 0, nothing selected, playback
        stopped; the views keep what they built for it."""
        if self.trace is None:
            return
        if source_label is not None:
            self.source_label = source_label
        self.predicting = ""
        self.playback.pause()
        self.selection.clear()
        if self.playback.frame != 0:
            self.set_frame(0)
        else:
            self.frame_changed.emit(0)

    @property
    def frame(self) -> int:
        return self.playback.frame

    def set_predicting(self, question: str, answer: str = "") -> None:
        """A question is asked (its answer must not show anywhere yet), or answered (``""``): views redraw.
        ``answer``: the answer as the reveal will show it ("32-way", "256"), for :meth:`mask` to blank."""
        question = question or ""
        answer = answer if question else ""
        if question != self.predicting or answer != self.predicting_answer:
            self.predicting, self.predicting_answer = question, answer
            self.frame_changed.emit(self.playback.frame)

    predicting_answer = ""

    def mask(self, text: str) -> str:
        """``text`` with the open question's answer blanked (as the lesson player blanks titles and notes)."""
        if not self.predicting or not self.predicting_answer or not text:
            return text
        return mask_answers(text, [(self.predicting_answer, self.predicting)])

    def set_frame(self, f: int) -> None:
        self.playback.frame = f

    # ---- work spread over event-loop turns ------------------------------------------------------------
    def later(self, key, call) -> None:
        """Run ``call()`` in a later event-loop turn, one queued call a turn: a big trace's views adopt it one
        at a time, with input, timers and painting handled between them, so no single turn holds the GUI
        thread for every view's rebuild. ``key`` (a view) is queued once; queuing it again replaces its call."""
        self._later.pop(key, None)
        self._later[key] = call
        if not self._later_timer.isActive():
            self._later_timer.start()

    def is_later(self, key) -> bool:
        """Is a call for ``key`` still waiting for its turn?"""
        return key in self._later

    @property
    def settling(self) -> bool:
        """Are calls still waiting for their turn (views still adopting the trace on screen)?"""
        return bool(self._later)

    def settle_now(self) -> None:
        """Run every waiting call now (a snapshot or an export needs every view drawn)."""
        while self._later:
            self._run_one_later()

    def _run_one_later(self) -> None:
        if not self._later:
            return
        key = next(iter(self._later))
        call = self._later.pop(key)
        try:
            call()
        finally:
            if self._later:
                self._later_timer.start()

    # ---- idle time ---------------------------------------------------------------------------------
    def note_activity(self) -> None:
        """Something on screen changes now (a frame, a view's size): idle-time work waits (:meth:`idle_for`)."""
        self._last_activity = time.perf_counter()

    def idle_for(self) -> float:
        """Seconds since the last frame change or view resize (:meth:`note_activity`)."""
        return time.perf_counter() - self._last_activity

    # ---- theme -----------------------------------------------------------------------------------
    def set_theme(self, theme: Theme | str) -> None:
        if isinstance(theme, str):
            theme = get_theme(theme, self.theme.scale)
        self.theme = theme
        self.theme_changed.emit()

    def set_scale(self, scale: float) -> None:
        scale = min(max(float(scale), 0.5), 4.0)
        if scale != self.theme.scale:
            self.theme = self.theme.scaled(scale)
            self.theme_changed.emit()

    # ---- playback clock --------------------------------------------------------------------------
    _quiet = False

    def _on_playback(self, name: str) -> None:
        if self._quiet:
            return
        if name == "frame":
            self._last_activity = time.perf_counter()
            self.frame_changed.emit(self.playback.frame)
            return
        if name == "playing":
            if self.playback.playing:
                self.playback.tick(time.perf_counter())  # start the clock now
                self._clock.start()
            else:
                self._clock.stop()
        self.playback_changed.emit(name)

    def _tick(self) -> None:
        # frame_changed is emitted inside tick and views draw synchronously; a slow draw delays the
        # next timeout (Qt coalesces them) and the next tick jumps over the frames that were missed.
        self.playback.tick(time.perf_counter())

    def shutdown(self) -> None:
        """Stop the clock and drop observers (the window calls this when it closes)."""
        self._clock.stop()
        self._later_timer.stop()
        self._later.clear()
        self.playback.pause()
        for undo in self._unobserve:
            undo()
        self._unobserve = []
