"""Trace files: exact round trips, and every kind of damage rejected with a clear TraceFileError."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from gpuviz.model.trace import SCHEMA_VERSION, ArrayInfo, EventKind, Launch, Site, Trace
from gpuviz.model.tracefile import TraceFileError, load_trace, load_traces, save_traces

K = EventKind


def make_trace(kernel="axpy", n_blocks=2, tpb=4, all_fields=True, seed=0) -> Trace:
    """Each thread: START, load x[i], load y[i], store y[i], END (i = global thread id)."""
    rng = np.random.default_rng(seed)
    launch = Launch(
        kernel,
        grid=(n_blocks,),
        block=(tpb,),
        arrays=[ArrayInfo("x", (n_blocks * tpb,), "float32"), ArrayInfo("y", (n_blocks * tpb,), "float32")],
        source="def axpy(x, y):\n    i = cuda.grid(1)\n    y[i] += 2 * x[i]\n",
        source_file="/tmp/axpy.py",
        first_line=10,
        backend="cpu",
        device="gpuviz CPU executor",
        versions={"numpy": np.__version__},
        timings={"kernel": 0.25},
        dropped=3,
        warnings=["example warning"],
        meta={"registers_per_thread": 40, "nested": {"a": [1, 2.5, "x"]}},
        sites=[Site("start", 10, "axpy"), Site("load", 12, "axpy", "y", ("i",), 4),
               Site("load", 12, "axpy", "x", ("i",), 16), Site("store", 12, "axpy", "y", ("i",), 4),
               Site("end", 12, "axpy")] if all_fields else [],
    )
    kinds = [K.START, K.GLOBAL_LOAD, K.GLOBAL_LOAD, K.GLOBAL_STORE, K.END]
    arrays = [-1, 0, 1, 1, -1]
    lines = [11, 12, 12, 12, 12]
    n_threads = n_blocks * tpb
    gt = np.repeat(np.arange(n_threads), len(kinds))
    events = {
        "block": gt // tpb,
        "thread": gt % tpb,
        "seq": np.tile(np.arange(len(kinds)), n_threads),
        "kind": np.tile(np.array(kinds, dtype=np.uint8), n_threads),
        "array": np.tile(arrays, n_threads),
        "index": np.where(np.tile(arrays, n_threads) >= 0, gt, -1),
        "line": np.tile(lines, n_threads),
    }
    if all_fields:
        n = len(gt)
        events.update(
            step=events["seq"] * 2,
            sm=(events["block"] % 3).astype(np.int16),
            time=np.arange(n, dtype=np.int64) * 7 + 1_000_000_000_000,
            value=np.where(events["array"] >= 0, rng.normal(size=n), np.nan),
            site=np.tile(np.arange(len(kinds)), n_threads),
        )
    return Trace(launch, events)


def assert_same(a: Trace, b: Trace) -> None:
    assert a.launch.to_json() == b.launch.to_json()
    assert a.recorded_fields == b.recorded_fields
    assert len(a) == len(b)
    for name, col in a.columns.items():
        other = b.field(name)
        assert other.dtype == col.dtype, name
        np.testing.assert_array_equal(other, col, err_msg=name)


# ---- round trips ---------------------------------------------------------------------------------
def test_round_trip_all_fields(tmp_path):
    tr = make_trace()
    path = tmp_path / "run.gpuviz"
    save_traces(path, [tr])
    back = load_trace(path)
    assert_same(tr, back)
    assert back.launch.meta["nested"] == {"a": [1, 2.5, "x"]}
    assert back.launch.dropped == 3 and back.launch.first_line == 10


def test_sites_travel_in_the_file(tmp_path):
    tr = make_trace()
    path = tmp_path / "t.gpuviz"
    save_traces(path, [tr])
    back = load_trace(path)
    assert back.launch.sites == tr.launch.sites
    assert back.launch.sites[2].text == "x[i]" and back.launch.sites[0].text == "start"
    np.testing.assert_array_equal(back.site, tr.site)
    assert back.has("site")


def test_round_trip_required_fields_only_keeps_unknown_fill(tmp_path):
    tr = make_trace(all_fields=False)
    path = tmp_path / "min.gpuviz"
    save_traces(path, [tr])
    back = load_trace(path)
    assert_same(tr, back)
    assert not back.has("step") and not back.has("time")
    assert (back.step == -1).all() and np.isnan(back.value).all()
    # issue_step falls back to seq when step was not recorded, after a round trip too
    np.testing.assert_array_equal(back.issue_step, back.seq)


def test_several_traces_in_one_file(tmp_path):
    traces = [make_trace("k0", 1, 4), make_trace("k1", 3, 8, all_fields=False), make_trace("k2", 2, 32, seed=5)]
    path = tmp_path / "many.gpuviz"
    save_traces(path, traces)
    back = load_traces(path)
    assert [t.launch.kernel_name for t in back] == ["k0", "k1", "k2"]
    for a, b in zip(traces, back):
        assert_same(a, b)
    assert load_trace(path).launch.kernel_name == "k0"


def test_empty_trace_and_empty_file_list(tmp_path):
    empty = Trace(Launch("nothing", 1, 1), {n: np.zeros(0) for n in ("block", "thread", "seq", "kind")})
    path = tmp_path / "empty.gpuviz"
    save_traces(path, [empty])
    assert len(load_trace(path)) == 0
    none = tmp_path / "none.gpuviz"
    with pytest.raises(ValueError, match="no trace to save"):
        save_traces(none, [])
    assert not none.exists()


def test_meta_is_readable_json_with_magic_and_schema(tmp_path):
    path = tmp_path / "run.gpuviz"
    save_traces(path, [make_trace()])
    with zipfile.ZipFile(path) as zf:
        meta = json.loads(zf.read("meta.json"))
        names = set(zf.namelist())
    assert meta["format"] == "gpuviz-trace"
    assert meta["schema_version"] == SCHEMA_VERSION
    assert meta["traces"][0]["fields"] == ["block", "thread", "seq", "kind", "array", "index", "line", "step", "sm", "time", "value", "site"]
    assert "trace0/kind.npy" in names


def test_save_is_atomic_and_leaves_no_temp_files(tmp_path, monkeypatch):
    path = tmp_path / "run.gpuviz"
    good = make_trace("good")
    save_traces(path, [good])
    before = path.read_bytes()

    import gpuviz.model.tracefile as tf

    def explode(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(tf.np.lib.format, "write_array", explode)
    with pytest.raises(OSError, match="disk full"):
        save_traces(path, [make_trace("bad")])
    assert path.read_bytes() == before  # the old file is untouched
    assert [p.name for p in tmp_path.iterdir()] == ["run.gpuviz"]  # no temp left behind


def test_unserialisable_meta_is_a_clear_error(tmp_path):
    tr = make_trace()
    tr = tr.with_launch(meta={**tr.launch.meta, "callback": object()})
    with pytest.raises(TraceFileError, match="not JSON-serialisable"):
        save_traces(tmp_path / "x.gpuviz", [tr])
    assert not list(tmp_path.iterdir())


# ---- damage --------------------------------------------------------------------------------------
@pytest.fixture
def good_file(tmp_path):
    path = tmp_path / "good.gpuviz"
    save_traces(path, [make_trace(n_blocks=4, tpb=32), make_trace("second", all_fields=False)])
    return path


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(TraceFileError, match="no such file"):
        load_trace(tmp_path / "absent.gpuviz")
    with pytest.raises(TraceFileError, match="is a folder"):
        load_trace(tmp_path)


def test_empty_file(tmp_path):
    path = tmp_path / "empty.gpuviz"
    path.write_bytes(b"")
    with pytest.raises(TraceFileError, match=r"empty.gpuviz: the file is empty"):
        load_trace(path)


def test_truncated_at_many_offsets(good_file, tmp_path):
    data = good_file.read_bytes()
    offsets = sorted({1, 2, 10, 100, len(data) // 3, len(data) // 2, len(data) - 100, len(data) - 22, len(data) - 1})
    for cut in offsets:
        path = tmp_path / f"cut{cut}.gpuviz"
        path.write_bytes(data[:cut])
        with pytest.raises(TraceFileError) as info:
            load_traces(path)
        assert f"cut{cut}.gpuviz" in str(info.value), cut


def test_flipped_bytes_are_caught(good_file, tmp_path):
    data = bytearray(good_file.read_bytes())
    with zipfile.ZipFile(good_file) as zf:
        infos = {i.filename: i for i in zf.infolist()}
    # flip a byte in the middle of the compressed data of several members: CRC or inflate must fail
    for member in ("meta.json", "trace0/index.npy", "trace0/kind.npy", "trace1/seq.npy"):
        info = infos[member]
        start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
        damaged = bytearray(data)
        damaged[start + info.compress_size // 2] ^= 0xFF
        path = tmp_path / "flipped.gpuviz"
        path.write_bytes(bytes(damaged))
        with pytest.raises(TraceFileError, match="flipped.gpuviz"):
            load_traces(path)


def test_random_byte_flips_never_escape_as_other_errors(good_file, tmp_path):
    data = good_file.read_bytes()
    rng = np.random.default_rng(1)
    path = tmp_path / "fuzz.gpuviz"
    for _ in range(60):
        damaged = bytearray(data)
        for pos in rng.integers(0, len(data), size=rng.integers(1, 4)):
            damaged[pos] ^= int(rng.integers(1, 256))
        path.write_bytes(bytes(damaged))
        try:
            load_traces(path)
        except TraceFileError as exc:
            assert "fuzz.gpuviz" in str(exc)
        # a flip in a zip field nobody checks (e.g. a timestamp) may load fine: that is not damage


@pytest.mark.parametrize(
    "content, what",
    [
        (b"\x89PNG\r\n\x1a\n" + bytes(100), "PNG image"),
        (b"%PDF-1.4 hello", "PDF document"),
        (b"hello world, I am text", "unrecognised content"),
    ],
)
def test_foreign_files(tmp_path, content, what):
    path = tmp_path / "foreign.gpuviz"
    path.write_bytes(content)
    with pytest.raises(TraceFileError, match=f"foreign.gpuviz: not a gpuviz trace file: it is .*{what}"):
        load_trace(path)


def test_random_zip_and_plain_npz(tmp_path):
    path = tmp_path / "random.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("readme.txt", "hello")
    with pytest.raises(TraceFileError, match="random.zip: not a gpuviz trace file: it is a zip archive without meta.json"):
        load_trace(path)
    npz = tmp_path / "arrays.npz"
    np.savez_compressed(npz, block=np.zeros(3), kind=np.zeros(3))
    with pytest.raises(TraceFileError, match="numpy .npz archive without meta.json"):
        load_trace(npz)


def rewrite(src, dst, meta_edit=None, replace=None, drop=()):
    """Copy the archive src to dst, editing meta.json and replacing/dropping members."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            if info.filename in drop:
                continue
            data = zin.read(info.filename)
            if info.filename == "meta.json" and meta_edit is not None:
                meta = json.loads(data)
                meta_edit(meta)
                data = json.dumps(meta).encode()
            if replace and info.filename in replace:
                data = replace[info.filename]
            zout.writestr(info.filename, data)
    return dst


def npy_bytes(arr) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def forged(good_file, tmp_path, **kw):
    return rewrite(good_file, tmp_path / "forged.gpuviz", **kw)


def test_newer_schema_is_refused(good_file, tmp_path):
    def newer(meta):
        meta["schema_version"] = SCHEMA_VERSION + 1
        meta["gpuviz_version"] = "9.0"

    with pytest.raises(TraceFileError, match=r"forged.gpuviz: written by a newer gpuviz \(9.0.*upgrade"):
        load_trace(forged(good_file, tmp_path, meta_edit=newer))


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda m: m.update(format="something-else"), "format 'something-else'"),
        (lambda m: m.update(schema_version="1"), "invalid schema_version"),
        (lambda m: m.update(schema_version=0), "invalid schema_version"),
        (lambda m: m.update(traces="nope"), "must list the traces"),
        (lambda m: m["traces"][0].pop("launch"), "lacks 'launch'"),
        (lambda m: m["traces"][0]["launch"].update(grid=[0, 1, 1]), "invalid launch description"),
        (lambda m: m["traces"][0]["launch"].update(grid="big"), "invalid launch description"),
        (lambda m: m["traces"][0]["launch"].update(warp_size=0), "warp_size"),
        (lambda m: m["traces"][0]["launch"]["arrays"][0].update(dtype="not-a-dtype"), "invalid launch description"),
        (lambda m: m["traces"][0].update(fields=["block", "thread", "seq", "kind", "colour"]), "unknown event field"),
        (lambda m: m["traces"][0].update(fields=["block", "thread", "seq"]), r"required event field\(s\) \['kind'\]"),
        (lambda m: m["traces"][0].update(n_events=-1), "invalid n_events"),
        (lambda m: m["traces"][0].update(n_events=7), "has 640 events, the trace has 7"),
        (lambda m: m["traces"][0]["launch"].update(sites="all"), "'sites' must be a list"),
        (lambda m: m["traces"][0]["launch"]["sites"][1].update(kind="teleport"), "site 1: kind must be one of start"),
        (lambda m: m["traces"][0]["launch"]["sites"][1].update(line="12"), "site 1.*line"),
        (lambda m: m["traces"][0]["launch"]["sites"][1].update(index="i"), "site 1: 'index' must be a list"),
    ],
)
def test_forged_meta(good_file, tmp_path, edit, message):
    with pytest.raises(TraceFileError, match=message) as info:
        load_traces(forged(good_file, tmp_path, meta_edit=edit))
    assert "forged.gpuviz" in str(info.value)


def test_meta_not_json(good_file, tmp_path):
    path = forged(good_file, tmp_path, replace={"meta.json": b"{not json"})
    with pytest.raises(TraceFileError, match="meta.json is not valid JSON"):
        load_trace(path)


def test_listed_field_missing_from_archive(good_file, tmp_path):
    path = forged(good_file, tmp_path, drop=("trace0/line.npy",))
    with pytest.raises(TraceFileError, match="field 'line' is listed but 'trace0/line.npy' is not in the archive"):
        load_trace(path)


def test_field_length_mismatch(good_file, tmp_path):
    path = forged(good_file, tmp_path, replace={"trace0/seq.npy": npy_bytes(np.zeros(5, np.int32))})
    with pytest.raises(TraceFileError, match="field 'seq' has 5 events, the trace has 640"):
        load_trace(path)


def test_wrong_dtype_and_shape_and_pickle(good_file, tmp_path):
    path = forged(good_file, tmp_path, replace={"trace0/seq.npy": npy_bytes(np.zeros(640, np.float64))})
    with pytest.raises(TraceFileError, match="field 'seq' has dtype float64, the schema says int32"):
        load_trace(path)
    path = forged(good_file, tmp_path, replace={"trace0/seq.npy": npy_bytes(np.zeros((32, 20), np.int32))})
    with pytest.raises(TraceFileError, match="expected 1-d"):
        load_trace(path)
    objects = np.empty(640, dtype=object)
    import io

    buf = io.BytesIO()
    np.save(buf, objects, allow_pickle=True)
    path = forged(good_file, tmp_path, replace={"trace0/seq.npy": buf.getvalue()})
    with pytest.raises(TraceFileError, match="dtype object"):
        load_trace(path)
    path = forged(good_file, tmp_path, replace={"trace0/seq.npy": b"\x93NUMPY garbage"})
    with pytest.raises(TraceFileError, match="field 'seq'.*damaged"):
        load_trace(path)


def test_trailing_bytes_after_field(good_file, tmp_path):
    data = npy_bytes(np.zeros(640, np.int32)) + b"\0\0\0\0"
    path = forged(good_file, tmp_path, replace={"trace0/seq.npy": data})
    with pytest.raises(TraceFileError, match="bytes after its 640 events"):
        load_trace(path)


def column(good_file, name):
    return load_trace(good_file).field(name).copy()


@pytest.mark.parametrize(
    "field, position, value, message",
    [
        ("kind", 7, 42, "a kind outside EventKind"),
        ("block", 3, 4, r"a block outside 0..3; the first is event 3 \(value 4\)"),
        ("block", 3, -1, "a block outside 0..3"),
        ("thread", 9, 32, "a thread outside 0..31"),
        ("seq", 0, -5, "a negative seq"),
        ("array", 1, 2, "an array id outside -1..1"),
        ("array", 1, -2, "an array id outside -1..1"),
        ("index", 1, 128, r"index outside their array; the first is event 1: index 128 into 'x' of shape \(128,\)"),
        ("index", 2, -1, "index outside their array"),
        ("site", 4, 5, r"a site outside -1..4 \(the launch lists 5 recorded site\(s\)\); the first is event 4"),
        ("site", 4, -2, "a site outside -1..4"),
    ],
)
def test_inconsistent_events(good_file, tmp_path, field, position, value, message):
    col = column(good_file, field)
    col[position] = value
    path = forged(good_file, tmp_path, replace={f"trace0/{field}.npy": npy_bytes(col)})
    with pytest.raises(TraceFileError, match=message) as info:
        load_traces(path)
    assert "forged.gpuviz: trace 0 (axpy)" in str(info.value)


def test_non_memory_events_may_have_no_index(good_file, tmp_path):
    # START/END events carry index -1 and array -1; that is consistent, not damage
    back = load_trace(good_file)
    starts = back.kind == K.START
    assert (back.index[starts] == -1).all() and (back.array[starts] == -1).all()


def test_forged_huge_event_count_is_refused_before_allocating(good_file, tmp_path):
    huge = 10**15
    header = b"\x93NUMPY\x01\x00" + b"v\x00" + ("{'descr': '<i4', 'fortran_order': False, 'shape': (%d,), }" % huge).ljust(117).encode() + b"\n"

    def edit(meta):
        meta["traces"][0]["n_events"] = huge

    path = forged(good_file, tmp_path, meta_edit=edit, replace={f"trace0/{n}.npy": header for n in ("block", "thread", "seq", "kind")})
    with pytest.raises(TraceFileError, match="invalid n_events 1000000000000000"):
        load_trace(path)
