"""Nothing is said saved that is not (issue 23): `gpuviz run`, `gpuviz capture`, the window's Save, the recording
written as launches finish and every export check what they wrote before they report it, and a launch that
cannot be saved or read back is an error naming the launch and the reason, never a silent drop.

The loader is made to refuse one launch's trace (monkeypatched here, or in the worker through a
sitecustomize on its PYTHONPATH), so these paths are tested whatever the loader itself accepts.
"""

import json
import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import pytest

import gpuviz
from gpuviz.cli import main
from gpuviz.export.verify import WrittenFileError, check_export
from gpuviz.model import tracefile
from gpuviz.model.recording import Recording
from gpuviz.model.tracefile import TraceFileError, save_traces

SCRIPTS = Path(__file__).resolve().parent / "user_scripts"
RACE = SCRIPTS / "counter_race.py"  # launch 1: k1 (racing), launch 2: k2 (atomic)


def refuse_kernel(monkeypatch, kernel: str, where):
    """Make the loader refuse the trace of ``kernel`` in the files ``where(path)`` picks, as a damaged file."""
    real = tracefile.load_traces

    def loader(path, *args, **kwargs):
        traces = real(path, *args, **kwargs)
        for i, tr in enumerate(traces):
            if tr.launch.kernel_name == kernel and where(Path(path)):
                raise TraceFileError(f"{path}: trace {i} ({kernel}): refused by the test")
        return traces

    monkeypatch.setattr(tracefile, "load_traces", loader)


def _run(capfd, script, out):
    status = main(["run", str(script), "--backend", "cpu", "-o", str(out)])
    captured = capfd.readouterr()
    return status, captured.out, captured.err


def test_a_launch_whose_trace_does_not_read_back_is_listed_counted_and_reported(monkeypatch, capfd, tmp_path):
    # the worker's file of launch 1 is refused when this process reads it back (what a kill mid-save leaves)
    refuse_kernel(monkeypatch, "k1", lambda p: p.name.startswith("launch_"))
    out = tmp_path / "race.gpuviz"
    status, stdout, stderr = _run(capfd, RACE, out)
    assert status == 1  # the recording lacks a launch the program made: not a success
    assert "racy" in stdout and "atomic 64" in stdout  # the program itself ran to its end
    assert "gpuviz: counter_race.py: 2 launch(es): 1 traced and saved, 0 untraced, 1 failed to save" in stdout
    assert "NOT SAVED: its trace could not be read back" in stdout and "refused by the test" in stdout
    assert f"launch 1 (k1) is not in {out}" in stderr
    rec = gpuviz.load(out)
    assert isinstance(rec, Recording) and [t.launch.kernel_name for t in rec] == ["k2"]
    assert [(la.number, la.kernel, la.category) for la in rec.launches] == [(1, "k1", "unsaved"), (2, "k2", "saved")]
    assert "refused by the test" in rec.launches[0].save_error
    monkeypatch.undo()
    assert main(["info", str(out), "--json"]) == 0
    info = json.loads(capfd.readouterr().out)
    assert [(la["number"], la["saved"], la["in_file"]) for la in info["launches"]] == [(1, False, False), (2, True, True)]
    assert info["summary"] == "2 launch(es): 1 traced and saved, 0 untraced, 1 failed to save"
    assert main(["snapshot", str(out), "--launch", "1", "-o", str(tmp_path / "x.png")]) == 2
    assert "launch 1 (k1) is not in the file" in capfd.readouterr().err


def test_the_recording_that_would_not_reopen_is_saved_without_that_launch_and_says_so(monkeypatch, capfd, tmp_path):
    # every launch's own file reads back; the recording written as they finish is refused with k2 in it
    refuse_kernel(monkeypatch, "k2", lambda p: not p.name.startswith("launch_"))
    out = tmp_path / "race.gpuviz"
    status, stdout, stderr = _run(capfd, RACE, out)
    assert status == 1
    assert "2 launch(es): 1 traced and saved, 0 untraced, 1 failed to save" in stdout
    assert "launch 2 (k2) is not in" in stderr and "would not load back" in stderr
    monkeypatch.undo()
    rec = gpuviz.load(out)
    assert [t.launch.kernel_name for t in rec] == ["k1"]
    assert [la.category for la in rec.launches] == ["saved", "unsaved"]


def test_a_trace_the_worker_cannot_save_is_named_and_the_program_goes_on(monkeypatch, capfd, tmp_path):
    # inside the worker: its save of launch 1 fails (a full disk, a trace that would not load back)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import gpuviz.model.tracefile as tf\n"
        "real = tf.save_traces\n"
        "def save_traces(path, traces, *a, **kw):\n"
        "    if any(t.launch.kernel_name == 'k1' for t in traces):\n"
        "        raise tf.TraceFileError(f'cannot save {path}: the disk is full (the test says so)')\n"
        "    return real(path, traces, *a, **kw)\n"
        "tf.save_traces = save_traces\n", encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(site))
    out = tmp_path / "race.gpuviz"
    status, stdout, stderr = _run(capfd, RACE, out)
    assert status == 1
    assert "atomic 64" in stdout  # the program went on past the launch whose trace was lost
    assert "2 launch(es): 1 traced and saved, 0 untraced, 1 failed to save" in stdout
    assert "launch 1 (k1): its trace could not be saved: cannot save" in stderr  # the worker's own word
    assert "launch 1 (k1) is not in" in stderr and "the disk is full" in stderr
    rec = gpuviz.load(out)
    assert [la.category for la in rec.launches] == ["unsaved", "saved"]


def test_the_window_lists_a_launch_not_in_the_file_with_its_reason(monkeypatch, capfd, tmp_path, qtbot):
    from gpuviz.ui.views.launches import load_recording
    from gpuviz.ui.window import MainWindow

    refuse_kernel(monkeypatch, "k1", lambda p: p.name.startswith("launch_"))
    out = tmp_path / "race.gpuviz"
    _run(capfd, RACE, out)
    monkeypatch.undo()
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    assert load_recording(w, out)
    ll = w.launch_list_dock.launch_list
    assert ll.tree.topLevelItemCount() == 2
    first, second = ll.tree.topLevelItem(0), ll.tree.topLevelItem(1)
    assert first.text(1) == "k1" and first.text(5).startswith("NOT SAVED: its trace could not be read back")
    assert second.text(5) == "traced"
    assert not ll.error.isHidden() and "launch 1 (k1) is not in the recording" in ll.error.text()
    assert w.session.trace.launch.kernel_name == "k2"  # the first launch there is to show
    ll.tree.setCurrentItem(first)
    assert "launch 1 (k1) is not in the recording" in w.statusBar().currentMessage()
    w.close()


def test_capture_says_nothing_saved_when_the_file_would_not_open(monkeypatch, capsys, tmp_path):
    refuse_kernel(monkeypatch, "vector_add", lambda p: True)
    out = tmp_path / "va.gpuviz"
    assert main(["capture", "vector_add", "--size", "64", "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "trace 0 (vector_add): refused by the test" in err and "would not open again" in err
    assert not out.exists() and not list(tmp_path.iterdir())  # nothing at the path, no temporary left


def test_the_windows_save_reports_only_a_file_that_reads_back(monkeypatch, tmp_path, qtbot):
    from gpuviz.ui import window as window_mod
    from gpuviz.ui import window_files  # the window's Save trace… (its QFileDialog)

    trace = gpuviz.capture(_kernel(), 1, 32, np.zeros(32, np.float32))
    w = window_mod.MainWindow()
    qtbot.addWidget(w)
    w.set_trace(trace, "k")
    good, bad = tmp_path / "good.gpuviz", tmp_path / "bad.gpuviz"
    monkeypatch.setattr(window_files.QFileDialog, "getSaveFileName", lambda *a, **k: (str(good), ""))
    w.save_dialog()
    assert "read back" in w.statusBar().currentMessage() and len(gpuviz.load(good)) == len(trace)
    refuse_kernel(monkeypatch, "fill", lambda p: True)
    monkeypatch.setattr(window_files.QFileDialog, "getSaveFileName", lambda *a, **k: (str(bad), ""))
    w.statusBar().clearMessage()
    w.save_dialog()
    assert not bad.exists() and "saved" not in w.statusBar().currentMessage()
    assert "Could not save fill" in w.launch_panel.error.text() and "refused by the test" in w.launch_panel.error.text()
    w.close()


# ---- exports ------------------------------------------------------------------------------------------------
def _frames(n, w=64, h=48):
    return [np.full((h, w, 3), 40 * k % 255, np.uint8) for k in range(n)]


def test_exports_read_back_what_they_hold(tmp_path):
    import imageio.v2 as imageio

    gif = tmp_path / "a.gif"
    imageio.mimsave(gif, _frames(4), format="GIF", duration=0.1)
    assert check_export(gif, "gif", size=(64, 48), n_frames=4) == "4 frame(s) of 64x48"
    with pytest.raises(WrittenFileError, match="holds 4 frame\\(s\\), not 5"):
        check_export(gif, "gif", size=(64, 48), n_frames=5)
    with pytest.raises(WrittenFileError, match="frames are 64x48, not 32x32"):
        check_export(gif, "gif", size=(32, 32))
    mp4 = tmp_path / "a.mp4"
    imageio.mimsave(mp4, _frames(6), format="FFMPEG", fps=8, macro_block_size=1)
    assert check_export(mp4, "mp4", size=(64, 48), n_frames=6) == "6 frame(s) of 64x48"
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(mp4.read_bytes()[: mp4.stat().st_size // 3])
    with pytest.raises(WrittenFileError, match="cut.mp4: the mp4 file written does not read back"):
        check_export(cut, "mp4", n_frames=6)
    png = tmp_path / "a.png"
    imageio.imwrite(png, _frames(1)[0])
    assert check_export(png, "png", size=(64, 48)) == "a picture of 64x48"
    png.write_bytes(png.read_bytes()[:40])
    with pytest.raises(WrittenFileError, match="a.png"):
        check_export(png, "png")
    (tmp_path / "e.json").write_text('{"traceEvents": []}')
    with pytest.raises(WrittenFileError, match="no 'traceEvents'"):
        check_export(tmp_path / "e.json", "perfetto")
    (tmp_path / "p.html").write_text('<html><body><script id="gpuviz-data">not base64!</script></body></html>')
    with pytest.raises(WrittenFileError, match="embedded data does not decode"):
        check_export(tmp_path / "p.html", "html")
    with pytest.raises(WrittenFileError, match="was not written"):
        check_export(tmp_path / "none.svg", "svg")


def test_an_export_that_does_not_read_back_is_an_error_and_leaves_nothing(monkeypatch, capsys, tmp_path):
    import imageio.v2 as imageio

    trace = gpuviz.capture(_kernel(), 1, 32, np.zeros(32, np.float32))
    path = tmp_path / "t.gpuviz"
    save_traces(path, [trace])

    def short_film(trace, out, fmt, size=(1280, 720), **kw):  # an encoder that stopped after two frames
        imageio.mimsave(out, _frames(2, *size), format="GIF", duration=0.1)
        return out

    monkeypatch.setattr("gpuviz.ui.film.export", short_film)
    gif = tmp_path / "film.gif"
    assert main(["export", str(path), "--format", "gif", "--size", "96x64", "--quiet", "-o", str(gif)]) == 1
    err = capsys.readouterr().err
    assert f"{gif}: the gif file written does not read back: it holds 2 frame(s), not" in err
    assert not gif.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["t.gpuviz"]


def _kernel():
    from numba import cuda

    @cuda.jit
    def fill(out):
        out[cuda.threadIdx.x] = 1.0

    return fill

