"""The trace index: what the window needs per trace, computed once where the trace is made and saved with it.

Opening a trace must not sort its events again. Everything the window derives from the events that does not
change per frame is collected here as named numpy arrays plus a little JSON:

    frames.<name>           the arrays of :class:`~gpuviz.model.frames.Frames` (block order): the event
                            permutation and frame offsets, per-frame block/warp/step/phase/line/kind,
                            per-block frame ranges, barrier bookkeeping (``Frames.STORED``)
    trace.phase             barrier phase of every event (``Trace.phase``)
    narration.<name>        the captions' per-frame and per-thread facts (``Narrator.state``)
    <report>.<field>[.<k>]  the analysis reports the views and the narration read
                            (:data:`gpuviz.model.analysis.REPORT_NAMES`): their numpy parts; the rest is JSON

:func:`build_index` computes it (the capture worker does, when it saves the trace; a background job does for a
file that lacks it, reporting progress and checking for a cancel between stages); :func:`check_index` says whether
one fits a trace. :func:`gpuviz.model.prepared.prepare` takes it with the trace: the prepared trace's frames are then
adopted from its arrays, its phases read, not computed, and the analyses return its reports. ``tracefile`` stores it
inside the ``.gpuviz`` file (schema 2), and :mod:`gpuviz.model.indexcache` keeps it in the user's cache folder (the
key and folder are here: :func:`cache_key`, :func:`cache_path`) for files that lack it.

An index belongs to the exact events it was computed from: it records the CRC-32 of every stored event field,
and one whose CRCs differ from the file's (a file edited or re-saved by other tools) is ignored and rebuilt.

numpy only: no Qt, no numba.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path

import numpy as np

from . import analysis
from .frames import Frames
from .narration import Narrator
from .narration_facts import compact_phase_shared_rows
from .trace import Trace

#: bump when what the index holds or how it is computed changes: older indexes are then rebuilt
INDEX_VERSION = 3

_REPORT_CLASSES = {
    "global_memory": analysis.GlobalMemoryReport,
    "shared_banks": analysis.SharedBanksReport,
    "divergence": analysis.DivergenceReport,
    "races": analysis.RaceReport,
}

# share of the build's time each stage takes (measured on a 16.8M-event reduction), for a progress bar
_STAGES = (("frames", 0.35), ("global_memory", 0.08), ("shared_banks", 0.04), ("divergence", 0.08), ("races", 0.03),
           ("narration", 0.42))


class Cancelled(Exception):
    """Raised through :func:`build_index` when its ``cancelled()`` callback says so."""


@dataclasses.dataclass
class TraceIndex:
    arrays: dict[str, np.ndarray]
    info: dict  # JSON: version, the reports' JSON parts, and (once saved) the CRC-32 of each event field's
    # file member, which ties the index to the exact events it was computed from

    @property
    def nbytes(self) -> int:
        return sum(int(a.nbytes) for a in self.arrays.values())


# ---- building ---------------------------------------------------------------------------------------
def build_index(trace: Trace, progress=None, cancelled=None, frames: Frames | None = None) -> TraceIndex:
    """Compute the index of ``trace``. ``progress(fraction, stage)`` is told how far it is (0..1);
    ``cancelled()`` is asked between stages and inside the frame build: when it returns True,
    :class:`Cancelled` is raised. ``frames``: block-order frames already built (then they are not built again)."""
    progress = progress or (lambda _f, _s: None)
    done = 0.0

    def check(stage: str, fraction_of_stage: float, weight: float) -> None:
        if cancelled is not None and cancelled():
            raise Cancelled(stage)
        progress(min(1.0, done + weight * fraction_of_stage), stage)

    arrays: dict[str, np.ndarray] = {}
    info: dict = {"version": INDEX_VERSION, "order": "block", "reports": {}}
    weight = dict(_STAGES)
    check("frames", 0.0, weight["frames"])
    if frames is None or frames.order != "block":
        frames = Frames(trace, checkpoint=lambda x: check("frames", x, weight["frames"]))
    for k, v in frames.stored_arrays().items():
        arrays["frames." + k] = np.asarray(v)
    arrays["trace.phase"] = np.asarray(frames.event_phase)
    done += weight["frames"]
    for name in analysis.REPORT_NAMES:
        check(name, 0.0, weight[name])
        report = getattr(analysis, name)(trace)
        parts, js = _report_parts(report)
        arrays.update({f"{name}.{k}": v for k, v in parts.items()})
        info["reports"][name] = js
        done += weight[name]
    check("narration", 0.0, weight["narration"])
    if _narration_fits(trace):
        narrator = Narrator.of_frames(frames)

        def narration_check() -> None:
            check("narration", 0.5, weight["narration"])

        narrator._check_cancel = narration_check
        n_arrays, n_js = narrator.state()
        arrays.update({f"narration.{k}": np.asarray(v) for k, v in n_arrays.items()})
        info["narration"] = n_js
    done += weight["narration"]
    check("done", 0.0, 0.0)
    progress(1.0, "done")
    return TraceIndex(arrays, info)


def _narration_fits(trace: Trace) -> bool:
    """The narrator keeps two numbers per thread of the launch: worth it (and affordable) when the trace has
    events of about as many threads, not for a few recorded blocks of a billion-thread launch."""
    return trace.launch.n_threads <= max(4 * len(trace), 1 << 20)


def _plain(v):
    """A JSON-ready copy of ``v`` (numpy scalars to Python numbers)."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def _report_parts(report) -> tuple[dict[str, np.ndarray], dict]:
    arrays, js = {}, {}
    for f in dataclasses.fields(report):
        v = getattr(report, f.name)
        if isinstance(v, np.ndarray):
            arrays[f.name] = v
            js[f.name] = {"array": True}
        elif isinstance(v, dict) and v and all(isinstance(x, np.ndarray) for x in v.values()):
            for k, x in v.items():
                arrays[f"{f.name}.{k}"] = x
            js[f.name] = {"arrays": list(v)}
        else:
            js[f.name] = {"json": _plain(v)}
    return arrays, js


def report_from_parts(name: str, arrays: dict[str, np.ndarray], js: dict):
    cls = _REPORT_CLASSES[name]
    kwargs = {}
    for f in dataclasses.fields(cls):
        spec = js[f.name]
        if "array" in spec:
            kwargs[f.name] = arrays[f"{name}.{f.name}"]
        elif "arrays" in spec:
            kwargs[f.name] = {k: arrays[f"{name}.{f.name}.{k}"] for k in spec["arrays"]}
        else:
            kwargs[f.name] = spec["json"]
    return cls(**kwargs)


# ---- applying ---------------------------------------------------------------------------------------
def check_index(index: TraceIndex, trace: Trace, crcs: dict[str, int]) -> str | None:
    """Why ``index`` does not fit ``trace`` (None when it does). ``crcs``: the CRC-32 of the trace's event
    field members, as its file records them (``Prepared.crcs``)."""
    info = index.info
    if info.get("version") != INDEX_VERSION:
        return f"index version {info.get('version')!r}, this gpuviz writes {INDEX_VERSION}"
    want = info.get("events_crc")
    have = crcs
    if not isinstance(want, dict) or {k: int(v) for k, v in want.items()} != {k: int(v) for k, v in have.items()}:
        return "the index was computed from other events"
    n, n_frames = len(trace), None
    try:
        offsets = index.arrays["frames.offsets"]
        perm = index.arrays["frames.perm"]
        n_frames = len(offsets) - 1
        if len(perm) != n or len(index.arrays["frames.frame_of_event"]) != n or len(index.arrays["trace.phase"]) != n:
            return "its per-event arrays do not have one entry per event"
        if n and (int(offsets[0]) != 0 or int(offsets[-1]) != n or int(perm.min()) < 0 or int(perm.max()) >= n):
            return "its frame offsets or event permutation point outside the trace"
        if len(index.arrays["frames.block_first"]) != trace.launch.n_blocks:
            return "its per-block ranges do not match the launch's blocks"
        for name in analysis.REPORT_NAMES:
            report_from_parts(name, index.arrays, info["reports"][name])
        if "narration" in info:
            narration_state(index)
    except (KeyError, TypeError, ValueError) as exc:
        return f"it is incomplete ({type(exc).__name__}: {exc})"
    return None if n_frames is not None else "it holds no frames"


def narration_state(index: TraceIndex) -> tuple[dict, dict]:
    """The narrator's facts an index holds (``Narrator.state()``): its arrays and JSON part, checked."""
    names = list(Narrator.STATE_ARRAYS) + ["bar_keys", "bar_threads"]
    arrays = {k: index.arrays[f"narration.{k}"] for k in names}
    js = index.info["narration"]
    if not isinstance(js.get("n_ph"), int) or not isinstance(js.get("phase_shared"), list):
        raise ValueError("the narration's JSON part is malformed")
    try:  # the index (and the trace holding it) lives as long as the trace is on screen: few objects, not 250,000
        js["phase_shared"] = compact_phase_shared_rows(js["phase_shared"])
    except (TypeError, ValueError):
        pass  # a malformed row: the narrator reports it when it reads them (as before)
    return arrays, js


# ---- the user's cache folder, for files that lack an index -------------------------------------------
def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/gpuviz/index`` (``~/.cache/gpuviz/index`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpuviz" / "index"


def cache_key(crcs: dict[str, int], n_events: int, launch_json: dict) -> str:
    """A key from the trace's content (CRC-32 of every event field, its size and launch): the same events
    find the same index wherever the file lies, and an edited file never finds a stale one."""
    text = json.dumps({"v": INDEX_VERSION, "crc": crcs, "n": n_events, "launch": launch_json}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def cache_path(key: str) -> Path:
    return cache_dir() / f"{key}.gpuviz-index"
