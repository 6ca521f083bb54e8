"""Occupancy panel and the per-line table.

Occupancy: how many blocks and warps of this launch fit on one SM of a chosen GPU model, which limit
(threads, blocks, registers, shared memory) binds, and a block-size slider that recomputes it for other
block sizes (computed with :func:`gpuviz.model.devices.occupancy`, not captured: the trace stays the
one that was recorded).

Per-line table: one row per source line with events: events, global sectors per request, shared bank
conflicts (extra wavefronts), diverged warp instructions and SIMT efficiency, all from
:mod:`gpuviz.model.analysis`. The current frame's line is highlighted; clicking a row jumps to the first
frame on that line. It is meant to sit beside the source view.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from ...model import analysis
from ...model.devices import DEVICES, get_device, occupancy
from ...model.frames import BlockState
from ...style import render
from ...style.theme import hex_to_rgba
from .base import TraceView, register_view
from .panels import colour_css, fit_left_axis, header_label, memory_style, restyle_label, style_axes

LIMIT_LABELS = {"threads": "threads / warps", "blocks": "blocks per SM", "registers": "registers", "shared_memory": "shared memory"}
_LIMITS = ("threads", "blocks", "registers", "shared_memory")
BLOCK_SIZES = np.arange(32, 1025, 32)


def _device_key_for(trace) -> str:
    """The device model to start with: the one the trace ran on when we know it, else the H200."""
    try:
        dev = get_device(trace.launch.device)
        for key, d in DEVICES.items():
            if d is dev:
                return key
    except (KeyError, TypeError):
        pass
    return "H200"


def occupancy_curve(registers: int, shared_bytes: int, device: str, sizes=BLOCK_SIZES) -> np.ndarray:
    """Occupancy (resident warps / max warps per SM) for each block size, other inputs held."""
    return np.array([occupancy(int(b), registers, shared_bytes, device)["occupancy"] for b in sizes])


@register_view
class OccupancyView(TraceView):
    """Resident blocks and warps per SM, the binding limit, and what a different block size would change."""

    view_id = "occupancy"
    title = "Occupancy"
    default_area = "right"
    order = 40

    def __init__(self, session, parent=None):
        super().__init__(session, parent)
        self.style = memory_style(session.theme)
        self.device_key = "H200"
        self.registers = 32
        self.shared_bytes = 0
        self.estimated: list[str] = []
        self.result: dict | None = None
        # a docked Occupancy is short (a tab under the source at 1280x720): its text, controls and plots keep
        # the height they need and the view scrolls, rather than squeezing them on top of each other
        outer = QtWidgets.QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.scroll = QtWidgets.QScrollArea(self)
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.body = QtWidgets.QWidget()
        self.scroll.setWidget(self.body)
        outer.addWidget(self.scroll)
        box = QtWidgets.QVBoxLayout(self.body)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(2)
        self.header = header_label(self.style)
        controls = QtWidgets.QGridLayout()
        controls.setContentsMargins(6, 2, 6, 2)
        self.device_box = QtWidgets.QComboBox()
        for key, d in DEVICES.items():
            self.device_box.addItem(f"{d.name} (sm_{d.compute_capability.replace('.', '')})", key)
        self.slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        self.slider.setRange(0, len(BLOCK_SIZES) - 1)
        self.slider.setPageStep(4)
        self.slider_label = QtWidgets.QLabel()
        self.slider_label.setWordWrap(True)
        self.device_label = QtWidgets.QLabel("GPU model")
        self.device_box.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.device_box.setMinimumContentsLength(10)
        # two rows: the model, then the block size with its slider (one row cut both off in a narrow dock)
        controls.addWidget(self.device_label, 0, 0)
        controls.addWidget(self.device_box, 0, 1)
        controls.addWidget(self.slider_label, 1, 0, 1, 2)
        controls.addWidget(self.slider, 2, 0, 1, 2)
        controls.setColumnStretch(1, 1)
        self.note = header_label(self.style, 0.8, bold=False)
        self.canvas = pg.GraphicsLayoutWidget()
        box.addWidget(self.header)
        box.addLayout(controls)
        box.addWidget(self.canvas, 1)
        box.addWidget(self.note)
        self._build_plots()
        self.device_box.currentIndexChanged.connect(self._device_chosen)
        self.slider.valueChanged.connect(self._recompute)
        self.on_theme_changed()

    def _build_plots(self) -> None:
        """The SM's warp slots, the limits as bars, and occupancy over block sizes, on the canvas."""
        # SM picture: the SM's warp slots, filled by resident blocks
        self.sm_plot = self.canvas.addPlot(row=0, col=0, colspan=2, enableMenu=False)
        self.sm_plot.setMenuEnabled(False)
        self.sm_plot.hideButtons()
        self.sm_plot.invertY(True)
        self.sm_plot.setAspectLocked(True)
        self.sm_plot.setMouseEnabled(x=False, y=False)
        self.sm_plot.hideAxis("left")
        self.sm_plot.hideAxis("bottom")
        self.sm_image = pg.ImageItem(axisOrder="row-major")
        self.sm_plot.addItem(self.sm_image)
        # limits as bars, and occupancy over block sizes
        self.bars_plot = self.canvas.addPlot(row=1, col=0, enableMenu=False)
        self.curve_plot = self.canvas.addPlot(row=1, col=1, enableMenu=False)
        for p in (self.bars_plot, self.curve_plot):
            p.setMenuEnabled(False)
            p.hideButtons()
            p.setMouseEnabled(x=False, y=False)
        self.bars = pg.BarGraphItem(x0=np.zeros(4), y=np.arange(4), height=0.6, width=np.ones(4))
        self.bars_plot.addItem(self.bars)
        self.bar_texts = [pg.TextItem(anchor=(0, 0.5)) for _ in _LIMITS]
        for t in self.bar_texts:
            self.bars_plot.addItem(t)
        self.bars_plot.invertY(True)
        self.curve = pg.PlotCurveItem(stepMode=None)
        self.curve_plot.addItem(self.curve)
        self.captured_line = pg.InfiniteLine(angle=90)
        self.what_if_dot = pg.ScatterPlotItem(size=16)
        self.curve_plot.addItem(self.captured_line)
        self.curve_plot.addItem(self.what_if_dot)
        self.curve_plot.setYRange(0, 1.05)
        self.curve_plot.setXRange(0, 1056)
        self.canvas.ci.layout.setRowStretchFactor(0, 1)
        self.canvas.ci.layout.setRowStretchFactor(1, 3)

    # -- theme -------------------------------------------------------------------------------------
    def on_theme_changed(self) -> None:
        st = self.style = memory_style(self.theme)
        restyle_label(self.header, st)
        restyle_label(self.note, st, 0.8, bold=False)
        self.canvas.setBackground(st.background)
        # room for the SM picture and four limit bars whose labels do not touch, at any text size
        self.canvas.setMinimumHeight(st.px(st.theme.font_px) * 16)
        for p in (self.bars_plot, self.curve_plot, self.sm_plot):
            style_axes(p, st)
        size = f"{st.px(st.theme.font_px * 0.85)}px"
        self.bars_plot.setTitle("blocks per SM each limit allows", color=st.foreground, size=size)
        self.curve_plot.setTitle("occupancy by block size", color=st.foreground, size=size)
        self.curve_plot.setLabel("bottom", "threads per block", color=st.foreground, **{"font-size": size})
        fit_left_axis(self.curve_plot, [(v, f"{int(v * 100)}%") for v in (0, 0.25, 0.5, 0.75, 1.0)], st)
        fit_left_axis(self.bars_plot, [(i, LIMIT_LABELS[k]) for i, k in enumerate(_LIMITS)], st)
        self.curve.setPen(pg.mkPen(colour_css(render.rgba("blue")), width=3))
        self.captured_line.setPen(pg.mkPen(st.muted, width=2, style=QtCore.Qt.PenStyle.DashLine))
        self.what_if_dot.setBrush(pg.mkBrush(colour_css(render.rgba("vermillion"))))
        self.what_if_dot.setPen(pg.mkPen(st.foreground, width=1))
        font = QtGui.QFont()
        font.setPixelSize(st.px(st.theme.font_px * 0.85))
        for t in self.bar_texts:
            t.setFont(font)
            t.setColor(QtGui.QColor(st.foreground))
        for w in (self.slider_label, self.device_label, self.device_box):
            w.setStyleSheet(f"font-size:{st.px()}px; color:{st.foreground};")
        if self.result is not None:
            self._recompute()

    # -- per trace ---------------------------------------------------------------------------------
    def on_trace_changed(self) -> None:
        tr = self.trace
        if tr is None:
            return
        base = analysis.trace_occupancy(tr, _device_key_for(tr))
        self.registers = int(base["registers_per_thread"])
        self.shared_bytes = int(base["shared_bytes_per_block"])
        self.estimated = list(base.get("estimated_fields", []))
        self.captured_threads = tr.launch.threads_per_block
        key = _device_key_for(tr)
        self.device_box.blockSignals(True)
        self.device_box.setCurrentIndex(max(0, self.device_box.findData(key)))
        self.device_box.blockSignals(False)
        self.device_key = key
        self.slider.blockSignals(True)
        self.slider.setValue(int(np.argmin(np.abs(BLOCK_SIZES - self.captured_threads))))
        self.slider.blockSignals(False)
        self._recompute_curve()
        self._recompute()

    def on_frame_changed(self) -> None:
        pass  # occupancy is a property of the launch, not of a frame

    def _device_chosen(self, _index: int) -> None:
        self.device_key = self.device_box.currentData()
        if self.trace is not None:
            self._recompute_curve()
            self._recompute()

    def set_block_threads(self, threads: int) -> None:
        """Move the what-if slider to the block size nearest ``threads`` (tests and lessons use this)."""
        self.slider.setValue(int(np.argmin(np.abs(BLOCK_SIZES - int(threads)))))

    def _recompute_curve(self) -> None:
        occ = occupancy_curve(self.registers, self.shared_bytes, self.device_key)
        self.curve.setData(BLOCK_SIZES.astype(float), occ)
        self.captured_line.setPos(float(self.captured_threads))

    def _recompute(self, *_):
        if self.trace is None:
            return
        st = self.style
        threads = int(BLOCK_SIZES[self.slider.value()])
        r = self.result = occupancy(threads, self.registers, self.shared_bytes, self.device_key)
        dev = get_device(self.device_key)
        what_if = threads != self.captured_threads
        self.slider_label.setText(f"block size: <b>{threads}</b> threads" + (" (what if)" if what_if else " (as captured)"))
        # bars: blocks per SM allowed by each limit, the binding one(s) in vermillion
        limits = np.array([r["limits"][k] for k in _LIMITS], dtype=float)
        brushes = [pg.mkBrush(colour_css(render.rgba("vermillion") if k in r["binding"] else render.rgba("sky_blue")))
                   for k in _LIMITS]
        self.bars.setOpts(x0=np.zeros(4), y=np.arange(4), width=limits, height=0.6, brushes=brushes,
                          pens=[pg.mkPen(st.foreground)] * 4)
        top = max(float(limits.max()), 1.0)
        for i, (t, k) in enumerate(zip(self.bar_texts, _LIMITS)):
            t.setText(f" {int(limits[i])}" + ("  ← binds" if k in r["binding"] else ""))
            t.setPos(limits[i], i)
        self.bars_plot.setXRange(0, top * 1.45, padding=0)
        self.bars_plot.setYRange(-0.6, 3.6, padding=0)
        self.what_if_dot.setData([float(threads)], [r["occupancy"]])
        # the SM's warp slots: 2 rows, resident blocks in alternating colours, free slots in the theme's grey of
        # work not begun (3:1 or more on its background; the grey of their own was 1.6:1 on white, 1.9:1 on black)
        slots = dev.max_warps_per_sm
        img = np.zeros((2, slots // 2, 4), dtype=np.uint8)
        flat = img.reshape(-1, 4)
        flat[:] = hex_to_rgba(st.theme.block[BlockState.WAITING])
        colours = (render.rgba("bluish_green"), render.rgba("blue"))
        for b in range(r["blocks_per_sm"]):
            flat[b * r["warps_per_block"] : (b + 1) * r["warps_per_block"]] = colours[b % 2]
        self.sm_image.setImage(img, autoLevels=False)
        self.sm_plot.setTitle(
            f"one SM of the {dev.name}: {slots} warp slots, {r['warps_per_sm']} filled by "
            f"{r['blocks_per_sm']} block{'s' if r['blocks_per_sm'] != 1 else ''}",
            color=st.foreground, size=f"{st.px(st.theme.font_px * 0.85)}px",
        )
        limit_words = " and ".join(LIMIT_LABELS[k] for k in r["binding"])
        if r["fits"]:
            self.header.setText(
                f"{r['blocks_per_sm']} block{'s' if r['blocks_per_sm'] != 1 else ''} × {r['warps_per_block']} "
                f"warp{'s' if r['warps_per_block'] != 1 else ''} = {r['warps_per_sm']} of "
                f"{r['max_warps_per_sm']} warps per SM: <b>{r['occupancy']:.0%} occupancy</b>, limited by {limit_words}"
            )
        else:
            self.header.setText(f"a block of {threads} threads does not fit on one SM ({limit_words})")
        assumed = "; ".join(self.estimated) if self.estimated else "registers and shared memory as the backend reported"
        self.note.setText(
            f"{self.registers} registers/thread, {self.shared_bytes:,} bytes shared/block: {assumed}. "
            f"The slider recomputes occupancy for another block size with these held; it does not re-run the kernel."
        )


# ---- per-line table ---------------------------------------------------------------------------------

#: the model's columns; on screen the source stands first (LineTableView moves it), after the line number, the
#: row header, so both stay in view while the table scrolls sideways to the metrics
_COLUMNS = ("bank conflicts", "sectors / request", "diverged", "SIMT efficiency", "events", "source")
_SOURCE_COLUMN = _COLUMNS.index("source")
#: what "the worst line" means, in the order asked: most bank conflicts, then most sectors per request
#: above ideal, then most diverged lanes
WORST_BY = ("bank conflicts", "sectors / request", "diverged")


class _SortItem(QtWidgets.QTableWidgetItem):
    """A cell that sorts by its number (UserRole), worst first when sorted descending; blanks sort as 0."""

    def __lt__(self, other) -> bool:
        a = self.data(QtCore.Qt.ItemDataRole.UserRole)
        b = other.data(QtCore.Qt.ItemDataRole.UserRole)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            return a < b
        return super().__lt__(other)


def worst_line(rows: list[dict], by: str | None = None) -> dict | None:
    """The row of the worst line: by ``by`` (a column of :data:`WORST_BY`), else by bank conflicts, then
    excess sectors per request, then divergence; None when no line has any of them."""
    def score(r, what):
        if what == "bank conflicts":
            return r.get("bank_conflicts") or 0
        if what == "sectors / request":
            spr, ideal = r.get("sectors_per_request"), r.get("ideal_per_request")
            return (spr - ideal) if spr is not None and ideal is not None else 0
        if what == "diverged":
            return r.get("diverged") or 0
        return 0

    order = [by] if by in WORST_BY else list(WORST_BY)
    for what in order:
        best = max(rows, key=lambda r: score(r, what), default=None)
        if best is not None and score(best, what) > 0:
            return best
    return None


def line_table_rows(trace) -> list[dict]:
    """One dict per source line with events: the figures the table shows (from the analyses)."""
    lines, counts = np.unique(trace.line[trace.line > 0], return_counts=True)
    rows = {int(line): {"line": int(line), "events": int(c)} for line, c in zip(lines, counts)}
    for r in analysis.global_memory(trace).per_line:
        if r["line"] in rows:
            rows[r["line"]]["sectors_per_request"] = r["sectors_per_request"]
            rows[r["line"]]["ideal_per_request"] = r["ideal_sectors"] / r["requests"] if r["requests"] else None
    for r in analysis.shared_banks(trace).per_line:
        if r["line"] in rows:
            rows[r["line"]]["bank_conflicts"] = r["bank_conflicts"]
            rows[r["line"]]["shared_requests"] = r["requests"]
    for r in analysis.divergence(trace).per_line:
        if r["line"] in rows:
            rows[r["line"]]["diverged"] = r["diverged"]
            rows[r["line"]]["simt_efficiency"] = r["simt_efficiency"]
    return [rows[k] for k in sorted(rows)]


@register_view
class LineTableView(TraceView):
    """Per source line: events, sectors per request, bank conflicts, divergence. Click a row to jump there."""

    view_id = "lines"
    title = "Per line"
    default_area = "left"
    order = 25

    def __init__(self, session, parent=None):
        super().__init__(session, parent)
        self.style = memory_style(session.theme)
        box = QtWidgets.QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        self.table = QtWidgets.QTableWidget(0, len(_COLUMNS))
        self.table.setHorizontalHeaderLabels(list(_COLUMNS))
        self.table.verticalHeader().setDefaultAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        # the source first, after the line number: last, it stood past the right edge of the dock's default width
        # (a 1280x720 window showed five columns of numbers and no source)
        self.table.horizontalHeader().moveSection(_SOURCE_COLUMN, 0)
        self.table.horizontalHeader().setToolTip("click a column to sort by it: the worst lines first")
        self.table.horizontalHeader().sectionClicked.connect(self._sort_by)
        self.table.cellClicked.connect(self._row_clicked)
        self.sort_column: str | None = None  # the column the rows are sorted by, worst first (None: line order)
        box.addWidget(self.table)
        self.rows: list[dict] = []
        self._first_frame: dict[int, int] = {}
        self.current_row = -1
        self.on_theme_changed()

    def on_theme_changed(self) -> None:
        st = self.style = memory_style(self.theme)
        font = self.table.font()
        font.setPixelSize(st.px(st.theme.font_px * 0.9))
        self.table.setFont(font)
        self.table.horizontalHeader().setFont(font)
        self.table.verticalHeader().setDefaultSectionSize(int(st.px(st.theme.font_px * 0.9) * 1.8))

    def on_trace_changed(self) -> None:
        tr, frames = self.trace, self.frames
        if tr is None:
            return
        self.rows = line_table_rows(tr)
        src = tr.launch.source_lines()
        first = tr.launch.first_line
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(self.rows))
        right = QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter
        mono = QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont)
        mono.setPixelSize(self.style.px(self.style.theme.font_px * 0.9))
        for i, r in enumerate(self.rows):
            k = r["line"] - first
            text = src[k].strip()[:500] if 0 <= k < len(src) else ""  # a file's "source" may be one huge line
            spr = r.get("sectors_per_request")
            ideal = r.get("ideal_per_request")
            cells = {
                "bank conflicts": ("" if "bank_conflicts" not in r else f"{r['bank_conflicts']:,}", r.get("bank_conflicts", 0)),
                "sectors / request": ("" if spr is None else (f"{spr:.1f}" + (f" (ideal {ideal:.1f})" if ideal and spr > ideal * 1.05 else "")),
                                      (spr - ideal) if spr is not None and ideal is not None else (spr or 0.0)),
                "diverged": ("" if "diverged" not in r else f"{r['diverged']:,}", r.get("diverged", 0)),
                "SIMT efficiency": ("" if r.get("simt_efficiency") is None else f"{r['simt_efficiency']:.0%}",
                                    # worst first when sorted descending: the least efficient line on top
                                    -(r["simt_efficiency"]) if r.get("simt_efficiency") is not None else -1.0),
                "events": (f"{r['events']:,}", r["events"]),
                "source": (text, r["line"]),
            }
            header = QtWidgets.QTableWidgetItem(str(r["line"]))
            header.setData(QtCore.Qt.ItemDataRole.UserRole, r["line"])
            self.table.setVerticalHeaderItem(i, header)
            for c, name in enumerate(_COLUMNS):
                value, key = cells[name]
                item = _SortItem(value)
                item.setData(QtCore.Qt.ItemDataRole.UserRole + 1, r["line"])  # the line, wherever sorting puts the row
                item.setData(QtCore.Qt.ItemDataRole.UserRole, key)
                if name == "source":
                    item.setFont(mono)
                else:
                    item.setTextAlignment(right)
                self.table.setItem(i, c, item)
        self.table.resizeColumnsToContents()
        self._fit_source_column()
        if self.sort_column is not None:
            self._apply_sort()
        # first frame of each line, for "click a row to jump there"
        self._first_frame = {}
        if frames is not None and frames.n_frames:
            lines, idx = np.unique(frames.line, return_index=True)
            self._first_frame = {int(line): int(i) for line, i in zip(lines, idx) if line > 0}
        self.current_row = -1

    def plots_resized(self) -> None:
        super().plots_resized()
        self._fit_source_column()

    def _fit_source_column(self) -> None:
        """The source column takes what the numbers leave; in a narrow dock at least 60% of the table's width
        (the numbers scroll to its right)."""
        head = self.table.horizontalHeader()
        room = self.table.viewport().width()
        numbers = sum(self.table.columnWidth(c) for c in range(len(_COLUMNS)) if c != _SOURCE_COLUMN)
        if room - numbers >= 0.6 * room:
            head.setSectionResizeMode(_SOURCE_COLUMN, QtWidgets.QHeaderView.ResizeMode.Stretch)
        else:
            head.setSectionResizeMode(_SOURCE_COLUMN, QtWidgets.QHeaderView.ResizeMode.Interactive)
            self.table.setColumnWidth(_SOURCE_COLUMN, max(int(0.6 * room), 60))

    def line_of_row(self, row: int) -> int | None:
        item = self.table.item(row, 0)
        return None if item is None else item.data(QtCore.Qt.ItemDataRole.UserRole + 1)

    def row_of_line(self, line: int) -> int:
        for row in range(self.table.rowCount()):
            if self.line_of_row(row) == line:
                return row
        return -1

    def _sort_by(self, column: int) -> None:
        name = _COLUMNS[column]
        self.sort_column = None if name == "source" else name
        self._apply_sort()

    def _apply_sort(self) -> None:
        """Worst first by the chosen column (a header click), line order again for the source column."""
        if self.sort_column is None:  # the source column sorts by line number: back to line order
            self.table.sortItems(_SOURCE_COLUMN, QtCore.Qt.SortOrder.AscendingOrder)
        else:
            self.table.sortItems(_COLUMNS.index(self.sort_column), QtCore.Qt.SortOrder.DescendingOrder)
        self.current_row = -1
        self.on_frame_changed()

    def worst(self) -> dict | None:
        """The worst line's row (by the sorted column when it is one of :data:`WORST_BY`)."""
        return worst_line(self.rows, self.sort_column)

    def jump_to_worst(self) -> int | None:
        """Show the worst line's first frame (its row selected); returns the frame, None when no line is bad."""
        r = self.worst()
        f = None if r is None else self._first_frame.get(r["line"])
        if f is not None:
            self.session.playback.pause()
            self.session.set_frame(f)
        return f

    def on_frame_changed(self) -> None:
        frames = self.frames
        if frames is None or not frames.n_frames:
            return
        f = min(max(int(self.frame), 0), frames.n_frames - 1)
        row = self.row_of_line(int(frames.line[f]))
        if row != self.current_row:
            self.current_row = row
            self.table.blockSignals(True)
            if row >= 0:
                self.table.selectRow(row)
                self.table.scrollToItem(self.table.item(row, _SOURCE_COLUMN))  # the source: the first column on screen
            else:
                self.table.clearSelection()
            self.table.blockSignals(False)

    def _row_clicked(self, row: int, _col: int) -> None:
        line = self.line_of_row(row)
        f = self._first_frame.get(line) if line is not None else None
        if f is not None:
            self.session.set_frame(f)
