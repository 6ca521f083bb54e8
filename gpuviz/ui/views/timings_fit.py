"""The Timings view's words fitted to its plot (issue 28: presenting host_device_flow at 1280x720, a ~510 px dock):
the title wrapped to the plot's width, the legend's entries shortened where they do not fit, the bars' category names
shrunk or wrapped, and each bar's value placed apart from the others and inside the data area. A mixin of
:class:`gpuviz.ui.views.timings.TimingsView`, which keeps its state (``_title_text``, ``_value_items``, ...).
"""

from __future__ import annotations

import numpy as np
from PySide6 import QtGui

from ..plaintext import esc, plain_tooltip
from .chart_text import Box, bar_chart_top, stack_value_labels, wrap_words


class ChartTextFitting:
    """Fits the title, legend, category names and value labels of ``self.plot`` (a pyqtgraph PlotWidget)."""

    def _fit_chart_text(self) -> None:
        """The title, the legend and the bars' values fitted to the plot's size now (each leaves the plot's
        widget as wide as the dock, and the values inside the data area, apart)."""
        self._fit_title()
        self._place_legend()
        self._fit_plot_to_view()
        self._place_values()

    def _fit_plot_to_view(self) -> None:
        """The plot item as wide as the view again. pyqtgraph sizes it to the view on a resize, but no wider than
        its minimum then: a title or legend shortened afterwards (a Ctrl++ up, presenting) left it wider than its
        view, its right part cut (custom_kernel's sweeps: 620 px in a 562 px view, the '10⁸' tick and the title's
        end off the edge)."""
        pi, shown = self.plot.getPlotItem(), self.plot.range
        if abs(pi.geometry().width() - shown.width()) > 0.5 or abs(pi.geometry().height() - shown.height()) > 0.5:
            pi.setGeometry(shown)
            pi.layout.activate()

    def _fit_title(self) -> None:
        """The plot's title wrapped onto two lines (the second elided) where one is wider than the plot: a title's
        minimum width is its text's, and a long one made the plot wider than its dock (issue 28: the last bars,
        ticks and legend cut at the right)."""
        text = self._title_text
        if not text:
            return
        pi = self.plot.getPlotItem()
        font = QtGui.QFont()
        font.setPixelSize(self.theme.px(15))
        metrics = QtGui.QFontMetrics(font)
        # the title spans the plot's columns right of the left axis; a few pixels for the label's own margins
        room = max(60, self.plot.width() - pi.getAxis("left").width() - 24)
        budget = room
        for _ in range(3):
            lines = wrap_words(text, metrics.horizontalAdvance, budget)
            html = "<br>".join(esc(line) for line in lines)
            if html != self._title_shown:  # a new text lays the plot out again: only when it changes
                self._title_shown = html
                pi.setTitle(html, color=self.theme.foreground, size=f"{self.theme.px(15)}px")
            # the label draws in its own font (the metrics above measured a close one): where its lines came out
            # wider than the room (custom_kernel's 'c = a + b: CPU ... vs GPU (solid,' a Ctrl++ up: 4 px), again
            # with as much less room
            over = pi.titleLabel.item.boundingRect().width() - room
            if over <= 0:
                break
            budget = max(60, budget - over - 2)
        # pyqtgraph gives the title a row of 30 px: a second line, or one line a Ctrl++ up, ran over the plot
        height = int(np.ceil(pi.titleLabel.itemRect().height()))
        pi.titleLabel.setMaximumHeight(height)
        pi.layout.setRowFixedHeight(0, height)
        pi.titleLabel.setToolTip(plain_tooltip(text) if lines[-1].endswith("…") else "")

    def _fit_legend_texts(self) -> None:
        """The legend's entries whole, or, where the longest is wider than the plot presenting, each without
        the processor and device they all share ("pageable host memory · GPU: NVIDIA H200" -> "pageable host memory"): the line
        over the plot names the set's device already."""
        legend = self.plot.getPlotItem().legend
        full, short = self._legend_full, self._legend_short
        if not short or len(legend.items) != len(full):
            return
        # only presenting, where the one line over the plot is the set's name and device; at the desk every entry
        # says its processor and device, the legend below the plot (a hidden tab's width says nothing yet)
        presenting = getattr(self.window(), "_gpuviz_presenter", None) is not None
        names = full
        if presenting and self.plot.isVisible():
            # below the plot, the legend has the data area's column (right of the left axis). The entries are
            # measured as drawn (their size follows the text size, Ctrl++ too): a legend wider than that column
            # widened the whole chart past its view, cutting the title and the last tick ('10⁸') at the right
            room = self.plot.width() - self.plot.getPlotItem().getAxis("left").width() - 16
            self._set_legend_texts(legend, full)
            widest = max(label.item.boundingRect().width() for _sample, label in legend.items)
            names = short if widest + 40 > room else full
        self._set_legend_texts(legend, names)

    def _set_legend_texts(self, legend, names: list[str]) -> None:
        if names != self.legend_names:
            self.legend_names = list(names)
            for (_sample, label), name in zip(legend.items, names):
                label.setText(esc(name))
            self._legend_place = None  # its entries' width changed: beside or below is decided again

    def _place_values(self) -> None:
        """Each bar's value just above it, or raised over the labels and taller bars it would cover, inside the
        data area; the y range's top leaves them the room (a narrow chart ran them into each other and out of the
        plot: '759.4492.4 µs', '1.30 m', projector sizes)."""
        if not self._value_items:
            return
        pi = self.plot.getPlotItem()
        vb = pi.getViewBox()
        pi.layout.activate()  # the data area's size now, not before the title or the legend changed
        self._wrap_categories(pi, vb.width())
        for _ in range(3):  # a new y range can widen the left axis's numbers ('200'), which narrows the data area
            size = (vb.width(), vb.height())
            if size[0] < 20 or size[1] < 20:
                return  # not laid out yet (a hidden tab): placed when it is (plots_resized)
            self._place_values_in(vb, *size)
            pi.layout.activate()
            if (vb.width(), vb.height()) == size:
                break

    def _wrap_categories(self, pi, area_w: float) -> None:
        """The bars' category names in a smaller font, else one word a line, where one is wider than its share of
        the data area: 'copy in' and 'copy out' were left out (thin_tick_labels) or cut in a 510 px dock one Ctrl++
        up. Each line of names is a line less for the bars."""
        axis = pi.getAxis("bottom")
        full, small = QtGui.QFont(), QtGui.QFont()
        full.setPixelSize(self.theme.px())  # as style_plot sets it
        small.setPixelSize(max(10, self.theme.px(self.theme.font_px * 0.75)))  # the values' size
        slot = area_w / max(1, len(self._categories))

        def fits(font) -> bool:
            metrics = QtGui.QFontMetrics(font)
            return all(metrics.horizontalAdvance(name) + 8 <= slot for name in self._categories)

        how = "full" if fits(full) else ("small" if fits(small) else "wrapped")
        if how == self._categories_wrapped:
            return
        self._categories_wrapped = how
        axis.setTickFont(full if how == "full" else small)
        metrics = QtGui.QFontMetrics(full if how == "full" else small)
        wrap = how == "wrapped"
        names = [name.replace(" ", "\n") if wrap else name for name in self._categories]
        axis.setTicks([list(enumerate(names))])
        lines = max(name.count("\n") + 1 for name in names)
        # pyqtgraph grows the axis to its text only once it is painted, and not after a smaller font: its height
        # now, so the values fit over it and the legend under it leaves the names whole ('allocate' was cut)
        offset = axis.style["tickTextOffset"][1] + max(0, axis.style["tickLength"])
        axis.setHeight(int(lines * metrics.lineSpacing() + offset + 4))
        pi.layout.activate()

    def _place_values_in(self, vb, area_w: float, area_h: float) -> None:
        """:meth:`_place_values` in a data area of ``area_w`` x ``area_h`` pixels."""
        (x0, x1), _y = vb.viewRange()
        x_px = area_w / (x1 - x0)
        sizes = [(it.boundingRect().width(), it.boundingRect().height()) for it, _x, _v in self._value_items]
        placed: list[Box] = []

        def place(top: float) -> float:
            y_px = area_h / top
            labels = [Box((x - x0) * x_px, v * y_px, w, h) for (_it, x, v), (w, h) in zip(self._value_items, sizes)]
            bars = [Box((x - bw / 2 - x0) * x_px, 0.0, bw * x_px, v * y_px) for x, bw, v in self._bar_boxes]
            placed[:] = stack_value_labels(labels, bars, area_w)
            return max(b.top for b in placed)

        top = bar_chart_top(max(v for _x, _w, v in self._bar_boxes), place, area_h)
        place(top)
        vb.setYRange(0, top, padding=0)
        for (item, _x, _v), box in zip(self._value_items, placed):
            item.setPos(x0 + box.left / x_px, box.bottom * top / area_h)
