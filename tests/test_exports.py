"""Exports: GIF and MP4 with the frame count and size asked for, PNG/SVG, Perfetto JSON, the CLI."""

import json

import imageio.v2 as imageio_v2
import imageio.v3 as iio
import numpy as np
import pytest

import gpuviz
from gpuviz.cli import main
from gpuviz.export import trace_events
from gpuviz.ui.film import export
from gpuviz.model.frames import Frames
from gpuviz.model.prepared import prepare
from gpuviz.catalog import get_kernel


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
    out = export(trace.with_launch(timings={**trace.launch.timings, "capture": 0.25}), tmp_path / "t.json", "perfetto")
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
    data = trace_events(prepare(timed), captions=False)
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


def test_the_progress_bar_moves_with_the_encoding_and_ends_when_the_film_is_written(tmp_path, monkeypatch, qapp):
    """Finding 23: a 60-frame GIF's bar reached 100% at 3 s, then the encoding ran 15 s more, silently. Each frame
    is now encoded as it is drawn: when the bar counts k frames, k frames are in the file; 100% comes after the
    file is closed."""
    import tqdm as tqdm_module

    from gpuviz.export import gif as gif_module
    from gpuviz.ui.film import export_film

    bars = []
    real_tqdm = tqdm_module.tqdm

    class Bar(real_tqdm):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            bars.append(self)

    at_append, at_close = [], []
    real_append, real_close = gif_module.GifWriter.append, gif_module.GifWriter.close

    def append(self, rgb):
        at_append.append((bars[-1].n, self.frames))
        return real_append(self, rgb)

    def close(self):
        at_close.append((bars[-1].n, bars[-1].total, self.frames))
        return real_close(self)

    monkeypatch.setattr(tqdm_module, "tqdm", Bar)
    monkeypatch.setattr(gif_module.GifWriter, "append", append)
    monkeypatch.setattr(gif_module.GifWriter, "close", close)
    from tests.test_acceptance import kernel_trace

    out = export_film(kernel_trace("vector_add"), tmp_path / "v.gif", frames="0:6", size=(200, 150), progress=True)
    assert iio.imread(out, index=None).shape[:3] == (6, 150, 200)
    assert at_append == [(k, k) for k in range(6)]  # frame k is encoded while the bar shows k done
    assert at_close == [(6, 7, 6)]  # the file is finished before the last step of the bar
    assert bars[-1].n == bars[-1].total == 7


def test_gif_writer_keeps_every_frame_its_colours_and_its_running_time(tmp_path):
    """Identical frames stay frames (the film keeps its length), a picture of few colours comes back exactly,
    and the durations (GIF counts hundredths) add up to the frames' time at the asked fps."""
    from PIL import Image

    from gpuviz.export.gif import GifWriter

    rng = np.random.default_rng(0)
    colours = rng.integers(0, 256, size=(40, 3), dtype=np.uint8)
    frames = [colours[rng.integers(0, 40, size=(48, 64))] for _ in range(3)]
    frames = [frames[0], frames[0].copy(), frames[1], frames[2], frames[2].copy()]
    frames[3][5:9, 7:20] = colours[3]  # a small change: only its rectangle is encoded
    with GifWriter(tmp_path / "f.gif", fps=8, palette_from=frames[:1]) as w:
        for f in frames:
            w.append(f)
    back = iio.imread(tmp_path / "f.gif", index=None)[..., :3]
    assert back.shape == (5, 48, 64, 3)
    assert all(np.array_equal(b, f) for b, f in zip(back, frames))
    im = Image.open(tmp_path / "f.gif")
    durations = []
    for k in range(im.n_frames):
        im.seek(k)
        durations.append(im.info["duration"])
    assert sum(durations) == 5 * 1000 / 8 // 10 * 10 and set(durations) <= {120, 130}
    with pytest.raises(ValueError, match="uint8"):
        GifWriter(tmp_path / "g.gif", 8, frames[:1]).append(frames[0].astype(np.float32))


def test_a_window_film_at_1280x720_is_laid_out_roomily_with_its_band_below(qapp):
    """Finding 23: a whole-window GIF/MP4 at 1280x720 used the window's 1280x720 layout (source wrapped after a
    dozen characters, memory plots a few pixels tall) and drew its caption band over the transport. Now the
    window is laid out at no less than 1600x900 and scaled into the picture, menus hidden, and the band sits below
    the picture: the transport and the status line stay in sight."""
    from gpuviz.ui.film import Stage
    from tests.acceptance_checks import source_problems
    from tests.test_acceptance import kernel_trace

    with Stage(kernel_trace("matmul_tiled"), None, size=(1280, 720), caption=True) as stage:
        w = stage.widget
        assert stage.layout_size[0] >= 1600 and stage.layout_size[1] >= 900
        assert (w.width(), w.height()) == stage.layout_size
        assert not w.menuBar().isVisible()
        assert source_problems(w, min_columns=50) == []
        memory = w.views["memory"]
        assert memory.height() / stage.layout_factor > 200  # in the film's pixels
        status = w.statusBar()
        bottom = (status.mapTo(w, status.rect().bottomLeft()).y() + 1) / stage.layout_factor
        assert bottom <= stage.height - stage.band + 1  # the band starts below the status line
        img = stage.image(5)
        assert (img.width(), img.height()) == (1280, 720)
    with Stage(kernel_trace("matmul_tiled"), "memory", size=(400, 300), caption=False) as view_stage:
        assert view_stage.layout_factor == 1.0 and view_stage.band == 0  # a single view keeps the size asked
