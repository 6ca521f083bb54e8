"""Playback: which frame is shown, whether it plays, how fast. A Qt-free model that widgets observe.

The state (``frame``, ``n_frames``, ``playing``, ``fps``, ``speed``, ``loop``) lives here, not in a
widget; every command (``step_forward``, ``next_barrier``, ``first`` ...) is a plain function of a
:class:`Playback`, so it is testable without a window and bindable to keys, menus and a presenter's
clicker alike.

Time is passed in by whoever drives playback (a Qt timer, a test): :meth:`Playback.tick` advances by
elapsed seconds x ``fps`` x ``speed`` and jumps straight to the frame that is due, dropping the
frames in between when drawing falls behind. Nothing is ever queued, so playback speed stays true on a
slow projector laptop.

Observers: ``playback.observe(callback)``; ``callback(name)`` is called after a field changes, with
``name`` one of ``"frame"``, ``"n_frames"``, ``"playing"``, ``"fps"``, ``"speed"``, ``"loop"``.
"""

from __future__ import annotations

from typing import Callable

#: speed multipliers offered by speed_up/speed_down
SPEEDS = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
#: a launch plays through in about this many seconds at speed 1 (a demo's pace), within the fps bounds below
DEMO_SECONDS = 60.0
DEMO_FPS_RANGE = (4.0, 120.0)


def demo_fps(n_frames: int, seconds: float = DEMO_SECONDS) -> float:
    """The frames per second that play ``n_frames`` in about ``seconds``: a short launch no faster than
    4 frames a second (each frame readable), a long one no faster than 120."""
    lo, hi = DEMO_FPS_RANGE
    return float(min(hi, max(lo, round(max(0, int(n_frames)) / seconds))))


class Playback:
    """Frame position and play state of one trace's animation."""

    def __init__(self, n_frames: int = 0, fps: float = 4.0, frames=None):
        self._frame = 0
        self._n_frames = max(0, int(n_frames))
        self._playing = False
        self._fps = float(fps)
        self._speed = 1.0
        self._loop = False
        self._observers: list[Callable[[str], None]] = []
        self._clock_t: float | None = None  # time of the last tick while playing
        self._carry = 0.0  # fraction of a frame owed from earlier ticks
        self.frames = frames  # a gpuviz.model.frames.Frames (navigation commands use it), or None
        self.dropped = 0  # frames skipped because drawing fell behind (for the status bar and tests)
        self.stop_at: int | None = None  # playing pauses on reaching this frame (play to the next barrier)
        if frames is not None:
            self._n_frames = frames.n_frames

    # ---- observers -----------------------------------------------------------------------------
    def observe(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """Call ``callback(field_name)`` after each change; returns a function that unsubscribes."""
        self._observers.append(callback)
        return lambda: self._observers.remove(callback) if callback in self._observers else None

    def _notify(self, name: str) -> None:
        for cb in list(self._observers):
            cb(name)

    # ---- fields --------------------------------------------------------------------------------
    @property
    def frame(self) -> int:
        return self._frame

    @frame.setter
    def frame(self, f: int) -> None:
        f = self.clamp(f)
        if f != self._frame:
            self._frame = f
            self._notify("frame")

    def clamp(self, f) -> int:
        return 0 if self._n_frames == 0 else min(max(int(f), 0), self._n_frames - 1)

    @property
    def n_frames(self) -> int:
        return self._n_frames

    def set_frames(self, frames) -> None:
        """Attach a new :class:`Frames` (a new trace): back to frame 0, stopped."""
        self.frames = frames
        self.set_n_frames(frames.n_frames if frames is not None else 0)

    def set_n_frames(self, n: int) -> None:
        self.pause()
        self._n_frames = max(0, int(n))
        self._notify("n_frames")
        self._frame = 0
        self._notify("frame")  # even at the same index: a new trace is a new frame to draw

    @property
    def playing(self) -> bool:
        return self._playing

    @property
    def fps(self) -> float:
        return self._fps

    @fps.setter
    def fps(self, value: float) -> None:
        value = float(value)
        if not value > 0:
            raise ValueError(f"fps must be positive, got {value}")
        if value != self._fps:
            self._fps = value
            self._notify("fps")

    @property
    def speed(self) -> float:
        return self._speed

    @speed.setter
    def speed(self, value: float) -> None:
        value = float(value)
        if not value > 0:
            raise ValueError(f"speed must be positive, got {value}")
        if value != self._speed:
            self._speed = value
            self._notify("speed")

    @property
    def rate(self) -> float:
        """Frames per second actually played: ``fps * speed``."""
        return self._fps * self._speed

    @property
    def loop(self) -> bool:
        return self._loop

    @loop.setter
    def loop(self, value: bool) -> None:
        value = bool(value)
        if value != self._loop:
            self._loop = value
            self._notify("loop")

    # ---- play/pause and the clock ----------------------------------------------------------------
    def play(self, now: float | None = None) -> None:
        if self._n_frames <= 1 or self._playing:
            return
        if self._frame >= self._n_frames - 1 and not self._loop:
            self._frame = 0  # play from the start again rather than doing nothing
            self._notify("frame")
        self._playing = True
        self._clock_t = now
        self._carry = 0.0
        self._notify("playing")

    def pause(self) -> None:
        self.stop_at = None
        if self._playing:
            self._playing = False
            self._clock_t = None
            self._notify("playing")

    def toggle(self, now: float | None = None) -> None:
        self.pause() if self._playing else self.play(now)

    def tick(self, now: float) -> int:
        """Advance by the time elapsed since the last tick; returns how many frames were advanced.

        Only the frame that is due is shown: when the caller drew slowly, the frames in between are
        dropped (counted in ``dropped``), never queued.
        """
        if not self._playing:
            return 0
        if self._clock_t is None:
            self._clock_t = now
            return 0
        due = (now - self._clock_t) * self.rate + self._carry
        self._clock_t = now
        advance = int(due + 1e-9)  # 0.1 s x 20 fps is 1.9999...: float noise must not drop a frame
        self._carry = max(0.0, due - advance)
        if advance <= 0:
            return 0
        if advance > 1:
            self.dropped += advance - 1
        target = self._frame + advance
        if self.stop_at is not None and target >= self.stop_at > self._frame:
            self.frame = self.stop_at
            self.pause()
            return advance
        last = self._n_frames - 1
        if target > last:
            if self._loop:
                target %= self._n_frames
            else:
                target = last
        self.frame = target
        if target == last and not self._loop:
            self.pause()
        return advance

    def __repr__(self) -> str:
        state = "playing" if self._playing else "paused"
        return f"<Playback frame {self._frame}/{self._n_frames} {state} {self.rate:g} fps loop={self._loop}>"


# ---- commands: plain functions of a Playback ------------------------------------------------------
def _go(pb: Playback, f: int) -> int:
    pb.pause()
    pb.frame = f
    return pb.frame


def step_forward(pb: Playback) -> int:
    return _go(pb, pb.frame + 1)


def step_back(pb: Playback) -> int:
    return _go(pb, pb.frame - 1)


def first(pb: Playback) -> int:
    return _go(pb, 0)


def last(pb: Playback) -> int:
    return _go(pb, pb.n_frames - 1)


def goto(pb: Playback, f: int) -> int:
    return _go(pb, f)


def _nav(pb: Playback, method: str) -> int:
    if pb.frames is None or pb.n_frames == 0:
        return pb.frame
    return _go(pb, getattr(pb.frames, method)(pb.frame))


def next_barrier(pb: Playback) -> int:
    """Jump to the next frame where a barrier opens (every warp of the block reached it)."""
    return _nav(pb, "next_barrier")


def prev_barrier(pb: Playback) -> int:
    return _nav(pb, "prev_barrier")


def next_block(pb: Playback) -> int:
    return _nav(pb, "next_block")


def prev_block(pb: Playback) -> int:
    return _nav(pb, "prev_block")


def next_step(pb: Playback) -> int:
    """The next lockstep step: every warp of the block executes its next instruction."""
    return _nav(pb, "next_step")


def prev_step(pb: Playback) -> int:
    return _nav(pb, "prev_step")


def next_warp_step(pb: Playback) -> int:
    """The current warp's next instruction (skipping the other warps)."""
    return _nav(pb, "next_warp_step")


def prev_warp_step(pb: Playback) -> int:
    return _nav(pb, "prev_warp_step")


def play_until(pb: Playback, f: int, now: float | None = None) -> int:
    """Play, and pause on reaching frame ``f`` (a demo: watch the warps run up to the barrier, then talk)."""
    f = pb.clamp(f)
    if f <= pb.frame:
        return pb.frame
    pb.pause()
    pb.play(now)
    pb.stop_at = f
    return f


def play_to_next_barrier(pb: Playback, now: float | None = None) -> int:
    """Play up to where the next barrier opens; returns that frame."""
    if pb.frames is None or pb.n_frames == 0:
        return pb.frame
    return play_until(pb, pb.frames.next_barrier(pb.frame), now)


def play_to_next_block(pb: Playback, now: float | None = None) -> int:
    """Play to the first frame of the next block; returns that frame."""
    if pb.frames is None or pb.n_frames == 0:
        return pb.frame
    return play_until(pb, pb.frames.next_block(pb.frame), now)


def toggle_play(pb: Playback, now: float | None = None) -> bool:
    pb.toggle(now)
    return pb.playing


def toggle_loop(pb: Playback) -> bool:
    pb.loop = not pb.loop
    return pb.loop


def speed_up(pb: Playback) -> float:
    faster = [s for s in SPEEDS if s > pb.speed + 1e-9]
    pb.speed = faster[0] if faster else pb.speed
    return pb.speed


def speed_down(pb: Playback) -> float:
    slower = [s for s in SPEEDS if s < pb.speed - 1e-9]
    pb.speed = slower[-1] if slower else pb.speed
    return pb.speed
