"""Helpers for pixel views: a captioned layout, an image plot, legends, themed axes and text items, thinned tick
labels, axis titles kept unless changed, and labels pinned to data that hide where they would overlap.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import QLabel, QVBoxLayout

from ...style.theme import hex_to_rgba
from .base import TraceView
from .labels import OneLineLabel, slotted


def captioned_layout(view: TraceView) -> tuple[QVBoxLayout, QLabel]:
    """A view's vertical layout with its caption line on top (the caption wraps; themes style it by name)."""
    layout = QVBoxLayout(view)
    layout.setContentsMargins(4, 4, 4, 4)
    layout.setSpacing(2)
    caption = OneLineLabel(view)  # one line when presenting a crowded lesson scene (TraceView.set_compact)
    caption.setObjectName("viewTitle")
    caption.setWordWrap(True)
    caption.setTextFormat(Qt.TextFormat.PlainText)  # kernel names, file paths: text from the trace file
    layout.addWidget(slotted(caption))  # its text changes per frame: the window is not laid out again for it
    return layout, caption


def legend_label(view: TraceView) -> QLabel:
    """A view's word-wrapping legend under its plot, on the plot's background (themes style it by name): its
    colour chips stand against the same ground as the cells they name, where the theme's contrast holds."""
    legend = QLabel(view)
    legend.setObjectName("viewLegend")
    legend.setWordWrap(True)
    return legend


def make_image_plot(view: TraceView, with_axes: bool = False) -> tuple[pg.PlotWidget, pg.ImageItem]:
    """An aspect-locked, y-down plot holding one ImageItem, in ``view``'s layout (created if needed).

    The ImageItem is row-major: pass RGBA arrays shaped ``(height, width, 4)``, row 0 at the top.
    Pixel (row r, column c) covers plot coordinates x in [c, c+1], y in [r, r+1].
    """
    plot = pg.PlotWidget(parent=view, enableMenu=False)  # no menus: not even built (a few ms a plot)
    plot.setMenuEnabled(False)
    plot.hideButtons()
    vb = plot.getPlotItem().getViewBox()
    vb.setAspectLocked(True)
    vb.invertY(True)
    vb.setMouseEnabled(x=True, y=True)
    if not with_axes:
        plot.hideAxis("left")
        plot.hideAxis("bottom")
    image = pg.ImageItem(axisOrder="row-major")
    plot.addItem(image)
    layout = view.layout()
    if layout is None:
        layout = QVBoxLayout(view)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
    layout.addWidget(plot)
    return plot, image


def style_plot(plot: pg.PlotWidget, theme) -> None:
    """Theme colours and scaled fonts for a pyqtgraph plot."""
    plot.setBackground(theme.background)
    font = QFont()
    font.setPixelSize(theme.px())
    pi = plot.getPlotItem()
    for name in ("left", "bottom", "right", "top"):
        ax = pi.getAxis(name)
        ax.setPen(pg.mkPen(theme.foreground))
        ax.setTextPen(pg.mkPen(theme.foreground))
        ax.setTickFont(font)
        ax.label.setFont(font)
        thin_tick_labels(ax)


def text_item(text: str, theme, size: float | None = None, color: str | None = None, bold: bool = False,
              anchor=(0, 0)) -> pg.TextItem:
    item = pg.TextItem(text, color=QColor(color or theme.foreground), anchor=anchor)
    font = QFont()
    font.setPixelSize(theme.px(size))
    font.setBold(bold)
    item.setFont(font)
    return item


def outline_pen(color: str, theme, width: float = 3.0) -> "pg.QtGui.QPen":
    pen = pg.mkPen(QColor(color), width=max(1.0, width * theme.scale))
    pen.setCosmetic(True)
    pen.setJoinStyle(Qt.PenJoinStyle.MiterJoin)
    return pen


def rgba_lut(colors: list[str]) -> np.ndarray:
    return np.array([hex_to_rgba(c) for c in colors], dtype=np.uint8)


def legend_html(items: list[tuple[str, str]], theme) -> str:
    """Colour chips with labels, as rich text for a word-wrapping QLabel: ``[(colour, label), ...]``."""
    return " ".join(
        f"<span style='white-space:nowrap'><span style='background-color:{c}'>&nbsp;&nbsp;&nbsp;&nbsp;</span>"
        f"&nbsp;{label}</span>&nbsp;&nbsp;"
        for c, label in items
    )


def thin_tick_labels(axis: pg.AxisItem, gap_px: float = 4.0) -> pg.AxisItem:
    """Draw only the tick labels that fit: a label that would overlap the last one drawn is left out (its
    tick mark stays). Custom ticks (``setTicks``) are all drawn by pyqtgraph, however narrow the plot;
    "0 48121620…" on a 32-bank axis at projector size reads as noise."""
    if getattr(axis, "_gpuviz_thinned", False):
        return axis
    draw_specs = axis.generateDrawSpecs

    def thinned(p):
        specs = draw_specs(p)
        if not specs:
            return specs
        axis_spec, tick_specs, text_specs = specs
        horizontal = axis.orientation in ("top", "bottom")
        kept, last = [], None
        for spec in sorted(text_specs, key=lambda s: s[0].left() if horizontal else s[0].top()):
            r = spec[0]
            lo, hi = (r.left(), r.right()) if horizontal else (r.top(), r.bottom())
            if last is None or lo >= last + gap_px:
                kept.append(spec)
                last = hi
        return axis_spec, tick_specs, kept

    axis.generateDrawSpecs = thinned
    axis._gpuviz_thinned = True
    keep_label_unless_changed(axis)
    return axis


def keep_label_unless_changed(axis: pg.AxisItem) -> pg.AxisItem:
    """The axis title is set again (``setHtml``, and the axis resized to it) only when it would differ.

    pyqtgraph's AxisItem, its SI prefix on (the default), rebuilds its title's HTML and re-sizes itself on every
    range change of its view (``linkedViewChanged`` -> ``updateAutoSIPrefix`` -> ``_updateLabel``), so each
    plot's axes re-laid their titles out on every resize (756 ``setHtml`` in 21 resizes of reduce_sum's window).
    Whatever that re-sizing reads is in the key (the title's text, font and visibility, the tick font, the
    widest and tallest tick text, a fixed size); with all of it the same the axis is only repainted."""
    if getattr(axis, "_gpuviz_label_kept", False):
        return axis
    update_label = axis._updateLabel

    def updated():
        font = axis.style.get("tickFont")
        key = (axis.labelString(), axis.label.font().toString(), axis.label.isVisible(), axis.isVisible(),
               font.toString() if font is not None else None, axis.textWidth, axis.textHeight, axis.fixedWidth,
               axis.fixedHeight)
        if key == axis._gpuviz_label_key:
            axis.picture = None
            axis.update()
            return
        axis._gpuviz_label_key = key
        update_label()

    axis._gpuviz_label_key = None
    axis._updateLabel = updated
    axis._gpuviz_label_kept = True
    return axis


def hide_overlapping_texts(items, gap_px: float = 2.0) -> int:
    """Show each text item unless it would overlap one shown before it (in the order given); returns how
    many are hidden. For labels pinned to data (barrier lines, blocks) that pile up when a plot is narrow."""
    shown_rects = []
    hidden = 0
    for item in items:
        item.setVisible(True)
    for item in items:
        if not item.isVisible() or not item.scene():
            continue
        r = item.sceneBoundingRect().adjusted(-gap_px, -gap_px, gap_px, gap_px)
        if any(r.intersects(o) for o in shown_rects):
            item.setVisible(False)
            hidden += 1
        else:
            shown_rects.append(r)
    return hidden
