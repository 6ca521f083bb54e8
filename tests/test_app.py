"""The desktop app, offscreen: window, stepping, linked selection, captures in a worker process, snapshots."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import QApplication

from gpuviz.model import playback as pbm
from gpuviz.model.frames import BlockState, LaneState
from gpuviz.model.trace import EventKind
from gpuviz.style.theme import hex_to_rgba
from tests.ui_traces import matmul_tiled_trace, reduction_trace

MY_VIEWS = ("grid", "block", "source", "details")


def _colour(theme, state_table, state):
    return np.array(hex_to_rgba(state_table[state]), dtype=np.uint8)


def test_window_opens_on_the_embedded_default(make_window):
    from gpuviz.app import DEFAULT_KERNEL, default_trace

    w = make_window(default_trace())
    s = w.session
    assert s.trace.launch.kernel_name == DEFAULT_KERNEL and s.trace.launch.backend == "cpu"
    assert s.frame == 0 and s.frames.n_frames > 100
    assert w.frame_text.text() == s.frames.describe(0)
    assert set(MY_VIEWS) <= set(w.views)
    grid = w.views["grid"]
    assert grid.rgba.shape[:2] == (2, 2)  # 2 x 2 blocks, one pixel each
    resident = _colour(s.theme, s.theme.block, BlockState.RESIDENT)
    waiting = _colour(s.theme, s.theme.block, BlockState.WAITING)
    assert (grid.rgba[0, 0] == resident).all() and (grid.rgba[1, 1] == waiting).all()


def test_stepping_changes_the_frame_and_what_the_views_show(make_window):
    w = make_window()
    s, F = w.session, w.session.frames
    block = w.views["block"]
    before = block.rgba.copy()
    w.actions.trigger("playback.step_forward")
    assert s.frame == 1 and w.slider.value() == 1
    assert w.frame_text.text() == F.describe(1)
    assert not np.array_equal(before, block.rgba)  # warp 1 issues now, not warp 0
    active = _colour(s.theme, s.theme.lane, LaneState.ACTIVE)
    assert (block.rgba[4:8].reshape(-1, 4) == active).all()  # warp 1 = rows 4..7 of the 8 x 8 block
    assert not (block.rgba[0:4].reshape(-1, 4) == active).all(axis=1).any()
    # the source view lights the frame's line
    w.actions.trigger("playback.step_forward")
    assert w.views["source"].highlighted == [int(F.line[2])] == [10]
    # next barrier: every lane of the block waits, the grid shows the block at a barrier
    w.actions.trigger("playback.next_barrier")
    f = s.frame
    assert F.kind[f] == EventKind.BARRIER and f == F.next_barrier(2)
    barrier = _colour(s.theme, s.theme.lane, LaneState.BARRIER)
    assert (block.rgba.reshape(-1, 4) == barrier).all()
    assert (w.views["grid"].rgba[0, 0] == _colour(s.theme, s.theme.block, BlockState.BARRIER)).all()
    assert w.views["source"].highlighted == [12]
    w.actions.trigger("playback.next_block")
    assert F.block[s.frame] == 1 and w.views["block"].shown_block == 1
    w.actions.trigger("playback.last")
    assert s.frame == F.n_frames - 1
    w.actions.trigger("playback.first")
    assert s.frame == 0


def test_keyboard_drives_playback(make_window, qtbot):
    w = make_window()
    s = w.session
    qtbot.keyClick(w, Qt.Key.Key_Right)
    qtbot.keyClick(w, Qt.Key.Key_PageDown)  # a presenter's clicker
    assert s.frame == 2
    qtbot.keyClick(w, Qt.Key.Key_PageUp)
    assert s.frame == 1
    qtbot.keyClick(w, Qt.Key.Key_End)
    assert s.frame == s.frames.n_frames - 1
    qtbot.keyClick(w, Qt.Key.Key_Home)
    qtbot.keyClick(w, Qt.Key.Key_Down)
    assert s.frame == s.frames.next_barrier(0)
    qtbot.keyClick(w, Qt.Key.Key_Plus)
    assert s.playback.speed == 2.0
    qtbot.keyClick(w, Qt.Key.Key_Space)
    assert s.playback.playing
    start = s.frame
    qtbot.waitUntil(lambda: s.frame >= start + 2, timeout=5000)
    qtbot.keyClick(w, Qt.Key.Key_Space)
    assert not s.playback.playing
    qtbot.keyClick(w, Qt.Key.Key_F1)
    assert w.overlay.isVisible() and "Space" in w.overlay.label.text()
    qtbot.keyClick(w.overlay, Qt.Key.Key_Escape)
    assert not w.overlay.isVisible()


def _click_plot(qtbot, plot, x, y):
    vb = plot.getPlotItem().getViewBox()
    scene_pt = vb.mapViewToScene(QPointF(x, y))
    pos = plot.mapFromScene(scene_pt)
    qtbot.mouseClick(plot.viewport(), Qt.MouseButton.LeftButton, pos=pos)


def test_linked_selection_across_views(make_window, qtbot):
    w = make_window(reduction_trace(2, 64))
    s = w.session
    block, grid, details = w.views["block"], w.views["grid"], w.views["details"]
    # click block 1 in the grid: the block view follows it
    _click_plot(qtbot, grid.plot, 1.5, 0.5)
    assert s.selection.block == 1 and grid.selected_box.isVisible()
    assert block.shown_block == 1 and "selected" in block.caption.text()
    assert "block: 1 (linear 1)" in details.text
    # click thread 37 (row 1 of the 1-d block drawn one warp per row, column 5)
    x, y = block.cell_center(37)
    _click_plot(qtbot, block.plot, x, y)
    assert (s.selection.block, s.selection.warp, s.selection.thread) == (1, 1, 37)
    assert block.selected_thread_box.isVisible()
    assert "thread: 37 (linear 37) · global 101 · lane 5" in details.text
    assert "events:" in details.text
    # the details follow the frame: step to a frame where thread 37 of block 1 executes
    F = s.frames
    f = int(F.frames_of_thread(1, 37)[1])
    s.set_frame(f)
    assert "now: global load x[101]" in details.text
    qtbot.keyClick(w, Qt.Key.Key_Escape)
    assert s.selection.empty and not grid.selected_box.isVisible()
    assert block.shown_block == F.block[f]


def test_theme_and_scale(make_window):
    w = make_window()
    s = w.session
    grid = w.views["grid"]
    w.actions.trigger("view.theme")
    assert s.theme.dark
    assert (grid.rgba[0, 0] == _colour(s.theme, s.theme.block, BlockState.RESIDENT)).all()
    w.actions.trigger("view.bigger")
    assert s.theme.scale > 1.1 and f"font-size: {s.theme.px()}px" in w.styleSheet()


def test_failing_capture_shows_an_error_and_keeps_the_trace(make_window, qtbot):
    w = make_window()
    before = w.session.trace
    panel = w.launch_panel
    with qtbot.waitSignal(panel.runner.failed, timeout=60_000):
        panel.run({"kernel": "matmul_tiled", "size": 32, "block": [64, 64], "backend": "cpu"})
    assert panel.error.isVisible()
    assert "matmul_tiled" in panel.error.text() and "(16, 16)" in panel.error.text()
    assert w.session.trace is before
    assert not panel.runner.busy


def test_capture_in_a_worker_and_stale_requests_are_replaced(make_window, qtbot):
    w = make_window()
    panel = w.launch_panel
    results = []
    panel.runner.succeeded.connect(lambda tr, req: results.append(req["kernel"]))
    panel.run({"kernel": "matmul_tiled", "size": 32, "block": [16, 16], "backend": "cpu"})
    assert panel.runner.busy and panel.cancel_button.isEnabled()
    with qtbot.waitSignal(panel.runner.succeeded, timeout=60_000):
        panel.run({"kernel": "vector_add", "size": 100, "block": [32], "backend": "cpu"})
    assert results == ["vector_add"]  # the first request was cancelled, not queued
    assert w.session.trace.launch.kernel_name == "vector_add" and w.session.frame == 0
    assert w.views["grid"].rgba.shape[:2] == (1, 4)
    assert not panel.error.isVisible()


def test_cancel_stops_the_worker(make_window, qtbot):
    w = make_window()
    panel = w.launch_panel
    before = w.session.trace
    panel.run({"kernel": "matmul_tiled", "size": 32, "block": [16, 16], "backend": "cpu"})
    with qtbot.waitSignal(panel.runner.busy_changed, timeout=10_000):
        panel.cancel_button.click()
    assert not panel.runner.busy and w.session.trace is before


def test_snapshot_writes_pngs_of_a_view_and_the_window(tmp_path):
    from PySide6.QtGui import QImage

    from gpuviz.app import snapshot

    tr = matmul_tiled_trace(16, 8)
    out = snapshot(tr, frame=5, view="block", size=(640, 480), out_png=tmp_path / "block.png")
    img = QImage(str(out))
    assert (img.width(), img.height()) == (640, 480)
    out = snapshot(tr, frame=-1, view=None, size="1280x720", out_png=tmp_path / "window.png")
    assert QImage(str(out)).width() == 1280
    with pytest.raises(ValueError, match="no view named"):
        snapshot(tr, view="nope", out_png=tmp_path / "x.png")
    with pytest.raises(ValueError, match="out of range"):
        snapshot(tr, frame=10**6, view="grid", out_png=tmp_path / "x.png")


def test_presenter_mode_scales_up_and_hides_chrome(make_window):
    w = make_window()
    s = w.session
    w.actions.trigger("view.present")
    # presenter.py sizes the scale so that no text is under 18 px at 1920x1080 (tests/test_presenter.py checks that)
    assert s.theme.scale > 1.0 and w.menuBar().isHidden() and w.actions.qaction("view.present").isChecked()
    w.actions.trigger("view.present")
    assert s.theme.scale == 1.0 and not w.menuBar().isHidden()


def test_the_window_narrates_each_frame_with_the_kernels_own_notes(make_window):
    import gpuviz
    from gpuviz.model.narration import Narrator
    from gpuviz.catalog import get_kernel

    spec = get_kernel("transpose_shared")
    grid, block = spec.launch(spec.small_size, spec.default_block)
    trace = gpuviz.capture(spec.kernel, grid, block, *spec.make_args(spec.small_size, np.random.default_rng(0)),
                           meta={"bundled_kernel": {"name": "transpose_shared", "size": spec.small_size}})
    w = make_window(trace)
    s = w.session
    f = Narrator(s.prepared).find("first conflict")
    s.set_frame(f)
    caption = w.caption_text.text()
    assert "32-way bank conflict" in caption and "padded version adds one unused column" in caption
    s.set_frame(0)
    assert w.caption_text.text() and "padded version" not in w.caption_text.text()


# 1178 x 690: a 1280x720 screen less the frame and placement openbox gives the window (seen under Xvfb)
@pytest.mark.parametrize("size, compact", [((1280, 720), True), ((1178, 690), True), ((1920, 1080), False)])
def test_the_transport_bar_fits_the_window(make_window, qtbot, size, compact):
    w = make_window()
    w.resize(*size)
    qtbot.waitUntil(lambda: w.transport.width() == size[0])
    QApplication.processEvents()
    bar = w.transport
    assert w.transport_compact is compact
    # every control, the speed control last, lies inside the bar: none went to the overflow menu
    for a in bar.actions():
        widget = bar.widgetForAction(a)
        assert widget.isVisible() and widget.geometry().right() < bar.width(), (a.iconText(), widget.geometry())
    assert w.speed_label.isVisible()
    assert w.slider.width() >= (w.SLIDER_MIN_WIDTH if size[0] >= 1280 else w.SLIDER_LEAST_WIDTH)
    play = w.actions.qaction("playback.play")
    assert play.iconText() == ("▶" if compact else "▶ Play")
    rate = f"{pbm.demo_fps(w.session.frames.n_frames):g}"  # a demo's pace: the launch in about a minute
    assert w.speed_label.text() == (f"{rate} fps" if compact else f"{rate} frames/s")
    n = w.session.frames.n_frames
    assert w.counter.text() == (f"1 / {n:,}" if compact else f"frame 1 / {n:,}")
    w.actions.trigger("playback.play")  # the label that says what Space does keeps to the mode
    assert play.iconText() == ("❚❚" if compact else "❚❚ Pause")
    w.actions.trigger("playback.play")
    assert play.toolTip().startswith("Play or pause")  # a symbol on the button, words in its tooltip


def _wrap_cpu_timing_set(monkeypatch, fail=None):
    """Record which thread runs cpu_timing_set (and make it fail when ``fail`` is an exception)."""
    import threading

    import gpuviz.timing.cpu as cpu

    real, threads = cpu.cpu_timing_set, []

    def timed(**kw):
        threads.append(threading.get_ident())
        if fail is not None:
            raise fail
        return real(**kw)

    monkeypatch.setattr(cpu, "cpu_timing_set", timed)
    return threads


def test_measure_cpu_runs_off_the_gui_thread_and_adds_cpu_series(make_window, qtbot, monkeypatch):
    import threading

    w = make_window()
    tv = w.views["timings"]
    tv.plot_box.setCurrentIndex(tv.plot_box.findData("cpu_vs_gpu"))
    sets_before = tv.set_box.count()
    threads = _wrap_cpu_timing_set(monkeypatch)
    with qtbot.waitSignal(tv.cpu_measure_finished, timeout=60_000) as done:
        tv.cpu_button.click()
        # busy while it runs: the button cannot start a second run, the bar runs, the line says why
        assert tv.cpu_measuring and not tv.cpu_button.isEnabled() and not tv.cpu_busy.isHidden()
        assert "measuring" in tv.label.text()
    assert done.args == [True]
    assert threads and threads[0] != threading.get_ident()  # measured in a worker, not on the GUI thread
    assert not tv.cpu_measuring and tv.cpu_button.isEnabled() and tv.cpu_busy.isHidden()
    assert tv.cpu_button.text() == "Measure CPU"
    assert tv.set_box.count() == sets_before + 1
    assert tv.set_box.currentText().startswith("CPU · ") and "(measured on this machine)" in tv.set_box.currentText()
    assert tv.timing_set.processor == "cpu" and "no GPU was timed" in tv.label.text()
    live = [n for n in tv.legend_names if n.endswith("(this machine)")]
    assert {n.split(" · CPU: ")[0] for n in live} == {"numpy a + b", "gpuviz CPU executor (recorded)"}
    assert all(" · CPU: " in n for n in live)  # every series measured here is labelled CPU
    assert tv.errors == []


def test_measure_cpu_failure_is_said_in_the_view(make_window, qtbot, monkeypatch):
    w = make_window()
    tv = w.views["timings"]
    sets_before, shown_before = tv.set_box.count(), tv.set_box.currentText()
    _wrap_cpu_timing_set(monkeypatch, fail=OSError("no clock here"))
    with qtbot.waitSignal(tv.cpu_measure_finished, timeout=60_000) as done:
        tv.cpu_button.click()
    assert done.args == [False]
    assert tv.label.text() == "measuring the CPU failed: OSError: no clock here"
    assert tv.set_box.count() == sets_before and tv.set_box.currentText() == shown_before
    assert tv.cpu_button.isEnabled() and tv.cpu_busy.isHidden() and tv.errors == []


def test_the_columns_keep_their_widths_while_frames_play(make_window):
    # Views relayout on frames whose captions wrap differently; with no central widget Qt moved both side
    # columns outwards at every relayout after arrange_default, until the middle column was squeezed shut.
    w = make_window()
    w.arrange_default()
    QApplication.processEvents()
    widths = [w.docks[v].width() for v in ("grid", "memory", "source")]
    for f in range(0, 400, 10):
        w.session.set_frame(f)
        QApplication.processEvents()
    for _ in range(10):
        w.layout().invalidate()
        QApplication.processEvents()
    assert [w.docks[v].width() for v in ("grid", "memory", "source")] == widths


def test_large_traces_are_narrated_on_a_worker_thread(make_window, qtbot, monkeypatch):
    import gpuviz.ui.window as window_module

    monkeypatch.setattr(window_module, "_NARRATE_INLINE_EVENTS", 0)  # treat every trace as large
    w = make_window()
    assert w.caption_text.text() in ("narrating this launch…", "") or w._narrator is not None
    qtbot.waitUntil(lambda: w._narrator is not None and not w._narrator_jobs, timeout=30_000)
    assert w.caption_text.text() == w._narrator.text(w.session.frame) != "narrating this launch…"
