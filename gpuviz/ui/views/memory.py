"""Global memory view (the Qt pieces the memory views share are in panels.py).

Each global array is drawn as one RGBA ``ImageItem``: 2-d arrays in their own shape, 1-d arrays as
strips wrapped into rows of a multiple of 32 elements (one 128-byte line of float32), so coalescing is
visible as one lit row segment. Per frame only the colours change:

* background: how often each cell was accessed in frames 0..f, the theme's heat map (cividis) pulled
  toward the background so the lit cells stand out; never-touched cells are a flat grey;
* lit cells: what the current warp instruction touches, in the theme's load / store colours, atomics
  reddish purple;
* outlines in the theme's "current" colour: the 32-byte sectors the current request costs;
* outlines in the theme's "selected" colour: every access of the selected thread, and the selected cell.

Clicking a cell selects it (``session.selection.select_cell``). The running counts come from
:class:`gpuviz.style.render.RunningCounts` (checkpoints + incremental updates), so scrubbing through a
million events stays interactive. The per-line table and the occupancy panel are in ``occupancy.py``.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from ...model.trace import EventKind
from ...style import render
from ..plaintext import esc
from .base import PREDICT_TEXT, TraceView, register_view
from .panels import (
    ArrayPanelsMixin,
    CellImage,
    MemoryStyle,
    cell_plot,
    cells_edge_item,
    colour_css,
    docked,
    fit_left_axis,
    header_legend_canvas,
    keep_ticks_inside,
    memory_style,
    restyle_header_legend_canvas,
    segment_item,
    selected_cell,
    selected_thread,
    set_colour_bar_max,
    set_segment_pen,
    set_segments,
    style_axes,
    style_cells_edge,
    style_colour_bar,
)

# ---- the global memory view ---------------------------------------------------------------------


class _ArrayPanel:
    """One global array: a titled plot with its image, overlays and its slice of the running counts."""

    def __init__(self, canvas: pg.GraphicsLayoutWidget, row: int, col: int, array_id: int, info, style: MemoryStyle,
                 claimed: list | None = None):
        self.array_id = array_id
        self.info = info
        self.layout = render.array_layout(info.shape)
        self.plot = cell_plot(canvas, row, col, style, claimed=claimed)
        #: the columns the plot spans: a strip of fewer than 32 elements is drawn as the start of a row of 32
        self.shown_cols = self.layout.cols
        if len(info.shape) < 2:
            # a wrapped strip: the left axis gives the element index each row starts at
            self.plot.hideAxis("bottom")
            if self.layout.size < 32:
                # float32[1] filled the plot's width as one large empty box: its cells are as big as a 32-element
                # strip's, square, at the left
                self.shown_cols = 32
            else:
                self.plot.setAspectLocked(False)  # cells of a strip are nearly square anyway; fill the width
            step = max(1, -(-self.layout.rows // 4))
            # the element index each row starts at, written as an index (the shared view's axis counts bytes)
            ticks = [(r + 0.5, f"[{r * self.layout.cols:,}]") for r in range(0, self.layout.rows, step)]
            self.plot.setLabel("left", "element")
            fit_left_axis(self.plot, ticks, style)
        else:
            # cells are elements: rows and columns of the array, never a range beyond its edges
            self.plot.setLabel("left", "row")
            self.plot.setLabel("bottom", "column")
            keep_ticks_inside(self.plot.getAxis("left"), 0, self.layout.rows - 1)
            keep_ticks_inside(self.plot.getAxis("bottom"), 0, self.layout.cols - 1)
        self.image = CellImage()
        self.plot.addItem(self.image)
        self.edge = cells_edge_item(0, self.layout.size, self.layout.cols, style)  # under the overlays: added first
        self.plot.addItem(self.edge)
        self.sectors = segment_item(style.current, 3)
        self.thread_outline = segment_item(style.selected, 2)
        self.cell_outline = segment_item(style.selected, 4)
        for item in (self.sectors, self.thread_outline, self.cell_outline):
            self.plot.addItem(item)
        self.buffer = np.zeros((self.layout.rows, self.layout.cols, 4), dtype=np.uint8)
        self.flat = self.buffer.reshape(-1, 4)[: self.layout.size]
        self.plot.setRange(xRange=(0, self.shown_cols), yRange=(0, self.layout.rows), padding=0.02)
        self.vmax = 1
        self.palette = None
        self.access: render.ArrayAccess | None = None
        # what ``flat`` shows, so that the next frame repaints only the cells that change: the events counted
        # in its heat (None: repaint every cell) and the cells the last frame lit in access colours
        self.drawn_n: int | None = None
        self.lit = np.zeros(0, dtype=np.int64)
        self.had_sectors = False


@register_view
class GlobalMemoryView(ArrayPanelsMixin, TraceView):
    """Global arrays as heat maps of accesses so far, the current warp request lit, sectors outlined."""

    view_id = "memory"
    title = "Global memory"
    short_title = "Global"
    default_area = "bottom"
    order = 10

    def __init__(self, session, parent=None):
        super().__init__(session, parent)
        self._panels: list[_ArrayPanel] = []
        self._ncols = 0
        self._counts: render.RunningCounts | None = None
        self.style = memory_style(session.theme)
        self.header, self.legend, self.canvas = header_legend_canvas(self, self.style)
        self.on_theme_changed()

    # -- theme -------------------------------------------------------------------------------------
    def on_theme_changed(self) -> None:
        st = self.style = memory_style(self.theme)
        restyle_header_legend_canvas(self, st, [
            ("■", st.read, "read"),
            ("■", st.write, "write"),
            ("■", st.atomic, "atomic"),
            ("□", st.current, "32-byte sectors of this request"),
            ("□", st.selected, "selected thread"),
        ])
        if self.colour_bar is not None:
            style_colour_bar(self.colour_bar, st, self.BAR_LABEL)
        for p in self._panels:
            style_axes(p.plot, st)
            style_cells_edge(p.edge, st)
            set_segment_pen(p.sectors, st.current, 3)
            set_segment_pen(p.thread_outline, st.selected, 2)
            set_segment_pen(p.cell_outline, st.selected, 4)
            p.palette = render.count_palette(p.vmax, st.heat, st.untouched)
            p.drawn_n = None  # new colours: every cell again
        self._retitle()
        self._ncols = 0  # bigger text: titles and axes take more room, the best number of columns changes
        self._arrange()

    # -- per trace: layout, running counts, palettes ----------------------------------------------
    @staticmethod
    def running_counts(trace, frames):
        """Accesses per cell of every global array up to each frame: built once per trace (numpy only)."""
        ids = [i for i, a in enumerate(trace.launch.arrays) if a.space == "global"]
        return render.per_frames(frames, ("global running counts", tuple(ids)), lambda: render.RunningCounts(
            trace, render.frame_of_events(frames, len(trace)), ids, memory_events=frames.memory_events))

    @classmethod
    def prepare(cls, prepared) -> None:
        if any(a.space == "global" for a in prepared.launch.arrays):
            cls.running_counts(prepared.trace, prepared.frames)

    #: what the colour bar beside the arrays counts
    BAR_LABEL = "accesses so far"
    ARRAY_SPACE = "global"

    def on_trace_changed(self) -> None:
        for _ in self.trace_changed_steps():
            pass

    def trace_changed_steps(self):
        trace, frames = self.trace, self.frames
        self._recycle_colour_bar()
        self.canvas.clear()
        self._panels = []
        self._counts = None
        if trace is None or frames is None:
            self.header.setText("no trace")
            return
        ids = [i for i, a in enumerate(trace.launch.arrays) if a.space == "global"]
        if not ids:
            self.header.setText("this kernel touches no global arrays")
            return
        self._counts = self.running_counts(trace, frames)
        # one scale for every array, so that one colour bar reads them all (and brighter is more across arrays)
        vmax = max([int(self._counts.total[self._counts.slice_of(a)].max(initial=0)) for a in ids] + [1])
        for k, a in enumerate(ids):
            if k:
                yield  # each array's plot a turn of its own (added to the canvas, styled, given its items)
            st = self.style
            panel = _ArrayPanel(self.canvas, k, 0, a, trace.launch.arrays[a], st,
                                claimed=self.__dict__.get("_claimed_plots"))
            panel.vmax = vmax
            panel.palette = render.count_palette(panel.vmax, st.heat, st.untouched)
            panel.image.cellClicked.connect(lambda r, c, p=panel: self._cell_clicked(p, r, c))
            self._panels.append(panel)
        yield
        self.colour_bar = self._new_colour_bar()
        set_colour_bar_max(self.colour_bar, vmax)
        self._ncols = 0
        self._retitle()  # before arranging: a title's width decides how many arrays stand side by side
        self._arrange()
        yield  # the first frame drawn in a turn of its own

    def _retitle(self) -> None:
        st = self.style
        for p in self._panels:
            # how often a cell was touched is the colour bar's to say: the title stays short enough for
            # the arrays to stand side by side (the name alone in a narrow view; all of it in the tooltip)
            shape = f"{p.info.dtype}[{','.join(map(str, p.info.shape))}]"
            title = f"<b>{esc(p.info.name)}</b>" + ("" if self._short_titles else f"&nbsp; {shape}")
            p.plot.setToolTip(f"{p.info.name}: {shape}, {p.info.nbytes:,} bytes")
            p.plot.setTitle(title, color=st.foreground, size=f"{st.px(st.theme.font_px * 0.85)}px")

    # -- per frame: colours only -------------------------------------------------------------------
    def on_frame_changed(self) -> None:
        tr, frames = self.trace, self.frames
        if tr is None or frames is None or not self._panels or frames.n_frames == 0:
            return
        f = min(max(int(self.frame), 0), frames.n_frames - 1)
        running = self._counts
        counts = running.counts_at(f)
        n = running.n_events_through(f)
        acc = render.frame_accesses(tr, frames.events(f))
        st = self.style
        stats = []
        for p in self._panels:
            access = p.access = acc.by_array.get(p.array_id)
            if not self._repaint_heat(p, counts, n) and access is None and not p.had_sectors:
                continue  # not one of its pixels differs from what is on screen: no new image, no repaint
            if access is not None:
                render.paint_accesses(p.flat, access, colours=st.access_colours)
                p.lit = access.index.astype(np.int64, copy=False)
                spans = render.sector_spans(access.index, p.info.itemsize)
                set_segments(p.sectors, render.span_outline_segments(spans, p.layout))
                p.had_sectors = True
                n_r, n_w = int(access.is_read.sum()), int(access.is_write.sum())
                best = max(1, -(-len(np.unique(access.index)) * p.info.itemsize // 32))
                verb = "read" if n_r and not n_w else "write" if n_w and not n_r else "access"
                colour = colour_css(st.write if n_w and not n_r else st.read if n_r and not n_w else st.atomic)
                stats.append(
                    f"<span style='color:{colour}'>{esc(p.info.name)}</span>: {len(access.events)} lanes {verb} "
                    f"{len(np.unique(access.index))} elements in <b>{len(spans)} sector{'s' if len(spans) != 1 else ''}</b>"
                    f" of 32 bytes (at best {best})"
                )
            else:
                set_segments(p.sectors, np.zeros((0, 2)))
                p.had_sectors = False
            p.image.setImage(p.buffer, autoLevels=False)
        lines = [] if docked(self) else [f"frame {f + 1:,} of {frames.n_frames:,} &nbsp;·&nbsp; {esc(frames.describe(f))}"]
        if self.session.predicting and stats:  # a lesson asks how many sectors: hold the count back
            stats = [PREDICT_TEXT]
            for p in self._panels:
                set_segments(p.sectors, np.zeros((0, 2)))
        lines.append(" &nbsp;·&nbsp; ".join(stats) if stats else "this step touches no global array")
        self.header.setText("<br>".join(lines))

    #: a frame this many counted events or fewer from the one on screen repaints only the cells they touch
    _INCREMENTAL_EVENTS = 1 << 16

    def _repaint_heat(self, p: _ArrayPanel, counts: np.ndarray, n: int) -> bool:
        """Bring ``p.flat`` to the heat of ``counts`` (the counts through ``n`` counted events), without the last
        frame's access colours; True when any pixel may have changed. Only the cells counted between the frame
        on screen and this one, and those the last frame lit, are repainted when that frame is near."""
        mine = counts[self._counts.slice_of(p.array_id)]
        if p.drawn_n is None or abs(n - p.drawn_n) > max(self._INCREMENTAL_EVENTS, p.layout.size // 16):
            render.counts_to_rgba(mine, p.palette, out=p.flat)
            p.drawn_n, p.lit = n, p.lit[:0]
            return True
        sl = self._counts.slice_of(p.array_id)
        moved = self._counts.cells_between(p.drawn_n, n)
        moved = moved[(moved >= sl.start) & (moved < sl.stop)] - sl.start
        cells = np.concatenate((moved, p.lit)) if p.lit.size else moved
        p.drawn_n, p.lit = n, p.lit[:0]
        if cells.size == 0:
            return False
        words = p.flat.view(np.uint32).reshape(-1)
        words[cells] = np.take(p.palette, mine[cells], mode="clip")
        return True

    # -- selection -----------------------------------------------------------------------------------
    def on_selection_changed(self) -> None:
        tr = self.trace
        selection = self.session.selection
        thread = selected_thread(selection)
        cell = selected_cell(selection)
        thread_events = None
        if tr is not None and thread is not None:
            ev = self.prepared.events_of_thread(*thread)
            thread_events = ev[np.isin(tr.kind[ev], _MEMORY_KINDS)]
        for p in self._panels:
            segs = np.zeros((0, 2))
            if thread_events is not None:
                mine = thread_events[tr.array[thread_events] == p.array_id]
                segs = render.cell_outline_segments(tr.index[mine], p.layout)
            set_segments(p.thread_outline, segs)
            if cell is not None and cell[0] == p.array_id:
                set_segments(p.cell_outline, render.cell_outline_segments(np.array([cell[1]]), p.layout, inset=0.0))
            else:
                set_segments(p.cell_outline, np.zeros((0, 2)))

    def _cell_clicked(self, panel: _ArrayPanel, row: int, col: int) -> None:
        flat = panel.layout.flat_of(row, col)
        if flat >= 0:
            self.session.selection.select_cell(panel.array_id, flat)

    def panel_of(self, array_name: str) -> _ArrayPanel:
        """The panel showing one array (tests and snapshots look at its image)."""
        for p in self._panels:
            if p.info.name == array_name:
                return p
        raise KeyError(f"the global memory view shows no array named {array_name!r}")


_MEMORY_KINDS = np.array(sorted(int(k) for k in EventKind if k.is_memory), dtype=np.uint8)
