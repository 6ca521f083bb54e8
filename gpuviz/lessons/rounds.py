"""The rounds of a reduction in shared memory, read from a trace: what a lesson says at each barrier it stops at.

A lesson that steps from barrier to barrier (``step = "barrier"``) through a tree reduction showed the same
caption at nine of its thirteen steps ("all 8 warps are at syncthreads..."). The phase after each barrier is a
round: some threads each add the value ``s`` elements above their own (``cache[tid] += cache[tid + s]``). Where the
phase after a barrier is such a round (every thread that stores to a shared array loaded the element ``s`` above
the one it stores, the same ``s`` for all of them), :func:`round_caption` says the round, ``s`` and how many
threads (and lanes of which warps) add; elsewhere it says nothing.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..model.prepared import Prepared
from ..model.trace import EventKind


def _ranges(values: list[int]) -> str:
    """[0, 1, 2, 3, 7] as '0-3 and 7'."""
    parts, start = [], None
    for k, v in enumerate(values):
        if start is None:
            start = v
        if k + 1 == len(values) or values[k + 1] != v + 1:
            parts.append(str(start) if start == v else f"{start}-{v}")
            start = None
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]


def _phase_round(prepared: Prepared, block: int, phase: int):
    """(s, threads that add, their warps and lanes per warp) when ``phase`` of ``block`` is a reduction's round,
    else None."""
    trace, frames = prepared.trace, prepared.frames
    ev = frames.block_event_indices(block)
    ev = ev[frames.phase[frames.frame_of_event[ev]] == phase]
    shared = {i for i, a in enumerate(trace.launch.arrays) if a.space == "shared"}
    if not len(ev) or not shared:
        return None
    in_shared = np.isin(trace.array[ev], list(shared))
    stores = ev[in_shared & (trace.kind[ev] == EventKind.SHARED_STORE)]
    loads = ev[in_shared & (trace.kind[ev] == EventKind.SHARED_LOAD)]
    if not len(stores):
        return None
    offsets = set()
    for e in stores:
        t = trace.thread[e]
        mine = loads[(trace.thread[loads] == t) & (trace.array[loads] == trace.array[e])]
        above = {int(i) - int(trace.index[e]) for i in trace.index[mine]} - {0}
        if len(above) != 1:
            return None
        offsets |= above
    if len(offsets) != 1 or min(offsets) <= 0:
        return None
    threads = np.unique(trace.thread[stores])
    warp_size = trace.launch.warp_size
    warps, per_warp = np.unique(threads // warp_size, return_counts=True)
    return int(min(offsets)), len(threads), [int(w) for w in warps], sorted({int(n) for n in per_warp})


@lru_cache(maxsize=16)
def _block_rounds(prepared: Prepared, block: int) -> dict[int, tuple]:
    """{frame of a barrier opening in ``block``: (its number, the round after it or None, that round's number)}."""
    frames = prepared.frames
    opens = [int(f) for f in frames.barrier_complete_frames if int(frames.block[f]) == block]
    out, n_round = {}, 0
    for k, f in enumerate(opens):
        r = _phase_round(prepared, block, int(frames.phase[f]) + 1)
        if r is not None:
            n_round += 1
        out[f] = (k + 1, r, n_round)
    return out


def round_caption(prepared: Prepared, f: int) -> str:
    """What the round after the barrier that opens at frame ``f`` does ('' when ``f`` opens no barrier, or what
    follows is no round of a reduction)."""
    trace, frames = prepared.trace, prepared.frames
    if not frames.barrier_opens_at(f):
        return ""
    block = int(frames.block[f])
    k, r, n_round = _block_rounds(prepared, block).get(int(f), (0, None, 0))
    if r is None:
        return ""
    s, n, warps, per_warp = r
    total = int(trace.launch.threads_per_block)
    count = (f"{per_warp[0]} lane{'s' if per_warp[0] != 1 else ''}" if len(per_warp) == 1
             else f"{per_warp[0]}-{per_warp[-1]} lanes")
    where = f"of warp {warps[0]}" if len(warps) == 1 else f"of each of warps {_ranges(warps)}"
    return (f"Barrier {k} opens: round {n_round} of the sum, s = {s}. {n:,} of the block's {total:,} threads "
            f"add{'s' if n == 1 else ''} the value s = {s} above {'its' if n == 1 else 'their'} own: {count} {where}.")
