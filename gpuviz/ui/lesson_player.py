"""Plays a lesson in the main window: each scene loads its launch, shows its views in its arrangement,
walks its frames beat by beat, and puts its notes and "predict, then reveal" questions in a Lesson panel.

    controller = play_lesson(window, load_lesson("bank_conflicts"), present=True)
    controller.next(); controller.prev()          # what PageDown / PageUp do

The beats and answers come from the Qt-free :class:`~gpuviz.lessons.player.LessonPlayer`; this module
only turns them into window state, through the window's public parts (``session``, ``docks``).
"""

from __future__ import annotations

import html

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QDockWidget, QLabel, QScrollArea, QVBoxLayout, QWidget
from shiboken6 import isValid

from ..lessons.format import Lesson, LessonError
from ..lessons.player import HIDDEN, LessonPlayer
from ..lessons.topics import timings_subject
from .key_override import KeyOverride
from .presenter import enter_presenter, presenter_of
from .views.labels import OneLineLabel, wrapped_text_height


#: the lesson panel's share of the window's width, beside the scene's views
PANEL_SHARE = 0.23
#: presenter mode: the panel at least this wide (a scene's notes, question and answer unscrolled at 1280x720) ...
PRESENTER_PANEL_PX = 460
#: ... but never more than this share of the window
PRESENTER_PANEL_MAX_SHARE = 0.36
#: presenting in a window shorter than this (a 1280x720 projector), a scene of :data:`CROWDED_VIEWS` views or more,
#: the source among them, is laid out as a crowded scene: its other views stacked in one column, the lesson panel
#: over the source in the other. In a grid of four beside the panel each view had 410x260 px, less its title, header
#: and legend: 8 rows of shared-memory banks drew 20 px tall, the barrier swimlanes 58 px, and the source wrapped
#: its code after 25 columns (issue 28). Three views in a focus layout gave the source a 286 px column (15 columns
#: of code, its lit line on 3-6 rows), two in columns 408 px (25 columns): every scene with the source takes it
CROWDED_MAX_HEIGHT = 820
CROWDED_VIEWS = 2
#: a crowded scene of three views: the second under the main view takes what its picture can use, at most this
#: share of the column (the main view, the scene's subject, keeps the larger part)
CROWDED_SECOND_MAX_SHARE = 0.4
#: a crowded scene's column of the lesson panel and the source, as a share of the width: ~45 columns of code; the
#: next share where the scene's notes would leave the source under them less than CROWDED_SOURCE_MIN_PX
CROWDED_SIDE_SHARES = (0.52, 0.56, 0.6)
CROWDED_SOURCE_MIN_PX = 140
#: what the separator between a crowded scene's columns takes of the panel's share at most (2 px of its 4)
CROWDED_SEPARATOR_PX = 4


class LessonPanel(QWidget):
    """Lesson and scene titles, progress, notes, the question and (once revealed) its answer."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("lessonPanel")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 8, 8, 8)
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        self.label = QLabel()
        self.label.setObjectName("lessonText")
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        scroll.setWidget(self.label)
        lay.addWidget(scroll)
        self.plain = ""  # what is shown, as plain text (tests)

    def show_slide(self, slide, theme, with_caption: bool, text_px: int | None = None) -> None:
        """The slide in the panel (:meth:`slide_html` says how)."""
        body, self.plain = self.slide_html(slide, theme, with_caption, text_px)
        self.label.setText(body)

    def text_height(self, slide, theme, with_caption: bool, text_px: int | None, width: int) -> int:
        """The height the panel takes to show ``slide`` whole at ``width`` (its margins and the scroll area's frame
        included), without showing it."""
        body, _plain = self.slide_html(slide, theme, with_caption, text_px)
        probe = QLabel()
        probe.setWordWrap(True)
        probe.setTextFormat(Qt.TextFormat.RichText)
        probe.ensurePolished()
        probe.setFont(self.label.font())
        probe.setText(body)
        m = self.layout().contentsMargins()
        frame = 2 * self.findChild(QScrollArea).frameWidth()
        # as the label in the scroll area asks (QLabel.heightForWidth: a line more than the text's own height at times)
        inner = width - m.left() - m.right() - frame
        return max(probe.heightForWidth(inner), wrapped_text_height(probe, inner)) + m.top() + m.bottom() + frame

    @staticmethod
    def slide_html(slide, theme, with_caption: bool, text_px: int | None = None) -> tuple[str, str]:
        """(rich text, plain text) of ``slide``. ``with_caption`` False: presenter mode, whose caption bar shows the frame's caption and the kernel's
        note under the views; the panel leaves both to it, and the lesson's title (the teacher chose it from the
        Lessons menu), so that a scene's notes, question and answer fit a projector's 1280x720 unscrolled.
        ``text_px``: the notes' size in pixels (presenter mode: its smallest text, so never below its minimum),
        the title a fifth larger and a third of a line between paragraphs (Qt's default is 12 px above and
        below each); None: the window's text size, the title "large"."""
        blank = (f"<span style='background:{theme.selection}; color:{theme.selection_text}; font-weight:bold'>"
                 f"&nbsp;?&nbsp;</span>")

        def e(text: str) -> str:
            # an answer not revealed yet: a filled box with a question mark, the blank a student fills in
            return html.escape(text).replace(html.escape(HIDDEN), blank)

        gap = f" margin:{max(2, text_px // 3)}px 0;" if text_px else ""

        def para(text: str, style: str = "") -> str:
            return f"<p style='{style}{gap}'>{text}</p>" if style or gap else f"<p>{text}</p>"

        # the scene title a step above the notes, not a heading twice their size: at 1280x720 in presenter mode
        # an <h2> took half the panel and pushed the notes below the fold
        title_size = f"{round(text_px * 1.2)}px" if text_px else "large"
        title = f"<p style='font-size:{title_size}; font-weight:bold; margin:4px 0'>{e(slide.scene_title)}"
        if with_caption:
            parts = [f"<div style='color:{theme.muted}'>{e(slide.lesson)} · {e(slide.progress)}</div>", title + "</p>"]
        else:
            # presenting, where the lesson stands follows the title on its last line (on a line of its own only if
            # it does not fit there): a line of the panel over the source, which one Ctrl++ up ran short of it
            where = (f"<span style='font-size:{text_px}px; font-weight:normal; color:{theme.muted};"
                     f" white-space:nowrap'>&nbsp;&nbsp;{e(slide.progress)}</span>") if text_px else ""
            parts = [f"{title}{where}</p>"]
        plain = ([slide.lesson] if with_caption else []) + [slide.progress, slide.scene_title]
        if slide.notes:
            parts.append(para(e(slide.notes)))
            plain.append(slide.notes)
        if slide.question:
            parts.append(para(f"<b>Predict:</b> {e(slide.question)}", f"border:3px solid {theme.selected}; padding:6px;"))
            plain.append("Predict: " + slide.question)
            if slide.answer:
                parts.append(para(f"<b>Answer: {e(slide.answer)}</b>"))
                plain.append("Answer: " + slide.answer)
            else:
                parts.append(para("Think, then click for the answer.", f"color:{theme.muted};"))
        if with_caption and slide.caption:
            parts.append(para(f"<i>{e(slide.caption)}</i>"))
            plain.append(slide.caption)
        if with_caption and slide.kernel_note:
            parts.append(para(e(slide.kernel_note)))
            plain.append(slide.kernel_note)
        body = "".join(parts)
        return (f"<div style='font-size:{text_px}px'>{body}</div>" if text_px else body), "\n".join(plain)


class _ResizeWatch(QObject):
    """Calls ``resized()`` after a resize of any widget it is installed on."""

    def __init__(self, resized):
        super().__init__()
        self._resized = resized

    def eventFilter(self, obj, ev) -> bool:
        if ev.type() == QEvent.Type.Resize:
            self._resized()
        return False


class LessonController:
    """Drives a MainWindow through a lesson. Use :func:`play_lesson`."""

    def __init__(self, window, lesson: Lesson, player: LessonPlayer | None = None):
        self.window = window
        self.lesson = lesson
        self.player = player or LessonPlayer(lesson)
        self.session = window.session
        self._saved_state = window.saveState()
        self._hidden_by_us: list[QDockWidget] = []
        self._minimums: dict = {}
        self.panel = LessonPanel()
        self.dock = QDockWidget("Lesson", window)
        self.dock.setObjectName("dock_lesson")
        self.dock.setWidget(self.panel)
        window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.dock)
        self.keys: KeyOverride | None = None
        self._unobserve = self.player.observe(self._on_player)
        # the panel's colours and (presenting) its text size follow Ctrl+T and Ctrl+= / Ctrl+- at once
        self.session.theme_changed.connect(self._on_theme)
        self.errors: list[str] = []
        self.scene_loaded = -1
        self._tallest: dict[tuple, int] = {}  # (scene, width, text px, theme) -> the panel's height (_tallest_step)
        # a crowded scene's split follows its column's height (_column_resized)
        self._column_height = 0  # the height of the panel's column a crowded scene was last laid out for
        self._refit_asked = False
        self._column_watch = _ResizeWatch(self._column_resized)
        for dock in (self.dock, window.docks.get("source")):
            if dock is not None:
                dock.installEventFilter(self._column_watch)

    # ---- clicker ---------------------------------------------------------------------------------------
    def start(self, scene: int = 0) -> None:
        p = presenter_of(self.window)
        if p is not None:
            self.attach(p)
        else:
            self.keys = KeyOverride(self.window, [("lesson_next", ("PgDown", "Right"), self.next),
                                                  ("lesson_previous", ("PgUp", "Left"), self.prev)])
        self.player.start(scene)

    def attach(self, presenter) -> None:
        """Let a presenter's clicker keys drive this lesson and its caption bar show the slide."""
        if self.keys is not None:
            self.keys.release()
            self.keys = None
        presenter.lesson = self
        presenter.caption_override = self._caption
        presenter.refresh_caption()
        if self.scene_loaded >= 0:
            self._hold_caption_bar()
            self._show_panel()  # in the presenter's form: the caption bar has the caption and the kernel's note
            # F5 while a lesson plays: the panel gets its presenter width now (and again once a window manager has
            # made the window full screen); it kept its desk width, 292 px at 1280x720, and the notes scrolled
            self._widen_for_presenter()
            QTimer.singleShot(0, self._widen_for_presenter)

    def _widen_for_presenter(self) -> None:
        w = self.window
        if presenter_of(w) is None or self.scene_loaded < 0:
            return
        scene = self.player.current.scene
        if self.crowded(scene.views) != self._crowded_now:  # a crowded scene's own layout, now presenting
            self.arrange(scene.views, scene.layout)
            return
        want = self.panel_width(max(w.width(), 800), presenting=True)
        if self.dock.width() < want:
            self._size_docks([w.docks[v] for v in scene.views if v in w.docks], scene.layout)

    def presenter_left(self) -> None:
        """The presenter went away: the lesson keeps the keys itself."""
        if self.keys is None:
            self.keys = KeyOverride(self.window, [("lesson_next", ("PgDown", "Right"), self.next),
                                                  ("lesson_previous", ("PgUp", "Left"), self.prev)])
        if self._crowded_now and self.scene_loaded >= 0:  # the desk lays a crowded scene out as its file says
            scene = self.player.current.scene
            self.arrange(scene.views, scene.layout)
        self._show()

    def next(self) -> bool:
        return self.player.next()

    def prev(self) -> bool:
        return self.player.prev()

    def _caption(self) -> tuple[str, str]:
        return self._caption_of(self.player.slide())

    @staticmethod
    def _caption_of(s) -> tuple[str, str]:
        """What the presenter's caption bar shows at slide ``s``: (caption, note)."""
        if s.question and not s.answer:
            return f"Predict: {s.question}", ""
        return s.caption, s.kernel_note

    def _hold_caption_bar(self) -> None:
        """Presenting, the caption bar held at the tallest caption of the scene's steps (CaptionBar.hold_for)."""
        p = presenter_of(self.window)
        if p is not None and self.session.frames is not None:
            p.caption_bar.hold_for(self._each_step(self._caption_of))

    # ---- scenes ----------------------------------------------------------------------------------------
    def _on_player(self, what: str) -> None:
        if what == "scene":
            self._load_scene()
        self._show()

    def _load_scene(self) -> None:
        loaded = self.player.current
        s = self.session
        s.set_trace(loaded.prepared, f"lesson {self.lesson.name}: {loaded.scene.title}")
        self._hold_caption_bar()  # before the scene's views are sized to the room the bar leaves them
        self.arrange(loaded.scene.views, loaded.scene.layout)
        subject = timings_subject(loaded.scene)
        view = self.window.views.get("timings")
        if subject is not None and view is not None and "timings" in loaded.scene.views:
            # the plot of the timings the notes quote (the fusion set for a * x + b * y, not the a + b one)
            if not view.show_recorded(*subject):
                self.errors.append(f"{self.lesson.where(loaded.scene, 'notes')}: the timings it quotes "
                                   f"({subject[0] or subject[1]}) are not installed")
        self.scene_loaded = self.player.scene_index

    def _show(self) -> None:
        slide = self.player.slide()
        self.session.playback.pause()
        self.session.set_frame(slide.frame)
        open_question = bool(slide.question and not slide.answer)
        self.session.set_predicting(slide.question if open_question else "", slide.hidden_answer)
        p = presenter_of(self.window)
        self._show_panel(slide)
        if p is not None:
            p.refresh_caption()
        elif hasattr(self.window, "_on_frame") and self.session.frames is not None:
            self.window._on_frame(self.session.frame)  # the window's caption line follows the slide (same frame too)
        if self._crowded_now:
            QTimer.singleShot(0, self._refit_crowded)

    def _refit_crowded(self) -> None:
        """A crowded scene's split again, once the caption bar under it has taken its height: Qt shares a change of
        the column's height among its views by their sizes, and gave a block's 8 warps the room the arrays need."""
        self._refit_asked = False
        if self._crowded_now and self.scene_loaded >= 0 and isValid(self.window):
            scene = self.player.current.scene
            self._size_docks([self.window.docks[v] for v in scene.views], scene.layout)

    def _column_resized(self) -> None:
        """The panel's column is no longer as tall as the crowded scene was laid out for: laid out again, once the
        window is done. The top bar settled its height (103 -> 41 px) after simt_hierarchy's first scene was laid
        out, and Qt shared the room among the docks by their sizes: the panel 35 px taller than its text, the
        global arrays 39 px shorter."""
        source = self.window.docks.get("source")
        if (self._crowded_now and not self._refit_asked and source is not None
                and self.dock.height() + source.height() != self._column_height):
            self._refit_asked = True  # once, however many docks the change resizes
            QTimer.singleShot(0, self._refit_crowded)

    def _on_theme(self) -> None:
        if self.scene_loaded >= 0:
            self._show_panel()
            if self._crowded_now:  # Ctrl+= / Ctrl+-: the panel over the source takes its text's new height
                scene = self.player.current.scene
                self._size_docks([self.window.docks[v] for v in scene.views], scene.layout)

    def _show_panel(self, slide=None) -> None:
        """The slide in the lesson panel, in the theme's colours and (presenting) at the presenter's text size."""
        p = presenter_of(self.window)
        # presenting, the panel's first line says where the lesson stands; the dock's "Lesson" title bar above it
        # took a line of the notes' height at 1280x720 (an empty widget in its place hides it; None restores it)
        if (p is not None) != (self.dock.titleBarWidget() is not None):
            self.dock.setTitleBarWidget(QWidget() if p is not None else None)
        self.panel.show_slide(slide or self.player.slide(), self.session.theme, with_caption=p is None,
                              text_px=p.notes_px() if p is not None else None)

    @staticmethod
    def panel_width(width: int, presenting: bool) -> int:
        """The lesson panel's width in a window ``width`` wide: :data:`PANEL_SHARE` of it, and in presenter mode
        at least :data:`PRESENTER_PANEL_PX` (up to :data:`PRESENTER_PANEL_MAX_SHARE`): its text is as large at
        1280x720 as at 1920x1080, so a share of a projector's 1280 pixels held half the notes it holds at 1920."""
        share = int(width * PANEL_SHARE)
        if not presenting:
            return share
        return max(share, min(PRESENTER_PANEL_PX, int(width * PRESENTER_PANEL_MAX_SHARE)))

    def arrange(self, views: list[str], layout: str) -> None:
        """Show exactly ``views`` (plus the lesson panel) in ``layout``: columns, rows, grid or focus."""
        w = self.window
        docks = w.docks
        missing = [v for v in views if v not in docks]
        if missing:
            raise LessonError(f"{self.lesson.where(self.player.current.scene, 'views')}: this window has no view "
                              f"{', '.join(map(repr, missing))}; it has {', '.join(k for k in docks if k != 'launch')}")
        for vid, d in docks.items():
            if vid not in views and d.isVisible():
                d.hide()
                self._hidden_by_us.append(d)
        if not views:
            return
        shown = [docks[v] for v in views]
        # a view's own minimum width (long legends, axis labels) must not push the window past the
        # projector's width when several stand side by side: relax it while the lesson plays
        for d in shown:
            view = d.widget()
            if view is not None and view not in self._minimums and (view.minimumWidth(), view.minimumHeight()) != (120, 80):
                self._minimums[view] = view.minimumSize()
                view.setMinimumSize(120, 80)
        for d in shown + [self.dock]:
            w.removeDockWidget(d)
        self._crowded_now = self.crowded(views)
        self._compact_views(views if self._crowded_now else [])
        self.panel.setMinimumHeight(0)  # a crowded scene's own (_size_crowded)
        if self._crowded_now:
            self._place_crowded(shown)
        else:
            self._place(shown, layout)
        for d in shown + [self.dock]:
            d.show()
        p = presenter_of(w)
        if p is not None and p.size is not None:
            w.resize(*p.size)
        self._size_docks(shown, layout)
        if hasattr(w, "_hide_stale_tab_bars"):  # the tabs of the docks set aside must not float over a view
            QTimer.singleShot(0, w._hide_stale_tab_bars)

    _crowded_now = False

    def crowded(self, views: list[str]) -> bool:
        """Whether a scene of ``views`` is laid out as a crowded scene now (see :data:`CROWDED_MAX_HEIGHT`)."""
        p = presenter_of(self.window)
        if p is None or len(views) < CROWDED_VIEWS or "source" not in views:
            return False
        height = p.size[1] if p.size is not None else self.window.height()
        return height < CROWDED_MAX_HEIGHT

    def _compact_views(self, views: list[str]) -> None:
        """``views`` with their chrome on one line (:meth:`TraceView.set_compact`), the others as they were."""
        for vid, dock in self.window.docks.items():
            view = dock.widget()
            # a view without a caption or header to lead with its title (Timings, Details) keeps its title bar
            if not hasattr(view, "set_compact") or not view.findChildren(OneLineLabel):
                continue
            compact = vid in views
            view.set_compact(compact)
            # its title leads its header's line instead: a title bar took 30 of a stacked view's ~185 px
            if compact != (dock.titleBarWidget() is not None):
                dock.setTitleBarWidget(QWidget() if compact else None)

    def _place_crowded(self, shown: list[QDockWidget]) -> None:
        """A crowded scene: its views but the source stacked on the left, the lesson panel over the source on the
        right (the views of a lesson's crowded scenes are wide and short: 8 warps, 8 rows of 32 banks)."""
        w = self.window
        source = w.docks["source"]
        others = [d for d in shown if d is not source]
        w.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, others[0])
        for a, b in zip(others, others[1:]):
            w.splitDockWidget(a, b, Qt.Orientation.Vertical)
        w.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.dock)
        w.splitDockWidget(self.dock, source, Qt.Orientation.Vertical)

    def _place(self, shown: list[QDockWidget], layout: str) -> None:
        """``shown`` in ``layout`` on the left, the lesson panel on the right."""
        w = self.window
        w.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, shown[0])
        H, V = Qt.Orientation.Horizontal, Qt.Orientation.Vertical
        if layout == "columns":
            for a, b in zip(shown, shown[1:]):
                w.splitDockWidget(a, b, H)
        elif layout == "rows":
            for a, b in zip(shown, shown[1:]):
                w.splitDockWidget(a, b, V)
        elif layout == "grid":
            top = shown[0::2]
            for a, b in zip(top, top[1:]):
                w.splitDockWidget(a, b, H)
            for i, d in enumerate(shown[1::2]):
                w.splitDockWidget(top[i], d, V)
        else:  # focus: the first view large on the left, the others stacked on its right
            if len(shown) > 1:
                w.splitDockWidget(shown[0], shown[1], H)
                for a, b in zip(shown[1:], shown[2:]):
                    w.splitDockWidget(a, b, V)
        w.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.dock)

    def _size_docks(self, shown: list[QDockWidget], layout: str) -> None:
        """The widths (and a focus layout's heights) of the scene's views and the lesson panel."""
        w = self.window
        H, V = Qt.Orientation.Horizontal, Qt.Orientation.Vertical
        width = max(w.width(), 800)
        if self._crowded_now:
            self._size_crowded(shown, width)
            return
        panel = self.panel_width(width, presenting=presenter_of(w) is not None)
        rest = width - panel
        if layout == "focus" and len(shown) > 1:
            w.resizeDocks([shown[0], shown[1], self.dock], [int(rest * 0.65), int(rest * 0.35), panel], H)
            stacked = shown[1:]
            if len(stacked) > 1:  # the stacked views share the height evenly
                h = max(w.height(), 600)
                w.resizeDocks(stacked, [h // len(stacked)] * len(stacked), V)
        elif layout in ("columns", "grid"):
            cols = shown if layout == "columns" else shown[0::2]
            share = int(rest / len(cols))
            w.resizeDocks(cols + [self.dock], [share] * len(cols) + [panel], H)
            if layout == "grid":  # each column's two views share its height evenly: Qt split it by their size
                # hints, which left a lesson's Timings chart (host_device_flow at 1280x720) ~40 px under the grid
                h = max(w.height(), 600)
                for top, below in zip(shown[0::2], shown[1::2]):
                    w.resizeDocks([top, below], [h // 2, h // 2], V)

    def _size_crowded(self, shown: list[QDockWidget], width: int) -> None:
        """A crowded scene's columns: :data:`CROWDED_SIDE_SHARES` of the width for the panel and the source, the
        panel as tall as the scene's tallest step needs (the source under it does not move from step to step),
        the other views sharing their column's height evenly."""
        w = self.window
        H, V = Qt.Orientation.Horizontal, Qt.Orientation.Vertical
        source = w.docks["source"]
        others = [d for d in shown if d is not source]
        w.layout().activate()  # the docks just placed laid out now: their heights are the column's
        height = max(self.dock.height() + source.height(), 400) if self.dock.height() > 0 else max(w.height(), 600)
        self._column_height = self.dock.height() + source.height()
        # wider where the panel's text needs it (Ctrl+=): at 1280x720 one step larger it ran 62 px below the panel;
        # measured less the separator's part of the share (bank_conflicts' second scene chose 665 px, got 663 and
        # its answer ran 2 px below the panel)
        for share in CROWDED_SIDE_SHARES:
            side = int(width * share)
            if self._tallest_step(side - CROWDED_SEPARATOR_PX) <= height - CROWDED_SOURCE_MIN_PX:
                break
        w.resizeDocks([others[0], self.dock], [width - side, side], H)
        # measured at the width the panel got (the separator takes 2 px of the share): custom_kernel's fused scene
        # held at 665 px wide took a line more at 663, and its answer ran 21 px below the panel
        w.layout().activate()
        side = self.dock.width() or side
        if len(others) > 1:
            w.resizeDocks(others, self._stacked_heights(others, height, width - side), V)
            w.layout().activate()
        panel = min(self._tallest_step(side), height - CROWDED_SOURCE_MIN_PX)
        if len(others) <= 2:
            # the scene's main view stays the largest thing on screen: a short note leaves the source no more
            # area than the main view has (the panel keeps the rest, blank under its text)
            main = others[0].width() * others[0].height()
            panel = max(panel, height - max(CROWDED_SOURCE_MIN_PX, main // max(source.width(), side)))
        # held: the caption bar taking a line more took it from the panel (Qt shrinks a column's docks by their
        # order), whose answer then scrolled; the source under it gives the line up instead
        self.panel.setMinimumHeight(panel)
        w.resizeDocks([self.dock, source], [panel, height - panel], V)

    @staticmethod
    def _stacked_heights(docks: list[QDockWidget], height: int, width: int) -> list[int]:
        """The heights of a crowded scene's stacked views in a column ``height`` tall: an even share each, but no
        more than a view's picture can use (:meth:`TraceView.stacked_height`: a block's 8 warps, a grid of 4
        blocks); what those leave goes to the others (shared memory's banks, the barrier swimlanes, the arrays).
        Two (a scene of three views): the first, the scene's subject, takes what the second leaves, and the second
        no more than :data:`CROWDED_SECOND_MAX_SHARE` of the column."""
        if len(docks) == 1:
            return [height]
        if len(docks) == 2:
            want = getattr(docks[1].widget(), "stacked_height", lambda _w: None)(width)
            second = min(want or height, int(height * CROWDED_SECOND_MAX_SHARE))
            return [height - second, second]
        share = height // len(docks)
        wants = [getattr(d.widget(), "stacked_height", lambda _w: None)(width) for d in docks]
        capped = [min(share, want) if want else None for want in wants]
        free = [i for i, c in enumerate(capped) if c is None]
        if not free:
            return [share] * len(docks)
        rest = (height - sum(c for c in capped if c is not None)) // len(free)
        return [c if c is not None else rest for c in capped]

    def _tallest_step(self, width: int) -> int:
        """The height the lesson panel takes at ``width`` for the tallest step of the scene (an answer revealed
        adds lines: held from the first step, the views do not move at the reveal)."""
        p = presenter_of(self.window)
        self.panel.label.ensurePolished()
        key = (self.player.scene_index, width, p.notes_px() if p is not None else None, self.session.theme.name,
               self.panel.label.font().key())
        if key in self._tallest:
            return self._tallest[key]
        heights = self._each_step(lambda slide: self.panel.text_height(
            slide, self.session.theme, with_caption=p is None, text_px=p.notes_px() if p is not None else None,
            width=width))
        self._tallest[key] = max(heights, default=0)
        return self._tallest[key]

    def _each_step(self, of_slide) -> list:
        """``of_slide(slide)`` at each step of the scene, the player put back at the step it is at."""
        player, keep = self.player, self.player.beat_index
        try:
            out = []
            for i in range(len(player.current.beats)):
                player.beat_index = i
                out.append(of_slide(player.slide()))
            return out
        finally:
            player.beat_index = keep

    # ---- the end -----------------------------------------------------------------------------------------
    def stop(self) -> None:
        """Leave the lesson: the window's docks and keys as they were."""
        self._unobserve()
        for dock in (self.dock, self.window.docks.get("source")):
            if dock is not None and isValid(dock):
                dock.removeEventFilter(self._column_watch)
        try:
            self.session.theme_changed.disconnect(self._on_theme)
        except (RuntimeError, TypeError):  # already gone with the window
            pass
        self.session.set_predicting("")
        if self.keys is not None:
            self.keys.release()
            self.keys = None
        p = presenter_of(self.window)
        if p is not None and p.lesson is self:
            p.lesson = None
            p.caption_override = None
            p.caption_bar.hold_for(())  # the frames' own captions again: two or three lines held
        self._compact_views([])
        self.window.removeDockWidget(self.dock)
        self.dock.deleteLater()
        for d in self._hidden_by_us:
            d.show()
        for view, size in self._minimums.items():
            view.setMinimumSize(size)
        self.window.restoreState(self._saved_state)


def play_lesson(window, lesson: Lesson, present: bool = False, theme: str = "dark", scale: float | None = None,
                size=None, player: LessonPlayer | None = None) -> LessonController:
    """Start ``lesson`` in ``window`` (optionally in presenter mode); returns its controller."""
    if present:
        enter_presenter(window, theme=theme, scale=scale, size=size)
    controller = LessonController(window, lesson, player)
    window._gpuviz_lesson = controller
    controller.start()
    return controller
