"""Timings: real measurements as plots, each exportable as PNG plus its numbers as CSV and JSON.

Plots (one at a time, chosen in the view's bar):

    host flow        one launch stage by stage (allocate, copy in, kernel, copy out, free), pageable vs pinned
    compile vs run   a kernel's first call (JIT compile) against its steady-state run, log scale
    block sweep      kernel time vs block size, as achieved bandwidth (GB/s) or FLOP/s
    CPU vs GPU       c = a + b over sizes, log-log, one line per implementation, CPU and GPU labelled
    blocks on SMs    which block ran on which SM, when (from the current trace when it was recorded on a
                     GPU, else from the timing set): one bar per block, coloured by its order on its SM

Where the numbers come from is always on screen: the set's entry and the line above the plot say GPU
or CPU, device, driver, date and versions, and every series in a legend names its processor and device
("steady-state run · GPU: NVIDIA H200", "numpy a + b · CPU: AMD EPYC (this machine)"). Sets: the GPU
recordings shipped in ``assets/recordings`` (:func:`gpuviz.timing.recordings.list_recordings`; the view
opens on the first of them, the H200 set) and, on demand ("Measure CPU"), CPU timings measured live on
this machine, in a worker thread (about a second of numpy and CPU-executor runs must not freeze playback):
the button is disabled and a busy bar runs meanwhile, the set is added when the worker returns, a failure
is said in the view, and :attr:`TimingsView.cpu_measure_finished` tells when it is over. The CPU-vs-GPU plot draws the chosen set with every other set's CPU-vs-GPU lines beside it,
so live CPU timings sit next to the recorded GPU ones, each labelled.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import Signal

from ...catalog import kernel_info  # plain data: no numba
from ...lessons.metrics import seconds_text
from ...model.timings import Series, TimingSet, blocks_on_sms, waves
from ...style.theme import series_colours
from ...timing import cpu as timing_cpu
from ...timing.recordings import list_recordings
from ..plaintext import esc, plain_tooltip
from .base import TraceView, register_view
from .timings_fit import ChartTextFitting
from .details import versions_text
from .plots import style_plot

PLOTS = (
    ("host_flow", "host flow"),
    ("compile_vs_run", "compile vs run"),
    ("block_sweep", "block sweep"),
    ("cpu_vs_gpu", "CPU vs GPU"),
    ("blocks_on_sms", "blocks on SMs"),
)


def _short_cpu(name: str) -> str:
    """"Intel(R) Xeon(R) Processor (Linux x86_64)" -> "Intel Xeon Processor": short enough for a legend."""
    name = name.replace("(R)", "").replace("(TM)", "").replace("(tm)", "")
    name = name.split(" (")[0]
    return " ".join(name.split()) or "CPU"


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def decade_ticks(values) -> list[list[tuple[float, str]]]:
    """Ticks for a log axis (pyqtgraph puts log10 values on it): one labelled tick per decade the values
    span, no labelled minor ticks (on a wide plot those run into each other: "2·10³3·10³4·10³...")."""
    v = np.asarray([x for x in values if x and x > 0], float)
    if not len(v):
        return [[], []]
    lo, hi = int(np.floor(np.log10(v.min()))), int(np.ceil(np.log10(v.max())))
    major = [(float(k), "1" if k == 0 else ("10" if k == 1 else "10" + str(k).translate(_SUPERSCRIPT)))
             for k in range(lo, hi + 1)]
    minor = [(float(np.log10(m * 10.0 ** k)), "") for k in range(lo, hi) for m in range(2, 10)]
    return [major, minor]


def shared_suffix_dropped(names: list[str]) -> list[str]:
    """``names`` without the " · ..." part they all end with ("pinned host memory · GPU: NVIDIA H200" ->
    "pinned host memory"), or, where they end in different processors, with the processor kept and its device
    left out ("numpy a + b · CPU: Intel Xeon Processor (...)" -> "numpy a + b · CPU", "cupy a + b · GPU: NVIDIA
    H200" -> "cupy a + b · GPU"); [] when they do not all end so."""
    if not names or any(" · " not in n for n in names):
        return []
    heads, suffixes = zip(*(n.rsplit(" · ", 1) for n in names))
    if len(set(suffixes)) == 1:
        return list(heads)
    if all(":" in s for s in suffixes):
        return [f"{h} · {s.split(':', 1)[0]}" for h, s in zip(heads, suffixes)]
    return []


def recording_set_text(rec) -> str:
    """The set box's entry for a shipped timing recording."""
    if rec.details.get("standalone"):  # a set of one operation of its own (fusion): say which in the list
        return f"GPU · {rec.device} · {rec.title.split(' on ')[0]} · {rec.date} (recorded)"
    return f"GPU · {rec.device} · {rec.date} (recorded)"  # the driver: in its tooltip and the line under the bar


def measured_set_text(ts: TimingSet) -> str:
    what = "GPU" if ts.processor == "gpu" else "CPU"
    return f"{what} · {_short_cpu(ts.device)} · {ts.date} (measured on this machine)"


def _sets_from_recordings() -> tuple[list[tuple[str, object]], str]:
    """(entries, why there are none) for the shipped timing recordings."""
    try:
        return [(recording_set_text(r), r) for r in list_recordings(kind="timings")], ""
    except Exception as exc:  # noqa: BLE001 - a damaged index: say so in the view, keep the CPU button working
        return [], f"the recorded GPU timings could not be listed: {exc}"


class CpuMeasurement(QtCore.QThread):
    """:func:`gpuviz.timing.cpu.cpu_timing_set` in a thread of its own; ``measured(TimingSet)`` or
    ``failed(exception)`` when it is over.

    Running threads are held in :data:`_RUNNING` (not by the view) until they end: a view closed mid-run
    must not take a running QThread down with it, which would abort the process. Quitting the application
    waits for them for the same reason (a run takes about a second)."""

    measured = Signal(object)
    failed = Signal(object)

    def __init__(self, kwargs: dict):
        super().__init__()
        self._kwargs = dict(kwargs)
        _RUNNING.add(self)
        self.finished.connect(lambda: _RUNNING.discard(self))
        app = QtCore.QCoreApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.wait)

    def run(self) -> None:
        try:
            ts = timing_cpu.cpu_timing_set(**self._kwargs)  # looked up now: a test wraps it
        except Exception as exc:  # noqa: BLE001 - any failure is shown in the view, never raised in a thread
            self.failed.emit(exc)
            return
        self.measured.emit(ts)


_RUNNING: set[CpuMeasurement] = set()


@register_view
class TimingsView(ChartTextFitting, TraceView):
    view_id = "timings"
    title = "Timings"
    default_area = "bottom"
    order = 90

    #: a Measure CPU run is over: True when its set was added, False when it failed (the view says why)
    cpu_measure_finished = Signal(bool)
    #: what Measure CPU times: small enough for about a second, large enough to show where numpy's
    #: per-call overhead stops mattering and how the executor scales
    CPU_MEASURE_ARGS = dict(numpy_sizes=(10**3, 10**4, 10**5, 10**6), executor_sizes=(10**3, 10**4), repeats=3)

    def __init__(self, session, parent=None):
        super().__init__(session, parent)
        self.timing_set: TimingSet | None = None
        self.current: list[Series] = []
        self.legend_names: list[str] = []  # what the legend of the plot on screen names, series by series
        self._loaded: dict[int, TimingSet] = {}  # set index -> loaded set
        self._live_sets: set[int] = set()  # indices of sets measured on this machine in this session
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        bar = QtWidgets.QHBoxLayout()
        self.set_box = QtWidgets.QComboBox()
        self.plot_box = QtWidgets.QComboBox()
        for key, label in PLOTS:
            self.plot_box.addItem(label, key)
        self.plot_box.setCurrentIndex(self.plot_box.findData("cpu_vs_gpu"))  # GPU and CPU side by side first
        self.set_box.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        # long labels must not widen the dock (the list shows them whole); on a row of its own the box takes the
        # dock's width: beside the plot box and the buttons, in a narrow dock, all four were cut ('GPU · N',
        # 'host flo', 'asure C')
        self.set_box.setMinimumContentsLength(16)
        self.set_box.setSizePolicy(QtWidgets.QSizePolicy.Policy.Expanding, QtWidgets.QSizePolicy.Policy.Fixed)
        self.cpu_button = QtWidgets.QPushButton("Measure CPU")
        self.cpu_button.setToolTip("time numpy and gpuviz's CPU executor on this machine (labelled CPU)")
        self.cpu_busy = QtWidgets.QProgressBar()  # runs (indeterminate) while Measure CPU works
        self.cpu_busy.setRange(0, 0)
        self.cpu_busy.setTextVisible(False)
        self.cpu_busy.setMaximumWidth(90)
        self.cpu_busy.setToolTip("measuring numpy and the CPU executor on this machine")
        self.cpu_busy.hide()
        self._cpu_worker = None  # the Measure CPU run in progress, if any
        self.export_button = QtWidgets.QPushButton("Export…")
        layout.addWidget(self.set_box)
        for w in (self.plot_box, self.cpu_button, self.cpu_busy, self.export_button):
            bar.addWidget(w)
        bar.addStretch(1)
        layout.addLayout(bar)
        self.label = QtWidgets.QLabel()
        self.label.setWordWrap(True)
        self.label.setObjectName("timingSource")
        self.label.setTextFormat(QtCore.Qt.TextFormat.PlainText)  # device names and paths from timing files
        self.label.setMinimumWidth(50)
        self.label.setContentsMargins(6, 2, 6, 2)
        layout.addWidget(self.label)
        # a short dock (a lesson's scene on a projector at 1280x720: ~200 px) shows the chart and where its numbers
        # come from in one line; the set and plot boxes, the buttons and the wrapped source line come back with
        # the room (:meth:`_fit_controls`). Nobody clicks during a talk; a chart squeezed to 40 px teaches nothing
        self.short_label = QtWidgets.QLabel()
        self.short_label.setObjectName("timingSourceShort")
        self.short_label.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        self.short_label.setContentsMargins(6, 0, 6, 0)
        self.short_label.setMinimumWidth(50)
        self.short_label.hide()
        layout.addWidget(self.short_label)
        self.compact = False
        self.plot = pg.PlotWidget()
        self.plot.setMinimumHeight(140)  # the source line wraps in a narrow dock: the plot keeps room
        # the legend below the axes, not over the data: addLegend() floats it on the view box, where it covered
        # the bars and lines it names. Named items still join it by themselves (PlotItem.addItem)
        pi = self.plot.getPlotItem()
        pi.legend = pg.LegendItem(offset=None)
        pi.legend.setObjectName("timingsLegend")
        # the title over the plot and a legend beside it, not over the plot's column only: a long title made
        # that column as wide as itself and pushed the legend out of the widget
        pi.layout.removeItem(pi.titleLabel)
        pi.layout.addItem(pi.titleLabel, 0, 1, 1, 3)
        self._legend_place = None
        self._legend_full: list[str] = []  # the legend's entries whole, and without what they all share
        self._legend_short: list[str] = []
        self._title_text, self._title_shown = "", None  # the plot's title, and what of it is shown (wrapped)
        self._value_items: list = []  # (text item, its bar's x, its bar's height) of each value label
        self._bar_boxes: list = []  # (x, width, height) of each bar, in the plot's coordinates
        self._categories: list[str] = []  # the bars' category names, and whether they are shown one word a line
        self._categories_wrapped: str | None = None
        self._place_legend()
        layout.addWidget(self.plot)
        self._sets: list[tuple[str, object]] = []
        self._no_sets_reason = ""
        self.reload_sets()
        self.set_box.currentIndexChanged.connect(self._on_set)
        self.plot_box.currentIndexChanged.connect(lambda _i: self.redraw())
        self.cpu_button.clicked.connect(self.measure_cpu)
        self.export_button.clicked.connect(self._export_dialog)
        self._on_set()

    # ---- sets -------------------------------------------------------------------------------------------------
    def reload_sets(self) -> None:
        self._sets, self._no_sets_reason = _sets_from_recordings()
        self._loaded = {}
        self._live_sets = set()
        self.set_box.blockSignals(True)
        self.set_box.clear()
        for label, src in self._sets:
            self.set_box.addItem(label)
            self.set_box.setItemData(self.set_box.count() - 1, getattr(src, "label", label), QtCore.Qt.ItemDataRole.ToolTipRole)
        self.set_box.blockSignals(False)

    def add_set(self, ts: TimingSet, live: bool = True) -> None:
        """Offer ``ts`` (e.g. CPU timings measured here: ``live``) and show it."""
        text = measured_set_text(ts) if live else ts.description
        self._sets.append((text, ts))
        if live:
            self._live_sets.add(len(self._sets) - 1)
        self.set_box.addItem(text)
        self.set_box.setCurrentIndex(self.set_box.count() - 1)

    def show_recorded(self, file_name: str, kind: str) -> bool:
        """Show the shipped timing set ``file_name`` (or, "" , the first set that has a ``kind`` plot) as a ``kind``
        plot (a lesson's scene shows the timings its notes quote). False when no such set is installed."""
        index = -1
        for i, (_label, src) in enumerate(self._sets):
            path = getattr(src, "path", None)
            if file_name and path is not None and path.name == file_name:
                index = i
                break
            if not file_name:
                try:
                    if self._load(i).by_kind(kind):
                        index = i
                        break
                except Exception:  # noqa: BLE001 - a damaged set is not the one to show
                    continue
        if index < 0:
            return False
        self.plot_box.blockSignals(True)
        self.plot_box.setCurrentIndex(max(0, self.plot_box.findData(kind)))
        self.plot_box.blockSignals(False)
        if self.set_box.currentIndex() != index:
            self.set_box.setCurrentIndex(index)  # redraws
        else:
            self._on_set()
        return True

    def showing(self) -> tuple[str, str]:
        """(file name of the set on screen, or "" for a set measured here; plot kind)."""
        i = self._current_index()
        src = self._sets[i][1] if 0 <= i < len(self._sets) else None
        path = getattr(src, "path", None)
        return (path.name if path is not None else ""), (self.plot_box.currentData() or "")

    def _load(self, i: int) -> TimingSet | None:
        if i not in self._loaded:
            src = self._sets[i][1]
            self._loaded[i] = src if isinstance(src, TimingSet) else src.load()
        return self._loaded[i]

    def _on_set(self, _i=None) -> None:
        i = self.set_box.currentIndex()
        self.timing_set = None
        self._load_error = ""
        if 0 <= i < len(self._sets):
            try:
                self.timing_set = self._load(i)
            except ValueError as exc:  # TimingFileError: unreadable, not JSON, or not a timings file
                self._load_error = f"cannot load {self._sets[i][0]}: {exc}"
        self.redraw()

    @property
    def cpu_measuring(self) -> bool:
        """Is a Measure CPU run in progress?"""
        return self._cpu_worker is not None

    def measure_cpu(self) -> None:
        """Time numpy and the CPU executor on this machine (about a second) in a worker thread, then show
        them beside the GPU set. The view stays live meanwhile; :attr:`cpu_measure_finished` says when done."""
        if self._cpu_worker is not None:  # one run at a time (the button is disabled meanwhile)
            return
        self.cpu_button.setEnabled(False)
        self.cpu_button.setText("Measuring…")
        self.cpu_busy.show()
        self._say("measuring numpy and the CPU executor on this machine's CPU…")
        worker = CpuMeasurement(self.CPU_MEASURE_ARGS)
        # the worker's signals belong to this (the GUI) thread: they arrive queued, so these slots may touch widgets
        worker.measured.connect(self._cpu_measured)
        worker.failed.connect(self._cpu_failed)
        self._cpu_worker = worker
        worker.start()

    def _cpu_done(self) -> None:
        self._cpu_worker = None
        self.cpu_busy.hide()
        self.cpu_button.setText("Measure CPU")
        self.cpu_button.setEnabled(True)

    def _cpu_measured(self, ts: TimingSet) -> None:
        self._cpu_done()
        self.add_set(ts, live=True)
        self.cpu_measure_finished.emit(True)

    def _cpu_failed(self, exc: BaseException) -> None:
        self._cpu_done()
        self._say(f"measuring the CPU failed: {type(exc).__name__}: {exc}")
        self.cpu_measure_finished.emit(False)

    # ---- hooks --------------------------------------------------------------------------------------------------
    def on_trace_changed(self) -> None:
        if self.plot_box.currentData() == "blocks_on_sms":
            self.redraw()
        elif self.timing_set is not None and not getattr(self, "_load_error", ""):
            # the plot stays; the note on which kernel its timings are of follows the trace on screen
            kind = self.plot_box.currentData() or "host_flow"
            source = self.set_source_text(self.timing_set, self._current_index() in self._live_sets)
            text = self._not_this_kernel(self.series_for(kind)) + source
            self._say(text if self.current else f"{text}: no {dict(PLOTS)[kind]} measurements in it")

    def on_theme_changed(self) -> None:
        style_plot(self.plot, self.theme)
        self.redraw()
        self._fit_controls()  # the text size changed with the theme's scale

    def _say(self, text: str) -> None:
        """Where the plot's numbers come from (or what went wrong), in the source line."""
        self.label.setText(text)
        self._fit_controls()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_controls()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self._fit_controls()

    def _fit_controls(self) -> None:
        """Controls and the wrapped source line where they leave the plot its minimum height; else (compact) the
        plot and one elided line of the source, the whole of it in the line's tooltip."""
        if not self.isVisible():
            return
        spacing = max(0, self.layout().spacing())
        # presenting (the window has a presenter: gpuviz.ui.presenter.presenter_of), the view is always compact:
        # nobody uses the controls during a talk, and the chart is what the room reads
        presenting = getattr(self.window(), "_gpuviz_presenter", None) is not None
        rows = (self.set_box.sizeHint().height() + self.plot_box.sizeHint().height()
                + self.label.heightForWidth(max(1, self.width())) + self.plot.minimumHeight() + 3 * spacing)
        compact = presenting or self.height() < rows
        if compact != self.compact:
            self.compact = compact
            for w in (self.set_box, self.plot_box, self.cpu_button, self.export_button, self.label):
                w.setVisible(not compact)
            self.short_label.setVisible(compact)
        if compact:
            full = self.label.text()
            # the set's name says GPU or CPU, device and date in a few words; a failure's text says itself
            first = (self.set_box.currentText() if self.timing_set is not None and not getattr(self, "_load_error", "")
                     and not self.cpu_measuring else full.split("\n", 1)[0])
            metrics = self.short_label.fontMetrics()
            room = max(10, self.width() - 12)
            self.short_label.setText(metrics.elidedText(first, QtCore.Qt.TextElideMode.ElideRight, room))
            self.short_label.setToolTip(plain_tooltip(full))  # device names and paths from timing files, literally

    def plots_resized(self) -> None:
        super().plots_resized()
        self._fit_chart_text()

    def _place_legend(self) -> None:
        """The legend beside the axes in a wide, short dock (the bottom tabs at 1280x720), below them in a tall
        one: never over the data."""
        self._fit_legend_texts()
        pi = self.plot.getPlotItem()
        legend = pi.legend
        entries = [label.itemRect().width() + 30 for _sample, label in legend.items] or [0]
        widest = max(entries)
        # beside: when the plot is wide and short and the legend takes at most 60% of its width; below
        # otherwise, in two columns of entries where two fit
        # (bars that carry their values need the width more: each value is as wide as two bars, or wider)
        share = 0.35 if self._value_items else 0.6
        wide = self.plot.width() > 1.6 * self.plot.height() and widest <= share * self.plot.width()
        n = 2 if 2 * widest <= 0.95 * self.plot.width() else 1
        place = (2, 3, 1) if wide else (4, 1, n)  # (row, column, columns of entries)
        if place == self._legend_place:
            return
        self._legend_place = place
        if legend in [pi.layout.itemAt(i) for i in range(pi.layout.count())]:
            pi.layout.removeItem(legend)
        row, col, n = place
        legend.setColumnCount(n)
        # as wide as its longest entry: the plot's layout squeezed it and cut the entries' ends off
        legend.setMinimumWidth(widest if col == 3 else 0)
        pi.layout.addItem(legend, row, col)

    # ---- drawing ------------------------------------------------------------------------------------------------
    # ---- where numbers come from ----------------------------------------------------------------------------
    def set_source_text(self, ts: TimingSet, live: bool) -> str:
        """One line: GPU or CPU, device, driver, date, host and versions of a set."""
        if ts.processor == "gpu":
            text = f"GPU timings recorded on {ts.device}" + (f" (driver {ts.driver})" if ts.driver else "")
            text += f", {ts.date}" if ts.date else ""
            if ts.host:
                text += f" · CPU rows: its host, {_short_cpu(ts.host)}"
        else:
            text = f"CPU timings of {_short_cpu(ts.device)}" + (", measured on this machine" if live else "")
            text += f", {ts.date}" if ts.date else ""
            text += " · no GPU was timed"
        v = versions_text(ts.versions)
        return text + (f"\n{v}" if v else "")

    def processor_label(self, proc: str, ts: TimingSet, live: bool) -> str:
        """"GPU: NVIDIA H200" / "CPU: AMD EPYC (this machine)" / "CPU: Intel Xeon Processor (H200 host)"."""
        if proc == "gpu":
            return f"GPU: {ts.device}"
        if ts.processor == "gpu":  # the CPU rows of a GPU set: the GPU machine's host processor
            return f"CPU: {_short_cpu(ts.host or 'host CPU')} ({ts.device} host)"
        return f"CPU: {_short_cpu(ts.device)}" + (" (this machine)" if live else "")

    def _current_index(self) -> int:
        return self.set_box.currentIndex()

    def series_for(self, kind: str) -> list[tuple[Series, TimingSet | None, bool]]:
        """(series, the set it comes from, measured live here) to draw for a plot kind."""
        trace = self.session.trace
        if kind == "blocks_on_sms" and trace is not None and trace.has("sm") and trace.has("time"):
            return [(blocks_on_sms(trace), None, False)]
        out = []
        i = self._current_index()
        if self.timing_set is not None:
            out += [(s, self.timing_set, i in self._live_sets) for s in self.timing_set.by_kind(kind)]
        if kind == "cpu_vs_gpu" and not self._standalone(i):  # the other sets' lines beside it: live CPU next to recorded GPU
            for j in range(len(self._sets)):
                if j == i or self._standalone(j):
                    continue
                try:
                    ts = self._load(j)
                except Exception:  # noqa: BLE001 - a damaged set is reported when it is chosen
                    continue
                out += [(s, ts, j in self._live_sets) for s in ts.by_kind(kind)]
        return out

    def _standalone(self, i: int) -> bool:
        """A recorded set of another operation (the fusion lesson's a * x + b * y): shown alone, never drawn
        beside the a + b sets (nor they beside it), which would put two operations on one plot."""
        src = self._sets[i][1] if 0 <= i < len(self._sets) else None
        return bool(getattr(src, "details", {}).get("standalone", False))

    def redraw(self) -> None:
        kind = self.plot_box.currentData() or "host_flow"
        drawn = self.series_for(kind)
        self.current = [s for s, _ts, _live in drawn]
        self.legend_names = []
        pi = self.plot.getPlotItem()
        pi.clear()
        if pi.legend is not None:
            pi.legend.clear()
        pi.setLogMode(False, False)
        pi.getAxis("bottom").setTicks(None)  # bar plots name their categories; other plots use numbers
        tick_font = QtGui.QFont()
        tick_font.setPixelSize(self.theme.px())  # as style_plot sets it: a bar plot's narrow categories shrink it
        pi.getAxis("bottom").setTickFont(tick_font)
        pi.getAxis("bottom").setHeight(None)  # and one line tall again
        pi.getAxis("left").setTicks(None)
        for axis in ("bottom", "left"):  # each plot names its own axes: none carries over from the last one
            pi.setLabel(axis, "", units=None)
        for axis in ("left", "bottom"):  # "seconds (x0.001)" over log ticks reads wrong: units stay as labelled
            pi.getAxis(axis).enableAutoSIPrefix(False)
        if pi.legend is not None:  # the legend sits over the plot: give it a background so lines do not run through text
            bg = pg.mkColor(self.theme.background)
            bg.setAlpha(220)
            pi.legend.setBrush(pg.mkBrush(bg))
            pi.legend.setPen(pg.mkPen(self.theme.grid))
            pi.legend.setLabelTextColor(self.theme.foreground)
            pi.legend.setLabelTextSize(f"{self.theme.px(13)}px")
        pi.setTitle(None)
        self._title_text, self._title_shown = "", None
        self._value_items, self._bar_boxes = [], []
        ts = self.timing_set
        if kind == "blocks_on_sms" and drawn and drawn[0][1] is None:
            L = self.session.trace.launch
            source = f"from the trace on screen: recorded on {L.device}, {L.created[:10]} (GPU)"
        elif getattr(self, "_load_error", ""):
            source = self._load_error
        elif ts is None:
            source = self._no_sets_reason or "no timing set: press Measure CPU, or install gpuviz with its recordings"
        else:
            source = self.set_source_text(ts, self._current_index() in self._live_sets)
            source = self._not_this_kernel(drawn) + source
        self._say(source if self.current else f"{source}: no {dict(PLOTS)[kind]} measurements in it")
        if not self.current:
            return
        getattr(self, f"_draw_{kind}")(pi, drawn)
        self._legend_full = list(self.legend_names)
        self._legend_short = shared_suffix_dropped(self._legend_full)
        self._legend_place = None  # its entries changed: beside or below is decided again
        self._fit_chart_text()

    def _not_this_kernel(self, drawn) -> str:
        """A set's timings are of the operation it timed (vector add's c = a + b): said outright when another
        kernel is on screen, so nobody reads them as that kernel's."""
        trace = self.session.trace
        if trace is None or not drawn:
            return ""
        name = trace.launch.kernel_name
        titles = " ".join(str(getattr(s, "title", "")) for s, _ts, _live in drawn)
        if name and (name in titles or name.replace("_", " ") in titles):  # "host flow of one vector add"
            return ""
        try:  # a bundled kernel's operation ("c = a + b" for vector_add), as its description writes it
            op = kernel_info(name).description.split(":")[0].split(" in one")[0].strip()
        except Exception:  # noqa: BLE001 - not a bundled kernel (a user's program): no operation to match
            op = ""
        if op and op in titles:
            return ""
        what = str(getattr(drawn[0][0], "title", "") or "the operation in the plot's title")
        return f"Timings of {what}, not of {name} on screen. "

    def _title(self, pi, text: str) -> None:
        """A plot's title (plain text) in the theme's text colour and scaled (pyqtgraph's own grey #969696 was
        2.96:1 on white, under the 4.5:1 text wants), wrapped to the plot's width (:meth:`_fit_title`)."""
        self._title_text, self._title_shown = text, None
        self._fit_title()

    def _colour(self, j: int) -> str:
        """The j-th series' colour: Okabe-Ito (told apart with the common colour-vision deficiencies), each
        3:1 or more on the theme's background."""
        colours = series_colours(self.theme)
        return colours[j % len(colours)]

    def _name(self, text: str) -> str:
        self.legend_names.append(text)
        return esc(text)  # legends are rich text; names come from timing files

    #: the value labels over the bars drawn last, (group, stage, text): every bar says its value
    bar_labels: list = []

    def _bars(self, pi, names, groups: dict[str, list[float]], log=False, label=None):
        """Grouped bars; ``label``: the text of each bar's value (a bar without one left a class reading
        values off an axis; the host flow labelled two of its five stages), placed by :meth:`_place_values`."""
        width = 0.8 / max(len(groups), 1)
        self.bar_labels = []
        font = pg.QtGui.QFont()
        font.setPixelSize(max(10, self.theme.px(self.theme.font_px * 0.75)))
        for j, (group, values) in enumerate(groups.items()):
            v = np.asarray(values, float)
            if log:
                v = np.log10(np.maximum(v, 1e-12))
            x = np.arange(len(names)) + (j - (len(groups) - 1) / 2) * width
            # a named item joins the plot's legend by itself when added (adding it again listed it twice)
            item = pg.BarGraphItem(x=x, height=v, width=width * 0.95, brush=self._colour(j), name=self._name(group))
            pi.addItem(item)
            self._bar_boxes += [(float(xi), width * 0.95, float(vi)) for xi, vi in zip(x, v)]
            if label is None:
                continue
            for xi, vi, raw, name in zip(x, v, values, names):
                text = pg.TextItem(label(raw), color=self.theme.foreground, anchor=(0.0, 1.0))
                text.textItem.document().setDocumentMargin(1)  # labels pack closer: the 4 px default wasted room
                text.setFont(font)
                pi.addItem(text)
                self._value_items.append((text, float(xi), float(vi)))
                self.bar_labels.append((group, name, label(raw)))
        self._categories, self._categories_wrapped = list(names), None
        pi.getAxis("bottom").setTicks([list(enumerate(names))])
        pi.setXRange(-0.5, len(names) - 0.5, padding=0.02)  # known ends: the values are placed in pixels of it

    def _draw_host_flow(self, pi, drawn):
        s, ts, live = drawn[0]
        stages = list(dict.fromkeys(s.columns["stage"]))
        groups = {}
        procs = s.processor_of_rows()
        for mem in dict.fromkeys(s.columns["memory"]):
            sub = s.where(memory=mem)
            proc = procs[s.columns["memory"].index(mem)]
            groups[f"{mem} host memory · {self.processor_label(proc, ts, live)}"] = [
                1e3 * sub.columns["seconds"][sub.columns["stage"].index(st)] for st in stages]
        # each bar's value as the lesson's notes write it (lessons.metrics: '2.86 ms', '62.3 µs')
        self._bars(pi, stages, groups, label=lambda ms: seconds_text(ms / 1e3))
        pi.setLabel("left", "time", units="ms")
        self._title(pi, s.title)

    def _draw_compile_vs_run(self, pi, drawn):
        s, ts, live = drawn[0]
        names = s.columns["kernel"]
        who = self.processor_label(s.processor if s.processor != "mixed" else s.processor_of_rows()[0], ts, live)
        self._bars(pi, names, {f"first call (compile + run) · {who}": s.columns["first_call_s"],
                               f"steady-state run · {who}": s.columns["steady_s"]}, log=True)
        pi.setLabel("left", "log10 seconds")
        self._title(pi, f"{s.title} · {who}")

    def _draw_block_sweep(self, pi, drawn):
        for j, (s, ts, live) in enumerate(drawn):
            y_col = "gb_per_s" if "gb_per_s" in s.columns else "gflop_per_s"
            x = s.column("threads_per_block")
            who = self.processor_label(s.processor_of_rows()[0] if len(s) else s.processor, ts, live)
            pi.plot(x, s.column(y_col), pen=pg.mkPen(self._colour(j), width=2), symbol="o",
                    symbolBrush=self._colour(j), name=self._name(f"{s.title} [{s.units.get(y_col, '')}] · {who}"))
        pi.setLogMode(True, False)
        tpb = sorted({int(x) for s, _ts, _live in drawn for x in s.column("threads_per_block") if x > 0})
        pi.getAxis("bottom").setTicks([[(float(np.log10(x)), str(x)) for x in tpb], []])
        pi.setLabel("bottom", "threads per block")
        pi.setLabel("left", "achieved GB/s or GFLOP/s")

    def _draw_cpu_vs_gpu(self, pi, drawn):
        j = 0
        for s, ts, live in drawn:
            procs = s.processor_of_rows()
            impls = s.columns["implementation"]
            for impl in dict.fromkeys(impls):
                rows = [i for i, x in enumerate(impls) if x == impl]
                proc = procs[rows[0]]
                x = np.array([s.columns["size"][i] for i in rows], float)
                y = np.array([s.columns["seconds"][i] for i in rows], float)
                cpu = proc == "cpu"
                style = dict(pen=pg.mkPen(self._colour(j), width=2,
                                          style=pg.QtCore.Qt.PenStyle.DashLine if cpu else pg.QtCore.Qt.PenStyle.SolidLine),
                             symbol="s" if cpu else "o", symbolBrush=self._colour(j))
                pi.plot(x, y, name=self._name(f"{impl} · {self.processor_label(proc, ts, live)}"), **style)
                j += 1
        pi.setLogMode(True, True)
        sizes = [x for s, _ts, _live in drawn for x in s.columns["size"]]
        seconds = [y for s, _ts, _live in drawn for y in s.columns["seconds"]]
        pi.getAxis("bottom").setTicks(decade_ticks(sizes))
        pi.getAxis("left").setTicks(decade_ticks(seconds))
        pi.setLabel("bottom", "elements")
        pi.setLabel("left", "seconds")
        # the operation timed, as its set names it ("c = a + b", "out = a * x + b * y (float32)"), not always a + b
        what = str(getattr(drawn[0][0], "title", "") or "").split(":")[0].strip() or "the timed operation"
        self._title(pi, f"{what}: CPU (dashed, squares) vs GPU (solid, dots)")

    def _draw_blocks_on_sms(self, pi, drawn):
        s = drawn[0][0]
        sm = s.column("sm")
        start, end = s.column("start_ns") / 1e3, s.column("end_ns") / 1e3
        order = waves(s)
        brushes = [pg.mkBrush(self._colour(int(w))) for w in order]
        pi.addItem(pg.BarGraphItem(x0=start, x1=np.maximum(end, start + 0.05), y=sm, height=0.8, brushes=brushes,
                                   pen=pg.mkPen(None)))
        self.legend_names.append(f"{s.title} (GPU)")
        pi.setLabel("bottom", "time since the first block started", units="µs")
        pi.setLabel("left", "SM")
        self._title(pi, f"{s.title} · GPU (colour: order of the block on its SM)")

    # ---- export -------------------------------------------------------------------------------------------------
    def export(self, stem) -> list[Path]:
        """Write the current plot as ``stem.png``, its series as ``stem_N.csv`` and ``stem.json``."""
        from pyqtgraph.exporters import ImageExporter

        stem = Path(stem)
        stem.parent.mkdir(parents=True, exist_ok=True)
        paths = []
        png = stem.with_suffix(".png")
        ImageExporter(self.plot.getPlotItem()).export(str(png))
        paths.append(png)
        for i, s in enumerate(self.current):
            p = stem.parent / f"{stem.name}_{i}.csv"
            p.write_text(s.to_csv(), encoding="utf-8")
            paths.append(p)
        meta = {}
        if self.timing_set is not None:
            meta = {k: v for k, v in self.timing_set.to_json().items() if k != "series"}
        p = stem.with_suffix(".json")
        p.write_text(json.dumps({"source": self.label.text(), "set": meta, "series": [s.to_json() for s in self.current]},
                                indent=1), encoding="utf-8")
        paths.append(p)
        return paths

    def _export_dialog(self) -> None:
        path, _ = QtWidgets.QFileDialog.getSaveFileName(self, "Export plot (PNG + CSV + JSON)", "timings.png", "PNG (*.png)")
        if path:
            self.export(Path(path).with_suffix(""))
