"""The trace index (gpuviz.model.index): computed where the trace is saved, read back instead of recomputed,
memory-mapped from an aligned, uncompressed file, ignored when it does not fit the events; older files open."""

from __future__ import annotations

import dataclasses
import json
import mmap
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

from gpuviz.model import analysis
from gpuviz.model import index as index_mod
from gpuviz.model.frames import Frames
from gpuviz.model.prepared import has_index, prepare
from gpuviz.model.trace import SCHEMA_VERSION, Trace
from gpuviz.model.tracefile import load_trace, save_traces
from tests.test_tracefile import forged, npy_bytes
from tests.ui_traces import matmul_tiled_trace

DATA = Path(__file__).parent / "data"
#: written by gpuviz before schema 2 (deflated members, no index): `gpuviz capture reduce_sum --size 2048`
SCHEMA1_FILE = DATA / "reduce_sum_schema1.gpuviz"
#: written by gpuviz with schema 2 (stored, aligned members and an index; no site table):
#: ``capture_bundled("reduce_sum", 512, None, "cpu")`` saved with ``save_traces``
SCHEMA2_FILE = DATA / "reduce_sum_schema2.gpuviz"


def same_report(a, b) -> None:
    assert type(a) is type(b)
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y, err_msg=f.name)
        elif isinstance(x, dict) and x and all(isinstance(v, np.ndarray) for v in x.values()):
            assert list(x) == list(y), f.name
            for k in x:
                np.testing.assert_array_equal(x[k], y[k], err_msg=f"{f.name}.{k}")
        else:
            assert json.dumps(x, sort_keys=True) == json.dumps(y, sort_keys=True), f.name


def same_frames(a: Frames, b: Frames) -> None:
    assert a.n_frames == b.n_frames
    for name in Frames.STORED:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def mapped(arr: np.ndarray) -> bool:
    base = arr
    while base is not None and not isinstance(base, mmap.mmap):
        base = base.obj if isinstance(base, memoryview) else getattr(base, "base", None)
    return isinstance(base, mmap.mmap)


@pytest.fixture(scope="module")
def trace():
    return matmul_tiled_trace(32, 16)


def test_saved_file_carries_the_index_and_opening_reads_it(trace, tmp_path, monkeypatch):
    path = tmp_path / "mm.gpuviz"
    save_traces(path, [trace])
    fresh = Frames(trace)

    def no_sorting(*a, **k):
        raise AssertionError("opening a file with an index must not build frames again")

    back = load_trace(path)
    assert has_index(back)
    monkeypatch.setattr(Frames, "_build", no_sorting)
    monkeypatch.setattr(analysis, "_build_prep", no_sorting)
    frames = prepare(back).frames
    same_frames(fresh, frames)
    np.testing.assert_array_equal(prepare(back).phase, trace.phase)
    assert "phase" not in back.__dict__  # the index's phases: the trace's own were never computed
    for name in analysis.REPORT_NAMES:
        same_report(getattr(analysis, name)(trace), getattr(analysis, name)(back))
    from gpuviz.model.narration import Narrator

    monkeypatch.setattr(Narrator, "_compute", no_sorting)
    saved_narrator = Narrator.of_frames(frames)
    saved_narrator.caption(0)  # built from the file's index: computing would raise
    monkeypatch.undo()
    computed = Narrator.of_frames(fresh)
    for f in range(0, fresh.n_frames, max(1, fresh.n_frames // 97)):
        assert saved_narrator.caption(f) == computed.caption(f)
        assert saved_narrator.facts(f) == computed.facts(f)
    # what the window asks per block and per thread agrees with the whole-trace answers
    for b in (0, 3):
        for f in (0, fresh.block_first[b] + 5):
            np.testing.assert_array_equal(frames.lane_states(b, f), fresh.lane_states(b, f))
    np.testing.assert_array_equal(prepare(back).events_of_thread(2, 17), trace.events_of_thread(2, 17))
    assert "thread_order" not in back.__dict__  # found from one block's frames, not a whole-trace sort


def test_fields_and_index_are_memory_mapped_at_aligned_offsets(trace, tmp_path):
    path = tmp_path / "mm.gpuviz"
    save_traces(path, [trace])
    with zipfile.ZipFile(path) as zf, open(path, "rb") as fh:
        meta = json.loads(zf.read("meta.json"))
        assert meta["schema_version"] == SCHEMA_VERSION == 3
        assert any(i.filename.startswith("trace0/index/") for i in zf.infolist())
        for info in zf.infolist():
            if not info.filename.endswith(".npy"):
                continue
            assert info.compress_type == zipfile.ZIP_STORED, info.filename
            fh.seek(info.header_offset + 26)
            n, e = struct.unpack("<HH", fh.read(4))
            assert (info.header_offset + 30 + n + e) % 64 == 0, info.filename
    back = load_trace(path)
    assert mapped(back.field("block")) and mapped(back.field("index"))
    assert mapped(prepare(back).index.arrays["frames.perm"]) and mapped(prepare(back).frames.perm)
    assert not back.field("block").flags.writeable


def test_a_file_without_the_index_still_opens_and_gets_the_same_frames(trace, tmp_path):
    path = tmp_path / "bare.gpuviz"
    save_traces(path, [trace], index=False)
    back = load_trace(path)
    assert not has_index(back)
    same_frames(Frames(trace), prepare(back).frames)


def test_an_index_that_does_not_fit_the_events_is_ignored(trace, tmp_path):
    path = tmp_path / "mm.gpuviz"
    save_traces(path, [trace])
    good = load_trace(path)
    line = good.field("line").copy()
    line[line > 0] += 1  # events edited by another tool: the stored index is from other events
    edited = forged(path, tmp_path, replace={"trace0/line.npy": npy_bytes(line)})
    back = load_trace(edited)
    assert not has_index(back)
    np.testing.assert_array_equal(Frames(back).line[Frames(back).line > 0], Frames(good).line[Frames(good).line > 0] + 1)


def test_a_damaged_index_member_is_a_damaged_file(trace, tmp_path):
    from gpuviz.model.tracefile import TraceFileError

    path = tmp_path / "mm.gpuviz"
    save_traces(path, [trace])
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("trace0/index/frames.perm.npy")
    fh_start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    data[fh_start + info.compress_size - 3] ^= 0x55
    bad = tmp_path / "bad.gpuviz"
    bad.write_bytes(bytes(data))
    with pytest.raises(TraceFileError, match="bad.gpuviz.*frames.perm.*damaged"):
        load_trace(bad)


def test_an_older_schema_1_file_still_opens(tmp_path):
    with zipfile.ZipFile(SCHEMA1_FILE) as zf:
        assert json.loads(zf.read("meta.json"))["schema_version"] == 1
        assert all(i.compress_type == zipfile.ZIP_DEFLATED for i in zf.infolist() if i.filename.endswith(".npy"))
    old = load_trace(SCHEMA1_FILE)
    assert old.launch.kernel_name == "reduce_sum" and len(old) == 32_760
    assert not has_index(old)
    frames = prepare(old).frames
    assert frames.n_frames > 0
    # saved again, it becomes a schema-2 file with an index, and the same frames come back from it
    again = tmp_path / "again.gpuviz"
    save_traces(again, [old])
    back = load_trace(again)
    assert has_index(back)
    same_frames(frames, prepare(back).frames)
    for name in analysis.REPORT_NAMES:
        same_report(getattr(analysis, name)(old), getattr(analysis, name)(back))


def test_an_older_schema_2_file_still_opens(tmp_path):
    with zipfile.ZipFile(SCHEMA2_FILE) as zf:
        meta = json.loads(zf.read("meta.json"))
        assert meta["schema_version"] == 2
        assert all(i.compress_type == zipfile.ZIP_STORED for i in zf.infolist() if i.filename.endswith(".npy"))
    old = load_trace(SCHEMA2_FILE)
    assert old.launch.kernel_name == "reduce_sum" and len(old) == 8_190
    assert old.launch.sites == () and not old.has("site") and (old.site == -1).all()  # schema 2 had no sites
    assert has_index(old)  # its saved index is used, not rebuilt
    frames = prepare(old).frames
    rebuilt = Frames(Trace(old.launch, {k: old.field(k) for k in old.recorded_fields}))
    same_frames(frames, rebuilt)
    # saved again, it is written with this gpuviz's schema, and the same frames and reports come back
    again = tmp_path / "again.gpuviz"
    save_traces(again, [old])
    with zipfile.ZipFile(again) as zf:
        assert json.loads(zf.read("meta.json"))["schema_version"] == SCHEMA_VERSION
    back = load_trace(again)
    same_frames(frames, prepare(back).frames)
    for name in analysis.REPORT_NAMES:
        same_report(getattr(analysis, name)(old), getattr(analysis, name)(back))


def test_build_index_reports_progress_and_cancels(trace):
    seen = []
    tr = Trace(trace.launch, {k: trace.field(k) for k in trace.recorded_fields})
    idx = index_mod.build_index(tr, progress=lambda f, stage: seen.append((f, stage)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and len(set(s for _, s in seen)) >= 5
    assert idx.nbytes > 0
    tr2 = Trace(trace.launch, {k: trace.field(k) for k in trace.recorded_fields})
    calls = []

    def cancelled():
        calls.append(1)
        return len(calls) > 2  # cancel inside the frame build

    with pytest.raises(index_mod.Cancelled):
        index_mod.build_index(tr2, cancelled=cancelled)
    assert analysis.cached_report(tr2, "races") is None  # it stopped before the analyses


def test_analyses_are_computed_once_across_threads(trace):
    import threading

    tr = Trace(trace.launch, {k: trace.field(k) for k in trace.recorded_fields})
    calls = []
    real = analysis._build_prep

    def counting(t):
        calls.append(threading.get_ident())
        return real(t)

    results = []
    analysis._build_prep = counting
    try:
        threads = [threading.Thread(target=lambda: results.append(analysis.shared_banks(tr))) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        analysis._build_prep = real
    assert len(calls) == 1
    assert all(r is results[0] for r in results)


def test_a_few_blocks_of_a_huge_launch_are_indexed_without_per_thread_tables(tmp_path):
    from gpuviz.model.trace import Launch

    # 2 recorded blocks of a launch of 2**30 threads: nothing in the index may be sized by the launch's threads
    launch = Launch("touch", grid=(2**20,), block=(1024,))
    n = 2048
    events = {"block": np.repeat([0, 1], 1024), "thread": np.tile(np.arange(1024), 2), "seq": np.zeros(n),
              "kind": np.zeros(n, dtype=np.uint8)}
    tr = Trace(launch, events)
    idx = index_mod.build_index(tr)
    assert "narration" not in idx.info
    assert max(a.nbytes for a in idx.arrays.values()) < 64 << 20
    path = tmp_path / "few.gpuviz"
    save_traces(path, [tr])
    back = load_trace(path)
    assert has_index(back) and prepare(back).narration is None
    assert prepare(back).frames.n_frames == Frames(tr).n_frames


def test_the_barrier_facts_of_an_index_are_a_few_shared_tuples_the_collector_leaves_alone(trace, tmp_path):
    """A big launch has a (stores, loads) row per block and phase: kept as lists and sets they were a quarter
    of a million objects every full garbage collection walked (on the GUI thread too)."""
    import gc

    from gpuviz.model.narration import Narrator
    from gpuviz.model.trace import EventKind

    path = tmp_path / "mm.gpuviz"
    save_traces(path, [trace])
    back = load_trace(path)
    rows = prepare(back).narration[1]["phase_shared"]
    assert len(rows) > 1 and all(type(r) is tuple and type(r[1]) is tuple and type(r[2]) is tuple for r in rows)
    assert len({id(r[1]) for r in rows}) == len({r[1] for r in rows})  # equal names: one tuple
    frames = prepare(back).frames
    saved = Narrator.of_frames(frames)
    saved.caption(0)
    pairs = list(saved._phase_shared.values())
    assert len({id(p) for p in pairs}) == len(set(pairs)) < len(pairs)
    gc.collect()
    gc.collect()  # a tuple is let go once the tuples in it were (a pass each)
    assert not any(gc.is_tracked(p) for p in pairs) and not any(gc.is_tracked(r) for r in rows)
    # the same captions at every barrier as a narrator that computed its facts, and the same file saved again
    fresh = Frames(trace)
    computed = Narrator.of_frames(fresh)
    barriers = np.flatnonzero(fresh.kind == EventKind.BARRIER)
    assert len(barriers)
    for f in barriers[:: max(1, len(barriers) // 50)]:
        assert saved.caption(int(f)) == computed.caption(int(f))
    assert {k: tuple(map(tuple, v)) for k, v in computed._phase_shared.items()} == saved._phase_shared
    again = tmp_path / "again.gpuviz"
    save_traces(again, [back])
    assert [list(map(list, r[1:])) for r in prepare(load_trace(again)).narration[1]["phase_shared"]] == \
        [list(map(list, r[1:])) for r in rows]
