"""A trace's timeline as Chrome / Perfetto trace JSON (the ``traceEvents`` format), Qt-free.

Open the file in https://ui.perfetto.dev or chrome://tracing. What goes in:

* **recorded time** (a GPU trace with ``%globaltimer`` stamps): one track per SM, a slice per block from its
  first to its last event, and, inside, a slice per warp instruction at the time it was recorded;
* **otherwise, issue steps**: one process per block, one thread (track) per warp, one slice per frame
  (warp instruction) at ``ts`` = its frame number, so the viewer's microseconds read as *frames*. The
  slice carries the narration caption, the lanes, the source line and the analysis numbers;
* barrier openings as instant events, and the launch's timings (``launch.timings``) and any recorded
  host-flow timings (:class:`gpuviz.model.timings.TimingSet`) on a "host" track, in real microseconds.

Spec: https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU (Trace Event Format).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..model.frames import Frames, format_block
from ..model.narration import Narrator
from ..model.prepared import Prepared, prepare
from ..model.trace import EventKind as K

_HOST_PID = 0


def _meta(pid: int, tid: int | None, what: str, name: str, sort: int | None = None) -> list[dict]:
    ev = {"ph": "M", "pid": pid, "name": what, "args": {"name": name}}
    if tid is not None:
        ev["tid"] = tid
    out = [ev]
    if sort is not None:
        key = "process_sort_index" if tid is None else "thread_sort_index"
        s = {"ph": "M", "pid": pid, "name": key, "args": {"sort_index": sort}}
        if tid is not None:
            s["tid"] = tid
        out.append(s)
    return out


def _block_pid(b: int) -> int:
    return 1 + b  # pid 0 is the host


def _timed_blocks(trace, frames: Frames) -> tuple[list[dict], np.ndarray, np.ndarray]:
    """A recorded timeline (``%globaltimer``): one process per SM, one slice per block from its first to its last
    timestamp; (those events, each frame's time from the launch's first event or -1, each block's SM)."""
    L = trace.launch
    n = frames.n_frames
    events: list[dict] = []
    t = trace.time
    t0 = int(t[t >= 0].min())
    sm = trace.sm
    # each frame at the earliest timestamp of its events; each block from first to last timestamp
    ft = np.full(n, -1, dtype=np.int64)
    ok = t >= 0
    fo = frames.frame_of_event[ok]
    big = np.iinfo(np.int64).max
    tmin = np.full(n, big, dtype=np.int64)
    np.minimum.at(tmin, fo, t[ok])
    ft[tmin < big] = tmin[tmin < big] - t0
    sm_of_block = np.full(L.n_blocks, -1, dtype=np.int64)
    sm_of_block[trace.block] = sm
    b_first = np.full(L.n_blocks, big, dtype=np.int64)
    b_last = np.full(L.n_blocks, -1, dtype=np.int64)
    np.minimum.at(b_first, trace.block[ok], t[ok])
    np.maximum.at(b_last, trace.block[ok], t[ok])
    for s in np.unique(sm_of_block):
        events += _meta(1000 + int(s), None, "process_name", f"SM {int(s)}" if s >= 0 else "SM unknown", int(s) + 1)
    for b in range(L.n_blocks):
        if b_last[b] < 0:
            continue
        pid = 1000 + int(sm_of_block[b])
        events += _meta(pid, b, "thread_name", f"block {format_block(L, b)}")
        events.append({"ph": "X", "cat": "block", "name": f"block {format_block(L, b)}", "pid": pid, "tid": b,
                       "ts": (b_first[b] - t0) / 1000.0, "dur": max((b_last[b] - b_first[b]) / 1000.0, 0.001),
                       "args": {"sm": int(sm_of_block[b])}})
    return events, ft, sm_of_block


def _frame_events(trace, frames: Frames, narrator, lo: int, hi: int, timed) -> list[dict]:
    """One slice per frame lo..hi-1 (its caption and facts as args), and an instant per barrier that opens;
    ``timed``: (frame times, blocks' SMs) of :func:`_timed_blocks`, or None (issue steps)."""
    names = [a.name for a in trace.launch.arrays]
    kinds = frames.kind.tolist()
    arrays = frames.array.tolist()
    blocks = frames.block.tolist()
    warps = frames.warp.tolist()
    lines = frames.line.tolist()
    lanes = np.diff(frames.offsets)
    events: list[dict] = []
    for f in range(lo, hi):
        k = K(kinds[f])
        a = arrays[f]
        name = k.label.replace("_", " ") + (f" {names[a]}" if 0 <= a < len(names) else "")
        args = {"frame": f, "lanes": int(lanes[f]), "line": lines[f]}
        if narrator is not None:
            args["caption"] = narrator.caption(f)
            facts = narrator.facts(f)
            for key in ("sectors", "ideal_sectors", "ways", "waiting_lanes"):
                if key in facts:
                    args[key] = facts[key]
        b, w = blocks[f], warps[f]
        if timed:
            ft, sm_of_block = timed
            if ft[f] < 0:
                continue
            pid, tid, ts, dur = 1000 + int(sm_of_block[b]), b, ft[f] / 1000.0, 0.001
            args["warp"] = w
        else:
            pid, tid, ts, dur = _block_pid(b), w, float(f), 1.0
        events.append({"ph": "X", "cat": "frame", "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
                       "args": args})
    for f in frames.barrier_complete_frames.tolist():
        if lo <= f < hi and not timed:
            events.append({"ph": "i", "cat": "barrier", "name": "barrier opens", "s": "p", "pid": _block_pid(blocks[f]),
                           "tid": warps[f], "ts": float(f), "args": {"frame": f}})
    return events


def _host_events(L, timing_sets) -> list[dict]:
    """The host side: the launch's own timings and recorded host-flow series, in real microseconds."""
    host: list[tuple[str, float, dict]] = [(k, float(v), {}) for k, v in L.timings.items()
                                           if isinstance(v, (int, float)) and np.isfinite(v) and v >= 0]
    for ts_set in timing_sets:
        for series in ts_set.by_kind("host_flow"):
            cols = series.columns
            for i, stage in enumerate(cols.get("stage", [])):
                sec = cols.get("seconds", [None] * (i + 1))[i]
                if sec is None:
                    continue
                label = f"{stage} ({cols['memory'][i]})" if "memory" in cols else str(stage)
                host.append((label, float(sec), {"recorded on": ts_set.device, "date": ts_set.date,
                                                 "series": series.title}))
    if not host:
        return []
    events = _meta(_HOST_PID, None, "process_name", "host", 0) + _meta(_HOST_PID, 0, "thread_name", "timings")
    clock_t = 0.0
    for label, seconds, extra in host:
        events.append({"ph": "X", "cat": "timing", "name": label, "pid": _HOST_PID, "tid": 0, "ts": clock_t,
                       "dur": seconds * 1e6, "args": {"seconds": seconds, **extra}})
        clock_t += seconds * 1e6
    return events


def trace_events(prepared: Prepared, narrator: Narrator | None = None, timing_sets=(),
                 frame_range: tuple[int, int] | None = None, captions: bool = True) -> dict:
    """The Chrome trace JSON object (``{"traceEvents": [...], ...}``) of one prepared trace."""
    trace, frames = prepared.trace, prepared.frames
    narrator = narrator or (Narrator(prepared) if captions else None)
    L = trace.launch
    n = frames.n_frames
    lo, hi = frame_range or (0, n)
    lo, hi = max(0, int(lo)), min(n, int(hi))
    timed = trace.has("time") and bool((trace.time >= 0).any())
    if timed:
        events, ft, sm_of_block = _timed_blocks(trace, frames)
        clock = "recorded %globaltimer (ns), shown in µs from the launch's first event"
    else:
        events = []
        for b in sorted(set(frames.block[lo:hi].tolist())):
            events += _meta(_block_pid(b), None, "process_name", f"block {format_block(L, b)}", b + 1)
            for w in range(L.warps_per_block):
                events += _meta(_block_pid(b), w, "thread_name", f"warp {w}", w)
        clock = "issue steps: ts is the frame number (1 µs in the viewer = 1 frame = one warp instruction)"
    events += _frame_events(trace, frames, narrator, lo, hi, (ft, sm_of_block) if timed else None)
    events += _host_events(L, timing_sets)
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns" if timed else "ms",
        "otherData": {
            "kernel": L.kernel_name, "grid": list(L.grid), "block": list(L.block), "backend": L.backend,
            "device": L.device, "frames": f"{lo}:{hi}", "clock": clock, "generator": "gpuviz",
        },
    }


def write_perfetto(path, trace, **options) -> Path:
    """Write :func:`trace_events` of ``trace`` (a :class:`Trace`, prepared here, or its :class:`Prepared`) to
    ``path`` (JSON)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = trace_events(trace if isinstance(trace, Prepared) else prepare(trace), **options)
    path.write_text(json.dumps(data, separators=(",", ":"), allow_nan=False), encoding="utf-8")
    return path
