"""Barrier swimlanes: the warps of the current block between ``syncthreads``, and who waits for whom.

One row per warp, one column per issue step. Each warp issues one instruction per step; its
instructions are coloured by barrier phase (alternating blue / green). When a warp reaches a
``syncthreads`` before the others it waits (in the theme's "at barrier" purple, as in the block view) until
the last warp arrives; the last arrivals are outlined in vermillion: everybody else waited for them. A
``grid.sync()`` is labelled as such, and the header says that there every block of the grid waits, not just this
one (the block view shows its warps "at barrier" until the last block arrives). The
theme's "current" colour marks the current frame's instruction, its warp's row and a dashed line through the step.

The timeline is computed from the block's events (``render.barrier_timeline``) when the current block
changes, never per frame; a frame only moves the marker and recolours one cell.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui
from shiboken6 import isValid

from ...model.frames import LaneState, format_block
from ...style import render
from ...style.theme import hex_to_rgba
from .base import TraceView, register_view
from .plots import hide_overlapping_texts
from .panels import (
    MemoryStyle,
    colour_css,
    fit_left_axis,
    header_legend_canvas,
    memory_style,
    restyle_header_legend_canvas,
    segment_item,
    set_segment_pen,
    set_segments,
    style_axes,
)

PHASE_COLOURS = np.array([render.rgba("blue"), render.rgba("bluish_green")], dtype=np.uint8)


def _wait_rgba(style: MemoryStyle) -> np.ndarray:
    """A warp waiting at syncthreads: the theme's 'at barrier' colour, the purple the block view and the grid
    give the same state (it was a grey of its own, 2.0:1 on the light themes' white)."""
    return np.array(hex_to_rgba(style.theme.lane[LaneState.BARRIER]), dtype=np.uint8)


def _warp_list(warps: np.ndarray) -> str:
    warps = [int(w) for w in warps]
    if not warps:
        return "none"
    if len(warps) > 2 and warps == list(range(warps[0], warps[-1] + 1)):
        return f"{warps[0]}–{warps[-1]}"
    if len(warps) > 6:
        return ", ".join(map(str, warps[:6])) + f" … ({len(warps)} warps)"
    return ", ".join(map(str, warps))


@register_view
class BarrierView(TraceView):
    """Swimlanes per warp of the current block: phases between syncthreads, waits, the current frame."""

    view_id = "barriers"
    title = "Barriers"
    default_area = "bottom"
    order = 30

    def __init__(self, session, parent=None):
        super().__init__(session, parent)
        self._block = None
        self.timeline: render.BarrierTimeline | None = None
        self._base = None
        self.current: tuple[int, float] | None = None
        self.style = memory_style(session.theme)
        self.header, self.legend, self.canvas = header_legend_canvas(self, self.style)
        self.plot = self.canvas.addPlot(enableMenu=False)  # its menus are disabled below: not even built
        # the labels move after the view box has changed: thinned once they have
        self.plot.getViewBox().sigResized.connect(lambda *_: QtCore.QTimer.singleShot(0, self._thin_sync_labels))
        self.plot.getViewBox().sigRangeChanged.connect(lambda *_: QtCore.QTimer.singleShot(0, self._thin_sync_labels))
        self.plot.getViewBox().sigTransformChanged.connect(lambda *_: QtCore.QTimer.singleShot(0, self._thin_sync_labels))
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        self.plot.invertY(True)
        self.plot.setMouseEnabled(x=True, y=False)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        self.last_outline = segment_item(render.rgba("vermillion"), 3)
        self.row_outline = segment_item((0, 0, 0), 2)
        self.plot.addItem(self.last_outline)
        self.plot.addItem(self.row_outline)
        self.now_line = pg.InfiniteLine(angle=90)
        self.now_line.setZValue(20)
        self.plot.addItem(self.now_line)
        self.sync_lines: list[pg.InfiniteLine] = []
        self.on_theme_changed()

    # -- theme -------------------------------------------------------------------------------------
    def plots_resized(self) -> None:
        super().plots_resized()
        QtCore.QTimer.singleShot(0, self._thin_sync_labels)

    def _thin_sync_labels(self, *_signal_args) -> None:
        """Barrier labels that would cover each other in a narrow plot: every other one steps aside."""
        if not isValid(self):
            return  # the window closed before this turn came: its lines went with it
        lines = self.sync_lines[: getattr(self, "_shown_syncs", 0)]
        self._fit_label_bands()
        vb = self.plot.getViewBox()
        (x0, x1), _ = vb.viewRange()
        per_px = (x1 - x0) / max(vb.width(), 1.0)
        for line in lines:
            # a label centred on a barrier near an edge of the plot was cut there ('ync 1'): it leans inwards
            half = line.label.boundingRect().width() / 2 + 2
            lean = 0.0 if (line.value() - x0) / per_px < half else 1.0 if (x1 - line.value()) / per_px < half else 0.5
            edge = line.label.anchors[0][1]
            line.label.anchors = [(lean, edge), (lean, edge)]
            line.label.updatePosition()  # where the current view puts it (pyqtgraph moves it only later)
        hide_overlapping_texts([line.label for line in lines])
        self._fit_bottom_label()

    #: the sync labels stand in bands above and below the warps' rows (they sat on warps 0 and 7, covering them)
    _band = 0.0

    def _label_px(self) -> int:
        return self.style.px(self.style.theme.font_px * 0.8)

    def _fit_label_bands(self) -> None:
        """The y range: the warps' rows and, above and below them, a band as tall as a sync label."""
        tl = self.timeline
        if tl is None:
            return
        n_w = max(len(tl.warps), 1)
        vb = self.plot.getViewBox()
        h = vb.height()
        # a label's own height (its text item's margins with it), and the 3% of the height it stands off the edge
        label_h = (self.sync_lines[0].label.boundingRect().height() if self.sync_lines
                   else QtGui.QFontMetrics(self._label_font()).height() + 10)
        band_px = label_h + 4 + 0.03 * h
        bands = 1 if self.compact else 2  # compact: the labels in the top band only (_draw_frame_of_block)
        band = band_px * n_w / (h - bands * band_px) if h > bands * band_px + 20 else 0.5
        if abs(band - self._band) > 0.01 * max(band, 0.1):
            self._band = band
            below = band if bands == 2 else 0.0
            self.plot.setLimits(yMin=-band - 0.5, yMax=n_w + below + 0.5)
            self.plot.setRange(yRange=(-band, n_w + below), padding=0)

    def _label_font(self) -> QtGui.QFont:
        font = QtGui.QFont()
        font.setPixelSize(self._label_px())
        return font

    #: the x axis' title, long where it fits the plot's width, else its first words (it was cut at a projector's
    #: 1280 pixels: 'issue step (each warp issues one instruction per')
    AXIS_TITLES = ("issue step (each warp issues one instruction per step)", "issue step (one instruction per step)",
                   "issue step")

    def compact_changed(self) -> None:
        """Compact: the sync labels in one band, no x-axis title (the header says the phase); back, as before."""
        self._axis_title = None
        self._drawn_key = None
        self._band = 0.0
        if self._block is not None and self.trace is not None:
            self._build_block(self._block)
        self._fit_bottom_label()

    def _fit_bottom_label(self) -> None:
        st = self.style
        if self.compact:
            self.plot.showLabel("bottom", False)
            self._axis_title = None
            return
        font = QtGui.QFont()
        font.setPixelSize(st.px(st.theme.font_px * 0.85))
        fm = QtGui.QFontMetrics(font)
        room = self.plot.getAxis("bottom").width() - 8
        title = next((t for t in self.AXIS_TITLES if fm.horizontalAdvance(t) <= room), self.AXIS_TITLES[-1])
        if title != getattr(self, "_axis_title", None):
            self._axis_title = title
            self.plot.setLabel("bottom", title, color=st.foreground, **{"font-size": f"{font.pixelSize()}px"})

    def on_theme_changed(self) -> None:
        st = self.style = memory_style(self.theme)
        restyle_header_legend_canvas(self, st, [
            ("■", PHASE_COLOURS[0], "running (phases 1, 3, …)"),
            ("■", PHASE_COLOURS[1], "running (phases 2, 4, …)"),
            # a barrier: syncthreads, or a grid.sync() (the lines below say which: "sync 1", "grid.sync 1")
            ("■", _wait_rgba(st), "waiting at a barrier"),
            ("□", render.rgba("vermillion"), "arrived last: the others wait for it"),
            ("┆", st.current, "this frame"),
        ])
        style_axes(self.plot, st)
        self._axis_title = None
        self._fit_bottom_label()
        set_segment_pen(self.row_outline, st.current, 2)
        self.now_line.setPen(pg.mkPen(colour_css(st.current), width=2, style=QtCore.Qt.PenStyle.DashLine))
        if self._block is not None:
            self._build_block(self._block)

    # -- data ------------------------------------------------------------------------------------
    def on_trace_changed(self) -> None:
        self._block = None
        self._drawn_key = None
        self.timeline = None
        self.image.clear()
        if self.trace is None:
            self.header.setText("no trace")

    #: what the sync lines, their labels and the warp axis show (a block's barrier steps, its warps, the style):
    #: a block laid out as the one before (every block of most kernels) leaves them as they are
    _drawn_key = None
    _drawn_style = None
    #: the current block's barrier phases that end at a grid.sync() (labelled and told as such)
    _grid_phases: frozenset = frozenset()

    def _build_block(self, block: int) -> None:
        st = self.style
        tl = render.barrier_timeline(self.prepared, block)
        self._block, self.timeline = block, tl
        self._grid_phases = frozenset(int(p) for p in self.frames.grid_barrier_phases(block))
        self._base = render.barrier_lanes_rgba(tl, PHASE_COLOURS, _wait_rgba(st))
        n_w = len(tl.warps)
        syncs = [p for p in range(tl.n_phases) if tl.ends_with_barrier[:, p].any()]
        every = max(1, -(-n_w // 12))  # at most a dozen labels, so they stay big and apart
        ticks = [(r + 0.5, f"warp {int(w)}") for r, w in enumerate(tl.warps) if r % every == 0]
        width = int(tl.phase_end[-1]) if tl.n_phases else 1
        key = (id(st), tuple((p, float(tl.phase_end[p]), p in self._grid_phases) for p in syncs),
               tuple(t for _, t in ticks), n_w, width)
        if key != self._drawn_key or self._drawn_style is not st:
            self._drawn_style = st
            self._draw_frame_of_block(tl, syncs, ticks, width)
            self._drawn_key = key
        # vermillion boxes around the instructions of the warps that arrived last at each barrier
        segs = []
        for p in range(tl.n_phases):
            col = tl.length[:, p]
            if not tl.ends_with_barrier[:, p].any() or col.min() == col.max():
                continue
            for w in tl.last_arrival(p):
                r = int(np.flatnonzero(tl.warps == w)[0])
                s0 = int(tl.phase_start[p])
                segs.append(render.rect_segments(s0, r + 0.06, s0 + int(col[r]), r + 0.94))
        set_segments(self.last_outline, np.concatenate(segs) if segs else np.zeros((0, 2)))
        self._band = 0.0
        self._fit_label_bands()
        below = 0.0 if self.compact else self._band
        self.plot.setRange(xRange=(0, width), yRange=(-self._band, max(n_w, 1) + below), padding=0)

    def _draw_frame_of_block(self, tl, syncs: list[int], ticks: list, width: int) -> None:
        """The sync lines and their labels, the warp axis and the limits of a block's swimlanes."""
        st = self.style
        n_w = len(tl.warps)
        font = self._label_font()
        # one vertical line per syncthreads; the lines are pooled: creating pyqtgraph items is what costs
        while len(self.sync_lines) < len(syncs):
            line = pg.InfiniteLine(angle=90, label="", labelOpts={"color": st.foreground, "fill": st.background})
            line.label.setFont(font)
            self.plot.addItem(line)
            self.sync_lines.append(line)
        pen = pg.mkPen(colour_css(st.foreground), width=2)
        for k, (line, p) in enumerate(zip(self.sync_lines, syncs)):
            # labels alternate between bottom and top so neighbouring barriers never cover each other; compact (a
            # strip of a projector), all stand in one band above the rows: two bands left 8 warps 3 px each
            bottom = k % 2 == 0 and not self.compact
            line.setPen(pen)
            line.setPos(float(tl.phase_end[p]))
            line.label.setFormat(f"grid.sync {p + 1}" if p in self._grid_phases else f"sync {p + 1}")
            line.label.setPosition(0.97 if bottom else 0.03)
            line.label.anchors = [(0.5, 1), (0.5, 1)] if bottom else [(0.5, 0), (0.5, 0)]
            line.label.setColor(st.foreground)
            line.label.fill = pg.mkBrush(st.background)
            line.label.setFont(font)
            line.show()
        for line in self.sync_lines[len(syncs):]:
            line.hide()
        self._shown_syncs = len(syncs)
        self._thin_sync_labels()
        fit_left_axis(self.plot, ticks, st)
        self.plot.setLimits(xMin=-2, xMax=width + 2, yMin=-self._band - 0.5, yMax=n_w + self._band + 0.5)

    def on_frame_changed(self) -> None:
        tr, frames = self.trace, self.frames
        if tr is None or frames is None or frames.n_frames == 0:
            return
        f = min(max(int(self.frame), 0), frames.n_frames - 1)
        block = int(frames.block[f])
        if block != self._block:
            self._build_block(block)
        tl = self.timeline
        warp, step, phase = int(frames.warp[f]), int(frames.step[f]), int(frames.phase[f])
        pos = self.current = tl.position(warp, step)
        img = self._base.copy()
        if pos is not None:
            r, x = pos
            img[r, int(x)] = (*self.style.current[:3], 255)
            self.now_line.setPos(x + 0.5)
            self.now_line.show()
            set_segments(self.row_outline, render.rect_segments(-0.5, r, img.shape[1] + 0.5, r + 1))
        else:
            self.now_line.hide()
            set_segments(self.row_outline, np.zeros((0, 2)))
        self.image.setImage(img, autoLevels=False)
        self.header.setText(self._words(block, warp, phase))

    def _words(self, block: int, warp: int, phase: int) -> str:
        tl = self.timeline
        head = f"block {format_block(self.trace.launch, block)} &nbsp;·&nbsp; warp {warp}"
        if tl.n_phases <= 1:
            return head + " &nbsp;·&nbsp; no syncthreads in this block: no warp waits for another"
        p = min(phase, tl.n_phases - 1)
        head += f" &nbsp;·&nbsp; phase {p + 1} of {tl.n_phases}"
        if not tl.ends_with_barrier[:, p].any():
            return head + " (after the last syncthreads)"
        col = tl.length[:, p]
        last = tl.last_arrival(p)
        early = tl.warps[col < col.max()]
        grid = p in self._grid_phases
        sync = f"grid.sync {p + 1}" if grid else f"sync {p + 1}"
        # a grid.sync() holds the block until every block of the grid arrives, whatever its own warps do
        grid_words = " &nbsp;·&nbsp; a grid.sync(): every block of the grid waits here, not just this one" if grid else ""
        if early.size == 0:
            return head + f": all warps reach {sync} at the same step: none waits for another" + grid_words
        wait = int(col.max() - col.min())
        return (
            head
            + f": at {sync}, warps {_warp_list(early)} wait for "
            + f"<span style='color:{self.theme.alert}'>warp{'s' if len(last) > 1 else ''} "
            + f"{_warp_list(last)}</span> (up to {wait} step{'s' if wait != 1 else ''})"
            + grid_words
        )
