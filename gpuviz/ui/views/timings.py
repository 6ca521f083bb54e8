"""Timings: real measurements as plots, each exportable as PNG plus its numbers as CSV and JSON.

Plots (one at a time, chosen in the view's bar):

    host flow        one launch stage by stage (allocate, copy in, kernel, copy out, free), pageable vs pinned
    compile vs run   a kernel's first call (JIT compile) against its steady-state run, log scale
    block sweep      kernel time vs block size, as achieved bandwidth (GB/s) or FLOP/s
    CPU vs GPU       c = a + b over sizes, log-log, one line per implementation, CPU and GPU labelled
    blocks on SMs    which block ran on which SM, when (from the current trace when it was recorded on a
                     GPU, else from the timing set): one bar per block, coloured by its order on its SM

Where the numbers come from is always on screen: the set's label says GPU or CPU, device, driver and
date, and every line of the CPU-vs-GPU plot names its processor. Sets: the GPU recordings shipped in
``assets/recordings`` (:func:`gpuviz.timing.recordings.list_recordings`) and, on demand, CPU timings
measured live on this machine (labelled CPU).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6 import QtWidgets

from ...model.timings import Series, TimingSet, blocks_on_sms, waves
from .base import TraceView, register_view, style_plot

PLOTS = (
    ("host_flow", "host flow"),
    ("compile_vs_run", "compile vs run"),
    ("block_sweep", "block sweep"),
    ("cpu_vs_gpu", "CPU vs GPU"),
    ("blocks_on_sms", "blocks on SMs"),
)
# Okabe-Ito: distinguishable with the common colour-vision deficiencies
COLOURS = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]


def _sets_from_recordings() -> list[tuple[str, object]]:
    try:
        from ...timing.recordings import list_recordings

        return [(r.label, r) for r in list_recordings(kind="timings")]
    except Exception:
        return []


@register_view
class TimingsView(TraceView):
    view_id = "timings"
    title = "Timings"
    default_area = "bottom"
    order = 90

    def __init__(self, session, parent=None):
        super().__init__(session, parent)
        self.timing_set: TimingSet | None = None
        self.current: list[Series] = []
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        bar = QtWidgets.QHBoxLayout()
        self.set_box = QtWidgets.QComboBox()
        self.plot_box = QtWidgets.QComboBox()
        for key, label in PLOTS:
            self.plot_box.addItem(label, key)
        self.cpu_button = QtWidgets.QPushButton("Measure CPU")
        self.cpu_button.setToolTip("time numpy and gpuviz's CPU executor on this machine (labelled CPU)")
        self.export_button = QtWidgets.QPushButton("Export…")
        for w in (self.set_box, self.plot_box, self.cpu_button, self.export_button):
            bar.addWidget(w)
        bar.addStretch(1)
        layout.addLayout(bar)
        self.label = QtWidgets.QLabel()
        self.label.setWordWrap(True)
        layout.addWidget(self.label)
        self.plot = pg.PlotWidget()
        self.plot.addLegend()
        layout.addWidget(self.plot)
        self._sets: list[tuple[str, object]] = []
        self.reload_sets()
        self.set_box.currentIndexChanged.connect(self._on_set)
        self.plot_box.currentIndexChanged.connect(lambda _i: self.redraw())
        self.cpu_button.clicked.connect(self.measure_cpu)
        self.export_button.clicked.connect(self._export_dialog)
        self._on_set()

    # ---- sets -------------------------------------------------------------------------------------------------
    def reload_sets(self) -> None:
        self._sets = _sets_from_recordings()
        self.set_box.blockSignals(True)
        self.set_box.clear()
        for label, _src in self._sets:
            self.set_box.addItem(label)
        self.set_box.blockSignals(False)

    def add_set(self, ts: TimingSet) -> None:
        """Offer ``ts`` (e.g. live CPU timings) and show it."""
        self._sets.append((ts.description, ts))
        self.set_box.addItem(ts.description)
        self.set_box.setCurrentIndex(self.set_box.count() - 1)

    def _on_set(self, _i=None) -> None:
        i = self.set_box.currentIndex()
        self.timing_set = None
        if 0 <= i < len(self._sets):
            src = self._sets[i][1]
            try:
                self.timing_set = src if isinstance(src, TimingSet) else src.load()
            except Exception as exc:
                self.label.setText(f"cannot load {self._sets[i][0]}: {exc}")
        self.redraw()

    def measure_cpu(self) -> None:
        from ...timing.cpu import cpu_timing_set

        self.add_set(cpu_timing_set(numpy_sizes=(10**3, 10**4, 10**5, 10**6), executor_sizes=(10**3, 10**4), repeats=3))

    # ---- hooks --------------------------------------------------------------------------------------------------
    def on_trace_changed(self) -> None:
        if self.plot_box.currentData() == "blocks_on_sms":
            self.redraw()

    def on_theme_changed(self) -> None:
        style_plot(self.plot, self.theme)
        self.redraw()

    # ---- drawing ------------------------------------------------------------------------------------------------
    def series_for(self, kind: str) -> tuple[list[Series], str]:
        """The series to draw and where they come from."""
        trace = self.session.trace
        if kind == "blocks_on_sms" and trace is not None and trace.has("sm") and trace.has("time"):
            return [blocks_on_sms(trace)], f"from the current trace: {trace.launch.device}, {trace.launch.created[:10]}"
        ts = self.timing_set
        if ts is None:
            return [], "no timing set: measure the CPU, or install gpuviz with its recordings"
        return ts.by_kind(kind), ts.description

    def redraw(self) -> None:
        kind = self.plot_box.currentData() or "host_flow"
        self.current, source = self.series_for(kind)
        pi = self.plot.getPlotItem()
        pi.clear()
        if pi.legend is not None:
            pi.legend.clear()
        pi.setLogMode(False, False)
        pi.getAxis("bottom").setTicks(None)  # bar plots name their categories; other plots use numbers
        pi.setTitle(None)
        self.label.setText(source if self.current else f"{source}: no {dict(PLOTS)[kind]} measurements in it")
        if not self.current:
            return
        getattr(self, f"_draw_{kind}")(pi, self.current)

    def _bars(self, pi, names, groups: dict[str, list[float]], log=False):
        width = 0.8 / max(len(groups), 1)
        for j, (group, values) in enumerate(groups.items()):
            v = np.asarray(values, float)
            if log:
                v = np.log10(np.maximum(v, 1e-12))
            x = np.arange(len(names)) + (j - (len(groups) - 1) / 2) * width
            item = pg.BarGraphItem(x=x, height=v, width=width * 0.95, brush=COLOURS[j % len(COLOURS)], name=group)
            pi.addItem(item)
            pi.legend.addItem(item, group) if pi.legend is not None else None
        pi.getAxis("bottom").setTicks([list(enumerate(names))])

    def _draw_host_flow(self, pi, series):
        s = series[0]
        stages = list(dict.fromkeys(s.columns["stage"]))
        groups = {}
        for mem in dict.fromkeys(s.columns["memory"]):
            sub = s.where(memory=mem)
            groups[f"{mem} host memory (GPU)"] = [1e3 * sub.columns["seconds"][sub.columns["stage"].index(st)] for st in stages]
        self._bars(pi, stages, groups)
        pi.setLabel("left", "time", units="ms")
        pi.setTitle(s.title)

    def _draw_compile_vs_run(self, pi, series):
        s = series[0]
        names = s.columns["kernel"]
        self._bars(pi, names, {"first call (compile + run)": s.columns["first_call_s"], "steady-state run": s.columns["steady_s"]},
                   log=True)
        pi.setLabel("left", "log10 seconds")
        pi.setTitle(s.title + f" ({s.processor.upper()})")

    def _draw_block_sweep(self, pi, series):
        for j, s in enumerate(series):
            y_col = "gb_per_s" if "gb_per_s" in s.columns else "gflop_per_s"
            x = s.column("threads_per_block")
            pi.plot(x, s.column(y_col), pen=pg.mkPen(COLOURS[j % len(COLOURS)], width=2), symbol="o",
                    symbolBrush=COLOURS[j % len(COLOURS)], name=f"{s.title} [{s.units.get(y_col, '')}] ({s.processor.upper()})")
        pi.setLogMode(True, False)
        pi.setLabel("bottom", "threads per block")
        pi.setLabel("left", "achieved GB/s or GFLOP/s")

    def _draw_cpu_vs_gpu(self, pi, series):
        j = 0
        for s in series:
            procs = s.processor_of_rows()
            impls = s.columns["implementation"]
            for impl in dict.fromkeys(impls):
                rows = [i for i, x in enumerate(impls) if x == impl]
                proc = procs[rows[0]].upper()
                x = np.array([s.columns["size"][i] for i in rows], float)
                y = np.array([s.columns["seconds"][i] for i in rows], float)
                style = dict(pen=pg.mkPen(COLOURS[j % len(COLOURS)], width=2,
                                          style=pg.QtCore.Qt.PenStyle.DashLine if proc == "CPU" else pg.QtCore.Qt.PenStyle.SolidLine),
                             symbol="s" if proc == "CPU" else "o", symbolBrush=COLOURS[j % len(COLOURS)])
                pi.plot(x, y, name=f"{impl} ({proc})", **style)
                j += 1
        pi.setLogMode(True, True)
        pi.setLabel("bottom", "elements")
        pi.setLabel("left", "seconds")
        pi.setTitle("c = a + b: CPU (dashed) vs GPU (solid)")

    def _draw_blocks_on_sms(self, pi, series):
        s = series[0]
        sm = s.column("sm")
        start, end = s.column("start_ns") / 1e3, s.column("end_ns") / 1e3
        order = waves(s)
        brushes = [pg.mkBrush(COLOURS[int(w) % len(COLOURS)]) for w in order]
        pi.addItem(pg.BarGraphItem(x0=start, x1=np.maximum(end, start + 0.05), y=sm, height=0.8, brushes=brushes,
                                   pen=pg.mkPen(None)))
        pi.setLabel("bottom", "time since the first block started", units="µs")
        pi.setLabel("left", "SM")
        pi.setTitle(f"{s.title} (colour: order of the block on its SM)")

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
