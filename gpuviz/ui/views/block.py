"""One block as warps x lanes: each thread a cell, in the block's own x/y shape, warps outlined.

Lanes are coloured by state at this frame (active, diverged, at barrier, idle, exited, not started).
A 1-d block is drawn one warp per row; a 2-d block as it is indexed (x right, y down); a 3-d block
stacks its z slices downwards. Cells are pixels of one RGBA image; the pixel -> thread map and the
warp outlines are built once per trace.

The block shown is the selected block when there is one, else the block of the current frame.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFont, QColor, QPainterPath
from PySide6.QtWidgets import QGraphicsPathItem, QGraphicsRectItem

from ...model.frames import LaneState, format_block
from ...model.trace import EventKind
from ...style import render
from ...style.theme import hex_to_rgba
from .base import TraceView, register_view
from .plots import captioned_layout, legend_html, legend_label, make_image_plot, outline_pen, style_plot, text_item
from .relayout import drawn_from_cache


def block_layout(block: tuple[int, int, int], warp_size: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(col, row) of each linear thread id, and the number of columns and rows."""
    bx, by, bz = block
    t = np.arange(bx * by * bz)
    if by == 1 and bz == 1:
        cols = min(warp_size, bx)
        return t % cols, t // cols, cols, -(-bx // cols)
    x, y, z = t % bx, (t // bx) % by, t // (bx * by)
    return x, y + z * (by + 1), bx, by * bz + (bz - 1)


def loop_iterations_per_thread(trace) -> np.ndarray | None:
    """(n_blocks, threads_per_block) loop iterations each thread ran, NaN where unknown; None unless the trace
    records them (the CPU executor does, on END events, when a loop's length differs between threads)."""
    if trace is None or not trace.has("value") or not len(trace):
        return None
    end = np.flatnonzero(trace.kind == EventKind.END)
    vals = trace.value[end]
    ok = np.isfinite(vals)
    if not ok.any() or np.nanmin(vals[ok]) == np.nanmax(vals[ok]):
        return None
    L = trace.launch
    out = np.full((L.n_blocks, L.threads_per_block), np.nan)
    out[trace.block[end[ok]], trace.thread[end[ok]]] = vals[ok]
    return out


@register_view
class BlockView(TraceView):
    view_id = "block"
    title = "Block: warps x lanes"
    short_title = "Warps x lanes"
    default_area = "left"
    order = 20

    def __init__(self, session, parent=None):
        super().__init__(session, parent)
        layout, self.caption = captioned_layout(self)
        self.plot, self.image = make_image_plot(self)
        vb = self.plot.getPlotItem().getViewBox()
        # lanes fill the dock: a 1-d block of 8 warps x 32 lanes locked square is a strip ~7 px tall in a dock
        # three times that height; the cells may be taller than wide, the lanes stay in their rows and columns
        vb.setAspectLocked(False)
        vb.sigResized.connect(self._fit_labels)
        vb.sigRangeChanged.connect(self._fit_labels)
        self.legend = legend_label(self)
        layout.addWidget(self.legend)
        self.warp_outline = QGraphicsPathItem()
        self.selected_warp_outline = QGraphicsPathItem()
        self.selected_thread_box = QGraphicsRectItem()
        for item in (self.warp_outline, self.selected_warp_outline, self.selected_thread_box):
            item.setZValue(10)
            item.setVisible(False)
            self.plot.addItem(item)
        self._labels: list[pg.TextItem] = []
        self._spare_labels: dict[int, pg.TextItem] = {}  # warp labels made ahead (warm_up_steps), by warp
        self.rgba: np.ndarray | None = None  # the image shown (rows, cols, 4): tests read it
        self.states: np.ndarray | None = None  # LaneState per thread of the shown block
        self.shown_block: int | None = None
        self._loops: np.ndarray | None = None  # (block, thread) -> loop iterations, where a loop's length varies
        self._warp_paths: list[QPainterPath] = []
        self._line_widths: tuple[float, float] | None = None  # warp outlines, lines between warps (_fit_outlines)
        self.gaps = QGraphicsPathItem()
        self.bounds = QGraphicsPathItem()
        self.gaps.setZValue(5)
        self.bounds.setZValue(6)
        self.plot.addItem(self.gaps)
        self.plot.addItem(self.bounds)
        # the same lines on every frame over an image that changes on every frame: stroked once, not per frame
        # (the thin gaps between cells took 3-4 of the 5 ms the block's plot took to paint a frame)
        drawn_from_cache(self.gaps, self.bounds)
        self.plot.scene().sigMouseClicked.connect(self._clicked)

    # ---- layout: once per trace ----------------------------------------------------------------------
    @staticmethod
    def loop_table(trace, frames):
        """:func:`loop_iterations_per_thread`, once per trace (a pass over every event: built by the open job's
        thread when the view is on screen, see :meth:`prepare`)."""
        if frames is None:
            return loop_iterations_per_thread(trace)
        return render.per_frames(frames, "loop iterations per thread", lambda: loop_iterations_per_thread(trace))

    @classmethod
    def prepare(cls, prepared) -> None:
        cls.loop_table(prepared.trace, prepared.frames)

    def _warp_label(self, w: int):
        # hung from the warp's top edge: centred on its first row, warp 0's label stood half above the plot where
        # rows are a few pixels tall (presenter mode at 1280x720), cut off by the caption
        label = text_item(f"warp {w}", self.theme, size=15, color=self.theme.muted, anchor=(1, 0))
        drawn_from_cache(label.textItem)
        return label

    def warm_up_steps(self) -> list:
        """The warp labels a big trace's block has beyond those on screen, made in a turn before its turn to adopt
        it (from a window opened without a trace: 8 labels were ~10 ms of that turn)."""
        L = self.trace.launch if self.trace is not None else None
        need = L.warps_per_block if L is not None and L.warps_per_block <= 64 else 0
        missing = [w for w in range(len(self._labels), need) if w not in self._spare_labels]
        if not missing:
            return []

        def make() -> None:
            for w in missing:
                if w not in self._spare_labels:
                    self._spare_labels[w] = self._warp_label(w)

        return [make]

    def on_trace_changed(self) -> None:
        L = self.trace.launch
        ws = L.warp_size
        col, row, ncols, nrows = block_layout(L.block, ws)
        self._col, self._row = col, row
        T = L.threads_per_block
        # one image pixel per thread: thread t covers [col, col+1] x [row, row+1]
        lookup = np.full((nrows, ncols), -1, dtype=np.int64)
        lookup[row, col] = np.arange(T)
        self._lookup = lookup
        flat = lookup.ravel()
        self._inside = np.flatnonzero(flat >= 0)
        self._inside_thread = flat[self._inside]
        self.rgba = np.zeros((nrows, ncols, 4), dtype=np.uint8)
        self.image.setImage(self.rgba, autoLevels=False)  # the rect scales the image it is given: size first
        self.image.setRect(QRectF(0, 0, ncols, nrows))
        # thin gaps between all cells, thick lines between cells of different warps (cached paths)
        gaps = QPainterPath()
        if max(ncols, nrows) <= 128:
            for c in range(1, ncols):
                gaps.moveTo(c, 0)
                gaps.lineTo(c, nrows)
            for r in range(1, nrows):
                gaps.moveTo(0, r)
                gaps.lineTo(ncols, r)
        self.gaps.setPath(gaps)
        warp_of = np.where(lookup >= 0, lookup // ws, -1)
        bounds = QPainterPath()
        a, b = warp_of[:, :-1], warp_of[:, 1:]
        for r, c in zip(*np.nonzero((a != b) & (a >= 0) & (b >= 0))):
            bounds.moveTo(c + 1, r)
            bounds.lineTo(c + 1, r + 1)
        a, b = warp_of[:-1, :], warp_of[1:, :]
        for r, c in zip(*np.nonzero((a != b) & (a >= 0) & (b >= 0))):
            bounds.moveTo(c, r + 1)
            bounds.lineTo(c + 1, r + 1)
        self.bounds.setPath(bounds)
        self._warp_paths = []
        for w in range(L.warps_per_block):
            path = QPainterPath()
            for t in range(w * ws, min((w + 1) * ws, T)):
                path.addRect(QRectF(float(col[t]), float(row[t]), 1.0, 1.0))
            self._warp_paths.append(path.simplified())
        # the warp labels of the last trace are this one's, moved (warp w's text is the same): a TextItem added
        # to the plot is ~2 ms of the GUI thread, and a new trace's turn made one per warp
        n_labels = L.warps_per_block if L.warps_per_block <= 64 else 0
        for item in self._labels[n_labels:]:
            self.plot.removeItem(item)
        kept, self._labels = self._labels[:n_labels], []
        for w in range(n_labels):
            t0 = w * ws
            if w < len(kept):
                label = kept[w]
            else:
                label = self._spare_labels.pop(w, None) or self._warp_label(w)
                self.plot.addItem(label)
            label.setPos(col[t0] - 0.2, row[t0])
            self._labels.append(label)
        self.shown_block = None
        self._loops = self.loop_table(self.trace, self.frames)
        self._rows_per_warp = max(1, int(row[min(ws, T) - 1]) - int(row[0]) + 1) if T else 1
        self._fit_range()
        self.on_theme_changed()
        self._fit_labels()

    def _fit_range(self) -> None:
        """The lanes and, on their left, room for the widest warp label (in plot units, from pixels)."""
        if self.rgba is None:
            return
        nrows, ncols = self.rgba.shape[:2]
        vb = self.plot.getPlotItem().getViewBox()
        label_px = max((t.boundingRect().width() for t in self._labels), default=0) + 6
        plot_px = max(vb.width(), 1.0)
        # label_px of plot_px goes to the labels: margin / (ncols + margin) = label_px / plot_px
        share = min(0.45, label_px / plot_px)
        margin = max(0.5, ncols * share / (1 - share))
        vb.setRange(QRectF(-margin, 0, ncols + margin, nrows), padding=0.02)

    def plots_resized(self) -> None:
        super().plots_resized()
        self._fit_range()
        self._fit_labels()

    def _warp_height_px(self) -> float:
        """A warp's rows' height on screen, in pixels."""
        vb = self.plot.getPlotItem().getViewBox()
        cell = vb.mapViewToScene(QRectF(0, 0, 1, 1)).boundingRect()
        return max(cell.height() * getattr(self, "_rows_per_warp", 1), 1e-6)

    def _fit_outlines(self, theme_changed: bool = False) -> None:
        """The warp outlines 5 px (scaled) wide and the lines between warps 3 px, at most a third and a quarter of
        a warp's height: centred on a warp's edge, a wider pen covers its lanes, and the issuing warp's own colours
        are what its outline points at (at 1280x720 in presenter mode a warp is ~8 px tall: its 6.5 px outline left
        one row of its two showing, and the white 4 px lines between warps were as tall as the lanes)."""
        t = self.theme
        warp_h = self._warp_height_px() / t.scale
        widths = (min(5.0, warp_h / 3), min(3.0, warp_h / 4))
        if widths == self._line_widths and not theme_changed:
            return  # a pen set again re-strokes the cached lines for nothing
        self._line_widths = widths
        outline, bound = widths
        self.warp_outline.setPen(outline_pen(t.current, t, outline))
        self.selected_warp_outline.setPen(outline_pen(t.selected, t, outline))
        self.bounds.setPen(outline_pen(t.foreground, t, bound))

    def _fit_labels(self, *_signal_args) -> None:
        """Label every warp where the rows leave room, else every 2nd, 4th... one: labels never pile up; and the
        warp outlines' width to the rows' height."""
        self._fit_outlines()
        if not self._labels:
            return
        warp_h = self._warp_height_px()
        label_h = max(t.boundingRect().height() for t in self._labels)
        step = 1
        while step * warp_h < label_h * 0.95 and step < len(self._labels):
            step *= 2
        for w, t in enumerate(self._labels):
            t.setVisible(w % step == 0)

    def _paint_gaps(self) -> None:
        if self.rgba is not None:
            self.rgba.reshape(-1, 4)[self._lookup.ravel() < 0] = hex_to_rgba(self.theme.background)

    def on_theme_changed(self) -> None:
        t = self.theme
        style_plot(self.plot, t)
        self._lut = t.lane_lut()
        self._paint_gaps()
        self.gaps.setPen(outline_pen(t.background, t, 2))
        self._fit_outlines(theme_changed=True)
        self.selected_thread_box.setPen(outline_pen(t.selected, t, 4))
        for item in (self.warp_outline, self.selected_warp_outline, self.selected_thread_box):
            item.setBrush(Qt.BrushStyle.NoBrush)
        for item in self._labels:
            item.setColor(QColor(t.muted))
        shown = [LaneState.ACTIVE, LaneState.DIVERGED, LaneState.BARRIER, LaneState.IDLE, LaneState.EXITED,
                 LaneState.NOT_STARTED]
        loops = getattr(self, "_loops", None)
        work = ""
        if loops is not None:
            finite = loops[np.isfinite(loops)]
            work = (f" &nbsp; exited lanes shaded by the loop iterations they ran: darker = more "
                    f"({int(finite.min())} to {int(finite.max())})")
        self.legend.setText(legend_html([(t.lane[s], s.label) for s in shown], t)
                            + f" <span style='white-space:nowrap'><b style='color:{t.current}'>&#9633;</b>&nbsp;issuing warp</span>" + work)
        # the darkest shade of a lane that looped the most: the foreground, so it reads in either theme
        self._work_rgba = np.array(hex_to_rgba(t.foreground), dtype=np.float64)
        font = QFont()
        font.setPixelSize(t.px(15))
        for item in self._labels:
            item.setFont(font)
        self._fit_range()
        self._fit_labels()

    #: compact in a column of views, a warp's row needs no more than this (the rest goes to the other views)
    STACKED_ROW_PX = 16

    def stacked_height(self, width: int) -> int | None:
        L = self.trace.launch if self.trace is not None else None
        if L is None:
            return None
        return self.one_line_px() + self.STACKED_ROW_PX * min(L.warps_per_block, 32)

    # ---- per frame: colours only ----------------------------------------------------------------------
    def block_to_show(self) -> int:
        sel = self.session.selection.block
        return int(sel) if sel is not None else int(self.frames.block[self.frame])

    def on_frame_changed(self) -> None:
        F, f = self.frames, self.frame
        b = self.block_to_show()
        self.states = F.lane_states(b, f)
        colours = self._lut[self.states[self._inside_thread]]
        if self._loops is not None:
            colours = self._shade_by_loops(colours, b)
        self.rgba.reshape(-1, 4)[self._inside] = colours
        self.image.setImage(self.rgba, autoLevels=False)
        if b != self.shown_block:
            self.shown_block = b
            self._update_caption()
        if int(F.block[f]) == b:
            self.warp_outline.setPath(self._warp_paths[int(F.warp[f])])
            self.warp_outline.setVisible(True)
        else:
            self.warp_outline.setVisible(False)

    def _shade_by_loops(self, colours: np.ndarray, b: int) -> np.ndarray:
        """Exited lanes of a data-dependent loop take a shade from their colour toward the foreground by the loop
        iterations they ran, so a block fills in as its warps finish with a picture of where the work was (the
        Mandelbrot set's edge, the lanes a warp waited for)."""
        loops = self._loops[b][self._inside_thread]
        done = (self.states[self._inside_thread] == LaneState.EXITED) & np.isfinite(loops)
        if not done.any():
            return colours
        top = float(np.nanmax(self._loops)) or 1.0
        share = (np.clip(loops[done] / top, 0.0, 1.0) * 0.85)[:, None]
        out = colours.astype(np.float64)
        out[done] = out[done] * (1.0 - share) + self._work_rgba[None, :] * share
        out[done, 3] = 255
        return out.astype(np.uint8)

    def _update_caption(self) -> None:
        L = self.trace.launch
        b = self.shown_block
        how = "selected (Esc follows playback)" if self.session.selection.block is not None else "following playback"
        self.caption.setText(
            f"block {format_block(L, b)} · {L.threads_per_block} threads in {L.warps_per_block} warps · {how}"
        )

    def on_selection_changed(self) -> None:
        sel = self.session.selection
        b = self.block_to_show()
        if b != self.shown_block:
            self.on_frame_changed()
        self._update_caption()
        if sel.block is not None and sel.block == b and sel.warp is not None and sel.thread is None:
            self.selected_warp_outline.setPath(self._warp_paths[sel.warp])
            self.selected_warp_outline.setVisible(True)
        else:
            self.selected_warp_outline.setVisible(False)
        if sel.block is not None and sel.block == b and sel.thread is not None:
            t = sel.thread
            self.selected_thread_box.setRect(QRectF(float(self._col[t]), float(self._row[t]), 1.0, 1.0))
            self.selected_thread_box.setVisible(True)
        else:
            self.selected_thread_box.setVisible(False)

    # ---- clicks select a thread -----------------------------------------------------------------------
    def thread_at(self, x: float, y: float) -> int | None:
        if self.rgba is None:
            return None
        r, c = int(np.floor(y)), int(np.floor(x))
        if 0 <= r < self._lookup.shape[0] and 0 <= c < self._lookup.shape[1] and self._lookup[r, c] >= 0:
            return int(self._lookup[r, c])
        return None

    def cell_center(self, thread: int) -> tuple[float, float]:
        return float(self._col[thread]) + 0.5, float(self._row[thread]) + 0.5

    def _clicked(self, ev) -> None:
        if ev.button() != Qt.MouseButton.LeftButton or self.shown_block is None:
            return
        p = self.plot.getPlotItem().getViewBox().mapSceneToView(ev.scenePos())
        t = self.thread_at(p.x(), p.y())
        if t is not None:
            self.session.selection.select_thread(self.shown_block, t)
