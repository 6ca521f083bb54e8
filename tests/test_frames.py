"""Frames: one warp instruction per frame, O(1) frame -> events, navigation, block and lane states."""

import numpy as np
import pytest

from gpuviz.model.frames import BlockState, Frames, LaneState
from gpuviz.model.trace import EventKind
from tests.ui_traces import matmul_tiled_trace, reduction_trace, vector_add_trace


def test_every_event_in_exactly_one_frame_and_frames_are_warp_instructions():
    tr = matmul_tiled_trace(16, 8)
    F = Frames(tr)
    seen = np.concatenate([F.events(f) for f in range(F.n_frames)])
    assert np.array_equal(np.sort(seen), np.arange(len(tr)))
    for f in range(F.n_frames):
        ev = F.events(f)
        assert len(np.unique(tr.block[ev])) == 1 and len(np.unique(tr.warp[ev])) == 1
        assert len(np.unique(tr.issue_step[ev])) == 1
        assert np.all(np.diff(tr.thread[ev]) > 0)  # lanes in order, one event each here
        assert F.block[f] == tr.block[ev[0]] and F.warp[f] == tr.warp[ev[0]]
    # matmul 16x16, tile 8: 4 blocks x 2 warps x (1 start + 2 phases x (4 + 1 + 16 + 1) + 1 store + 1 end)
    assert F.n_frames == 4 * 2 * (1 + 2 * 22 + 2)


def test_block_order_then_phase_then_step_then_warp():
    F = Frames(matmul_tiled_trace(16, 8))
    key = np.stack([F.block, F.phase, F.step, F.warp], axis=1)
    assert all(tuple(key[i]) < tuple(key[i + 1]) for i in range(len(key) - 1))


def test_describe_says_what_happens_in_words():
    F = Frames(matmul_tiled_trace(16, 8))
    assert F.describe(2) == "block (0,0) · warp 0 · phase 1 of 5 · step 1: all 32 lanes load A[0..3, 0..7] (line 10)"
    b = F.next_barrier(0)
    assert "barrier opens" in F.describe(b) and "all 64 threads" in F.describe(b)
    R = Frames(reduction_trace(1, 64))
    # stride 16: only 16 of warp 0's lanes add (the rest are diverged)
    f = next(f for f in range(R.n_frames) if R.n_lanes[f] == 16)
    assert R.describe(f).split(": ", 1)[1].startswith("16 of 32 lanes read shared s[")


def test_navigation_barriers_blocks_steps():
    F = Frames(matmul_tiled_trace(16, 8))
    b1 = F.next_barrier(0)
    assert F.kind[b1] == EventKind.BARRIER and F.waiting_warps[b1] == 2
    assert F.prev_barrier(b1) == b1 if b1 == F.barrier_complete_frames[0] else True
    assert F.prev_barrier(F.next_barrier(b1)) == b1
    assert len(F.barrier_complete_frames) == 4 * 2 * 2  # 4 blocks x 2 phases x 2 barriers
    nb = F.next_block(0)
    assert F.block[nb] == 1 and F.block[nb - 1] == 0
    assert F.prev_block(nb) == 0 and F.prev_block(nb + 3) == nb
    s = F.next_step(0)  # both warps did step 0
    assert F.step[s] == 1 and F.warp[s] == 0 and s == 2
    w = F.next_warp_step(0)
    assert (F.block[w], F.warp[w], F.step[w]) == (0, 0, 1)
    assert F.prev_warp_step(w) == 0
    last = F.n_frames - 1
    assert F.next_block(last) == last and F.next_barrier(last) == last


def test_block_states_over_time():
    F = Frames(matmul_tiled_trace(16, 8))
    s = F.block_states(0)
    assert list(s) == [BlockState.RESIDENT, BlockState.WAITING, BlockState.WAITING, BlockState.WAITING]
    w = F.next_barrier(0) - 1  # warp 0 waits, warp 1 not there yet
    assert F.block_states(w)[0] == BlockState.BARRIER
    s = F.block_states(F.next_block(0))
    assert list(s[:2]) == [BlockState.DONE, BlockState.RESIDENT]
    s = F.block_states(F.n_frames - 1)
    assert list(s[:3]) == [BlockState.DONE] * 3


def test_wave_order_interleaves_resident_blocks():
    F = Frames(matmul_tiled_trace(16, 8), order="wave", blocks_per_wave=2)
    assert set(F.block[:4]) == {0, 1}
    s = F.block_states(3)
    assert s[0] != BlockState.WAITING and s[1] != BlockState.WAITING and s[2] == BlockState.WAITING
    assert F.block[F.next_block(0)] in (2, 3)


def test_lane_states_active_diverged_barrier_exited():
    R = Frames(reduction_trace(1, 64))
    f = next(f for f in range(R.n_frames) if R.n_lanes[f] == 16)
    ls = R.lane_states(0, f)
    assert list(ls[:16]) == [LaneState.ACTIVE] * 16
    assert list(ls[16:32]) == [LaneState.DIVERGED] * 16
    assert set(ls[32:]) <= {LaneState.IDLE, LaneState.BARRIER}
    b = R.next_barrier(0)
    assert set(R.lane_states(0, b)) == {LaneState.BARRIER}
    assert set(R.lane_states(0, R.n_frames - 1)) <= {LaneState.EXITED, LaneState.ACTIVE}
    V = Frames(vector_add_trace(200, 64))
    assert set(V.lane_states(1, 0)) == {LaneState.NOT_STARTED}
    # last block: 200 - 192 = 8 lanes in range, the other 24 of warp 0 diverged at the load
    f = next(f for f in range(V.n_frames) if V.block[f] == 3 and V.kind[f] == EventKind.GLOBAL_LOAD)
    ls = V.lane_states(3, f)
    assert (ls[:8] == LaneState.ACTIVE).all() and (ls[8:32] == LaneState.DIVERGED).all()
    assert "8 of 32 lanes load a[192..199]" in V.describe(f)


def test_bad_frame_index_is_a_clear_error():
    F = Frames(vector_add_trace())
    with pytest.raises(IndexError, match="out of range"):
        F.events(F.n_frames)
    with pytest.raises(ValueError, match="order"):
        Frames(vector_add_trace(), order="random")


def test_model_imports_no_qt_or_numba():
    import subprocess
    import sys
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('PySide6', 'numba', 'pyqtgraph'): raise ImportError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import gpuviz.model.frames, gpuviz.model.playback, gpuviz.model.selection\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_barrier_opens_at_exactly_the_frames_where_a_barrier_completes_even_from_an_unsorted_index():
    F = Frames(matmul_tiled_trace(16, 8))
    opens = set(F.barrier_complete_frames.tolist())
    assert len(opens) == 16
    assert [f for f in range(F.n_frames) if F.barrier_opens_at(f)] == sorted(opens)
    G = Frames(matmul_tiled_trace(16, 8))
    G.barrier_complete_frames = G.barrier_complete_frames[::-1].copy()  # as a file's index could hold them
    assert [f for f in range(G.n_frames) if G.barrier_opens_at(f)] == sorted(opens)
    assert not G.barrier_opens_at(-1) and not G.barrier_opens_at(G.n_frames + 5)
