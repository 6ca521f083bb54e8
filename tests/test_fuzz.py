"""Fuzzed trace files and lesson files: a few hundred seeded inputs in CI (``bench/fuzz.py`` runs tens of thousands).

Every input runs in a worker process under a memory limit and a time limit (``tests/fuzzing.py``); the
test fails, naming each input (its number regenerates it) and what went wrong, on any traceback, hang,
crash or memory blow-up, and on any damaged file that loads but then makes ``gpuviz info`` or
``gpuviz snapshot`` fail. The zip-bomb and budget cases below are checked directly as well.
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib

import numpy as np
import pytest

from gpuviz.model import validate
from gpuviz.model.tracefile import TraceFileError, load_traces, read_manifest, save_traces

try:
    from tests import fuzzing
except ImportError:  # tests/ not a package in this checkout
    import fuzzing

SEED = 20261201


def _describe(report) -> str:
    lines = [f"{report.kind} fuzz, seed {report.seed}: {dict(report.counts)}"]
    for f in report.failures:
        lines.append(json.dumps(f)[:1500])
    return "\n".join(lines)


def test_trace_file_fuzzer(tmp_path):
    report = fuzzing.fuzz("trace", SEED, 300, tmp_path, batch=150, snapshot=1, per_input_s=60, jobs=2)
    assert report.failed() == 0 and not report.failures, _describe(report)
    c = report.counts
    assert c["refused"] + c["same"] + c["different"] == 300, _describe(report)
    # the mutations reach every stage: refused files, files that load with other content; info and snapshot
    # run on every one of those
    assert c["refused"] > 100 and c["different"] > 20 and c["info:ok"] == c["different"], _describe(report)
    assert c["snapshot:ok"] + c["snapshot:message"] == c["different"], _describe(report)
    assert c["snapshot:ok"] > c["different"] // 2, _describe(report)


def test_lesson_fuzzer(tmp_path):
    report = fuzzing.fuzz("lesson", SEED, 200, tmp_path, batch=200, per_input_s=60)
    assert report.failed() == 0 and not report.failures, _describe(report)
    assert report.counts["refused"] + report.counts["loaded"] == 200
    assert report.counts["refused"] > 50 and report.counts["loaded"] > 0, _describe(report)


def test_every_shipped_lesson_plays_through_the_fuzzers_loader():
    # the lesson fuzzer's mutants start from these: if the seeds themselves were refused at play (their stops and
    # questions checked against a trace they were not written for), every mutant would be refused too and the
    # fuzzer would test the loader's first error alone
    outcomes = {p.name: fuzzing._check_lesson(p) for p in fuzzing.lesson_seeds()}
    assert len(outcomes) >= 7
    assert all(o == {"outcome": "loaded"} for o in outcomes.values()), outcomes


def _trace_file(tmp_path, n_traces=1):
    traces = [fuzzing._synthetic(kernel=f"k{i}", n_blocks=1, tpb=32) for i in range(n_traces)]
    path = tmp_path / "t.gpuviz"
    save_traces(path, traces)
    return path


def test_a_zip_bomb_is_refused_from_the_zip_directory(tmp_path):
    path = _trace_file(tmp_path)
    members = fuzzing.read_members(path.read_bytes())
    b, n = fuzzing.bomb(200 << 20, tmp_path / "bombs")  # 200 MB of zeros in ~0.2 MB
    meta = next(m for m in members if m.name == "meta.json")
    d = json.loads(meta.data)
    d["traces"][0]["n_events"] = n
    meta.data = json.dumps(d).encode()
    for i, m in enumerate(members):
        if m.name == "trace0/block.npy":
            members[i] = fuzzing.Member(m.name, raw=b.raw, size=b.size, crc=b.crc)
    bomb_file = tmp_path / "bomb.gpuviz"
    bomb_file.write_bytes(fuzzing.write_zip(members))
    assert bomb_file.stat().st_size < 3 << 20
    with pytest.raises(TraceFileError, match="zip bomb"):
        load_traces(bomb_file)
    with pytest.raises(TraceFileError, match="zip bomb"):
        read_manifest(bomb_file)  # what `gpuviz open` reads first is guarded the same way


def test_the_byte_budget_covers_every_trace_of_a_recording(tmp_path):
    # deflated members (schema 1, or any tool's zip) count what they inflate to; stored ones are in the file
    stored = _trace_file(tmp_path, n_traces=20)
    path = tmp_path / "deflated.gpuviz"
    path.write_bytes(fuzzing.write_zip(fuzzing.read_members(stored.read_bytes())))
    assert {i.compress_type for i in zipfile.ZipFile(path).infolist()} == {zipfile.ZIP_DEFLATED}
    total = sum(i.file_size for i in zipfile.ZipFile(path).infolist())
    assert len(load_traces(path, max_bytes=total)) == 20
    with pytest.raises(TraceFileError, match="inflate to"):
        load_traces(path, max_bytes=total - 1)


def test_meta_json_is_capped_before_it_is_parsed(tmp_path):
    path = _trace_file(tmp_path)
    members = fuzzing.read_members(path.read_bytes())
    meta = next(m for m in members if m.name == "meta.json")
    d = json.loads(meta.data)
    d["traces"][0]["launch"]["source"] = "x" * (validate.Limits.max_meta_bytes + 10)
    meta.data = json.dumps(d).encode()
    big = tmp_path / "big.gpuviz"
    big.write_bytes(fuzzing.write_zip(members))
    for read in (load_traces, read_manifest):
        with pytest.raises(TraceFileError, match="more than a gpuviz file ever holds"):
            read(big)


@pytest.mark.parametrize("name", ["../meta.json", "/etc/passwd", "trace0/../x.npy", "a\\b.npy", "trace0/./block.npy"])
def test_member_names_that_climb_out_are_refused(tmp_path, name):
    path = _trace_file(tmp_path)
    members = fuzzing.read_members(path.read_bytes()) + [fuzzing.Member(name, b"x")]
    bad = tmp_path / "bad.gpuviz"
    bad.write_bytes(fuzzing.write_zip(members))
    with pytest.raises(TraceFileError, match="gpuviz never writes one"):
        load_traces(bad)


def test_object_arrays_are_never_unpickled(tmp_path):
    path = _trace_file(tmp_path)
    members = fuzzing.read_members(path.read_bytes())
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.array([1, "x", None], dtype=object), allow_pickle=True)
    for m in members:
        if m.name == "trace0/kind.npy":
            m.data = buf.getvalue()
    bad = tmp_path / "obj.gpuviz"
    bad.write_bytes(fuzzing.write_zip(members))
    with pytest.raises(TraceFileError, match="dtype object"):
        load_traces(bad)


def test_an_index_that_claims_these_events_but_points_elsewhere_is_refused(tmp_path):
    path = _trace_file(tmp_path)
    members = fuzzing.read_members(path.read_bytes())
    for m in members:
        if m.name == "trace0/index/frames.perm.npy":
            arr = np.load(io.BytesIO(m.data))
            arr[0] = arr[1]  # a repeated event: the CRC of the events still matches, the index lies
            m.data = fuzzing._npy(arr)
    bad = tmp_path / "idx.gpuviz"
    bad.write_bytes(fuzzing.write_zip(members))
    with pytest.raises(TraceFileError, match="permutation repeats events"):
        load_traces(bad)
    assert zlib.crc32(b"") == 0  # (zlib is what the file's CRCs are made with)


def test_an_index_with_no_frame_offsets_is_a_damaged_file(tmp_path):
    # fuzz input 18083 of seed 1 (bench/fuzz.py): frames.offsets emptied made the index check raise IndexError
    path = _trace_file(tmp_path)
    members = fuzzing.read_members(path.read_bytes())
    for m in members:
        if m.name == "trace0/index/frames.offsets.npy":
            m.data = fuzzing._npy(np.zeros(0, dtype=np.int64))
    bad = tmp_path / "offsets.gpuviz"
    bad.write_bytes(fuzzing.write_zip(members))
    with pytest.raises(TraceFileError, match="offsets|index is damaged"):
        load_traces(bad)


@pytest.mark.parametrize("number, what", [
    (119, "values of trace0/index.npy"),  # index int64-max on events of no array: the narration's key overflowed
    (13, "big source"),  # a one-line "source" of a million characters: the source view took minutes to lay out
])
def test_damaged_files_that_load_also_render(tmp_path, number, what):
    # fuzz inputs of seed 1 (bench/fuzz.py) that loaded and then broke `gpuviz snapshot`
    seeds, which, desc, path = _fuzz_input(tmp_path, number)
    assert what in desc
    originals = load_traces(seeds[which])
    try:
        rec = fuzzing._check_trace(path, originals, True, tmp_path)
    finally:
        fuzzing.close_snapshot_window()
    assert rec["outcome"] == "different" and rec["info"] == "ok" and rec["snapshot"] == "ok", rec


def _fuzz_input(tmp_path, number):
    """Trace input ``number`` of seed 1 as bench/fuzz.py makes it, written to a file: (seeds, which seed,
    what was done to it, the file)."""
    seeds = fuzzing.make_seeds(tmp_path / "seeds")
    data, which, desc = fuzzing.make_trace_input(1, number, seeds, {"sizes": [1 << 23], "folder": tmp_path})
    path = tmp_path / "in.gpuviz"
    path.write_bytes(data)
    return seeds, which, desc, path


def test_a_line_count_table_that_is_not_the_events_is_a_damaged_file(tmp_path):
    # fuzz input 2461 of seed 1 (bench/fuzz.py): a damaged frames.line_count_table loaded, the source view
    # failed on it and the window then crashed (SIGSEGV) in gpuviz snapshot
    seeds, _which, desc, path = _fuzz_input(tmp_path, 2461)
    assert "line_count_table" in desc
    with pytest.raises(TraceFileError, match="line_count_table"):
        load_traces(path)
    assert len(load_traces(seeds[_which])) >= 1  # the seed itself, with its true table, loads


def test_an_index_that_lacks_one_of_the_saved_frame_arrays_is_a_damaged_file(tmp_path):
    # fuzz input 147 of seed 1 (bench/fuzz.py): the manifest's list of index arrays lost one entry; the file
    # loaded, then every view failed with "saved frames lack ..." (gpuviz snapshot: exit 1)
    seeds, which, desc, path = _fuzz_input(tmp_path, 147)
    assert "'index', 'arrays'" in desc
    with pytest.raises(TraceFileError, match="lacks frames"):
        load_traces(path)
    assert len(load_traces(seeds[which])) >= 1


def test_the_fuzzer_runs_the_inputs_it_is_given_by_number(tmp_path):
    # bench/fuzz.py --numbers: the inputs a reader names, alone, without the whole range before them
    report = fuzzing.fuzz("trace", 1, 0, tmp_path, numbers=[147, 13], batch=10, snapshot=1, per_input_s=60)
    assert [r["n"] for r in report.records] == [147, 13]
    assert report.records[0]["outcome"] == "refused" and "lacks frames" in report.records[0]["message"]
    assert report.records[1]["outcome"] == "different" and report.records[1]["snapshot"] == "ok"
    assert report.n == 2 and not report.messages and not report.failures


def test_values_outside_the_declared_ranges_are_refused_or_their_index_rebuilt(tmp_path):
    """The format (gpuviz.model.fileformat) is the fuzzer's idea of valid as it is the loader's: inputs numbered
    from RANGE_BASE set one checked index value just outside its declared range. Each is refused, or its index is
    dropped and rebuilt from the events; none is loaded with the value in use ("accepted")."""
    base = fuzzing.RANGE_BASE
    report = fuzzing.fuzz("trace", 3, 0, tmp_path, numbers=list(range(base, base + 24)), batch=24, snapshot=0,
                          per_input_s=60)
    outcomes = [r["outcome"] for r in report.records]
    pushed = [r for r in report.records if r["what"].startswith("outside the format:")]
    assert len(pushed) >= 12 and not report.failures and "accepted" not in outcomes, report.records
    refused = [r for r in pushed if r["outcome"] == "refused"]
    assert refused and all("outside" in r["message"] or "index" in r["message"] for r in refused), refused
    assert {r["what"].split(" = ")[0].split(": ")[1].split(".")[0] for r in pushed} >= {"frames"}


def _bench_fuzz():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "bench" / "fuzz.py"
    spec = importlib.util.spec_from_file_location("bench_fuzz", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_bench_names_every_input_whose_snapshot_ended_in_a_message(tmp_path):
    # a one-line error of `gpuviz snapshot` is listed with its input number, what was done and the message, in the
    # JSON's failures and in the .md, as the failures are: a reader can make the input again (--numbers N)
    bench = _bench_fuzz()
    report = fuzzing.Report("trace", 1, 3)
    message = {"n": 7042, "outcome": "different", "what": "json ('traces', 0) = 'x'", "info": "ok",
               "snapshot": "exit 1: saved frames lack array 'order'"}
    report.records = [{"n": 7041, "outcome": "refused", "message": "m"}, message,
                      {"n": 7043, "outcome": "different", "info": "ok", "snapshot": "ok"}]
    report.messages = [dict(message, alone=dict(message))]
    report.failures = [{"n": 7040, "outcome": "traceback", "error": "KeyError: 'x'", "first_run": "traceback"}]
    entries = bench.problem_entries(report)
    assert [e["n"] for e in entries] == [7040, 7042]
    assert entries[1]["problems"] == ["snapshot:message"] and entries[0]["problems"] == ["traceback"]
    line = bench.problem_line("trace", entries[1])
    assert "trace input 7042 (snapshot:message)" in line and "saved frames lack array 'order'" in line
    assert "json ('traces', 0)" in line and "run again alone" in line
    assert json.loads(json.dumps(entries))[1]["snapshot"] == message["snapshot"]  # what the JSON's failures hold
    assert bench.input_numbers("6100-6102,7042") == [6100, 6101, 6102, 7042]
    (tmp_path / "numbers.txt").write_text("9301\n9305-9306\n")
    assert bench.input_numbers(f"@{tmp_path / 'numbers.txt'}") == [9301, 9305, 9306]
    assert fuzzing.problems({"outcome": "different", "info": "ok", "snapshot": "ok"}) == []


@pytest.mark.parametrize("number, trace", [(7530, 0), (7798, 2)])
def test_an_index_lacking_a_frame_array_is_refused_in_any_trace_of_a_recording(tmp_path, number, trace):
    # fuzz inputs of seed 1 among the 18 whose `gpuviz snapshot` ended in "saved frames lack ..." on e96b948
    # (the fuzz bench of 2026-12-01 on e96b948, bench/results/fuzz_2026-12-01_final_c.md in git history): 7530 lost frames.phase from trace 0's index; 7798 lost one
    # from trace 2 of a recording, which the snapshot (trace 0) never showed but the launch list opens
    seeds, _which, desc, path = _fuzz_input(tmp_path, number)
    assert f"json delete ('traces', {trace}, 'index', 'arrays'" in desc
    with pytest.raises(TraceFileError, match=rf"trace {trace} .*index: lacks frames\."):
        load_traces(path)


@pytest.mark.parametrize("number", [14151, 17734, 18177])
def test_a_file_whose_only_trace_was_cut_from_its_list_is_refused_at_load(tmp_path, number):
    # fuzz inputs of seed 1 that deleted the one entry of meta.json's traces: the file loaded as no trace at
    # all and then `gpuviz snapshot` (and File > Open) had nothing to show ("holds no traces", exit 1). gpuviz
    # never writes such a file, so the loader refuses it and says why
    seeds, _which, desc, path = _fuzz_input(tmp_path, number)
    assert "json delete ('traces', 0)" in desc
    with pytest.raises(TraceFileError, match="lists no trace"):
        load_traces(path)
