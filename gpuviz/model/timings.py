"""Timing sets: measured times, labelled with what ran them (Qt-free, numpy only).

A :class:`TimingSet` is what one machine measured in one session: its device (GPU name, or the CPU for
CPU-only sets), driver, date, software versions, and a list of :class:`Series`. Each series is a small
table (columns of equal length) of one kind:

    host_flow       one launch's stages (allocate, copy in, kernel, copy out, free), pageable vs pinned
    compile_vs_run  first call (JIT compile + run) vs steady-state run, per kernel
    block_sweep     kernel time vs threads per block, with achieved bandwidth (GB/s) or FLOP/s
    cpu_vs_gpu      the same operation over sizes on the CPU (numpy, the CPU executor) and the GPU
    blocks_on_sms   which block ran on which SM, from when to when (from a recorded GPU trace)

Every series says which processor produced its numbers (``processor``: "gpu", "cpu", or "mixed" with a
``processor`` column naming it row by row), so a CPU time is never shown as a GPU time or the other way.

Files: JSON (``save``/``load``; plain data, no pickle, a format tag and schema version, damaged files
rejected with a message naming the file) and CSV per series (``Series.to_csv``).
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = "gpuviz-timings"
SCHEMA_VERSION = 1
SERIES_KINDS = ("host_flow", "compile_vs_run", "block_sweep", "cpu_vs_gpu", "blocks_on_sms")
PROCESSORS = ("gpu", "cpu", "mixed")


class TimingFileError(ValueError):
    """A timings file that cannot be read: damaged, foreign, or from a newer gpuviz."""


def _plain(v):
    """A JSON-able scalar (numpy scalars to Python, NaN kept as None)."""
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        f = float(v)
        return None if math.isnan(f) else f
    if isinstance(v, (np.bool_,)):
        return bool(v)
    return v


@dataclass
class Series:
    """One table of measurements. ``columns`` maps a column name to its values (numbers or strings)."""

    kind: str
    title: str
    processor: str  # "gpu" | "cpu" | "mixed" (then a "processor" column says it per row)
    columns: dict[str, list] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)  # column -> unit, e.g. {"seconds": "s"}
    notes: str = ""

    def __post_init__(self):
        if self.kind not in SERIES_KINDS:
            raise ValueError(f"series kind must be one of {', '.join(SERIES_KINDS)}, not {self.kind!r}")
        if self.processor not in PROCESSORS:
            raise ValueError(f"series {self.title!r}: processor must be one of {', '.join(PROCESSORS)}, not {self.processor!r}")
        self.columns = {str(k): [_plain(x) for x in (v.tolist() if isinstance(v, np.ndarray) else v)]
                        for k, v in self.columns.items()}
        lengths = {k: len(v) for k, v in self.columns.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"series {self.title!r}: columns have different lengths {lengths}")
        if self.processor == "mixed":
            procs = self.columns.get("processor")
            if procs is None:
                raise ValueError(f"series {self.title!r} mixes processors, so it needs a 'processor' column")
            bad = sorted({p for p in procs if p not in ("gpu", "cpu")})
            if bad:
                raise ValueError(f"series {self.title!r}: processor column holds {bad}; each row is 'gpu' or 'cpu'")

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()), []))

    def column(self, name: str) -> np.ndarray:
        try:
            values = self.columns[name]
        except KeyError:
            raise KeyError(f"series {self.title!r} has no column {name!r}; it has {', '.join(self.columns)}") from None
        if all(isinstance(v, (int, float)) or v is None for v in values):
            return np.array([np.nan if v is None else v for v in values], dtype=np.float64)
        return np.array(values, dtype=object)

    def processor_of_rows(self) -> list[str]:
        if self.processor == "mixed":
            return list(self.columns["processor"])
        return [self.processor] * len(self)

    def where(self, **equal) -> "Series":
        """The rows whose columns equal the given values."""
        keep = np.ones(len(self), dtype=bool)
        for k, v in equal.items():
            keep &= np.array([x == v for x in self.columns[k]], dtype=bool)
        cols = {k: [x for x, m in zip(v, keep) if m] for k, v in self.columns.items()}
        return Series(self.kind, self.title, self.processor, cols, dict(self.units), self.notes)

    def to_csv(self) -> str:
        out = io.StringIO()
        w = csv.writer(out)
        names = list(self.columns)
        w.writerow([f"{n} [{self.units[n]}]" if n in self.units else n for n in names])
        for row in zip(*(self.columns[n] for n in names)):
            w.writerow(["" if v is None else v for v in row])
        return out.getvalue()

    def to_json(self) -> dict:
        return {"kind": self.kind, "title": self.title, "processor": self.processor, "columns": self.columns,
                "units": self.units, "notes": self.notes}

    @classmethod
    def from_json(cls, d: dict) -> "Series":
        return cls(kind=d["kind"], title=d["title"], processor=d["processor"], columns=dict(d["columns"]),
                   units=dict(d.get("units", {})), notes=str(d.get("notes", "")))


@dataclass
class TimingSet:
    """Measurements of one machine and session: device, driver, date, versions and the series."""

    label: str
    processor: str  # "gpu" when a GPU was measured (its CPU series say "cpu"), "cpu" for CPU-only sets
    device: str  # e.g. "NVIDIA H200" or the CPU model
    driver: str = ""  # NVIDIA driver version ("" for CPU-only sets)
    date: str = ""  # ISO date the measurements were taken
    host: str = ""  # the host CPU / platform
    versions: dict[str, str] = field(default_factory=dict)
    series: list[Series] = field(default_factory=list)
    notes: str = ""

    def __post_init__(self):
        if self.processor not in ("gpu", "cpu"):
            raise ValueError(f"a timing set is measured on 'gpu' or 'cpu', not {self.processor!r}")
        if self.processor == "cpu":
            gpu_rows = [s.title for s in self.series if "gpu" in s.processor_of_rows()]
            if gpu_rows:
                raise ValueError(f"a CPU-only timing set cannot hold GPU measurements: {gpu_rows}")

    @property
    def description(self) -> str:
        """One line for a menu: what, where, when."""
        what = "GPU" if self.processor == "gpu" else "CPU"
        parts = [f"{what} timings: {self.device}"]
        if self.driver:
            parts.append(f"driver {self.driver}")
        if self.date:
            parts.append(self.date)
        return ", ".join(parts)

    def by_kind(self, kind: str) -> list[Series]:
        return [s for s in self.series if s.kind == kind]

    def add(self, series: Series) -> Series:
        if self.processor == "cpu" and "gpu" in series.processor_of_rows():
            raise ValueError(f"a CPU-only timing set cannot hold the GPU series {series.title!r}")
        self.series.append(series)
        return series

    # ---- files ---------------------------------------------------------------------------------------------
    def to_json(self) -> dict:
        return {
            "format": FORMAT, "schema_version": SCHEMA_VERSION, "label": self.label, "processor": self.processor,
            "device": self.device, "driver": self.driver, "date": self.date, "host": self.host,
            "versions": dict(self.versions), "notes": self.notes, "series": [s.to_json() for s in self.series],
        }

    @classmethod
    def from_json(cls, d: Any, where: str = "timings") -> "TimingSet":
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise TimingFileError(f"{where}: not a gpuviz timings file (no format tag {FORMAT!r})")
        v = d.get("schema_version")
        if not isinstance(v, int) or v > SCHEMA_VERSION or v < 1:
            raise TimingFileError(f"{where}: schema version {v!r}; this gpuviz reads versions 1..{SCHEMA_VERSION}")
        try:
            return cls(
                label=str(d["label"]), processor=str(d["processor"]), device=str(d["device"]),
                driver=str(d.get("driver", "")), date=str(d.get("date", "")), host=str(d.get("host", "")),
                versions={str(k): str(x) for k, x in d.get("versions", {}).items()}, notes=str(d.get("notes", "")),
                series=[Series.from_json(s) for s in d.get("series", [])],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise TimingFileError(f"{where}: damaged timings file: {type(exc).__name__}: {exc}") from exc

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1, allow_nan=False)

    def save(self, path) -> None:
        Path(path).write_text(self.dumps(), encoding="utf-8")

    @classmethod
    def load(cls, path) -> "TimingSet":
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TimingFileError(f"{path}: cannot read: {exc}") from exc
        try:
            d = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TimingFileError(f"{path}: not JSON (damaged or not a timings file): {exc}") from exc
        return cls.from_json(d, where=str(path))

    def write_csv(self, folder) -> list[Path]:
        """One CSV per series in ``folder`` (created), named after the kind and position."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        paths = []
        for i, s in enumerate(self.series):
            p = folder / f"{i:02d}_{s.kind}.csv"
            p.write_text(s.to_csv(), encoding="utf-8")
            paths.append(p)
        return paths


def blocks_on_sms(trace) -> Series:
    """Per block of a GPU trace: the SM it ran on and its first and last timestamp (ns from the launch's first).

    Needs a trace whose backend recorded ``sm`` and ``time`` (backend "gpu"); raises ValueError otherwise.
    """
    if not (trace.has("sm") and trace.has("time")):
        raise ValueError(f"the trace of {trace.launch.kernel_name} (backend {trace.launch.backend!r}) has no SM ids and "
                         "timestamps: blocks on SMs needs a trace recorded on a GPU")
    ok = (trace.time >= 0) & (trace.sm >= 0)
    block, sm, t = trace.block[ok].astype(np.int64), trace.sm[ok].astype(np.int64), trace.time[ok]
    if len(t) == 0:
        raise ValueError("the trace holds no timestamped events")
    blocks = np.unique(block)
    pos = np.searchsorted(blocks, block)
    start = np.full(len(blocks), np.iinfo(np.int64).max, np.int64)
    end = np.full(len(blocks), np.iinfo(np.int64).min, np.int64)
    np.minimum.at(start, pos, t)
    np.maximum.at(end, pos, t)
    sm_of = np.full(len(blocks), -1, np.int64)
    sm_of[pos] = sm
    t0 = int(start.min())
    return Series(
        kind="blocks_on_sms",
        title=f"blocks on SMs: {trace.launch.kernel_name} on {trace.launch.device}",
        processor="gpu",
        columns={"block": blocks, "sm": sm_of, "start_ns": start - t0, "end_ns": end - t0},
        units={"start_ns": "ns", "end_ns": "ns"},
        notes="times are %globaltimer of each block's first and last timestamped event, from the launch's first; "
              "the schedule is the instrumented run's",
    )


def waves(series: Series) -> np.ndarray:
    """Wave number of each block of a blocks_on_sms series: how many blocks ran on its SM before it."""
    sm = series.column("sm").astype(np.int64)
    start = series.column("start_ns")
    order = np.lexsort((start, sm))
    wave = np.empty(len(sm), np.int64)
    sm_sorted = sm[order]
    first = np.r_[0, np.flatnonzero(sm_sorted[1:] != sm_sorted[:-1]) + 1]
    counts = np.diff(np.r_[first, len(sm)])
    wave[order] = np.arange(len(sm)) - np.repeat(first, counts)
    return wave
