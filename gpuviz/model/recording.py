"""A recording: every kernel launch one run of a program made, traced or not, with the run's metadata.

    rec = gpuviz.load("saxpy.gpuviz")          # a Recording for a recording file, a Trace for a one-trace file
    len(rec), rec[0], rec[-3:], [t.launch.kernel_name for t in rec]
    rec.script, rec.argv, rec.status, rec.backend
    rec.launches                                # RecordedLaunch per launch the program made, in order
    rec.launch(7)                               # (RecordedLaunch, Trace or None) by launch number
    rec.summary_line()                          # "20 launch(es): 18 traced and saved, 1 untraced, 1 failed to save"
    rec.save("copy.gpuviz")

A :class:`Recording` is a sequence of the :class:`Trace` objects the file holds (one per launch that was
saved: a launch that ran untraced is an empty trace, so the launch list can show it). Its ``launches`` are
every launch the program made, including those whose trace is not in the file (it could not be saved or
read back, or the program died inside the launch), each with the reason. The file keeps them in the
manifest's ``recording`` entry (:func:`gpuviz.model.tracefile.save_traces`); a file written before that
entry existed gets its launches from each trace's ``launch.meta["recording"]``.

Numpy only, like the rest of :mod:`gpuviz.model`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .trace import Trace
from .tracefile import load_file, save_traces
from .validate import TraceFileError

#: version of the manifest's ``recording`` entry (what :meth:`Recording.to_json` writes)
RECORDING_VERSION = 1

#: a launch's status: traced; ran untraced (not chosen, too large, unsupported); failed (stopped the program)
LAUNCH_STATUSES = ("traced", "untraced", "failed", "running")

#: what the summary counts, in order: every launch falls in exactly one
CATEGORIES = ("saved", "untraced", "unsaved", "stopped")

_MAX_TEXT = 1 << 20  # characters of a reason or a path: what gpuviz writes is far shorter


@dataclass
class RecordedLaunch:
    """One launch of the program: what ran, whether it was traced (and why not), and where its trace is."""

    number: int  # 1-based, over every launch of the program
    kernel: str
    grid: tuple = (1,)
    block: tuple = (1,)
    status: str = "traced"  # see LAUNCH_STATUSES
    reason: str = ""  # why not traced, or the failure that stopped the program
    events: int = 0
    backend: str = ""  # who ran it: cpu, sim, gpu, or plain (the original launcher)
    kernel_call: int = 1  # 1-based, over the launches of this kernel
    file: str = ""
    line: int = -1
    seconds: float = 0.0
    trace: int | None = None  # position of its trace in the recording; None: its trace is not in the file
    save_error: str = ""  # why its trace is not in the file (could not be saved, or read back)

    @property
    def category(self) -> str:
        """saved (traced, its trace in the file), untraced, unsaved (its trace is not in the file), stopped."""
        if self.save_error:
            return "unsaved"
        if self.status == "failed":
            return "stopped"
        if self.status == "traced":
            return "saved" if self.trace is not None else "unsaved"
        return "untraced"

    @property
    def label(self) -> str:
        return f"launch {self.number} ({self.kernel})"

    def why_not_shown(self) -> str:
        """'' when the launch has a trace with events to show, else why not, in words."""
        if self.category == "unsaved":
            return f"{self.label} is not in the file: {self.save_error or 'its trace was not saved'}"
        if self.status == "untraced":
            return f"{self.label} was not traced: {_first_line(self.reason) or 'not chosen'}"
        if self.trace is None:
            return f"{self.label} left no trace: {_first_line(self.reason) or 'the launch did not finish'}"
        return ""

    def to_json(self) -> dict:
        return {"number": self.number, "kernel": self.kernel, "grid": list(self.grid), "block": list(self.block),
                "status": self.status, "reason": self.reason, "events": self.events, "backend": self.backend,
                "kernel_call": self.kernel_call, "file": self.file, "line": self.line, "seconds": self.seconds,
                "trace": self.trace, "save_error": self.save_error}

    @classmethod
    def from_json(cls, d, at: str) -> "RecordedLaunch":
        """A launch entry of a file, checked: ``at`` names the file and the entry in messages."""
        _need(isinstance(d, dict), at, f"must be a JSON object, not {type(d).__name__}")
        _need(_is_int(d.get("number")) and 1 <= d["number"] <= (1 << 62), at, "'number' must be a whole number >= 1")
        _need(isinstance(d.get("kernel"), str) and len(d["kernel"]) <= 10_000, at, "'kernel' must be text")
        out = {"number": d["number"], "kernel": d["kernel"]}
        for key in ("grid", "block"):
            if key in d:
                v = d[key]
                _need(isinstance(v, list) and 1 <= len(v) <= 3 and all(_is_int(x) and x >= 1 for x in v), at,
                      f"{key!r} must be 1 to 3 positive whole numbers")
                out[key] = tuple(v)
        if "status" in d:
            _need(d["status"] in LAUNCH_STATUSES, at, f"'status' must be one of {', '.join(LAUNCH_STATUSES)}")
            out["status"] = d["status"]
        for key in ("reason", "backend", "file", "save_error"):
            if d.get(key) is not None:
                _need(isinstance(d[key], str) and len(d[key]) <= _MAX_TEXT, at, f"{key!r} must be text")
                out[key] = d[key]
        for key in ("events", "kernel_call", "line"):
            if d.get(key) is not None:
                _need(_is_int(d[key]) and -1 <= d[key] <= (1 << 62), at, f"{key!r} must be a whole number")
                out[key] = d[key]
        if d.get("seconds") is not None:
            _need(isinstance(d["seconds"], (int, float)) and not isinstance(d["seconds"], bool), at,
                  "'seconds' must be a number")
            out["seconds"] = float(d["seconds"])
        if d.get("trace") is not None:
            _need(_is_int(d["trace"]) and d["trace"] >= 0, at, "'trace' must be a trace's position (a whole number)")
            out["trace"] = d["trace"]
        return cls(**out)

    @classmethod
    def of_trace(cls, trace: Trace, position: int) -> "RecordedLaunch":
        """The launch a trace stands for: from the record a runner stored with it, or the trace itself."""
        rec = trace.launch.meta.get("recording")
        rec = rec if isinstance(rec, dict) else {}
        number = rec.get("number")
        return cls(number=number if _is_int(number) and number >= 1 else position + 1,
                   kernel=trace.launch.kernel_name, grid=tuple(trace.launch.grid), block=tuple(trace.launch.block),
                   status=rec.get("status") if rec.get("status") in LAUNCH_STATUSES else "traced",
                   reason=str(rec.get("reason") or ""), events=len(trace),
                   backend=str(rec.get("backend") or trace.launch.backend),
                   kernel_call=rec["kernel_call"] if _is_int(rec.get("kernel_call")) else 1,
                   file=str(rec.get("file") or trace.launch.source_file or ""),
                   line=rec["line"] if _is_int(rec.get("line")) else -1, trace=position)


class Recording(Sequence):
    """The traces of one run of a program (a sequence: ``len``, iteration, ``rec[i]``, ``rec[a:b]``) and
    every launch it made (``launches``), with the run's script, argv, status and backend."""

    def __init__(self, traces, launches=None, *, script: str = "", argv=(), status: str = "", backend: str = "",
                 error: str = "", seconds: float = 0.0):
        self.traces: list[Trace] = list(traces)
        for i, tr in enumerate(self.traces):
            if not isinstance(tr, Trace):
                raise TypeError(f"Recording: item {i} is a {type(tr).__name__}, not a Trace")
        if launches is None:
            launches = [RecordedLaunch.of_trace(tr, i) for i, tr in enumerate(self.traces)]
        self.launches: list[RecordedLaunch] = list(launches)
        self.script, self.argv = str(script), [str(a) for a in argv]
        self.status, self.backend, self.error, self.seconds = str(status), str(backend), str(error), float(seconds)
        self._check_positions()

    def _check_positions(self, at: str = "Recording") -> None:
        """Each trace stands for one launch, each launch points at most at one trace that exists."""
        seen: set[int] = set()
        numbers: set[int] = set()
        for la in self.launches:
            _need(la.number not in numbers, at, f"launch {la.number} is listed twice")
            numbers.add(la.number)
            if la.trace is None:
                continue
            _need(0 <= la.trace < len(self.traces), at,
                  f"{la.label} points at trace {la.trace}; the file holds {len(self.traces)} trace(s)")
            _need(la.trace not in seen, at, f"{la.label} points at trace {la.trace}, which another launch holds")
            seen.add(la.trace)

    # ---- a sequence of traces ---------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.traces)

    def __getitem__(self, i):
        return self.traces[i]  # a slice gives a list of traces

    def __iter__(self):
        return iter(self.traces)

    # ---- launches ------------------------------------------------------------------------------------------
    def launch(self, number: int) -> tuple[RecordedLaunch, Trace | None]:
        """Launch ``number`` (as ``gpuviz run`` numbers them, from 1) and its trace (None when not in the file).
        An unknown number is a ValueError that says which launches the recording holds."""
        for la in self.launches:
            if la.number == number:
                return la, (self.traces[la.trace] if la.trace is not None else None)
        raise ValueError(f"no launch {number}: {self.describe_numbers()}")

    def describe_numbers(self) -> str:
        """'the file holds 20 launches, numbered 1..20' (or the numbers, when they are not 1..N)."""
        nums = [la.number for la in self.launches]
        n = len(nums)
        if not nums:
            return "the recording holds no launch"
        if nums == list(range(1, n + 1)):
            return f"the recording holds {n} launch{'es' if n != 1 else ''}, numbered 1..{n}"
        shown = ", ".join(str(k) for k in nums[:20]) + (", ..." if n > 20 else "")
        return f"the recording holds {n} launch{'es' if n != 1 else ''}: {shown}"

    def trace_of(self, number: int) -> Trace:
        """The trace of launch ``number`` with events to show; a ValueError says why there is none."""
        la, tr = self.launch(number)
        why = la.why_not_shown()
        if why or tr is None:
            raise ValueError(why or f"{la.label} left no trace")
        if not len(tr):
            raise ValueError(f"{la.label} recorded no events: nothing to show")
        return tr

    def counts(self) -> dict[str, int]:
        """How many launches are saved (traced, in the file), untraced, unsaved, stopped (the program)."""
        out = dict.fromkeys(CATEGORIES, 0)
        for la in self.launches:
            out[la.category] += 1
        return out

    def summary_line(self) -> str:
        """'20 launch(es): 18 traced and saved, 1 untraced, 1 failed to save' (and the one that stopped
        the program, when one did)."""
        c = self.counts()
        text = (f"{len(self.launches)} launch(es): {c['saved']} traced and saved, {c['untraced']} untraced, "
                f"{c['unsaved']} failed to save")
        if c["stopped"]:
            text += f", {c['stopped']} stopped the program"
        return text

    def without_trace(self, number: int, reason: str) -> "Recording":
        """This recording with launch ``number``'s trace left out, the launch kept and marked unsaved (``reason``)."""
        la, _ = self.launch(number)
        gone = la.trace
        launches = []
        for x in self.launches:
            y = dataclasses.replace(x)
            if x.number == number:
                y.trace, y.save_error = None, reason
            elif gone is not None and y.trace is not None and y.trace > gone:
                y.trace -= 1
            launches.append(y)
        traces = [t for i, t in enumerate(self.traces) if i != gone]
        return Recording(traces, launches, script=self.script, argv=self.argv, status=self.status,
                         backend=self.backend, error=self.error, seconds=self.seconds)

    def unsaved(self) -> list[RecordedLaunch]:
        return [la for la in self.launches if la.category == "unsaved"]

    # ---- files ------------------------------------------------------------------------------------------
    def to_json(self) -> dict:
        """The manifest's ``recording`` entry."""
        return {"version": RECORDING_VERSION, "script": self.script, "argv": list(self.argv), "status": self.status,
                "backend": self.backend, "error": self.error, "seconds": self.seconds,
                "launches": [la.to_json() for la in self.launches]}

    def save(self, path) -> Path:
        """Write every trace and the run's metadata to ``path`` (atomically); the file is read back before it
        is put in place (:func:`~gpuviz.model.tracefile.save_traces`). A trace that would not load back is a
        :class:`TraceFileError` that names its launch (number, kernel) and the reason."""
        if not self.traces:
            raise ValueError(f"{self.script or 'the recording'}: no launch left a trace, so there is nothing to save"
                             + (f" ({self.summary_line()})" if self.launches else ""))
        try:
            save_traces(path, self.traces, recording=self.to_json())
        except TraceFileError as exc:
            la = self.launch_in_error(exc)
            if la is None:
                raise
            raise TraceFileError(f"{la.label}: {exc}") from exc
        return Path(path)

    def launch_in_error(self, exc: Exception) -> RecordedLaunch | None:
        """The launch whose trace a file error is about ('trace 3 (k1): ...' names the trace's position)."""
        m = _TRACE_IN_MESSAGE.search(str(exc))
        if m is None:
            return None
        position = int(m.group(1))
        return next((la for la in self.launches if la.trace == position), None)

    @classmethod
    def from_file(cls, traces: list[Trace], manifest: dict, where: str) -> "Recording":
        """The recording a file holds: its traces and its manifest (checked by the loader)."""
        entry = manifest.get("recording")
        if entry is None:
            return cls(traces)
        at = f"{where}: recording"
        _need(isinstance(entry, dict), at, f"must be a JSON object, not {type(entry).__name__}")
        launches_json = entry.get("launches")
        _need(isinstance(launches_json, list), at, "'launches' must be a list")
        launches = [RecordedLaunch.from_json(d, f"{at}: launches[{i}]") for i, d in enumerate(launches_json)]
        meta = {}
        for key in ("script", "status", "backend", "error"):
            v = entry.get(key)
            if v is not None:
                _need(isinstance(v, str) and len(v) <= _MAX_TEXT, at, f"{key!r} must be text")
                meta[key] = v
        argv = entry.get("argv") or []
        _need(isinstance(argv, list) and all(isinstance(a, str) for a in argv), at, "'argv' must be a list of text")
        seconds = entry.get("seconds") or 0.0
        _need(isinstance(seconds, (int, float)) and not isinstance(seconds, bool), at, "'seconds' must be a number")
        rec = cls.__new__(cls)
        rec.traces, rec.launches = list(traces), launches
        rec.script, rec.argv = meta.get("script", ""), list(argv)
        rec.status, rec.backend, rec.error = meta.get("status", ""), meta.get("backend", ""), meta.get("error", "")
        rec.seconds = float(seconds)
        rec._check_positions(at)
        held = {la.trace for la in launches if la.trace is not None}
        orphans = [i for i in range(len(traces)) if i not in held]
        _need(not orphans, at, f"trace {orphans[0] if orphans else ''} belongs to no launch of the list")
        return rec

    def __repr__(self) -> str:
        where = f" of {Path(self.script).name}" if self.script else ""
        return f"<gpuviz Recording{where}: {self.summary_line()}>"


def load_file_contents(path) -> tuple[list[Trace], dict]:
    """(traces, manifest) of a trace file, both checked."""
    return load_file(path)


def load_recording(path) -> Recording:
    """Every launch of the file at ``path`` as a :class:`Recording` (a one-trace file is a recording of one
    launch). Damaged files, and a ``recording`` entry that does not fit the traces, are a TraceFileError."""
    traces, manifest = load_file_contents(path)
    return Recording.from_file(traces, manifest, str(path))


def holds_recording(traces: list[Trace], manifest: dict) -> bool:
    """Does a file hold a recording (several traces, or a ``recording`` entry) rather than one trace?"""
    return manifest.get("recording") is not None or len(traces) > 1


def load(path) -> "Recording | Trace":
    """A :class:`Recording` for a file that holds one, the :class:`Trace` of a one-trace file (``save_traces(path, [trace])``)."""
    traces, manifest = load_file_contents(path)
    if holds_recording(traces, manifest):
        return Recording.from_file(traces, manifest, str(path))
    return traces[0]


_TRACE_IN_MESSAGE = re.compile(r"\btrace (\d+) \(")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _need(ok: bool, at: str, what: str) -> None:
    if not ok:
        raise TraceFileError(f"{at}: {what}")


def _first_line(text: str) -> str:
    text = (text or "").strip()
    return text.splitlines()[0] if text else ""
