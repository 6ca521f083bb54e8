"""Finding 14: mandelbrot's point is its data-dependent loop and the divergence it causes. The CPU executor
records the loop iterations each thread ran (on its END event, where they differ between threads); the narration
of a warp's end says how many its lanes ran and how idle they sat; the block view shades finished lanes by them,
so a block fills in with its tile of the image as its warps finish."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import pytest

import gpuviz
from gpuviz.model.frames import Frames, LaneState
from gpuviz.model.narration import Narrator
from gpuviz.model.trace import EventKind
from gpuviz.catalog import get_kernel


def _capture(name, n):
    spec = get_kernel(name)
    grid, block = spec.launch(n, spec.default_block)
    args = spec.make_args(n, np.random.default_rng(0))
    return gpuviz.capture(spec.kernel, grid, block, *args, backend="cpu"), args


@pytest.fixture(scope="module")
def mandel():
    return _capture("mandelbrot", 48)


def test_each_thread_records_the_loop_iterations_it_ran(mandel):
    trace, args = mandel
    end = trace.kind == EventKind.END
    assert trace.has("value")
    image = args[0]  # the kernel writes each pixel's escape count: the iterations of its thread's loop
    L = trace.launch
    bx, by = trace.block[end] % L.grid[0], trace.block[end] // L.grid[0]
    tx, ty = trace.thread[end] % L.block[0], trace.thread[end] // L.block[0]
    rows, cols = by * L.block[1] + ty, bx * L.block[0] + tx
    inside = (rows < image.shape[0]) & (cols < image.shape[1])
    assert np.array_equal(trace.value[end][inside], image[rows[inside], cols[inside]].astype(float))
    assert np.all(trace.value[end][~inside] == 0)  # the threads past the edge return before the loop


def test_a_kernel_whose_threads_loop_alike_records_no_loop_counts():
    trace, _ = _capture("vector_add", 100)
    assert not trace.has("value")  # no column of NaNs for kernels without a data-dependent loop


def test_a_warps_end_says_how_long_its_lanes_looped_and_how_idle_they_sat(mandel):
    trace, _ = mandel
    F = Frames(trace)
    N = Narrator.of_frames(F)
    ends = [f for f in range(F.n_frames) if trace.kind[F.events(f)[0]] == EventKind.END]
    diverged = 0
    for f in ends:
        vals = trace.value[F.events(f)]
        lo, hi = int(vals.min()), int(vals.max())
        caption = N.caption(f)
        if lo != hi:
            idle = 1 - vals.mean() / hi
            assert f"its lanes looped {lo} to {hi} times (mean {vals.mean():.1f})" in caption, caption
            assert f"sat idle in {idle:.0%} of them (divergence)" in caption, caption
            diverged += 1
        else:
            assert f"every lane looped {hi} time" in caption and "no divergence" in caption, caption
    assert diverged > len(ends) // 4  # the set's edge runs through many warps


def test_the_block_view_fills_in_with_the_loop_work_as_warps_finish(qapp, mandel):
    from gpuviz.ui.window import MainWindow

    trace, _ = mandel
    w = MainWindow(trace)
    try:
        w.resize(1600, 900)
        w.show()
        view = w.views["block"]
        F = w.session.frames
        # the block with the widest spread of loop counts, at its last frame: every lane exited
        L = trace.launch
        end = trace.kind == EventKind.END
        spread = np.zeros(L.n_blocks)
        np.maximum.at(spread, trace.block[end], trace.value[end])
        spread[int(F.block[F.n_frames - 1])] = -1  # a block that has a frame after its end
        b = int(np.argmax(spread))
        w.session.selection.select_block(b)
        w.session.set_frame(int(F.block_last[b]) + 1)
        qapp.processEvents()
        assert view.shown_block == b and np.all(view.states == LaneState.EXITED)
        loops = view._loops[b]
        colours = view.rgba.reshape(-1, 4)[view._inside][:, :3].astype(int)
        light = colours.sum(axis=1)
        t = view._inside_thread
        fewest, most = t[np.argmin(loops[t])], t[np.argmax(loops[t])]
        assert loops[most] > loops[fewest]
        assert light[list(t).index(most)] < light[list(t).index(fewest)]  # more iterations: darker
        assert len(np.unique(colours, axis=0)) > 3
        assert "loop iterations they ran" in view.legend.text()
    finally:
        w.close()
        w.deleteLater()


def test_lanes_of_a_kernel_without_loop_counts_keep_one_exited_colour(qapp):
    from gpuviz.ui.window import MainWindow

    trace, _ = _capture("vector_add", 1000)
    w = MainWindow(trace)
    try:
        w.show()
        w.session.set_frame(w.session.frames.n_frames - 1)
        qapp.processEvents()
        view = w.views["block"]
        exited = view.states[view._inside_thread] == LaneState.EXITED
        colours = view.rgba.reshape(-1, 4)[view._inside][exited]
        assert len(np.unique(colours, axis=0)) == 1 and view._loops is None
    finally:
        w.close()
        w.deleteLater()


@pytest.fixture(scope="module")
def mandel_default():
    return _capture("mandelbrot", get_kernel("mandelbrot").default_size)


def test_at_its_default_size_lanes_leave_the_loop_at_different_frames(mandel_default):
    """Finding 14 (pace): at its default size mandelbrot showed none of its point: its loop ran in registers, so a
    warp had three frames (start, its one store, exit) and every lane left the loop in the same frame. Each thread
    now stores its running count every STORE_EVERY iterations: a warp steps through its loop, and on the edge of
    the set its lanes drop out of the stores one by one while the others loop on."""
    from gpuviz.catalog import kernel_module
    STORE_EVERY = kernel_module("mandelbrot").STORE_EVERY

    trace, args = mandel_default
    F = Frames(trace)
    warps = F.block.astype(np.int64) * 64 + F.warp
    frames_per_warp = np.bincount(np.unique(warps, return_inverse=True)[1])
    assert frames_per_warp.mean() > 5 and frames_per_warp.max() >= 64 // STORE_EVERY + 2
    stores = F.kind == EventKind.GLOBAL_STORE
    lanes_left = 0  # warps whose stores lose lanes from one frame to another: lanes leaving the loop
    for w in np.unique(warps[stores]):
        lanes = F.n_lanes[stores & (warps == w)]
        lanes_left += len(np.unique(lanes)) > 1
    assert lanes_left > len(np.unique(warps)) // 4
    # a store frame with lanes masked off is narrated as divergence
    f = int(np.flatnonzero(stores & (F.n_lanes < 32) & (F.n_lanes > 0))[0])
    assert "divergence" in Narrator.of_frames(F).caption(f)
    image = args[0]
    assert np.array_equal(image, get_kernel("mandelbrot").reference(args)[0])  # still the escape counts


def test_the_memory_view_draws_the_image_as_a_heat_map_of_the_loop_work(qapp, mandel_default):
    """Finding 14: the memory view of mandelbrot's image was flat (one store a pixel). Its heat now counts the
    stores of each pixel's loop: the set stands out of the plane, brighter where the loop ran longer."""
    from gpuviz.ui.window import MainWindow

    trace, args = mandel_default
    w = MainWindow(trace)
    try:
        w.resize(1600, 900)
        w.show()
        w.session.set_frame(w.session.frames.n_frames - 1)
        qapp.processEvents()
        panel = w.views["memory"].panel_of("image")
        rgba = panel.flat.reshape(args[0].shape + (4,))[..., :3].astype(int)
        assert len(np.unique(rgba.reshape(-1, 3), axis=0)) >= 8  # bands of the set, not one colour
        light = rgba.sum(axis=-1)
        iters = args[0]
        inside, outside = light[iters == iters.max()].mean(), light[iters < 4].mean()
        assert inside > outside + 100, (inside, outside)  # the cividis heat: more work, brighter
        # half-way through, the blocks still to run are untouched: the image fills in as the launch runs
        w.session.set_frame(w.session.frames.n_frames // 2)
        qapp.processEvents()
        half = panel.flat.reshape(args[0].shape + (4,))[..., :3].astype(int)
        assert (half[-1] == half[-1, :1]).all() and not (half[-1] == rgba[-1]).all()
    finally:
        w.close()
        w.deleteLater()
