"""Playback model and commands, without a window."""

import pytest

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


def test_play_to_the_next_barrier_or_block_pauses_there():
    """A demo's pace: play up to where the barrier opens (or the next block starts), then stop to talk."""
    F = Frames(matmul_tiled_trace(16, 8))
    pb = Playback(frames=F, fps=10)
    target = pbm.play_to_next_barrier(pb, now=0.0)
    assert target == F.next_barrier(0) > 1 and pb.playing
    t = 0.0
    while pb.playing and t < 1000:
        t += 0.1
        pb.tick(t)
    assert pb.frame == target and not pb.playing and pb.stop_at is None  # stopped on it, not past it
    nxt = pbm.play_to_next_block(pb, now=t)
    assert nxt == F.next_block(target)
    pb.tick(t + 10_000)  # however late the next tick, it stops at the block
    assert pb.frame == nxt and not pb.playing


def test_a_launch_plays_in_about_a_minute_at_speed_one():
    """Finding 14: the default launch (2,528 frames) took 10.5 minutes at 4 frames/s."""
    assert pbm.demo_fps(2528) * 60 == pytest.approx(2528, rel=0.02)
    assert pbm.demo_fps(100) == 4.0  # a short launch stays readable frame by frame
    assert pbm.demo_fps(10_000_000) == 120.0


def test_the_window_plays_the_default_launch_in_about_a_minute(qapp):
    from gpuviz.app import default_trace
    from gpuviz.ui.session import Session

    s = Session()
    s.set_trace(default_trace())
    assert 50 <= s.frames.n_frames / s.playback.rate <= 70
