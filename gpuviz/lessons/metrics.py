"""Numbers a lesson can show or ask about, all computed from a trace and its analyses (never typed in).

*Facts* belong to one frame (:meth:`gpuviz.model.narration.Narrator.facts`): ``sectors`` a warp request
touched, the n-way conflict ``ways`` of a shared access, ``lanes`` that executed, ``waiting_lanes`` on
another branch, ``threads_at_barrier``...

*Metrics* belong to a whole scene (one launch): bytes moved to and from global memory, bank conflicts,
barriers, SIMT efficiency, the host<->device flow, and recorded GPU timings where gpuviz ships some.

numpy only here; recorded timings are read through :mod:`gpuviz.timing.recordings`.
"""

from __future__ import annotations

import numpy as np

from ..model import analysis
from ..model.narration import human_bytes
from ..model.timings import TimingFileError, TimingSet
from ..model.trace import EventKind as K
from ..timing.recordings import FUSION_TIMINGS_FILE, list_recordings, recordings_dir

FACT_NAMES = (
    "sectors", "ideal_sectors", "efficiency", "bytes", "cache_lines", "ways", "lanes", "width", "distinct",
    "active_lanes", "idle_lanes", "waiting_lanes", "waiting_warps", "warps_per_block", "threads_at_barrier",
    "block", "warp", "line",
)

METRIC_NAMES = (
    "kernel", "grid", "block", "n_blocks", "n_threads", "threads_per_block", "warps_per_block", "n_warps",
    "events", "frames", "barriers", "global_bytes", "global_load_bytes", "global_store_bytes",
    "global_useful_bytes", "global_requests", "sectors_per_request", "global_efficiency", "bank_conflicts",
    "max_ways", "shared_requests", "simt_efficiency", "diverged_instructions", "races", "h2d_bytes",
    "d2h_bytes", "inputs", "outputs", "timings", "global_bytes_per_element", "add_timings", "fusion_timings",
)


def scene_metrics(prepared) -> dict:
    """Raw values of every metric of one launch (numbers, or text for names and timings), from its prepared
    trace (:func:`gpuviz.model.prepared.prepare`)."""
    trace, frames = prepared.trace, prepared.frames
    L = trace.launch
    gm = analysis.global_memory(trace)
    sb = analysis.shared_banks(trace)
    dv = analysis.divergence(trace)
    req = gm.requests
    moved = req["sectors"].astype(np.int64) * analysis.SECTOR_BYTES
    is_load = req["kind"] == K.GLOBAL_LOAD
    is_store = req["kind"] == K.GLOBAL_STORE
    n_req = int(len(req["sectors"]))
    kinds = trace.kind
    read_arrays = sorted({int(a) for a in np.unique(trace.array[(kinds == K.GLOBAL_LOAD) | (kinds == K.ATOMIC)]) if a >= 0
                          and L.arrays[a].space == "global"})
    written = sorted({int(a) for a in np.unique(trace.array[(kinds == K.GLOBAL_STORE) | (kinds == K.ATOMIC)]) if a >= 0
                      and L.arrays[a].space == "global"})
    eff = [gm.totals[k]["efficiency"] for k in ("load", "store") if gm.totals[k]["efficiency"] is not None]
    return {
        "kernel": L.kernel_name,
        "grid": "x".join(str(g) for g in L.grid if g > 1) or "1",
        "block": "x".join(str(b) for b in L.block if b > 1) or "1",
        "n_blocks": L.n_blocks,
        "n_threads": L.n_threads,
        "threads_per_block": L.threads_per_block,
        "warps_per_block": L.warps_per_block,
        "n_warps": L.n_blocks * L.warps_per_block,
        "events": len(trace),
        "frames": frames.n_frames,
        "barriers": int(len(frames.barrier_complete_frames)),
        "global_bytes": int(moved.sum()),
        "global_load_bytes": int(moved[is_load].sum()),
        "global_store_bytes": int(moved[is_store].sum()),
        "global_useful_bytes": int(req["bytes"].sum()) if n_req else 0,
        "global_requests": n_req,
        "sectors_per_request": float(req["sectors"].mean()) if n_req else 0.0,
        "global_efficiency": float(min(eff)) if eff else 1.0,
        "bank_conflicts": int(sb.bank_conflicts["total"]),
        "max_ways": int(sb.requests["ways"].max()) if len(sb.requests["ways"]) else 0,
        "shared_requests": int(len(sb.requests["ways"])),
        "simt_efficiency": float(dv.totals["simt_efficiency"] or 0.0),
        "diverged_instructions": int(dv.totals["partial_instructions"]),
        "races": int(analysis.races(trace).count),
        "h2d_bytes": int(sum(L.arrays[a].nbytes for a in read_arrays)),
        "d2h_bytes": int(sum(L.arrays[a].nbytes for a in written)),
        "inputs": ", ".join(L.arrays[a].name for a in read_arrays) or "none",
        "outputs": ", ".join(L.arrays[a].name for a in written) or "none",
        "timings": recorded_timings_text(),
        "global_bytes_per_element": global_bytes_per_element(trace, int(moved.sum())),
        "add_timings": recorded_add_timings_text(),
        "fusion_timings": recorded_fusion_timings_text(),
    }


def global_bytes_per_element(trace, global_bytes: int) -> float:
    """Bytes the launch moved through global memory per global element it wrote (0 when it wrote none):
    what an element-wise kernel costs per output, the figure to add up along a chain of launches."""
    kinds = trace.kind
    stored = ((kinds == K.GLOBAL_STORE) | (kinds == K.ATOMIC)) & (trace.array >= 0)
    if stored.any():
        arrays = trace.array[stored]
        stored &= np.isin(trace.array, [a for a in np.unique(arrays) if trace.launch.arrays[int(a)].space == "global"])
    if not stored.any():
        return 0.0
    # one key per (array, element): an element written by several threads or twice counts once
    elements = trace.array[stored].astype(np.int64) * (int(trace.index[stored].max()) + 1) + trace.index[stored]
    return float(global_bytes) / float(len(np.unique(elements)))


def format_value(name: str, value) -> str:
    """A metric or fact as a teacher would say it."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "yes" if value else "no"
    if name.endswith("bytes") or name == "bytes":
        return human_bytes(value)
    if name == "global_bytes_per_element":
        return f"{float(value):.1f}".rstrip("0").rstrip(".") + " bytes"
    if name in ("efficiency", "global_efficiency", "simt_efficiency"):
        return f"{100.0 * float(value):.0f}%"
    if name == "ways":
        return f"{int(value)}-way" if int(value) > 1 else "1 (no conflict)"
    if isinstance(value, float):
        return f"{value:.2f}".rstrip("0").rstrip(".")
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    return str(value)


def formatted(metrics: dict) -> dict:
    return {k: format_value(k, v) for k, v in metrics.items()}


def _recorded_series(kind: str):
    """(timing set, series) of the given kind from every shipped timing recording that loads.

    A missing or damaged recording must not stop a lesson: it is skipped, and the caller says what is missing."""
    try:
        recs = list_recordings(kind="timings")
    except ValueError:
        return
    for rec in recs:
        try:
            ts = rec.load()
        except Exception:  # noqa: BLE001 - see above
            continue
        for series in ts.by_kind(kind):
            yield ts, series


def recorded_timings_text() -> str:
    """The host-flow timings shipped with gpuviz (recorded on a real GPU), in one line, or a plain word
    that live timings need a GPU."""
    no_gpu = ("live timings need an NVIDIA GPU; none was recorded with this copy of gpuviz, so the flow is "
              "told from the trace: the copies move every input and output array, the kernel only its requests")
    for ts, series in _recorded_series("host_flow"):
        try:
            rows = series.where(memory="pinned") if "memory" in series.columns else series
            stages = list(rows.columns["stage"])
            secs = rows.column("seconds")
        except KeyError:
            continue
        parts = [f"{st} {_ms(s)}" for st, s in zip(stages, secs)]
        return f"recorded on {ts.device}, {ts.date or 'date unknown'} ({series.title}): " + ", ".join(parts)
    return no_gpu


def recorded_add_timings_text() -> str:
    """``c = a + b`` on the GPU by cupy, torch and gpuviz's Numba ``vector_add`` from the shipped timing set
    (recorded on a real GPU, data already on the device), at its smallest and largest size, in one line
    labelled with the device, driver and date; or a plain word that none was recorded."""
    none = "no GPU timings of a + b were recorded with this copy of gpuviz"
    for ts, series in _recorded_series("cpu_vs_gpu"):
        # a + b reads two arrays and writes one: 3 x 4 bytes per float32 element, whoever runs it
        line = _gpu_sizes_line(ts, series, "c = a + b", bytes_per_element=12)
        if line:
            return line
    return none


def recorded_fusion_timings_text() -> str:
    """``out = a * x + b * y`` on the GPU: cupy and torch (one kernel per operator), our Numba chain of three
    launches and our fused kernel, from ``assets/recordings/fusion_timings_h200.json`` (recorded on a real
    GPU), at its smallest and largest size, labelled with the device, driver and date."""
    none = "no GPU timings of a * x + b * y were recorded with this copy of gpuviz"
    path = recordings_dir() / FUSION_TIMINGS_FILE
    if not path.exists():
        return none
    try:
        ts = TimingSet.load(path)
    except TimingFileError:  # a damaged recording must not stop a lesson: say what is missing instead
        return none
    for series in ts.by_kind("cpu_vs_gpu"):
        line = _gpu_sizes_line(ts, series, "out = a * x + b * y")
        if line:
            return line
    return none


def _gpu_sizes_line(ts, series, what: str, bytes_per_element: int | None = None) -> str:
    """The GPU rows of a sizes series at its smallest and largest size, fastest first, labelled with where
    and when they were recorded ("" when the series has no GPU rows). ``bytes_per_element``: bytes every
    implementation must move per element, to quote the bandwidth reached at the largest size."""
    try:
        sizes = series.column("size")
        impls = list(series.columns["implementation"])
        secs = series.column("seconds")
    except KeyError:
        return ""
    on_gpu = [p == "gpu" for p in series.processor_of_rows()]
    gpu_sizes = sorted({int(x) for x, g in zip(sizes, on_gpu) if g and np.isfinite(x)})
    if not gpu_sizes:
        return ""
    parts = []
    for n in sorted({gpu_sizes[0], gpu_sizes[-1]}):
        rows = sorted(((t, impl) for x, impl, t, g in zip(sizes, impls, secs, on_gpu) if g and int(x) == n),
                      key=lambda r: r[0])
        if bytes_per_element and n == gpu_sizes[-1]:
            times = ", ".join(f"{impl} {_ms(t)} = {_bandwidth(float(bytes_per_element) * n, t)}" for t, impl in rows)
        else:
            times = ", ".join(f"{impl} {_ms(t)}" for t, impl in rows)
        parts.append(f"n = {n:,}: {times}")
    return (f"recorded on {ts.device} (driver {ts.driver or 'unknown'}), {ts.date or 'date unknown'}, {what} on "
            "data already on the GPU, fastest first; " + "; ".join(parts))


def _bandwidth(n_bytes: float, seconds: float) -> str:
    if not np.isfinite(seconds) or seconds <= 0:
        return "n/a"
    per_s = n_bytes / seconds
    if per_s >= 1e12:
        return f"{per_s / 1e12:.1f} TB/s"
    return f"{per_s / 1e9:.0f} GB/s"


def seconds_text(seconds: float) -> str:
    """A time as the lessons' notes write it ('2.86 ms', '62.3 µs'): the timings chart labels its bars so."""
    return _ms(seconds)


def _ms(seconds: float) -> str:
    if not np.isfinite(seconds):
        return "n/a"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"
