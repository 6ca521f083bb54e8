"""Opening a big trace in bounded pieces: validation goes a span of events at a time (no numpy call over a whole
field, which would hold the GIL against the GUI thread, and no whole-field temporaries), CRCs are read through a
buffer instead of the memory map, and the file's pages validation read are let go of, so opening a file does not
keep it resident; every damage is still found, wherever in the file it lies."""

from __future__ import annotations

import shutil
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

from gpuviz.model import tracefile, validate, validate_index
from gpuviz.model.prepared import prepare
from gpuviz.model.trace import EventKind
from gpuviz.model.tracefile import TraceFileError, load_trace, save_traces
from tests.ui_traces import matmul_tiled_trace

SPAN = 4096


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A trace of 80,896 events with its index, saved: (path, trace)."""
    trace = matmul_tiled_trace(32, 16)
    path = tmp_path_factory.mktemp("bounded") / "mm.gpuviz"
    save_traces(path, [trace])
    return path, trace


@pytest.fixture
def small_spans(monkeypatch):
    monkeypatch.setattr(validate, "CHUNK", SPAN, raising=False)
    monkeypatch.setattr(tracefile, "_READ_CHUNK", SPAN)


def peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_event_checks_use_memory_of_a_span_not_of_the_trace(saved, small_spans):
    path, _ = saved
    back = load_trace(path)
    n = len(back)
    cols = {k: np.asarray(back.field(k)) for k in back.recorded_fields}
    peak = peak_bytes(lambda: validate.check_events("f", "t", back.launch, cols))
    # the whole-field way made masks of a byte per event and the sizes of the events' arrays (8 bytes each)
    assert peak < 2 * n, f"check_events held {peak:,} bytes at once for {n:,} events"


def test_index_checks_use_memory_of_a_span_not_of_the_trace(saved, small_spans):
    path, _ = saved
    back = load_trace(path)
    n = len(back)
    arrays = prepare(back).index.arrays
    cols = {k: back.field(k) for k in ("block", "line", "array")}
    peak = peak_bytes(lambda: validate_index.check_index_arrays("f", "t", arrays, n, back.launch, cols))
    # a bool per event marks the events the permutation names; the rest is per span (the whole-array way made
    # int64 copies of the permutation, the frames of the events and their expected frames: 24+ bytes per event)
    assert peak < 3 * n, f"check_index_arrays held {peak:,} bytes at once for {n:,} events"


def test_the_spans_find_damage_anywhere_with_its_count_and_first_event(saved, small_spans):
    path, trace = saved
    n = len(trace)
    cols = {k: np.array(trace.field(k)) for k in trace.recorded_fields}
    cols["kind"][[SPAN - 1, SPAN, n - 1]] = 200  # both sides of a span's edge, and the very last event
    with pytest.raises(TraceFileError, match=rf"3 event\(s\) have a kind outside EventKind .* the first is event "
                                             rf"{SPAN - 1} \(value 200\)"):
        validate.check_events("f", "t", trace.launch, cols)
    cols = {k: np.array(trace.field(k)) for k in trace.recorded_fields}
    memory = np.flatnonzero(np.isin(cols["kind"], [int(k) for k in EventKind if k.is_memory]) & (cols["array"] >= 0))
    last = int(memory[-1])
    cols["index"][last] = 10**9
    with pytest.raises(TraceFileError, match=rf"1 memory event\(s\) index outside their array; the first is event "
                                             rf"{last}: index 1000000000"):
        validate.check_events("f", "t", trace.launch, cols)


def test_an_index_wrong_in_its_last_span_is_refused(saved, small_spans):
    path, trace = saved
    back = load_trace(path)
    n = len(back)
    arrays = dict(prepare(back).index.arrays)
    cols = {k: back.field(k) for k in ("block", "line", "array")}
    validate_index.check_index_arrays("f", "t", arrays, n, back.launch, cols)  # as saved: fine
    perm = np.array(arrays["frames.perm"])
    k = int(arrays["frames.offsets"][-2]) - 1  # the last event of the frame before the last
    perm[[k, n - 1]] = perm[[n - 1, k]]  # two events of the last span trade frames
    with pytest.raises(TraceFileError, match="the frame of an event disagrees with its offsets"):
        validate_index.check_index_arrays("f", "t", {**arrays, "frames.perm": perm}, n, back.launch, cols)
    perm[n - 1] = perm[0]
    with pytest.raises(TraceFileError, match="its event permutation repeats events"):
        validate_index.check_index_arrays("f", "t", {**arrays, "frames.perm": perm}, n, back.launch, cols)
    lines = np.array(back.field("line"))
    lines[-1] = 5000  # a line the table does not count
    with pytest.raises(TraceFileError, match="line_count_table disagrees"):
        validate_index.check_index_arrays("f", "t", arrays, n, back.launch, {**cols, "line": lines})


@pytest.mark.parametrize("preadv", [True, False], ids=["preadv", "seek and readinto (no os.preadv: Windows)"])
def test_a_changed_byte_deep_in_a_field_fails_its_crc_read_in_chunks(saved, small_spans, tmp_path, monkeypatch,
                                                                      preadv):
    path, trace = saved
    if not preadv:
        monkeypatch.delattr(tracefile.os, "preadv", raising=False)
        assert len(load_trace(path)) == len(trace)  # the file as saved: every CRC still matches
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("trace0/index.npy")
    assert info.file_size > 40 * SPAN
    bad = tmp_path / "bad.gpuviz"
    shutil.copy(path, bad)
    data = bytearray(bad.read_bytes())
    # the member's last bytes: its local header, then the .npy, the last few bytes of which are the last events'
    end = info.header_offset + 30 + len(info.filename) + len(info.extra) + info.file_size
    data[end - 3] ^= 0x10
    bad.write_bytes(bytes(data))
    with pytest.raises(TraceFileError, match=r"field 'index' .* CRC-32 does not match"):
        load_trace(bad)


def mapped_rss(path: Path) -> dict[str, int] | None:
    """``{address range: resident bytes}`` of ``path``'s memory maps in this process (/proc/self/smaps), None
    off Linux."""
    try:
        text = Path("/proc/self/smaps").read_text()
    except OSError:
        return None
    out, ours = {}, None
    for line in text.splitlines():
        head = line.split(" ", 1)[0]
        if "-" in head and ":" not in head:
            ours = head if line.rstrip().endswith(str(path)) else None
        elif ours and line.startswith("Rss:"):
            out[ours] = int(line.split()[1]) * 1024
    return out


def test_opening_keeps_few_of_the_files_pages_resident(saved):
    path, trace = saved
    before = mapped_rss(path)
    if before is None:
        pytest.skip("no /proc/self/smaps")
    size = path.stat().st_size
    back = load_trace(path)
    assert len(back) == len(trace)
    rss = sum(v for k, v in mapped_rss(path).items() if k not in before)  # this open's map
    # validation read every event and the index's per-event arrays through the map; the CRCs read the whole file
    assert rss < size // 4, f"{rss:,} of the file's {size:,} bytes stay resident after opening it"
    np.testing.assert_array_equal(back.field("index"), trace.field("index"))  # and it still reads back right


@pytest.mark.parametrize("where", ["file", "cache"])
def test_no_garbage_collection_walks_a_file_being_read(saved, where, tmp_path, monkeypatch):
    import gc
    import sys

    from gpuviz.model.indexcache import ensure_index, load_cached

    path, trace = saved
    if where == "cache":  # an index read from the user's cache folder, for a file that lacks one
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
        bare = load_trace(path, with_index=False)
        assert ensure_index(prepare(bare)) == "built"
    seen = []

    def note(phase, info):
        if phase == "start":  # what was being read when it came
            f, names = sys._getframe(1), set()
            while f is not None:
                names.add(f.f_code.co_name)
                f = f.f_back
            seen.append(names & {"_read_meta", "_read_trace", "_read_index", "check_events", "check_index",
                                 "load_index_file", "use_index"})

    old = gc.get_threshold()
    gc.set_threshold(50, 1, 1)  # a collection every 50 allocations: hundreds while a manifest is parsed
    gc.callbacks.append(note)
    try:
        if where == "cache":
            back = load_trace(path, with_index=False)
            seen.clear()
            assert load_cached(prepare(back))
        else:
            back = load_trace(path)
        during = [s for s in seen if s]
        enabled = gc.isenabled()
    finally:
        gc.callbacks.remove(note)
        gc.set_threshold(*old)
    assert during == [], f"{len(during)} collections ran while the file was read"
    assert enabled  # and collection is back on once it is read
    assert len(back) == len(trace)


@pytest.mark.parametrize("span", [1, 7, 1000])
def test_phases_and_frames_built_a_span_at_a_time_are_the_whole_ones(monkeypatch, span):
    from gpuviz.model import frames as frames_mod
    from gpuviz.model import trace as trace_mod
    from gpuviz.model.frames import Frames
    from tests.ui_traces import reduction_trace

    whole_trace = reduction_trace(3, 64)
    whole = Frames(whole_trace)
    phase = np.array(whole_trace.phase)
    assert phase.max() > 0  # it has barriers: phases to count
    monkeypatch.setattr(trace_mod, "_SPAN", span)
    monkeypatch.setattr(frames_mod, "SPAN", span)
    spanned_trace = reduction_trace(3, 64)
    np.testing.assert_array_equal(spanned_trace.phase, phase)
    spanned = Frames(spanned_trace)
    for name in Frames.STORED:
        np.testing.assert_array_equal(getattr(spanned, name), getattr(whole, name), err_msg=name)
    from gpuviz.model.narration import Narrator

    monkeypatch.setattr(frames_mod, "SPAN", 1 << 20)
    arrays, js = Narrator.of_frames(whole).state()
    monkeypatch.setattr(frames_mod, "SPAN", span)
    spanned_arrays, spanned_js = Narrator.of_frames(spanned).state()
    assert spanned_js == js
    for name in arrays:
        np.testing.assert_array_equal(spanned_arrays[name], arrays[name], err_msg=name)


def _json_outcome(fn, text):
    try:
        return "value", fn(text)
    except (ValueError, RecursionError) as exc:
        return "error", type(exc).__name__


def test_the_manifest_parsed_in_pieces_is_json_loads(saved):
    """loads_in_pieces walks the first levels itself: the same value as json.loads for every text, and an error
    (a ValueError) for every text json.loads refuses: cut anywhere, bytes changed, nested past its levels."""
    import json

    path, _ = saved
    with zipfile.ZipFile(path) as zf:
        text = zf.read("meta.json").decode()
    assert tracefile.loads_in_pieces(text) == json.loads(text)
    samples = ['{"a": [1, 2.5, -3e2, true, false, null, NaN, -Infinity, "x\\u00e9"], "b": {}, "c": [], "a": 7}',
               ' [ [[[[[[[1]]]]]]], {"k": {"k": {"k": {"k": {"k": {"k": [1, {"z": 2}]}}}}}} ] ',
               '{"traces": [{"index": {"narration": {"phase_shared": [[0, ["s"], []], [1, [], ["s", "t"]]]}}}]}',
               "", " ", "[", "]", "{", '{"a"}', '{"a":}', '{"a":1,}', "[1,]", "[1 2]", '{"a" 1}', '{1: 2}', "[1]x",
               "\ufeff[1]", '"\x01"', "[" * 50_000 + "]" * 50_000, "1" * 5000, "[01]", "{'a': 1}", "[1]\n\n"]
    rng = np.random.default_rng(0)
    small = json.dumps(json.loads(samples[2]), indent=1)
    samples += [small[:k] for k in range(len(small))]
    for _ in range(300):
        k = int(rng.integers(len(small)))
        samples.append(small[:k] + chr(int(rng.choice([34, 44, 58, 91, 93, 123, 125, 48, 32, 110]))) + small[k + 1:])
    for s in samples:
        assert _json_outcome(tracefile.loads_in_pieces, s) == _json_outcome(json.loads, s), repr(s[:80])


def _lying_member(path: Path, name: str, inflated: bytes, declared: int, others: dict[str, bytes]) -> None:
    """A zip whose member ``name`` deflates ``inflated`` but whose directory (local and central) says it holds
    ``declared`` bytes: what a decompression bomb aimed past a size budget looks like."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for other, data in others.items():
            zf.writestr(other, data)
        zf.writestr(name, inflated)
    raw = bytearray(path.read_bytes())
    key = name.encode()
    for sig, size_at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        pos = 0
        while (pos := raw.find(sig, pos)) >= 0:
            name_at = 30 if sig == b"PK\x03\x04" else 46
            n = int.from_bytes(raw[pos + (26 if sig == b"PK\x03\x04" else 28):][:2], "little")
            if raw[pos + name_at: pos + name_at + n] == key:
                raw[pos + size_at: pos + size_at + 4] = declared.to_bytes(4, "little")
            pos += 4
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("member", ["meta.json", "trace0/index/frames.perm.npy"])
def test_a_member_that_inflates_past_its_declared_size_is_refused_without_inflating_it(saved, tmp_path, member):
    """The zip directory's sizes are what the byte budget counts, so a member that says 1 KB and inflates to
    hundreds of MB must be read a bounded chunk at a time and refused at its declared end (its CRC then fails):
    one read of the whole member grew the process by the whole inflated size before refusing it."""
    path, _trace = saved
    bomb = tmp_path / "bomb.gpuviz"
    with zipfile.ZipFile(path) as zf:
        others = {n: zf.read(n) for n in zf.namelist() if n != member}
    if member == "meta.json":
        inflated = b"{" + b" " * (400 << 20)
    else:  # a valid .npy header, then far more data than declared
        import io

        buf = io.BytesIO()
        np.lib.format.write_array(buf, np.zeros(100 << 20, dtype=np.int32), allow_pickle=False)
        inflated = buf.getvalue()
    _lying_member(bomb, member, inflated, 1024 if member == "meta.json" else 1 << 16, others)
    del inflated
    tracemalloc.start()
    try:
        with pytest.raises(TraceFileError) as err:
            load_trace(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, f"refusing the bomb allocated {peak / 2**20:.0f} MB"
    assert "bomb.gpuviz" in str(err.value)
