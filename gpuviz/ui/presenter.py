"""Presenter mode: the main window on a projector, driven by a clicker.

    presenter = enter_presenter(window, theme="dark")    # full screen, chrome hidden, text >= 18 px
    leave_presenter(window)                              # everything back as it was

Works on a :class:`~gpuviz.ui.window.MainWindow` from the outside, through its public parts (``session``,
``actions``, ``docks``, ``transport``, ``menuBar()``, ``statusBar()``):

* full screen (or a given size), menu bar, status bar, transport bar and launch panel hidden;
* high-contrast light and dark themes made for washed-out projectors (Okabe-Ito categories, greys a
  step further from the background than the desk themes' so "idle" and "waiting" stay visible, cividis heat maps);
* every text at least :data:`MIN_TEXT_PX` pixels at 1920x1080: the scale is raised until the smallest
  text in the window (Qt widgets and pyqtgraph items alike, measured by :func:`text_sizes`) reaches it,
  and it can be changed on the fly (Ctrl+= / Ctrl+-, Ctrl+0 back to the automatic scale);
* a caption bar along the bottom with the narration of the current frame (:mod:`gpuviz.model.narration`);
* clicker keys: PageDown / Right next, PageUp / Left back (a lesson's next beat when one plays, else one
  frame), B or . blank screen, Ctrl+T light/dark, Esc leaves (or un-blanks).

The window's own key bindings for those keys are set aside while presenting and given back on leaving.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace

from PySide6.QtCore import QObject, QPoint, QRect, Qt, QTimer
from PySide6.QtGui import QAction, QColor, QFont, QFontMetrics, QKeySequence
from PySide6.QtWidgets import QLabel, QSizePolicy, QToolBar, QVBoxLayout, QWidget
from shiboken6 import isValid

from ..model import playback as pb
from ..model.narration import Narrator
from ..style.theme import DARK, LIGHT, ORANGE_ON_WHITE, Theme, get_theme, state_colours
from .views.base import fit_dock_titles, lines_height, restore_dock_titles, wrapped_text_height

MIN_TEXT_PX = 18
#: the presenter's own keys as the F1 overlay lists them (the KeyOverride below binds them)
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


# ---- measuring text -------------------------------------------------------------------------------
def _font_px(font: QFont, dpi: float = 96.0) -> float:
    if font.pixelSize() > 0:
        return float(font.pixelSize())
    return font.pointSizeF() * dpi / 72.0


_TEXT_WIDGETS: tuple = ()
_NUMBER = re.compile(r"^\s*[-+]?[0-9.,eE+\-…]*\s*$")
_CSS_SIZE = re.compile(r"font-size\s*:\s*([\d.]+)\s*(px|pt)", re.I)


def _text_widget_classes():
    from PySide6.QtWidgets import (QAbstractButton, QAbstractItemView, QAbstractSpinBox, QComboBox, QLineEdit,
                                   QPlainTextEdit, QTabBar, QTextEdit)

    return (QAbstractButton, QAbstractItemView, QAbstractSpinBox, QComboBox, QLineEdit, QPlainTextEdit, QTabBar,
            QTextEdit)


def text_sizes(root: QWidget):
    """Yield ``(pixel size, description)`` of every visible text in ``root``: Qt widgets' fonts, sizes
    written into rich text, and the fonts of pyqtgraph items (TextItem, AxisItem ticks and labels,
    LabelItem, any QGraphics text item)."""
    import pyqtgraph as pg
    from PySide6.QtWidgets import QGraphicsSimpleTextItem, QGraphicsTextItem

    global _TEXT_WIDGETS
    _TEXT_WIDGETS = _text_widget_classes()
    widgets = [root] + root.findChildren(QWidget)
    for w in widgets:
        if not w.isVisibleTo(root) and w is not root:
            continue
        if not w.isVisible():
            continue
        if w is not root and not QRect(w.mapTo(root, QPoint(0, 0)), w.size()).intersects(root.rect()):
            # behind a tab (Qt moves a tabbed dock out of its window rather than hiding it): not on screen, and it
            # restyles when shown. Counted, a hidden view's legend left at the desk's 14 px drove fit_text's scale
            # to 3.2 and the presenting window to 842 px on a 1280x720 screen
            continue
        w.ensurePolished()
        dpi = float(w.logicalDpiY() or 96)
        name = f"{type(w).__name__}#{w.objectName() or '?'}"
        text = ""
        if isinstance(w, QLabel):
            text = w.text()
            if not text.strip():
                continue
        elif isinstance(w, _TEXT_WIDGETS):
            getter = getattr(w, "text", None) or getattr(w, "currentText", None) or getattr(w, "toPlainText", None)
            if getter is not None and callable(getter):
                try:
                    if not str(getter()).strip():
                        continue
                except TypeError:  # a text() that needs arguments (QTabBar): it has tabs, so text
                    pass
        elif not isinstance(w, pg.GraphicsView):
            continue  # containers, frames, splitters, scroll areas: no text of their own
        yield _font_px(w.font(), dpi), name
        for m in _CSS_SIZE.finditer(text):
            v = float(m.group(1))
            yield (v if m.group(2).lower() == "px" else v * dpi / 72.0), f"{name} (rich text)"
        if isinstance(w, pg.GraphicsView):
            scene = w.scene()
            if scene is None:
                continue
            for item in scene.items():
                if not item.isVisible():
                    continue
                if isinstance(item, pg.TextItem):
                    if item.textItem.toPlainText().strip():
                        yield _font_px(item.textItem.font(), dpi), f"{name} TextItem"
                elif isinstance(item, pg.AxisItem):
                    f = item.style.get("tickFont") or w.font()
                    if item.style.get("showValues", True):
                        yield _font_px(f, dpi), f"{name} AxisItem ticks"
                    if item.label.isVisible() and item.label.toPlainText().strip():
                        yield _font_px(item.label.font(), dpi), f"{name} AxisItem label"
                elif isinstance(item, pg.LabelItem):
                    if item.item.toPlainText().strip():
                        yield _label_px(item, dpi), f"{name} LabelItem"
                        for m in _CSS_SIZE.finditer(item.text or ""):
                            v = float(m.group(1))
                            yield (v if m.group(2).lower() == "px" else v * dpi / 72.0), f"{name} LabelItem (rich text)"
                elif isinstance(item, (QGraphicsTextItem, QGraphicsSimpleTextItem)):
                    parent = item.parentItem()
                    if isinstance(parent, (pg.TextItem, pg.LabelItem, pg.AxisItem)):
                        continue  # counted with its owner
                    txt = item.toPlainText() if isinstance(item, QGraphicsTextItem) else item.text()
                    if txt.strip():
                        yield _font_px(item.font(), dpi), f"{name} {type(item).__name__}"


def _label_px(item, dpi: float) -> float:
    """A LabelItem's text size: its ``size`` option (written into its HTML) wins over its item's font."""
    size = item.opts.get("size")
    if size:
        m = re.match(r"\s*([\d.]+)\s*(px|pt)?", str(size))
        if m:
            v = float(m.group(1))
            return v if (m.group(2) or "pt") == "px" else v * dpi / 72.0
    return _font_px(item.item.font(), dpi)


def enforce_min_text(root: QWidget, min_px: float = MIN_TEXT_PX) -> int:
    """Raise every pyqtgraph text in ``root`` smaller than ``min_px`` to ``min_px`` (views size some of
    their labels to fit cells; on a projector a number too small to read is worse than a crowded cell).
    Returns how many items were raised."""
    import pyqtgraph as pg

    raised = 0
    target = int(round(min_px + 0.49))
    for view in root.findChildren(pg.GraphicsView):
        scene = view.scene()
        if scene is None:
            continue
        dpi = float(view.logicalDpiY() or 96)
        for item in scene.items():
            if isinstance(item, pg.TextItem):
                f = item.textItem.font()
                if _font_px(f, dpi) < min_px:
                    if _NUMBER.match(item.textItem.toPlainText()):
                        # a value sized to fit its cell: at projector size it would spill over its
                        # neighbours, so it is left out (the details panel and captions give values)
                        item.setVisible(False)
                        continue
                    f.setPixelSize(target)
                    item.setFont(f)
                    raised += 1
            elif isinstance(item, pg.AxisItem):
                f = QFont(item.style.get("tickFont") or view.font())
                if _font_px(f, dpi) < min_px:
                    f.setPixelSize(target)
                    item.setTickFont(f)
                    raised += 1
                lf = item.label.font()
                if _font_px(lf, dpi) < min_px:
                    lf.setPixelSize(target)
                    item.label.setFont(lf)
                    raised += 1
            elif isinstance(item, pg.LabelItem):
                if _label_px(item, dpi) < min_px:
                    item.setText(item.text, size=f"{target}px")
                    raised += 1
    return raised


def smallest_text(root: QWidget) -> tuple[float, str]:
    """(pixel size, description) of the smallest visible text in ``root``."""
    return min(text_sizes(root), default=(float("inf"), "no text"))


# ---- full screen, with a window manager or without -------------------------------------------------
def show_full_screen(window) -> None:
    """Full screen whatever runs the display. Qt asks the window manager for it (_NET_WM_STATE_FULLSCREEN);
    with none (a bare X server, a kiosk or projector setup) nothing happened and ``--present`` stayed at
    1600x950. The window then also covers its screen by its own geometry, which a window manager that did
    the job leaves as it is. :func:`show_normal` undoes it."""
    from PySide6.QtWidgets import QApplication

    if not is_full_screen(window):
        window._gpuviz_geometry_before_full_screen = window.saveGeometry()
        window._gpuviz_rect_before_full_screen = window.geometry()
    window.showFullScreen()
    window._gpuviz_full_screen = True  # Qt drops its full-screen state when the geometry is set, as below
    screen = window.screen() or QApplication.primaryScreen()
    if screen is not None and window.geometry() != screen.geometry():
        window.setGeometry(screen.geometry())


def is_full_screen(window) -> bool:
    """Full screen by Qt's state or by :func:`show_full_screen`'s geometry (no window manager)."""
    return window.isFullScreen() or bool(getattr(window, "_gpuviz_full_screen", False))


def show_normal(window) -> None:
    """Out of full screen, back to the size and place it had (without a window manager nobody else would)."""
    from PySide6.QtCore import QTimer

    saved = getattr(window, "_gpuviz_geometry_before_full_screen", None)
    rect = getattr(window, "_gpuviz_rect_before_full_screen", None)
    window._gpuviz_full_screen = False
    window.showNormal()
    if saved is not None:
        window._gpuviz_geometry_before_full_screen = window._gpuviz_rect_before_full_screen = None
        put_back_geometry(window, saved, rect)
        # and once more when Qt has handled leaving full screen: with no window manager it put back the
        # screen-sized geometry it recorded while full screen, after ours
        QTimer.singleShot(0, lambda: is_full_screen(window) or put_back_geometry(window, saved, rect))


def put_back_geometry(window, saved, rect=None) -> None:
    """The window where it was: its saved state (maximized or not) from ``saved`` (``saveGeometry()``), then
    exactly the rectangle ``rect`` it had (``geometry()``) unless it is maximized. ``restoreGeometry`` alone
    fits a window whose frame hangs past the screen's edge back inside it: a window made as large as a
    1280x720 screen (its frame then 1282x725, as bench/window_screenshots.sh and a person dragging do) came
    back from presenter mode 5 px lower and 6 px shorter."""
    window.restoreGeometry(saved)
    if rect is not None and rect.isValid() and not window.isMaximized() and window.geometry() != rect:
        window.setGeometry(rect)


# ---- keys taken over while presenting ---------------------------------------------------------------
class KeyOverride:
    """Bind keys to new callbacks on a window, setting aside the window's own actions for those keys
    (two actions on one key would be ambiguous and neither would fire) until :meth:`release`.

    Overrides stack per window (a lesson's clicker keys, then a presenter's on top, or the other way round): the
    latest one holds a key, the ones below get it back as it is released, and the window's own actions get a key
    back only once no override holds it. (Each override used to set aside and give back the shortcuts it found:
    a lesson at the desk took → from Step forward, F5's presenter took it from nobody, and the lesson handing its
    keys to the presenter gave → back to Step forward, beside the presenter's own: 'Ambiguous shortcut overload'.)"""

    def __init__(self, window, bindings: list[tuple[str, tuple[str, ...], object]]):
        self.window = window
        self.actions: dict[str, QAction] = {}
        self._keys: dict[str, list[str]] = {}  # binding name -> its key sequences, as text
        for name, ks, callback in bindings:
            qa = QAction(name, window)
            qa.setObjectName(f"presenter.{name}")
            qa.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            qa.triggered.connect(lambda _c=False, cb=callback: cb())
            window.addAction(qa)
            self.actions[name] = qa
            self._keys[name] = [QKeySequence(k).toString() for k in ks]
        _overrides(window).append(self)
        _rebind(window)

    def trigger(self, name: str) -> None:
        self.actions[name].trigger()

    def release(self) -> None:
        for qa in self.actions.values():
            self.window.removeAction(qa)
            qa.setShortcuts([])
            qa.deleteLater()
        self.actions = {}
        stack = _overrides(self.window)
        if self in stack:
            stack.remove(self)
        _rebind(self.window)


def _overrides(window) -> list[KeyOverride]:
    """The window's live key overrides, oldest first."""
    stack = getattr(window, "_gpuviz_key_overrides", None)
    if stack is None:
        stack = window._gpuviz_key_overrides = []
    return stack


def _rebind(window) -> None:
    """Every key to exactly one action: the latest override that binds it, else the window's own action for it."""
    own = getattr(window, "_gpuviz_own_shortcuts", None)
    if own is None:
        own = window._gpuviz_own_shortcuts = {}
    held: set[str] = set()
    for override in reversed(_overrides(window)):
        for name, qa in override.actions.items():
            mine = [k for k in override._keys[name] if k not in held]
            qa.setShortcuts([QKeySequence(k) for k in mine])
            held.update(mine)
    for qa in QWidget.actions(window):
        if qa.objectName().startswith("presenter."):
            continue
        if qa not in own:
            own[qa] = [s.toString() for s in qa.shortcuts()]
        keep = [QKeySequence(k) for k in own[qa] if k not in held]
        if [s.toString() for s in qa.shortcuts()] != [k.toString() for k in keep]:
            qa.setShortcuts(keep)


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

    def release_height(self) -> None:
        """Another trace: the bar fits its text again (and holds that)."""
        self._held_for = None
        self._fit()

    def _fit(self) -> None:
        """Each label as tall as its wrapped text at the bar's width, and never shorter than the tallest text it
        has had at this width and text size: the caption at least two or three lines. Left to the layout, a toolbar
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
            self._held = (lines_height(self.caption.font(), 2 if inner >= 100 * fm.averageCharWidth() else 3), 0)
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
        self.keys = KeyOverride(window, [
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
            self._narrator = Narrator(s.frames)
        return self._narrator

    def _front_memory(self, f: int) -> None:
        """The view the frame is about in front: shared memory for a shared access, global for a global one,
        the barrier swimlanes at a syncthreads (a shuffle or a start leaves the tab as it is)."""
        from ..model.trace import EventKind as K

        frames = self.session.frames
        if not self._memory_tabs or frames is None or not frames.n_frames:
            return
        kind = int(frames.kind[min(max(f, 0), frames.n_frames - 1)])
        vid = ("shared" if kind in (K.SHARED_LOAD, K.SHARED_STORE) else
               "memory" if kind in (K.GLOBAL_LOAD, K.GLOBAL_STORE, K.ATOMIC) else
               "barriers" if kind == K.BARRIER else None)
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
