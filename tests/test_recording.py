"""A recording is a first-class object (issue 23): every launch a program made is in its recording file, and
`gpuviz.load`, `gpuviz info`, `gpuviz snapshot/export --launch N` and the window's launch list see them all.

The programs run once each with `gpuviz run` (cpu backend) in a module fixture: the counter race of CUDA
Python tutorials (tests/user_scripts/counter_race.py: a race across blocks, then the atomic count) and a
program of 20 launches, half of them racing within a block (shared memory) or across blocks (global memory)
(tests/user_scripts/twenty_launches.py).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import pytest

import gpuviz
from gpuviz.cli import main
from gpuviz.model.recording import RecordedLaunch, Recording, load_recording
from gpuviz.model.trace import Trace
from gpuviz.model.tracefile import TraceFileError, read_manifest, save_traces

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = Path(__file__).resolve().parent / "user_scripts"
RACY = {2, 4, 6, 8, 10, 12, 14, 16, 18, 20}  # twenty_launches.py: every odd k, launch number k + 1
ACROSS_BLOCKS = {2, 6, 10, 14, 18}  # count_blocks: thread 0 of every block bumps counter[0]
WITHIN_A_BLOCK = RACY - ACROSS_BLOCKS  # last_writer: every thread of a block writes one shared slot


def _gpuviz_run(script, out):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    return subprocess.run([sys.executable, "-m", "gpuviz", "run", str(script), "--backend", "cpu", "-o", str(out)],
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture(scope="module")
def counter_race(tmp_path_factory):
    out = tmp_path_factory.mktemp("race") / "race.gpuviz"
    return _gpuviz_run(SCRIPTS / "counter_race.py", out), out


@pytest.fixture(scope="module")
def twenty(tmp_path_factory):
    out = tmp_path_factory.mktemp("twenty") / "twenty.gpuviz"
    return _gpuviz_run(SCRIPTS / "twenty_launches.py", out), out


# ---- the counter race: the racing launch is not lost ----------------------------------------------------------
def test_the_counter_race_keeps_its_racing_launch(counter_race):
    proc, out = counter_race
    assert proc.returncode == 0, proc.stderr
    assert "racy" in proc.stdout and "atomic 64" in proc.stdout  # the program's own results, unchanged
    assert "2 launch(es): 2 traced and saved, 0 untraced, 0 failed to save" in proc.stdout
    rec = gpuviz.load(out)
    assert isinstance(rec, Recording) and len(rec) == 2
    assert [t.launch.kernel_name for t in rec] == ["k1", "k2"]
    assert [la.number for la in rec.launches] == [1, 2] and all(la.category == "saved" for la in rec.launches)
    assert rec.script == str(SCRIPTS / "counter_race.py") and rec.status == "ok" and rec.backend == "cpu"


def test_info_json_lists_the_racing_launch_and_the_atomic_one(counter_race, capsys):
    _proc, out = counter_race
    assert main(["info", str(out), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert [la["kernel"] for la in info["launches"]] == ["k1", "k2"]
    assert [la["races"] for la in info["launches"]] == [1, 0]  # the race across blocks, then none
    assert info["counts"] == {"saved": 2, "untraced": 0, "unsaved": 0, "stopped": 0}
    assert info["recording"]["script"].endswith("counter_race.py")


# ---- twenty launches, half of them racing ------------------------------------------------------------------
def test_gpuviz_run_of_twenty_launches_saves_all_twenty(twenty):
    proc, out = twenty
    assert proc.returncode == 0, proc.stderr
    assert "20 launch(es): 20 traced and saved, 0 untraced, 0 failed to save" in proc.stdout
    assert sum(1 for ln in proc.stdout.splitlines() if ln.strip().startswith("launch ")) == 20
    manifest = read_manifest(out)
    assert len(manifest["traces"]) == 20 and len(manifest["recording"]["launches"]) == 20


def test_gpuviz_load_returns_a_recording_of_twenty(twenty):
    rec = gpuviz.load(twenty[1])
    assert isinstance(rec, Recording) and len(rec) == 20 and len(rec.launches) == 20
    assert all(isinstance(t, Trace) and len(t) for t in rec)
    assert [la.number for la in rec.launches] == list(range(1, 21))
    assert rec[6].launch.kernel_name == "vector_add" and rec[-1].launch.kernel_name == "last_writer"
    assert [t.launch.kernel_name for t in rec[1:4]] == ["count_blocks", "vector_add", "last_writer"]
    la, tr = rec.launch(7)
    assert la.number == 7 and tr is rec[6]
    with pytest.raises(ValueError, match="holds 20 launches, numbered 1..20"):
        rec.launch(21)


def test_info_lists_all_twenty_with_their_races_in_json(twenty, capsys):
    assert main(["info", str(twenty[1]), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    launches = info["launches"]
    assert [la["number"] for la in launches] == list(range(1, 21))
    racing = {la["number"] for la in launches if la["races"]}
    assert racing == RACY
    assert {la["kernel"] for la in launches if la["number"] in ACROSS_BLOCKS} == {"count_blocks"}
    assert {la["kernel"] for la in launches if la["number"] in WITHIN_A_BLOCK} == {"last_writer"}
    assert all(la["saved"] and la["in_file"] and la["n_events"] > 0 for la in launches)
    assert info["summary"] == "20 launch(es): 20 traced and saved, 0 untraced, 0 failed to save"


def test_info_lists_all_twenty_in_text(twenty, capsys):
    assert main(["info", str(twenty[1])]) == 0
    text = capsys.readouterr().out
    heads = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("launch ")]
    assert [h.split(":")[0] for h in heads] == [f"launch {k}" for k in range(1, 21)]
    assert "20 launch(es): 20 traced and saved" in text.splitlines()[0]
    assert text.count("races: 1") + text.count("races: 2") == 10


def test_info_launch_7_describes_that_launch_only(twenty, capsys):
    assert main(["info", str(twenty[1]), "--launch", "7", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["number"] == 7 and info["kernel"] == "vector_add" and info["races"] == 0
    assert main(["info", str(twenty[1]), "--launch", "8"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("launch 8: last_writer") and "launch 7" not in text


@pytest.mark.parametrize("command", ["info", "snapshot", "export"])
def test_launch_out_of_range_says_how_many_launches_the_file_holds(twenty, tmp_path, command, capsys):
    extra = {"info": [], "snapshot": ["-o", str(tmp_path / "x.png")],
             "export": ["--format", "perfetto", "-o", str(tmp_path / "x.json")]}[command]
    assert main([command, str(twenty[1]), "--launch", "21", *extra]) != 0
    err = capsys.readouterr().err
    assert "--launch 21" in err and "holds 20 launches, numbered 1..20" in err
    assert not (tmp_path / "x.png").exists() and not (tmp_path / "x.json").exists()


def test_snapshot_and_export_of_launch_7(twenty, tmp_path, capsys):
    import imageio.v3 as iio

    png = tmp_path / "seven.png"
    assert main(["snapshot", str(twenty[1]), "--launch", "7", "--view", "grid", "--size", "640x360",
                 "-o", str(png)]) == 0
    assert "a picture of" in capsys.readouterr().out
    assert iio.imread(png).ndim == 3
    timeline = tmp_path / "eight.json"
    assert main(["export", str(twenty[1]), "--launch", "8", "--format", "perfetto", "-o", str(timeline)]) == 0
    assert json.loads(timeline.read_text())["otherData"]["kernel"] == "last_writer"


def test_the_window_lists_all_twenty_launches(twenty, qtbot):
    from gpuviz.ui.views.launches import load_recording as open_in_window
    from gpuviz.ui.views.launches import needs_launch_list
    from gpuviz.ui.window import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    w.resize(1280, 720)
    w.show()
    assert needs_launch_list(twenty[1])
    assert open_in_window(w, twenty[1])
    ll = w.launch_list_dock.launch_list
    assert ll.tree.topLevelItemCount() == 20
    assert [ll.tree.topLevelItem(r).text(0) for r in range(20)] == [str(k) for k in range(1, 21)]
    assert all(ll.tree.topLevelItem(r).text(5) == "traced" for r in range(20))
    assert "20 launch(es): 20 traced and saved" in ll.title.text()
    ll.tree.setCurrentItem(ll.tree.topLevelItem(7))  # launch 8 on screen, and it replays
    assert w.session.trace.launch.kernel_name == "last_writer"
    last = w.session.frames.n_frames - 1
    w.session.set_frame(last)
    assert last > 0 and w.session.frame == last
    assert {vid: v.errors for vid, v in w.views.items() if v.errors} == {}
    w.close()


# ---- the object itself ---------------------------------------------------------------------------------------
def test_a_one_trace_file_still_loads_as_a_trace_and_info_keeps_its_keys(tmp_path, capsys):
    trace = gpuviz.capture(_race_kernel(), 2, 32, np.zeros(1, np.int32))
    path = tmp_path / "one.gpuviz"
    save_traces(path, [trace])
    back = gpuviz.load(path)
    assert isinstance(back, Trace) and len(back) == len(trace)
    assert main(["info", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["kernel"] == "k1" and info["races"] == 1 and info["threads"] == 64  # the keys it always had
    assert len(info["launches"]) == 1 and info["launches"][0]["number"] == 1
    assert "recording" not in info
    rec = load_recording(path)  # any file read as a recording: one launch
    assert len(rec) == 1 and rec.launches[0].category == "saved"


def test_in_process_recording_saves_its_metadata_and_loads_as_a_recording(tmp_path):
    k1 = _race_kernel()
    with gpuviz.recording(backend="cpu") as rec:
        k1[2, 32](np.zeros(1, np.int32))
        k1[1, 32](np.zeros(1, np.int32))
    path = rec.save(tmp_path / "nb.gpuviz")
    back = gpuviz.load(path)
    assert isinstance(back, Recording) and len(back) == 2
    assert back.status == "ok" and back.backend == "cpu"
    assert [la.number for la in back.launches] == [1, 2] and [la.trace for la in back.launches] == [0, 1]


def test_a_recording_entry_that_does_not_fit_its_traces_is_refused_naming_the_file(tmp_path):
    trace = gpuviz.capture(_race_kernel(), 1, 32, np.zeros(1, np.int32))
    bad = Recording([trace], [RecordedLaunch(number=1, kernel="k1", trace=0)])
    bad.launches.append(RecordedLaunch(number=2, kernel="k1", trace=5))  # points past the file's one trace
    from gpuviz.model.tracefile import save_traces

    path = tmp_path / "bad.gpuviz"
    save_traces(path, [trace], recording=bad.to_json())
    with pytest.raises(TraceFileError, match=r"bad\.gpuviz: recording: launch 2 \(k1\) points at trace 5"):
        gpuviz.load(path)
    save_traces(path, [trace], recording={"launches": [{"number": "one", "kernel": "k1"}]})
    with pytest.raises(TraceFileError, match=r"launches\[0\]: 'number' must be a whole number"):
        gpuviz.load(path)


def _race_kernel():
    from numba import cuda

    @cuda.jit
    def k1(c):
        c[0] += 1

    return k1


def test_info_piped_into_a_reader_that_stops_early_ends_quietly(twenty):
    """`gpuviz info REC | head -1` printed a BrokenPipeError traceback: the reader had gone when it wrote."""
    _proc, out = twenty
    read_end, write_end = os.pipe()
    info = subprocess.Popen([sys.executable, "-m", "gpuviz", "info", str(out)], stdout=write_end,
                            stderr=subprocess.PIPE, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    os.close(write_end)
    os.close(read_end)  # the reader is gone before gpuviz (still importing) writes its first line
    err = info.stderr.read().decode()
    assert info.wait(timeout=60) == 141, err
    assert "Traceback" not in err and "BrokenPipe" not in err, err
