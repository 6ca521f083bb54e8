"""The text sizes a window shows: every visible text's pixel size (Qt widgets, sizes written into rich text,
pyqtgraph items), the smallest of them, and pyqtgraph texts raised to a floor.

Presenter mode fits its scale with them (no text under :data:`MIN_TEXT_PX` at 1920x1080); the tests check every
window and view with them.
"""

from __future__ import annotations

import re

import pyqtgraph as pg
from PySide6.QtCore import QPoint, QRect
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (QAbstractButton, QAbstractItemView, QAbstractSpinBox, QComboBox, QGraphicsSimpleTextItem,
                               QGraphicsTextItem, QLabel, QLineEdit, QPlainTextEdit, QTabBar, QTextEdit, QWidget)

#: presenter mode's smallest text, in pixels at 1920x1080
MIN_TEXT_PX = 18


def _font_px(font: QFont, dpi: float = 96.0) -> float:
    if font.pixelSize() > 0:
        return float(font.pixelSize())
    return font.pointSizeF() * dpi / 72.0


#: widgets whose text is their own (a label's is read as rich text too)
_TEXT_WIDGETS = (QAbstractButton, QAbstractItemView, QAbstractSpinBox, QComboBox, QLineEdit, QPlainTextEdit, QTabBar,
                 QTextEdit)
_NUMBER = re.compile(r"^\s*[-+]?[0-9.,eE+\-…]*\s*$")
_CSS_SIZE = re.compile(r"font-size\s*:\s*([\d.]+)\s*(px|pt)", re.I)


def text_sizes(root: QWidget):
    """Yield ``(pixel size, description)`` of every visible text in ``root``: Qt widgets' fonts, sizes
    written into rich text, and the fonts of pyqtgraph items (TextItem, AxisItem ticks and labels,
    LabelItem, any QGraphics text item)."""
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
