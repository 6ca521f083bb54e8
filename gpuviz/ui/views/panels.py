"""The small Qt pieces the array views share: global memory (memory.py), shared memory (shared.py), barriers
(barriers.py) and occupancy (occupancy.py).

* :class:`MemoryStyle` (:func:`memory_style`): the memory views' colours and sizes, read from the theme;
* cell images and outlines: :class:`CellImage`, :func:`cells_edge_item`, segment items;
* plots: a stock of plots built ahead (:func:`stock_plot`, :func:`claim_plot`), :func:`cell_plot`, axes styled and
  kept inside, :func:`arrange_plots` (how many columns of arrays fit), colour bars of the heat map;
* :class:`ArrayPanelsMixin`: a view of one panel per array, its plots and colour bar built ahead and arranged;
* a view's header, legend and canvas (:func:`header_legend_canvas`, :class:`FrameHeader`), and what the selection
  names (:func:`selected_thread`, :func:`selected_cell`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
import pyqtgraph.colormap as pg_colormap
from PySide6 import QtCore, QtGui, QtWidgets
from shiboken6 import isValid

from ...style import render
from ...style.theme import hex_to_rgba
from .labels import OneLineLabel, lines_height, slotted, wrapped_text_height
from .plots import keep_label_unless_changed, thin_tick_labels


@dataclass
class MemoryStyle:
    """The memory views' colours and sizes, read from the session's theme (never hard-coded there)."""

    theme: object
    background: str
    foreground: str
    muted: str
    read: np.ndarray
    write: np.ndarray
    atomic: np.ndarray
    current: np.ndarray  # outlines of what executes now (sectors of the current request)
    selected: np.ndarray  # outlines of the linked selection
    conflict: np.ndarray
    race: np.ndarray
    untouched: np.ndarray
    heat: np.ndarray  # heat-map lookup table, pulled toward the background

    def px(self, base: float | None = None) -> int:
        return self.theme.px(base)

    @property
    def access_colours(self):
        return (self.read, self.write, self.atomic)


def memory_style(theme, heat_name: str | None = None) -> MemoryStyle:
    dark = theme.dark
    bg = np.array(hex_to_rgba(theme.background), dtype=np.uint8)
    lut = colormap_lut(heat_name or getattr(theme, "heatmap", "cividis") or "cividis")
    return MemoryStyle(
        theme=theme,
        background=theme.background,
        foreground=theme.foreground,
        muted=theme.muted,
        read=np.array(hex_to_rgba(theme.load), np.uint8),
        write=np.array(hex_to_rgba(theme.store), np.uint8),
        atomic=render.rgba("reddish_purple"),
        current=np.array(hex_to_rgba(theme.current), np.uint8),
        selected=np.array(hex_to_rgba(theme.selected), np.uint8),
        conflict=np.array(hex_to_rgba(theme.conflict), np.uint8),
        race=render.rgba("reddish_purple"),
        untouched=np.array((34, 34, 38, 255) if dark else (236, 236, 236, 255), np.uint8),
        heat=render.blended(lut, bg, 0.45 if dark else 0.15),
    )


def colour_css(c) -> str:
    if isinstance(c, str):
        return c
    return "#%02x%02x%02x" % tuple(int(v) for v in c[:3])


def legend_html(items: list[tuple[str, object, str]]) -> str:
    """``[(symbol, colour, text)]`` -> one line of rich text with coloured symbols."""
    parts = []
    for symbol, colour, text in items:
        parts.append(f"<span style='color:{colour_css(colour)}'>{symbol}</span>&nbsp;{text}")
    return "&nbsp;&nbsp;&nbsp; ".join(parts)


def colormap_lut(name: str = "cividis", n: int = 256) -> np.ndarray:
    cmap = pg_colormap.get(name)
    return np.ascontiguousarray(cmap.getLookupTable(nPts=n, alpha=True).astype(np.uint8))


class CellImage(pg.ImageItem):
    """An RGBA image of cells (row-major, row 0 on top) that reports clicks as (row, col)."""

    cellClicked = QtCore.Signal(int, int)

    def __init__(self):
        super().__init__(axisOrder="row-major")
        self.setAcceptedMouseButtons(QtCore.Qt.MouseButton.LeftButton)

    def mouseClickEvent(self, ev):
        if ev.button() != QtCore.Qt.MouseButton.LeftButton:
            return
        pos = ev.pos()
        self.cellClicked.emit(int(np.floor(pos.y())), int(np.floor(pos.x())))
        ev.accept()


def cells_edge_item(first: int, count: int, cols: int, style: MemoryStyle) -> QtWidgets.QGraphicsPathItem:
    """The outline of an array's cells, cells ``first`` to ``first + count - 1`` of a row-major grid ``cols``
    wide, in the theme's grid colour: where no cell was touched yet the array's heat is its 'untouched' colour,
    1.2:1 to 1.3:1 on the background, and the outline (3:1 or more) shows where the array is."""
    last = first + count - 1
    r0, c0, r1, c1 = first // cols, first % cols, last // cols, last % cols
    path = QtGui.QPainterPath()
    if r0 == r1:
        path.addRect(QtCore.QRectF(c0, r0, c1 - c0 + 1, 1))
    else:
        path.addRect(QtCore.QRectF(c0, r0, cols - c0, 1))  # the first row, from the array's first cell
        if r1 > r0 + 1:
            path.addRect(QtCore.QRectF(0, r0 + 1, cols, r1 - r0 - 1))
        path.addRect(QtCore.QRectF(0, r1, c1 + 1, 1))  # the last row, to its last cell
    item = QtWidgets.QGraphicsPathItem(path.simplified())
    style_cells_edge(item, style)
    return item


def style_cells_edge(item: QtWidgets.QGraphicsPathItem, style: MemoryStyle) -> None:
    pen = pg.mkPen(QtGui.QColor(style.theme.grid), width=max(1.0, style.theme.scale))
    pen.setCosmetic(True)
    item.setPen(pen)


def segment_item(colour, width: float) -> pg.PlotCurveItem:
    """Line segments in image coordinates (pairs of points), drawn on top of a CellImage."""
    item = pg.PlotCurveItem(connect="pairs", antialias=False)
    set_segment_pen(item, colour, width)
    item.setZValue(10)
    return item


def set_segment_pen(item: pg.PlotCurveItem, colour, width: float) -> None:
    pen = pg.mkPen(QtGui.QColor(colour_css(colour)), width=width)
    pen.setCosmetic(True)
    pen.setJoinStyle(QtCore.Qt.PenJoinStyle.MiterJoin)
    item.setPen(pen)


def set_segments(item: pg.PlotCurveItem, segs: np.ndarray) -> None:
    if len(segs) == 0:
        if item.xData is None or len(item.xData):  # already empty (most frames of most outlines): nothing to redo
            item.setData(x=np.zeros(0), y=np.zeros(0))
        item.hide()
        return
    item.setData(x=segs[:, 0], y=segs[:, 1], connect="pairs")
    item.show()


#: plots built ahead, each in an event-loop turn of its own (:meth:`ArrayPanelsMixin.warm_up_steps`): a PlotItem
#: builds its whole options form (10-25 ms each), and a new trace's panels, all built in the view's one turn to
#: adopt it, held the GUI thread longest of all. Fresh, never shown: any cell takes one.
_STOCK_PLOTS: list[pg.PlotItem] = []
STOCK_PLOTS_MAX = 6


def stock_plot(need: int = STOCK_PLOTS_MAX) -> None:
    """Build one plot ahead for :func:`cell_plot`, unless ``need`` (at most :data:`STOCK_PLOTS_MAX`) wait."""
    if len(_STOCK_PLOTS) < min(need, STOCK_PLOTS_MAX):
        _STOCK_PLOTS.append(pg.PlotItem(enableMenu=False))  # menus not even built


def claim_plot(claimed: list, need: int) -> None:
    """One more plot for a view's next panels (``claimed``, its own), unless it has ``need``: one built when idle
    if any is left, else built now. Claimed, not only counted: two views adopting a trace each counted the plots
    built ahead as theirs, and the second built its panel's plot in its own turn to adopt it (10-17 ms)."""
    if len(claimed) < min(need, STOCK_PLOTS_MAX):
        claimed.append(_STOCK_PLOTS.pop() if _STOCK_PLOTS else pg.PlotItem(enableMenu=False))


def cell_plot(canvas: pg.GraphicsLayoutWidget, row: int, col: int, style: MemoryStyle, rowspan: int = 1,
              colspan: int = 1, claimed: list | None = None) -> pg.PlotItem:
    """An aspect-locked, y-down plot cell of ``canvas`` for an image of cells, themed; ``claimed``: the plots the
    view claimed for its panels (:func:`claim_plot`), taken first."""
    # canvas.addPlot() would build a new one: the same PlotItem, added to the canvas's layout
    if claimed:
        plot = claimed.pop()
    else:
        plot = _STOCK_PLOTS.pop() if _STOCK_PLOTS else pg.PlotItem(enableMenu=False)  # menus not even built
    canvas.ci.addItem(plot, row=row, col=col, rowspan=rowspan, colspan=colspan)
    plot.setMenuEnabled(False)
    plot.hideButtons()
    plot.invertY(True)
    plot.setAspectLocked(True)
    style_axes(plot, style)
    keep_title_size_unless_changed(plot.titleLabel)
    return plot


def keep_title_size_unless_changed(label: pg.LabelItem) -> pg.LabelItem:
    """A plot's title asks its plot to be laid out again only when the room it needs changes.

    pyqtgraph's LabelItem sets its minimum size again and calls ``updateGeometry`` on every resize of its own
    (``resizeEvent`` -> ``updateMin``), the same size each time: each titled plot, and the canvas it is in, were laid
    out once more after every resize of the window. A new text (``setText``) still re-lays them out."""
    if getattr(label, "_gpuviz_min_kept", False):
        return label
    update_min = label.updateMin

    def updated():
        r = label.itemRect()
        size = (r.width(), r.height())
        if size != label._gpuviz_min_size:
            label._gpuviz_min_size = size
            update_min()

    label._gpuviz_min_size = None
    label.updateMin = updated
    label._gpuviz_min_kept = True
    return label



def style_axes(plot: pg.PlotItem, style: MemoryStyle, factor: float = 0.85) -> None:
    font = QtGui.QFont()
    font.setPixelSize(style.px(style.theme.font_px * factor))
    for name in ("left", "bottom", "right", "top"):
        ax = plot.getAxis(name)
        ax.setPen(pg.mkPen(style.muted))
        ax.setTextPen(pg.mkPen(style.foreground))
        ax.setTickFont(font)
        ax.label.setFont(font)
        thin_tick_labels(ax)
    refit_left_axis(plot.getAxis("left"))


def best_columns(shapes: list[tuple[int, int]], width: float, height: float,
                 overhead: tuple[float, float] = (0.0, 0.0)) -> int:
    """How many columns of plots give the biggest cells for images of these (rows, cols) shapes.

    ``overhead``: the (width, height) each plot spends on its title and axes, not on cells. Left out, three
    32x32 arrays in a short, wide dock were stacked, and each got the height of its axes: 1-pixel strips."""
    n = len(shapes)
    if n <= 1 or width <= 0 or height <= 0:
        return 1
    ow, oh = overhead
    best, best_scale = 1, -1.0
    for ncols in range(1, n + 1):
        nrows = -(-n // ncols)
        box_w, box_h = width / ncols - ow, height / nrows - oh
        if box_w <= 0 or box_h <= 0:
            continue
        scale = min(min(box_w / max(c, 1), box_h / max(r, 1)) for r, c in shapes)
        if scale > best_scale * 1.05:  # prefer fewer columns unless clearly better
            best, best_scale = ncols, scale
    return best


def plot_overhead(plot: pg.PlotItem) -> tuple[float, float]:
    """(width, height) a plot spends around its view box: title, axes and their labels."""
    from PySide6.QtCore import Qt as _Qt

    w = h = 0.0
    if plot.titleLabel.isVisible() and plot.titleLabel.text:
        h += plot.titleLabel.effectiveSizeHint(_Qt.SizeHint.PreferredSize).height()
    for name in ("left", "right", "top", "bottom"):
        ax = plot.getAxis(name)
        if not ax.isVisible():
            continue
        if name in ("top", "bottom"):
            h += ax.effectiveSizeHint(_Qt.SizeHint.MinimumSize).height()
        else:
            w += ax.effectiveSizeHint(_Qt.SizeHint.MinimumSize).width()
    return w + 8, h + 8  # the layout's margins and spacing


def keep_ticks_inside(axis: pg.AxisItem, lo: float, hi: float) -> pg.AxisItem:
    """Tick values only where there are cells: an aspect-locked plot wider than its array showed an axis
    running from -100 to 150 under a 32-column image."""
    if getattr(axis, "_gpuviz_inside", None) is not None:
        axis._gpuviz_inside = (lo, hi)
        return axis
    axis._gpuviz_inside = (lo, hi)
    tick_values = axis.tickValues

    def inside(minVal, maxVal, size):
        a, b = axis._gpuviz_inside
        out = []
        for spacing, values in tick_values(minVal, maxVal, size):
            out.append((spacing, [v for v in values if a - 1e-9 <= v <= b + 1e-9]))
        return out

    axis.tickValues = inside
    return axis


def arrange_plots(canvas: pg.GraphicsLayoutWidget, plots: list[pg.PlotItem], ncols: int, bar=None) -> None:
    """(Re)place plots on ``canvas`` in ``ncols`` columns, equal stretch, and ``bar`` (a colour bar) in a
    column of its own at the right, as tall as all the rows. Cheap: no item is rebuilt, and one already on the
    canvas only moves to its new cell of the grid (pyqtgraph's removeItem and addItem took each out of the scene
    and put it back, and laid the grid out after each one added: every plot resized through each half-made
    arrangement, 5-9 ms when a resize changed the number of columns)."""
    ci = canvas.ci
    grid = ci.layout
    nrows = -(-len(plots) // ncols)
    cells = [(plot, k // ncols, k % ncols, 1) for k, plot in enumerate(plots)]
    if bar is not None:
        cells.append((bar, 0, ncols, max(1, nrows)))
    if all(ci.items.get(item) == [(row + i, col) for i in range(span)] for item, row, col, span in cells):
        return  # each in its cell already
    moved = [item for item, *_ in cells if item in ci.items]
    for item in moved:  # out of the grid, not out of the scene
        for i in range(grid.count()):
            if grid.itemAt(i).graphicsItem() is item:
                grid.removeAt(i)
                break
        for r, c in ci.items.pop(item):
            del ci.rows[r][c]
    for item, row, col, span in cells:
        if item not in moved:
            ci.addItem(item, row=row, col=col, rowspan=span)  # new to the canvas
            continue
        ci.items[item] = [(row + i, col) for i in range(span)]
        for r, c in ci.items[item]:
            ci.rows.setdefault(r, {})[c] = item
        grid.addItem(item, row, col, span, 1)
    for c in range(ncols):
        grid.setColumnStretchFactor(c, 1)
    if bar is not None:
        grid.setColumnStretchFactor(ncols, 0)
    for r in range(nrows):
        grid.setRowStretchFactor(r, 1)


#: colour maps made by :func:`sqrt_colormap`, by their lookup table's bytes (a theme's few heat maps): a
#: ColorMap of 256 stops makes a QColor of each (~7 ms), and every colour bar built or restyled made one again
_SQRT_COLORMAPS: dict[bytes, pg.ColorMap] = {}


def sqrt_colormap(lut: np.ndarray) -> pg.ColorMap:
    """The heat map as the cells use it (:func:`render.count_palette`: colour by the square root of the
    count), for a colour bar whose axis counts accesses linearly. Shared: never change the one returned."""
    colours = np.ascontiguousarray(lut[:, :4].astype(np.uint8))
    key = colours.tobytes()
    cmap = _SQRT_COLORMAPS.get(key)
    if cmap is None:
        n = len(lut)
        pos = (np.arange(n, dtype=np.float64) / max(n - 1, 1)) ** 2
        cmap = _SQRT_COLORMAPS[key] = pg.ColorMap(pos, colours)
        if len(_SQRT_COLORMAPS) > 16:
            _SQRT_COLORMAPS.pop(next(iter(_SQRT_COLORMAPS)))
    return cmap


def colour_bar(style: MemoryStyle, label: str) -> pg.ColorBarItem:
    """A colour bar that says what the heat map's colours count (read-only: no handles to drag)."""
    bar = pg.ColorBarItem(values=(0, 1), width=max(12, style.px(14)), colorMap=sqrt_colormap(style.heat),
                          label=label, interactive=False, colorMapMenu=False)
    bar.setObjectName("colourBar")
    style_colour_bar(bar, style, label)
    return bar


def style_colour_bar(bar: pg.ColorBarItem, style: MemoryStyle, label: str) -> None:
    bar.setColorMap(sqrt_colormap(style.heat))
    bar.layout.setColumnFixedWidth(1, max(12, style.px(14)))
    font = QtGui.QFont()
    font.setPixelSize(style.px(style.theme.font_px * 0.85))
    for name in ("left", "right", "top", "bottom"):
        ax = bar.getAxis(name)
        ax.setPen(pg.mkPen(style.muted))
        ax.setTextPen(pg.mkPen(style.foreground))
        ax.setTickFont(font)
        ax.label.setFont(font)
    thin_tick_labels(bar.axis)
    for name in ("left", "right", "top", "bottom"):
        keep_label_unless_changed(bar.getAxis(name))  # its titles are not set again on every resize
    # room above and below the bar for half a tick label: the top count ("2") was cut in half at its edge
    half = int(style.px(style.theme.font_px * 0.85) * 0.7)
    bar.layout.setContentsMargins(1, half, 1, half)
    bar.axis.setStyle(hideOverlappingLabels=False)
    bar.getAxis("left").setLabel(label, color=style.foreground)
    set_colour_bar_max(bar, getattr(bar, "vmax", 1))  # the axis width follows the new font


def set_colour_bar_max(bar: pg.ColorBarItem | None, vmax: int) -> None:
    if bar is None:
        return
    bar.vmax = vmax
    vmax = max(int(vmax), 1)
    bar.setLevels((0, vmax))
    # whole counts only ("0.5 accesses" means nothing), and the axis as wide as its widest count: the
    # arrays beside it need the room more
    step = max(1, int(np.ceil(vmax / 4)))
    ticks = [(v, f"{v:,}") for v in range(0, vmax + 1, step)]
    if ticks[-1][0] != vmax:
        ticks.append((vmax, f"{vmax:,}"))
    bar.axis.setTicks([ticks, []])
    font = bar.axis.style.get("tickFont") or QtGui.QFont()
    fm = QtGui.QFontMetrics(font)
    bar.axis.setWidth(max(fm.horizontalAdvance(t) for _, t in ticks) + fm.horizontalAdvance("0") + 8)


class ArrayPanelsMixin:
    """For views that draw one plot per array on ``self.canvas`` (``self._panels``, each with ``.plot`` and
    ``.layout.rows/cols``): side by side or stacked, whichever makes the cells biggest, re-decided on resize."""

    _panels: list
    _ncols: int = 0
    _short_titles = False  # the arrays' names alone above them: the full titles did not fit side by side
    colour_bar: pg.ColorBarItem | None = None

    def _retitle(self) -> None:
        """Set each panel's title (short or full, as ``_short_titles`` says)."""

    #: what the colour bar counts (each view says)
    BAR_LABEL = ""
    #: (style, colour bar) built ahead for the next trace in this view's style (:meth:`warm_up_steps`)
    _spare_bar: tuple | None = None

    #: the memory space of the arrays this view draws a panel for ("global", "shared")
    ARRAY_SPACE = ""

    def warm_up_steps(self) -> list:
        """The plots and the colour bar the session's trace's panels take, one a turn (none for one without
        arrays of this view's space): its turn to adopt the trace then builds no pyqtgraph item itself."""
        trace = self.session.trace
        n = sum(1 for a in trace.launch.arrays if a.space == self.ARRAY_SPACE) if trace is not None else 0
        if n == 0:
            return []
        claimed = self.__dict__.setdefault("_claimed_plots", [])
        # the bar on screen is taken over (_recycle_colour_bar): none built for the next trace unless there is none;
        # its colour map (256 QColors, the first time a heat map is shown: ~7 ms) in a turn before it
        bar = [lambda: sqrt_colormap(self.style.heat), self._build_spare_bar] if self.colour_bar is None else []
        return [lambda: claim_plot(claimed, n)] * min(n, STOCK_PLOTS_MAX) + bar

    def _adopt_trace(self) -> None:
        super()._adopt_trace()
        self._build_ahead_when_idle()

    def _build_ahead_when_idle(self) -> None:
        """A big trace adopted: build the next one's plots and colour bar now, one a turn, while the window is
        idle (no file read, no view still adopting): its own turns to build them ahead then have nothing to do."""
        timer = self.__dict__.get("_idle_timer")
        if timer is None:
            timer = self._idle_timer = QtCore.QTimer(self)
            timer.setSingleShot(True)
            timer.timeout.connect(self._idle_step)
        timer.start(0)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self.__dict__.get("_shown_once"):
            # first on screen: what the first trace's panels take, built while the window waits for one (a
            # window opened without a trace has no colour bar to hand over to the trace it opens next)
            self._shown_once = True
            self._build_ahead_when_idle()

    def _idle_step(self) -> None:
        if getattr(self.window(), "opening", False):
            return  # not while a file is read (the GIL): the new trace's turns build what it takes
        if self.session.settling:
            self._idle_timer.start(50)  # views still adopting the trace: after them
            return
        wait = self.session.IDLE_S - self.session.idle_for()
        if wait > 0:  # frames stepped or played, the window resized: not idle, nothing built between those turns
            self._idle_timer.start(int(1e3 * wait) + 1)
            return
        if self.colour_bar is None and (self._spare_bar is None or self._spare_bar[0] is not self.style):
            self._build_spare_bar()  # the longest to build (25-30 ms): first
        elif len(_STOCK_PLOTS) < STOCK_PLOTS_MAX:
            stock_plot()
        else:
            return
        self._idle_timer.start(0)

    def _build_spare_bar(self) -> None:
        if self.colour_bar is not None:
            return  # the next trace takes the bar on screen (_recycle_colour_bar): none to build
        if self._spare_bar is None or self._spare_bar[0] is not self.style:
            self._spare_bar = (self.style, colour_bar(self.style, self.BAR_LABEL))

    def _recycle_colour_bar(self) -> None:
        """The colour bar on screen is the next trace's (restyled with the view, set to its scale then): a
        ColorBarItem is a PlotItem that builds its whole options form, 25-30 ms of the GUI thread a bar."""
        bar, self.colour_bar = self.colour_bar, None
        if bar is not None and (self._spare_bar is None or self._spare_bar[0] is not self.style):
            self._spare_bar = (self.style, bar)  # styled with the view's style by on_theme_changed

    def _new_colour_bar(self) -> pg.ColorBarItem:
        """The colour bar for a new trace: the one built ahead if its style is still the view's, else a new one."""
        spare, self._spare_bar = self._spare_bar, None
        if spare is not None and spare[0] is self.style:
            return spare[1]
        return colour_bar(self.style, self.BAR_LABEL)

    def _arrange(self) -> None:
        if not self._panels:
            return
        grid = self.canvas.ci.layout
        # the cells need the room more than a frame around them does (set once: each setter lays the grid out again)
        if grid.getContentsMargins() != (2.0, 2.0, 2.0, 2.0):
            grid.setContentsMargins(2, 2, 2, 2)
        if (grid.horizontalSpacing(), grid.verticalSpacing()) != (4.0, 4.0):
            grid.setHorizontalSpacing(4)
            grid.setVerticalSpacing(4)
        shapes = [(p.layout.rows, getattr(p, "shown_cols", p.layout.cols)) for p in self._panels]
        overhead = tuple(max(v) for v in zip(*(plot_overhead(p.plot) for p in self._panels)))
        bar = self.colour_bar
        bar_w = bar.effectiveSizeHint(QtCore.Qt.SizeHint.PreferredSize).width() if bar is not None else 0
        room = self.canvas.width() - bar_w - 4 - 4 * (1 if bar is not None else 0)
        ideal = best_columns(shapes, room, self.canvas.height(), overhead)
        # never more columns than fit side by side: a plot's title and axes have a width of their own, and a
        # row of plots wider than the view pushed the last array (global C) off its right edge. Plots right
        # of the first column leave out the left axis's title (the first one says what the rows count). When
        # the full titles keep the best number of columns from fitting, the arrays' names alone stand above them
        retitled = False
        for short in (False, True):
            if short != self._short_titles:
                self._short_titles = short
                self._retitle()
                retitled = True
            widest = max(p.plot.effectiveSizeHint(QtCore.Qt.SizeHint.MinimumSize).width() for p in self._panels)
            label_w = max(_left_label_width(p.plot) for p in self._panels)
            ncols = ideal
            while ncols > 1 and widest + (ncols - 1) * (widest - label_w) + 4 * (ncols - 1) > room:
                ncols -= 1
            if ncols == ideal:
                break
        if retitled:
            self._ncols = 0
        if ncols != self._ncols:
            self._ncols = ncols
            nrows = -(-len(self._panels) // ncols)
            for k, p in enumerate(self._panels):
                # each axis title once per row or column of plots: on the first column (rows), the last row
                # (columns, at the bottom) or the first row (banks, on top)
                row, col = divmod(k, ncols)
                for name, show in (("left", col == 0), ("bottom", row == nrows - 1), ("top", row == 0)):
                    ax = p.plot.getAxis(name)
                    if getattr(ax, "_gpuviz_label", None) is None:
                        ax._gpuviz_label = ax.labelText
                    if ax._gpuviz_label:
                        ax.showLabel(show)
                refit_left_axis(p.plot.getAxis("left"))
            arrange_plots(self.canvas, [p.plot for p in self._panels], ncols, bar)
        if abs(self.canvas.ci.geometry().width() - self.canvas.range.width()) > 0.5:
            QtCore.QTimer.singleShot(0, self._grid_as_wide_as_view)  # once the new titles' sizes are known

    def _grid_as_wide_as_view(self) -> None:
        """The grid as wide as the view again: made wider than the view by the full titles' minimum width, it
        kept that width once the names alone replaced them, and the colour bar stood 26 px past the view's right
        edge (bank_conflicts' global arrays at 1280x720 one Ctrl++ up: its tick labels cut off)."""
        canvas = self.canvas
        if isValid(canvas) and abs(canvas.ci.geometry().width() - canvas.range.width()) > 0.5:
            canvas.setRange(canvas.range, padding=0, disableAutoPixel=False)

    def plots_resized(self) -> None:
        super().plots_resized()
        self._arrange()
        self._fit_left_titles()

    def _fit_left_titles(self) -> None:
        """A left axis title ('element', 'bytes') only on a plot as tall as the title is long: stacked short plots
        (three 1000-element strips presenting at 1280x720) drew each over the next ('elemene…'); their ticks
        ('[0]') still say what the rows count."""
        ncols = max(1, self._ncols)
        for k, p in enumerate(self._panels):
            ax = p.plot.getAxis("left")
            if k % ncols or not getattr(ax, "_gpuviz_label", None):
                continue  # right of the first column the title is left out anyway (_arrange)
            fits = ax.label.boundingRect().width() <= ax.height()  # turned upright: its width runs along the axis
            if fits != ax.label.isVisible():
                ax.showLabel(fits)
                refit_left_axis(ax)


def _left_label_width(plot: pg.PlotItem) -> float:
    ax = plot.getAxis("left")
    if not ax.isVisible() or not ax.labelText:
        return 0.0
    return ax.label.boundingRect().height()


def docked(view: QtWidgets.QWidget) -> bool:
    """True inside the main window (which already says what the frame is), False when shown alone."""
    return view.parent() is not None


def fit_left_axis(plot: pg.PlotItem, ticks: list[tuple[float, str]], style: MemoryStyle, factor: float = 0.85) -> None:
    """Give the left axis sparse ticks and room for its widest label (pyqtgraph would clip it)."""
    ax = plot.getAxis("left")
    ax.setTicks([ticks, []])
    thin_tick_labels(ax)
    ax.setStyle(textFillLimits=[(0, 0.95)])  # the ticks are sparse already: let each carry its text
    ax._gpuviz_tick_texts = [t for _, t in ticks]
    refit_left_axis(ax)


def refit_left_axis(ax: pg.AxisItem) -> None:
    """The width of a left axis given sparse ticks (fit_left_axis): its widest tick text in the axis's font
    now, and its title when shown (a fixed width left no room for it, and the title ran over the ticks)."""
    texts = getattr(ax, "_gpuviz_tick_texts", None)
    if texts is None:
        return
    fm = QtGui.QFontMetrics(ax.style.get("tickFont") or QtGui.QFont())
    width = max((fm.horizontalAdvance(t) for t in texts), default=fm.horizontalAdvance("0")) + fm.horizontalAdvance("0") + 6
    if ax.labelText and ax.label.isVisible():
        width += ax.label.boundingRect().height() * 0.8  # as pyqtgraph counts it
    ax.setWidth(int(width))


def header_label(style: MemoryStyle, factor: float = 1.0, bold: bool = True) -> QtWidgets.QLabel:
    label = QtWidgets.QLabel()
    label.setWordWrap(True)
    label.setTextFormat(QtCore.Qt.TextFormat.RichText)
    restyle_label(label, style, factor, bold)
    return label


def restyle_label(label: QtWidgets.QLabel, style: MemoryStyle, factor: float = 1.0, bold: bool = True) -> None:
    weight = "font-weight:600;" if bold else ""
    label.setStyleSheet(
        f"color:{style.foreground}; background:{style.background}; font-size:{style.px(style.theme.font_px * factor)}px;"
        f"{weight} padding:2px 6px;"
    )


class FrameHeader(OneLineLabel):
    """A view's header, whose text changes every frame, at a fixed height for its width and text size: room for
    two lines (three in a view narrower than ~45 characters), more only once a frame's text needs them, and never
    less again until the width or the text size changes. Its height followed its text, a line more or less from
    one frame to the next, and the plots under it jumped (~45 px at presenter sizes)."""

    holds_height = True  # TraceView.keep_labels_whole leaves its height to it

    def __init__(self, parent=None):
        super().__init__(parent)
        self._held = None  # (width, font) the height below is held for
        self._height = 0

    def setText(self, text: str) -> None:
        if text != self.full_text():
            super().setText(text)
            self.hold_height()

    def set_one_line(self, on: bool, lead: str = "") -> None:
        super().set_one_line(on, lead)
        self._held = None
        self.hold_height()

    def hold_height(self) -> None:
        width = self.width()
        if width < 40:
            return  # not laid out yet
        self.ensurePolished()
        fm = QtGui.QFontMetrics(self.font())
        key = (width, self.font().key())
        if key != self._held:
            self._held = key
            m = self.contentsMargins()
            lines = 1 if self.one_line() else 2 if width >= 45 * fm.averageCharWidth() else 3
            self._height = lines_height(self.font(), lines) + m.top() + m.bottom() + 2 * self.margin()
        need = wrapped_text_height(self, width) if self.text() else 0
        self._height = max(self._height, need)
        if self.minimumHeight() != self._height or self.maximumHeight() != self._height:
            self.setFixedHeight(self._height)

    def resizeEvent(self, ev) -> None:
        super().resizeEvent(ev)
        if ev.size().width() != ev.oldSize().width():
            self.hold_height()

    def changeEvent(self, ev) -> None:
        super().changeEvent(ev)
        if ev.type() in (QtCore.QEvent.Type.FontChange, QtCore.QEvent.Type.StyleChange):
            self._held = None
            QtCore.QTimer.singleShot(0, self._rehold)

    def _rehold(self) -> None:
        if isValid(self):
            self.hold_height()


def header_legend_canvas(view, style: MemoryStyle) -> tuple[QtWidgets.QLabel, QtWidgets.QLabel, pg.GraphicsLayoutWidget]:
    """The column of the pixel views (global and shared memory, barriers): a header line, a legend under it and
    the pyqtgraph canvas, in ``view``'s layout; returns (header, legend, canvas)."""
    box = QtWidgets.QVBoxLayout(view)
    box.setContentsMargins(0, 0, 0, 0)
    box.setSpacing(0)
    header = FrameHeader()
    header.setWordWrap(True)
    header.setTextFormat(QtCore.Qt.TextFormat.RichText)
    restyle_label(header, style)
    legend = header_label(style, LEGEND_SIZE, bold=False)
    canvas = pg.GraphicsLayoutWidget()
    box.addWidget(slotted(header))  # its text changes per frame: no window relayout for it
    box.addWidget(legend)
    box.addWidget(canvas, 1)
    return header, legend, canvas


def restyle_header_legend_canvas(view, style: MemoryStyle, legend: list[tuple[str, str, str]]) -> None:
    """:func:`header_legend_canvas`'s widgets in ``style``; ``legend``: its entries, (chip, colour, label)."""
    restyle_label(view.header, style)
    restyle_label(view.legend, style, LEGEND_SIZE, bold=False)
    view.canvas.setBackground(style.background)
    view.legend.setText(legend_html(legend))


LEGEND_SIZE = 0.85  # the legend's text, against the theme's font size


def selected_thread(selection) -> tuple[int, int] | None:
    """(block, thread) of the selected thread, if the selection names one."""
    if selection is None:
        return None
    b, t = getattr(selection, "block", None), getattr(selection, "thread", None)
    if b is not None and t is not None:
        return int(b), int(t)
    return None


def selected_cell(selection) -> tuple[int, int] | None:
    """(array id, flat index) of the selected memory cell, if any."""
    if selection is None:
        return None
    a, i = getattr(selection, "array", None), getattr(selection, "index", None)
    if a is not None and i is not None:
        return int(a), int(i)
    return None
