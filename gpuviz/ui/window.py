"""The main window: every registered view in a dock, the transport bar, the launch panel, the menus.

Menus, toolbar buttons, key bindings and the shortcuts overlay (F1 or ?) all come from one
:class:`~gpuviz.ui.actions.ActionRegistry`, built in :meth:`MainWindow._build_actions`.

Where the trace on screen came from is always on screen, so a CPU capture is never taken for a GPU run or
the other way: the title, a badge in the top bar (kept in presenter mode) and the status line say "CPU
executor on this machine", "numba CUDA simulator" or "recorded on NVIDIA H200 on 2026-11-29". The GPU
recordings shipped in ``assets/recordings`` open from File > Open a GPU recording… and from the launch
panel's Source choice. Notices (e.g. "no GPU here: captured with the CPU executor instead") show in a
bar under the top bar until dismissed or until another trace is opened.

:class:`MainWindow` is this module (the trace on screen, its caption, commands, lessons, events) and one mixin
per part of the window, each in its own module:

    top_bar.py         TopBarMixin      the frame's text and caption, notices, warnings, the origin badge
    transport.py       TransportMixin   the transport bar: playback buttons, slider, counter, speed
    docks.py           DocksMixin       a dock per view and the launch panel's, the default layout, dock titles
    window_files.py    FilesMixin       open (off the GUI thread), save, picture, the shipped GPU recordings
    window_actions.py  ActionsMixin     the action registry's actions and the menus built from it

and beside it: ``narration_job.py`` (captions of a large trace built on a thread), ``shortcut_overlay.py`` (F1),
``recordings_dialog.py`` (File > Open a GPU recording…), ``icon_cache.py`` (the dock buttons' icons made once).
"""

from __future__ import annotations

import logging

import numpy as np
from PySide6.QtCore import QEvent, QTimer, Qt
from PySide6.QtWidgets import QDockWidget, QLabel, QMainWindow

from ..lessons import LessonError, builtin_lessons, load_lesson
from ..lessons.topics import is_timings_scene
from ..model.analysis import trace_warnings
from ..model.trace import Trace
from ..style.theme import LIGHT, Theme, get_theme, stylesheet
from .actions import ActionRegistry
from .docks import DocksMixin, presenting
from .fullscreen import is_full_screen, show_full_screen, show_normal
from .icon_cache import cache_standard_icons
from .narration_job import NarratorJob, build_narrator, kernel_notes
from .plaintext import plain_tooltip
from .session import Session
from .shortcut_overlay import ShortcutOverlay
from .top_bar import TopBarMixin
from .transport import TransportMixin
from .views.base import TraceView
from .views.details import trace_origin
from .views.occupancy import line_table_rows, worst_line
from .views.relayout import PlotRelayout, settle_plots_before_paint
from .window_actions import ActionsMixin
from .window_files import FilesMixin

log = logging.getLogger(__name__)

#: traces up to this many events are narrated on the spot (well under a second); larger ones on a thread
_NARRATE_INLINE_EVENTS = 1_000_000


class MainWindow(TopBarMixin, TransportMixin, DocksMixin, FilesMixin, ActionsMixin, QMainWindow):
    def __init__(self, trace: Trace | None = None, theme: Theme = LIGHT, session: Session | None = None,
                 source_label: str = "", live: bool = False):
        cache_standard_icons()  # before any dock is built
        super().__init__()
        self.setWindowTitle("gpuviz")
        self._live_trace: Trace | None = None  # the trace captured on this machine in this session, if on screen
        self._recordings: list | None = None
        self._narrator_jobs: list[NarratorJob] = []  # narration being built for a large trace
        self._open_job = None  # the trace file being opened in the background (gpuviz/ui/open_job.py)
        self._open_jobs: list = []  # it, and cancelled ones still winding down
        self._opened_file: tuple | None = None  # (file identity, weakref to its trace) of the last file opened
        self.session = session or Session(theme=theme, parent=self)
        # a burst of resizes (an edge dragged) lays the plots out once it pauses, not on every resize
        self.plot_relayout = PlotRelayout(self)
        self.views: dict[str, TraceView] = {}
        self.docks: dict[str, QDockWidget] = {}
        self._presenting = False
        self._normal_scale = self.session.theme.scale
        self.setDockNestingEnabled(True)
        self.setCorner(Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self.actions = ActionRegistry()
        self._build_actions()
        self.actions.bind(self)
        # style before any dock exists: restyling docks that are already tabbed leaves stale tab bars behind
        self.setStyleSheet(stylesheet(self.session.theme))
        # after a text size change or a resize, once the window has laid itself out again: the frame title and
        # caption grow to what their text needs at their new width, and the docks' titles fit (Ctrl++ presenting on
        # a barrier cut the title's four lines and left the tabs 'Barri…' until the next frame)
        self._refit_timer = QTimer(self)
        self._refit_timer.setSingleShot(True)
        self._refit_timer.setInterval(40)
        self._refit_timer.timeout.connect(self._refit_after_layout)
        self._build_top_bar()
        self._fit_now_labels()
        self._build_views()
        self._build_launch_dock()
        self._build_transport()
        self._build_menus()
        self.overlay = ShortcutOverlay(self)
        self._build_open_progress()
        s = self.session
        s.frame_changed.connect(self._on_frame)
        s.trace_changed.connect(self._on_trace)
        s.playback_changed.connect(self._on_playback)
        s.theme_changed.connect(self._apply_theme)
        for v in self.views.values():
            v.start()
        if trace is not None:
            self.set_trace(trace, source_label, live=live)
        elif self.session.trace is not None:  # a session that already holds a trace
            self._on_trace()
            self._on_frame(self.session.frame)

    # ---- trace ---------------------------------------------------------------------------------------
    def set_trace(self, trace: Trace, source_label: str = "", live: bool = False) -> None:
        """Show ``trace``; ``live``: it was just captured on this machine (not opened from a file)."""
        self._live_trace = trace if live else None
        self.session.set_trace(trace, source_label)

    def mark_live(self, trace) -> None:
        """Say that ``trace`` (already on screen) was captured on this machine just now, and update the labels."""
        self._live_trace = trace
        if trace is not None and trace is self.session.trace:
            self._on_trace()
            if "details" in self.views:
                self.views["details"].on_trace_changed()

    def is_live_trace(self, trace) -> bool:
        """Was ``trace`` captured on this machine in this session (so "on this machine" is true)?"""
        return trace is not None and trace is self._live_trace

    def origin_text(self) -> str:
        """Where the trace on screen came from, in one line (title, status line and badge say the same)."""
        tr = self.session.trace
        return trace_origin(tr.launch, self.is_live_trace(tr)) if tr is not None else ""

    def _on_trace(self) -> None:
        s = self.session
        L = s.trace.launch
        live = self.is_live_trace(s.trace)
        self.slider.blockSignals(True)
        self.slider.setRange(0, max(0, s.frames.n_frames - 1))
        self.slider.setValue(s.frame)
        self.slider.blockSignals(False)
        self._fit_transport()  # the counter's width depends on the frame count
        origin = trace_origin(L, live)
        self.setWindowTitle(f"gpuviz · {L.kernel_name} · {origin}")
        self._style_badge()
        self.origin_badge.setToolTip(plain_tooltip(origin + (f"\n{s.source_label}" if s.source_label else "")))
        self.origin_status.setText(origin)
        self.clear_notice()
        self._find_warnings()
        self.launch_panel.follow_trace()
        self.statusBar().clearMessage()
        self.summary_status.setText(
            f"{L.kernel_name}: grid {L.grid} x block {L.block} = {L.n_threads:,} threads · "
            f"{len(s.trace):,} events · {s.frames.n_frames:,} frames"
            + (f" · {L.dropped:,} events DROPPED" if L.dropped else "")
        )

    def _caption(self, f: int) -> str:
        """The narration of frame f (with the bundled kernel's own notes); presenter mode shows its own.

        Narrating means analysing the whole trace once: for a large trace that runs on a worker thread
        (numpy, no Qt) and the caption appears when it is done, so opening the trace never waits for it."""
        s = self.session
        if not s.frames.n_frames or presenting(self) is not None:
            return ""
        ctl = self.lesson
        if ctl is not None and ctl.scene_loaded == ctl.player.scene_index:
            if is_timings_scene(ctl.player.current.scene):  # the plot is the subject, not the last warp
                return ctl.player.slide().caption
        if getattr(self, "_narrator_frames", None) is not s.frames:
            self._narrator_frames = s.frames
            self._narrator = None
            for old in self._narrator_jobs:
                old.cancel()  # narrating a trace no longer on screen: stop, free its memory
            if len(s.trace) <= _NARRATE_INLINE_EVENTS:
                self._narrator = build_narrator(s.prepared, kernel_notes(s.trace))
            else:
                job = NarratorJob(s.prepared, kernel_notes(s.trace), self)
                job.finished.connect(lambda job=job: self._narrator_ready(job))
                self._narrator_jobs.append(job)
                job.start()
        if s.predicting:  # a lesson's question is open: the narration would answer it
            return f"Predict: {s.predicting}"
        if self._narrator is None:
            return "narrating this launch…"
        try:
            return self._narrator.text(f)
        except Exception as e:  # noqa: BLE001 - a caption must never stop playback
            return f"(no caption: {type(e).__name__})"

    def _narrator_ready(self, job) -> None:
        self._narrator_jobs.remove(job)
        job.deleteLater()
        if job.frames is self.session.frames and job.warnings is not None:
            self.set_trace_warnings(job.warnings)
        if job.frames is self._narrator_frames and job.narrator is not None:
            self._narrator = job.narrator
            self.caption_text.setText(self._caption(self.session.frame))
            self._grow_now_labels()

    def _find_warnings(self) -> None:
        """Races, the capture's warnings and an untraced launch, for the banner, Details and the source margin.
        A trace too large to analyse on the spot shows the capture's warnings now, the races with its narration."""
        tr = self.session.trace
        try:
            found = trace_warnings(tr, with_races=len(tr) <= _NARRATE_INLINE_EVENTS)
        except Exception as e:  # noqa: BLE001 - an analysis that fails must not keep the trace from showing
            log.exception("the trace's warnings could not be worked out")
            found = []
            self.statusBar().showMessage(f"the races could not be analysed: {type(e).__name__}: {e}", 15000)
        self.set_trace_warnings(found)

    def _on_frame(self, f: int) -> None:
        s = self.session
        if s.frames is None:
            return
        self.slider.blockSignals(True)
        self.slider.setValue(f)
        self.slider.blockSignals(False)
        # while a lesson's question is open the frame's own description must not answer it ("all 256 threads of the
        # block are there" under "how many threads must reach this syncthreads?")
        # presenting, the title says where (block, warp, phase, step, line) on one line of a fixed height, and the
        # caption bar under the views says what: a three-line title that grew and shrank from frame to frame took
        # the views' room at 1280x720 and made them jump
        describe = s.frames.describe_where if presenting(self) is not None else s.frames.describe
        self.frame_text.setText(s.mask(describe(f)) if s.frames.n_frames else "no events recorded")
        self.caption_text.setText(self._caption(f))
        self._grow_now_labels()
        self._label_counter()
        if self._memory_tabbed and s.frames.n_frames:
            self._follow_memory_tab(f)

    def _on_playback(self, name: str) -> None:
        p = self.session.playback
        self.actions.qaction("playback.play").setText("&Pause" if p.playing else "&Play")
        self._fit_transport()
        self.actions.sync_checked()

    def _refit_after_layout(self) -> None:
        self._grow_now_labels()
        self._fit_dock_titles()

    # ---- commands ---------------------------------------------------------------------------------------
    def toggle_theme(self) -> None:
        s = self.session
        s.set_theme(get_theme("light" if s.theme.dark else "dark", s.theme.scale))

    def _apply_theme(self) -> None:
        self.setStyleSheet(stylesheet(self.session.theme))
        self._fit_now_labels()
        self._style_badge()
        # and again once the top bar is laid out anew: measured at the width it had beside the badge's old text
        # size, the presenting title took two lines one Ctrl++ up, and a title grown is not shrunk at later frames
        QTimer.singleShot(0, self._fit_now_labels)
        self._fit_transport()  # bigger text: the full labels may no longer fit
        QTimer.singleShot(0, self._fit_dock_titles)  # nor the docks' titles
        self._refit_timer.start()
        if self.overlay.isVisible():
            self.overlay.refresh()

    def toggle_present(self) -> None:
        """Presenter mode (gpuviz/ui/presenter.py): full screen, chrome hidden, no text under 18 px, clicker keys."""
        # imported when presenting starts: the presenter module is not loaded with the window (tests/test_startup.py)
        from .presenter import presenter_of, toggle_presenter

        toggle_presenter(self, theme="dark" if self.session.theme.dark else "light")
        self._presenting = presenter_of(self) is not None
        self.actions.sync_checked()
        if not self._presenting:
            self._on_frame(self.session.frame)  # the top bar's caption again, now, not at the next step

    # ---- lessons ------------------------------------------------------------------------------------------
    @staticmethod
    def _lesson_titles() -> dict[str, str]:
        """The shipped lessons by name, with their titles for the Lessons menu (a broken one says so)."""
        out = {}
        for name, path in builtin_lessons().items():
            try:
                out[name] = load_lesson(path).title.replace("&", "&&")
            except (LessonError, OSError) as e:
                out[name] = f"{name} (cannot be read: {e})"
        return out

    @property
    def lesson(self):
        """The lesson playing in this window (a gpuviz.ui.lesson_player.LessonController), or None."""
        return getattr(self, "_gpuviz_lesson", None)

    def start_lesson(self, name: str):
        """Play a shipped lesson here (in presenter mode if the window is presenting); returns its controller."""
        from .lesson_player import play_lesson  # it imports the presenter module: loaded when a lesson starts

        self.stop_lesson()
        try:
            lesson = load_lesson(builtin_lessons()[name])
            self.statusBar().showMessage(f"lesson {lesson.title}: capturing its scenes…")
            return play_lesson(self, lesson, present=False)
        except (LessonError, KeyError, ValueError) as e:
            self._gpuviz_lesson = None
            self.launch_panel.show_error(f"The lesson {name!r} could not start: {e}")
            return None
        finally:
            if presenting(self) is not None:
                presenting(self).refresh_caption()

    def stop_lesson(self) -> None:
        ctl = self.lesson
        if ctl is not None:
            self._gpuviz_lesson = None
            ctl.stop()

    def jump_to_worst_line(self) -> int | None:
        """W: the first frame of the worst source line (gpuviz.ui.views.occupancy.worst_line); returns it."""
        s = self.session
        if s.trace is None or not s.frames.n_frames:
            return None
        table = self.views.get("lines")
        row = worst_line(line_table_rows(s.trace), getattr(table, "sort_column", None))
        if row is None:
            self.tell("W: no line is worse than another: none has bank conflicts, wasted sectors or divergence")
            return None
        frames_on_line = np.flatnonzero(s.frames.line == row["line"])
        if not len(frames_on_line):
            return None
        f = int(frames_on_line[0])
        s.playback.pause()
        s.set_frame(f)
        why = [f"{row['bank_conflicts']:,} bank conflicts" if row.get("bank_conflicts") else "",
               f"{row['sectors_per_request']:.1f} sectors/request" if row.get("sectors_per_request") else "",
               f"{row['diverged']:,} diverged" if row.get("diverged") else ""]
        self.tell(f"worst line: {row['line']} ({', '.join(w for w in why if w)}), frame {f + 1:,}", 15000)
        return f

    def tell(self, text: str, ms: int = 8000) -> None:
        """A short answer to a key (W): in the status line at the desk, and over the views in presenter mode,
        where the status line is hidden (W there said nothing at all)."""
        self.statusBar().showMessage(text, ms)
        if presenting(self) is None:
            return
        toast = getattr(self, "_toast", None)
        if toast is None:
            toast = self._toast = QLabel(self)
            toast.setObjectName("toast")
            toast.setTextFormat(Qt.TextFormat.PlainText)
            toast.setWordWrap(True)
            toast.setAlignment(Qt.AlignmentFlag.AlignCenter)
            self._toast_timer = QTimer(self)
            self._toast_timer.setSingleShot(True)
            self._toast_timer.timeout.connect(toast.hide)
        t = self.session.theme
        toast.setStyleSheet(f"QLabel#toast {{ background: {t.selection}; color: {t.selection_text}; "
                            f"font-size: {t.px(20)}px; font-weight: bold; padding: {t.px(10)}px; border-radius: 6px; }}")
        toast.setText(text)
        width = min(self.width() - 40, max(300, int(self.width() * 0.6)))
        toast.setFixedWidth(width)
        toast.adjustSize()
        toast.move((self.width() - width) // 2, max(10, self.height() // 3))
        toast.raise_()
        toast.show()
        self._toast_timer.start(ms)

    def escape(self) -> None:
        """Esc: close the shortcuts overlay if it is up, else clear the selection."""
        if self.overlay.isVisible():
            self.overlay.hide()
        else:
            self.session.selection.clear()

    def toggle_fullscreen(self) -> None:
        """F11, with a window manager or without one (gpuviz.ui.fullscreen.show_full_screen)."""
        show_normal(self) if is_full_screen(self) else show_full_screen(self)

    def show_shortcuts(self) -> None:
        if self.overlay.isVisible():
            self.overlay.hide()
        else:
            self.overlay.show_over()

    def event(self, ev) -> bool:
        if ev.type() == QEvent.Type.UpdateRequest:  # about to paint: plots settle first, and paint once
            settle_plots_before_paint(self.views.values())
            handled = super().event(ev)
            self.plot_relayout.painted()
            return handled
        return super().event(ev)

    def resizeEvent(self, ev) -> None:
        super().resizeEvent(ev)
        self._fit_transport()
        QTimer.singleShot(0, self._fit_now_labels)  # once the top bar has its new width
        QTimer.singleShot(0, self._fit_dock_titles)  # once the docks have theirs
        self._refit_timer.start()
        if self.overlay.isVisible():
            self.overlay.setGeometry(self.rect())

    def showEvent(self, ev) -> None:
        super().showEvent(ev)
        if not self._arranged:
            self.arrange_default()
        # the kernel list (a catalog read without numba, but still work): after the first frame is on screen
        QTimer.singleShot(0, self.launch_panel.load_kernels)

    def closeEvent(self, ev) -> None:
        self.cancel_open(quiet=True)
        for job in list(self._open_jobs):
            job.wait()  # stops at its next checkpoint: the thread must not outlive its window
        self.launch_panel.runner.shutdown()
        dock = getattr(self, "launch_list_dock", None)
        if dock is not None:
            dock.launch_list.shutdown()  # a program still running in its worker is stopped with the window
        self.session.shutdown()
        for job in list(self._narrator_jobs):
            job.cancel()
            job.wait()  # stops at its next stage: the thread must not outlive its window
        for job in list(getattr(self, "_html_jobs", [])):
            job.wait()  # a page being written: the thread must not outlive its window either
        super().closeEvent(ev)
