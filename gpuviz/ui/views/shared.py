"""Shared memory view: each shared array laid out as 32 four-byte banks.

Columns are banks 0..31, rows are successive 128-byte rows of words, so lanes that hit one column at
one step hit one bank. Per frame (colours only):

* background: accesses so far *in the current block* (shared memory belongs to a block), viridis pulled
  toward the background; never-touched words stay grey;
* lit words: what the current warp instruction reads or writes (the theme's load / store colours),
  with the recorded values written in the cells when they fit;
* conflict outline and a translucent band over the bank column: the bank(s) where the current request
  has its n-way conflict. The n comes from :func:`gpuviz.model.analysis.shared_banks` (n distinct
  words on one bank; many lanes reading one word is a broadcast, not a conflict);
* hatched corners: words with a race in this block (touched by different threads between two
  barriers, at least one writing), from :func:`gpuviz.model.analysis.races`.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui
from shiboken6 import isValid

from ...model import analysis
from ...model.narration import atomic_queue_phrase
from ...model.trace import EventKind, Trace
from ...style import render
from ..plaintext import esc
from .base import PREDICT_TEXT, TraceView, register_view
from .plots import thin_tick_labels
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

_SHARED_KINDS = np.array([int(EventKind.SHARED_LOAD), int(EventKind.SHARED_STORE), int(EventKind.ATOMIC)], np.uint8)
#: most value labels drawn at once (a warp touches at most 32 words, doubles 64)
_MAX_LABELS = 64


def shared_offset_words(trace: Trace, array_id: int) -> int:
    """Where an array starts in its block's shared memory, in 4-byte words (0 unless the backend said)."""
    info = trace.launch.arrays[array_id]
    offsets = trace.launch.meta.get("shared_offsets") or {}
    return int(offsets.get(info.name, 0)) // render.BANK_BYTES


class SharedLayout:
    """Words of one shared array on the 32-bank grid: column = bank, row = 128-byte row.

    An array that starts mid-row (``shared_offsets``) keeps its true banks: the grid starts at the row
    holding its first word and ``first`` cells of that row are padding.
    """

    def __init__(self, trace: Trace, array_id: int):
        info = trace.launch.arrays[array_id]
        self.itemsize = info.itemsize
        start_word = shared_offset_words(trace, array_id)
        self.first = start_word % render.N_BANKS
        self.row0 = start_word // render.N_BANKS
        n_words = -(-info.nbytes // render.BANK_BYTES)
        self.n_words = n_words
        self.grid = render.bank_layout((self.first + n_words) * render.BANK_BYTES)
        self.start_word = start_word

    def cells_of_elements(self, index: np.ndarray) -> np.ndarray:
        """Grid cells (flat) of all the words the given elements cover."""
        return render.words_of_elements(index, self.itemsize) + self.first

    def first_cells(self, index: np.ndarray) -> np.ndarray:
        """Grid cell of each element's first word (the word whose bank the analysis counts)."""
        return np.asarray(index, dtype=np.int64) * self.itemsize // render.BANK_BYTES + self.first

    def bank_of_cells(self, cells: np.ndarray) -> np.ndarray:
        return np.asarray(cells, dtype=np.int64) % render.N_BANKS

    def element_of_cell(self, cell: int) -> int:
        word = int(cell) - self.first
        if word < 0 or word >= self.n_words:
            return -1
        return word * render.BANK_BYTES // self.itemsize


class ConflictIndex:
    """Looks up the analysis's n-way figure of a warp request: (block, warp, step, array) -> ways."""

    def __init__(self, trace: Trace):
        req = analysis.shared_banks(trace).requests
        L = trace.launch
        self._n_arrays = max(len(L.arrays), 1)
        self._step_lo = int(req["step"].min()) if len(req["step"]) else 0
        self._step_range = (int(req["step"].max()) - self._step_lo + 1) if len(req["step"]) else 1
        self._wpb = L.warps_per_block
        keys = self._key(req["block"], req["warp"], req["step"], req["array"])
        order = np.argsort(keys, kind="stable")
        self._keys = keys[order]
        self._ways = req["ways"][order]

    def _key(self, block, warp, step, array):
        block = np.asarray(block, dtype=np.int64)
        k = block * self._wpb + np.asarray(warp, dtype=np.int64)
        k = k * self._step_range + (np.asarray(step, dtype=np.int64) - self._step_lo)
        return k * self._n_arrays + np.asarray(array, dtype=np.int64)

    def ways(self, block: int, warp: int, step: int, array: int) -> int:
        """The largest n-way conflict among the requests of that warp instruction on that array (1: none)."""
        if not (0 <= step - self._step_lo < self._step_range):
            return 1
        k = int(self._key(block, warp, step, array))
        lo, hi = np.searchsorted(self._keys, k, "left"), np.searchsorted(self._keys, k, "right")
        return int(self._ways[lo:hi].max()) if hi > lo else 1


def conflict_banks(cells: np.ndarray, ways: int) -> tuple[np.ndarray, np.ndarray]:
    """Which banks of one request serve ``ways`` distinct words, and those words' cells.

    The *figure* (``ways``) is the analysis's; this only finds where on the bank grid it happens.
    """
    cells = np.unique(np.asarray(cells, dtype=np.int64))
    if ways <= 1 or cells.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    banks = cells % render.N_BANKS
    per_bank = np.bincount(banks, minlength=render.N_BANKS)
    hot = np.flatnonzero(per_bank >= ways)
    return hot, cells[np.isin(banks, hot)]


def race_cells(trace: Trace, block: int, array_id: int, layout: SharedLayout) -> np.ndarray:
    """Grid cells of the words of ``array_id`` with a race in ``block`` (any barrier phase)."""
    rec = analysis.races(trace).records
    if len(rec) == 0:
        return np.zeros(0, np.int64)
    m = (rec["space"] == "shared") & (rec["array"] == array_id) & (rec["block"] == block)
    return np.unique(layout.cells_of_elements(rec["index"][m]))


class _BlockShared:
    """One block's shared-memory events in frame order, as grid cells of each shared array."""

    def __init__(self, prepared, event_frames: np.ndarray, block: int, layouts: dict[int, SharedLayout]):
        trace = prepared.trace
        sel = render.block_events(prepared, block)
        sel = sel[np.isin(trace.kind[sel], _SHARED_KINDS) & np.isin(trace.array[sel], list(layouts))]
        sel = sel[np.argsort(event_frames[sel], kind="stable")]
        self.cells: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for a, lay in layouts.items():
            ev = sel[trace.array[sel] == a]
            per = max(1, lay.itemsize // render.BANK_BYTES)
            self.cells[a] = (np.repeat(event_frames[ev].astype(np.int64), per), lay.cells_of_elements(trace.index[ev]))

    def counts_at(self, a: int, frame: int, n_cells: int) -> np.ndarray:
        frames, cells = self.cells[a]
        n = int(np.searchsorted(frames, frame, side="right"))
        return np.bincount(cells[:n], minlength=n_cells)[:n_cells]


class _SharedPanel:
    #: a bank's column may be this many times wider than a row of bytes is tall (cells were square: a 32x32 tile
    #: of 32 rows in a short plot was drawn 110 px wide in a 500-px plot, its bank labels 12, 20, 28 left out)
    MAX_CELL_RATIO = 4.0

    def fit_cells(self) -> None:
        """The 32 banks across the plot's width, within :data:`MAX_CELL_RATIO` of square cells."""
        vb = self.plot.getViewBox()
        w, h = vb.width(), vb.height()
        if w < 20 or h < 20:
            return
        ratio = min(max((w / 32) / (h / max(self.layout.rows, 1)), 1.0), self.MAX_CELL_RATIO)
        if abs(ratio - self._ratio) > 0.01 * ratio:
            self._ratio = ratio
            self.plot.setAspectLocked(True, ratio=ratio)
            self.plot.setRange(xRange=(0, 32), yRange=(0, self.layout.rows), padding=0.02)

    def __init__(self, canvas: pg.GraphicsLayoutWidget, row: int, col: int, trace: Trace, array_id: int,
                 style: MemoryStyle, claimed: list | None = None):
        self.array_id = array_id
        self.info = trace.launch.arrays[array_id]
        self.lay = SharedLayout(trace, array_id)
        self.layout = self.lay.grid
        self.plot = cell_plot(canvas, row, col, style, claimed=claimed)
        self.plot.showAxis("top")
        self.plot.hideAxis("bottom")
        self.image = CellImage()
        self.plot.addItem(self.image)
        self.edge = cells_edge_item(self.lay.first, self.lay.n_words, self.layout.cols, style)  # under the overlays
        self.plot.addItem(self.edge)
        # a translucent band behind nothing but above the image: the conflicting bank's whole column
        self.bank_band = pg.ImageItem(axisOrder="row-major")
        self.bank_band.setZValue(5)
        self.plot.addItem(self.bank_band)
        self.conflict = segment_item(style.conflict, 3)
        self.conflict.setZValue(12)  # above the value labels
        self.races = segment_item(style.race, 3)
        self.thread_outline = segment_item(style.selected, 2)
        self.cell_outline = segment_item(style.selected, 4)
        for item in (self.conflict, self.races, self.thread_outline, self.cell_outline):
            self.plot.addItem(item)
        self.buffer = np.zeros((self.layout.rows, self.layout.cols, 4), dtype=np.uint8)
        self.flat = self.buffer.reshape(-1, 4)[: self.layout.size]
        top = self.plot.getAxis("top")
        top.setTicks([[(b + 0.5, str(b)) for b in range(0, 32, 4)], [(b + 0.5, "") for b in range(32)]])
        thin_tick_labels(top)
        top.setStyle(textFillLimits=[(0, 0.95)])
        # at most 4 byte-offset labels: a short tile must not stack its labels on top of each other
        step = max(1, -(-self.layout.rows // 4))
        row0 = self.lay.row0
        # rows are 128-byte lines of 32 banks: the axis says bytes (the global view's says element indexes)
        self.plot.setLabel("left", "bytes")  # short: a tile of 8 rows is not taller than this
        self.plot.setLabel("top", "bank")
        fit_left_axis(self.plot, [(r + 0.5, f"{(r + row0) * 128} B") for r in range(0, self.layout.rows, step)], style)
        self.plot.setRange(xRange=(0, 32), yRange=(0, self.layout.rows), padding=0.02)
        self.labels: list[pg.TextItem] = []
        self._ratio = 1.0
        self.race_cells = np.zeros(0, dtype=np.int64)
        self.vmax = 1
        self.palette = None
        self._palette_heat = None  # the heat map the palette was made of
        self._title = None  # (text, colour, size) of the title set last
        # what the current frame shows, for tests and the details panel
        self.ways = 1
        self.conflict_banks = np.zeros(0, np.int64)
        self.lit = np.zeros(0, np.int64)


@register_view
class SharedMemoryView(ArrayPanelsMixin, TraceView):
    """Shared arrays as 32 banks: this frame's words lit with their values, conflicts and races marked."""

    view_id = "shared"
    title = "Shared memory"
    short_title = "Shared"
    default_area = "bottom"
    order = 20

    def __init__(self, session, parent=None):
        super().__init__(session, parent)
        self._panels: list[_SharedPanel] = []
        self._ncols = 0
        self._block = None
        self._block_shared: _BlockShared | None = None
        self._event_frames = None
        self._conflicts: ConflictIndex | None = None
        self.style = memory_style(session.theme, "viridis")
        self.header, self.legend, self.canvas = header_legend_canvas(self, self.style)
        self.on_theme_changed()

    # -- theme -------------------------------------------------------------------------------------
    def on_theme_changed(self) -> None:
        st = self.style = memory_style(self.theme, "viridis")
        restyle_header_legend_canvas(self, st, [
            ("■", st.read, "read"),
            ("■", st.write, "write"),
            ("▮", st.conflict, "bank conflict"),
            ("◣", st.race, "race"),
            ("□", st.selected, "selected thread"),
        ])
        if self.colour_bar is not None:
            style_colour_bar(self.colour_bar, st, self.BAR_LABEL)
        for p in self._panels:
            style_axes(p.plot, st)
            style_cells_edge(p.edge, st)
            set_segment_pen(p.conflict, st.conflict, 3)
            set_segment_pen(p.races, st.race, 3)
            set_segment_pen(p.thread_outline, st.selected, 2)
            set_segment_pen(p.cell_outline, st.selected, 4)
            p.palette = render.count_palette(p.vmax, st.heat, st.untouched)
            p.label_font = None
        self._ncols = 0  # bigger text: titles and axes take more room, the best number of columns changes
        self._arrange()
        if self._block is not None:
            self._enter_block(self._block)

    # -- per trace ---------------------------------------------------------------------------------
    @classmethod
    def prepare(cls, prepared) -> None:
        trace = prepared.trace
        if any(a.space == "shared" for a in trace.launch.arrays):
            render.per_frames(prepared.frames, "conflict index", lambda: ConflictIndex(trace))

    #: what the colour bar beside the arrays counts (shared memory is the block's: so are its counts)
    BAR_LABEL = "accesses in this block"
    ARRAY_SPACE = "shared"

    def on_trace_changed(self) -> None:
        for _ in self.trace_changed_steps():
            pass

    def trace_changed_steps(self):
        trace, frames = self.trace, self.frames
        self._recycle_colour_bar()
        self.canvas.clear()
        self._panels = []
        self._block = None
        self._block_shared = None
        self._conflicts = None
        if trace is None or frames is None:
            self.header.setText("no trace")
            return
        ids = [i for i, a in enumerate(trace.launch.arrays) if a.space == "shared"]
        if not ids:
            self.header.setText("this kernel uses no shared memory")
            return
        self._event_frames = render.frame_of_events(frames, len(trace))
        self._conflicts = render.per_frames(frames, "conflict index", lambda: ConflictIndex(trace))
        for k, a in enumerate(ids):
            yield  # each array's plot a turn of its own (added to the canvas, styled, given its items)
            panel = _SharedPanel(self.canvas, k, 0, trace, a, self.style, claimed=self.__dict__.get("_claimed_plots"))
            panel.image.cellClicked.connect(lambda r, c, p=panel: self._cell_clicked(p, r, c))
            self._panels.append(panel)
        yield
        self.colour_bar = self._new_colour_bar()
        self._ncols = 0
        self._retitle()  # before arranging: a title's width decides how many tiles stand side by side
        self._arrange()
        QtCore.QTimer.singleShot(0, self._fit_cells)
        yield  # the first frame drawn in a turn of its own

    def plots_resized(self) -> None:
        super().plots_resized()
        QtCore.QTimer.singleShot(0, self._fit_cells)  # once the plots have their new sizes

    def _fit_cells(self) -> None:
        if isValid(self):
            for p in self._panels:
                p.fit_cells()

    def _enter_block(self, block: int) -> None:
        tr, st = self.trace, self.style
        self._block = block
        self._block_shared = _BlockShared(self.prepared, self._event_frames, block,
                                          {p.array_id: p.lay for p in self._panels})
        # one scale for all the block's arrays, read on one colour bar
        vmax = max([int(self._block_shared.counts_at(p.array_id, self.frames.n_frames, p.layout.size).max(initial=0))
                    for p in self._panels] + [1])
        if getattr(self.colour_bar, "vmax", None) != vmax:  # the same scale as the block before: the bar as it is
            set_colour_bar_max(self.colour_bar, vmax)
        for p in self._panels:
            if p.vmax != vmax or p.palette is None or p._palette_heat is not st.heat:
                p.palette = render.count_palette(vmax, st.heat, st.untouched)
                p._palette_heat = st.heat
            p.vmax = vmax
            p.race_cells = race_cells(tr, block, p.array_id, p.lay)
            set_segments(p.races, _corner_marks(p.race_cells, p.layout))
        self._retitle()  # the race count is the block's (titles are set here, not on every frame)
        self.on_selection_changed()

    def _retitle(self) -> None:
        st = self.style
        for p in self._panels:
            # short enough for two tiles to stand side by side (the bytes axis gives the size); in a narrow
            # view the name alone (_arrange), the type and shape in the tooltip
            title = f"<b>{esc(p.info.name)}</b>"
            if not self._short_titles:
                title += f" &nbsp;{p.info.dtype}[{','.join(map(str, p.info.shape))}]"
            if len(p.race_cells):
                title += f" · <span style='color:{colour_css(st.race)}'>◣ {len(p.race_cells)}{'' if self._short_titles else ' race'}</span>"
            size = f"{st.px(st.theme.font_px * 0.85)}px"
            if p._title != (title, st.foreground, size):  # a block's titles as the last one's (no races): no relayout
                p._title = (title, st.foreground, size)
                p.plot.setTitle(title, color=st.foreground, size=size)
            p.plot.setToolTip(f"{p.info.name}: {p.info.dtype}[{','.join(map(str, p.info.shape))}], {p.info.nbytes:,} bytes")

    # -- per frame ---------------------------------------------------------------------------------
    def on_frame_changed(self) -> None:
        tr, frames = self.trace, self.frames
        if tr is None or frames is None or not self._panels or frames.n_frames == 0:
            return
        f = min(max(int(self.frame), 0), frames.n_frames - 1)
        block, warp, step = int(frames.block[f]), int(frames.warp[f]), int(frames.step[f])
        if block != self._block:
            self._enter_block(block)
        acc = render.frame_accesses(tr, frames.events(f))
        st = self.style
        stats = []
        for p in self._panels:
            counts = self._block_shared.counts_at(p.array_id, f, p.layout.size)
            render.counts_to_rgba(counts, p.palette, out=p.flat)
            p.flat[: p.lay.first] = render.PADDING_RGBA
            access = acc.by_array.get(p.array_id)
            labels = []
            p.ways, p.conflict_banks, p.lit = 1, np.zeros(0, np.int64), np.zeros(0, np.int64)
            conflict_segs = np.zeros((0, 2))
            if access is not None:
                render.paint_accesses(p.flat, access, p.lay.cells_of_elements, st.access_colours)
                p.lit = np.unique(p.lay.cells_of_elements(access.index))
                ways = self._conflicts.ways(block, warp, step, p.array_id)
                banks, hot = conflict_banks(p.lay.first_cells(access.index), ways)
                p.ways, p.conflict_banks = ways, banks
                n_lanes = len(access.events)
                n_words = len(np.unique(p.lay.first_cells(access.index)))
                name = f"<span style='color:{colour_css(st.write if access.is_write.any() else st.read)}'>{esc(p.info.name)}</span>"
                if ways > 1:
                    conflict_segs = render.cell_outline_segments(hot, p.layout, inset=0.0)
                    bank_list = ", ".join(map(str, banks[:6])) + (" …" if len(banks) > 6 else "")
                    stats.append(
                        f"{name}: {n_lanes} lanes, {n_words} words → <b>{ways}-way bank conflict</b> "
                        f"(bank{'s' if len(banks) > 1 else ''} {bank_list}): {ways} passes instead of 1"
                    )
                atomic = access.is_read & access.is_write  # an atomic reads and writes its word
                if atomic.any():
                    # atomics on one word serialise, whatever the banks say: never 'broadcast, no conflict'
                    _, on_one = np.unique(access.index[atomic], return_counts=True)
                    stats.append(f"{name}: atomics, " + atomic_queue_phrase(int(atomic.sum()), len(on_one),
                                                                            int(on_one.max())))
                elif ways <= 1:
                    what = "broadcast, no conflict" if n_words < n_lanes else "every lane its own bank: no conflict"
                    stats.append(f"{name}: {n_lanes} lanes, {n_words} word{'s' if n_words != 1 else ''} ({what})")
                labels = _value_labels(access, p.lay)
            if self.session.predicting:  # a lesson asks how many ways: the marks would answer it
                conflict_segs, p.conflict_banks = np.zeros((0, 2)), []
            set_segments(p.conflict, conflict_segs)
            self._set_band(p, p.conflict_banks)
            if len(p.race_cells):
                stats.append(f"<span style='color:{colour_css(st.race)}'>◣ {len(p.race_cells)} words of "
                             f"{esc(p.info.name)} race in block {block}</span> (touched by two threads between barriers, "
                             f"one writing)")
            self._set_labels(p, labels)
            p.image.setImage(p.buffer, autoLevels=False)
        lines = [] if docked(self) else [f"frame {f + 1:,} of {frames.n_frames:,} &nbsp;·&nbsp; {esc(frames.describe(f))}"]
        if self.session.predicting and stats:
            stats = [PREDICT_TEXT]
        lines.append(f"block {block}: " + (" &nbsp;·&nbsp; ".join(stats) if stats else "this step touches no shared array"))
        self.header.setText("<br>".join(lines))

    def _set_band(self, p: _SharedPanel, banks: np.ndarray) -> None:
        if len(banks) == 0:
            p.bank_band.hide()
            return
        band = np.zeros((1, render.N_BANKS, 4), dtype=np.uint8)
        band[0, banks] = (*self.style.conflict[:3], 70)
        p.bank_band.setImage(band, autoLevels=False)
        p.bank_band.setRect(QtCore.QRectF(0, 0, render.N_BANKS, p.layout.rows))
        p.bank_band.show()

    def _set_labels(self, p: _SharedPanel, labels: list[tuple[int, str]]) -> None:
        """Values in the lit cells, each inside its own cell: a value whose text is wider than its cell on
        screen (as the font measures it) is left out, not spilled over its neighbours, where it hid the
        conflict column's outline. Details gives every value on a click."""
        width, height = p.plot.vb.width(), p.plot.vb.height()
        px_per_cell = width / 32.0 if width > 0 else 0
        px_per_row = height / max(p.layout.rows, 1) if height > 0 else 0
        font_size = max(9, int(min(px_per_cell * 0.36, px_per_row * 0.6, self.style.px(self.style.theme.font_px * 0.7))))
        if px_per_cell < 26 or px_per_row < font_size * 1.3:
            labels = []
        font = QtGui.QFont()
        font.setPixelSize(font_size)
        font.setBold(True)
        fm = QtGui.QFontMetrics(font)
        room = px_per_cell - 4  # a cell's width on screen, less a margin so neighbours never touch
        fits = max(2, int(room / max(fm.horizontalAdvance("0"), 1)))  # characters that fit in a cell
        texts = []
        for cell, text in labels[:_MAX_LABELS]:
            t = _fit_number(text, fits)
            if fm.horizontalAdvance(t) <= room:
                texts.append((cell, t))
        while len(p.labels) < len(texts):
            item = pg.TextItem(anchor=(0.5, 0.5))
            item.setZValue(8)  # under the conflict and selection outlines: a number never hides them
            p.plot.addItem(item)
            p.labels.append(item)
        for item, (cell, text) in zip(p.labels, texts):
            r, c = divmod(int(cell), render.N_BANKS)
            item.setFont(font)
            item.setColor(QtGui.QColor("#000000"))
            item.setText(text)
            item.setPos(c + 0.5, r + 0.5)
            item.show()
        for item in p.labels[len(texts):]:
            item.hide()

    # -- selection ---------------------------------------------------------------------------------
    def on_selection_changed(self) -> None:
        tr = self.trace
        selection = self.session.selection
        thread = selected_thread(selection)
        cell = selected_cell(selection)
        for p in self._panels:
            segs = np.zeros((0, 2))
            if tr is not None and thread is not None and thread[0] == self._block:
                ev = self.prepared.events_of_thread(*thread)
                ev = ev[(tr.array[ev] == p.array_id) & np.isin(tr.kind[ev], _SHARED_KINDS)]
                segs = render.cell_outline_segments(p.lay.cells_of_elements(tr.index[ev]), p.layout)
            set_segments(p.thread_outline, segs)
            if cell is not None and cell[0] == p.array_id:
                cells = p.lay.cells_of_elements(np.array([cell[1]]))
                set_segments(p.cell_outline, render.cell_outline_segments(cells, p.layout, inset=0.0))
            else:
                set_segments(p.cell_outline, np.zeros((0, 2)))

    def _cell_clicked(self, panel: _SharedPanel, row: int, col: int) -> None:
        cell = panel.layout.flat_of(row, col)
        index = panel.lay.element_of_cell(cell) if cell >= 0 else -1
        if 0 <= index < panel.info.size:
            self.session.selection.select_cell(panel.array_id, index)

    def panel_of(self, array_name: str) -> _SharedPanel:
        for p in self._panels:
            if p.info.name == array_name:
                return p
        raise KeyError(f"the shared memory view shows no array named {array_name!r}")


def _value_labels(access: render.ArrayAccess, lay: SharedLayout) -> list[tuple[int, str]]:
    """(cell of the first word, text) for each element of the request whose value was recorded."""
    out = {}
    cells = lay.first_cells(access.index)
    for cell, val in zip(cells, access.value):
        if np.isfinite(val):
            out[int(cell)] = f"{val:.3g}" if abs(val) < 1e4 else f"{val:.0e}"
    return sorted(out.items())


def _fit_number(text: str, chars: int) -> str:
    """A recorded value shortened to ``chars`` characters where it can be (fewer significant digits)."""
    if len(text) <= chars:
        return text
    try:
        v = float(text)
    except ValueError:
        return text[:chars]
    for digits in (3, 2, 1):
        t = f"{v:.{digits}g}"
        if t.startswith("0.") and len(t) > chars:
            t = t[1:]  # ".52" reads fine and saves a character
        if len(t) <= chars:
            return t
    return t


def _corner_marks(cells: np.ndarray, layout: render.GridLayout) -> np.ndarray:
    """A hatched lower-left corner (three strokes) on each race word: visible on any fill colour."""
    if len(cells) == 0:
        return np.zeros((0, 2))
    r, c = layout.cell_rc(cells)
    segs = []
    for d in (0.1, 0.2, 0.3, 0.4):
        x0, y0 = c + 0.06, r + 0.94 - d
        x1, y1 = c + 0.06 + d, r + 0.94
        segs.append(np.stack([np.stack([x0, y0], 1), np.stack([x1, y1], 1)], 1).reshape(-1, 2))
    return np.concatenate(segs).astype(np.float64)
