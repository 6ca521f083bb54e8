"""What a person sees, checked: the helpers of the acceptance layer (tests/test_acceptance.py).

Each check returns a list of problems in words ("" free), so a failing test says what is wrong where:
text wider than its label, labels on top of each other, tick labels that overlap, a source view too
narrow to read, a shortcuts overlay that does not fit, text a projector washes out (contrast under 4.5:1).
Everything is read from the widgets as they are laid out and, for colours, from the pixels drawn.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPoint, QRect, QRectF, Qt
from PySide6 import QtGui
from PySide6.QtGui import QFontMetrics, QImage, QPainter, QTextDocument
from PySide6.QtTest import QTest
from PySide6.QtWidgets import (QAbstractItemView, QAbstractScrollArea, QApplication, QLabel, QPlainTextEdit,
                               QWidget)

MIN_CONTRAST = 4.5


def settle(n: int = 3) -> None:
    for _ in range(n):
        QApplication.processEvents()


def shown(w: QWidget) -> bool:
    """On screen: visible and not hidden behind another dock tab or clipped away entirely."""
    return w.isVisible() and not w.visibleRegion().isEmpty()


def name_of(w) -> str:
    parts = []
    while w is not None and len(parts) < 4:
        n = w.objectName() or type(w).__name__
        parts.append(n)
        w = w.parentWidget() if isinstance(w, QWidget) else None
    return "/".join(reversed(parts))


# ---- contrast ---------------------------------------------------------------------------------------------
def _lum(rgb) -> float:
    c = np.asarray(rgb, dtype=float) / 255.0
    c = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return float(0.2126 * c[..., 0] + 0.7152 * c[..., 1] + 0.0722 * c[..., 2])


def contrast(a, b) -> float:
    la, lb = _lum(a), _lum(b)
    hi, lo = max(la, lb), min(la, lb)
    return (hi + 0.05) / (lo + 0.05)


def hex_rgb(h: str):
    h = h.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def image_array(img: QImage) -> np.ndarray:
    img = img.convertToFormat(QImage.Format.Format_RGB888)
    w, h, bpl = img.width(), img.height(), img.bytesPerLine()
    buf = np.frombuffer(img.constBits(), dtype=np.uint8, count=h * bpl).reshape(h, bpl)
    return buf[:, : w * 3].reshape(h, w, 3).copy()


def text_contrast(pixels: np.ndarray) -> float:
    """Contrast of the text in a patch of pixels against its background: the background is the commonest
    colour, the text the pixels farthest from it (glyph cores; antialiased edges lie in between)."""
    flat = pixels.reshape(-1, 3)
    if len(flat) == 0:
        return float("inf")
    keys = (flat[:, 0].astype(np.int64) << 16) | (flat[:, 1].astype(np.int64) << 8) | flat[:, 2]
    vals, counts = np.unique(keys, return_counts=True)
    bg_key = vals[np.argmax(counts)]
    bg = np.array([(bg_key >> 16) & 255, (bg_key >> 8) & 255, bg_key & 255])
    others = flat[keys != bg_key]
    if len(others) == 0:
        return float("inf")  # nothing drawn on it
    lb = _lum(bg)
    c = others.astype(float) / 255.0
    c = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    lo = 0.2126 * c[:, 0] + 0.7152 * c[:, 1] + 0.0722 * c[:, 2]
    ratio = (np.maximum(lo, lb) + 0.05) / (np.minimum(lo, lb) + 0.05)
    return float(ratio.max())


# ---- labels ---------------------------------------------------------------------------------------------
def _label_text_size(label: QLabel, width: int | None) -> tuple[float, float]:
    """(width, height) the label's text needs; ``width``: wrap at it."""
    text = label.text()
    rich = label.textFormat() == Qt.TextFormat.RichText or (
        label.textFormat() == Qt.TextFormat.AutoText and QtGui.Qt.mightBeRichText(text))
    doc = QTextDocument()
    doc.setDefaultFont(label.font())
    doc.setDocumentMargin(0)
    if rich:
        doc.setHtml(text)
    else:
        doc.setPlainText(text)
    if width is not None:
        doc.setTextWidth(width)
        return doc.idealWidth(), doc.size().height()
    fm = QFontMetrics(label.font())
    if not rich:
        lines = text.split("\n")
        return max(fm.horizontalAdvance(s) for s in lines), fm.lineSpacing() * len(lines)
    return doc.idealWidth(), doc.size().height()


#: the symbols legends put before their labels (a colour chip drawn as text)
CHIPS = "■□▮◣┆"


def chip_breaks(label: QLabel, width: int) -> list[str]:
    """The lines of ``label``'s rich text wrapped at ``width`` that end on a legend chip (the chip on one line,
    what it means on the next)."""
    doc = QTextDocument()
    doc.setDefaultFont(label.font())
    doc.setDocumentMargin(0)
    doc.setHtml(label.text())
    doc.setTextWidth(width)
    doc.size()  # lays the text out (its blocks have no lines before)
    out = []
    block = doc.begin()
    while block.isValid():
        layout, text = block.layout(), block.text()
        for k in range(layout.lineCount()):
            line = layout.lineAt(k)
            row = text[line.textStart():line.textStart() + line.textLength()].rstrip(" \u00a0")
            if row and row[-1] in CHIPS:
                out.append(row)
        block = block.next()
    return out


def chip_problems(root: QWidget) -> list[str]:
    """Wrapped legend labels, as laid out now, with a line that ends on a chip."""
    out = []
    for lb in root.findChildren(QLabel):
        if shown(lb) and lb.wordWrap() and lb.textFormat() == Qt.TextFormat.RichText:
            for row in chip_breaks(lb, lb.contentsRect().width() - 2 * lb.margin()):
                out.append(f"label {name_of(lb)}: a legend line ends on its chip: {row!r}")
    return out


def label_problems(root: QWidget) -> list[str]:
    """Visible labels whose text is wider (or, wrapped, taller) than their rect, and sibling labels on top
    of each other."""
    out = []
    labels = [lb for lb in root.findChildren(QLabel) if shown(lb) and lb.text().strip() and not lb.pixmap()]
    for lb in labels:
        cr = lb.contentsRect()
        m = lb.margin() * 2 + lb.indent() if lb.indent() > 0 else lb.margin() * 2
        avail_w = cr.width() - m
        if lb.wordWrap():
            need_w, need_h = _label_text_size(lb, avail_w)
        else:
            need_w, need_h = _label_text_size(lb, None)
        if need_w > avail_w + 2:
            out.append(f"label {name_of(lb)} text {lb.text()[:60]!r} needs {need_w:.0f} px, has {avail_w}")
        elif need_h > cr.height() + 3:
            out.append(f"label {name_of(lb)} text {lb.text()[:60]!r} needs {need_h:.0f} px tall, has {cr.height()}")
    by_parent: dict[int, list[QLabel]] = {}
    for lb in labels:
        by_parent.setdefault(id(lb.parentWidget()), []).append(lb)
    for group in by_parent.values():
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                inter = a.geometry().intersected(b.geometry())
                if inter.width() > 2 and inter.height() > 2:
                    out.append(f"labels overlap: {name_of(a)} {a.text()[:30]!r} and {b.text()[:30]!r}")
    return out


# ---- pyqtgraph text -------------------------------------------------------------------------------------
def _view_rect(item, plot) -> QRectF:
    return plot.mapFromScene(item.sceneBoundingRect()).boundingRect()


def plot_text_problems(root: QWidget) -> list[str]:
    """Text items of one plot on top of each other, and tick labels of one axis that overlap."""
    out = []
    for plot in root.findChildren(pg.GraphicsView):
        if not shown(plot):
            continue
        vis = QRectF(plot.viewport().rect())
        items = [it for it in plot.scene().items()
                 if isinstance(it, pg.TextItem) and it.isVisible() and it.toPlainText().strip()]
        rects = []
        for it in items:
            r = QRectF(_view_rect(it, plot))
            if r.intersects(vis):
                rects.append((it, r))
        for i, (a, ra) in enumerate(rects):
            for b, rb in rects[i + 1:]:
                inter = ra.intersected(rb)
                if inter.width() > 2 and inter.height() > 2:
                    out.append(f"plot {name_of(plot)}: texts {a.toPlainText()[:20]!r} and {b.toPlainText()[:20]!r} overlap")
                    break
        img = QImage(10, 10, QImage.Format.Format_ARGB32)
        for ax in plot.scene().items():
            if not isinstance(ax, pg.AxisItem) or not ax.isVisible() or not ax.style.get("showValues", True):
                continue
            p = QPainter(img)
            try:
                p.setFont(ax.style["tickFont"] or p.font()) if ax.style.get("tickFont") else None
                specs = ax.generateDrawSpecs(p)
            finally:
                p.end()
            if not specs:
                continue
            texts = [(QRectF(r), t) for r, _flags, t in specs[2] if str(t).strip()]
            horizontal = ax.orientation in ("top", "bottom")
            texts.sort(key=lambda rt: rt[0].left() if horizontal else rt[0].top())
            for (ra, ta), (rb, tb) in zip(texts, texts[1:]):
                gap = (rb.left() - ra.right()) if horizontal else (rb.top() - ra.bottom())
                if gap < -1:
                    out.append(f"plot {name_of(plot)} {ax.orientation} axis: ticks {ta!r} and {tb!r} overlap")
                    break
    return out


def legend_problems(root: QWidget) -> list[str]:
    """A plot's legend drawn over its data (a pyqtgraph LegendItem on top of a view box of the same plot)."""
    out = []
    for plot in root.findChildren(pg.GraphicsView):
        if not shown(plot):
            continue
        items = plot.scene().items()
        boxes = [it for it in items if isinstance(it, pg.ViewBox) and it.isVisible()]
        for lg in (it for it in items if isinstance(it, pg.LegendItem) and it.isVisible() and it.items):
            r = lg.sceneBoundingRect()
            for vb in boxes:
                inter = r.intersected(vb.sceneBoundingRect())
                if inter.width() > 2 and inter.height() > 2:
                    out.append(f"plot {name_of(plot)}: its legend covers {inter.width():.0f}x{inter.height():.0f} px of the data")
                    break
    return out


# ---- memory views ------------------------------------------------------------------------------------------
#: the smallest a memory cell may be drawn, in pixels, in a shown memory view
MIN_CELL_PX = 2.5
#: ... unless the array's image covers at least this part of its share of the view (a 16,384-element array)
MIN_SHARE = 0.25


def memory_problems(window) -> list[str]:
    """Arrays drawn as strips a pixel or two tall, axes that run past the array's edges (-100 to 150 under a
    32-column image), arrays cut off at the view's edge, and heat maps without a colour bar."""
    out = []
    for vid in ("memory", "shared"):
        view = window.views.get(vid)
        if view is None or not shown(view) or not getattr(view, "_panels", None):
            continue
        canvas = view.canvas
        vis = QRectF(canvas.viewport().rect())
        for p in view._panels:
            name = f"{vid} {p.info.name}"
            rect = canvas.mapFromScene(p.image.sceneBoundingRect()).boundingRect()
            rows, cols = p.layout.rows, p.layout.cols
            cell_w, cell_h = rect.width() / max(cols, 1), rect.height() / max(rows, 1)
            # small cells are fine where the array is big and its image takes its share of the view
            share = vis.width() * vis.height() / len(view._panels)
            if min(cell_w, cell_h) < MIN_CELL_PX and rect.width() * rect.height() < MIN_SHARE * share:
                out.append(f"{name}: {rows}x{cols} cells drawn {rect.width():.0f}x{rect.height():.0f} px "
                           f"({min(cell_w, cell_h):.1f} px a cell)")
            plot_rect = canvas.mapFromScene(p.plot.sceneBoundingRect()).boundingRect()
            if not vis.adjusted(-1, -1, 1, 1).contains(QRectF(plot_rect)):
                out.append(f"{name}: its plot {plot_rect} sticks out of the view {vis}")
            for axis_name, n in (("bottom", cols), ("top", cols), ("left", rows)):
                ax = p.plot.getAxis(axis_name)
                if not ax.isVisible() or not ax.style.get("showValues", True):
                    continue
                values = [v for _spacing, vals in ax.tickValues(*ax.range, ax.geometry().width() if axis_name != "left"
                                                                 else ax.geometry().height()) for v in vals]
                if ax._tickLevels is None and any(v < -0.5 or v > n + 0.5 for v in values):
                    out.append(f"{name}: {axis_name} axis ticks run from {min(values):g} to {max(values):g} "
                               f"for {n} cells")
        bar = getattr(view, "colour_bar", None)
        if bar is None or not bar.isVisible() or bar.scene() is None:
            out.append(f"{vid}: no colour bar says what the heat map's colours count")
    return out


# ---- source view ------------------------------------------------------------------------------------------
def source_problems(window, min_columns: int = 60) -> list[str]:
    out = []
    view = window.views.get("source")
    if view is None or not shown(view):
        return out
    ed: QPlainTextEdit = view.editor
    fm = QFontMetrics(ed.font())
    cols = ed.viewport().width() / max(1, fm.horizontalAdvance("0"))
    code_cols = cols - getattr(view, "_gutter_len", 0)
    if ed.lineWrapMode() == QPlainTextEdit.LineWrapMode.NoWrap and code_cols < min_columns:
        out.append(f"source shows {code_cols:.0f} columns of code (needs {min_columns} or wrapping)")
    # the current line: its text against its background, as drawn
    if view.highlighted:
        i = view.highlighted[0] - view._first_line
        block = ed.document().findBlockByNumber(i)
        geo = ed.blockBoundingGeometry(block).translated(ed.contentOffset())
        if geo.top() < 0 or geo.bottom() > ed.viewport().height() + 0.5:  # every row of it, a wrapped line too
            out.append(f"current source line {view.highlighted[0]} is not all in view: rows {geo.top():.0f} to "
                       f"{geo.bottom():.0f} of a {ed.viewport().height()}-pixel view")
        # its first row, inside: the rect rounded out touches the next line, a wrapped row leaves its margin dark
        first = geo.toRect()
        first.setHeight(fm.lineSpacing())
        rect = first.adjusted(8, 2, -8, -2).intersected(ed.viewport().rect())  # inside the document margin
        if rect.height() > 4 and rect.width() > 4:
            px = image_array(ed.viewport().grab(rect).toImage())
            c = text_contrast(px)
            if c < MIN_CONTRAST:
                out.append(f"current source line contrast {c:.2f}:1 (theme {window.session.theme.name})")
    return out


# ---- contrast of every label, as drawn ------------------------------------------------------------------
def contrast_problems(window) -> list[str]:
    out = []
    shot = image_array(window.grab().toImage())
    dpr = 1
    for lb in window.findChildren(QLabel):
        if not shown(lb) or not lb.text().strip() or lb.pixmap():
            continue
        tl = lb.mapTo(window, QPoint(0, 0))
        r = QRect(tl, lb.size()).intersected(window.rect())
        if r.width() < 4 or r.height() < 4:
            continue
        patch = shot[r.top() * dpr:(r.bottom() + 1) * dpr, r.left() * dpr:(r.right() + 1) * dpr]
        c = text_contrast(patch)
        if c < MIN_CONTRAST:
            out.append(f"label {name_of(lb)} {lb.text()[:40]!r}: contrast {c:.2f}:1")
    return out


# ---- the F1 overlay --------------------------------------------------------------------------------------
def overlay_problems(window) -> list[str]:
    out = []
    window.show_shortcuts()
    settle()
    ov = window.overlay
    try:
        hint = ov.label.sizeHint()
        if hint.width() > ov.width() or hint.height() > ov.height():
            out.append(f"shortcuts overlay needs {hint.width()}x{hint.height()}, window is {ov.width()}x{ov.height()}")
        if not ov.rect().contains(ov.label.geometry()):
            out.append(f"shortcuts overlay label {ov.label.geometry()} sticks out of {ov.rect()}")
        out += [f"overlay: {p}" for p in label_problems(ov)]
    finally:
        window.show_shortcuts()  # toggles it off
        settle()
    return out


def layout_problems(window) -> list[str]:
    settle()
    return (label_problems(window) + chip_problems(window) + plot_text_problems(window) + legend_problems(window)
            + source_problems(window)
            + memory_problems(window) + contrast_problems(window))


# ---- acting as a person -----------------------------------------------------------------------------------
def click_targets(view: QWidget) -> list[QWidget]:
    """The widgets of a view that take clicks: plots, tables and text views (their viewports)."""
    out = []
    for w in [view] + view.findChildren(QWidget):
        if isinstance(w, pg.GraphicsView):
            out.append(w.viewport())
        elif isinstance(w, (QAbstractItemView, QPlainTextEdit)) or (
                isinstance(w, QAbstractScrollArea) and not isinstance(w, pg.GraphicsView)
                and type(w).__name__ != "QScrollArea"):
            out.append(w.viewport())
    return [t for t in out if shown(t)]


def click_grid(target: QWidget, n: int = 5) -> int:
    """Left-click an n x n grid of points across ``target`` with real mouse events; returns clicks made."""
    w, h = target.width(), target.height()
    k = 0
    for i in range(n):
        for j in range(n):
            pos = QPoint(int((i + 0.5) * w / n), int((j + 0.5) * h / n))
            QTest.mouseClick(target, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, pos)
            k += 1
    QApplication.processEvents()
    return k


# ---- one view on its own -----------------------------------------------------------------------------------
@contextlib.contextmanager
def view_alone(view_id: str, theme, trace, size=(640, 420), styled: bool = True, frame=None):
    """The view ``view_id`` on its own, on ``trace`` in ``theme`` (with the window's style sheet when ``styled``),
    shown at ``size`` and drawn, at ``frame(frames)`` if given; closed, with its session, afterwards."""
    from gpuviz.ui.session import Session
    from gpuviz.style.theme import stylesheet
    from gpuviz.ui.views.base import available_views

    session = Session(theme=theme)
    session.set_trace(trace, "trace")
    if frame is not None:
        session.set_frame(frame(session.frames))
    view = available_views()[view_id](session)
    if styled:
        view.setStyleSheet(stylesheet(theme))
    try:
        view.resize(*size)
        view.show()
        settle(3)
        view.refresh()
        settle(3)
        yield view
    finally:
        view.close()
        view.deleteLater()
        session.shutdown()
