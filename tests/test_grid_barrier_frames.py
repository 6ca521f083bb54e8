"""grid.sync() drawn as the grid-wide barrier it is: no thread of any block goes on before every thread of every block
has arrived. The capture plan marks its site ``scope="grid"`` (saved with the trace); the frames then put every
block's frames of one grid phase before any frame of the next, and a grid barrier opens for every block at once, at
the last block's last arrival. ``syncthreads()`` stays a barrier of its own block, its frames as they were.

Every check reads real Frames of kernels captured on the cpu backend, and finds the grid phase of each event from the
events themselves (the thread's program order), not from the code under test.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from numba import cuda, float64

import gpuviz
from gpuviz.model.frames import BlockState, Frames, LaneState
from gpuviz.model.narration import Narrator
from gpuviz.model.prepared import prepare
from gpuviz.model.trace import EventKind, Site
from gpuviz.model.validate import TraceFileError, check_sites_json

from .gpu_tail_kernels import grid_rotate  # the kernel the GPU tests record

BLOCKS, THREADS = 3, 64  # two warps a block, so a block's own warps arrive one after the other


@cuda.jit
def grid_mixed(a, out):
    tile = cuda.shared.array(64, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    tile[t] = i
    cuda.syncthreads()
    a[i] = tile[63 - t]
    cuda.cg.this_grid().sync()
    out[i] = a[(i + 64) % a.size]


@cuda.jit
def block_reverse(a, out):
    tile = cuda.shared.array(64, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    tile[t] = a[i]
    cuda.syncthreads()
    out[i] = tile[63 - t]
    cuda.syncthreads()
    tile[t] = 0.0


def _capture(kernel, blocks: int = BLOCKS):
    n = blocks * THREADS
    return gpuviz.capture(kernel, blocks, THREADS, np.arange(n, dtype=np.float64), np.zeros(n), backend="cpu")


def _grid_barrier_seq(trace) -> dict[tuple[int, int], int]:
    """{(block, thread): seq of its grid.sync() event}, read off the source line of the g.sync() call."""
    lines = {s.line for s in trace.launch.sites if s.kind == "barrier"}
    src = trace.launch.source_lines()
    grid_lines = {ln for ln in lines if ".sync()" in src[ln - trace.launch.first_line]}
    assert len(grid_lines) == 1
    out = {}
    for e in np.flatnonzero((trace.kind == EventKind.BARRIER) & np.isin(trace.line, list(grid_lines))):
        out[(int(trace.block[e]), int(trace.thread[e]))] = int(trace.seq[e])
    assert len(out) == trace.launch.n_threads  # every thread of every block reaches it once
    return out


def _frame_grid_phase(trace, frames) -> np.ndarray:
    """Per frame: 1 when its threads are past the grid barrier, else 0 (the barrier's own frames are 0)."""
    at = _grid_barrier_seq(trace)
    first = frames.perm[frames.offsets[:-1]]
    return np.array([int(trace.seq[e] > at[(int(trace.block[e]), int(trace.thread[e]))]) for e in first])


def _grid_barrier_frames(trace, frames) -> np.ndarray:
    at = _grid_barrier_seq(trace)
    ev = [e for e in np.flatnonzero(trace.kind == EventKind.BARRIER)
          if at[(int(trace.block[e]), int(trace.thread[e]))] == int(trace.seq[e])]
    return np.unique(frames.frame_of_event[ev])


# ---- the trace says which barrier is the grid's ---------------------------------------------------------------
def test_the_plan_marks_grid_sync_sites_grid_wide_and_syncthreads_block_wide():
    trace = _capture(grid_mixed)
    scopes = [(s.kind, s.scope) for s in trace.launch.sites if s.kind == "barrier"]
    assert scopes == [("barrier", "block"), ("barrier", "grid")]
    assert [s.scope for s in trace.launch.sites if s.kind != "barrier"] == ["block"] * (len(trace.launch.sites) - 2)


def test_a_saved_and_loaded_trace_keeps_the_grid_scope_and_its_frames(tmp_path):
    trace = _capture(grid_mixed)
    gpuviz.save(tmp_path / "mixed.gpuviz", trace)
    back = gpuviz.load(tmp_path / "mixed.gpuviz")
    assert back.launch.sites == trace.launch.sites
    assert [s.scope for s in back.launch.sites if s.kind == "barrier"] == ["block", "grid"]
    # the loaded trace's frames (adopted from the file's index) release the grid barrier as freshly built ones do
    loaded, fresh = prepare(back).frames, Frames(trace)
    for name in Frames.STORED:
        np.testing.assert_array_equal(getattr(loaded, name), getattr(fresh, name), err_msg=name)


def test_only_a_grid_site_writes_its_scope_and_the_checker_takes_old_and_new_sites():
    block, grid = Site("barrier", 5, "k", col=4), Site("barrier", 7, "k", col=4, scope="grid")
    assert "scope" not in block.to_json()  # files written before grid scopes read the same
    assert grid.to_json()["scope"] == "grid"
    assert Site.from_json(block.to_json()) == block and Site.from_json(grid.to_json()) == grid
    assert Site.from_json({"kind": "barrier", "line": 5}).scope == "block"
    check_sites_json([block.to_json(), grid.to_json(), {"kind": "barrier", "line": 3}], "test")
    with pytest.raises(TraceFileError, match="scope must be one of block, grid"):
        check_sites_json([{"kind": "barrier", "line": 3, "scope": "warp"}], "test")


# ---- the frame order ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("order", ["block", "wave"])
def test_no_frame_after_the_grid_barrier_comes_before_any_block_reached_it(order):
    trace = _capture(grid_rotate)
    frames = Frames(trace, order=order, blocks_per_wave=2)
    gp = _frame_grid_phase(trace, frames)
    last_before = int(np.flatnonzero(gp == 0).max())
    first_after = int(np.flatnonzero(gp == 1).min())
    assert last_before < first_after
    # every block has frames on both sides, and block-major (wave-major) within each grid phase
    for phase in (0, 1):
        blocks = frames.block[gp == phase]
        assert set(blocks.tolist()) == set(range(BLOCKS))
        unit = blocks // 2 if order == "wave" else blocks
        assert (np.diff(unit) >= 0).all()


def test_next_block_steps_through_each_blocks_run_of_frames_in_a_grid_phase():
    trace = _capture(grid_rotate)
    frames = Frames(trace)
    gp = _frame_grid_phase(trace, frames)
    runs = [f for f in range(frames.n_frames) if f == 0 or frames.block[f] != frames.block[f - 1]]
    assert len(runs) == 2 * BLOCKS
    f, seen = 0, [0]
    while frames.next_block(f) != f:
        f = frames.next_block(f)
        seen.append(f)
    assert seen == runs and [int(gp[f]) for f in runs] == [0] * BLOCKS + [1] * BLOCKS


# ---- a grid barrier completes for every block at once ---------------------------------------------------------
def test_block_0s_lanes_wait_at_the_grid_barrier_until_the_last_block_arrives():
    trace = _capture(grid_rotate)
    frames = Frames(trace)
    bar_frames = _grid_barrier_frames(trace, frames)
    last_arrival = int(bar_frames[frames.block[bar_frames] == BLOCKS - 1].max())
    assert last_arrival == int(bar_frames.max())
    at = _grid_barrier_seq(trace)
    arrival = np.empty(THREADS, dtype=np.int64)
    for e in np.flatnonzero((trace.block == 0) & (trace.kind == EventKind.BARRIER)):
        arrival[int(trace.thread[e])] = frames.frame_of(e)
        assert at[(0, int(trace.thread[e]))] == int(trace.seq[e])
    for f in range(frames.n_frames):
        waiting = frames.lane_states(0, f) == LaneState.BARRIER
        expected = (arrival <= f) & (f <= last_arrival)
        np.testing.assert_array_equal(waiting, expected, err_msg=f"frame {f}")
    # the block itself shows "at barrier" while other blocks run, and is released with the grid
    block0_done = int(bar_frames[frames.block[bar_frames] == 0].max())
    for f in range(block0_done, last_arrival + 1):
        assert frames.block_states(f)[0] == BlockState.BARRIER, f
    for f in range(last_arrival + 1, frames.n_frames):
        assert (frames.block_states(f) != BlockState.BARRIER).all(), f
    # one opening for the whole grid, at the last block's last arrival, and every block's arrivals released there
    assert frames.barrier_complete_frames.tolist() == [last_arrival]
    assert (frames.release_frame[bar_frames] == last_arrival).all()
    assert frames.next_barrier(0) == last_arrival


def test_syncthreads_beside_a_grid_sync_still_opens_per_block():
    trace = _capture(grid_mixed)
    frames = Frames(trace)
    grid_frames = set(_grid_barrier_frames(trace, frames).tolist())
    block_frames = [int(f) for f in frames.barrier_frames if int(f) not in grid_frames]
    assert len(block_frames) == BLOCKS * 2  # two warps of each block reach the syncthreads
    for b in range(BLOCKS):
        mine = [f for f in block_frames if frames.block[f] == b]
        assert all(int(frames.release_frame[f]) == max(mine) for f in mine)
    assert len(frames.barrier_complete_frames) == BLOCKS + 1


def _without_scopes(trace):
    return trace.with_launch(sites=[dataclasses.replace(s, scope="block") for s in trace.launch.sites])


def test_a_kernel_with_only_syncthreads_keeps_exactly_its_frames():
    trace = _capture(block_reverse)
    assert trace.launch.sites and all(s.scope == "block" for s in trace.launch.sites)
    now = Frames(trace)
    plain = Frames(trace.with_launch(sites=()))  # as a trace from a file without sites reads
    for name in Frames.STORED:
        np.testing.assert_array_equal(getattr(now, name), getattr(plain, name), err_msg=name)
    # its barriers open block by block, each at its block's last warp
    assert len(now.barrier_complete_frames) == 2 * BLOCKS
    assert (now.block[now.barrier_complete_frames] == np.repeat(np.arange(BLOCKS), 2)).all()


def test_the_same_events_without_a_grid_scope_keep_the_per_block_frames():
    trace = _capture(grid_rotate)
    grid, block = Frames(trace), Frames(_without_scopes(trace))
    # without the scope, block by block as before: block 0 runs past its barrier before block 1 starts
    assert (np.diff(block.block) >= 0).all()
    assert len(block.barrier_complete_frames) == BLOCKS
    assert not (np.diff(grid.block) >= 0).all()
    assert sorted(grid.perm.tolist()) == sorted(block.perm.tolist())  # the same events, put in another order


def test_accesses_of_different_blocks_on_either_side_of_a_grid_sync_are_no_race():
    from gpuviz.model import analysis

    trace = _capture(grid_rotate)  # a[i] stored before g.sync(), a[i + 1] read after it: block 0 reads block 1's
    assert len(analysis.races(trace).records) == 0
    # the same events without the grid scope: a store and a load of different blocks with no barrier between
    records = analysis.races(_without_scopes(trace)).records
    assert len(records) and (records["block"] == -1).all()


# ---- words ----------------------------------------------------------------------------------------------------
def test_the_frames_and_the_narration_name_grid_sync_and_every_block_waiting():
    trace = _capture(grid_rotate)
    prepared = prepare(trace)
    frames, narrator = prepared.frames, Narrator(prepared)
    bar_frames = _grid_barrier_frames(trace, frames)
    first, opens = int(bar_frames.min()), int(bar_frames.max())
    assert frames.block[first] == 0
    title = frames.describe(first)
    assert "grid.sync()" in title and "syncthreads" not in title and f"0 of {BLOCKS} blocks" in title
    caption = narrator.caption(first)
    assert "grid.sync()" in caption and "every block waits" in caption and "syncthreads" not in caption
    assert narrator.facts(first)["grid_barrier"] is True
    assert f"all {BLOCKS * THREADS} threads of all {BLOCKS} blocks" in frames.describe(opens)
    assert "grid barrier opens" in narrator.caption(opens)
    # a syncthreads keeps its block's words
    mixed = prepare(_capture(grid_mixed))
    block_bar = int(mixed.frames.barrier_frames[0])
    assert "syncthreads" in Narrator(mixed).caption(block_bar) and not mixed.frames.is_grid_barrier(block_bar)


def test_the_barriers_view_names_grid_sync_and_says_every_block_waits(qtbot):
    pytest.importorskip("pytestqt")
    from gpuviz.style.theme import LIGHT
    from gpuviz.ui.session import Session
    from gpuviz.ui.views.barriers import BarrierView

    trace = _capture(grid_mixed)
    session = Session(trace, theme=LIGHT)
    view = BarrierView(session)
    qtbot.addWidget(view)
    view.resize(1280, 720)
    view.show()
    view.start()
    try:
        frames = session.frames
        grid_frames = _grid_barrier_frames(trace, frames)
        session.set_frame(int(grid_frames.min()))
        header = view.header.text()
        assert "grid.sync" in header and "every block of the grid waits" in header
        labels = [line.label.format for line in view.sync_lines[: view._shown_syncs]]
        assert labels == ["sync 1", "grid.sync 2"]
        session.set_frame(int(frames.barrier_frames[0]))  # the block's syncthreads: its own words
        assert "every block" not in view.header.text()
        assert not getattr(view, "errors", None)
    finally:
        view.close()
        session.shutdown()
