"""Numpy helpers that turn trace state into RGBA arrays and cell geometry for the memory views.

No Qt here (pyqtgraph imports Qt, so colour maps arrive as lookup tables from the caller): everything
in this module can be tested, benchmarked and scripted without a window. The views in
``gpuviz/ui/views`` hand these arrays to pyqtgraph ``ImageItem``s; per frame they only recolour.

Conventions: an RGBA image is ``(rows, cols, 4) uint8`` with row 0 at the top; a *flat* RGBA array is
``(cells, 4)`` in an array's own flat (C-order) element order.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np

from ..model.prepared import Prepared
from ..model.trace import EventKind, Trace

# ---- colours -------------------------------------------------------------------------------------
# Okabe-Ito: distinguishable with every common colour-vision deficiency and on washed-out projectors.
OKABE_ITO = {
    "black": (0, 0, 0),
    "orange": (230, 159, 0),
    "sky_blue": (86, 180, 233),
    "bluish_green": (0, 158, 115),
    "yellow": (240, 228, 66),
    "blue": (0, 114, 178),
    "vermillion": (213, 94, 0),
    "reddish_purple": (204, 121, 167),
}


def rgba(name_or_rgb, alpha: int = 255) -> np.ndarray:
    rgb = OKABE_ITO[name_or_rgb] if isinstance(name_or_rgb, str) else tuple(name_or_rgb)
    return np.array((*rgb, alpha), dtype=np.uint8)


#: What each lit cell means. Reads are cool, writes are warm, a cell read and written by one
#: instruction (atomics) is purple: told apart by hue *and* by brightness.
READ_RGBA = rgba("sky_blue")
WRITE_RGBA = rgba("orange")
READ_WRITE_RGBA = rgba("reddish_purple")
CONFLICT_RGBA = rgba("vermillion")
RACE_RGBA = rgba("reddish_purple")
SECTOR_RGBA = rgba("yellow")
#: cells never touched so far: a neutral dark grey, so "0 accesses" differs from "few accesses"
UNTOUCHED_RGBA = np.array((38, 38, 44, 255), dtype=np.uint8)
#: padding cells of a wrapped strip (past the end of the array): the background itself
PADDING_RGBA = np.array((0, 0, 0, 0), dtype=np.uint8)

_READ_KINDS = (int(EventKind.GLOBAL_LOAD), int(EventKind.SHARED_LOAD))
_WRITE_KINDS = (int(EventKind.GLOBAL_STORE), int(EventKind.SHARED_STORE))
_ATOMIC = int(EventKind.ATOMIC)
_MEMORY_KINDS = np.array(sorted(int(k) for k in EventKind if k.is_memory), dtype=np.uint8)


def grey_lut(n: int = 256) -> np.ndarray:
    """A plain grey ramp, the fallback when no colour map is handed in (e.g. in scripts)."""
    ramp = np.linspace(60, 255, n).astype(np.uint8)
    return np.stack([ramp, ramp, ramp, np.full(n, 255, np.uint8)], axis=1)


def blended(lut: np.ndarray, toward, amount: float) -> np.ndarray:
    """The colour map pulled ``amount`` (0..1) of the way toward a background colour.

    The running-count heat map sits *behind* the lit cells: toward black on a dark theme, toward
    white on a light one, so the saturated read/write colours stand out against it.
    """
    out = lut[:, :3].astype(np.float32) * (1.0 - amount) + np.asarray(toward[:3], np.float32) * amount
    res = np.empty((len(lut), 4), dtype=np.uint8)
    res[:, :3] = np.clip(out.round(), 0, 255).astype(np.uint8)
    res[:, 3] = 255
    return res


# ---- layouts -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GridLayout:
    """How the flat cells of one array are placed on screen: ``rows`` x ``cols``, C order.

    ``size`` cells are real; the rest of the last row (``rows*cols - size``) is padding.
    """

    rows: int
    cols: int
    size: int

    def cell_rc(self, flat) -> tuple[np.ndarray, np.ndarray]:
        flat = np.asarray(flat, dtype=np.int64)
        return flat // self.cols, flat % self.cols

    def flat_of(self, row: int, col: int) -> int:
        """Flat cell of screen cell (row, col); -1 when it is padding or outside."""
        if not (0 <= row < self.rows and 0 <= col < self.cols):
            return -1
        flat = row * self.cols + col
        return flat if flat < self.size else -1

    def to_image(self, flat_rgba: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """(size, 4) -> (rows, cols, 4), padding transparent. Reuses ``out`` when given."""
        if out is None or out.shape != (self.rows, self.cols, 4):
            out = np.empty((self.rows, self.cols, 4), dtype=np.uint8)
        flat_view = out.reshape(-1, 4)
        flat_view[: self.size] = flat_rgba[: self.size]
        flat_view[self.size :] = PADDING_RGBA
        return out


def strip_layout(size: int, max_cols: int = 1024) -> GridLayout:
    """A long 1-d array wrapped into rows whose width is a multiple of 32 elements.

    32 elements is one warp's worth of consecutive float32 = one 128-byte line, so a coalesced warp
    request lights one row-segment and sector boundaries fall on the same columns in every row. The
    width grows with the array so that the result is about 4:1 wide rather than one endless line.
    """
    if size <= 0:
        return GridLayout(1, 1, 0)
    if size <= 64:
        return GridLayout(1, size, size)
    cols = 2 ** math.ceil(math.log2(math.sqrt(size * 4.0)))
    cols = int(min(max_cols, max(32, cols)))
    return GridLayout(-(-size // cols), cols, size)


def array_layout(shape: tuple[int, ...]) -> GridLayout:
    """2-d arrays in their own shape; 3-d and up stack their leading dimensions into rows; 1-d wraps."""
    size = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if len(shape) >= 2:
        cols = int(shape[-1])
        return GridLayout(size // max(cols, 1), cols, size)
    return strip_layout(size)


#: shared memory is 32 banks of 4-byte words; a bank row is 128 bytes
N_BANKS = 32
BANK_BYTES = 4


def bank_layout(nbytes: int) -> GridLayout:
    """Words of a shared array as rows of 32 banks (column = bank)."""
    words = -(-int(nbytes) // BANK_BYTES)
    return GridLayout(max(1, -(-words // N_BANKS)), N_BANKS, words)


def words_of_elements(index: np.ndarray, itemsize: int) -> np.ndarray:
    """4-byte word(s) each element occupies, as a 1-d array (an 8-byte double covers two words)."""
    index = np.asarray(index, dtype=np.int64)
    first = index * itemsize // BANK_BYTES
    n_words = max(1, itemsize // BANK_BYTES)
    if n_words == 1:
        return first
    return (first[:, None] + np.arange(n_words)).ravel()


def sector_spans(index: np.ndarray, itemsize: int, sector_bytes: int = 32) -> np.ndarray:
    """Flat element ranges ``[start, stop)`` of the distinct sectors the given elements fall in.

    Geometry only (where the 32-byte boundaries lie in the element grid); how many sectors a
    request costs, per line and per kernel, is :mod:`gpuviz.model.analysis`'s business.
    """
    index = np.asarray(index, dtype=np.int64)
    if index.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    sectors = np.unique(index * itemsize // sector_bytes)
    start = sectors * sector_bytes // itemsize
    stop = (sectors + 1) * sector_bytes // itemsize
    stop = np.maximum(stop, start + 1)  # elements wider than a sector still span one cell
    return np.stack([start, stop], axis=1)


def span_outline_segments(spans: np.ndarray, layout: GridLayout, size: int | None = None) -> np.ndarray:
    """Line segments (x, y pairs, ``(2k, 2)`` float) outlining flat spans on a grid layout.

    A span that wraps past the end of a row is cut into one rectangle per row. Coordinates are in
    image cells with x = column, y = row (an ImageItem's own coordinates).
    """
    size = layout.size if size is None else size
    segs: list[np.ndarray] = []
    for start, stop in np.asarray(spans, dtype=np.int64).reshape(-1, 2):
        start, stop = max(0, int(start)), min(int(stop), size)
        while start < stop:
            r, c0 = divmod(start, layout.cols)
            c1 = min(layout.cols, c0 + (stop - start))
            segs.append(rect_segments(c0, r, c1, r + 1))
            start += c1 - c0
    if not segs:
        return np.zeros((0, 2), dtype=np.float64)
    return np.concatenate(segs)


def cell_outline_segments(flat: np.ndarray, layout: GridLayout, inset: float = 0.12) -> np.ndarray:
    """Segments outlining single cells (slightly inset, so adjacent outlines stay apart)."""
    flat = np.unique(np.asarray(flat, dtype=np.int64))
    flat = flat[(flat >= 0) & (flat < layout.size)]
    if flat.size == 0:
        return np.zeros((0, 2), dtype=np.float64)
    r, c = layout.cell_rc(flat)
    x0, y0, x1, y1 = c + inset, r + inset, c + 1 - inset, r + 1 - inset
    # four edges per cell, each edge two points: (x0,y0)-(x1,y0), (x1,y0)-(x1,y1), ...
    pts = np.stack(
        [
            np.stack([x0, y0], 1), np.stack([x1, y0], 1),
            np.stack([x1, y0], 1), np.stack([x1, y1], 1),
            np.stack([x1, y1], 1), np.stack([x0, y1], 1),
            np.stack([x0, y1], 1), np.stack([x0, y0], 1),
        ],
        axis=1,
    )
    return pts.reshape(-1, 2).astype(np.float64)


def rect_segments(x0, y0, x1, y1) -> np.ndarray:
    return np.array(
        [[x0, y0], [x1, y0], [x1, y0], [x1, y1], [x1, y1], [x0, y1], [x0, y1], [x0, y0]], dtype=np.float64
    )


# ---- frames -> events ----------------------------------------------------------------------------
def frame_of_events(frames, n_events: int) -> np.ndarray:
    """For each event, the frame it belongs to (-1 for events no frame shows).

    Uses whatever vectorised form ``frames`` offers (an ``event_frame``/``frame_of_event`` array, or
    CSR-style ``order`` + ``offsets``), else asks ``frames.events(f)`` once per frame: done once per
    trace, never per drawn frame.
    """
    for name in ("frame_of_event", "event_frame", "frame_of"):
        arr = getattr(frames, name, None)
        if isinstance(arr, np.ndarray) and arr.shape == (n_events,):
            return arr  # as stored (int32 for Frames): a trace-sized copy per view is not worth it
    out = np.full(n_events, -1, dtype=np.int64)
    order = getattr(frames, "order", None)
    offsets = getattr(frames, "offsets", None)
    if isinstance(order, np.ndarray) and isinstance(offsets, np.ndarray) and len(offsets) == frames.n_frames + 1:
        counts = np.diff(offsets)
        out[order[offsets[0] : offsets[-1]]] = np.repeat(np.arange(frames.n_frames), counts)
        return out
    for f in range(frames.n_frames):
        out[np.asarray(frames.events(f), dtype=np.int64)] = f
    return out


def block_events(prepared: Prepared, block: int) -> np.ndarray:
    """Event ids of one block of a prepared trace, in no particular order, without scanning the whole trace when
    it can.

    Frames in ``block`` order keep each block's events contiguous in their permutation, so a block is
    one slice (unless a ``grid.sync()`` makes the blocks take turns: then the frames pick the block's events out);
    otherwise one vectorised comparison over the trace.
    """
    trace, frames = prepared.trace, prepared.frames
    perm = getattr(frames, "perm", None)
    first = getattr(frames, "block_first", None)
    last = getattr(frames, "block_last", None)
    offsets = getattr(frames, "offsets", None)
    if getattr(frames, "blocks_interleave_at_grid_barriers", False):
        return frames.block_event_indices(block)
    if getattr(frames, "order", None) == "block" and isinstance(perm, np.ndarray) and first is not None:
        if not 0 <= block < len(first) or first[block] < 0:
            return np.zeros(0, dtype=np.int64)
        return perm[offsets[first[block]] : offsets[last[block] + 1]]
    return np.flatnonzero(trace.block == block)


# ---- per-trace values shared by views and built off the GUI thread -----------------------------------
_MEMO_GUARD = threading.Lock()


def per_frames(frames, key, build):
    """``build()`` once per :class:`~gpuviz.model.frames.Frames` and ``key``: views call it from
    ``on_trace_changed`` and their ``prepare`` hook (run by the open job on its thread, so the window finds
    it built); a second caller waits for the first instead of building it again."""
    with _MEMO_GUARD:
        memo = frames.__dict__.setdefault("_view_memo", {})
        lock = memo.setdefault(("lock", key), threading.Lock())
    with lock:
        if key not in memo:
            memo[key] = build()
        return memo[key]


# ---- running access counts ------------------------------------------------------------------------
class RunningCounts:
    """Accesses per cell of a set of arrays, counted over all frames up to and including ``f``.

    Scrubbing must be instant at a million events, so: memory events are sorted by frame once;
    ``checkpoints[c]`` holds the counts after the first ``c*stride`` of them; a query adds the few
    events past the nearest checkpoint (or steps from the previous answer when that is closer: a
    one-frame step costs a handful of ``np.add.at`` updates). Checkpoint memory is capped.

    Cells of all the arrays live in one flat space: array ``a``'s element ``i`` is cell
    ``slice_of(a).start + i``.
    """

    def __init__(
        self,
        trace: Trace,
        event_frames: np.ndarray,
        arrays: list[int],
        *,
        memory_budget_bytes: int = 64 << 20,
        min_stride: int = 4096,
        memory_events: np.ndarray | None = None,
    ):
        """``memory_events``: the memory events on arrays, in frame order (``Frames.memory_events``), when
        known: then only they are looked at, not every event of the trace."""
        infos = trace.launch.arrays
        self.arrays = list(arrays)
        sizes = [infos[a].size for a in self.arrays]
        self._slices: dict[int, slice] = {}
        pos = 0
        for a, size in zip(self.arrays, sizes):
            self._slices[a] = slice(pos, pos + size)
            pos += size
        self.n_cells = pos
        cell_base = np.full(len(infos) + 1, -1, dtype=np.int64)  # last slot: array -1
        for a in self.arrays:
            cell_base[a] = self._slices[a].start

        kind = trace.kind
        array = trace.array
        index = trace.index
        if memory_events is not None:
            ev = np.asarray(memory_events, dtype=np.int64)
            ev = ev[cell_base[array[ev]] >= 0]
            self.event_ids = ev  # memory events in frame order
            # int64: searchsorted with a Python int on an int32 array casts the whole array on every query
            self.frames_sorted = event_frames[ev].astype(np.int64)
        else:
            mem = np.isin(kind, _MEMORY_KINDS) & (array >= 0) & (event_frames >= 0)
            mem &= cell_base[array] >= 0
            ev = np.flatnonzero(mem)
            frames_of = event_frames[ev]
            order = np.argsort(frames_of, kind="stable")
            ev = ev[order]
            self.event_ids = ev  # memory events in frame order
            self.frames_sorted = frames_of[order].astype(np.int64, copy=False)
        array = array[ev].astype(np.int64)
        cells = cell_base[array] + index[ev]
        size_of = np.zeros(len(infos) + 1, dtype=np.int64)
        for a, size in zip(self.arrays, sizes):
            size_of[a] = size
        bad = (index[ev] < 0) | (index[ev] >= size_of[array])
        if bad.any():
            i = int(ev[np.flatnonzero(bad)[0]])
            a = int(trace.array[i])
            raise ValueError(
                f"event {i} indexes {infos[a].name}[{int(trace.index[i])}] outside its {infos[a].size} elements"
            )
        self.cells = cells
        n = len(cells)
        per_checkpoint = max(1, self.n_cells) * 4
        max_checkpoints = max(1, memory_budget_bytes // per_checkpoint)
        self.stride = max(min_stride, -(-n // max_checkpoints)) if n else min_stride
        n_cp = n // self.stride + 1
        self.checkpoints = np.zeros((n_cp, self.n_cells), dtype=np.int32)
        running = np.zeros(self.n_cells, dtype=np.int64)
        for c in range(1, n_cp):
            seg = cells[(c - 1) * self.stride : c * self.stride]
            running += np.bincount(seg, minlength=self.n_cells)
            self.checkpoints[c] = running
        self.total = running + np.bincount(cells[(n_cp - 1) * self.stride :], minlength=self.n_cells)
        self._last_n = 0
        self._last = np.zeros(self.n_cells, dtype=np.int32)

    def slice_of(self, array_id: int) -> slice:
        return self._slices[array_id]

    def n_events_through(self, frame: int) -> int:
        """How many of the counted memory events belong to frames <= ``frame``."""
        return int(np.searchsorted(self.frames_sorted, frame, side="right"))

    def counts_at(self, frame: int) -> np.ndarray:
        """Counts after frame ``frame`` (int32, all cells). The returned array is reused: copy to keep.

        Reached from whichever is nearest in events: the counts of the previous call, the checkpoint below or
        the one above (whose later events are taken off again)."""
        n = self.n_events_through(frame)
        if n == self._last_n:
            return self._last
        cp = n // self.stride
        from_below = n - cp * self.stride
        from_above = (cp + 1) * self.stride - n if cp + 1 < len(self.checkpoints) else None
        from_last = abs(n - self._last_n)
        if from_last <= from_below and (from_above is None or from_last <= from_above):
            lo, hi = sorted((self._last_n, n))
            self._apply(self._last, self.cells[lo:hi], +1 if n >= self._last_n else -1)
        elif from_above is not None and from_above < from_below:
            np.copyto(self._last, self.checkpoints[cp + 1])
            self._apply(self._last, self.cells[n : (cp + 1) * self.stride], -1)
        else:
            np.copyto(self._last, self.checkpoints[cp])
            self._apply(self._last, self.cells[cp * self.stride : n], +1)
        self._last_n = n
        return self._last

    def cells_between(self, n0: int, n1: int) -> np.ndarray:
        """The cells of the counted events between two event counts (``n_events_through``), either way: the only
        cells whose counts differ between the two (with repeats)."""
        lo, hi = sorted((int(n0), int(n1)))
        return self.cells[lo:hi]

    def _apply(self, counts: np.ndarray, cells: np.ndarray, sign: int) -> None:
        """Add (``sign`` +1) or take off (-1) one access per entry of ``cells`` in ``counts``, in place.

        Only the range of cells the events reach is counted and touched: a jump's events (up to half a checkpoint
        stride) in a million-cell space used to be counted over every cell, a trace-sized int64 count and its
        int32 copy allocated per jump."""
        if cells.size == 0:
            return
        if cells.size * 16 < self.n_cells:  # a few steps: touch only those cells (np.add.at is slower than this)
            touched, times = np.unique(cells, return_counts=True)
            counts[touched] += (sign * times).astype(counts.dtype)
            return
        lo, hi = int(cells.min()), int(cells.max()) + 1
        if hi - lo > 4 * cells.size and len(self._slices) > 1:
            # events spread over several arrays whose cells lie far apart: each array over its own range
            for sl in self._slices.values():
                if sl.stop > lo and sl.start < hi:
                    mine = cells[(cells >= sl.start) & (cells < sl.stop)]
                    if mine.size:
                        self._add_range(counts, mine, sign, int(mine.min()), int(mine.max()) + 1)
            return
        self._add_range(counts, cells, sign, lo, hi)

    @staticmethod
    def _add_range(counts: np.ndarray, cells: np.ndarray, sign: int, lo: int, hi: int) -> None:
        """``counts[lo:hi]`` += or -= how often each of its cells occurs in ``cells`` (all within ``[lo, hi)``)."""
        times = np.bincount(cells - lo, minlength=hi - lo)
        part = counts[lo:hi]
        (np.add if sign > 0 else np.subtract)(part, times, out=part, casting="unsafe")


def count_palette(vmax: int, lut: np.ndarray, untouched=UNTOUCHED_RGBA) -> np.ndarray:
    """One RGBA colour per possible count 0..vmax, as uint32 words (so a frame is a single ``take``).

    0 is ``UNTOUCHED_RGBA``; 1..vmax run through ``lut`` on a square-root scale, so the first few
    accesses already show next to a hot spot of thousands.
    """
    vmax = max(int(vmax), 1)
    n_lut = len(lut)
    level = np.sqrt(np.arange(vmax + 1, dtype=np.float64) / vmax)
    idx = np.minimum((level * (n_lut - 1)).round().astype(np.int64), n_lut - 1)
    pal = np.ascontiguousarray(lut[idx].astype(np.uint8))
    pal[0] = untouched
    return pal.view(np.uint32).ravel()


def counts_to_rgba(counts: np.ndarray, palette: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Access counts -> flat ``(n, 4)`` RGBA through a :func:`count_palette` (counts clip at its top)."""
    counts = np.asarray(counts)
    if out is None or out.shape != (counts.size, 4) or not out.flags.c_contiguous:
        out = np.empty((counts.size, 4), dtype=np.uint8)
    words = out.view(np.uint32).reshape(-1)
    np.take(palette, counts, out=words, mode="clip")
    return out


# ---- what one frame touches ----------------------------------------------------------------------
@dataclass
class FrameAccesses:
    """Memory accesses of one frame, grouped by array: the cells read, written and both."""

    events: np.ndarray
    by_array: dict[int, "ArrayAccess"]


@dataclass
class ArrayAccess:
    array: int
    events: np.ndarray  # event ids (into the trace) of this frame on this array
    index: np.ndarray  # element index per event
    is_read: np.ndarray  # bool per event
    is_write: np.ndarray  # bool per event (atomics are both)
    value: np.ndarray  # recorded value per event (NaN when not recorded)

    def cells(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Distinct element indices read only, written only, and both read and written."""
        read = np.unique(self.index[self.is_read])
        write = np.unique(self.index[self.is_write])
        both = np.intersect1d(read, write, assume_unique=True)
        return np.setdiff1d(read, both, assume_unique=True), np.setdiff1d(write, both, assume_unique=True), both


def frame_accesses(trace: Trace, events: np.ndarray) -> FrameAccesses:
    events = np.asarray(events, dtype=np.int64)
    kind = trace.kind[events]
    arr = trace.array[events]
    keep = np.isin(kind, _MEMORY_KINDS) & (arr >= 0)
    events, kind, arr = events[keep], kind[keep], arr[keep]
    by_array: dict[int, ArrayAccess] = {}
    for a in np.unique(arr):
        sel = arr == a
        e, k = events[sel], kind[sel]
        is_read = np.isin(k, _READ_KINDS) | (k == _ATOMIC)
        is_write = np.isin(k, _WRITE_KINDS) | (k == _ATOMIC)
        by_array[int(a)] = ArrayAccess(int(a), e, trace.index[e], is_read, is_write, trace.value[e])
    return FrameAccesses(events, by_array)


def paint_accesses(flat_rgba: np.ndarray, access: ArrayAccess, to_cells=None,
                   colours=(READ_RGBA, WRITE_RGBA, READ_WRITE_RGBA)) -> None:
    """Light the cells of one frame's accesses in place: read, write, read+write colours.

    ``to_cells`` maps element indices to display cells (e.g. elements -> 4-byte words for banks).
    """
    read, write, both = access.cells()
    for cells, colour in zip((read, write, both), colours):
        if cells.size:
            flat_rgba[to_cells(cells) if to_cells else cells] = colour


# ---- barriers: who waits for whom -----------------------------------------------------------------
@dataclass
class BarrierTimeline:
    """The warps of one block on an issue-step clock, phase by phase.

    Each warp issues one instruction per step; at a ``syncthreads`` it waits until the last warp of
    the block arrives. Phase ``p`` of every warp starts at ``phase_start[p]``; warp ``w`` issues
    ``length[w, p]`` instructions and then waits ``phase_end[p] - phase_start[p] - length[w, p]``
    steps. ``last_arrival[p]`` lists the warps everyone waited for.
    """

    warps: np.ndarray  # warp ids present, in row order
    length: np.ndarray  # (n_warps, n_phases) instructions per warp per phase
    phase_start: np.ndarray  # (n_phases,)
    phase_end: np.ndarray  # (n_phases,) = release step of the barrier closing the phase
    ends_with_barrier: np.ndarray  # (n_warps, n_phases) bool: the phase closes at a syncthreads
    instr_keys: dict[int, np.ndarray]  # warp -> sorted issue steps of its instructions
    instr_phase: dict[int, np.ndarray]  # warp -> phase of each instruction

    @property
    def n_phases(self) -> int:
        return self.length.shape[1]

    def last_arrival(self, p: int) -> np.ndarray:
        col = self.length[:, p]
        return self.warps[col == col.max()] if col.size else self.warps[:0]

    def position(self, warp: int, step: int) -> tuple[int, float] | None:
        """(row, x) of a warp's instruction at issue step ``step`` on the timeline, or None."""
        rows = np.flatnonzero(self.warps == warp)
        if rows.size == 0:
            return None
        keys = self.instr_keys[int(warp)]
        i = int(np.searchsorted(keys, step))
        if i >= len(keys) or keys[i] != step:
            return None
        phase = int(self.instr_phase[int(warp)][i])
        first_in_phase = int(np.searchsorted(self.instr_phase[int(warp)], phase))
        return int(rows[0]), float(self.phase_start[phase] + (i - first_in_phase))


def barrier_timeline(prepared: Prepared, block: int) -> BarrierTimeline:
    """Per-warp phases of one block of a prepared trace from its events (vectorised; its frames find the block's
    events).

    An instruction is one (warp, issue step); its phase is the smallest barrier phase of its lanes
    (a BARRIER event belongs to the phase it closes, so the barrier itself ends the phase).
    """
    trace, frames = prepared.trace, prepared.frames
    sel = block_events(prepared, block)
    warps_all = trace.thread[sel].astype(np.int64) // trace.launch.warp_size
    steps = trace.issue_step[sel].astype(np.int64)
    phases = frames.event_phase[sel].astype(np.int64)  # the prepared trace's (an index's: no sort)
    is_bar = trace.kind[sel] == EventKind.BARRIER
    if sel.size == 0:
        empty = np.zeros((0, 0), dtype=np.int64)
        return BarrierTimeline(np.zeros(0, np.int64), empty, np.zeros(0, np.int64), np.zeros(0, np.int64),
                               empty.astype(bool), {}, {})
    # one row per instruction: (warp, step) unique; its phase = min lane phase; barrier if any lane's is
    key_order = np.lexsort((steps, warps_all))
    w_s, st_s, ph_s, bar_s = warps_all[key_order], steps[key_order], phases[key_order], is_bar[key_order]
    new = np.r_[True, (w_s[1:] != w_s[:-1]) | (st_s[1:] != st_s[:-1])]
    starts = np.flatnonzero(new)
    iw, ist = w_s[starts], st_s[starts]
    iph = np.minimum.reduceat(ph_s, starts)
    ibar = np.maximum.reduceat(bar_s.astype(np.int8), starts).astype(bool)
    warps = np.unique(iw)
    n_phases = int(iph.max()) + 1
    row = np.searchsorted(warps, iw)
    length = np.zeros((len(warps), n_phases), dtype=np.int64)
    np.add.at(length, (row, iph), 1)
    ends_bar = np.zeros((len(warps), n_phases), dtype=bool)
    ends_bar[row[ibar], iph[ibar]] = True
    span = length.max(axis=0)
    phase_end = np.cumsum(span)
    phase_start = phase_end - span
    instr_keys, instr_phase = {}, {}
    bounds = np.r_[np.flatnonzero(np.r_[True, iw[1:] != iw[:-1]]), len(iw)]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        w = int(iw[lo])
        instr_keys[w] = ist[lo:hi]
        # phases of a warp's instructions never decrease in program order; keep them sorted anyway
        instr_phase[w] = np.maximum.accumulate(iph[lo:hi])
    return BarrierTimeline(warps, length, phase_start, phase_end, ends_bar, instr_keys, instr_phase)


def barrier_lanes_rgba(tl: BarrierTimeline, phase_colours: np.ndarray, wait_rgba: np.ndarray,
                       current: tuple[int, float] | None = None) -> np.ndarray:
    """The swimlanes as one image: a row per warp, a column per issue step.

    Running instructions take their phase's colour (alternating), waiting steps ``wait_rgba``, steps
    after the warp finished stay transparent. The current (row, x) cell, if any, is white.
    """
    n_w = len(tl.warps)
    width = int(tl.phase_end[-1]) if tl.n_phases else 0
    img = np.zeros((max(n_w, 1), max(width, 1), 4), dtype=np.uint8)
    last_phase_of = np.full(n_w, -1, dtype=np.int64)
    for r in range(n_w):
        nz = np.flatnonzero(tl.length[r])
        last_phase_of[r] = nz[-1] if nz.size else -1
    for p in range(tl.n_phases):
        s, e = int(tl.phase_start[p]), int(tl.phase_end[p])
        colour = phase_colours[p % len(phase_colours)]
        for r in range(n_w):
            n = int(tl.length[r, p])
            img[r, s : s + n] = colour
            if p <= last_phase_of[r] and (tl.ends_with_barrier[r, p] or p < last_phase_of[r]):
                img[r, s + n : e] = wait_rgba
    if current is not None:
        r, x = current
        if 0 <= r < img.shape[0] and 0 <= int(x) < img.shape[1]:
            img[r, int(x)] = (255, 255, 255, 255)
    return img
