"""Exports: GIF and MP4 with the frame count and size asked for, PNG/SVG, Perfetto JSON, the CLI."""

import json

import imageio.v2 as imageio_v2
import imageio.v3 as iio
import numpy as np
import pytest

import gpuviz
from gpuviz.cli import main
from gpuviz.export import export, trace_events
from gpuviz.model.frames import Frames
from kernels import get_kernel


@pytest.fixture(scope="module")
def trace():
    spec = get_kernel("transpose_shared")
    args = spec.make_args(40, np.random.default_rng(0))
    grid, block = spec.launch(40, spec.default_block)
    return gpuviz.capture(spec.kernel, grid, block, *args, backend="cpu")


def test_gif_has_the_frames_and_size_asked_for(trace, tmp_path, qapp):
    out = export(trace, tmp_path / "conflict.gif", "gif", frames="72:84", view="shared", size=(320, 240),
                 progress=False)
    frames = iio.imread(out, index=None)
    assert frames.shape[:3] == (12, 240, 320)


def test_mp4_has_the_frames_and_size_asked_for(trace, tmp_path, qapp):
    out = export(trace, tmp_path / "launch.mp4", "mp4", frames="-10:", size=(640, 360), progress=False)
    reader = imageio_v2.get_reader(out)
    try:
        assert reader.count_frames() == 10
        assert reader.get_data(0).shape == (360, 640, 3)
    finally:
        reader.close()
    with pytest.raises(ValueError, match="even width and height"):
        export(trace, tmp_path / "odd.mp4", "mp4", frames="0:2", size=(641, 360), progress=False)


def test_png_and_svg_of_a_view(trace, tmp_path, qapp):
    png = export(trace, tmp_path / "v.png", "png", frame=80, view="shared", size=(400, 300))
    assert iio.imread(png).shape[:2] == (300, 400)
    svg = export(trace, tmp_path / "w.svg", "svg", frame=80, size=(800, 600))
    text = svg.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text and 'viewBox="0 0 800 600"' in text


def test_perfetto_json_holds_every_frame_and_barrier(trace, tmp_path):
    frames = Frames(trace)
    trace.launch.timings["capture"] = 0.25
    try:
        out = export(trace, tmp_path / "t.json", "perfetto")
    finally:
        del trace.launch.timings["capture"]
    data = json.loads(out.read_text())
    ev = data["traceEvents"]
    slices = [e for e in ev if e["ph"] == "X" and e["cat"] == "frame"]
    assert len(slices) == frames.n_frames
    first = slices[0]
    assert (first["pid"], first["tid"], first["ts"], first["dur"]) == (1, 0, 0.0, 1.0)
    conflict = [e for e in slices if e["args"].get("ways") == 32]
    assert conflict and "32-way bank conflict" in conflict[0]["args"]["caption"]
    bars = [e for e in ev if e["ph"] == "i"]
    assert [e["ts"] for e in bars] == [float(f) for f in frames.barrier_complete_frames]
    host = [e for e in ev if e.get("cat") == "timing"]
    assert [e["name"] for e in host] == list(trace.launch.timings) + ["capture"]
    assert host[-1]["dur"] == 250000.0 and host[-1]["args"] == {"seconds": 0.25}
    assert host[-1]["ts"] == pytest.approx(sum(e["dur"] for e in host[:-1]))  # stages one after another
    names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    assert {"block (0,0)", "block (1,1)", "host"} <= names


def test_perfetto_uses_recorded_time_when_the_trace_has_it(trace):
    from gpuviz.model.trace import Trace

    cols = dict(trace.columns)
    n = len(trace)
    cols["sm"] = (trace.block % 2).astype(np.int16)
    cols["time"] = 1000 + np.arange(n, dtype=np.int64) * 10
    timed = Trace(trace.launch, cols)
    data = trace_events(timed, captions=False)
    blocks = [e for e in data["traceEvents"] if e.get("cat") == "block"]
    assert len(blocks) == 4 and all(e["pid"] in (1000, 1001) for e in blocks)
    frames = [e for e in data["traceEvents"] if e.get("cat") == "frame"]
    assert len(frames) == Frames(timed).n_frames and frames[0]["ts"] == 0.0


def test_cli_export(tmp_path, capsys, qapp):
    out = tmp_path / "va.gif"
    assert main(["export", "vector_add", "--format", "gif", "--frames", "1:5", "--size", "200x150", "--quiet",
                 "-o", str(out)]) == 0
    assert iio.imread(out, index=None).shape[:3] == (5, 150, 200)
    assert main(["export", "vector_add", "--format", "gif", "--frames", "9:3", "-o", str(out)]) == 1
    assert "select nothing" in capsys.readouterr().err
    js = tmp_path / "va.json"
    assert main(["export", "vector_add", "--format", "perfetto", "--frames", "1:40", "-o", str(js)]) == 0
    assert len([e for e in json.loads(js.read_text())["traceEvents"] if e.get("cat") == "frame"]) == 40


def test_the_progress_bar_ends_when_the_film_is_written_not_when_the_frames_are_drawn(tmp_path, monkeypatch, qapp):
    """Finding 23: a 60-frame GIF's bar reached 100% at 3 s, then the encoding ran 15 s more, silently."""
    import imageio.v3 as iio3
    import tqdm as tqdm_module

    from gpuviz.export.render import export_film

    bars = []
    real_tqdm = tqdm_module.tqdm

    class Bar(real_tqdm):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            bars.append(self)

    seen = {}
    real_imwrite = iio3.imwrite

    def imwrite(*a, **k):
        seen["at_encoding"] = (bars[-1].n, bars[-1].total, bars[-1].desc)
        return real_imwrite(*a, **k)

    monkeypatch.setattr(tqdm_module, "tqdm", Bar)
    monkeypatch.setattr(iio3, "imwrite", imwrite)
    from tests.test_acceptance import kernel_trace

    out = export_film(kernel_trace("vector_add"), tmp_path / "v.gif", frames="0:6", size=(200, 150), progress=True)
    assert out.exists()
    n, total, desc = seen["at_encoding"]
    assert n < total and "encoding" in desc  # not at 100% while the GIF is still being written
    assert bars[-1].n == bars[-1].total
