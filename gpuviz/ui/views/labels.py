"""Labels whose text changes every frame without laying the window out again, and the heights wrapped text takes.

:class:`LabelSlot` (and :func:`slotted`) stands in a layout for a label whose text changes per frame (a caption, a
counter) and passes a change on only when the room the label asks for changes; :class:`WrappedLabel` keeps its
height per width; :func:`wrapped_text_height` and :func:`lines_height` measure wrapped text as a QTextDocument does
(the views keep their captions whole with them, and presenter mode fits its caption bar).
"""

from __future__ import annotations

from html import escape as html_escape

from PySide6 import QtGui
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QLabel, QWidget

from ..plaintext import plain_tooltip


class LabelSlot(QWidget):
    """Stands in a layout for one QLabel whose text changes every frame (a caption, a counter), its child.

    A QLabel's new text asks the layouts above it to run again (Qt's updateGeometry), and they ask theirs:
    the view's, its dock's (which loads the dock title's icons again) and the main window's, for every label
    on every frame, though the text nearly always fits the room it has. The label here has no layout above
    it: the slot sizes it by hand, and passes a change on to its own layout only when the room the label
    asks for differs (its size hints, its height at the slot's width, its minimum and maximum sizes)."""

    def __init__(self, label: QLabel, parent: QWidget | None = None):
        super().__init__(parent if parent is not None else label.parentWidget())
        hidden = label.isHidden() and label.testAttribute(Qt.WidgetAttribute.WA_WState_ExplicitShowHide)
        self.label = label
        label.setParent(self)
        label.move(0, 0)
        self._hints = None
        self.setVisible(not hidden)
        label.setVisible(not hidden)
        label.installEventFilter(self)
        self.sync()

    def _room(self) -> tuple:
        lab = self.label
        lo, hi = lab.minimumSize(), lab.maximumSize()
        if lab.hasHeightForWidth():
            # a wrapped text: the height it needs at the width it has (none, at a fixed height); its size hints
            # (the size it would like unwrapped, the width of its longest word) go with every text and place
            # nothing in a laid-out window
            fixed = lo.height() == hi.height()
            return (lo, hi, lab.sizePolicy(), -1 if fixed or self.width() <= 0 else lab.heightForWidth(self.width()))
        return (lo, hi, lab.sizePolicy(), lab.sizeHint().expandedTo(lo).boundedTo(hi),
                lab.minimumSizeHint().expandedTo(lo).boundedTo(hi))

    def sync(self) -> None:
        """Pass the label's room on to the layout now if it changed (after setting the label's minimum size: the
        layout may be asked for its size before the posted request arrives)."""
        room = self._room()
        if room != self._hints:
            self._hints = room
            lab = self.label
            self.setSizePolicy(lab.sizePolicy())
            self.setMinimumSize(lab.minimumSize())
            self.setMaximumSize(lab.maximumSize())
            self.updateGeometry()

    # the label's room, as the layout asks for it
    def sizeHint(self):
        return self.label.sizeHint()

    def minimumSizeHint(self):
        return self.label.minimumSizeHint()

    def hasHeightForWidth(self) -> bool:
        lab = self.label
        return lab.hasHeightForWidth() and lab.minimumHeight() != lab.maximumHeight()  # a fixed height is fixed

    def heightForWidth(self, width: int) -> int:
        # within the label's own minimum and maximum height, as they are now: the slot's copies of them follow only
        # once the label's posted LayoutRequest arrives (sync). Unbounded, the top bar's two fixed-height lines of
        # text, asked their height at 19 px wide while the window's first layout ran, answered 464 and 364 px: the
        # window's minimum height passed a 720-pixel screen for a moment, and Qt grew the window to it
        # (1767x1241 for 1767x900; 1280x1265 on a 1280x720 screen)
        lab = self.label
        return max(lab.minimumHeight(), min(lab.maximumHeight(), lab.heightForWidth(width)))

    def event(self, ev) -> bool:
        if ev.type() == QEvent.Type.LayoutRequest:  # posted by the label's updateGeometry: did its room change?
            self.sync()
            return True
        return super().event(ev)

    def resizeEvent(self, ev) -> None:
        super().resizeEvent(ev)
        self.label.setGeometry(self.rect())
        self.sync()  # at the new width the label may need another height

    def showEvent(self, ev) -> None:
        super().showEvent(ev)
        self.sync()  # texts set while hidden posted nothing

    def eventFilter(self, obj, ev) -> bool:
        # the label shown or hidden by its owner: so is its place in the layout
        if obj is self.label:
            if ev.type() == QEvent.Type.ShowToParent and self.isHidden():
                self.show()
            elif ev.type() == QEvent.Type.HideToParent and not self.isHidden():
                self.hide()
        return False


class WrappedLabel(QLabel):
    """A word-wrapped QLabel that keeps its height at each width it was asked for, while its text, font and margins
    stay the same.

    QLabel lays its text out again (a QTextDocument, for rich text) on every ``heightForWidth``, and a layout asks at
    several widths per relayout: a scroll area that fits its widget's height asks once with its scroll bar and once
    without, and again for the widget's minimum size (the Details view's two labels: ~7% of a window resize's CPU)."""

    def heightForWidth(self, width: int) -> int:
        m = self.contentsMargins()
        key = (width, self.text(), self.font().key(), self.textFormat(), self.margin(), self.indent(), m.left(),
               m.top(), m.right(), m.bottom())
        cache = self.__dict__.setdefault("_heights", {})
        height = cache.get(key)
        if height is None:
            if len(cache) >= 16:
                cache.clear()
            height = cache[key] = super().heightForWidth(width)
        return height


def slotted(label: QLabel) -> LabelSlot:
    """``label`` in a :class:`LabelSlot`, to add to a layout in its place."""
    return LabelSlot(label)


def lines_height(font, lines: int) -> int:
    """The height ``lines`` lines of text take in ``font``, measured as :func:`wrapped_text_height` measures (a
    QTextDocument: a few pixels more than ``lines`` line spacings, so a floor of line spacings grew by them)."""
    doc = QTextDocument()
    doc.setDefaultFont(font)
    doc.setDocumentMargin(0)
    doc.setPlainText("\n".join(["Xg"] * max(lines, 1)))
    return int(doc.size().height() + 0.999)


def wrapped_text_height(label: QLabel, width: int) -> int:
    """The height ``label``'s text takes wrapped at ``width`` (QLabel.heightForWidth over-asks, by lines)."""
    label.ensurePolished()
    text, font, fmt = label.text(), label.font(), label.textFormat()
    cr = label.contentsMargins()
    # a window resized back and forth (a dragged edge) asks for the same captions at the same widths again, each a
    # QTextDocument laid out: the height is kept by what it depends on alone
    key = (text, font.key(), fmt, width, cr.left(), cr.top(), cr.right(), cr.bottom(), label.margin())
    known = _WRAPPED_HEIGHTS.get(key)
    if known is not None:
        return known
    doc = QTextDocument()
    doc.setDefaultFont(font)
    doc.setDocumentMargin(0)
    rich = fmt == Qt.TextFormat.RichText or (fmt == Qt.TextFormat.AutoText and QtGui.Qt.mightBeRichText(text))
    doc.setHtml(text) if rich else doc.setPlainText(text)
    doc.setTextWidth(max(1, width - cr.left() - cr.right() - 2 * label.margin()))
    height = int(doc.size().height() + 0.999) + cr.top() + cr.bottom() + 2 * label.margin()
    if len(_WRAPPED_HEIGHTS) >= 512:
        _WRAPPED_HEIGHTS.pop(next(iter(_WRAPPED_HEIGHTS)))  # the oldest
    _WRAPPED_HEIGHTS[key] = height
    return height


_WRAPPED_HEIGHTS: dict[tuple, int] = {}



class OneLineLabel(QLabel):
    """A label that can be told to take one line (:meth:`set_one_line`): presenting a crowded lesson scene at a
    projector's 1280x720, a view's caption and header took two to four lines of a ~185-pixel view and left its plot
    none. On one line, the text shown is the text set (rich text as plain words) cut with an ellipsis to the
    label's width, and the whole of it is the label's tooltip; :meth:`full_text` is always the text set."""

    _one_line = False
    _full = ""
    _wrapped = True  # the word wrap to go back to
    _lead = ""  # on one line: what the line starts with, in bold (the view's title, its dock's title bar hidden)

    def setText(self, text: str) -> None:
        self._full = text
        super().setText(self._fitted(text) if self._one_line else text)

    def full_text(self) -> str:
        return self._full if self._one_line else self.text()

    def one_line(self) -> bool:
        return self._one_line

    def set_one_line(self, on: bool, lead: str = "") -> None:
        if on == self._one_line and (lead == self._lead or not on):
            return
        full = self.full_text()
        self._lead = lead if on else ""
        if on:
            self._wrapped = self.wordWrap()
            self.setMinimumHeight(0)  # the wrapped height a view kept for it (TraceView.keep_labels_whole)
        self._one_line = on
        self.setWordWrap(self._wrapped and not on)
        self.setToolTip(plain_tooltip(self._plain(full)) if on else "")
        self.setText(full)

    def _plain(self, text: str) -> str:
        rich = self.textFormat() == Qt.TextFormat.RichText or (
            self.textFormat() == Qt.TextFormat.AutoText and QtGui.Qt.mightBeRichText(text))
        if not rich:
            return " ".join(text.split())
        doc = QTextDocument()
        doc.setHtml(text)
        return " ".join(doc.toPlainText().split())

    def _fitted(self, text: str) -> str:
        """``text`` as one line of plain words that fits the label's width (an ellipsis where it is cut)."""
        plain = self._plain(text)
        self.setToolTip(plain_tooltip(plain))  # shown literally: names from a trace file are never markup
        m = self.contentsMargins()
        room = self.width() - m.left() - m.right() - 2 * self.margin() - 2
        rich = self.textFormat() == Qt.TextFormat.RichText
        lead = f"{self._lead} · " if self._lead else ""
        if lead:
            bold = QtGui.QFont(self.font())
            bold.setBold(True)
            room -= QtGui.QFontMetrics(bold).horizontalAdvance(lead)
        fitted = QtGui.QFontMetrics(self.font()).elidedText(plain, Qt.TextElideMode.ElideRight, max(room, 1))
        if not rich:
            return lead + fitted
        return (f"<b>{html_escape(lead)}</b>" if lead else "") + html_escape(fitted)

    def resizeEvent(self, ev) -> None:
        super().resizeEvent(ev)
        if self._one_line and ev.size().width() != ev.oldSize().width():
            QLabel.setText(self, self._fitted(self._full))

    def changeEvent(self, ev) -> None:
        super().changeEvent(ev)
        if self._one_line and ev.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            QLabel.setText(self, self._fitted(self._full))
