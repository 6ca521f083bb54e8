"""The grid of blocks: every block's state at this frame (waiting, resident, at barrier, done).

Blocks are pixels of one RGBA image. A 2-d grid is drawn as it is indexed (x to the right, y down); a
3-d grid puts its z slices side by side; a long 1-d grid wraps into rows (the title says so). The pixel
-> block map is built once per trace; each frame only looks block states up in a colour table.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPainterPath
from PySide6.QtWidgets import QGraphicsPathItem, QGraphicsRectItem

from ...model.frames import BlockState, format_block
from ...style.theme import hex_to_rgba
from .base import TraceView, register_view
from .plots import captioned_layout, legend_html, legend_label, make_image_plot, outline_pen, style_plot, text_item


def grid_layout(grid: tuple[int, int, int], max_cols: int = 64) -> tuple[np.ndarray, np.ndarray, int, int, str]:
    """(col, row) of each linear block id, the number of columns and rows, and a note on the layout."""
    gx, gy, gz = grid
    b = np.arange(gx * gy * gz)
    x, y, z = b % gx, (b // gx) % gy, b // (gx * gy)
    if gy == 1 and gz == 1 and gx > max_cols:
        cols = max_cols
        return b % cols, b // cols, cols, -(-gx // cols), f"1-d grid of {gx} blocks, wrapped in rows of {cols}"
    if gz == 1:
        note = f"{gx} x {gy} blocks" if gy > 1 else (f"{gx} blocks" if gx != 1 else "1 block")
        return x, y, gx, gy, note
    # z slices side by side, one column of gap between them
    col = z * (gx + 1) + x
    return col, y, gz * (gx + 1) - 1, gy, f"{gx} x {gy} x {gz} blocks, z slices left to right"


@register_view
class GridView(TraceView):
    view_id = "grid"
    title = "Grid of blocks"
    short_title = "Grid"
    default_area = "left"
    order = 10

    def __init__(self, session, parent=None):
        super().__init__(session, parent)
        layout, self.caption = captioned_layout(self)
        self.plot, self.image = make_image_plot(self)
        self.legend = legend_label(self)
        layout.addWidget(self.legend)
        self.current_box = QGraphicsRectItem()
        self.selected_box = QGraphicsRectItem()
        for item in (self.current_box, self.selected_box):
            item.setZValue(10)
            item.setVisible(False)
            self.plot.addItem(item)
        self._labels: list[pg.TextItem] = []
        self.rgba: np.ndarray | None = None  # the image shown (rows, cols, 4): tests read it
        self.states: np.ndarray | None = None
        self.gaps = QGraphicsPathItem()
        self.gaps.setZValue(5)
        self.plot.addItem(self.gaps)
        self.plot.scene().sigMouseClicked.connect(self._clicked)
        vb = self.plot.getPlotItem().getViewBox()
        vb.sigResized.connect(self._fit_labels)  # labels show only where they fit: re-check when cells change size
        vb.sigRangeChanged.connect(self._fit_labels)

    # ---- layout: once per trace --------------------------------------------------------------------
    def on_trace_changed(self) -> None:
        L = self.trace.launch
        col, row, ncols, nrows, note = grid_layout(L.grid)
        self._col, self._row = col, row
        n = L.n_blocks
        # one image pixel per block (block b covers [col, col+1] x [row, row+1]); gaps are lines on top
        lookup = np.full((nrows, ncols), -1, dtype=np.int64)
        lookup[row, col] = np.arange(n)
        self._lookup = lookup
        flat = lookup.ravel()
        self._inside = np.flatnonzero(flat >= 0)
        self._inside_block = flat[self._inside]
        self.rgba = np.zeros((nrows, ncols, 4), dtype=np.uint8)
        self._paint_empty()
        self.image.setImage(self.rgba, autoLevels=False)  # the rect scales the image it is given: size first
        self.image.setRect(QRectF(0, 0, ncols, nrows))
        self._gap_path = QPainterPath()
        if max(ncols, nrows) <= 128:
            for c in range(1, ncols):
                self._gap_path.moveTo(c, 0)
                self._gap_path.lineTo(c, nrows)
            for r in range(1, nrows):
                self._gap_path.moveTo(0, r)
                self._gap_path.lineTo(ncols, r)
        self.gaps.setPath(self._gap_path)
        self._gap_width = 3 if max(ncols, nrows) <= 16 else (2 if max(ncols, nrows) <= 48 else 1)
        self._caption_head = f"{L.kernel_name}: {note} of {L.threads_per_block} thread{'s' if L.threads_per_block != 1 else ''}"
        self.caption.setText(self._caption_head)
        for item in self._labels:
            self.plot.removeItem(item)
        self._labels = []
        if n <= 64 and max(ncols, nrows) <= 12:
            sms = self._block_sms() if self.trace.has("sm") else None
            for b in range(n):
                text = format_block(L, b)
                if sms is not None and sms[b] >= 0:
                    text += f"\nSM {sms[b]}"
                t = text_item(text, self.theme, size=15, anchor=(0.5, 0.5))
                t.setPos(col[b] + 0.5, row[b] + 0.5)
                self.plot.addItem(t)
                self._labels.append(t)
        self.plot.getPlotItem().getViewBox().setRange(QRectF(0, 0, ncols, nrows), padding=0.03)
        self._grid_shape = (ncols, nrows)
        self.on_theme_changed()
        self._fit_labels()
        self._say_sms()

    #: compact in a column of views, a block's square needs no more than this
    STACKED_BLOCK_PX = 100

    def stacked_height(self, width: int) -> int | None:
        if self.trace is None:
            return None
        _col, _row, ncols, nrows, _note = grid_layout(self.trace.launch.grid)
        side = min(self.STACKED_BLOCK_PX, max(width - 16, 1) / max(ncols, 1))
        return self.one_line_px() + int(side * nrows) + 16

    def plots_resized(self) -> None:
        super().plots_resized()
        self._fit_labels()

    def _fit_labels(self, *_signal_args) -> None:
        """Show block labels only where they fit inside their cell: overlapping labels read as noise."""
        if not self._labels or not hasattr(self, "_grid_shape"):
            return
        vb = self.plot.getPlotItem().getViewBox()
        # one cell's size on screen: the view is aspect-locked, so the plot's width says nothing by itself
        cell = vb.mapViewToScene(QRectF(0, 0, 1, 1)).boundingRect()
        cell_w, cell_h = cell.width(), cell.height()
        widest = max(t.boundingRect().width() for t in self._labels)
        tallest = max(t.boundingRect().height() for t in self._labels)
        fits = widest <= 0.95 * cell_w and tallest <= 0.95 * cell_h
        for t in self._labels:
            t.setVisible(fits)
        self._say_sms()

    def _say_sms(self) -> None:
        """The caption says where a GPU recording's SMs are: on the blocks when their labels show, else in
        Details (a block click), never a promise of labels that are not drawn."""
        if self.trace is None or not hasattr(self, "_caption_head"):
            return
        sm = ""
        if self.trace.has("sm"):
            on_blocks = bool(self._labels) and self._labels[0].isVisible()
            sm = " · the SM each block ran on is on it" if on_blocks else " · click a block: Details names the SM it ran on"
        self.caption.setText(self._caption_head + sm)

    def _paint_empty(self) -> None:
        if self.rgba is not None:
            self.rgba.reshape(-1, 4)[self._lookup.ravel() < 0] = self._gap_rgba

    def _block_sms(self) -> np.ndarray:
        tr = self.trace
        sms = np.full(tr.launch.n_blocks, -1, dtype=np.int64)
        sms[tr.block] = tr.sm
        return sms

    def on_theme_changed(self) -> None:
        t = self.theme
        style_plot(self.plot, t)
        self._lut = np.array([hex_to_rgba(t.block[s]) for s in BlockState], dtype=np.uint8)
        self._gap_rgba = np.array(hex_to_rgba(t.background), dtype=np.uint8)
        self._paint_empty()
        self.gaps.setPen(outline_pen(t.background, t, getattr(self, "_gap_width", 2)))
        self.current_box.setPen(outline_pen(t.current, t, 4))
        self.selected_box.setPen(outline_pen(t.selected, t, 5))
        self.current_box.setBrush(Qt.BrushStyle.NoBrush)
        self.selected_box.setBrush(Qt.BrushStyle.NoBrush)
        for item in self._labels:
            # black on a pale chip: readable on every block colour, in the light and the dark theme
            item.setColor(QColor("#000000"))
            item.fill = pg.mkBrush(255, 255, 255, 200)
            item.update()
        self.legend.setText(legend_html([(t.block[s], s.label) for s in BlockState], t)
                            + f" <span style='white-space:nowrap'><b style='color:{t.current}'>&#9633;</b>&nbsp;running now</span>")

    # ---- per frame: colours only ----------------------------------------------------------------------
    def on_frame_changed(self) -> None:
        F, f = self.frames, self.frame
        self.states = F.block_states(f)
        colours = self._lut[self.states]
        self.rgba.reshape(-1, 4)[self._inside] = colours[self._inside_block]
        self.image.setImage(self.rgba, autoLevels=False)
        self._place(self.current_box, int(F.block[f]))

    def _place(self, box: QGraphicsRectItem, b: int | None) -> None:
        if b is None or b < 0:
            box.setVisible(False)
            return
        box.setRect(QRectF(float(self._col[b]), float(self._row[b]), 1.0, 1.0))
        box.setVisible(True)

    def on_selection_changed(self) -> None:
        self._place(self.selected_box, self.session.selection.block)

    # ---- clicks select a block ------------------------------------------------------------------------
    def block_at(self, x: float, y: float) -> int | None:
        if self.rgba is None:
            return None
        r, c = int(np.floor(y)), int(np.floor(x))
        if 0 <= r < self._lookup.shape[0] and 0 <= c < self._lookup.shape[1] and self._lookup[r, c] >= 0:
            return int(self._lookup[r, c])
        return None

    def _clicked(self, ev) -> None:
        if ev.button() != Qt.MouseButton.LeftButton:
            return
        p = self.plot.getPlotItem().getViewBox().mapSceneToView(ev.scenePos())
        b = self.block_at(p.x(), p.y())
        if b is not None:
            self.session.selection.select_block(b)
