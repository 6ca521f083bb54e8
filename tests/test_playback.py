"""Playback model and commands, without a window."""

from gpuviz.model import playback as pbm
from gpuviz.model.frames import Frames
from gpuviz.model.playback import Playback
from gpuviz.model.selection import Selection
from tests.ui_traces import matmul_tiled_trace


def test_commands_move_the_frame_and_notify():
    F = Frames(matmul_tiled_trace(16, 8))
    pb = Playback(frames=F)
    seen = []
    pb.observe(seen.append)
    assert pbm.step_forward(pb) == 1 and seen == ["frame"]
    assert pbm.step_back(pb) == 0
    assert pbm.step_back(pb) == 0  # clamps at the start, no notification
    assert seen == ["frame", "frame"]
    assert pbm.last(pb) == F.n_frames - 1 and pbm.step_forward(pb) == F.n_frames - 1
    assert pbm.first(pb) == 0
    assert pbm.next_barrier(pb) == F.next_barrier(0)
    assert pbm.next_block(pb) == F.next_block(F.next_barrier(0))
    assert pbm.prev_block(pb) == 0
    assert pbm.next_step(pb) == 2 and pbm.prev_step(pb) == 0
    assert pbm.next_warp_step(pb) == 2


def test_tick_advances_by_elapsed_time_and_drops_frames():
    pb = Playback(n_frames=100, fps=10)
    pb.play(now=0.0)
    assert pb.playing
    assert pb.tick(0.05) == 0 and pb.frame == 0  # half a frame owed
    assert pb.tick(0.1) == 1 and pb.frame == 1
    # the caller was slow for 1 s: jump straight to the frame that is due, the others are dropped
    assert pb.tick(1.1) == 10 and pb.frame == 11 and pb.dropped == 9
    pb.speed = 2.0
    pb.tick(1.2)
    assert pb.frame == 13
    pb.tick(100.0)
    assert pb.frame == 99 and not pb.playing  # stops at the end without loop


def test_loop_wraps_and_speed_steps():
    pb = Playback(n_frames=10, fps=10)
    pbm.toggle_loop(pb)
    pb.play(now=0.0)
    pb.tick(1.5)
    assert pb.frame == 5 and pb.playing
    assert pbm.speed_up(pb) == 2.0 and pbm.speed_down(pb) == 1.0 and pbm.speed_down(pb) == 0.5
    pbm.toggle_play(pb)
    assert not pb.playing
    pbm.step_forward(pb)  # stepping pauses playback
    assert not pb.playing


def test_play_at_end_restarts():
    pb = Playback(n_frames=5)
    pbm.last(pb)
    pb.play(now=0.0)
    assert pb.frame == 0 and pb.playing


def test_selection_links_fields_and_notifies_once():
    s = Selection(warp_size=32)
    calls = []
    s.observe(lambda: calls.append(s.state))
    s.select_thread(3, 70)
    assert (s.block, s.warp, s.thread) == (3, 2, 70) and len(calls) == 1
    s.select_cell(0, 17)
    assert (s.thread, s.array, s.index) == (70, 0, 17)
    s.select_block(1)
    assert (s.block, s.warp, s.thread, s.index) == (1, None, None, 17)
    s.select_block(1)
    assert len(calls) == 3
    s.clear()
    assert s.empty
