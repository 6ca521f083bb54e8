"""``gpuviz info FILE``: what a trace file or a recording holds, every launch, as text or JSON (``--json``).
Needs neither Qt nor numba."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..model import analysis
from ..model.recording import Recording, holds_recording, load_file_contents
from ..model.tracefile import TraceFileError


def trace_info(trace) -> dict:
    info = trace.info()
    info.update(analysis.summary(trace))
    return info


def launch_info(la, trace) -> dict:
    """One launch of a recording for ``gpuviz info --json``: what the runner knew of it (number, status, why it
    was not traced or not saved) and, when its trace is in the file, everything :func:`trace_info` says."""
    entry = trace_info(trace) if trace is not None else {
        "kernel": la.kernel, "backend": la.backend, "grid": list(la.grid), "block": list(la.block),
        "n_events": la.events}
    entry.update({"number": la.number, "status": la.status, "in_file": trace is not None,
                  "saved": la.category != "unsaved", "reason": la.reason, "save_error": la.save_error,
                  "kernel_call": la.kernel_call})
    return entry


def _print_counts(info: dict, indent: str) -> None:
    """The event counts, barriers, analyses and warnings of one trace's info, one a line."""
    for kind, n in info["events"].items():
        if n:
            print(f"{indent}{kind:<13} {n:>12,}")
    print(f"{indent}barriers per thread: {info['barriers_per_thread']}   dropped: {info['dropped']}")
    for key in ("sectors_per_request", "bank_conflicts", "races"):
        if key in info:
            print(f"{indent}{key}: {info[key]}")
    for w in info["warnings"]:
        print(f"{indent}warning: {w}")


def _print_launch(la, info: dict | None, indent: str = "") -> None:
    dims = f"grid {info['grid'] if info else list(la.grid)} x block {info['block'] if info else list(la.block)}"
    state = {"saved": "", "untraced": "  NOT TRACED", "unsaved": "  NOT SAVED", "stopped": "  STOPPED THE PROGRAM"}
    print(f"{indent}launch {la.number}: {la.kernel}  {dims}{state[la.category]}")
    inner = indent + "  "
    if la.save_error:
        print(f"{inner}not in the file: {la.save_error}")
    if la.reason:
        print(f"{inner}{'failed' if la.status == 'failed' else 'not traced'}: {la.reason.strip().splitlines()[0]}")
    if info is None or not info.get("n_events"):
        return
    print(f"{inner}{info['backend']}: {info.get('device', '')}, {info['threads']:,} threads, {info['n_events']:,} events")
    _print_counts(info, inner)


def _print_trace(info: dict) -> None:
    """What `gpuviz info` printed for a one-trace file before recordings were listed (kept as it was)."""
    print(f"{info['kernel']}  ({info['backend']}: {info.get('device', '')})")
    print(f"  grid {info['grid']} x block {info['block']} = {info['threads']:,} threads, {info['n_events']:,} events")
    _print_counts(info, "  ")


def _one_launch(args, pairs) -> bool:
    """``--launch N``: that launch alone; False when the file holds no launch N."""
    chosen = [(la, tr) for la, tr in pairs if la.number == args.launch]
    if not chosen:
        return False
    la, tr = chosen[0]
    info = launch_info(la, tr)
    if args.json:
        print(json.dumps(info, indent=2, default=str))
    else:
        _print_launch(la, info if tr is not None else None)
    return True


def _print_json(rec, traces, infos, is_recording: bool) -> None:
    out = dict(infos[0]) if len(traces) == 1 else {}  # a one-trace file keeps its top-level keys
    for key in ("number", "status", "in_file", "saved", "reason", "save_error", "kernel_call"):
        out.pop(key, None)
    if is_recording:
        out["recording"] = {"script": rec.script, "argv": rec.argv, "status": rec.status, "backend": rec.backend,
                            "error": rec.error, "seconds": rec.seconds}
    out["summary"] = rec.summary_line()
    out["counts"] = rec.counts()
    out["launches"] = infos
    print(json.dumps(out, indent=2, default=str))


def main(args) -> int:
    try:
        traces, manifest = load_file_contents(args.file)
        rec = Recording.from_file(traces, manifest, str(args.file))
    except (TraceFileError, OSError) as exc:
        print(f"gpuviz info: {exc}", file=sys.stderr)
        return 1
    pairs = [(la, rec[la.trace] if la.trace is not None else None) for la in rec.launches]
    if args.launch is not None:
        if _one_launch(args, pairs):
            return 0
        print(f"gpuviz info: {args.file}: --launch {args.launch}: no such launch: {rec.describe_numbers()}",
              file=sys.stderr)
        return 2
    infos = [launch_info(la, tr) for la, tr in pairs]
    is_recording = holds_recording(traces, manifest)
    if args.json:
        _print_json(rec, traces, infos, is_recording)
        return 0
    if not is_recording:
        _print_trace(infos[0])
        return 0
    head = Path(rec.script).name if rec.script else Path(args.file).name
    status = f", {rec.status}" if rec.status else ""
    print(f"{head} ({rec.backend or 'recording'}{status}): {rec.summary_line()}")
    if rec.error:
        print(f"  {rec.error.splitlines()[0]}")
    for (la, tr), info in zip(pairs, infos):
        _print_launch(la, info if tr is not None else None, indent="  ")
    return 0
