"""Memory-behaviour views: global memory, shared banks, barriers, occupancy, the per-line table.

Real captures of small bundled kernels (CPU executor) where a kernel shows the behaviour; hand-made
traces where an exact scenario is easier to build by hand. Asserts on what the views hold (the RGBA
buffers they hand to pyqtgraph, the overlays, the figures they print), never on timings.

``GPUVIZ_SCREENSHOTS=1`` also writes the PNG screenshots under ``assets/screenshots/``.
"""

from __future__ import annotations

import gc
import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pytestqt")

import gpuviz  # noqa: E402
from gpuviz.model import analysis  # noqa: E402
from gpuviz.model.devices import occupancy  # noqa: E402
from gpuviz.model.frames import Frames  # noqa: E402
from gpuviz.model.prepared import prepare  # noqa: E402
from gpuviz.model.trace import EventKind as K  # noqa: E402
from gpuviz.style import render  # noqa: E402
from gpuviz.catalog import get_kernel  # noqa: E402

try:  # tests/ may or may not be a package, depending on the checkout
    from tests.ui_traces import _Program, matmul_tiled_trace, vector_add_trace  # noqa: E402
except ImportError:
    from ui_traces import _Program, matmul_tiled_trace, vector_add_trace  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
_CAPTURES: dict[str, object] = {}


def capture(name: str, size: int | None = None):
    """A bundled kernel captured with the CPU executor at a small size (cached for the module)."""
    key = f"{name}:{size}"
    if key not in _CAPTURES:
        spec = get_kernel(name)
        size = size or spec.small_size
        args = spec.make_args(size, np.random.default_rng(0))
        grid, block = spec.launch(size, spec.default_block)
        _CAPTURES[key] = gpuviz.capture(spec.kernel, grid, block, *args)
    return _CAPTURES[key]


@pytest.fixture
def make_view(qtbot):
    """Builds a view on a session holding ``trace``, shown at a given size; closes both afterwards."""
    from gpuviz.ui.session import Session

    sessions, views = [], []

    def make(view_cls, trace, size=(1280, 720), theme=None):
        from gpuviz.style.theme import LIGHT

        session = Session(trace, theme=theme or LIGHT)
        sessions.append(session)
        view = view_cls(session)
        views.append(view)
        view.resize(*size)
        view.show()
        view.start()
        return session, view

    yield make
    # the base class keeps a failing hook from stopping playback and records it: none may have failed
    failures = {v.view_id: v.errors for v in views if getattr(v, "errors", None)}
    # tear down in a fixed order, now, rather than whenever the garbage collector gets to the cycles
    # between pyqtgraph items and their Python wrappers (a late collection during the next test's
    # show() is how Qt bindings crash)
    from PySide6.QtWidgets import QApplication

    for v in views:
        v.close()
        v.deleteLater()
    for s in sessions:
        s.shutdown()
        s.deleteLater()
    QApplication.sendPostedEvents(None, 0)  # 0: QEvent.DeferredDelete is posted; flush it
    QApplication.processEvents()
    views.clear()
    sessions.clear()
    gc.collect()
    assert not failures, f"view hooks failed: {failures}"


def first_frame(frames: Frames, trace, kind: K, array: int | None = None, line: int | None = None,
                min_lanes: int = 1) -> int:
    for f in range(frames.n_frames):
        if frames.kind[f] != kind or frames.n_lanes[f] < min_lanes:
            continue
        if array is not None and frames.array[f] != array:
            continue
        if line is not None and frames.line[f] != line:
            continue
        return f
    raise AssertionError(f"no frame of kind {kind.label} on array {array} line {line}")


def cells_with_colour(flat: np.ndarray, colour) -> np.ndarray:
    return np.flatnonzero((flat == np.asarray(colour, np.uint8)).all(axis=1))


# ---- numpy helpers (no window) ---------------------------------------------------------------------
def test_running_counts_match_bincount_at_every_checkpoint_and_back():
    trace = matmul_tiled_trace(32, 8)
    frames = Frames(trace)
    ef = render.frame_of_events(frames, len(trace))
    assert (ef == frames.frame_of_event).all()
    ids = [0, 1, 2]
    rc = render.RunningCounts(trace, ef, ids, min_stride=64)  # small stride: many checkpoints
    assert rc.checkpoints.shape[0] > 10
    rng = np.random.default_rng(1)
    mem = np.isin(trace.kind, [K.GLOBAL_LOAD, K.GLOBAL_STORE])
    for f in list(rng.integers(0, frames.n_frames, 12)) + [0, 1, 2, 1, frames.n_frames - 1, 5]:
        counts = rc.counts_at(int(f))
        for a in ids:
            sel = mem & (trace.array == a) & (ef <= f)
            ref = np.bincount(trace.index[sel], minlength=trace.launch.arrays[a].size)
            assert (counts[rc.slice_of(a)] == ref).all(), (f, a)


def test_running_counts_reached_from_the_checkpoint_above_or_below_or_the_last_frame_agree():
    trace = matmul_tiled_trace(32, 8)
    frames = Frames(trace)
    ef = render.frame_of_events(frames, len(trace))
    rc = render.RunningCounts(trace, ef, [0, 1, 2], min_stride=64)
    ref = render.RunningCounts(trace, ef, [0, 1, 2], min_stride=1 << 30)  # one checkpoint: always from 0 or last
    # frames just below and just above each checkpoint, each reached from far away (frame 0) and from a neighbour
    targets = []
    for c in range(1, len(rc.checkpoints)):
        n = c * rc.stride
        for k in (n - 3, n - 1, n + 1, n + 3):
            if 0 <= k < len(rc.frames_sorted):
                targets.append(int(rc.frames_sorted[k]))
    assert len(targets) > 20
    for f in targets:
        rc.counts_at(0)
        far = rc.counts_at(f).copy()
        near = rc.counts_at(min(f + 1, frames.n_frames - 1))
        ref.counts_at(0)
        assert (far == ref.counts_at(f)).all(), f
        assert (near == ref.counts_at(min(f + 1, frames.n_frames - 1))).all(), f
    # the cells between two event counts are exactly where the counts differ
    a, b = rc.counts_at(targets[3]).copy(), rc.counts_at(targets[-3]).copy()
    moved = rc.cells_between(rc.n_events_through(targets[3]), rc.n_events_through(targets[-3]))
    assert set(np.flatnonzero(a != b)) <= set(moved.tolist())


def test_running_counts_after_random_jumps_equal_the_counts_reached_by_stepping():
    """A jump (from a checkpoint, from the last answer, either way) counts only the range of cells its events
    reach, array by array; the counts equal those reached by stepping one frame at a time from frame 0."""
    trace = matmul_tiled_trace(32, 8)
    frames = Frames(trace)
    ef = render.frame_of_events(frames, len(trace))
    ids = [0, 1, 2]
    rc = render.RunningCounts(trace, ef, ids, min_stride=1024)  # jumps of hundreds of events: counted by range
    stepped = render.RunningCounts(trace, ef, ids, min_stride=1 << 30)  # one checkpoint: only ever steps
    assert len(rc.checkpoints) > 4
    ranges = []
    counted = rc._add_range

    def spy(counts, cells, sign, lo, hi):
        ranges.append((lo, hi))
        assert cells.min() >= lo and cells.max() < hi
        counted(counts, cells, sign, lo, hi)

    rc._add_range = spy
    rng = np.random.default_rng(5)
    targets = {int(f) for f in rng.integers(0, frames.n_frames, 40)} | {0, frames.n_frames - 1}
    jumps = [int(f) for f in rng.permutation(sorted(targets))] + [frames.n_frames - 1, 0, frames.n_frames // 2]
    seen = {}
    for f in jumps:
        seen.setdefault(f, []).append(rc.counts_at(f).copy())
    assert ranges, "no jump was counted over a range of cells"
    slices = [rc.slice_of(a) for a in ids]
    assert any(any(sl.start <= lo and hi <= sl.stop for sl in slices) for lo, hi in ranges)  # array by array
    for f in range(frames.n_frames):
        counts = stepped.counts_at(f)
        for got in seen.get(f, []):
            assert (got == counts).all(), f
    assert stepped.counts_at(frames.n_frames - 1).sum() == len(rc.cells)


def test_running_counts_reject_an_index_outside_its_array():
    trace = vector_add_trace(64, 32)
    trace.index[np.flatnonzero(trace.array == 1)[3]] = 64
    with pytest.raises(ValueError, match=r"b\[64\] outside its 64 elements"):
        render.RunningCounts(trace, Frames(trace).frame_of_event, [0, 1, 2])


def test_render_module_needs_neither_qt_nor_numba():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "for m in ('PySide6', 'pyqtgraph', 'numba'): sys.modules[m] = None\n"
        "import gpuviz.style.render\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_layouts_sectors_and_banks():
    strip = render.strip_layout(3000)
    assert strip.cols % 32 == 0 and strip.rows * strip.cols >= 3000 > (strip.rows - 1) * strip.cols
    assert render.array_layout((4, 5, 6)) == render.GridLayout(20, 6, 120)
    # 32 consecutive float32 = 4 sectors; a stride-32 column = 32 sectors
    assert len(render.sector_spans(np.arange(32), 4)) == 4
    assert len(render.sector_spans(np.arange(32) * 32, 4)) == 32
    assert render.sector_spans(np.array([9]), 4).tolist() == [[8, 16]]
    # a sector spanning a row break of a 2-d layout is cut into one rectangle per row
    segs = render.span_outline_segments(np.array([[4, 12]]), render.GridLayout(3, 6, 18))
    assert len(segs) == 2 * 8
    # float64 elements cover two 4-byte words
    assert render.words_of_elements(np.array([0, 3]), 8).tolist() == [0, 1, 6, 7]
    assert render.bank_layout(33 * 32 * 4) == render.GridLayout(33, 32, 33 * 32)


def test_barrier_timeline_shows_who_waits_for_whom():
    # two warps; warp 1 does three extra instructions before the barrier: warp 0 waits for it
    p = _Program((1,), (64,))
    warp = p.thr // 32
    p.emit(K.START, 1)
    for _ in range(3):
        p.emit(K.GLOBAL_LOAD, 2, -1, mask=warp == 1)
    p.emit(K.BARRIER, 3)
    p.emit(K.END, 4)
    trace = p.trace("waits", [], "")
    tl = render.barrier_timeline(prepare(trace), 0)
    assert tl.warps.tolist() == [0, 1]
    assert tl.length[:, 0].tolist() == [2, 5]  # START + BARRIER vs START + 3 loads + BARRIER
    assert tl.last_arrival(0).tolist() == [1]
    img = render.barrier_lanes_rgba(tl, np.array([[1, 1, 1, 255], [2, 2, 2, 255]], np.uint8),
                                    np.array([9, 9, 9, 255], np.uint8))
    assert (img[0, 2:5, :3] == 9).all()  # warp 0 waits three steps
    assert not (img[1, :5, :3] == 9).all(axis=1).any()
    # the second phase starts for everybody when the last warp arrives
    assert tl.phase_start[1] == 5
    assert tl.position(0, int(trace.issue_step[(trace.kind == K.END) & (trace.thread == 0)][0])) == (0, 5.0)


# ---- global memory view ----------------------------------------------------------------------------
def test_vector_add_lights_exactly_the_warps_addresses(make_view):
    from gpuviz.ui.views.memory import GlobalMemoryView

    trace = capture("vector_add")
    session, view = make_view(GlobalMemoryView, trace)
    frames = session.frames
    a = trace.launch.array_id("a")
    c = trace.launch.array_id("c")
    f = first_frame(frames, trace, K.GLOBAL_LOAD, a, min_lanes=32)
    session.set_frame(f + 2)  # a later warp, so earlier accesses are in the heat map too
    f = session.frame
    ev = frames.events(f)
    panel = view.panel_of(trace.launch.arrays[int(frames.array[f])].name)
    expected = np.unique(trace.index[ev[trace.array[ev] == panel.array_id]])
    colour = view.style.write if frames.kind[f] == K.GLOBAL_STORE else view.style.read
    assert cells_with_colour(panel.flat, colour).tolist() == expected.tolist()
    # its 32-byte sectors are outlined: 8 float32 per sector, 4 rectangles of 4 edges
    x, y = panel.sectors.getData()
    assert len(x) == len(render.sector_spans(expected, 4)) * 8
    # step to the store of c: the write colour moves to c, the read colour leaves a
    fs = first_frame(frames, trace, K.GLOBAL_STORE, c, min_lanes=32)
    session.set_frame(fs)
    ev = frames.events(fs)
    pc = view.panel_of("c")
    assert cells_with_colour(pc.flat, view.style.write).tolist() == np.unique(trace.index[ev]).tolist()
    assert len(cells_with_colour(view.panel_of("a").flat, view.style.read)) == 0
    assert "4 sectors" in view.header.text()


def test_running_counts_at_the_last_frame_equal_bincount(make_view):
    from gpuviz.ui.views.memory import GlobalMemoryView

    trace = capture("matmul_tiled")
    session, view = make_view(GlobalMemoryView, trace)
    session.set_frame(session.frames.n_frames - 1)
    counts = view._counts.counts_at(session.frame)
    mem = np.isin(trace.kind, [K.GLOBAL_LOAD, K.GLOBAL_STORE, K.ATOMIC])
    for p in view._panels:
        ref = np.bincount(trace.index[mem & (trace.array == p.array_id)], minlength=p.info.size)
        assert (counts[view._counts.slice_of(p.array_id)] == ref).all()
        # the heat map is exactly the palette of these counts, apart from the cells lit right now
        expected = p.palette[ref].view(np.uint8).reshape(-1, 4)
        lit = p.access.index if p.access is not None else np.zeros(0, np.int64)
        unlit = np.setdiff1d(np.arange(p.info.size), lit)
        assert (p.flat[unlit] == expected[unlit]).all()
        assert (p.flat[np.flatnonzero(ref == 0)] == view.style.untouched).all()
    # scrubbing back to frame 0 gives an (almost) empty heat map again
    session.set_frame(0)
    assert view._counts.counts_at(0).sum() == mem[session.frames.events(0)].sum()


def test_the_heat_map_is_the_same_however_a_frame_is_reached(make_view):
    """Stepping repaints only the cells that change; scrubbing far repaints all: both show the same pixels as a
    view drawing the frame afresh, and a panel no access reaches keeps its image unchanged."""
    from gpuviz.ui.views.memory import GlobalMemoryView

    trace = capture("matmul_tiled")
    session, view = make_view(GlobalMemoryView, trace)
    n = session.frames.n_frames
    rng = np.random.default_rng(3)
    path = list(range(0, 40)) + list(range(n // 2, n // 2 + 30)) + [int(f) for f in rng.integers(0, n, 25)]
    path += list(range(n - 1, n - 30, -1)) + [0, 1, 0]
    incremental = 0
    for f in path:
        before = {p.array_id: p.drawn_n for p in view._panels}
        session.set_frame(f)
        shown = [p.flat.copy() for p in view._panels]
        incremental += any(b is not None and b != p.drawn_n for p, b in zip(view._panels, before.values()))
        for p in view._panels:
            p.drawn_n = None  # the same frame drawn afresh: every cell from the counts
        view.on_frame_changed()
        for p, pixels in zip(view._panels, shown):
            assert (p.flat == pixels).all(), (f, p.info.name)
    assert incremental > 50  # most steps were drawn incrementally


def test_clicking_a_cell_selects_it_and_a_selected_thread_is_outlined(make_view, qtbot):
    from gpuviz.ui.views.memory import GlobalMemoryView

    from PySide6.QtCore import QPointF, Qt

    trace = matmul_tiled_trace(16, 8)
    session, view = make_view(GlobalMemoryView, trace)
    qtbot.wait(30)  # laid out, so scene coordinates are final
    panel = view.panel_of("B")
    # a real mouse click on the middle of cell (row 3, column 5) of B
    scene_pos = panel.image.mapToScene(QPointF(5.5, 3.5))
    pos = view.canvas.mapFromScene(scene_pos)
    with qtbot.waitSignal(session.selection_changed):
        qtbot.mouseClick(view.canvas.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert (session.selection.array, session.selection.index) == (trace.launch.array_id("B"), 3 * 16 + 5)
    x, _ = panel.cell_outline.getData()
    assert len(x) == 8
    session.selection.select_thread(1, 9)
    n_reads = int(((trace.block == 1) & (trace.thread == 9) & (trace.array == panel.array_id)).sum())
    x, _ = panel.thread_outline.getData()
    assert n_reads == 2 and len(x) == 8 * n_reads  # one outline per distinct cell, 8 points each


# ---- shared memory view ----------------------------------------------------------------------------
@pytest.mark.parametrize("name, ways", [("transpose_shared", 32), ("transpose_padded", 1)])
def test_transpose_column_read_is_a_32_way_conflict_unless_padded(make_view, name, ways):
    from gpuviz.ui.views.shared import SharedMemoryView

    trace = capture(name)
    session, view = make_view(SharedMemoryView, trace)
    tile = trace.launch.array_id("tile")
    f = first_frame(session.frames, trace, K.SHARED_LOAD, tile, min_lanes=32)
    session.set_frame(f)
    panel = view.panel_of("tile")
    assert panel.ways == ways
    # the figure is the analysis's
    req = analysis.shared_banks(trace).requests
    m = (req["block"] == session.frames.block[f]) & (req["warp"] == session.frames.warp[f]) & (req["step"] == session.frames.step[f])
    assert int(req["ways"][m].max()) == ways
    if ways == 32:
        assert len(panel.conflict_banks) == 1  # one column: every word in the same bank
        assert "32-way bank conflict" in view.header.text()
        x, _ = panel.conflict.getData()
        assert len(x) == 32 * 8
    else:
        assert len(panel.conflict_banks) == 0 and not panel.conflict.isVisible()
        # 32 lit words in 32 different banks
        assert len(np.unique(panel.lit % 32)) == 32
    # the lit cells are the words read, on the bank grid of the (padded) tile
    ev = session.frames.events(f)
    words = trace.index[ev] * 4 // 4
    assert panel.lit.tolist() == np.unique(words).tolist()


def test_an_outline_already_empty_is_not_set_again_on_the_next_frames(make_view, monkeypatch):
    """Most frames outline no conflict, race or sector: the empty outline is left as it is (pyqtgraph's setData
    of no points, with its bounds and repaint, on every frame was ~1 ms of a scrub input in reduce_sum's window)."""
    import pyqtgraph as pg

    from gpuviz.ui.views.shared import SharedMemoryView

    trace = capture("transpose_shared")
    session, view = make_view(SharedMemoryView, trace)
    tile = trace.launch.array_id("tile")
    f = first_frame(session.frames, trace, K.SHARED_LOAD, tile, min_lanes=32)
    session.set_frame(f)
    panel = view.panel_of("tile")
    assert len(panel.conflict.getData()[0]) == 32 * 8
    quiet = [g for g in range(f + 1, session.frames.n_frames)
             if session.frames.block[g] == session.frames.block[f] and not np.isin(
                 trace.kind[session.frames.events(g)], [K.SHARED_LOAD, K.SHARED_STORE]).any()][:5]
    assert len(quiet) == 5
    session.set_frame(quiet[0])  # the conflict's outline goes
    assert len(panel.conflict.getData()[0]) == 0 and not panel.conflict.isVisible()
    set_again = []
    real = pg.PlotCurveItem.updateData
    monkeypatch.setattr(pg.PlotCurveItem, "updateData", lambda item, *a, **k: (set_again.append(item), real(item, *a, **k)))
    for g in quiet[1:]:
        session.set_frame(g)
    assert panel.conflict not in set_again and panel.races not in set_again
    session.set_frame(f)  # a conflict again: outlined again
    assert panel.conflict in set_again and len(panel.conflict.getData()[0]) == 32 * 8 and panel.conflict.isVisible()


def test_shared_values_are_written_in_the_lit_cells(make_view):
    from gpuviz.ui.views.shared import SharedMemoryView

    trace = capture("transpose_padded")
    assert trace.has("value")
    session, view = make_view(SharedMemoryView, trace, size=(1920, 1080))
    tile = trace.launch.array_id("tile")
    f = first_frame(session.frames, trace, K.SHARED_STORE, tile, min_lanes=32)
    session.set_frame(f)
    panel = view.panel_of("tile")
    shown = [item for item in panel.labels if item.isVisible()]
    assert len(shown) == 32
    ev = session.frames.events(f)
    assert sorted(float(item.textItem.toPlainText()) for item in shown) == pytest.approx(
        sorted(float(f"{v:.3g}") for v in trace.value[ev]), abs=0.06)


@pytest.mark.parametrize("name, racy", [("race_missing_sync", True), ("race_fixed", False)])
def test_race_cells_are_marked(make_view, name, racy):
    from gpuviz.ui.views.shared import SharedMemoryView

    trace = capture(name)
    session, view = make_view(SharedMemoryView, trace)
    panel = view.panel_of("tile")
    rec = analysis.races(trace).records
    rec = rec[(rec["space"] == "shared") & (rec["block"] == 0)]
    assert (len(rec) > 0) == racy
    assert panel.race_cells.tolist() == sorted(set(rec["index"].tolist()))
    assert panel.races.isVisible() == racy
    if racy:
        assert "race" in panel.plot.titleLabel.text and "words of tile race" in view.header.text()


@pytest.mark.parametrize("name", ["race_missing_sync", "transpose_shared"])
def test_shared_view_shows_a_block_reached_from_another_as_drawn_afresh(make_view, name):
    """Blocks with the titles and the scale of the one before keep them as they are; what shows (titles, colour
    bar, palettes, pixels) equals a view that draws that block first, and a theme still restyles the titles."""
    from gpuviz.ui.views.shared import SharedMemoryView

    trace = capture(name)
    session, view = make_view(SharedMemoryView, trace)
    frames = session.frames

    def drawn(v):
        return [(p.plot.titleLabel.text, p.vmax, p.palette.tolist(), p.flat.copy(), v.colour_bar.vmax,
                 v.colour_bar.axis._tickLevels) for p in v._panels]

    rng = np.random.default_rng(4)
    for f in [int(f) for f in rng.integers(0, frames.n_frames, 10)] + [frames.n_frames - 1, 0]:
        session.set_frame(f)
        shown = drawn(view)
        _, fresh = make_view(SharedMemoryView, trace)
        fresh.session.set_frame(f)
        for a, b in zip(shown, drawn(fresh)):
            assert a[0] == b[0] and a[1] == b[1] and a[2] == b[2] and (a[3] == b[3]).all(), f
            assert a[4] == b[4] and a[5] == b[5], f
    session.set_theme("dark")
    assert all(p.plot.titleLabel.opts["color"] == view.style.foreground for p in view._panels)


# ---- barriers ----------------------------------------------------------------------------------------
def test_barrier_view_follows_the_frame_and_names_the_last_warp(make_view):
    from gpuviz.ui.views.barriers import BarrierView

    trace = capture("reduce_interleaved")
    session, view = make_view(BarrierView, trace)
    frames = session.frames
    tl = view.timeline
    assert tl.n_phases == frames.block_phases[frames.block[0]]
    # every frame of the block has a place on the timeline, in increasing order for each warp
    last_x = {}
    for f in range(frames.block_last[0] + 1):
        session.set_frame(f)
        r, x = view.current
        assert tl.warps[r] == frames.warp[f]
        assert x > last_x.get(r, -1)
        last_x[r] = x
    # interleaved addressing leaves whole warps idle late in the tree: they wait for the busy ones
    waits = [p for p in range(tl.n_phases) if tl.ends_with_barrier[:, p].any() and np.ptp(tl.length[:, p]) > 0]
    assert waits
    p = waits[-1]
    session.set_frame(int(np.flatnonzero((frames.block == 0) & (frames.phase == p))[0]))
    assert "wait for" in view.header.text()
    assert f"warp {tl.last_arrival(p)[0]}" in view.header.text() or "warps" in view.header.text()


def barrier_drawing(view) -> dict:
    """What the barrier view draws for the block on screen: lanes, sync lines and labels, warp axis, outlines."""
    lines = [(line.value(), line.label.format, line.label.orientation if hasattr(line.label, "orientation") else None,
              line.label.anchors[0], line.isVisible())
             for line in view.sync_lines[: view._shown_syncs]]
    outline = view.last_outline.getData()
    return {"base": view._base.copy(), "lines": lines, "hidden": [line.isVisible() for line in view.sync_lines],
            "ticks": view.plot.getAxis("left")._gpuviz_tick_texts, "outline": [np.asarray(a).copy() for a in outline],
            "limits": view.plot.getViewBox().state["limits"]["xLimits"], "header": view.header.text()}


def test_barrier_view_draws_a_block_reached_from_another_as_drawn_afresh(make_view):
    """Blocks laid out alike keep their sync lines as they are; what shows equals a view drawing that block first."""
    from gpuviz.ui.views.barriers import BarrierView

    trace = capture("reduce_interleaved")
    session, view = make_view(BarrierView, trace)
    frames = session.frames
    blocks = sorted({int(b) for b in frames.block})
    assert len(blocks) > 1
    rng = np.random.default_rng(2)
    for f in [int(f) for f in rng.integers(0, frames.n_frames, 12)] + [0, frames.n_frames - 1]:
        session.set_frame(f)
        shown = barrier_drawing(view)
        _, fresh = make_view(BarrierView, trace)
        fresh.session.set_frame(f)
        again = barrier_drawing(fresh)
        for k in shown:
            if k in ("base",):
                assert (shown[k] == again[k]).all(), (f, k)
            elif k == "outline":
                assert all((a == b).all() for a, b in zip(shown[k], again[k])), (f, k)
            else:
                assert shown[k] == again[k], (f, k)
    # a new theme restyles the lines of the block on screen
    session.set_theme("dark")
    assert all(line.pen.color().name() == view.style.foreground.lower() for line in view.sync_lines[: view._shown_syncs])


# ---- occupancy and per-line table --------------------------------------------------------------------
def test_occupancy_panel_matches_the_calculator_and_the_slider_recomputes(make_view):
    from gpuviz.ui.views.occupancy import OccupancyView

    trace = capture("transpose_shared")
    session, view = make_view(OccupancyView, trace)
    r = view.result
    ref = analysis.trace_occupancy(trace, "H200")
    assert r["blocks_per_sm"] == ref["blocks_per_sm"] and r["limited_by"] == ref["limited_by"]
    assert f"{ref['occupancy']:.0%} occupancy" in view.header.text()
    view.set_block_threads(1024)
    assert view.result == occupancy(1024, ref["registers_per_thread"], ref["shared_bytes_per_block"], "H200")
    assert "what if" in view.slider_label.text()
    view.device_box.setCurrentIndex(view.device_box.findData("T4"))
    assert view.result["device"] == "NVIDIA Tesla T4"


def test_line_table_rows_come_from_the_analyses_and_follow_the_frame(make_view):
    from gpuviz.ui.views.occupancy import LineTableView

    trace = capture("transpose_shared")
    session, view = make_view(LineTableView, trace)
    lines = [r["line"] for r in view.rows]
    assert lines == sorted(np.unique(trace.line[trace.line > 0]).tolist())
    by_line = {r["line"]: r for r in view.rows}
    for r in analysis.shared_banks(trace).per_line:
        assert by_line[r["line"]]["bank_conflicts"] == r["bank_conflicts"]
    conflict_line = max(by_line, key=lambda k: by_line[k].get("bank_conflicts", 0))
    assert by_line[conflict_line]["bank_conflicts"] > 0
    # clicking the row jumps to the first frame on that line; the row follows the frame
    row = lines.index(conflict_line)
    view._row_clicked(row, 0)
    assert session.frames.line[session.frame] == conflict_line
    assert view.current_row == row and view.table.selectionModel().isRowSelected(row)


def test_every_memory_view_follows_theme_scale_and_trace_changes(make_view):
    from gpuviz.ui.views.barriers import BarrierView
    from gpuviz.ui.views.memory import GlobalMemoryView
    from gpuviz.ui.views.occupancy import LineTableView, OccupancyView
    from gpuviz.ui.views.shared import SharedMemoryView

    for cls in (GlobalMemoryView, SharedMemoryView, BarrierView, OccupancyView, LineTableView):
        session, view = make_view(cls, matmul_tiled_trace(16, 8))
        session.set_theme("dark")
        session.set_scale(1.6)
        assert view.style.background == session.theme.background
        for f in (5, 200, session.frames.n_frames - 1, 0):
            session.set_frame(f)
        session.set_trace(capture("race_missing_sync"))
        session.set_frame(session.frames.n_frames // 2)
        session.selection.select_thread(0, 33)


# ---- screenshots -------------------------------------------------------------------------------------
SHOTS = [
    ("memory", "matmul_tiled", None, "global_load"),
    ("shared", "transpose_shared", None, "shared_load"),
    ("shared", "race_missing_sync", "dark", "shared_load"),
    ("barriers", "reduce_interleaved", None, "late_phase"),
    ("occupancy", "transpose_shared", None, None),
    ("lines", "transpose_shared", None, None),
]


def _shot_frame(frames: Frames, trace, how) -> int:
    if how == "global_load":  # a global load a third of the way in: the heat map has something to show
        loads = np.flatnonzero((frames.kind == K.GLOBAL_LOAD) & (frames.n_lanes == 32))
        return int(loads[len(loads) // 3])
    if how == "shared_load":
        return first_frame(frames, trace, K.SHARED_LOAD, min_lanes=2)
    if how == "late_phase":
        return int(np.flatnonzero((frames.block == 0) & (frames.phase == max(frames.block_phases[0] - 3, 0)))[0])
    return 0


@pytest.mark.parametrize("size", [(1920, 1080), (1280, 720)])
def test_screenshots(make_view, qtbot, size, tmp_path):
    from gpuviz.style.theme import get_theme
    from gpuviz.ui.views.base import available_views

    views = available_views()
    out_dir = ROOT / "assets" / "screenshots" if os.environ.get("GPUVIZ_SCREENSHOTS") == "1" else tmp_path
    out_dir.mkdir(parents=True, exist_ok=True)
    for view_id, kernel, theme, how in SHOTS:
        trace = capture(kernel)
        session, view = make_view(views[view_id], trace, size=size, theme=get_theme(theme or "light"))
        session.set_frame(_shot_frame(session.frames, trace, how))
        view.refresh()
        qtbot.wait(30)  # let wrapped labels and axes lay themselves out before the grab
        path = out_dir / f"{view_id}_{kernel}{'_' + theme if theme else ''}_{size[0]}x{size[1]}.png"
        assert view.grab().save(str(path))
        assert 0 < path.stat().st_size < 300_000, path


def test_the_colour_bar_shows_the_heat_map_of_each_theme(make_view):
    """Colour maps are shared between colour bars (one per heat map): a theme's bar shows its own heat map."""
    from gpuviz.ui.views.memory import GlobalMemoryView, memory_style
    from gpuviz.style.theme import get_theme

    def bar_colours(view):
        return view.colour_bar._colorMap.getLookupTable(nPts=16, alpha=True).tolist()

    def want(theme):
        n = len(memory_style(theme).heat)
        pos = (np.arange(n) / (n - 1)) ** 2
        import pyqtgraph as pg
        return pg.ColorMap(pos, memory_style(theme).heat[:, :4]).getLookupTable(nPts=16, alpha=True).tolist()

    session, view = make_view(GlobalMemoryView, matmul_tiled_trace(16, 8))
    light = bar_colours(view)
    assert light == want(session.theme)
    session.set_theme("dark")
    assert bar_colours(view) == want(session.theme) != light
    _, other = make_view(GlobalMemoryView, vector_add_trace(300), theme=get_theme("dark", 1.0))
    assert bar_colours(other) == bar_colours(view)
    session.set_theme("light")
    assert bar_colours(view) == light
