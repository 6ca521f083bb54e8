"""The chunked pass shared by the analyses (their fast path): one walk over the events serves the bank conflicts
of shared memory, whether any shared element races, and the positions of the global-memory events.

Events are taken ~262k at a time (``_CHUNK``), so every temporary stays small, is reused from the heap and stays in
the CPU's cache; chunks end between warp-steps, and warp requests are keyed by warp-step (block, warp, step: a
table the size of warps x steps). The race check compares each shared access with the thread of one store of its
(block, phase, element) group. What the pass cannot decide (a warp-step split across the trace, shared atomics,
huge ranges) is left as None, and :mod:`gpuviz.model.analysis` takes its general path for it.

numpy only: no Qt, no numba.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .analysis_base import K, _arrays, _bank_ways, _differs, _phase_table, _rep, _table_ok
from .trace import Trace

# ---- one chunked pass shared by the analyses (the fast path) ---------------------------------------
# Events are processed about _CHUNK at a time, so every temporary stays small, is reused from the heap and
# stays in the CPU's cache: on small VMs the first touch of fresh memory, not arithmetic, dominated
# full-length passes. Chunks end between warp-steps, and warp requests are analysed chunk by chunk; a
# trace whose warp-steps are not contiguous (e.g. thread-major) leaves bank conflicts to the general path.
_CHUNK = 1 << 18
_SPACE_GLOBAL, _SPACE_SHARED_ATOMIC, _SPACE_SHARED = 1, 2, 3


@dataclass
class _Prep:
    """What the chunked pass found.

    ``shared_requests``: the per-request fields of :func:`shared_banks` (block, warp, step, kind, array, line,
    lanes, ways), or None when the chunked pass could not decide them: a warp-step that mixes shared
    instructions (only possible without recorded lockstep steps) or is not contiguous in the trace.
    ``shared_racy``: whether any shared element races; None when undecided (shared atomics, huge group ranges).
    Either None sends that analysis down its general path. ``global_pos``: positions of global-memory events.
    """

    shared_requests: dict | None
    shared_racy: bool | None
    global_pos: np.ndarray


@dataclass
class _Pass:
    """What every stage of the chunked pass reads: the event columns, the launch's sizes, and each event's space
    code (``codes``: global, shared atomic, shared load/store, or 0)."""

    info: object  # analysis_base._Arrays
    n: int
    a1: int  # array ids + 1 (id -1 included)
    block: np.ndarray
    thread: np.ndarray
    seq: np.ndarray
    index: np.ndarray
    kind: np.ndarray
    array: np.ndarray
    step: np.ndarray
    line: np.ndarray
    step_lo: int
    n_steps: int
    wpb: int
    tpb: int
    ws_size: int
    ws_range: int
    line_lo: int
    line_range: int
    n_threads: int
    n_blocks: int
    sizes: np.ndarray  # elements of each shared array (0 for the others)
    n_elems: int
    codes: np.ndarray | None = None


def _build_prep(trace: Trace) -> "_Prep | None":
    p = _pass_of(trace)
    if p is None:
        return None
    p.codes = _space_codes(p)
    global_pos = np.flatnonzero(p.codes == _SPACE_GLOBAL)
    race_group, store_thread = _shared_stores(trace, p)
    requests, shared_racy = _shared_chunks(p, race_group, store_thread)
    return _Prep(requests, shared_racy, global_pos)


def _pass_of(trace: Trace) -> "_Pass | None":
    """The pass's columns and sizes, or None when its tables would be too large (or a block id is foreign)."""
    L = trace.launch
    n = len(trace)
    if n == 0:
        return None
    info = _arrays(trace)
    a1 = len(L.arrays) + 1
    block, step_all, line_all = trace.block, trace.issue_step, trace.line
    if int(block.min()) < 0 or int(block.max()) >= L.n_blocks:
        return None
    step_lo = int(step_all.min())
    n_steps = int(step_all.max()) - step_lo + 1
    ws_range = L.n_blocks * L.warps_per_block * n_steps
    line_lo = int(line_all.min())
    line_range = int(line_all.max()) - line_lo + 1
    sizes = np.array([a.size if a.space == "shared" else 0 for a in L.arrays], dtype=np.int64)
    n_elems = int(sizes.sum()) or 1
    shared_bytes = int((info.itemsize * np.r_[sizes, 0] + info.shared_offset).max())
    if ws_range >= (1 << 31) or not _table_ok(ws_range, n) or len(K) * a1 * line_range >= (1 << 31):
        return None
    if shared_bytes >= (1 << 31) or n_elems >= (1 << 31):
        return None
    return _Pass(info, n, a1, block, trace.thread, trace.seq, trace.index, trace.kind, trace.array, step_all, line_all,
                 step_lo, n_steps, L.warps_per_block, L.threads_per_block, L.warp_size, ws_range, line_lo, line_range,
                 L.n_threads, L.n_blocks, sizes, n_elems)


def _space_codes(p: _Pass) -> np.ndarray:
    """The space code of every event: one gather per (kind, array id + 1) instead of several compares."""
    info, a1 = p.info, p.a1
    code_tab = np.zeros((256, a1), dtype=np.uint8)
    for k in (K.GLOBAL_LOAD, K.GLOBAL_STORE, K.ATOMIC):
        code_tab[k, 1:][info.is_global[:-1]] = _SPACE_GLOBAL
    code_tab[K.ATOMIC, 1:][info.is_shared[:-1]] = _SPACE_SHARED_ATOMIC
    for k in (K.SHARED_LOAD, K.SHARED_STORE):
        code_tab[k, 1:][info.is_shared[:-1]] = _SPACE_SHARED
    code_tab = code_tab.reshape(-1)
    codes = np.empty(p.n, dtype=np.uint8)
    for s in range(0, p.n, _CHUNK):
        e = min(p.n, s + _CHUNK)
        flat = p.kind[s:e].astype(np.int32)
        flat *= a1
        flat += p.array[s:e]
        flat += 1
        np.take(code_tab, flat, out=codes[s:e])
    return codes


def _shared_stores(trace: Trace, p: _Pass) -> tuple[Callable | None, np.ndarray | None]:
    """For the race check: ``race_group(block, thread, seq, array, index)``, the (block, phase, element) group of
    shared accesses, and the thread of one store per group (-1 where none). (None, None) when it cannot be
    decided here (shared atomics, no dense phase table, too many groups)."""
    pt = _phase_table(trace)
    if pt is None or (p.codes == _SPACE_SHARED_ATOMIC).any():
        return None, None
    table, n_seq = pt
    n_phases = int(table.max()) + 1 if len(table) else 1
    n_g = p.n_blocks * n_phases * p.n_elems
    if n_g >= (1 << 31) or not _table_ok(n_g, p.n):
        return None, None
    cell_dt = np.int32 if p.n_threads * n_seq < (1 << 31) else np.int64
    base32 = np.r_[0, np.cumsum(p.sizes)[:-1], 0].astype(np.int32)  # each shared array's first element; id -1 last
    n_threads, tpb, n_elems = p.n_threads, p.tpb, p.n_elems

    def race_group(b, t, sq, a, ix):
        cell = sq.astype(cell_dt)
        cell *= n_threads
        cell += b * tpb
        cell += t
        g = table[cell].astype(np.int32)  # barrier phase (memory events are never barriers themselves)
        g += b * n_phases
        g *= n_elems
        g += base32[a]
        g += ix.astype(np.int32)
        return g

    st = np.flatnonzero((p.codes == _SPACE_SHARED) & (p.kind == K.SHARED_STORE))
    store_thread = np.full(n_g, -1, dtype=np.int32)
    store_thread[race_group(p.block[st], p.thread[st], p.seq[st], p.array[st], p.index[st])] = p.thread[st]
    return race_group, store_thread


def _shared_chunks(p: _Pass, race_group, store_thread) -> tuple[dict | None, bool | None]:
    """One pass over chunks ending between warp-steps: the race check of every shared access, and the bank
    figures of every shared request. Returns (requests or None, whether a shared element races or None)."""
    n, block, thread, step_all, ws_size = p.n, p.block, p.thread, p.step, p.ws_size
    shared_racy: bool | None = None if race_group is None else False
    seen = np.zeros(p.ws_range, dtype=bool)  # warp-steps met in earlier chunks
    scratch = (np.zeros(p.ws_range, dtype=bool), np.zeros(p.ws_range, dtype=np.int32))  # reused per chunk
    req_parts = []
    banks_ok = True
    s = 0
    while s < n:
        e = min(n, s + _CHUNK)
        while 0 < e < n and block[e] == block[e - 1] and step_all[e] == step_all[e - 1] \
                and thread[e] // ws_size == thread[e - 1] // ws_size:
            e += 1  # never split a warp-step
        m = p.codes[s:e] >= _SPACE_SHARED_ATOMIC
        lo = s
        s = e
        if not m.any():
            continue
        if shared_racy is False:
            t = thread[lo:e][m]
            other = store_thread[race_group(block[lo:e][m], t, p.seq[lo:e][m], p.array[lo:e][m], p.index[lo:e][m])]
            shared_racy = bool(((other >= 0) & (other != t)).any())
        if not banks_ok:
            if shared_racy is not False:
                break
            continue
        ok, part = _chunk_requests(p, lo, e, m, seen, scratch)
        if not ok:
            banks_ok = False
        elif part is not None:
            req_parts.append(part)
    requests = _requests_of(p, req_parts) if banks_ok and req_parts else None
    return requests, shared_racy


def _chunk_requests(p: _Pass, lo: int, e: int, m: np.ndarray, seen: np.ndarray, scratch) -> tuple[bool, tuple | None]:
    """The bank figures of the shared loads and stores of events ``lo..e-1`` selected by ``m``: (True, part), (True,
    None) when there are none, (False, None) when a warp-step is met again or mixes instructions (then the general
    path counts)."""
    present, lookup = scratch
    b, t, a, ix, k = p.block[lo:e][m], p.thread[lo:e][m], p.array[lo:e][m], p.index[lo:e][m], p.kind[lo:e][m]
    ldst = k != K.ATOMIC  # loads and stores (atomics have no bank figures)
    if not ldst.all():
        m = m.copy()
        m[m] = ldst
        b, t, a, ix, k = b[ldst], t[ldst], a[ldst], ix[ldst], k[ldst]
        if not len(b):
            return True, None
    ws_size = p.ws_size
    shift = ws_size.bit_length() - 1 if ws_size & (ws_size - 1) == 0 else None
    ws = b * p.wpb
    ws += (t >> shift) if shift is not None else (t // ws_size)
    ws *= p.n_steps
    ws += p.step[lo:e][m]
    ws -= p.step_lo
    present[ws] = True
    uniq = np.flatnonzero(present)
    present[uniq] = False
    if seen[uniq].any():  # a warp-step met again: not contiguous, let the general path count
        return False, None
    seen[uniq] = True
    n_req = len(uniq)
    lookup[uniq] = np.arange(n_req, dtype=np.int32)
    rid = lookup[ws]
    kal = k.astype(np.int32)
    kal *= p.a1
    kal += a
    kal += 1
    kal *= p.line_range
    kal += p.line[lo:e][m]
    kal -= p.line_lo
    # Executor order keeps each warp-step's events together: then one comparison of neighbours checks
    # that a warp-step is one instruction, and run lengths count its lanes.
    starts = np.flatnonzero(np.r_[True, rid[1:] != rid[:-1]])
    if len(starts) == n_req:
        if ((rid[1:] == rid[:-1]) & (kal[1:] != kal[:-1])).any():
            return False, None
        lanes = np.empty(n_req, dtype=np.int64)
        lanes[rid[starts]] = np.diff(np.r_[starts, len(rid)])
        rep_kal = np.empty(n_req, dtype=kal.dtype)
        rep_kal[rid[starts]] = kal[starts]
    else:
        if _differs(rid, n_req, kal).any():
            return False, None
        lanes = np.bincount(rid, minlength=n_req)
        rep_kal = _rep(rid, n_req, kal)
    info = p.info
    if bool((info.itemsize[:-1][info.is_shared[:-1]] == 4).all()) and not info.shared_offset.any():
        word = ix.astype(np.int32)  # 4-byte elements from byte 0: the word is the element index
    else:
        word = ix * info.itemsize[a]
        word += info.shared_offset[a]
        word >>= 2
        word = word.astype(np.int32)
    return True, (uniq, rep_kal, lanes, _bank_ways(rid, n_req, word))


def _requests_of(p: _Pass, req_parts: list) -> dict:
    """The chunks' requests in (block, warp, step) order, with their fields decoded."""
    uniq = np.concatenate([part[0] for part in req_parts])
    order = np.argsort(uniq, kind="stable")
    uniq = uniq[order]
    rep_kal = np.concatenate([part[1] for part in req_parts])[order]
    bw = uniq // p.n_steps
    return {
        "block": (bw // p.wpb).astype(np.int32),
        "warp": (bw % p.wpb).astype(np.int32),
        "step": (uniq % p.n_steps + p.step_lo).astype(np.int32),
        "kind": (rep_kal // (p.line_range * p.a1)).astype(np.uint8),
        "array": ((rep_kal // p.line_range) % p.a1 - 1).astype(np.int16),
        "line": (rep_kal % p.line_range + p.line_lo).astype(np.int32),
        "lanes": np.concatenate([part[2] for part in req_parts])[order],
        "ways": np.concatenate([part[3] for part in req_parts])[order],
    }
