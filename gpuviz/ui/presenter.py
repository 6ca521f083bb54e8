"""Presenter mode: the main window on a projector, driven by a clicker.

    presenter = enter_presenter(window, theme="dark")    # full screen, chrome hidden, text >= 18 px
    leave_presenter(window)                              # everything back as it was

Works on a :class:`~gpuviz.ui.window.MainWindow` from the outside, through its public parts (``session``,
``actions``, ``docks``, ``transport``, ``menuBar()``, ``statusBar()``):

* full screen (or a given size), menu bar, status bar, transport bar and launch panel hidden;
* high-contrast light and dark themes made for washed-out projectors (Okabe-Ito categories, greys a
  step further from the background than the desk themes' so "idle" and "waiting" stay visible, cividis heat maps);
* every text at least :data:`MIN_TEXT_PX` pixels at 1920x1080: the scale is raised until the smallest
  text in the window (Qt widgets and pyqtgraph items alike, measured by :func:`~gpuviz.ui.text_sizes.text_sizes`)
  reaches it, and it can be changed on the fly (Ctrl+= / Ctrl+-, Ctrl+0 back to the automatic scale);
* a caption bar along the bottom with the narration of the current frame (:mod:`gpuviz.model.narration`);
* clicker keys: PageDown / Right next, PageUp / Left back (a lesson's next beat when one plays, else one
  frame), B or . blank screen, Ctrl+T light/dark, Esc leaves (or un-blanks).

The window's own key bindings for those keys are set aside while presenting and given back on leaving.
"""

from __future__ import annotations

import math
from dataclasses import replace

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtGui import QColor, QFontMetrics
from PySide6.QtWidgets import QLabel, QSizePolicy, QToolBar, QVBoxLayout, QWidget
from shiboken6 import isValid

from ..model import playback as pb
from ..model.narration import Narrator
from ..model.trace import EventKind
from ..style.theme import DARK, LIGHT, ORANGE_ON_WHITE, Theme, get_theme, state_colours
from .dock_titles import fit_dock_titles, restore_dock_titles
from .fullscreen import is_full_screen, put_back_geometry, show_full_screen
from .key_override import KeyOverride
from .text_sizes import MIN_TEXT_PX, enforce_min_text, smallest_text
from .views.labels import lines_height, wrapped_text_height

#: the presenter's own keys as the F1 overlay lists them (the presenter's KeyOverride binds them)
PRESENTER_HELP = (
    ("Next: a lesson's next step, else one frame", "PgDown, Right"),
    ("Back", "PgUp, Left"),
    ("Blank the screen (again: back)", "B, ."),
    ("Bigger / smaller text", "Ctrl++, Ctrl+-"),
    ("Text size as it fits", "Ctrl+0"),
    ("Light/dark", "Ctrl+T"),
    ("Leave presenter mode", "Esc, F5"),
)
#: Ctrl+- goes below the automatic scale (a teacher may want more on screen), down to this smallest text
MIN_SMALLER_PX = 13
SCALE_STEP = 1.12
#: docks presenter mode hides (restored on leaving): the launch form, details of a click, and desk analyses
PRESENTER_HIDES = ("launch", "details", "occupancy", "lines", "timings", "launches")
#: column widths of presenter mode: blocks and lanes | memory | source
PRESENTER_COLUMNS = (0.23, 0.40, 0.37)

#: high-contrast themes for projectors: a washed-out image loses contrast, so the greys stand further from the ground
PRESENT_LIGHT = replace(
    LIGHT,
    name="present-light",
    panel="#FFFFFF",
    muted="#000000",
    grid="#4D4D4D",
    highlight_line="#F5D76E",
    **state_colours(not_begun="#888888", idle="#5E5E5E", done="blue", diverged=ORANGE_ON_WHITE),
    heatmap="cividis",
)
PRESENT_DARK = replace(
    DARK,
    name="present-dark",
    panel="#000000",
    muted="#FFFFFF",
    grid="#A0A0A0",
    highlight_line="#6B5800",
    **state_colours(not_begun="#666666", idle="#8C8C8C", done="sky_blue"),
    heatmap="cividis",
)
PRESENT_THEMES = {"light": PRESENT_LIGHT, "dark": PRESENT_DARK}




# ---- the caption bar and the blank screen -------------------------------------------------------------
class CaptionBar(QWidget):
    """The narration of the current frame, large, along the bottom of the window."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("presenterCaption")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(12, 6, 12, 6)
        lay.setSpacing(2)
        self.caption = QLabel(self)
        self.caption.setObjectName("presenterCaptionText")
        self.caption.setWordWrap(True)
        self.caption.setTextFormat(Qt.TextFormat.PlainText)  # narration names arrays and kernels: never rich text
        self.note = QLabel(self)
        self.note.setObjectName("presenterNoteText")
        self.note.setWordWrap(True)
        self.note.setTextFormat(Qt.TextFormat.PlainText)
        self.caption.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        lay.addWidget(self.caption)
        lay.addWidget(self.note)

    def set_text(self, caption: str, note: str = "") -> None:
        self.caption.setText(caption)
        self.note.setText(note)
        self._fit()

    #: (bar width, fonts) the held heights are for, and the heights: the caption's and the note's
    _held_for = None
    _held = (0, 0)

    #: (caption, note) of every text the bar is to show, where that is known ahead (a lesson's scene); () if not
    _coming: tuple = ()

    def release_height(self) -> None:
        """Another trace: the bar fits its text again (and holds that); what it was told was coming goes too."""
        self._held_for = None
        self._coming = ()
        self._fit()

    def hold_for(self, texts) -> None:
        """Hold the bar at the tallest of ``texts``, the (caption, note) of each step of a lesson's scene, from the
        first step on, instead of the two or three lines guessed for a caption not known yet: at 1280x720 one
        Ctrl++ up, host_device_flow's captions take two lines, and the third, held blank, was room the lesson's
        notes over the source needed (51 px short). The views do not move from step to step either: held at the
        tallest text seen so far, the bar grew at bank_conflicts' fifth step and the scene was laid out again."""
        self._coming = tuple(texts)
        self._held_for = None
        self._fit()

    def _tallest_coming(self, inner: int) -> tuple[int, int]:
        """The heights of the tallest caption and note of :attr:`_coming` at ``inner`` px wide."""
        heights = []
        for k, label in enumerate((self.caption, self.note)):
            probe = QLabel()
            probe.setWordWrap(True)
            probe.setTextFormat(Qt.TextFormat.PlainText)
            probe.ensurePolished()
            probe.setFont(label.font())
            tallest = 0
            for texts in self._coming:
                if texts[k]:
                    probe.setText(texts[k])
                    tallest = max(tallest, wrapped_text_height(probe, inner))
            heights.append(tallest)
        return heights[0], heights[1]

    def _fit(self) -> None:
        """Each label as tall as its wrapped text at the bar's width, and never shorter than the tallest text it
        has had at this width and text size: the caption at least two or three lines, or as tall as the tallest of
        what a lesson's scene will show (:meth:`hold_for`). Left to the layout, a toolbar
        sizes a word-wrapped label for Qt's guess of its width (about 700 px), not the window's: at 1280x720
        the bar took 255 px for four lines of text (150 px) and the lesson notes above it had to scroll. Fitted
        exactly to each frame's text, the bar grew and shrank by a line or two between frames and every view
        above it jumped (~45 px, finding 11 of issue 28)."""
        m = self.layout().contentsMargins()
        inner = self.width() - m.left() - m.right()
        if inner <= 0:
            return
        for label in (self.caption, self.note):
            label.ensurePolished()  # the style sheet's font, before measuring
        key = (inner, self.caption.font().key(), self.note.font().key())
        if key != self._held_for:
            self._held_for = key
            fm = QFontMetrics(self.caption.font())
            # a caption is one to three sentences: three lines where a line holds under ~100 characters
            self._held = (self._tallest_coming(inner) if self._coming else
                          (lines_height(self.caption.font(), 2 if inner >= 100 * fm.averageCharWidth() else 3), 0))
        held = []
        for label, floor in zip((self.caption, self.note), self._held):
            h = wrapped_text_height(label, inner) if label.text() else 0  # heightForWidth over-asks, by lines
            h = max(h, floor)
            held.append(h)
            label.setVisible(h > 0)
            if h > 0 and (label.minimumHeight() != h or label.maximumHeight() != h):
                label.setFixedHeight(h)
        self._held = tuple(held)

    def resizeEvent(self, ev) -> None:
        super().resizeEvent(ev)
        self._fit()

    def restyle(self, theme: Theme) -> None:
        self.setStyleSheet(
            f"QWidget#presenterCaption {{ background: {theme.background}; border-top: 3px solid {theme.grid}; }}"
            f"QLabel#presenterCaptionText {{ font-size: {theme.px(24)}px; font-weight: bold; color: {theme.foreground};"
            f" background: {theme.background}; }}"
            f"QLabel#presenterNoteText {{ font-size: {theme.px(20)}px; color: {theme.muted};"
            f" background: {theme.background}; }}"
        )
        self._fit()


class BlankScreen(QWidget):
    """All black: the audience looks at the teacher, not the screen (B or . toggles it)."""

    def __init__(self, window):
        super().__init__(window)
        self.setObjectName("presenterBlank")
        self.setAutoFillBackground(True)
        self.setStyleSheet("QWidget#presenterBlank { background: #000000; }")
        self.hide()

    def paintEvent(self, ev) -> None:
        # painted here: a plain QWidget draws no style-sheet background, so it showed the docks through it
        from PySide6.QtGui import QPainter

        p = QPainter(self)
        p.fillRect(self.rect(), QColor("#000000"))
        p.end()

    def cover(self) -> None:
        self.setGeometry(self.parentWidget().rect())
        self.raise_()
        self.show()


# ---- the presenter ------------------------------------------------------------------------------------
class Presenter(QObject):
    """Presenter mode on one window. Use :func:`enter_presenter` / :func:`leave_presenter`."""

    def __init__(self, window, theme: str = "dark", scale: float | None = None, size=None, fullscreen: bool = True):
        super().__init__(window)
        # set before any signal is connected: a frame change while entering (the theme's rescale, a full-screen
        # resize) reaches _on_frame before the layout is arranged (bench/drive_app.py: AttributeError on F5)
        self._memory_tabs = False
        if theme not in PRESENT_THEMES:
            raise ValueError(f"presenter theme is 'light' or 'dark', not {theme!r}")
        self.window = window
        self.session = window.session
        self.theme_name = theme
        self.size = (int(size[0]), int(size[1])) if size is not None else None
        self.lesson = None  # a gpuviz.ui.lesson_player.LessonController drives next/prev when set
        self.caption_override = None  # callable () -> (caption, note), set by a lesson
        self._narrator: Narrator | None = None
        self._auto_scale = 1.0
        self._saved_theme = self.session.theme
        self._saved_state = window.saveState()
        self._saved_geometry = window.saveGeometry()
        self._saved_rect = window.geometry()
        self._was_fullscreen = is_full_screen(window)
        # the details panel answers clicks; nobody clicks during a talk, and its room goes to the views
        # the caption bar says what the top bar's second line would (hidden: its room goes to the views); the
        # occupancy, per-line and timings views are desk work: a projector shows what the launch does
        docks = window.docks
        self._chrome = [w for w in (window.menuBar(), window.statusBar(), getattr(window, "transport", None),
                                    getattr(window, "caption_text", None),
                                    *(docks.get(v) for v in PRESENTER_HIDES))
                        if w is not None and not w.isHidden()]
        for w in self._chrome:
            w.hide()
        self.caption_bar = CaptionBar()
        self.caption_toolbar = QToolBar("Caption", window)
        self.caption_toolbar.setObjectName("toolbar_presenter_caption")
        self.caption_toolbar.setMovable(False)
        self.caption_toolbar.addWidget(self.caption_bar)
        window.addToolBar(Qt.ToolBarArea.BottomToolBarArea, self.caption_toolbar)
        self.blank = BlankScreen(window)
        self.keys = self._take_keys()
        # connected after the views: these run once the views have drawn (and sized their labels)
        self.session.frame_changed.connect(self._on_frame)
        self.session.trace_changed.connect(self._on_trace)
        self.session.theme_changed.connect(self._restyle)
        # a view's own minimum width (long legends, axis labels at projector size) must not push the window
        # past the screen when views stand side by side: relaxed while presenting, given back on leaving
        self._minimums = {}
        for dock in window.docks.values():
            view = dock.widget()
            if view is not None:
                self._minimums[view] = view.minimumSize()
                view.setMinimumSize(120, 80)
        if size is not None:
            window.showNormal()
            window.resize(int(size[0]), int(size[1]))
            window.show()
        elif fullscreen:
            show_full_screen(window)
        self.session.set_theme(PRESENT_THEMES[theme].scaled(scale or self._saved_theme.scale))
        if scale is None:
            self.fit_text()
        else:
            self._auto_scale = float(scale)
        if self.size is not None:
            window.resize(*self.size)
        lesson = getattr(window, "_gpuviz_lesson", None)
        if lesson is not None:  # a lesson plays: the clicker drives it, its scene keeps its own views
            # known as the window's presenter first: the lesson lays its panel out for presenter_of(window)
            window._gpuviz_presenter = self
            lesson.attach(self)
        else:
            self.arrange()
        self._on_frame(self.session.frame)

    def _take_keys(self) -> KeyOverride:
        """The clicker's keys (:data:`PRESENTER_HELP` lists them), taken over from the window's own actions."""
        return KeyOverride(self.window, [
            ("next", ("PgDown", "Right"), self.next),
            ("previous", ("PgUp", "Left"), self.prev),
            ("blank", ("B", "."), self.toggle_blank),
            ("bigger", ("Ctrl++", "Ctrl+="), self.bigger),
            ("smaller", ("Ctrl+-",), self.smaller),
            ("auto_scale", ("Ctrl+0",), self.fit_text),
            ("theme", ("Ctrl+T",), self.toggle_theme),
            ("leave", ("Esc",), self.escape),
            ("stop_presenting", ("F5",), lambda: leave_presenter(self.window)),
        ])

    def arrange(self) -> None:
        """Three columns for a projector: grid and block on the left, memory in the middle, the source on
        the right with the height of the window (the widths of :data:`PRESENTER_COLUMNS`)."""
        w = self.window
        self._settle()
        areas = getattr(w, "_by_area", {})
        width = max(w.width(), 640)
        cols = []
        for area in ("left", "bottom", "right"):
            d = next((w.docks[v] for v in areas.get(area, []) if v in w.docks and w.docks[v].isVisible()), None)
            cols.append(d)
        # global and shared memory share the middle column as tabs, the one the frame uses in front: stacked,
        # each got half a projector's height and 32x32 arrays became strips a pixel or two tall
        mem = w.docks.get("memory")
        if mem is not None and mem.isVisible():
            for vid in ("shared", "barriers"):
                d = w.docks.get(vid)
                if d is not None and d.isVisible():
                    w.tabifyDockWidget(mem, d)
                    self._memory_tabs = True
            mem.raise_()  # global memory first (tabifying raised the last tab), then what the frame is about
            self._front_memory(self.session.frame)
        pairs = [(d, int(width * f)) for d, f in zip(cols, PRESENTER_COLUMNS) if d is not None]
        side = [(d, px) for d, px in pairs if w.dockWidgetArea(d) in (Qt.DockWidgetArea.LeftDockWidgetArea,
                                                                     Qt.DockWidgetArea.RightDockWidgetArea)]
        if side:
            w.resizeDocks([d for d, _ in side], [px for _, px in side], Qt.Orientation.Horizontal)
        self._settle()
        fit_dock_titles(w)

    # ---- scale and theme ---------------------------------------------------------------------------------
    @property
    def scale(self) -> float:
        return self.session.theme.scale

    def _settle(self) -> None:
        from PySide6.QtWidgets import QApplication

        for _ in range(2):
            QApplication.processEvents()

    def fit_text(self, min_px: float = MIN_TEXT_PX) -> float:
        """Raise the scale until the smallest visible text is at least ``min_px``; returns the scale."""
        self._settle()
        for _ in range(4):
            enforce_min_text(self.window, min_px)
            px, _where = smallest_text(self.window)
            if px >= min_px - 0.01 or px == float("inf"):
                break
            self.session.set_scale(self.scale * (min_px / px) * 1.001)
            self._settle()
        self._auto_scale = self.scale
        return self.scale

    @property
    def min_px(self) -> float:
        """The smallest text size kept now: :data:`MIN_TEXT_PX` at the automatic scale and above, in
        proportion below it (Ctrl+- asked for smaller text: the views' small labels shrink with the rest)."""
        return MIN_TEXT_PX * min(1.0, self.scale / max(self._auto_scale, 1e-6))

    def notes_px(self) -> int:
        """The size of running text that gets a panel of its own (a lesson's notes): :data:`MIN_TEXT_PX` at the
        automatic scale, the smallest the presenter allows, so the most of it fits; it follows Ctrl+= / Ctrl+-."""
        return max(1, math.ceil(MIN_TEXT_PX * self.scale / max(self._auto_scale, 1e-6) - 1e-6))

    def set_scale(self, scale: float) -> None:
        self.session.set_scale(scale)
        self._settle()
        enforce_min_text(self.window, self.min_px)

    def bigger(self) -> None:
        self.set_scale(self.scale * SCALE_STEP)

    def smaller(self) -> None:
        """Smaller (Ctrl+-): below the automatic scale too, down to where the smallest text is
        :data:`MIN_SMALLER_PX`; Ctrl+0 goes back to the automatic scale (every text at least 18 px).
        It used to stop at the automatic scale, so that right after F5 Ctrl+- did nothing at all."""
        floor = self._auto_scale * MIN_SMALLER_PX / MIN_TEXT_PX
        self.set_scale(max(floor, self.scale / SCALE_STEP))

    def set_theme(self, name: str) -> None:
        if name not in PRESENT_THEMES:
            raise ValueError(f"presenter theme is 'light' or 'dark', not {name!r}")
        self.theme_name = name
        self.session.set_theme(PRESENT_THEMES[name].scaled(self.scale))

    #: the teacher picked the theme with Ctrl+T while presenting: the desk keeps it (light or dark) on leaving
    theme_chosen = False

    def toggle_theme(self) -> None:
        self.set_theme("light" if self.theme_name == "dark" else "dark")
        self.theme_chosen = True

    def _restyle(self) -> None:
        self.caption_bar.restyle(self.session.theme)
        enforce_min_text(self.window, self.min_px)
        QTimer.singleShot(0, self._fit_titles)

    def _fit_titles(self) -> None:
        if isValid(self.window) and presenter_of(self.window) is self:
            fit_dock_titles(self.window)

    # ---- clicker -------------------------------------------------------------------------------------------
    def next(self) -> None:
        if self.blank.isVisible():
            self.blank.hide()
            return
        if self.lesson is not None:
            self.lesson.next()
        else:
            pb.step_forward(self.session.playback)

    def prev(self) -> None:
        if self.blank.isVisible():
            self.blank.hide()
            return
        if self.lesson is not None:
            self.lesson.prev()
        else:
            pb.step_back(self.session.playback)

    @property
    def blanked(self) -> bool:
        return self.blank.isVisible()

    def toggle_blank(self) -> None:
        if self.blank.isVisible():
            self.blank.hide()
        else:
            self.blank.cover()

    def escape(self) -> None:
        """Esc closes what is over the picture first (the shortcuts overlay, the blank), then leaves."""
        overlay = getattr(self.window, "overlay", None)
        if overlay is not None and overlay.isVisible():
            overlay.hide()
        elif self.blank.isVisible():
            self.blank.hide()
        else:
            leave_presenter(self.window)

    # ---- caption -----------------------------------------------------------------------------------------
    def _on_trace(self) -> None:
        self._narrator = None
        self.caption_bar.release_height()
        enforce_min_text(self.window, self.min_px)

    def narrator(self) -> Narrator | None:
        s = self.session
        if s.frames is None:
            return None
        if self._narrator is None or self._narrator.frames is not s.frames:
            self._narrator = Narrator(s.prepared)
        return self._narrator

    def _front_memory(self, f: int) -> None:
        """The view the frame is about in front: shared memory for a shared access, global for a global one,
        the barrier swimlanes at a syncthreads (a shuffle or a start leaves the tab as it is)."""
        frames = self.session.frames
        if not self._memory_tabs or frames is None or not frames.n_frames:
            return
        kind = int(frames.kind[min(max(f, 0), frames.n_frames - 1)])
        vid = ("shared" if kind in (EventKind.SHARED_LOAD, EventKind.SHARED_STORE) else
               "memory" if kind in (EventKind.GLOBAL_LOAD, EventKind.GLOBAL_STORE, EventKind.ATOMIC) else
               "barriers" if kind == EventKind.BARRIER else None)
        dock = self.window.docks.get(vid) if vid else None
        if dock is not None and dock.visibleRegion().isEmpty():
            dock.raise_()

    def _on_frame(self, f: int) -> None:
        self._front_memory(f)
        enforce_min_text(self.window, self.min_px)
        fit_dock_titles(self.window)  # a lesson's scene lays its own views out
        if self.caption_override is not None:
            caption, note = self.caption_override()
            self.caption_bar.set_text(caption, note)
            return
        n = self.narrator()
        if n is None or self.session.frames.n_frames == 0:
            self.caption_bar.set_text("")
            return
        self.caption_bar.set_text(n.caption(f), n.note(f))

    def refresh_caption(self) -> None:
        self._on_frame(self.session.frame)

    # ---- leaving ---------------------------------------------------------------------------------------------
    def close(self) -> None:
        w = self.window
        for sig, slot in ((self.session.frame_changed, self._on_frame), (self.session.trace_changed, self._on_trace),
                          (self.session.theme_changed, self._restyle)):
            try:
                sig.disconnect(slot)
            except (RuntimeError, TypeError):  # already gone with the window
                pass
        self.keys.release()
        self.blank.hide()
        self.blank.deleteLater()
        w.removeToolBar(self.caption_toolbar)
        self.caption_toolbar.deleteLater()
        for c in self._chrome:
            c.show()
        if self.theme_chosen:
            # a dark (or light) theme chosen on the projector stays at the desk, at the desk's own text size; it
            # went back to the desk's theme of before, the choice lost
            self.session.set_theme(get_theme(self.theme_name).scaled(self._saved_theme.scale))
        else:
            self.session.set_theme(self._saved_theme)
        for view, size in self._minimums.items():
            view.setMinimumSize(size)
        if not self._was_fullscreen:
            w._gpuviz_geometry_before_full_screen = None
            w._gpuviz_full_screen = False
            w.showNormal()
            put_back_geometry(w, self._saved_geometry, self._saved_rect)
        restore_dock_titles(w)
        w.restoreState(self._saved_state)
        QTimer.singleShot(0, w._fit_dock_titles)  # the desk's titles, for the desk's widths


def presenter_of(window) -> Presenter | None:
    """The window's presenter while presenting, else None."""
    return getattr(window, "_gpuviz_presenter", None)


def enter_presenter(window, theme: str = "dark", scale: float | None = None, size=None,
                    fullscreen: bool = True) -> Presenter:
    """Put ``window`` (a MainWindow) in presenter mode; returns its :class:`Presenter`.

    ``scale`` None: the smallest scale at which every text is at least :data:`MIN_TEXT_PX`. ``size``:
    a (width, height) instead of full screen (tests, screenshots, a second window).
    """
    p = presenter_of(window)
    if p is not None:
        if theme != p.theme_name:
            p.set_theme(theme)
        if scale is not None:
            p.set_scale(scale)
        return p
    p = Presenter(window, theme=theme, scale=scale, size=size, fullscreen=fullscreen)
    window._gpuviz_presenter = p
    if hasattr(window, "_on_frame"):  # the title in its presenter form (one line: where), now, at its height
        window._style_badge()  # and the badge beside it (no date)
        window._on_frame(window.session.frame)
        window._fit_now_labels()
        window._grow_now_labels()
    return p


def leave_presenter(window) -> None:
    """Back to the desk: chrome, theme, scale, layout, key bindings and window size as before."""
    p = presenter_of(window)
    if p is None:
        return
    window._gpuviz_presenter = None
    lesson = p.lesson
    # the presenter's keys go first: a lesson that takes the keys back must not set aside the presenter's own
    # actions, which are deleted with it (its release would then touch deleted actions)
    p.close()
    p.deleteLater()
    if lesson is not None and hasattr(lesson, "presenter_left"):
        lesson.presenter_left()
    # the desk's own caption and the menu's check mark, now (not at the next step)
    if hasattr(window, "_presenting"):
        window._presenting = False
        window.actions.sync_checked()
    if hasattr(window, "_on_frame"):
        window._on_frame(window.session.frame)


def toggle_presenter(window, theme: str = "dark") -> Presenter | None:
    """F5: enter presenter mode, or leave it."""
    if presenter_of(window) is not None:
        leave_presenter(window)
        return None
    return enter_presenter(window, theme=theme)
