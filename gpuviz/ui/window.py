"""The main window: every registered view in a dock, the transport bar, the launch panel, the menus.

Menus, toolbar buttons, key bindings and the shortcuts overlay (F1 or ?) all come from one
:class:`~gpuviz.ui.actions.ActionRegistry`, built in :meth:`MainWindow._build_actions`.

Where the trace on screen came from is always on screen, so a CPU capture is never taken for a GPU run or
the other way: the title, a badge in the top bar (kept in presenter mode) and the status line say "CPU
executor on this machine", "numba CUDA simulator" or "recorded on NVIDIA H200 on 2026-11-29". The GPU
recordings shipped in ``assets/recordings`` open from File > Open a GPU recording… and from the launch
panel's Source choice. Notices (e.g. "no GPU here: captured with the CPU executor instead") show in a
bar under the top bar until dismissed or until another trace is opened.
"""

from __future__ import annotations

import html
import logging
import sys
import time
import weakref
from pathlib import Path

from PySide6.QtCore import QEvent, QRect, QThread, Qt, QTimer
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QDockWidget,
    QFileDialog,
    QFrame,
    QGridLayout,
    QLabel,
    QMainWindow,
    QProgressBar,
    QApplication,
    QProxyStyle,
    QPushButton,
    QScrollArea,
    QStyle,
    QSizePolicy,
    QSlider,
    QTabBar,
    QToolBar,
    QToolButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..model import playback as pb
from ..model.trace import Trace
from .actions import Action, ActionRegistry
from .export_html import export_html_dialog
from .share import export_polls_dialog, share_with_class
from .launch import LaunchPanel
from .session import Session
from ..style.theme import LIGHT, OKABE_ITO, Theme, get_theme, stylesheet
from .views.base import (
    PlotRelayout,
    TraceView,
    available_views,
    fit_dock_titles,
    settle_plots_before_paint,
    slotted,
)
from .plaintext import plain_tooltip
from .views.details import trace_origin, trace_origin_short

#: badge colours (background, text) by backend: a GPU recording never looks like a CPU capture
_BADGE_COLOURS = {
    "gpu": (OKABE_ITO["bluish_green"], "#FFFFFF"),
    "cpu": (OKABE_ITO["sky_blue"], "#000000"),
    "sim": (OKABE_ITO["reddish_purple"], "#000000"),
}
_NOTICE_STYLE = (f"background: {OKABE_ITO['yellow']}; color: #000000; border-radius: 4px; padding: 4px 8px;")
#: warnings: black on vermillion (5.4:1), apart from the yellow notices
_WARNING_STYLE = (f"background: {OKABE_ITO['vermillion']}; color: #000000; border-radius: 4px; padding: 4px 8px; "
                  "font-weight: bold;")


class RecordingsDialog(QDialog):
    """The GPU recordings shipped with gpuviz, one row each, with device, driver, date and versions."""

    COLUMNS = ("recording", "device", "driver", "date", "versions")

    def __init__(self, recordings, parent=None):
        super().__init__(parent)
        from .launch import recording_description
        from .views.details import versions_text

        self._describe = recording_description
        self.setWindowTitle("Open a GPU recording")
        self.recordings = list(recordings)
        layout = QVBoxLayout(self)
        intro = QLabel("Traces recorded on a real GPU and shipped with gpuviz. They open as they were captured "
                       "there: the SM each block ran on, the GPU's registers and occupancy. Nothing runs here.", self)
        intro.setWordWrap(True)
        layout.addWidget(intro)
        self.table = QTreeWidget(self)
        self.table.setRootIsDecorated(False)
        self.table.setHeaderLabels(list(self.COLUMNS))
        for rec in self.recordings:
            item = QTreeWidgetItem([rec.title, rec.device, rec.driver, rec.date, versions_text(rec.versions)])
            item.setToolTip(0, rec.label)
            self.table.addTopLevelItem(item)
        for c in range(len(self.COLUMNS) - 1):
            self.table.resizeColumnToContents(c)
        layout.addWidget(self.table, 1)
        self.info = QLabel(self)
        self.info.setWordWrap(True)
        self.info.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.info)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel, self)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.table.currentItemChanged.connect(lambda *_: self._show_info())
        self.table.itemDoubleClicked.connect(lambda *_: self.accept())
        if self.recordings:
            self.table.setCurrentItem(self.table.topLevelItem(0))
        self.resize(1100, 560)

    def rows(self) -> list[list[str]]:
        """What the table shows, row by row (tests read it)."""
        return [[self.table.topLevelItem(i).text(c) for c in range(len(self.COLUMNS))]
                for i in range(self.table.topLevelItemCount())]

    def chosen(self):
        i = self.table.indexOfTopLevelItem(self.table.currentItem()) if self.table.currentItem() else -1
        return self.recordings[i] if 0 <= i < len(self.recordings) else None

    def _show_info(self) -> None:
        rec = self.chosen()
        self.info.setText(self._describe(rec) if rec is not None else "")

_AREAS = {
    "left": Qt.DockWidgetArea.LeftDockWidgetArea,
    "right": Qt.DockWidgetArea.RightDockWidgetArea,
    "bottom": Qt.DockWidgetArea.BottomDockWidgetArea,
    "top": Qt.DockWidgetArea.TopDockWidgetArea,
}


class ShortcutOverlay(QWidget):
    """Every key binding, large, over the window (F1 or ? shows it; any key or click hides it)."""

    def __init__(self, window: "MainWindow"):
        super().__init__(window)
        self.window_ = window
        self.setAutoFillBackground(True)
        self.label = QLabel(self)
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        lay = QGridLayout(self)
        lay.addWidget(self.label, 0, 0, Qt.AlignmentFlag.AlignCenter)
        self.hide()

    def _html(self, px: int, per_row: int) -> str:
        t = self.window_.session.theme
        groups: dict[str, list] = {}
        for group, text, keys in self.window_.actions.help_rows():
            groups.setdefault(group, []).append((html.escape(text), html.escape(keys)))
        from .presenter import PRESENTER_HELP  # its own keys (B blanks the screen) were missing here

        for text, keys in PRESENTER_HELP:
            groups.setdefault("Presenter mode (F5)", []).append((html.escape(text), html.escape(keys)))
        cells = []
        for group, rows in groups.items():
            body = "".join(
                f"<tr><td style='padding:1px 14px 1px 0'><b>{keys}</b></td><td>{text}</td></tr>" for text, keys in rows
            )
            cells.append(f"<td style='vertical-align:top; padding:0 20px 10px 0'><h3>{group}</h3><table>{body}</table></td>")
        rows = "".join(f"<tr>{''.join(cells[i:i + per_row])}</tr>" for i in range(0, len(cells), per_row))
        return (f"<div style='font-size:{px}px; color:{t.foreground}'>"
                f"<h2>Keyboard shortcuts</h2><table>{rows}</table>"
                f"<p style='color:{t.muted}'>Press any key or click to close.</p></div>")

    def refresh(self) -> None:
        """Every shortcut, as large as the window allows: the groups side by side, or two by two, and the
        text smaller (never below 12 px) until it fits the window."""
        t = self.window_.session.theme
        self.setStyleSheet(f"ShortcutOverlay {{ background: {t.background}; }} QLabel {{ background: {t.background}; }}")
        room = self.window_.rect().size()
        n_groups = len({g for g, _, _ in self.window_.actions.help_rows()} | {"Presenter mode (F5)"})
        px = t.px(18)
        best = None
        while True:
            for per_row in dict.fromkeys((n_groups, 3, 2, 1)):  # three a row: the presenter's group fits under
                self.label.setText(self._html(px, per_row))
                hint = self.label.sizeHint()
                if hint.width() <= room.width() - 16 and hint.height() <= room.height() - 16:
                    return
                best = best or (px, per_row)
            if px <= 12:
                break
            px = max(12, int(px * 0.9))
        self.label.setText(self._html(12, 3))

    def show_over(self) -> None:
        self.refresh()
        self.setGeometry(self.window_.rect())
        self.raise_()
        self.show()
        self.setFocus()

    def paintEvent(self, ev) -> None:
        # a plain QWidget draws no style-sheet background: without this the docks showed through the overlay
        from PySide6.QtGui import QColor, QPainter

        p = QPainter(self)
        p.fillRect(self.rect(), QColor(self.window_.session.theme.background))
        p.end()

    def keyPressEvent(self, ev) -> None:
        self.hide()

    def mousePressEvent(self, ev) -> None:
        self.hide()


log = logging.getLogger(__name__)

#: traces up to this many events are narrated on the spot (well under a second); larger ones on a thread
_NARRATE_INLINE_EVENTS = 1_000_000


def _kernel_notes(trace) -> tuple:
    """A bundled kernel's own notes at chosen frames (KernelSpec.frame_notes), if the trace is of one."""
    bundled = (trace.launch.meta or {}).get("bundled_kernel") or {}
    if not bundled.get("name"):
        return ()
    try:
        from gpuviz.catalog import kernel_info  # no numba: the catalog is plain data

        return kernel_info(bundled["name"]).frame_notes
    except KeyError:
        return ()


def _build_narrator(frames, notes, narrator=None):
    from ..model.narration import Narrator

    narrator = narrator or Narrator(frames, notes=notes)
    narrator.caption(0)  # analyses the whole trace once; later captions are lookups
    return narrator


class _NarratorJob(QThread):
    """Builds a Narrator off the GUI thread (numpy only: it touches no Qt object)."""

    def __init__(self, frames, notes, parent=None):
        from ..model.narration import Narrator

        super().__init__(parent)
        self.frames, self.notes, self.narrator = frames, notes, None
        self.warnings = None  # the trace's warnings, races included (too large to analyse on the GUI thread)
        self._building = Narrator(frames, notes=notes)

    _cancelled = False

    def cancel(self) -> None:
        """Another trace is on screen: stop at the next stage and let go of this one's arrays."""
        self._cancelled = True
        building = self._building
        if building is not None:
            building.cancel()

    def run(self) -> None:
        from ..model.narration import NarrationCancelled

        try:
            self.narrator = _build_narrator(self.frames, self.notes, self._building)
        except NarrationCancelled:
            pass
        except Exception:  # noqa: BLE001 - no caption is better than a crashed thread; the view says so
            log.exception("narration failed")
        finally:
            self._building = None
        if self._cancelled:
            return
        try:
            from ..model.analysis import trace_warnings

            self.warnings = trace_warnings(self.frames.trace)
        except Exception:  # noqa: BLE001
            log.exception("the trace's warnings could not be worked out")


class _StandardIconCache(QProxyStyle):
    """The application's style, with the icons of the dock title buttons made once rather than on every use.

    Fusion builds a standard icon anew each time it is asked for one (QIcon.addFile of its six sizes, each a
    resource PNG read), and Qt asks for the close and float buttons' icons whenever a dock's title is measured or
    painted: QDockWidgetLayout.setGeometry and QDockWidget.paintEvent, for every dock at every relayout of the
    window (~7% of a window resize's CPU, perf, reduce_sum in the full window). The same files whatever the palette:
    the same icons."""

    CACHED = frozenset({QStyle.StandardPixmap.SP_TitleBarCloseButton, QStyle.StandardPixmap.SP_TitleBarNormalButton,
                        QStyle.StandardPixmap.SP_DockWidgetCloseButton, QStyle.StandardPixmap.SP_TitleBarMaxButton,
                        QStyle.StandardPixmap.SP_TitleBarMinButton})

    def __init__(self, base: QStyle):
        super().__init__(base)
        self._icons: dict = {}

    def standardIcon(self, which, option=None, widget=None):
        if which not in self.CACHED:
            return super().standardIcon(which, option, widget)
        icon = self._icons.get(which)
        if icon is None:
            icon = self._icons[which] = super().standardIcon(which, option, widget)
        return icon


def cache_standard_icons() -> None:
    """Put :class:`_StandardIconCache` over the application's style (once)."""
    app = QApplication.instance()
    if app is not None and not isinstance(app.style(), _StandardIconCache):
        app.setStyle(_StandardIconCache(app.style()))


def _presenter_of(window):
    """:func:`gpuviz.ui.presenter.presenter_of`, without importing the presenter module on a trace's first frame
    (~700 lines; compiled 10-18 ms where no bytecode is cached): none presents before that module is imported."""
    presenter = sys.modules.get("gpuviz.ui.presenter")
    return presenter.presenter_of(window) if presenter is not None else None


class MainWindow(QMainWindow):
    def __init__(self, trace: Trace | None = None, theme: Theme = LIGHT, session: Session | None = None,
                 source_label: str = "", live: bool = False):
        cache_standard_icons()  # before any dock is built
        super().__init__()
        self.setWindowTitle("gpuviz")
        self._live_trace: Trace | None = None  # the trace captured on this machine in this session, if on screen
        self._recordings: list | None = None
        self._narrator_jobs: list[_NarratorJob] = []  # narration being built for a large trace
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
        if not s.frames.n_frames or _presenter_of(self) is not None:
            return ""
        ctl = self.lesson
        if ctl is not None and ctl.scene_loaded == ctl.player.scene_index:
            from ..lessons.topics import is_timings_scene

            if is_timings_scene(ctl.player.current.scene):  # the plot is the subject, not the last warp
                return ctl.player.slide().caption
        if getattr(self, "_narrator_frames", None) is not s.frames:
            self._narrator_frames = s.frames
            self._narrator = None
            for old in self._narrator_jobs:
                old.cancel()  # narrating a trace no longer on screen: stop, free its memory
            if len(s.trace) <= _NARRATE_INLINE_EVENTS:
                self._narrator = _build_narrator(s.frames, _kernel_notes(s.trace))
            else:
                job = _NarratorJob(s.frames, _kernel_notes(s.trace), self)
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

    def _style_badge(self) -> None:
        tr = self.session.trace
        if tr is None:
            self.origin_badge_action.setVisible(False)
            return
        L = tr.launch
        bg, fg = _BADGE_COLOURS.get(L.backend, (self.session.theme.grid, self.session.theme.foreground))
        t = self.session.theme
        self.origin_badge.setText(trace_origin_short(L, self.is_live_trace(tr)))
        self.origin_badge.setStyleSheet(f"background: {bg}; color: {fg}; border-radius: {t.px(4)}px; "
                                        f"padding: {t.px(3)}px {t.px(10)}px; font-weight: bold;")
        self.origin_badge_action.setVisible(True)

    # ---- notices: something to see that is not an error ------------------------------------------
    def show_notice(self, text: str, status: str = "") -> None:
        """Show ``text`` in the bar under the top bar (e.g. why a GPU capture ran on the CPU), and ``status``
        (default: its first sentence) in the status line."""
        self.notice_label.setText(text)
        self.notice_bar.show()
        self.statusBar().showMessage(status or text.split(". ")[0].splitlines()[0], 20000)

    def clear_notice(self) -> None:
        self.notice_label.setText("")
        self.notice_bar.hide()

    def _find_warnings(self) -> None:
        """Races, the capture's warnings and an untraced launch, for the banner, Details and the source margin.
        A trace too large to analyse on the spot shows the capture's warnings now, the races with its narration."""
        from ..model.analysis import trace_warnings

        tr = self.session.trace
        try:
            found = trace_warnings(tr, with_races=len(tr) <= _NARRATE_INLINE_EVENTS)
        except Exception as e:  # noqa: BLE001 - an analysis that fails must not keep the trace from showing
            log.exception("the trace's warnings could not be worked out")
            found = []
            self.statusBar().showMessage(f"the races could not be analysed: {type(e).__name__}: {e}", 15000)
        self.set_trace_warnings(found)

    def set_trace_warnings(self, found: list) -> None:
        self.trace_warnings = list(found)
        if found:
            head = found[0].text if len(found) == 1 else f"{len(found)} warnings. " + found[0].text
            more = [w.text for w in found[1:3]]
            text = "⚠ " + "\n⚠ ".join([head] + more) + (f"\n… and {len(found) - 3} more in Details" if len(found) > 3 else "")
            self.warning_label.setText(text)
            self.warning_bar.show()
        else:
            self.warning_label.setText("")
            self.warning_bar.hide()
        for vid in ("details", "source"):
            view = self.views.get(vid)
            if view is not None and hasattr(view, "set_warnings"):
                view.set_warnings(self.trace_warnings)

    @property
    def warning_text(self) -> str:
        """The warnings banner's text ("" when none is shown)."""
        return "" if self.warning_bar.isHidden() else self.warning_label.text()

    @property
    def notice_text(self) -> str:
        """The notice shown now ("" when none)."""
        return "" if self.notice_bar.isHidden() else self.notice_label.text()

    # ---- GPU recordings ---------------------------------------------------------------------------
    def gpu_recordings(self) -> list:
        """The GPU trace recordings shipped in ``assets/recordings`` (read once)."""
        if self._recordings is None:
            try:
                from ..timing.recordings import list_recordings

                self._recordings = list_recordings(kind="trace")
            except Exception as e:  # noqa: BLE001 - a damaged index must not keep the window from opening
                self._recordings = []
                self.statusBar().showMessage(f"the GPU recordings could not be listed: {e}", 15000)
        return self._recordings

    def open_recording(self, rec) -> bool:
        """Open one shipped GPU recording (a :class:`gpuviz.timing.recordings.Recording`)."""
        try:
            traces = rec.load()
        except (OSError, ValueError) as e:  # unreadable, or TraceFileError: damaged
            self.launch_panel.show_error(f"Could not open the recording {rec.label}: {e}")
            return False
        if not traces:
            self.launch_panel.show_error(f"The recording {rec.label} holds no launches")
            return False
        if len(traces) == 1:
            self.set_trace(traces[0], rec.label)
        else:
            from .views.launches import show_recording

            show_recording(self, traces, rec.label)
        return True

    def open_recording_dialog(self) -> None:
        recs = self.gpu_recordings()
        if not recs:
            self.launch_panel.show_error("No GPU recordings are installed (assets/recordings is missing or empty).")
            return
        dialog = RecordingsDialog(recs, self)
        dialog.setStyleSheet(stylesheet(self.session.theme))
        if dialog.exec() == QDialog.DialogCode.Accepted and dialog.chosen() is not None:
            self.open_recording(dialog.chosen())

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
        describe = s.frames.describe_where if _presenter_of(self) is not None else s.frames.describe
        self.frame_text.setText(s.mask(describe(f)) if s.frames.n_frames else "no events recorded")
        self.caption_text.setText(self._caption(f))
        self._grow_now_labels()
        self._label_counter()
        if self._memory_tabbed and s.frames.n_frames:
            self._follow_memory_tab(f)

    #: the tab that shows what a frame does, by event kind: shared memory, global memory, the barrier
    _MEMORY_TABS = ("memory", "shared", "barriers")

    def _follow_memory_tab(self, f: int) -> None:
        """With the memory views tabbed (a short window), bring forward the one this frame is about, unless
        another kind of view (timings) was chosen: a shuffle or a start leaves the tabs as they are."""
        from ..model.trace import EventKind as K

        if _presenter_of(self) is not None:
            return  # presenter mode follows the frame with its own tabs
        kind = int(self.session.frames.kind[min(max(f, 0), self.session.frames.n_frames - 1)])
        vid = ("shared" if kind in (K.SHARED_LOAD, K.SHARED_STORE) else
               "memory" if kind in (K.GLOBAL_LOAD, K.GLOBAL_STORE, K.ATOMIC) else
               "barriers" if kind == K.BARRIER else None)
        dock = self.docks.get(vid) if vid else None
        if dock is None or not dock.isVisible() or not dock.visibleRegion().isEmpty():
            return
        front = [v for v in self._by_area.get("bottom", []) if v in self.docks and self.docks[v].isVisible()
                 and not self.docks[v].visibleRegion().isEmpty()]
        if front and all(v in self._MEMORY_TABS for v in front) and self.tabifiedDockWidgets(dock):
            dock.raise_()

    def _on_playback(self, name: str) -> None:
        p = self.session.playback
        self.actions.qaction("playback.play").setText("&Pause" if p.playing else "&Play")
        self._fit_transport()
        self.actions.sync_checked()

    # ---- actions: the one registry -------------------------------------------------------------------
    def _build_actions(self) -> None:
        s = self.session
        P = s.playback
        add = self.actions.add
        g = "Playback"
        add(Action("playback.play", "&Play", lambda: pb.toggle_play(P, time.perf_counter()), ("Space",), g,
                   "Play or pause", icon_text="▶ Play", in_toolbar=True))
        add(Action("playback.first", "&First frame", lambda: pb.first(P), ("Home",), g, icon_text="|◀ first", in_toolbar=True))
        add(Action("playback.prev_block", "Previous &block", lambda: pb.prev_block(P), ("Ctrl+PgUp", "Shift+Up"), g,
                   "Start of this block, or of the previous one", icon_text="◀ block", in_toolbar=True))
        add(Action("playback.prev_barrier", "Previous ba&rrier", lambda: pb.prev_barrier(P), ("Up",), g,
                   "Back to the previous barrier that opened", icon_text="◀ sync", in_toolbar=True))
        add(Action("playback.prev_step", "Previous lockstep step", lambda: pb.prev_step(P), ("Shift+Left",), g,
                   "Back to the start of the previous step of all warps", icon_text="◀ step", in_toolbar=True))
        add(Action("playback.step_back", "Step &back", lambda: pb.step_back(P), ("Left", "PgUp"), g,
                   "One warp instruction back", icon_text="◀", in_toolbar=True))
        add(Action("playback.step_forward", "Step &forward", lambda: pb.step_forward(P), ("Right", "PgDown"), g,
                   "One warp instruction forward", icon_text="▶", in_toolbar=True))
        add(Action("playback.next_step", "Next lockstep step", lambda: pb.next_step(P), ("Shift+Right",), g,
                   "Every warp of the block does its next instruction", icon_text="step ▶", in_toolbar=True))
        add(Action("playback.next_barrier", "Next ba&rrier", lambda: pb.next_barrier(P), ("Down",), g,
                   "Forward to where the next barrier opens", icon_text="sync ▶", in_toolbar=True))
        add(Action("playback.next_block", "Next b&lock", lambda: pb.next_block(P), ("Ctrl+PgDown", "Shift+Down"), g,
                   "First frame of the next block", icon_text="block ▶", in_toolbar=True))
        add(Action("playback.last", "&Last frame", lambda: pb.last(P), ("End",), g, icon_text="last ▶|", in_toolbar=True))
        add(Action("playback.prev_warp_step", "This warp's previous instruction", lambda: pb.prev_warp_step(P),
                   ("Ctrl+Left",), g))
        add(Action("playback.next_warp_step", "This warp's next instruction", lambda: pb.next_warp_step(P),
                   ("Ctrl+Right",), g))
        add(Action("playback.play_to_barrier", "Play to the next barrier", lambda: pb.play_to_next_barrier(
            P, time.perf_counter()), ("Ctrl+Down",), g, "Play, and pause where the next barrier opens"))
        add(Action("playback.play_to_block", "Play to the next block", lambda: pb.play_to_next_block(
            P, time.perf_counter()), ("Ctrl+Shift+Down",), g, "Play, and pause at the first frame of the next block"))
        add(Action("playback.worst_line", "Jump to the &worst line", self.jump_to_worst_line, ("W",), g,
                   "First frame of the line with the most bank conflicts, else the most sectors per request, else "
                   "the most divergence (the Per line table's sorted column, if one is)"))
        add(Action("playback.faster", "Fas&ter", lambda: pb.speed_up(P), ("+", "="), g, icon_text="+"))
        add(Action("playback.slower", "Slo&wer", lambda: pb.speed_down(P), ("-",), g, icon_text="−"))
        add(Action("playback.loop", "L&oop", lambda: pb.toggle_loop(P), ("L",), g, checkable=True,
                   checked=lambda: P.loop))
        g = "View"
        add(Action("selection.clear", "Close help / clear selection (follow playback)", self.escape, ("Esc",), g))
        add(Action("view.theme", "Light/dark &theme", self.toggle_theme, ("Ctrl+T",), g))
        add(Action("view.bigger", "&Bigger text", lambda: s.set_scale(s.theme.scale * 1.15), ("Ctrl++", "Ctrl+="), g))
        add(Action("view.smaller", "&Smaller text", lambda: s.set_scale(s.theme.scale / 1.15), ("Ctrl+-",), g))
        add(Action("view.present", "&Presenter mode", self.toggle_present, ("F5",), g, checkable=True,
                   checked=lambda: self._presenting))
        add(Action("view.fullscreen", "&Full screen", self.toggle_fullscreen, ("F11",), g))
        g = "File"
        add(Action("file.open", "&Open trace…", self.open_dialog, ("Ctrl+O",), g))
        add(Action("file.open_recording", "Open a &GPU recording…", self.open_recording_dialog, ("Ctrl+Shift+O",), g,
                   "Traces recorded on an NVIDIA H200, shipped with gpuviz: no GPU needed to watch them"))
        add(Action("file.save", "&Save trace…", self.save_dialog, ("Ctrl+S",), g))
        add(Action("file.snapshot", "Save a &picture of the window…", self.snapshot_dialog, ("Ctrl+Shift+S",), g))
        add(Action("file.export_html", "&Export an HTML page…", lambda: export_html_dialog(self), ("Ctrl+E",), g,
                   "One file that replays this launch offline in any browser: for students without gpuviz"))
        add(Action("file.share", "S&hare with the class…", lambda: share_with_class(self), (), g,
                   "Students' browsers follow this window live and answer the lesson's questions (a link and a QR code)",
                   icon_text="Share"))
        add(Action("file.share_answers", "Export the class's &answers (CSV)…", lambda: export_polls_dialog(self), (), g,
                   "The answers to each predict question, counted, without names"))
        add(Action("file.run", "&Run capture", lambda: self.launch_panel.run(), ("Ctrl+R",), g,
                   "Capture the kernel chosen in the launch panel"))
        add(Action("file.quit", "&Quit", self.close, ("Ctrl+Q",), g))
        g = "Lessons"
        for name, title in self._lesson_titles().items():
            add(Action(f"lesson.{name}", title, lambda name=name: self.start_lesson(name), (), g,
                       f"Play the lesson {name!r}: its scenes, notes and predict-then-reveal questions (→ / PageDown)"))
        add(Action("lesson.stop", "Leave the &lesson", self.stop_lesson, (), g, "Back to the trace and layout as before",
                   enabled=lambda: self.lesson is not None))
        g = "Help"
        add(Action("help.shortcuts", "&Keyboard shortcuts", self.show_shortcuts, ("F1", "?"), g))

    # ---- layout ---------------------------------------------------------------------------------------
    def _build_top_bar(self) -> None:
        bar = QToolBar("Now", self)
        bar.setObjectName("toolbar_now")
        bar.setMovable(False)
        # what happens at this frame (frames.describe), and below it why it matters (the narration)
        now = QWidget(bar)
        now.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        now_box = QVBoxLayout(now)
        now_box.setContentsMargins(0, 0, 0, 0)
        now_box.setSpacing(0)
        self.frame_text = QLabel("", now)
        self.frame_text.setObjectName("frameText")
        self.frame_text.setTextFormat(Qt.TextFormat.PlainText)  # text from the trace file: never rich text
        self.frame_text.setWordWrap(True)
        self.caption_text = QLabel("", now)
        self.caption_text.setObjectName("captionText")
        self.caption_text.setTextFormat(Qt.TextFormat.PlainText)  # text from the trace file: never rich text
        self.caption_text.setWordWrap(True)
        # both texts change per frame: in slots, so that a new text lays the window out again only when it needs
        # another height
        now_box.addWidget(slotted(self.frame_text))
        now_box.addWidget(slotted(self.caption_text))
        bar.addWidget(now)
        self.origin_badge = QLabel("", bar)
        self.origin_badge.setObjectName("originBadge")
        self.origin_badge.setTextFormat(Qt.TextFormat.PlainText)  # text from the trace file: never rich text
        self.origin_badge.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)  # a pill, not a column
        # a widget in a toolbar is shown and hidden through its action
        self.origin_badge_action = bar.addWidget(self.origin_badge)
        self.origin_badge_action.setVisible(False)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, bar)
        self.top_bar = bar
        # notices: a second row, shown only while there is one
        self.addToolBarBreak(Qt.ToolBarArea.TopToolBarArea)
        notice = QToolBar("Notice", self)
        notice.setObjectName("toolbar_notice")
        notice.setMovable(False)
        self.notice_label = QLabel("", notice)
        self.notice_label.setObjectName("noticeText")
        self.notice_label.setTextFormat(Qt.TextFormat.PlainText)  # text from the trace file: never rich text
        self.notice_label.setWordWrap(True)
        self.notice_label.setStyleSheet(_NOTICE_STYLE)
        self.notice_label.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        notice.addWidget(self.notice_label)
        dismiss = QToolButton(notice)
        dismiss.setText("Dismiss")
        dismiss.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        dismiss.clicked.connect(self.clear_notice)
        notice.addWidget(dismiss)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, notice)
        notice.hide()
        self.notice_bar = notice
        # warnings about the trace on screen (races, uninitialised reads, an untraced launch): a row of their
        # own, shown while that trace is on screen, so that a notice never hides them
        self.addToolBarBreak(Qt.ToolBarArea.TopToolBarArea)
        warn = QToolBar("Warnings", self)
        warn.setObjectName("toolbar_warnings")
        warn.setMovable(False)
        self.warning_label = QLabel("", warn)
        self.warning_label.setObjectName("warningText")
        self.warning_label.setWordWrap(True)
        self.warning_label.setTextFormat(Qt.TextFormat.PlainText)
        self.warning_label.setStyleSheet(_WARNING_STYLE)
        self.warning_label.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        warn.addWidget(self.warning_label)
        hide = QToolButton(warn)
        hide.setText("Dismiss")
        hide.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        hide.clicked.connect(warn.hide)
        warn.addWidget(hide)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, warn)
        warn.hide()
        self.warning_bar = warn
        self.trace_warnings: list = []  # gpuviz.model.analysis.TraceWarning of the trace on screen
        # where the trace came from, always in the status line (a permanent widget: messages do not cover it)
        self.origin_status = QLabel("", self)
        self.origin_status.setObjectName("originStatus")
        self.origin_status.setTextFormat(Qt.TextFormat.PlainText)  # text from the trace file: never rich text
        self.statusBar().addPermanentWidget(self.origin_status)
        # what the trace on screen is, at the left of the status line: a widget, not a message. A message with no
        # time limit was wiped by the first menu opened (its items' empty status tips) and never came back; a
        # message shown now covers this widget and hands the line back to it when it ends
        self.summary_status = QLabel("", self)
        self.summary_status.setObjectName("summaryStatus")
        self.summary_status.setTextFormat(Qt.TextFormat.PlainText)  # text from the trace file: never rich text
        self.statusBar().addWidget(self.summary_status, 1)

    def _build_views(self) -> None:
        by_area: dict[str, list[str]] = {}
        for vid, cls in available_views().items():
            try:
                view = cls(self.session, self)
            except Exception as e:  # noqa: BLE001 - one broken view must not keep the window from opening
                self.statusBar().showMessage(f"view {vid} could not be built: {type(e).__name__}: {e}", 20000)
                continue
            # A view whose controls are wide (occupancy, timings) must not force the whole window wider
            # than a 1280x720 projector: an explicit minimum overrides the layout's, and the view clips.
            hint = view.minimumSizeHint()
            view.setMinimumSize(min(hint.width(), 240), min(hint.height(), 120))
            dock = QDockWidget(cls.title or vid, self)
            dock.setObjectName(f"dock_{vid}")
            dock.setWidget(view)
            # a tab brought to the front draws what it missed (the layout settles first: hence the timer)
            dock.visibilityChanged.connect(lambda shown, v=view: shown and QTimer.singleShot(0, v.catch_up))
            dock.setFeatures(
                QDockWidget.DockWidgetFeature.DockWidgetMovable
                | QDockWidget.DockWidgetFeature.DockWidgetFloatable
                | QDockWidget.DockWidgetFeature.DockWidgetClosable
            )
            self.views[vid] = view
            self.docks[vid] = dock
            area = cls.default_area if cls.default_area in _AREAS else "right"
            if cls.tabify_with in self.docks:
                self.tabifyDockWidget(self.docks[cls.tabify_with], dock)
                continue
            by_area.setdefault(area, []).append(vid)
        # each area: its first view on top, the second below it, any more tabbed with the second
        for area, vids in by_area.items():
            docks = [self.docks[v] for v in vids]
            self.addDockWidget(_AREAS[area], docks[0])
            if len(docks) > 1:
                self.splitDockWidget(docks[0], docks[1], Qt.Orientation.Vertical)
                for d in docks[2:]:
                    self.tabifyDockWidget(docks[1], d)
                docks[1].raise_()
        self._by_area = by_area
        # The docks share the whole window: the bottom area fills the middle column. The central widget is an
        # empty strip of no height rather than none at all: with no central widget, Qt (6.11) moves both side
        # columns 1-2 px outwards at every relayout once resizeDocks() has sized them (arrange_default), and
        # views relayout on every frame (a caption that wraps differently), so playing a few hundred frames
        # squeezed the middle column (global and shared memory) to its minimum and resized every plot each frame.
        spacer = QWidget(self)
        spacer.setObjectName("centralSpacer")
        spacer.setMaximumHeight(0)
        self.setCentralWidget(spacer)
        self._arranged = False

    #: below this window height the bottom column's views (global and shared memory, barriers, timings) are
    #: tabs rather than stacked
    STACKED_MEMORY_MIN_HEIGHT = 820
    _memory_tabbed = False

    def arrange_default(self) -> None:
        """Column widths and row heights of the default layout, for the window's current size."""
        w, h = max(self.width(), 640), max(self.height(), 400)
        cols, widths = [], []
        # the source column the widest: its lines wrap below 60 columns, and the middle column's arrays
        # size themselves to what they get (a gap stayed empty beside them while the source was cut)
        for area, frac in (("left", 0.22), ("right", 0.37)):
            vids = self._by_area.get(area)
            if vids:
                cols.append(self.docks[vids[0]])
                widths.append(int(w * frac))
        if cols:
            self.resizeDocks(cols, widths, Qt.Orientation.Horizontal)
        bottom = self._by_area.get("bottom", [])
        if h < self.STACKED_MEMORY_MIN_HEIGHT and len(bottom) > 1 and not self._memory_tabbed:
            # a short window (a 1280x720 projector, a 1366x768 laptop): global and shared memory stacked got a
            # strip each, 32x32 arrays a pixel a cell. As tabs, each gets the column's height, and the one the
            # frame is about comes to the front (_follow_memory_tab), as in presenter mode
            first = self.docks[bottom[0]]
            for vid in bottom[1:]:
                self.tabifyDockWidget(first, self.docks[vid])
            first.raise_()
            self._memory_tabbed = True
        # the source over Details: at a short window's height Details got four lines (finding 11 of issue 28)
        right_top = 0.58 if h >= self.STACKED_MEMORY_MIN_HEIGHT else 0.5
        for area, top in (("left", 0.36), ("right", right_top), ("bottom", 0.55)):
            vids = self._by_area.get(area, [])
            if area == "bottom" and self._memory_tabbed:
                continue
            if len(vids) > 1:
                self.resizeDocks([self.docks[vids[0]], self.docks[vids[1]]], [int(h * top), int(h * (1 - top))],
                                 Qt.Orientation.Vertical)
        self._arranged = True
        QTimer.singleShot(0, self._hide_stale_tab_bars)

    def _hide_stale_tab_bars(self) -> None:
        """Qt (6.11) leaves the tab bars of intermediate tab groups visible, floating over the docks,
        when docks are tabbed before the window is first laid out. A live tab bar sits below its
        group's docks, never on top of a dock: hide the ones that cover one."""
        docks = [d.geometry() for d in self.findChildren(QDockWidget) if d.isVisible() and not d.isFloating()]
        for bar in self.findChildren(QTabBar):
            if bar.parent() is not self or not bar.isVisible():
                continue
            g = bar.geometry()
            if any(d.intersected(g).height() > 4 and d.intersected(g).width() > 4 for d in docks):
                bar.hide()
        self._fit_dock_titles()

    def _refit_after_layout(self) -> None:
        self._grow_now_labels()
        self._fit_dock_titles()

    def _fit_dock_titles(self) -> None:
        """Each dock's full title where it fits its title bar and its tab, else its view's short title: at
        1280x720 the desk cut 'Block: warps x la…' and 'Per l…' (presenter mode fits its own the same way)."""
        from shiboken6 import isValid

        if isValid(self) and self.isVisible():
            fit_dock_titles(self)

    def _build_open_progress(self) -> None:
        """Opening a file: its name and stage, a percent bar and Cancel, at the right of the status line."""
        bar = self.statusBar()
        self.open_label = QLabel("", bar)
        self.open_label.setObjectName("openLabel")
        self.open_bar = QProgressBar(bar)
        self.open_bar.setObjectName("openProgress")
        self.open_bar.setRange(0, 100)
        self.open_bar.setTextVisible(True)
        self.open_bar.setFixedWidth(200)
        self.open_cancel = QPushButton("Cancel", bar)
        self.open_cancel.setObjectName("openCancel")
        self.open_cancel.setToolTip("stop opening this file; the trace on screen stays")
        self.open_cancel.clicked.connect(lambda: self.cancel_open())
        for w in (self.open_label, self.open_bar, self.open_cancel):
            bar.addPermanentWidget(w)
            w.hide()

    def _build_launch_dock(self) -> None:
        self.launch_panel = LaunchPanel(self)
        dock = QDockWidget("Launch", self)
        dock.setObjectName("dock_launch")
        # scrolls rather than forcing the window taller than a 720-pixel screen (the panel grows with notices)
        scroll = QScrollArea(dock)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # the panel wraps, it does not scroll sideways
        scroll.setWidget(self.launch_panel)
        dock.setWidget(scroll)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
        if "details" in self.docks:
            self.tabifyDockWidget(self.docks["details"], dock)
            self.docks["details"].raise_()
        self.docks["launch"] = dock

    #: toolbar labels of the transport's buttons when the full ones do not fit (1280 wide, bigger text):
    #: symbols everyone reads for play / first / last; the words that say what a jump skips to stay
    _COMPACT_ICON_TEXT = {
        "playback.play": "▶",
        "playback.first": "|◀",
        "playback.last": "▶|",
    }
    #: the slider keeps at least this much room; the labels get shorter before it gets narrower
    SLIDER_MIN_WIDTH = 200
    # a window narrower than a 1280-wide screen (a window manager's frame, half a screen): the slider gives up
    # room, down to this, before the speed control is pushed into the bar's overflow menu
    SLIDER_LEAST_WIDTH = 80

    def _build_transport(self) -> None:
        bar = QToolBar("Playback", self)
        bar.setObjectName("toolbar_playback")
        bar.setMovable(False)
        bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        for a in self.actions:
            if a.in_toolbar:
                bar.addAction(self.actions.qaction(a.id))
        self.slider = QSlider(Qt.Orientation.Horizontal, bar)
        self.slider.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.slider.setMinimumWidth(self.SLIDER_MIN_WIDTH)
        self.slider.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.slider.valueChanged.connect(self._scrub)
        bar.addWidget(self.slider)
        self.counter = QLabel("", bar)
        self.counter.setObjectName("frameCounter")
        self.counter.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        bar.addWidget(slotted(self.counter))  # as wide as the widest count: a new count lays nothing out again
        bar.addAction(self.actions.qaction("playback.slower"))
        self.speed_label = QLabel("", bar)
        self.speed_label.setObjectName("speedLabel")
        self.speed_label.setToolTip("playback speed: frames shown per second (− slower, + faster)")
        bar.addWidget(self.speed_label)
        bar.addAction(self.actions.qaction("playback.faster"))
        bar.addSeparator()
        bar.addAction(self.actions.qaction("file.share"))  # the class share's button: File ▸ Share with the class…
        for w in bar.findChildren(QToolButton):
            w.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.addToolBar(Qt.ToolBarArea.BottomToolBarArea, bar)
        self.transport = bar
        self.transport_compact = False  # short labels on: the full ones did not fit the window's width
        self._transport_fit_key = None
        self._label_transport()

    def _label_transport(self) -> None:
        """Put the labels of the current mode (full or compact) on the transport bar."""
        compact = self.transport_compact
        for aid, short in self._COMPACT_ICON_TEXT.items():
            full = self.actions[aid].icon_text
            if aid == "playback.play" and self.session.playback.playing:
                full, short = "❚❚ Pause", "❚❚"
            self.actions.qaction(aid).setIconText(short if compact else full)
        rate = f"{self.session.playback.rate:g}"
        self.speed_label.setText(f"{rate} fps" if compact else f"{rate} frames/s")
        s = self.session
        n = s.frames.n_frames if s.frames is not None else 0
        # as wide as the widest counter of this trace: the slider must not twitch while frames play
        widest = self._counter_text(n - 1, n) if n else ""
        self.counter.setMinimumWidth(self.counter.fontMetrics().horizontalAdvance(widest))
        self.counter.parentWidget().sync()  # its slot's width now: the bar's width is measured next
        self._label_counter()

    def _counter_text(self, f: int, n: int) -> str:
        return f"{f + 1:,} / {n:,}" if self.transport_compact else f"frame {f + 1:,} / {n:,}"

    def _label_counter(self) -> None:
        s = self.session
        if s.frames is None:
            return
        f, n = s.frame, s.frames.n_frames
        self.counter.setText(self._counter_text(f, n))
        self.counter.setToolTip(f"frame {f + 1:,} of {n:,}")

    def _transport_width(self, compact: bool) -> int:
        """The width the transport bar asks for with the full or the compact labels."""
        self.transport_compact = compact
        self._label_transport()
        self.transport.layout().invalidate()
        return self.transport.sizeHint().width()

    def _fit_transport(self) -> None:
        """Full labels when they fit the window's width with the slider at its minimum, else compact ones,
        so the speed control is never pushed off the bar (into the overflow menu) on a 1280-wide screen.
        The width the bar asks for with each set of labels is measured again only when it may change (the text
        size, the frame count: the counter's width, playing or not, the rate); a new window width only picks the
        labels and the slider's minimum from them. (Measuring lays the bar out again, and then the whole window:
        on every resize, a second layout pass of every dock.)"""
        s = self.session
        key = (s.theme.scale, s.frames.n_frames if s.frames is not None else 0, s.playback.playing, s.playback.rate)
        if key != self._transport_fit_key:
            self._transport_fit_key = key
            self.slider.setMinimumWidth(self.SLIDER_MIN_WIDTH)
            self._transport_widths = (self._transport_width(False), self._transport_width(True))
        full, short = self._transport_widths
        self.transport_compact = full > self.width()
        self._label_transport()
        least = self.SLIDER_MIN_WIDTH
        if self.transport_compact and short > self.width():
            least = max(self.SLIDER_LEAST_WIDTH, self.SLIDER_MIN_WIDTH - (short - self.width()))
        if self.slider.minimumWidth() != least:
            self.slider.setMinimumWidth(least)

    def _scrub(self, value: int) -> None:
        s = self.session
        s.playback.pause()
        s.set_frame(value)

    def _build_menus(self) -> None:
        mb = self.menuBar()
        groups = self.actions.groups()
        order = ["File", "Playback", "View", "Lessons", "Help"]
        for group in sorted(groups, key=lambda g: order.index(g) if g in order else 9):
            actions = groups[group]
            menu = mb.addMenu(f"&{group}")
            # 'Leave the lesson' greyed out with no lesson playing, and each check mark as it is, when it opens
            menu.aboutToShow.connect(self.actions.sync_checked)
            for a in actions:
                menu.addAction(self.actions.qaction(a.id))
            if group == "View":
                menu.addSeparator()
                for vid, dock in self.docks.items():
                    menu.addAction(dock.toggleViewAction())

    # ---- commands ---------------------------------------------------------------------------------------
    def toggle_theme(self) -> None:
        s = self.session
        s.set_theme(get_theme("light" if s.theme.dark else "dark", s.theme.scale))

    def _now_labels(self):
        """The frame description and its caption, each with the padding its style gives it."""
        t = self.session.theme
        return ((self.frame_text, 2 * t.px(4)), (self.caption_text, t.px(4)))

    @staticmethod
    def _now_label_height(label: QLabel, pad: int, at_least: int = 0) -> int:
        """The height ``label`` needs for its text wrapped at its width (a QLabel wraps plain text as
        QFontMetrics does), ``at_least`` lines of it."""
        fm = QFontMetrics(label.font())
        width = label.contentsRect().width()
        need = 0
        # a width the bar never has once laid out (19 px while the window's first layout runs) asks nothing of the
        # text: its dozens of lines there grew the window past a 720-pixel screen
        if width >= 30 * fm.averageCharWidth() and label.text():
            need = fm.boundingRect(QRect(0, 0, width, 1 << 20), Qt.TextFlag.TextWordWrap, label.text()).height()
        # the floor measured as the text is (a few pixels over line spacings: a third line grew the bar by them)
        floor = fm.boundingRect(QRect(0, 0, max(width, 1), 1 << 20), Qt.TextFlag.TextWordWrap,
                                "\n".join(["Xg"] * at_least)).height() if at_least else 0
        return max(need, floor) + pad

    def _fit_now_labels(self) -> None:
        """Give the frame description and its caption room for two lines each (three in a narrow bar), or for
        all of their text now if it takes more.

        Their text changes every frame; if their height followed it (one line, then two) the whole window
        would re-lay out its docks on every frame, which is most of what a frame costs: a frame whose text needs
        more room grows them (:meth:`_grow_now_labels`), and they keep it until the window's width or the theme
        changes."""
        for label, pad in self._now_labels():
            label.ensurePolished()
            fm = QFontMetrics(label.font())
            # two lines hold ~70 characters a line; a narrower bar (a projector's 1280 at presenter sizes) gets a third
            lines = 2 if label.width() <= 0 or label.width() >= 70 * fm.averageCharWidth() else 3
            if label is self.caption_text and 0 < label.width() < 200 * fm.averageCharWidth():
                # a caption that also says who diverges or queues takes a third line at 1280 pixels: grown
                # for it mid-playback, every view below moved down (finding 11 of issue 28)
                lines = max(lines, 3)
            if label is self.frame_text and _presenter_of(self) is not None:
                lines = 1  # presenting, the title is one line of where (see _on_frame); grown if it ever wraps
            label.setFixedHeight(self._now_label_height(label, pad, lines))

    def _grow_now_labels(self) -> None:
        """A frame's text that needs more lines than its label holds gets them (never cut off; a barrier opening
        takes three lines in a 1176-pixel bar); the labels do not shrink back on the next frame."""
        for label, pad in self._now_labels():
            need = self._now_label_height(label, pad)
            if need > label.height():
                label.setFixedHeight(need)

    def _apply_theme(self) -> None:
        self.setStyleSheet(stylesheet(self.session.theme))
        self._fit_now_labels()
        self._style_badge()
        self._fit_transport()  # bigger text: the full labels may no longer fit
        QTimer.singleShot(0, self._fit_dock_titles)  # nor the docks' titles
        self._refit_timer.start()
        if self.overlay.isVisible():
            self.overlay.refresh()

    def toggle_present(self) -> None:
        """Presenter mode (gpuviz/ui/presenter.py): full screen, chrome hidden, no text under 18 px, clicker keys."""
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
        from ..lessons import LessonError, builtin_lessons, load_lesson

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
        from ..lessons import LessonError, builtin_lessons, load_lesson
        from .lesson_player import play_lesson
        from .presenter import presenter_of

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
            if presenter_of(self) is not None:
                presenter_of(self).refresh_caption()

    def stop_lesson(self) -> None:
        ctl = self.lesson
        if ctl is not None:
            self._gpuviz_lesson = None
            ctl.stop()

    def jump_to_worst_line(self) -> int | None:
        """W: the first frame of the worst source line (gpuviz.ui.views.occupancy.worst_line); returns it."""
        import numpy as np

        from .views.occupancy import line_table_rows, worst_line

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
        if _presenter_of(self) is None:
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
        """F11, with a window manager or without one (gpuviz.ui.presenter.show_full_screen)."""
        from .presenter import is_full_screen, show_full_screen, show_normal

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

    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Open a trace, a recording or a Numba CUDA program", "",
            "gpuviz traces and programs (*.gpuviz *.py);;gpuviz traces (*.gpuviz);;Python programs (*.py);;All files (*)",
        )
        if path:
            self.open_path(path)

    def open_path(self, path: str) -> bool:
        """Open a trace; a recording of several launches or a program (.py) goes to the launch list."""
        from .views.launches import load_recording, needs_launch_list, run_program

        if needs_launch_list(path):
            if str(path).endswith(".py"):
                run_program(self, path)  # in a worker process: the window never runs user code itself
                return True
            return load_recording(self, path)
        self.open_in_background(path)
        return True

    # ---- opening a trace file off the GUI thread ------------------------------------------------------
    def open_in_background(self, path: str):
        """Read ``path`` on a thread (gpuviz/ui/open_job.py) while the window goes on with the trace on screen;
        the new trace replaces it when ready. A second open cancels the first; Cancel keeps the old trace."""
        from .open_job import OpenJob

        self.cancel_open(quiet=True)
        s = self.session
        opened = self._opened_file
        on_screen = (opened[0], s.trace, s.frames) if opened is not None and opened[1]() is s.trace else None
        job = OpenJob(path, self, prepare=[type(v).prepare for v in self.views.values() if v.on_screen()],
                      on_screen=on_screen)
        job.progress.connect(lambda pct, words, job=job: self._open_progress(job, pct, words))
        job.finished.connect(lambda job=job: self._open_finished(job))
        self._open_job = job
        self._open_jobs.append(job)
        # nothing is built ahead while the file is read (Qt items built then competed with this job's thread
        # for the GIL and held the GUI thread several times as long): the views build what the new trace's
        # layout takes in turns of their own once it is here (TraceView.warm_up_steps)
        self.open_label.setText(f"opening {Path(path).name}")
        self.open_bar.setValue(0)
        self.open_bar.setFormat("%p%")
        for w in (self.open_label, self.open_bar, self.open_cancel):
            w.show()
        job.start()
        return job

    @property
    def opening(self) -> bool:
        """Is a trace file being opened in the background now?"""
        return self._open_job is not None

    def cancel_open(self, quiet: bool = False) -> None:
        """Stop the open in progress (the trace on screen stays)."""
        job = self._open_job
        if job is None:
            return
        job.cancel()
        self._open_job = None
        self._hide_open_progress()
        if not quiet:
            self.statusBar().showMessage(f"opening {Path(job.path).name} cancelled", 8000)

    def _hide_open_progress(self) -> None:
        for w in (self.open_label, self.open_bar, self.open_cancel):
            w.hide()

    def _open_progress(self, job, pct: int, words: str) -> None:
        if job is self._open_job:
            self.open_bar.setValue(pct)
            self.open_bar.setToolTip(words)
            self.open_label.setText(f"opening {Path(job.path).name}: {words}")

    def _open_finished(self, job) -> None:
        if job in self._open_jobs:
            self._open_jobs.remove(job)
        job.deleteLater()
        if job is not self._open_job:
            return  # cancelled or replaced by another open: its result is dropped
        self._open_job = None
        self._hide_open_progress()
        if job.error is not None:
            self.launch_panel.show_error(f"Could not open {job.path}: {job.error}")
        elif job.result is not None:
            trace, frames = job.result
            self._live_trace = None
            if job.index_source == "on screen" and trace is self.session.trace:
                self.session.show_again(job.path)  # the same file, unchanged: nothing to rebuild
            else:
                self.session.set_trace(trace, job.path, frames=frames)
            # a weak reference: the trace's arrays must not outlive its time on screen because of this
            self._opened_file = (job.identity, weakref.ref(trace)) if job.identity is not None else None
            if job.index_source == "built":
                self.statusBar().showMessage(f"{Path(job.path).name} indexed; the index is kept for the next open", 8000)

    def save_dialog(self) -> None:
        if self.session.trace is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Save the trace", f"{self.session.trace.launch.kernel_name}.gpuviz",
                                              "gpuviz traces (*.gpuviz)")
        if path:
            trace = self.session.trace
            number = (trace.launch.meta.get("recording") or {}).get("number")
            what = f"launch {number} ({trace.launch.kernel_name})" if number else trace.launch.kernel_name
            try:
                trace.save(path)  # read back before it is put in place: 'saved' only once it opens again
                self.statusBar().showMessage(f"saved {path}: {what}, {len(trace):,} events, read back", 8000)
            except (OSError, ValueError) as e:  # the disk, or TraceFileError: it would not read back
                self.launch_panel.show_error(f"Could not save {what} to {path}: {e}")

    def snapshot_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save a picture of the window", "gpuviz.png", "PNG (*.png)")
        if path:
            from ..model.safewrite import replace_atomically

            self.session.settle_now()  # views still to adopt a big trace (one a turn): every one drawn first
            try:  # a regular file or a new one, complete or not at all (never a device or a FIFO)
                with replace_atomically(path, "picture") as tmp:
                    if not self.grab().save(str(tmp), "PNG"):
                        raise OSError("the image could not be written")
                    from ..export.verify import check_export

                    held = check_export(tmp, "png", name=path)  # read back before it is moved into place
                self.statusBar().showMessage(f"saved {path} ({held})", 8000)
            except (OSError, ValueError) as e:
                self.launch_panel.show_error(f"Could not save {path}: {e}")

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
