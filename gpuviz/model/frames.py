"""Frames: the steps of the animation, each one something a teacher can say out loud.

The finest frame is **one warp instruction**: the events of one warp of one block at one lockstep issue
step (``trace.issue_step``). "Block (1,0) · warp 2 · step 5: 32 lanes load A[3, 0..31]."

Frames are ordered so the animation reads like the launch:

``order="block"`` (default)
    block by block (in linear block order), then barrier phase, then issue step, then warp. Inside a
    block every warp does its k-th instruction before any does its (k+1)-th, and no warp passes a
    ``syncthreads`` before every warp reached it.
``order="wave"``
    ``blocks_per_wave`` blocks are resident together: wave, then phase, then step, then block, then
    warp. The blocks of a wave advance side by side, as they would on the SMs of a GPU.

A kernel with ``grid.sync()`` (a barrier site of scope "grid", ``Site.scope``) is first ordered by *grid phase*,
the grid barriers its thread passed (``Trace.grid_phase``): every block's frames before a grid barrier come before
any frame after it, in either order, as no thread of any block passes it before every thread has arrived. The
frames of one grid barrier complete together, at the last block's last arrival: the blocks that came first show
"at barrier" until then.

``Frames.events(f)`` maps a frame to the indices of its events (into the trace's field arrays) in O(1)
through a precomputed permutation and offsets, so scrubbing is instant at any size. Everything that
does not change per frame (per-frame block/warp/step/phase/line/kind arrays, first and last frame of
each block and thread, barrier bookkeeping) is computed once, vectorised, when the object is built.

numpy only: no Qt, no numba.
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from functools import cached_property

import numpy as np

from .trace import EventKind, Trace

_BARRIER_BIT = 1 << int(EventKind.BARRIER)


class BlockState(enum.IntEnum):
    """What a block is doing at a frame."""

    WAITING = 0  # not started yet (not resident)
    RESIDENT = 1  # running
    BARRIER = 2  # running, with warps waiting at a syncthreads (or at a grid.sync(), for the whole grid)
    DONE = 3  # all its threads exited

    @property
    def label(self) -> str:
        return _BLOCK_LABELS[self]


_BLOCK_LABELS = {
    BlockState.WAITING: "waiting",
    BlockState.RESIDENT: "resident",
    BlockState.BARRIER: "at barrier",
    BlockState.DONE: "done",
}


class LaneState(enum.IntEnum):
    """What one thread (lane) is doing at a frame."""

    NOT_STARTED = 0  # its block, or its warp, has not started yet
    IDLE = 1  # started, but its warp is not the one issuing now
    ACTIVE = 2  # executes the current warp instruction
    DIVERGED = 3  # in the issuing warp but masked off: it sits on another branch
    BARRIER = 4  # waiting at a syncthreads for the rest of its block (at a grid.sync(): of the grid)
    EXITED = 5  # ran to the end of the kernel

    @property
    def label(self) -> str:
        return _LANE_LABELS[self]


_LANE_LABELS = {
    LaneState.NOT_STARTED: "not started",
    LaneState.IDLE: "idle",
    LaneState.ACTIVE: "active",
    LaneState.DIVERGED: "diverged",
    LaneState.BARRIER: "at barrier",
    LaneState.EXITED: "exited",
}

# kind -> (verb for "N lanes ...", whether an array index follows)
_VERBS = {
    EventKind.START: "start",
    EventKind.END: "exit",
    EventKind.GLOBAL_LOAD: "load",
    EventKind.GLOBAL_STORE: "store",
    EventKind.SHARED_LOAD: "read shared",
    EventKind.SHARED_STORE: "write shared",
    EventKind.ATOMIC: "atomically update",
    EventKind.BARRIER: "reach syncthreads",
    EventKind.WARP_OP: "exchange values (warp op)",
}


def _mixed_radix_key(columns: list[np.ndarray]) -> np.ndarray | None:
    """Combine non-negative integer columns (most significant first) into one int64 key, or None
    when they do not fit in 63 bits (the caller then falls back to ``np.lexsort``)."""
    radices = [int(c.max()) + 1 if len(c) else 1 for c in columns]
    total = 1
    for r in radices:
        total *= r
    if total >= 2**62:
        return None
    key = np.zeros(len(columns[0]), dtype=np.int64)
    for col, radix in zip(columns, radices):
        key *= radix
        key += col
    return key


def format_block(launch, b: int) -> str:
    """Block coordinates as people write them: ``3`` for 1-d grids, ``(1,0)`` for 2-d, ``(1,0,2)`` for 3-d."""
    x, y, z = (int(v) for v in launch.block_coords(int(b)))
    gx, gy, gz = launch.grid
    if gy == 1 and gz == 1:
        return str(x)
    if gz == 1:
        return f"({x},{y})"
    return f"({x},{y},{z})"


def format_thread(launch, t: int) -> str:
    x, y, z = (int(v) for v in launch.thread_coords(int(t)))
    bx, by, bz = launch.block
    if by == 1 and bz == 1:
        return str(x)
    if bz == 1:
        return f"({x},{y})"
    return f"({x},{y},{z})"


def format_indices(info, flat: np.ndarray) -> str:
    """``A[3, 0..31]``: the elements of an array a warp touches, dimension by dimension."""
    flat = np.unique(np.asarray(flat, dtype=np.int64))
    flat = flat[flat >= 0]
    if len(flat) == 0:
        return info.name
    shape = info.shape if info.shape else (info.size,)
    if int(flat.max()) >= int(np.prod(shape)):
        return f"{info.name}[{int(flat.min())}..{int(flat.max())}] (out of bounds)"
    coords = np.unravel_index(flat, shape)
    parts = []
    for c in coords:
        parts.append(_index_range(np.unique(c)))
    return f"{info.name}[{', '.join(parts)}]"


def _index_range(u: np.ndarray) -> str:
    """Sorted distinct indices in words: ``5``, ``0..31`` (every one), ``0, 2, …, 30`` (a stride),
    ``3, 17`` (two), else ``12 of 0..200`` (scattered): never a range that claims cells not touched."""
    lo, hi = int(u[0]), int(u[-1])
    if lo == hi:
        return str(lo)
    if len(u) == hi - lo + 1:
        return f"{lo}..{hi}"
    if len(u) == 2:
        return f"{lo}, {hi}"
    d = np.diff(u)
    if (d == d[0]).all():
        return f"{lo}, {lo + int(d[0])}, …, {hi}"
    return f"{len(u)} of {lo}..{hi}"


#: events handled at a time by the passes over every event that numpy would otherwise do in one call holding the
#: GIL (np.repeat, np.cumsum): the GUI thread shares it with the thread that builds frames
SPAN = 1 << 20


def _spans(n: int, size: int | None = None):
    size = max(int(size or SPAN), 1)
    for i in range(0, n, size):
        yield i, min(i + size, n)


def frames_at(offsets: np.ndarray, start: int, stop: int) -> np.ndarray:
    """The frame of each position ``start..stop-1`` of the frame order (int64), given the frames' ``offsets``
    (rising from 0, one or more positions per frame): the frames the span covers, each repeated for as many of its
    positions as the span holds."""
    offs = np.asarray(offsets)
    f0 = int(np.searchsorted(offs, start, side="right")) - 1
    f1 = int(np.searchsorted(offs, stop, side="left"))
    return np.repeat(np.arange(f0, f1, dtype=np.int64), np.diff(np.clip(offs[f0 : f1 + 1], start, stop)))


class Frames:
    """The frames of one trace, with O(1) frame -> events and per-frame summaries."""

    #: what a saved index holds (see :mod:`gpuviz.model.index`): every array ``_build`` computes
    STORED = (
        "perm", "offsets", "block", "warp", "step", "phase", "line", "array", "kind_mask", "kind", "n_lanes",
        "frame_of_event", "block_first", "block_last", "block_phases", "barrier_frames",
        "barrier_complete_frames", "release_frame", "waiting_warps", "_by_block_key", "step_starts",
        "unit_starts", "block_starts", "memory_events", "line_count_table",
    )

    def __init__(self, trace: Trace, order: str = "block", blocks_per_wave: int = 4, arrays: dict | None = None,
                 checkpoint=None, event_phase: np.ndarray | None = None, narration=None):
        """``arrays``: the :attr:`STORED` arrays of these frames, read from a trace's index, so nothing is
        sorted again (:class:`gpuviz.model.prepared.Prepared` passes its index's; without them the events are
        sorted). ``event_phase``: the barrier phase of every event when known (the index's), else
        ``trace.phase``. ``narration``: the narrator's facts saved with the same index (``Narrator.state()``),
        which a :class:`~gpuviz.model.narration.Narrator` of these frames reads instead of computing them.
        ``checkpoint(fraction)``: called between the stages of the build (a background job reports
        progress and cancels by raising from it)."""
        if order not in ("block", "wave"):
            raise ValueError(f"frame order must be 'block' or 'wave', got {order!r}")
        if order == "wave" and blocks_per_wave < 1:
            raise ValueError(f"blocks_per_wave must be at least 1, got {blocks_per_wave}")
        self.trace = trace
        self.launch = trace.launch
        self.order = order
        self.blocks_per_wave = int(blocks_per_wave) if order == "wave" else 1
        self._lane_cache: OrderedDict[int, tuple] = OrderedDict()
        self._event_phase = event_phase
        #: the narrator's saved facts for these frames (``Narrator.state()``), or None: see ``__init__``
        self.saved_narration = narration if arrays is not None else None
        if arrays is not None:
            self._adopt(arrays)
        else:
            self._build(checkpoint or (lambda _fraction: None))

    @property
    def event_phase(self) -> np.ndarray:
        """The barrier phase of every event of the trace (the index's when these frames were adopted from one)."""
        return self._event_phase if self._event_phase is not None else self.trace.phase

    def _adopt(self, arrays: dict) -> None:
        missing = [k for k in self.STORED if k not in arrays]
        if missing:
            raise ValueError(f"saved frames lack {', '.join(missing)}")
        for k in self.STORED:
            setattr(self, k, arrays[k])
        self.n_frames = len(self.offsets) - 1
        if len(self.perm) != len(self.trace) or (self.n_frames and int(self.offsets[-1]) != len(self.trace)):
            raise ValueError(f"saved frames cover {len(self.perm):,} events, the trace has {len(self.trace):,}")

    def stored_arrays(self) -> dict:
        """The arrays a trace file's index keeps of these frames (see :attr:`STORED`)."""
        return {k: getattr(self, k) for k in self.STORED}

    # ---- construction --------------------------------------------------------------------------
    def _build(self, checkpoint) -> None:
        tr = self.trace
        n = len(tr)
        block = tr.block.astype(np.int64)
        warp = tr.warp.astype(np.int64)
        step = np.maximum(tr.issue_step, 0).astype(np.int64)
        checkpoint(0.05)
        phase = self.event_phase.astype(np.int64)
        checkpoint(0.35)
        thread = tr.thread.astype(np.int64)
        seq = tr.seq.astype(np.int64)
        if self.order == "block":
            major = [block, phase, step, warp]
        else:
            major = [block // self.blocks_per_wave, phase, step, block, warp]
        grid_phase = tr.grid_phase.astype(np.int64) if self.blocks_interleave_at_grid_barriers else None
        if grid_phase is not None:  # no block passes a grid.sync() before every block reached it
            major = [grid_phase] + major
        key = _mixed_radix_key(major + [thread, seq]) if n else None
        if key is not None:
            perm = np.argsort(key, kind="stable")
        elif n:
            perm = np.lexsort(tuple(reversed(major + [thread, seq])))
        else:
            perm = np.zeros(0, dtype=np.int64)
        checkpoint(0.7)
        # frame boundaries: where (block, warp, phase, step) changes along the sorted order
        if n:
            b, w, p, s = block[perm], warp[perm], phase[perm], step[perm]
            change = (b[1:] != b[:-1]) | (w[1:] != w[:-1]) | (p[1:] != p[:-1]) | (s[1:] != s[:-1])
            if grid_phase is not None:
                g = grid_phase[perm]
                change |= g[1:] != g[:-1]
            starts = np.r_[0, np.flatnonzero(change) + 1]
        else:
            starts = np.zeros(0, dtype=np.int64)
        del key, major, thread, seq, grid_phase
        # event positions fit 32 bits below 2**31 events: half the memory of the largest per-event array
        self.perm = perm.astype(np.int32 if n < 2**31 else np.int64)
        del perm
        self.offsets = np.r_[starts, n].astype(np.int64)
        self.n_frames = len(starts)
        self._per_frame(starts)
        checkpoint(0.85)
        self.frame_of_event = np.empty(n, dtype=np.int32)
        for i, j in _spans(n):  # a span at a time: np.repeat over every event held the GIL for 0.3 s
            self.frame_of_event[self.perm[i:j]] = frames_at(self.offsets, i, j)
        self._blocks()
        self._barriers()
        self._steps()

    def _per_frame(self, starts: np.ndarray) -> None:
        """Per-frame summaries (one entry per frame), from the frames' first events and their lanes."""
        tr, n = self.trace, len(self.trace)
        first_ev = self.perm[starts] if n else np.zeros(0, dtype=np.int64)
        self.block = tr.block[first_ev].astype(np.int32)
        self.warp = tr.warp[first_ev].astype(np.int32)
        self.step = tr.issue_step[first_ev].astype(np.int32)
        self.phase = self.event_phase[first_ev].astype(np.int32)
        self.line = tr.line[first_ev].astype(np.int32)
        self.array = tr.array[first_ev].astype(np.int16)
        kinds = tr.kind[self.perm].astype(np.int64)
        self.kind_mask = (
            np.bitwise_or.reduceat(np.left_shift(1, kinds), starts) if n else np.zeros(0, dtype=np.int64)
        ).astype(np.int32)
        # the frame's kind: a barrier wins (it is what the frame is about), else its first event's kind
        self.kind = np.where(self.kind_mask & _BARRIER_BIT, int(EventKind.BARRIER), tr.kind[first_ev]).astype(np.uint8)
        th_sorted = tr.thread[self.perm]
        new_lane = np.ones(n, dtype=np.int64)
        if n:
            new_lane[1:] = th_sorted[1:] != th_sorted[:-1]
            new_lane[starts] = 1
        self.n_lanes = (np.add.reduceat(new_lane, starts) if n else np.zeros(0, dtype=np.int64)).astype(np.int32)

    def _blocks(self) -> None:
        """First and last frame each block appears in (-1 when it has no events), and its barrier phases."""
        nb = self.launch.n_blocks
        self.block_first = np.full(nb, -1, dtype=np.int64)
        self.block_last = np.full(nb, -1, dtype=np.int64)
        if self.n_frames:
            ub, first_idx = np.unique(self.block, return_index=True)
            self.block_first[ub] = first_idx
            ub_r, last_idx_r = np.unique(self.block[::-1], return_index=True)
            self.block_last[ub_r] = self.n_frames - 1 - last_idx_r
        # number of barrier phases each block goes through (barriers + 1)
        self.block_phases = np.zeros(nb, dtype=np.int32)
        if self.n_frames:
            np.maximum.at(self.block_phases, self.block, self.phase + 1)

    def _barriers(self) -> None:
        """Barriers: frames where a warp executes a barrier; a barrier *completes* at the last such frame of its
        (block, phase): every warp of the block is then waiting. A grid barrier (``grid.sync()``) completes at the
        last such frame of its grid phase, over every block. Also the warps of its block waiting after each frame."""
        is_bar = (self.kind_mask & _BARRIER_BIT) != 0
        self.barrier_frames = np.flatnonzero(is_bar).astype(np.int64)
        group = self.block.astype(np.int64) * (int(self.phase.max()) + 1 if self.n_frames else 1) + self.phase
        opens = self._grid_barrier_groups(group)
        if len(self.barrier_frames):
            g = opens[self.barrier_frames]
            _, last_in_group = np.unique(g[::-1], return_index=True)
            self.barrier_complete_frames = np.sort(self.barrier_frames[len(g) - 1 - last_in_group])
        else:
            self.barrier_complete_frames = np.zeros(0, dtype=np.int64)
        # for each barrier frame, the frame at which that barrier opens (-1 for other frames)
        self.release_frame = np.full(self.n_frames, -1, dtype=np.int64)
        if len(self.barrier_complete_frames):
            cg = opens[self.barrier_complete_frames]
            o = np.argsort(cg)
            pos = np.searchsorted(cg[o], opens[self.barrier_frames])
            self.release_frame[self.barrier_frames] = self.barrier_complete_frames[o][pos]
        # warps waiting at a barrier in the frame's block right after the frame: count of barrier
        # frames so far within the frame's (block, phase), in frame order
        order = np.argsort(group, kind="stable")
        bar_sorted = is_bar[order].astype(np.int64)
        csum = np.cumsum(bar_sorted)
        g_sorted = group[order]
        g_start = np.r_[True, g_sorted[1:] != g_sorted[:-1]] if self.n_frames else np.zeros(0, dtype=bool)
        base = np.maximum.accumulate(np.where(g_start, csum - bar_sorted, 0)) if self.n_frames else csum
        self.waiting_warps = np.empty(self.n_frames, dtype=np.int32)
        self.waiting_warps[order] = csum - base

    def _grid_barrier_groups(self, group: np.ndarray) -> np.ndarray:
        """``group`` (a barrier's (block, phase) key per frame) with the frames at a grid barrier regrouped by their
        grid phase alone, past every (block, phase) key: one grid barrier is one barrier of every block."""
        at_grid = self.grid_barrier_frame
        if not at_grid.any():
            return group
        grid_phase = self.trace.grid_phase[self.perm[self.offsets[:-1]]].astype(np.int64)
        out = group.copy()
        out[at_grid] = int(group.max()) + 1 + grid_phase[at_grid]
        return out

    @cached_property
    def blocks_interleave_at_grid_barriers(self) -> bool:
        """Does the launch have a grid barrier site (``grid.sync()``)? Its blocks' frames then take turns, a grid
        phase at a time, so a block's frames are no longer one run."""
        return bool(len(self.trace.grid_barrier_sites))

    @cached_property
    def grid_barrier_frame(self) -> np.ndarray:
        """Per frame: does a warp reach a grid barrier (``grid.sync()``) in it? (from the events' sites, not kept in
        an index: only the grid barriers' own events are looked at)."""
        out = np.zeros(self.n_frames, dtype=bool)
        tr = self.trace
        if self.blocks_interleave_at_grid_barriers and tr.has("site"):
            at = np.flatnonzero((tr.kind == EventKind.BARRIER) & np.isin(tr.site, tr.grid_barrier_sites))
            out[self.frame_of_event[at]] = True
        return out

    def is_grid_barrier(self, f: int) -> bool:
        """Is frame ``f`` a warp reaching a ``grid.sync()``: a barrier every block of the grid waits at?"""
        return bool(self.grid_barrier_frame[self._check(f)])

    def grid_barrier_phases(self, block: int) -> np.ndarray:
        """The barrier phases of ``block`` that end at a ``grid.sync()`` (sorted)."""
        at = np.flatnonzero(self.grid_barrier_frame & (self.block == int(block)))
        return np.unique(self.phase[at]).astype(np.int64)

    def grid_barrier_arrivals(self, f: int) -> tuple[int, int, int]:
        """At grid barrier frame ``f``: (blocks whose every warp reached that grid barrier by ``f``, blocks recorded,
        threads there by ``f``)."""
        f = self._check(f)
        same = self.barrier_frames[self.release_frame[self.barrier_frames] == self.release_frame[f]]
        blocks, last = np.unique(self.block[same][::-1], return_index=True)  # each block's last arrival
        complete = int(np.count_nonzero(same[::-1][last] <= f))
        return complete, int(np.count_nonzero(self.block_first >= 0)), int(self.n_lanes[same[same <= f]].sum())

    def _steps(self) -> None:
        """Frames of each block in frame order, and where lockstep steps, blocks and waves start."""
        # frames of each block in frame order, for "latest frame of block b at or before f"
        self._by_block_key = np.sort(self.block.astype(np.int64) * max(self.n_frames, 1) + np.arange(self.n_frames))
        # lockstep steps: a new step starts where (block or wave, phase, step) changes
        if self.order == "block":
            unit = self.block.astype(np.int64)
        else:
            unit = self.block.astype(np.int64) // self.blocks_per_wave
        if self.n_frames:
            ch = (unit[1:] != unit[:-1]) | (self.phase[1:] != self.phase[:-1]) | (self.step[1:] != self.step[:-1])
            self.step_starts = np.r_[0, np.flatnonzero(ch) + 1].astype(np.int64)
            uch = unit[1:] != unit[:-1]
            self.unit_starts = np.r_[0, np.flatnonzero(uch) + 1].astype(np.int64)
        else:
            self.step_starts = np.zeros(0, dtype=np.int64)
            self.unit_starts = np.zeros(0, dtype=np.int64)
        self.block_starts = np.unique(self.block_first[self.block_first >= 0])

    # ---- frames -> events ------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.n_frames

    def _check(self, f: int) -> int:
        f = int(f)
        if not 0 <= f < self.n_frames:
            raise IndexError(f"frame {f} out of range: this trace has {self.n_frames} frames (0..{self.n_frames - 1})")
        return f

    def events(self, f: int) -> np.ndarray:
        """Indices (into the trace's event arrays) of the events of frame ``f``, lanes in order."""
        f = self._check(f)
        return self.perm[self.offsets[f] : self.offsets[f + 1]]

    def events_upto(self, f: int) -> np.ndarray:
        """Indices of every event of frames 0..f (inclusive), in frame order."""
        f = self._check(f)
        return self.perm[: self.offsets[f + 1]]

    def frame_of(self, event_index: int) -> int:
        return int(self.frame_of_event[int(event_index)])

    def warps_in_block(self) -> int:
        return self.launch.warps_per_block

    def lanes_in_warp(self, warp: int) -> int:
        L = self.launch
        return int(min(L.warp_size, L.threads_per_block - int(warp) * L.warp_size))

    # ---- navigation (each returns a frame index; it stays put when there is nowhere to go) ---------
    @staticmethod
    def _next_in(sorted_frames: np.ndarray, f: int, default: int) -> int:
        i = int(np.searchsorted(sorted_frames, f, side="right"))
        return int(sorted_frames[i]) if i < len(sorted_frames) else default

    @staticmethod
    def _prev_in(sorted_frames: np.ndarray, f: int, default: int) -> int:
        i = int(np.searchsorted(sorted_frames, f, side="left")) - 1
        return int(sorted_frames[i]) if i >= 0 else default

    def next_barrier(self, f: int) -> int:
        """The next frame at which a barrier completes (the last warp of a block reaches it)."""
        return self._next_in(self.barrier_complete_frames, f, f)

    def prev_barrier(self, f: int) -> int:
        return self._prev_in(self.barrier_complete_frames, f, f)

    def next_block(self, f: int) -> int:
        """The first frame of the next block (in ``wave`` order: of the next wave)."""
        return self._next_in(self._block_runs, f, f)

    def prev_block(self, f: int) -> int:
        """The start of the current block, or of the previous one when already at its start."""
        return self._prev_in(self._block_runs, f, f)

    @property
    def _block_runs(self) -> np.ndarray:
        """Where a block (a wave) starts a run of frames: its first frame, and with grid barriers each grid phase's."""
        return self.unit_starts if self.order == "wave" or self.blocks_interleave_at_grid_barriers else self.block_starts

    def next_step(self, f: int) -> int:
        """The first frame of the next lockstep step: every warp of the block did this one."""
        return self._next_in(self.step_starts, f, f)

    def prev_step(self, f: int) -> int:
        return self._prev_in(self.step_starts, f, f)

    def _warp_frames(self, f: int) -> np.ndarray:
        b, w = int(self.block[f]), int(self.warp[f])
        return self.frames_of_warp(b, w)

    def frames_of_warp(self, block: int, warp: int) -> np.ndarray:
        key = self._warp_keys
        k = int(block) * (self.launch.warps_per_block + 1) + int(warp)
        lo, hi = np.searchsorted(key, k, "left"), np.searchsorted(key, k, "right")
        return self._warp_order[lo:hi]

    @cached_property
    def _warp_order(self) -> np.ndarray:
        return np.argsort(self._warp_key_per_frame, kind="stable").astype(np.int64)

    @cached_property
    def _warp_key_per_frame(self) -> np.ndarray:
        return self.block.astype(np.int64) * (self.launch.warps_per_block + 1) + self.warp

    @cached_property
    def _warp_keys(self) -> np.ndarray:
        return self._warp_key_per_frame[self._warp_order]

    def next_warp_step(self, f: int) -> int:
        """The next instruction of the same warp (skipping the other warps' frames)."""
        f = self._check(f)
        return self._next_in(self._warp_frames(f), f, f)

    def prev_warp_step(self, f: int) -> int:
        f = self._check(f)
        return self._prev_in(self._warp_frames(f), f, f)

    def first_frame_of_block(self, block: int) -> int:
        return int(self.block_first[int(block)])

    def frames_of_thread(self, block: int, thread: int) -> np.ndarray:
        """Frames in which one thread executes, in order."""
        return np.unique(self.frame_of_event[self.thread_event_indices(block, thread)])

    # ---- state at a frame --------------------------------------------------------------------------
    def latest_frame_of_blocks(self, blocks: np.ndarray, f: int) -> np.ndarray:
        """For each block, its latest frame at or before ``f`` (-1 when it has none)."""
        blocks = np.asarray(blocks, dtype=np.int64)
        F = max(self.n_frames, 1)
        q = blocks * F + int(f)
        idx = np.searchsorted(self._by_block_key, q, side="right") - 1
        out = np.full(len(blocks), -1, dtype=np.int64)
        ok = idx >= 0
        k = self._by_block_key[np.maximum(idx, 0)]
        ok &= (k // F) == blocks
        out[ok] = k[ok] % F
        return out

    def block_states(self, f: int) -> np.ndarray:
        """A :class:`BlockState` (uint8) per block at frame ``f``."""
        f = self._check(f)
        first, last = self.block_first, self.block_last
        out = np.full(len(first), BlockState.WAITING, dtype=np.uint8)
        done = (last >= 0) & (last < f)
        out[done] = BlockState.DONE
        resident = np.flatnonzero((first >= 0) & (first <= f) & (last >= f))
        if len(resident):
            out[resident] = BlockState.RESIDENT
            latest = self.latest_frame_of_blocks(resident, f)
            at = np.maximum(latest, 0)
            waiting = self.waiting_warps[at] > 0
            # a block whose last frame was its arrival at a grid.sync() that opened since (another block's frame)
            # goes on: its warps are released, though it has not issued again yet
            waiting &= ~(self.grid_barrier_frame[at] & (self.release_frame[at] < f))
            out[resident[waiting & (latest >= 0)]] = BlockState.BARRIER
        return out

    def _block_events(self, block: int) -> tuple:
        """Per-block cache: the block's events in frame order (frame, thread, kind) and per-thread
        first/last frame."""
        block = int(block)
        hit = self._lane_cache.get(block)
        if hit is not None:
            self._lane_cache.move_to_end(block)
            return hit
        tr = self.trace
        ev = self.block_event_indices(block)
        fr = self.frame_of_event[ev].astype(np.int64)
        th = tr.thread[ev].astype(np.int64)
        kd = tr.kind[ev]
        T = self.launch.threads_per_block
        t_first = np.full(T, np.iinfo(np.int64).max, dtype=np.int64)
        t_last = np.full(T, -1, dtype=np.int64)
        if len(ev):
            np.minimum.at(t_first, th, fr)
            np.maximum.at(t_last, th, fr)
        hit = (fr, th, kd, t_first, t_last)
        self._lane_cache[block] = hit
        if len(self._lane_cache) > 8:
            self._lane_cache.popitem(last=False)
        return hit

    def block_event_indices(self, block: int) -> np.ndarray:
        """Indices of one block's events in frame order, read from the frames' span of that block (or of its
        wave), never by scanning every event of the trace."""
        block = int(block)
        if not self.n_frames or not 0 <= block < len(self.block_first) or self.block_first[block] < 0:
            return np.zeros(0, dtype=np.int64)
        f0, f1 = int(self.block_first[block]), int(self.block_last[block])
        ev = self.perm[int(self.offsets[f0]) : int(self.offsets[f1 + 1])]
        if self.order == "wave" or self.blocks_interleave_at_grid_barriers:  # blocks interleave: keep this one's
            ev = ev[self.trace.block[ev] == block]
        return ev.astype(np.int64)

    def thread_event_indices(self, block: int, thread: int) -> np.ndarray:
        """Indices of one thread's events in program order (from its block's events: no whole-trace sort)."""
        ev = self.block_event_indices(block)
        ev = ev[self.trace.thread[ev] == int(thread)]
        return ev[np.argsort(self.trace.seq[ev], kind="stable")]

    def lane_states(self, block: int, f: int) -> np.ndarray:
        """A :class:`LaneState` (uint8) per thread of ``block`` (linear thread order) at frame ``f``."""
        f = self._check(f)
        fr, th, kd, t_first, t_last = self._block_events(block)
        T = self.launch.threads_per_block
        out = np.full(T, LaneState.NOT_STARTED, dtype=np.uint8)
        started = t_first <= f
        out[started] = LaneState.IDLE
        out[t_last < f] = LaneState.EXITED
        out[t_last < 0] = LaneState.NOT_STARTED
        hi = int(np.searchsorted(fr, f, side="right"))
        lo = int(np.searchsorted(fr, f, side="left"))
        # waiting at a barrier: the thread's latest event so far is a BARRIER of a barrier that has not
        # released yet (the thread has events after f)
        if hi:
            last_idx = np.full(T, -1, dtype=np.int64)
            last_idx[th[:hi]] = np.arange(hi)
            has = last_idx >= 0
            at_bar = np.zeros(T, dtype=bool)
            li = last_idx[has]
            at_bar[has] = (kd[li] == EventKind.BARRIER) & (self.release_frame[fr[li]] >= f)
            at_bar &= t_last > f
            out[at_bar] = LaneState.BARRIER
        if int(self.block[f]) == int(block):
            w = int(self.warp[f])
            ws = self.launch.warp_size
            lanes = np.arange(w * ws, min((w + 1) * ws, T))
            live = (t_first[lanes] <= f) & (t_last[lanes] >= f) & (out[lanes] != LaneState.BARRIER)
            diverged = lanes[live]
            out[diverged] = LaneState.DIVERGED
            now = th[lo:hi]
            out[now] = LaneState.ACTIVE
            bar_now = now[kd[lo:hi] == EventKind.BARRIER]
            out[bar_now] = LaneState.BARRIER
        return out

    # ---- words -------------------------------------------------------------------------------------
    def describe(self, f: int) -> str:
        """The frame in words: ``block (1,0) · warp 2 · phase 3 of 8 · step 5: 32 lanes load A[3, 0..31]``."""
        if self.n_frames == 0:
            return "empty trace: no events were recorded"
        return " · ".join(self._where_parts(f)) + ": " + self.describe_action(f)

    def describe_where(self, f: int) -> str:
        """Where the frame is, on one line: ``block (1,0) · warp 2 · phase 3 of 8 · step 5 · line 38`` (presenter
        mode's title: the caption bar under the views says what the warp does)."""
        if self.n_frames == 0:
            return "empty trace: no events were recorded"
        parts = self._where_parts(f)
        line = int(self.line[self._check(f)])
        return " · ".join(parts + ([f"line {line}"] if line > 0 else []))

    def _where_parts(self, f: int) -> list[str]:
        f = self._check(f)
        L = self.launch
        b, w = int(self.block[f]), int(self.warp[f])
        head = [f"block {format_block(L, b)}", f"warp {w}"]
        n_ph = int(self.block_phases[b])
        if n_ph > 1:
            head.append(f"phase {int(self.phase[f]) + 1} of {n_ph}")
        head.append(f"step {int(self.step[f])}")
        return head

    def describe_action(self, f: int) -> str:
        """What the warp does at frame ``f``: ``32 lanes load A[3, 0..31]``."""
        f = self._check(f)
        L, tr = self.launch, self.trace
        ev = self.events(f)
        kind = EventKind(int(self.kind[f]))
        n_lanes = int(self.n_lanes[f])
        in_warp = self.lanes_in_warp(int(self.warp[f]))
        lanes = f"all {in_warp} lanes" if n_lanes == in_warp and in_warp > 1 else (
            f"{n_lanes} lane" if n_lanes == 1 else f"{n_lanes} lanes"
        )
        if n_lanes < in_warp:
            lanes = f"{n_lanes} of {in_warp} lanes"
        verb = _VERBS.get(kind, kind.label)
        text = f"{lanes} {verb}"
        if kind.is_memory:
            mem = ev[tr.kind[ev] == kind]
            arrays = np.unique(tr.array[mem])
            names = []
            for a in arrays[:3]:
                if 0 <= a < len(L.arrays):
                    names.append(format_indices(L.arrays[int(a)], tr.index[mem[tr.array[mem] == a]]))
            if names:
                text += " " + ", ".join(names)
        elif kind == EventKind.BARRIER and self.is_grid_barrier(f):
            text = self._grid_barrier_action(f, lanes)
        elif kind == EventKind.BARRIER:
            waiting = int(self.waiting_warps[f])
            if self.barrier_opens_at(f):
                text = f"{lanes} reach syncthreads: all {L.threads_per_block} threads of the block are there, the barrier opens"
            else:
                text += f" and wait ({waiting} of {L.warps_per_block} warps there)"
        line = int(self.line[f])
        if line > 0:
            text += f" (line {line})"
        return text

    def _grid_barrier_action(self, f: int, lanes: str) -> str:
        """``all 32 lanes reach grid.sync() and wait (...)``: a barrier of the grid, so the words count blocks too."""
        blocks_there, n_blocks, threads_there = self.grid_barrier_arrivals(f)
        if self.barrier_opens_at(f):
            return (f"{lanes} reach grid.sync(): all {threads_there} threads of all {n_blocks} blocks are there, "
                    "the grid barrier opens")
        # short: the title has three lines at 1280x720, and the caption under it says why every block waits
        return f"{lanes} reach grid.sync() and wait ({blocks_there} of {n_blocks} blocks all there)"

    def barrier_opens_at(self, f: int) -> bool:
        """Does the barrier open at frame ``f`` (the block's last warp arrives; at a grid.sync(), the grid's)? A binary search: a set of the
        frames, built in Python on first use, stalled the window ~0.1 s on a trace of 36,000 barrier openings."""
        done = self._barrier_complete_sorted
        i = int(np.searchsorted(done, f))
        return i < len(done) and int(done[i]) == int(f)

    @cached_property
    def _barrier_complete_sorted(self) -> np.ndarray:
        done = np.asarray(self.barrier_complete_frames, dtype=np.int64)
        return done if bool(np.all(done[1:] >= done[:-1])) else np.sort(done)  # a file's index need not be sorted

    def line_counts(self) -> dict[int, int]:
        """Events per source line over the whole trace."""
        table = self.line_count_table
        return {int(a): int(b) for a, b in zip(table[0], table[1])}

    @cached_property
    def line_count_table(self) -> np.ndarray:
        """``[lines, counts]`` (2 x n int64): the source lines that have events, and how many each."""
        lines = self.trace.line
        if len(lines) and 0 < int(lines.max()) < (1 << 24):
            c = np.bincount(np.maximum(lines, 0), minlength=1)
            c[0] = 0
            u = np.flatnonzero(c)
            return np.stack([u, c[u]]).astype(np.int64)
        ok = lines > 0
        u, c = np.unique(lines[ok], return_counts=True)
        return np.stack([u, c]).astype(np.int64).reshape(2, -1)

    @cached_property
    def memory_events(self) -> np.ndarray:
        """Indices of the memory events on an array (loads, stores, atomics), in frame order: what the memory
        views count, without sorting or scanning the whole trace again."""
        if not len(self.perm):
            return np.zeros(0, dtype=self.perm.dtype)
        is_mem = np.zeros(256, dtype=bool)
        is_mem[[int(k) for k in EventKind if k.is_memory]] = True
        kinds = self.trace.kind
        arrays = self.trace.array
        mem = is_mem[kinds]
        mem &= arrays >= 0
        ev = np.flatnonzero(mem)
        # in frame order: sort the few memory events by their frame (stable: lanes stay in order)
        fr = self.frame_of_event[ev]
        if len(fr) > 1 and not bool(np.all(fr[1:] >= fr[:-1])):
            ev = ev[np.argsort(fr, kind="stable")]
        return ev.astype(self.perm.dtype)

    def lines_at(self, f: int) -> np.ndarray:
        """Source lines of the events of frame ``f`` (unique, sorted)."""
        ln = self.trace.line[self.events(f)]
        return np.unique(ln[ln > 0])

    def __repr__(self) -> str:
        return f"<Frames {self.n_frames:,} frames of {self.launch.kernel_name} order={self.order}>"
