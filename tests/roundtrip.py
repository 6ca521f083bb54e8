"""What "saves and loads back equal" means, for the round-trip tests: every event field, the launch, the index
(frames, phases, reports, narration state), the reports the analyses give, the captions and frame descriptions
the window shows, and the warnings. One function, :func:`assert_round_trip`, used by every round-trip test."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import numpy as np

from gpuviz.model import analysis, fileformat
from gpuviz.model import index as index_mod
from gpuviz.model.frames import Frames
from gpuviz.model.narration import Narrator
from gpuviz.model.prepared import has_index, prepare
from gpuviz.model.trace import EVENT_FIELDS, Trace
from gpuviz.model.tracefile import load_traces, save_traces

#: digests of every trace checked in this process, for the count the closing note gives
CHECKED: set[str] = set()


def digest(trace: Trace) -> str:
    h = hashlib.sha256(json.dumps(trace.launch.to_json(), sort_keys=True, default=str).encode())
    for name in EVENT_FIELDS:
        if trace.has(name):
            h.update(name.encode())
            h.update(np.ascontiguousarray(trace.field(name)).tobytes())
    return h.hexdigest()


def _equal_arrays(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.names is None and a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def _report_equal(r1, r2) -> list[str]:
    bad = []
    for f in dataclasses.fields(r1):
        x, y = getattr(r1, f.name), getattr(r2, f.name)
        if isinstance(x, np.ndarray):
            if not _equal_arrays(x, y):
                bad.append(f.name)
        elif isinstance(x, dict) and x and all(isinstance(v, np.ndarray) for v in x.values()):
            if set(x) != set(y) or not all(_equal_arrays(x[k], y[k]) for k in x):
                bad.append(f.name)
        elif json.dumps(index_mod._plain(x), sort_keys=True, default=str) != \
                json.dumps(index_mod._plain(y), sort_keys=True, default=str):
            bad.append(f.name)
    return bad


def _sample_frames(n: int, k: int = 48) -> list[int]:
    if n <= k:
        return list(range(n))
    return sorted(set(np.linspace(0, n - 1, k).astype(int).tolist()))


def assert_round_trip(traces, folder: Path, name: str = "rt.gpuviz", recording: dict | None = None) -> list[Trace]:
    """Save ``traces`` (one Trace or a list) to ``folder/name``, load them back, and check that everything the
    program shows of them is equal. Returns the traces read back."""
    traces = [traces] if isinstance(traces, Trace) else list(traces)
    path = Path(folder) / name
    save_traces(path, traces, recording=recording)
    back = load_traces(path)
    assert len(back) == len(traces), f"{len(traces)} traces saved, {len(back)} loaded"
    for i, (a, b) in enumerate(zip(traces, back)):
        what = f"trace {i} ({a.launch.kernel_name})"
        assert a.launch.to_json() == b.launch.to_json(), f"{what}: the launch differs"
        assert len(a) == len(b), f"{what}: {len(a)} events saved, {len(b)} loaded"
        for field in EVENT_FIELDS:
            assert a.has(field) == b.has(field), f"{what}: field {field} stored {a.has(field)}, loaded {b.has(field)}"
            if a.has(field):
                assert _equal_arrays(a.field(field), b.field(field)), f"{what}: field {field} differs"
        assert has_index(b), f"{what}: its index did not come back with it"
        # the index as written is the one read: every array equal, and each within the format's declaration
        ia, ib = prepare(a).index or index_mod.build_index(a), prepare(b).index
        assert set(ia.arrays) == set(ib.arrays), f"{what}: index arrays differ"
        for key in ia.arrays:
            assert _equal_arrays(ia.arrays[key], ib.arrays[key]), f"{what}: index array {key} differs"
        assert not fileformat.undeclared(ib.arrays), \
            f"{what}: the index holds arrays the format does not declare: {fileformat.undeclared(ib.arrays)}"
        # what the analyses report, computed afresh from the loaded events, equals what the file carried
        fresh = Trace(b.launch, {f: np.array(b.field(f)) for f in EVENT_FIELDS if b.has(f)})
        for rname in analysis.REPORT_NAMES:
            bad = _report_equal(getattr(analysis, rname)(b), getattr(analysis, rname)(fresh))
            assert not bad, f"{what}: report {rname} fields {bad} differ from the loaded events' own"
        # what the window says: frame descriptions and captions from the saved index equal fresh ones
        fa, fb = Frames(fresh), prepare(b).frames
        assert fa.n_frames == fb.n_frames, f"{what}: {fa.n_frames} frames fresh, {fb.n_frames} from the file"
        na, nb = Narrator.of_frames(fa), Narrator.of_frames(fb)
        for f in _sample_frames(fa.n_frames):
            assert fa.describe(f) == fb.describe(f), f"{what}: frame {f} described differently"
            assert na.caption(f) == nb.caption(f), f"{what}: frame {f} captioned differently"
        CHECKED.add(digest(a))
    return back
