"""The main window's top bar (what happens at this frame and why), its notices and warnings rows, the badge of where
the trace came from, and the status line's permanent labels (a mixin of :class:`~gpuviz.ui.window.MainWindow`).

The frame's text and its caption keep room for two lines (three in a narrow bar) and grow, once, for a text that
needs more: their height never follows the text frame by frame, which would lay the whole window out again.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QLabel, QSizePolicy, QToolBar, QToolButton, QVBoxLayout, QWidget

from ..style.theme import OKABE_ITO
from .docks import presenting
from .views.details import trace_origin_short
from .views.labels import OneLineLabel, slotted


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


class TopBarMixin:
    """The top bar, notices, warnings and status labels of :class:`~gpuviz.ui.window.MainWindow`."""

    def _build_top_bar(self) -> None:
        """The top bar, the notices and warnings rows under it, and the status line's labels."""
        self._build_now_bar()
        self._build_notice_bar()
        self._build_warning_bar()
        self._build_status_labels()

    def _build_now_bar(self) -> None:
        """What happens at this frame, why it matters, and the badge of where the trace came from."""
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

    def _message_bar(self, title: str, label_name: str, style: str, dismiss) -> tuple[QToolBar, QLabel]:
        """A row of its own under the top bar, hidden until it has something to say: a wrapped plain-text label
        (text from the trace file: never rich text) and a Dismiss button that calls ``dismiss``."""
        self.addToolBarBreak(Qt.ToolBarArea.TopToolBarArea)
        bar = QToolBar(title, self)
        bar.setObjectName(f"toolbar_{title.lower()}")
        bar.setMovable(False)
        label = QLabel("", bar)
        label.setObjectName(label_name)
        label.setTextFormat(Qt.TextFormat.PlainText)
        label.setWordWrap(True)
        label.setStyleSheet(style)
        label.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        bar.addWidget(label)
        button = QToolButton(bar)
        button.setText("Dismiss")
        button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        button.clicked.connect(dismiss)
        bar.addWidget(button)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, bar)
        bar.hide()
        return bar, label

    def _build_notice_bar(self) -> None:
        # notices: a second row, shown only while there is one
        self.notice_bar, self.notice_label = self._message_bar("Notice", "noticeText", _NOTICE_STYLE,
                                                               self.clear_notice)

    def _build_warning_bar(self) -> None:
        # warnings about the trace on screen (races, uninitialised reads, an untraced launch): a row of their
        # own, shown while that trace is on screen, so that a notice never hides them
        self.warning_bar, self.warning_label = self._message_bar("Warnings", "warningText", _WARNING_STYLE,
                                                                 lambda: self.warning_bar.hide())
        self.trace_warnings: list = []  # gpuviz.model.analysis.TraceWarning of the trace on screen

    def _build_status_labels(self) -> None:
        # where the trace came from, always in the status line (a permanent widget: messages do not cover it)
        self.origin_status = QLabel("", self)
        self.origin_status.setObjectName("originStatus")
        self.origin_status.setTextFormat(Qt.TextFormat.PlainText)  # text from the trace file: never rich text
        self.statusBar().addPermanentWidget(self.origin_status)
        # what the trace on screen is, at the left of the status line: a widget, not a message. A message with no
        # time limit was wiped by the first menu opened (its items' empty status tips) and never came back; a
        # message shown now covers this widget and hands the line back to it when it ends
        self.summary_status = OneLineLabel("", self)
        self.summary_status.setObjectName("summaryStatus")
        self.summary_status.setTextFormat(Qt.TextFormat.PlainText)  # text from the trace file: never rich text
        # the room the origin leaves, cut with an ellipsis (the whole line in its tooltip): at 1280x720 a GPU
        # recording's long origin cut the summary mid-word ("36 fram recorded on NVIDIA H200 ...")
        self.summary_status.set_one_line(True)
        self.summary_status.setMinimumWidth(0)
        self.summary_status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.statusBar().addWidget(self.summary_status, 1)

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

    def _style_badge(self) -> None:
        tr = self.session.trace
        if tr is None:
            self.origin_badge_action.setVisible(False)
            return
        L = tr.launch
        bg, fg = _BADGE_COLOURS.get(L.backend, (self.session.theme.grid, self.session.theme.foreground))
        t = self.session.theme
        # presenting, what made the trace and not when: at 1280x720 one Ctrl++ up the date took the room the frame's
        # title needs for its one line ('block (0,0) · warp 7 · phase 1 of 5 · step 6 · line 45' took two, 34 px)
        self.origin_badge.setText(trace_origin_short(L, self.is_live_trace(tr), when=presenting(self) is None))
        self.origin_badge.setStyleSheet(f"background: {bg}; color: {fg}; border-radius: {t.px(4)}px; "
                                        f"padding: {t.px(3)}px {t.px(10)}px; font-weight: bold;")
        self.origin_badge_action.setVisible(True)

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
            if label is self.frame_text and presenting(self) is not None:
                lines = 1  # presenting, the title is one line of where (see _on_frame); grown if it ever wraps
            label.setFixedHeight(self._now_label_height(label, pad, lines))

    def _grow_now_labels(self) -> None:
        """A frame's text that needs more lines than its label holds gets them (never cut off; a barrier opening
        takes three lines in a 1176-pixel bar); the labels do not shrink back on the next frame."""
        for label, pad in self._now_labels():
            need = self._now_label_height(label, pad)
            if need > label.height():
                label.setFixedHeight(need)
