"""A trace and what is derived from it (gpuviz.model.prepared): the trace never changes once made, one Prepared per
trace holds frames, phases, narration, reports and index, and a file's index is adopted whoever asks first."""

from __future__ import annotations


import numpy as np
import pytest

from gpuviz.model import analysis, fileformat
from gpuviz.model.frames import Frames
from gpuviz.model.index import _report_parts
from gpuviz.model.narration import Narrator
from gpuviz.model.prepared import Prepared, has_index, prepare
from gpuviz.model.trace import ArrayInfo, EventKind, Launch, Trace
from gpuviz.model.tracefile import load_trace, save_traces
from gpuviz.model.validate_index import _fits
from tests.ui_traces import matmul_tiled_trace


@pytest.fixture(scope="module")
def trace():
    return matmul_tiled_trace(32, 16)


def test_a_trace_does_not_change_once_made(trace):
    with pytest.raises(AttributeError, match="does not change once made"):
        trace.saved_frames = {}
    with pytest.raises(AttributeError, match="does not change once made"):
        trace.launch = trace.launch
    assert isinstance(trace.phase, np.ndarray)  # what a trace derives for itself it still keeps (cached_property)


def test_a_launch_does_not_change_once_made(trace):
    """Issue 24: app.py set launch.source_file, captures wrote launch.meta[...] and appended warnings after the
    trace was made. A launch is now made whole: writes raise, its lists are tuples and its dicts read-only."""
    import dataclasses

    L = trace.launch
    with pytest.raises(AttributeError, match="does not change once made"):
        L.source_file = "elsewhere.py"
    with pytest.raises(AttributeError, match="does not change once made"):
        del L.kernel_name
    with pytest.raises(TypeError):
        L.meta["bundled_kernel"] = {"name": "x"}
    with pytest.raises(TypeError):
        L.timings["capture"] = 0.25
    with pytest.raises(AttributeError):
        L.warnings.append("late")
    with pytest.raises(AttributeError):
        L.arrays.append(L.arrays[0])
    given = {"run": "mine"}
    made = Launch("k", grid=2, block=32, meta=given)
    given["run"] = "changed later"  # the dict it was made from is the caller's
    assert made.meta["run"] == "mine"
    moved = dataclasses.replace(L, source_file="elsewhere.py")
    assert moved.source_file == "elsewhere.py" and L.source_file != "elsewhere.py" and moved.sites == L.sites
    again = trace.with_launch(warnings=("first", *L.warnings))
    assert again is not trace and again.launch.warnings[0] == "first" and trace.launch.warnings == L.warnings
    assert all(again.field(n) is trace.field(n) for n in trace.recorded_fields)  # the events are shared
    assert Launch.from_json(L.to_json()) == L


def test_a_relaunched_trace_keeps_its_files_index(trace, tmp_path, monkeypatch):
    """A loaded trace given a new launch (the launch list's record of it, a run's status) is a new trace: its
    file's index and CRCs come along, so its frames are adopted, not sorted again."""
    from gpuviz.model.prepared import relaunched

    path = tmp_path / "mm.gpuviz"
    save_traces(path, [trace])
    back = load_trace(path)
    monkeypatch.setattr(Frames, "_build", lambda *a, **k: pytest.fail("the relaunched trace was sorted again"))
    moved = relaunched(back, meta={**back.launch.meta, "run": {"status": "exited"}})
    p = prepare(moved)
    assert p.source == "file" and p.index is prepare(back).index and p.crcs == prepare(back).crcs
    assert p.frames.n_frames == prepare(back).frames.n_frames and moved.launch.meta["run"]["status"] == "exited"
    assert "run" not in back.launch.meta


def test_the_loader_finds_the_kernels_file_where_this_installation_keeps_it(trace, tmp_path):
    """What app.py did by writing launch.source_file after loading: the loader builds the launch with it."""
    path = tmp_path / "mm.gpuviz"
    save_traces(path, [trace.with_launch(source_file="/elsewhere/kernels/mm.py")])
    (tmp_path / "mm.py").write_text("# the kernel\n")
    assert load_trace(path).launch.source_file == "/elsewhere/kernels/mm.py"
    assert load_trace(path, source_folder=tmp_path).launch.source_file == str(tmp_path / "mm.py")
    assert load_trace(path, source_folder=tmp_path / "none").launch.source_file == "/elsewhere/kernels/mm.py"


def test_one_prepared_per_trace(trace):
    p = prepare(trace)
    assert isinstance(p, Prepared) and prepare(trace) is p and p.trace is trace
    assert p.frames is prepare(trace).frames  # sorted once, whoever asks
    with pytest.raises(TypeError):
        prepare(p)


@pytest.mark.parametrize("first", ["frames", "analysis", "narrator", "frames_of_a_view"])
def test_a_files_index_is_adopted_whoever_asks_first(trace, tmp_path, monkeypatch, first):
    path = tmp_path / "mm.gpuviz"
    save_traces(path, [trace])
    back = load_trace(path)

    def no_sorting(*a, **k):
        raise AssertionError("a trace whose file holds its index must not be sorted or analysed again")

    monkeypatch.setattr(Frames, "_build", no_sorting)
    monkeypatch.setattr(analysis, "_build_prep", no_sorting)
    monkeypatch.setattr(Narrator, "_compute", no_sorting)
    if first == "analysis":
        analysis.shared_banks(back)
    elif first == "narrator":
        Narrator(prepare(back)).caption(0)
    elif first == "frames_of_a_view":
        prepare(back).events_of_thread(0, 3)
    p = prepare(back)
    assert has_index(back) and p.source == "file" and p.crcs
    assert p.frames.n_frames > 0
    np.testing.assert_array_equal(p.phase, p.index.arrays["trace.phase"])
    assert "phase" not in back.__dict__ and "thread_order" not in back.__dict__
    monkeypatch.undo()
    fresh = Frames(trace)
    np.testing.assert_array_equal(p.frames.perm, fresh.perm)
    np.testing.assert_array_equal(p.frames.offsets, fresh.offsets)


def test_frames_of_a_trace_alone_are_sorted(trace, tmp_path):
    path = tmp_path / "mm.gpuviz"
    save_traces(path, [trace])
    back = load_trace(path)
    own = Frames(back)  # not the prepared trace's: built from the events
    assert own is not prepare(back).frames and own.saved_narration is None
    np.testing.assert_array_equal(own.perm, prepare(back).frames.perm)


def test_the_report_json_form_is_what_the_analyses_write():
    """fileformat.REPORT_JSON is what a stored report's JSON is checked against (format checks run no analysis):
    the analyses' JSON of a launch with every kind of event fits it, and it names every JSON field they write."""
    K = EventKind
    kinds = [K.START, K.GLOBAL_LOAD, K.SHARED_STORE, K.BARRIER, K.SHARED_LOAD, K.ATOMIC, K.GLOBAL_STORE, K.WARP_OP,
             K.END]
    arrays = [-1, 0, 1, -1, 1, 0, 0, -1, -1]
    launch = Launch("reference", grid=(2,), block=(32,), arrays=[ArrayInfo("g", (64,), "float32"),
                    ArrayInfo("s", (32,), "float32", space="shared")], source="\n" * 20, first_line=1)
    gt = np.repeat(np.arange(64), len(kinds))
    a = np.tile(arrays, 64)
    ev = {"block": gt // 32, "thread": gt % 32, "seq": np.tile(np.arange(len(kinds)), 64),
          "kind": np.tile(np.array(kinds, dtype=np.uint8), 64), "array": a,
          "index": np.where(a == 0, gt % 64, np.where(a == 1, (gt * 2) % 32, -1)),
          "line": np.tile(np.arange(2, 2 + len(kinds)), 64)}
    tr = Trace(launch, ev)
    for name in analysis.REPORT_NAMES:
        js = _report_parts(getattr(analysis, name)(tr))[1]
        written = {f: part["json"] for f, part in js.items() if "json" in part}
        assert set(written) == set(fileformat.REPORT_JSON[name]), name
        for f, v in written.items():
            assert _fits(v, fileformat.REPORT_JSON[name][f]), (name, f)


def test_checking_a_file_runs_no_analysis():
    """The format checks (validate, validate_index) reach neither the analyses nor the narration through any chain
    of imports, in-function ones included (grimp, import-linter's graph; the pyproject contract says the same).
    Importing them in a fresh interpreter no longer shows it: ``import gpuviz.model.validate`` runs the package's
    front door first, and ``gpuviz.load`` brings the whole model."""
    import grimp

    graph = grimp.build_graph("gpuviz", include_external_packages=False)
    for checker in ("gpuviz.model.validate", "gpuviz.model.validate_index"):
        for derived in ("gpuviz.model.analysis", "gpuviz.model.narration", "gpuviz.model.prepared"):
            assert graph.find_shortest_chain(importer=checker, imported=derived) is None, (checker, derived)


def test_a_trace_no_one_holds_goes_with_what_was_derived_from_it(trace, tmp_path):
    import gc
    import weakref

    path = tmp_path / "mm.gpuviz"
    save_traces(path, [trace])
    back = load_trace(path)
    p = prepare(back)
    frames = p.frames
    Narrator(p).caption(0)
    analysis.races(back)
    gone = weakref.ref(back), weakref.ref(p), weakref.ref(frames)
    del back, p, frames
    gc.collect()
    assert [r() for r in gone] == [None, None, None]


def test_frames_outlive_the_prepared_object_that_made_them(trace):
    tr = Trace(trace.launch, {k: trace.field(k) for k in trace.recorded_fields})
    frames = prepare(tr).frames  # the Prepared goes at once; the frames stay in use
    import gc

    gc.collect()
    assert prepare(tr).frames is frames


def test_the_barrier_timeline_of_a_saved_trace_reads_the_index_phases(trace, tmp_path):
    """The barrier view's timeline took trace.phase, which the old apply_index had set from the file: now it asks
    the frames, whose event phases are the index's (a whole-trace sort was seconds of GUI stall on 16.8M events)."""
    from gpuviz.style import render

    path = tmp_path / "mm.gpuviz"
    save_traces(path, [trace])
    back = load_trace(path)
    got = render.barrier_timeline(prepare(back), 1)
    assert "phase" not in back.__dict__ and "thread_order" not in back.__dict__
    want = render.barrier_timeline(prepare(trace), 1)  # the in-memory trace's frames: sorted, no index
    np.testing.assert_array_equal(got.phase_start, want.phase_start)
    np.testing.assert_array_equal(got.warps, want.warps)


def test_the_front_door_saves_what_it_loads(trace, tmp_path):
    """``Trace.save`` went with the model's import cycle (the trace no longer knows about files): ``gpuviz.save``
    is the Python API's way to write what ``gpuviz.load`` reads, one trace or several."""
    import gpuviz

    one = tmp_path / "one.gpuviz"
    gpuviz.save(one, trace)
    back = gpuviz.load(one)
    assert isinstance(back, Trace) and back.launch.kernel_name == trace.launch.kernel_name
    assert np.array_equal(back.field("index"), trace.field("index"))
    two = tmp_path / "two.gpuviz"
    gpuviz.save(two, [trace, trace])
    rec = gpuviz.load(two)
    assert len(rec.traces) == 2 and len(rec.traces[1]) == len(trace)
    assert not hasattr(Trace, "save") and "save" in gpuviz.__all__


#: where a trace is opened, so where it is prepared (``prepare(``): the loader and saver of files, the one that
#: makes a bundled kernel's trace and its index, the window's session and its file-open job, the lesson player,
#: and the exports' entry points (the command line, the page, the timeline, the notebook, pictures and films).
#: Everything else (views, the narrator, the pages' and timeline's builders) takes the Prepared they hand on.
PREPARE_ENTRY_POINTS = {
    "gpuviz/model/prepared.py", "gpuviz/model/tracefile.py", "gpuviz/runner/bundled.py", "gpuviz/ui/session.py",
    "gpuviz/ui/open_job.py", "gpuviz/lessons/player.py", "gpuviz/cli/export.py", "gpuviz/export/html/__init__.py",
    "gpuviz/export/perfetto.py", "gpuviz/export/inline.py", "gpuviz/ui/film.py",
}


def _modules_calling(function: str, module: str) -> set[str]:
    """The gpuviz modules that call ``module``'s ``function`` (under any name they import it as)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    out = set()
    for path in sorted((root / "gpuviz").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {function} if path.stem == module.rsplit(".", 1)[-1] else set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").rsplit(".", 1)[-1] == module.rsplit(".", 1)[-1]:
                names |= {a.asname or a.name for a in node.names if a.name == function}
        called = any(isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names
                     for node in ast.walk(tree))
        if called:
            out.add(path.relative_to(root).as_posix())
    return out


def test_a_trace_is_prepared_only_where_it_is_opened():
    """Issue 24: views, exports, the narrator and the lesson player each called prepare(trace) for themselves.
    Now whoever opens a trace prepares it once and hands the Prepared on."""
    assert _modules_calling("prepare", "gpuviz.model.prepared") == PREPARE_ENTRY_POINTS
    # frames are made in one place (a Prepared's, or the index's builder before there is one)
    assert _modules_calling("Frames", "gpuviz.model.frames") == {"gpuviz/model/prepared.py", "gpuviz/model/index.py"}
