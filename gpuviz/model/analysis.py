"""Analyses of a trace: global-memory coalescing, shared-memory bank conflicts, races, divergence, occupancy.

All of them are vectorised numpy over the whole trace (no Python loop over events or requests), so they run
on 10M-event traces in well under a second. The main tool is the *index space*: a tuple of small integer
fields (block, warp, step, ...) packed into one int64 key by mixed radix. When the key's range is small
(the usual case: a key range near the number of events) group statistics come from ``np.bincount`` and
scatter/gather on tables indexed by the key; only when the range is huge do we fall back to sorting
(``np.unique``). Sorting 10M int64 keys costs ~0.5 s on a laptop core, a table pass ~20 ms.

``summary()`` on a large trace goes through one chunked pass (``_prep``) that serves every analysis:
events are taken ~262k at a time, warp requests are keyed by warp-step (block, warp, step: a table the
size of warps x steps), and the race check compares each shared access with the thread of one store of its
(block, phase, element) group. Anything that pass cannot decide (a warp-step split across the trace, shared
atomics, huge ranges) goes down the general path, which gives the same results on any trace.

Definitions
-----------
*Warp request*: the events of one (block, warp, issue step, kind, array, line) group, i.e. one SIMT
memory instruction of one warp. ``issue_step`` is the lockstep step the executor recorded (``seq`` when
it did not). Lanes of one warp at one step but on different source lines ran different instructions; that
can only happen when the step is inferred from ``seq``, and then they are separate requests.

*Address* of an event: ``index * itemsize`` of its array; global arrays each start at a 256-byte aligned
base (as ``cudaMalloc`` guarantees), shared arrays at byte 0 of their own unless
``launch.meta["shared_offsets"]`` gives ``{name: byte offset}``.
"""

from __future__ import annotations

import functools
import threading
import weakref
from dataclasses import dataclass, field

import numpy as np

from .devices import DEVICES, get_device, occupancy
from .trace import EventKind, Trace

__all__ = [
    "GlobalMemoryReport",
    "SharedBanksReport",
    "RaceReport",
    "DivergenceReport",
    "global_memory",
    "shared_banks",
    "races",
    "divergence",
    "occupancy",
    "trace_occupancy",
    "summary",
    "clear_cache",
    "DEVICES",
]

K = EventKind
SECTOR_BYTES = 32
LINE_BYTES = 128
BANK_BYTES = 4
N_BANKS = 32
_KEY_LIMIT = 1 << 62  # mixed-radix keys stay below this so int64 arithmetic never overflows


# ---- index spaces ----------------------------------------------------------------------------------
def _table_ok(key_range: int, n: int) -> bool:
    """Is a table of ``key_range`` entries cheap next to ``n`` events? (then no sort is needed)"""
    return key_range <= max(4 * n, 1 << 22)


def _id_dtype(n: int):
    return np.int32 if n < (1 << 31) else np.int64


def _dense(key: np.ndarray, key_range: int) -> tuple[np.ndarray, np.ndarray]:
    """Renumber ``key`` (values in [0, key_range)) to 0..n_distinct-1, order preserved.

    Returns (ids, distinct keys ascending): ``ids[i]`` is the position of ``key[i]`` among them.
    """
    if _table_ok(key_range, len(key)):
        present = np.zeros(key_range, dtype=bool)
        present[key] = True
        uniq = np.flatnonzero(present)
        lookup = np.empty(key_range, dtype=_id_dtype(len(uniq)))
        lookup[uniq] = np.arange(len(uniq), dtype=lookup.dtype)
        return lookup[key], uniq
    uniq, inverse = np.unique(key, return_inverse=True)
    return inverse.reshape(-1).astype(_id_dtype(len(uniq)), copy=False), uniq


@dataclass
class _Key:
    """A mixed-radix key: ``values`` in [0, range); ``spec`` (offset, radix) per column decodes it,
    None when the key had to be renumbered on the way (it still identifies groups, but cannot be decoded)."""

    values: np.ndarray
    range: int
    spec: list[tuple[int, int]] | None

    def decode(self, keys: np.ndarray) -> list[np.ndarray]:
        out = []
        keys = np.asarray(keys, dtype=np.int64)
        for lo, radix in reversed(self.spec):
            out.append(keys % radix + lo)
            keys = keys // radix
        return out[::-1]


def _combine(columns: list[tuple[np.ndarray, int | None]]) -> _Key:
    """Mixed-radix key of several integer columns.

    Each column comes with its range (values in [0, range)) or None: then its values are shifted to start
    at 0 and the range is max - min + 1, which keeps keys (and the tables indexed by them) small.
    """
    key, key_range = None, 1
    spec: list[tuple[int, int]] | None = []
    for col, col_range in columns:
        lo = 0
        if col_range is None:
            if len(col):
                lo, hi = int(col.min()), int(col.max())
                col_range = hi - lo + 1
            else:
                col_range = 1
        col_range = max(int(col_range), 1)
        if key is None:
            key = col.astype(np.int64)
            if lo:
                key -= lo
            key_range = col_range
        else:
            if key_range * col_range >= _KEY_LIMIT:
                key, uniq = _dense(key, key_range)
                key, key_range, spec = key.astype(np.int64), len(uniq), None
            key *= col_range  # in place: no 80 MB temporaries per column
            key += col
            if lo:
                key -= lo
            key_range *= col_range
        if spec is not None:
            spec.append((lo, col_range))
    if key is None:
        raise ValueError("_combine needs at least one column")
    return _Key(key, key_range, spec)


def _space(k: _Key) -> tuple[np.ndarray, int]:
    """Group ids for a key: the key itself when a table over its range is cheap, else a dense renumbering."""
    if _table_ok(k.range, len(k.values)):
        return k.values, k.range
    ids, uniq = _dense(k.values, k.range)
    return ids, len(uniq)


def _rep(ids: np.ndarray, n_ids: int, values: np.ndarray) -> np.ndarray:
    """Some value of each group (the last one written wins; any member's value serves as a witness).
    Entries of groups without members are undefined: only read them through ``ids``."""
    table = np.empty(n_ids, dtype=values.dtype)
    table[ids] = values
    return table


def _differs(ids: np.ndarray, n_ids: int, values: np.ndarray) -> np.ndarray:
    """Per group: True when its members do not all have the same value."""
    rep = _rep(ids, n_ids, values)
    out = np.zeros(n_ids, dtype=bool)
    out[ids[values != rep[ids]]] = True
    return out


# ---- per-trace preparation (cached while the trace lives) ------------------------------------------
_CACHE: "weakref.WeakKeyDictionary[Trace, dict]" = weakref.WeakKeyDictionary()


def _cache(trace: Trace) -> dict:
    with _LOCKS_GUARD:
        c = _CACHE.get(trace)
        if c is None:
            c = _CACHE[trace] = {}
        return c


def clear_cache(trace: Trace | None = None) -> None:
    """Forget cached intermediate results (of one trace, or of all). Benchmarks call this between runs."""
    with _LOCKS_GUARD:
        if trace is None:
            _CACHE.clear()
        else:
            _CACHE.pop(trace, None)


# One lock per trace, held while an analysis of that trace runs: the narrator's thread, the open job and
# the views on the GUI thread may all ask for the same report at once; the first computes it, the others
# wait for it and read it from the cache (single flight). Re-entrant: an analysis calls the others.
_LOCKS: "weakref.WeakKeyDictionary[Trace, threading.RLock]" = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


def _lock(trace: Trace) -> threading.RLock:
    with _LOCKS_GUARD:
        lock = _LOCKS.get(trace)
        if lock is None:
            lock = _LOCKS[trace] = threading.RLock()
        return lock


def _single_flight(fn):
    """Run ``fn(trace, ...)`` under the trace's lock, so each cached report is computed once."""

    @functools.wraps(fn)
    def wrapper(trace, *args, **kwargs):
        with _lock(trace):
            return fn(trace, *args, **kwargs)

    return wrapper


#: the reports a trace file may carry precomputed (see gpuviz.model.index), by cache key
REPORT_NAMES = ("global_memory", "shared_banks", "divergence", "races")


def cached_report(trace: Trace, name: str):
    """The report ``name`` if it was computed (or loaded from the trace file) already, else None."""
    with _LOCKS_GUARD:
        c = _CACHE.get(trace)
        return None if c is None else c.get(name)


def seed_report(trace: Trace, name: str, report) -> None:
    """Put a report of an index (the trace file's, the cache's, one built) into the cache, so the analysis is not run
    again: :class:`gpuviz.model.prepared.Prepared` does, given an index."""
    if name not in REPORT_NAMES:
        raise KeyError(f"no analysis report named {name!r}; known: {', '.join(REPORT_NAMES)}")
    with _lock(trace):
        _cache(trace)[name] = report


@dataclass
class _Arrays:
    itemsize: np.ndarray  # per array id, with a trailing entry for id -1
    is_shared: np.ndarray
    is_global: np.ndarray
    shared_offset: np.ndarray  # bytes
    names: list[str]


def _arrays(trace: Trace) -> _Arrays:
    L = trace.launch
    offsets = L.meta.get("shared_offsets") or {}
    itemsize = np.array([a.itemsize for a in L.arrays] + [1], dtype=np.int64)
    is_shared = np.array([a.space == "shared" for a in L.arrays] + [False])
    is_global = np.array([a.space == "global" for a in L.arrays] + [False])
    shared_offset = np.array([int(offsets.get(a.name, 0)) for a in L.arrays] + [0], dtype=np.int64)
    return _Arrays(itemsize, is_shared, is_global, shared_offset, [a.name for a in L.arrays])


def _subset(trace: Trace, space: str) -> dict:
    """Memory events on shared (or global) arrays, with the fields the analyses need. Cached."""
    c = _cache(trace)
    key = "subset_" + space
    if key in c:
        return c[key]
    info = _arrays(trace)
    kind = trace.kind
    array = trace.array
    if space == "global":
        prep = _prep(trace)
        if prep is not None:  # global events are few: gather them by position, no full-length masks
            pos = prep.global_pos
            mask = np.zeros(len(trace), dtype=bool)
            mask[pos] = True
            sub = {"mask": mask}
            for name in ("block", "thread", "seq", "kind", "array", "index", "line"):
                sub[name] = trace.field(name)[pos]
            sub["step"] = trace.issue_step[pos]
            c[key] = sub
            return sub
    in_space = info.is_shared if space == "shared" else info.is_global
    kinds = [K.SHARED_LOAD, K.SHARED_STORE] if space == "shared" else [K.GLOBAL_LOAD, K.GLOBAL_STORE]
    kind_ok = np.zeros(256, dtype=bool)  # indexed by the uint8 kind: one gather instead of three compares
    kind_ok[kinds + [K.ATOMIC]] = True
    mask = kind_ok[kind]
    mask &= in_space[array]  # id -1 -> the trailing False
    sub = {
        "mask": mask,
        "block": trace.block[mask],
        "thread": trace.thread[mask],
        "step": trace.issue_step[mask],
        "seq": trace.seq[mask],
        "kind": kind[mask],
        "array": array[mask],
        "index": trace.index[mask],
        "line": trace.line[mask],
    }
    if space == "shared" and len(sub["index"]) and int(sub["index"].max()) < (1 << 31):
        sub["index"] = sub["index"].astype(np.int32)  # shared arrays are small: half the memory traffic
    c[key] = sub
    return sub


def _phase_table(trace: Trace):
    """(flat table, n_seq): barriers each thread passed up to and including each seq, one row per seq and a
    column per thread (global thread id): the lanes of one step, next to each other in a trace, read
    neighbouring cells.

    None when such a table would be much larger than the trace (then the lexsort-based ``trace.phase``
    is used). Cached: shared and global race checks both read it.
    """
    c = _cache(trace)
    if "phase_table" in c:
        return c["phase_table"]
    L = trace.launch
    n = len(trace)
    n_seq = int(trace.seq.max()) + 1 if n else 1
    cells = L.n_threads * n_seq
    result = None
    if _table_ok(cells, n):
        bar = trace.kind == K.BARRIER
        bar_gt = trace.block[bar].astype(np.int64) * L.threads_per_block + trace.thread[bar]
        max_bars = int(np.bincount(bar_gt).max()) if len(bar_gt) else 0
        table = np.zeros(cells, dtype=np.int16 if max_bars < (1 << 15) else np.int32)
        table[trace.seq[bar].astype(np.int64) * L.n_threads + bar_gt] = 1
        rows = table.reshape(n_seq, L.n_threads)
        if L.n_threads >= 256:  # numpy's cumsum down columns is slow (strided); row-by-row adds are not
            for r in range(1, n_seq):
                np.add(rows[r], rows[r - 1], out=rows[r])
        else:
            np.cumsum(rows, axis=0, out=rows)
        result = (table, n_seq)
    c["phase_table"] = result
    return result


def _phase_of(trace: Trace, mask: np.ndarray, sub: dict) -> np.ndarray:
    """Barrier phase of the events selected by ``mask`` (whose fields ``sub`` holds): the same numbers as
    ``trace.phase[mask]``, without its full lexsort when a dense (thread, seq) table is affordable."""
    if len(sub["seq"]) == 0:
        return np.zeros(0, dtype=np.int32)
    pt = _phase_table(trace)
    if pt is None:
        return trace.phase[mask]
    table = pt[0]
    cell = sub["seq"].astype(np.int64)
    cell *= trace.launch.n_threads
    cell += sub["block"].astype(np.int64) * trace.launch.threads_per_block
    cell += sub["thread"]
    # memory events are never barriers themselves, so "up to and including" is "strictly before"
    return table[cell]


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


_FAST_PATH = True  # False: every analysis takes its general path (bench/analysis.py --check compares the two)


def _prep(trace: Trace) -> "_Prep | None":
    """The fast path's results, or None when the trace's ranges are too large for small tables. Cached."""
    c = _cache(trace)
    if "prep" not in c:
        c["prep"] = _build_prep(trace) if _FAST_PATH else None
    return c["prep"]


def _build_prep(trace: Trace) -> "_Prep | None":
    L = trace.launch
    n = len(trace)
    if n == 0:
        return None
    info = _arrays(trace)
    a1 = len(L.arrays) + 1
    block, thread, seq, index, kind, array = trace.block, trace.thread, trace.seq, trace.index, trace.kind, trace.array
    step_all, line_all = trace.issue_step, trace.line
    if int(block.min()) < 0 or int(block.max()) >= L.n_blocks:
        return None
    step_lo = int(step_all.min())
    n_steps = int(step_all.max()) - step_lo + 1
    wpb, tpb, ws_size = L.warps_per_block, L.threads_per_block, L.warp_size
    ws_range = L.n_blocks * wpb * n_steps
    line_lo = int(line_all.min())
    line_range = int(line_all.max()) - line_lo + 1
    sizes = np.array([a.size if a.space == "shared" else 0 for a in L.arrays], dtype=np.int64)
    n_elems = int(sizes.sum()) or 1
    shared_bytes = int((info.itemsize * np.r_[sizes, 0] + info.shared_offset).max())
    if ws_range >= (1 << 31) or not _table_ok(ws_range, n) or len(K) * a1 * line_range >= (1 << 31):
        return None
    if shared_bytes >= (1 << 31) or n_elems >= (1 << 31):
        return None

    # space code per (kind, array id + 1): one gather per event instead of several compares
    code_tab = np.zeros((256, a1), dtype=np.uint8)
    for k in (K.GLOBAL_LOAD, K.GLOBAL_STORE, K.ATOMIC):
        code_tab[k, 1:][info.is_global[:-1]] = _SPACE_GLOBAL
    code_tab[K.ATOMIC, 1:][info.is_shared[:-1]] = _SPACE_SHARED_ATOMIC
    for k in (K.SHARED_LOAD, K.SHARED_STORE):
        code_tab[k, 1:][info.is_shared[:-1]] = _SPACE_SHARED
    code_tab = code_tab.reshape(-1)
    codes = np.empty(n, dtype=np.uint8)
    for s in range(0, n, _CHUNK):
        e = min(n, s + _CHUNK)
        flat = kind[s:e].astype(np.int32)
        flat *= a1
        flat += array[s:e]
        flat += 1
        np.take(code_tab, flat, out=codes[s:e])
    global_pos = np.flatnonzero(codes == _SPACE_GLOBAL)
    base = np.r_[0, np.cumsum(sizes)[:-1], 0]  # each shared array's first element in one element space; id -1 last
    base32 = base.astype(np.int32)
    uniform = bool((info.itemsize[:-1][info.is_shared[:-1]] == 4).all()) and not info.shared_offset.any()
    shift = ws_size.bit_length() - 1 if ws_size & (ws_size - 1) == 0 else None

    # races, first the stores: the thread of one store per (block, phase, element) group, -1 where none
    pt = _phase_table(trace)
    shared_racy: bool | None = None
    store_thread = None
    if pt is not None and not (codes == _SPACE_SHARED_ATOMIC).any():
        table, n_seq = pt
        n_phases = int(table.max()) + 1 if len(table) else 1
        n_g = L.n_blocks * n_phases * n_elems
        if n_g < (1 << 31) and _table_ok(n_g, n):
            cell_dt = np.int32 if L.n_threads * n_seq < (1 << 31) else np.int64

            def race_group(b, t, sq, a, ix):
                cell = sq.astype(cell_dt)
                cell *= L.n_threads
                cell += b * tpb
                cell += t
                g = table[cell].astype(np.int32)  # barrier phase (memory events are never barriers themselves)
                g += b * n_phases
                g *= n_elems
                g += base32[a]
                g += ix.astype(np.int32)
                return g

            st = np.flatnonzero((codes == _SPACE_SHARED) & (kind == K.SHARED_STORE))
            store_thread = np.full(n_g, -1, dtype=np.int32)
            store_thread[race_group(block[st], thread[st], seq[st], array[st], index[st])] = thread[st]
            shared_racy = False

    # one pass over chunks ending between warp-steps: race check of every shared access, and bank conflicts
    seen = np.zeros(ws_range, dtype=bool)  # warp-steps met in earlier chunks
    present = np.zeros(ws_range, dtype=bool)  # reused per chunk (cleared after use)
    lookup = np.zeros(ws_range, dtype=np.int32)
    req_parts = []
    banks_ok = True
    s = 0
    while s < n:
        e = min(n, s + _CHUNK)
        while 0 < e < n and block[e] == block[e - 1] and step_all[e] == step_all[e - 1] \
                and thread[e] // ws_size == thread[e - 1] // ws_size:
            e += 1  # never split a warp-step
        m = codes[s:e] >= _SPACE_SHARED_ATOMIC
        lo = s
        s = e
        if not m.any():
            continue
        b = block[lo:e][m]
        t = thread[lo:e][m]
        a = array[lo:e][m]
        ix = index[lo:e][m]
        if shared_racy is False:
            other = store_thread[race_group(b, t, seq[lo:e][m], a, ix)]
            shared_racy = bool(((other >= 0) & (other != t)).any())
        if not banks_ok:
            if shared_racy is not False:
                break
            continue
        k = kind[lo:e][m]
        ldst = k != K.ATOMIC  # loads and stores (atomics have no bank figures)
        if not ldst.all():
            m = m.copy()
            m[m] = ldst
            b, t, a, ix, k = b[ldst], t[ldst], a[ldst], ix[ldst], k[ldst]
            if not len(b):
                continue
        ws = b * wpb
        ws += (t >> shift) if shift is not None else (t // ws_size)
        ws *= n_steps
        ws += step_all[lo:e][m]
        ws -= step_lo
        present[ws] = True
        uniq = np.flatnonzero(present)
        present[uniq] = False
        if seen[uniq].any():  # a warp-step met again: not contiguous, let the general path count
            banks_ok = False
            continue
        seen[uniq] = True
        n_req = len(uniq)
        lookup[uniq] = np.arange(n_req, dtype=np.int32)
        rid = lookup[ws]
        kal = k.astype(np.int32)
        kal *= a1
        kal += a
        kal += 1
        kal *= line_range
        kal += line_all[lo:e][m]
        kal -= line_lo
        # Executor order keeps each warp-step's events together: then one comparison of neighbours checks
        # that a warp-step is one instruction, and run lengths count its lanes.
        starts = np.flatnonzero(np.r_[True, rid[1:] != rid[:-1]])
        if len(starts) == n_req:
            if ((rid[1:] == rid[:-1]) & (kal[1:] != kal[:-1])).any():
                banks_ok = False
                continue
            lanes = np.empty(n_req, dtype=np.int64)
            lanes[rid[starts]] = np.diff(np.r_[starts, len(rid)])
            rep_kal = np.empty(n_req, dtype=kal.dtype)
            rep_kal[rid[starts]] = kal[starts]
        else:
            if _differs(rid, n_req, kal).any():
                banks_ok = False
                continue
            lanes = np.bincount(rid, minlength=n_req)
            rep_kal = _rep(rid, n_req, kal)
        if uniform:  # 4-byte elements from byte 0: the word is the element index
            word = ix.astype(np.int32)
        else:
            word = ix * info.itemsize[a]
            word += info.shared_offset[a]
            word >>= 2
            word = word.astype(np.int32)
        req_parts.append((uniq, rep_kal, lanes, _bank_ways(rid, n_req, word)))

    requests = None
    if banks_ok and req_parts:
        uniq = np.concatenate([part[0] for part in req_parts])
        order = np.argsort(uniq, kind="stable")  # requests in (block, warp, step) order
        uniq = uniq[order]
        rep_kal = np.concatenate([part[1] for part in req_parts])[order]
        bw = uniq // n_steps
        requests = {
            "block": (bw // wpb).astype(np.int32),
            "warp": (bw % wpb).astype(np.int32),
            "step": (uniq % n_steps + step_lo).astype(np.int32),
            "kind": (rep_kal // (line_range * a1)).astype(np.uint8),
            "array": ((rep_kal // line_range) % a1 - 1).astype(np.int16),
            "line": (rep_kal % line_range + line_lo).astype(np.int32),
            "lanes": np.concatenate([part[2] for part in req_parts])[order],
            "ways": np.concatenate([part[3] for part in req_parts])[order],
        }
    return _Prep(requests, shared_racy, global_pos)


_REQUEST_FIELDS = ("block", "warp", "step", "kind", "array", "line")


def _request_ids(trace: Trace, sub: dict, sel: np.ndarray | None = None):
    """Dense warp-request id of each (selected) event, and the request's fields, one entry per request."""
    L = trace.launch
    pick = (lambda a: a) if sel is None else (lambda a: a[sel])
    block, thread, step = pick(sub["block"]), pick(sub["thread"]), pick(sub["step"])
    kind, array, line = pick(sub["kind"]), pick(sub["array"]), pick(sub["line"])
    ws = L.warp_size
    warp = thread >> (ws.bit_length() - 1) if ws & (ws - 1) == 0 else thread // ws
    k = _combine([(block, L.n_blocks), (warp, L.warps_per_block), (step, None), (kind, None), (array, None), (line, None)])
    rid, uniq = _dense(k.values, k.range)
    if k.spec is not None:
        cols = k.decode(uniq)
    else:  # keys renumbered on the way: read the fields off one member event of each request
        rep = np.empty(len(uniq), dtype=np.int64)
        rep[rid] = np.arange(len(rid))
        cols = [block[rep], warp[rep], step[rep], kind[rep], array[rep], line[rep]]
    dtypes = (np.int32, np.int32, np.int32, np.uint8, np.int16, np.int32)
    attrs = {name: col.astype(dt) for name, col, dt in zip(_REQUEST_FIELDS, cols, dtypes)}
    return rid, len(uniq), attrs


def _per_line(lines: np.ndarray, columns: dict[str, np.ndarray]) -> list[dict]:
    """Sums of each column per source line, as a list of dicts sorted by line."""
    if len(lines) == 0:
        return []
    uniq, inv = np.unique(lines, return_inverse=True)
    out = {"line": uniq.astype(int).tolist()}
    for name, col in columns.items():
        sums = np.bincount(inv, weights=col, minlength=len(uniq))
        out[name] = sums.astype(np.int64).tolist() if col.dtype.kind in "iub" else sums.tolist()
    return [dict(zip(out, vals)) for vals in zip(*out.values())]


# ---- global memory ---------------------------------------------------------------------------------
@dataclass
class GlobalMemoryReport:
    """Coalescing of global loads, stores and atomics, per warp request and summed.

    ``requests`` holds one entry per warp request (numpy arrays of equal length): block, warp, step, kind,
    array, line, lanes (active lanes), sectors (32-byte sectors touched), lines (128-byte lines touched),
    bytes (lanes x itemsize), ideal_sectors (ceil(distinct bytes / 32)), efficiency (ideal / touched).
    """

    requests: dict[str, np.ndarray]
    per_line: list[dict]
    totals: dict[str, dict]
    sectors_per_request: dict[str, float | None]


_GLOBAL_KIND_LABELS = {K.GLOBAL_LOAD: "load", K.GLOBAL_STORE: "store", K.ATOMIC: "atomic"}


@_single_flight
def global_memory(trace: Trace) -> GlobalMemoryReport:
    c = _cache(trace)
    if "global_memory" in c:
        return c["global_memory"]
    info = _arrays(trace)
    sub = _subset(trace, "global")
    n = len(sub["kind"])
    if n:
        rid, n_req, attrs = _request_ids(trace, sub)
        itemsize = info.itemsize[sub["array"]]
        addr = sub["index"] * itemsize
        k = _combine([(rid, n_req), (addr, None)])
        if k.spec is not None:
            pairs = np.sort(k.values)
            r_sorted, a_sorted = k.decode(pairs)
        else:  # too many requests x bytes for one int64 key: sort the two columns instead
            order = np.lexsort((addr, rid))
            r_sorted, a_sorted = rid[order], addr[order]
        first = np.r_[True, r_sorted[1:] != r_sorted[:-1]]

        def distinct(unit_shift):
            unit = a_sorted >> unit_shift if unit_shift else a_sorted
            new = first.copy()
            new[1:] |= unit[1:] != unit[:-1]
            return np.bincount(r_sorted[new], minlength=n_req)

        elements = distinct(0)  # distinct element start addresses = distinct elements
        sectors = distinct(5)
        lines = distinct(7)
        lanes = np.bincount(rid, minlength=n_req)
        req_itemsize = info.itemsize[attrs["array"]]
        ideal = -(-(elements * req_itemsize) // SECTOR_BYTES)
        requests = dict(attrs)
        requests.update(
            lanes=lanes,
            sectors=sectors,
            lines=lines,
            bytes=lanes * req_itemsize,
            ideal_sectors=ideal,
            efficiency=ideal / np.maximum(sectors, 1),
        )
    else:
        requests = {
            name: np.zeros(0, dtype=dt)
            for name, dt in [("block", np.int32), ("warp", np.int32), ("step", np.int32), ("kind", np.uint8),
                             ("array", np.int16), ("line", np.int32), ("lanes", np.int64), ("sectors", np.int64),
                             ("lines", np.int64), ("bytes", np.int64), ("ideal_sectors", np.int64),
                             ("efficiency", np.float64)]
        }
    totals, spr = {}, {}
    for kind, label in _GLOBAL_KIND_LABELS.items():
        m = requests["kind"] == kind
        n_req = int(m.sum())
        t = {
            "requests": n_req,
            "sectors": int(requests["sectors"][m].sum()),
            "lines": int(requests["lines"][m].sum()),
            "bytes": int(requests["bytes"][m].sum()),
            "ideal_sectors": int(requests["ideal_sectors"][m].sum()),
        }
        t["efficiency"] = t["ideal_sectors"] / t["sectors"] if t["sectors"] else None
        t["sectors_per_request"] = t["sectors"] / n_req if n_req else None
        totals[label] = t
        spr[label] = t["sectors_per_request"]
    per_line = _per_line(
        requests["line"],
        {
            "requests": np.ones(len(requests["line"]), dtype=np.int64),
            "load_requests": (requests["kind"] == K.GLOBAL_LOAD).astype(np.int64),
            "store_requests": (requests["kind"] == K.GLOBAL_STORE).astype(np.int64),
            "sectors": requests["sectors"],
            "ideal_sectors": requests["ideal_sectors"],
            "bytes": requests["bytes"],
        },
    )
    for row in per_line:
        row["sectors_per_request"] = row["sectors"] / row["requests"]
        row["efficiency"] = row["ideal_sectors"] / row["sectors"] if row["sectors"] else None
    report = GlobalMemoryReport(requests, per_line, totals, spr)
    c["global_memory"] = report
    return report


# ---- shared-memory banks ---------------------------------------------------------------------------
@dataclass
class SharedBanksReport:
    """Bank conflicts of shared loads and stores, per warp request and summed.

    ``requests``: block, warp, step, kind, array, line, lanes, ways (n-way conflict: the most distinct
    4-byte words any one bank had to serve; 1 = conflict-free), wavefronts (= ways), extra (= ways - 1).
    Lanes reading the same word are a broadcast, not a conflict. A wider element (8 or 16 bytes) is
    counted at its first word.
    """

    requests: dict[str, np.ndarray]
    per_line: list[dict]
    totals: dict[str, dict]
    bank_conflicts: dict[str, int]


def _shared_requests_general(trace: Trace) -> dict:
    """Per-request bank figures by packing every request field into one key (any trace)."""
    info = _arrays(trace)
    sub = _subset(trace, "shared")
    L = trace.launch
    ldst = sub["kind"] != K.ATOMIC
    if not ldst.all():
        sel = ldst
        pick = lambda a: a[sel]  # noqa: E731
    else:
        sel = None
        pick = lambda a: a  # noqa: E731
    array = pick(sub["array"])
    n = len(array)
    if n:
        shared_bytes = int((info.itemsize * np.array([a.size for a in L.arrays] + [0]) + info.shared_offset).max())
        small = shared_bytes < (1 << 31)  # int32 arithmetic halves the memory traffic
        dt = np.int32 if small else np.int64
        word = pick(sub["index"]).astype(dt)
        shared_ids = np.flatnonzero(info.is_shared)
        itemsizes, offsets = info.itemsize[shared_ids], info.shared_offset[shared_ids]
        if (itemsizes == itemsizes[0]).all():  # the usual case: one element type, a scalar multiply
            word *= dt(itemsizes[0])
        else:
            word *= info.itemsize.astype(dt)[array]
        if offsets.any():
            word += info.shared_offset.astype(dt)[array]
        word >>= 2  # 4-byte words
        rid, n_req, attrs = _request_ids(trace, sub, sel)
        ways = _bank_ways(rid, n_req, word)
        requests = dict(attrs)
        requests.update(lanes=np.bincount(rid, minlength=n_req), ways=ways, wavefronts=ways, extra=ways - 1)
    else:
        requests = {
            name: np.zeros(0, dtype=dt)
            for name, dt in [("block", np.int32), ("warp", np.int32), ("step", np.int32), ("kind", np.uint8),
                             ("array", np.int16), ("line", np.int32), ("lanes", np.int64), ("ways", np.int64),
                             ("wavefronts", np.int64), ("extra", np.int64)]
        }
    return requests


def _bank_ways(rid: np.ndarray, n_req: int, word: np.ndarray) -> np.ndarray:
    """n-way conflict of each request: the most distinct 4-byte words any one of its banks serves."""
    rb_range = n_req * N_BANKS
    rb = rid.astype(_id_dtype(rb_range))
    rb *= N_BANKS
    rb += word & (N_BANKS - 1)  # one slot per (request, bank)
    # Common case first: each bank of a request serves one word (or a broadcast of one word): 1 way.
    mixed = _differs(rb, rb_range, word)
    ways = np.ones(n_req, dtype=np.int64)
    if mixed.any():
        # Exact count only for the (request, bank) slots that saw two or more distinct words.
        in_mixed = mixed[rb]
        distinct = _distinct_per_group(rb[in_mixed], rb_range, word[in_mixed] >> 5, None)
        ways = np.maximum(ways, distinct.reshape(n_req, N_BANKS).max(axis=1))
    return ways


def _shared_requests_fast(trace: Trace) -> dict | None:
    """The per-request figures from the chunked pass (see :func:`_prep`); None when it could not decide."""
    prep = _prep(trace)
    if prep is None or prep.shared_requests is None:
        return None
    requests = dict(prep.shared_requests)
    ways = requests["ways"]
    requests.update(wavefronts=ways, extra=ways - 1)
    return requests


@_single_flight
def shared_banks(trace: Trace) -> SharedBanksReport:
    c = _cache(trace)
    if "shared_banks" in c:
        return c["shared_banks"]
    requests = _shared_requests_fast(trace)
    if requests is None:
        requests = _shared_requests_general(trace)
    totals = {}
    for kind, label in ((K.SHARED_LOAD, "load"), (K.SHARED_STORE, "store")):
        m = requests["kind"] == kind
        totals[label] = {
            "requests": int(m.sum()),
            "wavefronts": int(requests["wavefronts"][m].sum()),
            "bank_conflicts": int(requests["extra"][m].sum()),
            "max_ways": int(requests["ways"][m].max()) if m.any() else 0,
        }
    conflicts = {
        "load": totals["load"]["bank_conflicts"],
        "store": totals["store"]["bank_conflicts"],
    }
    conflicts["total"] = conflicts["load"] + conflicts["store"]
    is_load = (requests["kind"] == K.SHARED_LOAD).astype(np.int64)
    per_line = _per_line(
        requests["line"],
        {
            "requests": np.ones(len(requests["line"]), dtype=np.int64),
            "wavefronts": requests["wavefronts"],
            "bank_conflicts": requests["extra"],
            "load_conflicts": requests["extra"] * is_load,
            "store_conflicts": requests["extra"] * (1 - is_load),
        },
    )
    report = SharedBanksReport(requests, per_line, totals, conflicts)
    c["shared_banks"] = report
    return report


# ---- races -----------------------------------------------------------------------------------------
RACE_DTYPE = np.dtype(
    [
        ("space", "U6"),  # "shared" | "global"
        ("array", np.int16),
        ("index", np.int64),
        ("block", np.int32),  # -1: the accesses come from different blocks
        ("phase", np.int32),  # barrier phase within the block; -1 across blocks
        ("block_a", np.int32), ("thread_a", np.int32), ("kind_a", np.uint8), ("line_a", np.int32),
        ("block_b", np.int32), ("thread_b", np.int32), ("kind_b", np.uint8), ("line_b", np.int32),
        ("loads", np.int64), ("stores", np.int64), ("atomics", np.int64),
    ]
)


@dataclass
class RaceReport:
    """Data races: one record per (array element, block, barrier phase) touched unsafely.

    Shared memory: within a block and between two consecutive barriers, one element touched by different
    threads with at least one plain store, or an atomic and a plain load (atomics never race with atomics).
    Global memory: the same rule across the whole launch between different blocks (blocks never
    synchronise); within one block, barriers separate the accesses as they do for shared memory.
    Each record names two accesses that race (a: the write) and counts every access to the element.
    """

    records: np.ndarray  # RACE_DTYPE
    array_names: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.records)

    def describe(self, limit: int = 20) -> list[str]:
        out = []
        for r in self.records[:limit]:
            where = f"block {r['block']} phase {r['phase']}" if r["block"] >= 0 else "different blocks"
            out.append(
                f"{r['space']} {self.array_names[r['array']]}[{r['index']}] ({where}): "
                f"{K(int(r['kind_a'])).label} by block {r['block_a']} thread {r['thread_a']} (line {r['line_a']}) vs "
                f"{K(int(r['kind_b'])).label} by block {r['block_b']} thread {r['thread_b']} (line {r['line_b']})"
            )
        return out


def _racy(g: np.ndarray, n_g: int, who: np.ndarray, cls: np.ndarray):
    """Which groups race, given each access's group, actor and class (0 load, 1 store, 2 atomic).

    A group races when its actors are not all one and it holds a store, or an atomic and a load.
    Returns (racy, candidate) masks per group; candidate: a store, or an atomic and a load, whoever did them.
    Loads are the bulk of accesses, so only writes are counted in full.
    """
    write = cls != 0
    gw, cw = g[write], cls[write]
    candidate = np.zeros(n_g, dtype=bool)
    candidate[gw[cw == 1]] = True
    atomic = gw[cw == 2]
    if len(atomic):
        has_atomic = np.zeros(n_g, dtype=bool)
        has_atomic[atomic] = True
        has_load = np.zeros(n_g, dtype=bool)
        has_load[g[~write]] = True
        candidate |= has_atomic & has_load
    in_cand = candidate[g]
    multi = _differs(g[in_cand], n_g, who[in_cand])
    return candidate & multi, candidate


def _class_counts(g: np.ndarray, n_g: int, cls: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """(len(groups), 3) loads, stores, atomics of the given groups."""
    wanted = np.zeros(n_g, dtype=bool)
    wanted[groups] = True
    sel = wanted[g]
    counts = np.bincount(g[sel].astype(np.int64) * 3 + cls[sel], minlength=n_g * 3).reshape(n_g, 3)
    return counts[groups]


def _race_pairs(g: np.ndarray, n_g: int, racy: np.ndarray, who: np.ndarray, cls: np.ndarray):
    """For each racy group (ascending), positions of two accesses that race: a write and a conflicting access."""
    pos = np.flatnonzero(racy[g])
    gp, wp, cp = g[pos], who[pos], cls[pos]
    store = cp == 1
    a = np.full(n_g, -1, dtype=np.int64)
    a[gp[store]] = pos[store]  # groups with a store: a = a store ...
    b = np.full(n_g, -1, dtype=np.int64)
    has_store = a >= 0
    a_who = np.where(has_store, who[np.maximum(a, 0)], 0)
    other = has_store[gp] & (wp != a_who[gp])
    b[gp[other]] = pos[other]  # ... b = any access by another actor
    # groups without a store: an atomic and a load by different actors
    load = cp == 0
    load_rep = np.full(n_g, -1, dtype=np.int64)
    load_rep[gp[load]] = pos[load]
    load_who = who[np.maximum(load_rep, 0)]
    atomic_other = (~has_store[gp]) & (cp == 2) & (wp != load_who[gp])
    a[gp[atomic_other]] = pos[atomic_other]
    b_nostore = ~has_store
    b[b_nostore & (a >= 0)] = load_rep[b_nostore & (a >= 0)]
    # remaining: every atomic is by the load_rep's actor; pair one of them with a load by someone else
    left = b_nostore & (a < 0)
    if left.any():
        atomic_rep = np.full(n_g, -1, dtype=np.int64)
        at = cp == 2
        atomic_rep[gp[at]] = pos[at]
        a[left] = atomic_rep[left]
        a_who2 = who[np.maximum(atomic_rep, 0)]
        load_other = left[gp] & load & (wp != a_who2[gp])
        b[gp[load_other]] = pos[load_other]
    groups = np.flatnonzero(racy)
    return groups, a[groups], b[groups]


def _records(space, groups, a, b, counts, block_of_group, phase_of_group, cols) -> np.ndarray:
    """Race records; ``counts`` is (len(groups), 3) loads, stores, atomics."""
    rec = np.zeros(len(groups), dtype=RACE_DTYPE)
    rec["space"] = space
    rec["array"] = cols["array"][a]
    rec["index"] = cols["index"][a]
    rec["block"] = block_of_group
    rec["phase"] = phase_of_group
    for tag, p in (("a", a), ("b", b)):
        rec["block_" + tag] = cols["block"][p]
        rec["thread_" + tag] = cols["thread"][p]
        rec["kind_" + tag] = cols["kind"][p]
        rec["line_" + tag] = cols["line"][p]
    rec["loads"], rec["stores"], rec["atomics"] = counts[:, 0], counts[:, 1], counts[:, 2]
    return rec


_ACCESS_CLASS = np.zeros(len(K), dtype=np.int8)  # 0 load (and anything else)
_ACCESS_CLASS[[K.SHARED_STORE, K.GLOBAL_STORE]] = 1
_ACCESS_CLASS[K.ATOMIC] = 2


def _access_class(kind: np.ndarray) -> np.ndarray:
    return _ACCESS_CLASS[kind]


def _element_key(trace: Trace, sub: dict, extra: list, space: str) -> tuple[np.ndarray, int]:
    """Group ids of (extra fields..., array element): element identity within the given fields."""
    L = trace.launch
    sizes = np.array([a.size if a.space == space else 0 for a in L.arrays], dtype=np.int64)
    base = np.r_[0, np.cumsum(sizes)[:-1]]  # the space's arrays laid end to end in one element space
    elem = base[sub["array"]]
    elem += sub["index"]
    return _space(_combine(extra + [(elem, int(sizes.sum()) or 1)]))


@_single_flight
def races(trace: Trace) -> RaceReport:
    c = _cache(trace)
    if "races" in c:
        return c["races"]
    L = trace.launch
    parts = []

    # shared memory: group by (block, phase, element). The prep's race groups say quickly whether any group
    # races (the usual answer is no); only then are the shared fields gathered to name the racing accesses.
    prep = _prep(trace)
    sh = None if prep is not None and prep.shared_racy is False else _subset(trace, "shared")
    if sh is not None and len(sh["kind"]):
        phase = _phase_of(trace, sh["mask"], sh)
        g, n_g = _element_key(trace, sh, [(sh["block"], L.n_blocks), (phase, None)], "shared")
        cls = _access_class(sh["kind"])
        racy, _ = _racy(g, n_g, sh["thread"], cls)
        if racy.any():
            groups, a, b = _race_pairs(g, n_g, racy, sh["thread"], cls)
            counts = _class_counts(g, n_g, cls, groups)
            parts.append(_records("shared", groups, a, b, counts, sh["block"][a], phase[a], sh))

    # global memory: group by element over the launch; accesses from different blocks always race
    gl = _subset(trace, "global")
    if len(gl["kind"]):
        g, n_g = _element_key(trace, gl, [], "global")
        cls = _access_class(gl["kind"])
        racy, candidate = _racy(g, n_g, gl["block"], cls)
        if racy.any():
            groups, a, b = _race_pairs(g, n_g, racy, gl["block"], cls)
            counts = _class_counts(g, n_g, cls, groups)
            parts.append(_records("global", groups, a, b, counts, -1, -1, gl))
        # elements written within one block by several threads: barriers order them, as in shared memory
        rest = candidate & ~racy
        in_rest = rest[g]
        gt = gl["block"][in_rest].astype(np.int64) * L.threads_per_block + gl["thread"][in_rest]
        several = _differs(g[in_rest], n_g, gt)
        sel = (rest & several)[g]
        if sel.any():
            sub = {k: v[sel] for k, v in gl.items() if k != "mask"}
            mask = gl["mask"].copy()
            mask[mask] = sel
            phase = _phase_of(trace, mask, sub)
            g2, n_g2 = _element_key(trace, sub, [(sub["block"], L.n_blocks), (phase, None)], "global")
            cls2 = cls[sel]
            racy2, _ = _racy(g2, n_g2, sub["thread"], cls2)
            if racy2.any():
                groups, a, b = _race_pairs(g2, n_g2, racy2, sub["thread"], cls2)
                counts = _class_counts(g2, n_g2, cls2, groups)
                parts.append(_records("global", groups, a, b, counts, sub["block"][a], phase[a], sub))

    records = np.concatenate(parts) if parts else np.zeros(0, dtype=RACE_DTYPE)
    report = RaceReport(records, [a.name for a in L.arrays])
    c["races"] = report
    return report


# ---- divergence ------------------------------------------------------------------------------------
@dataclass
class DivergenceReport:
    """SIMT activity per warp instruction: one entry per (block, warp, issue step) that had events.

    ``steps``: block, warp, step, active (lanes with an event), idle (lanes of the warp without one),
    lines (distinct source lines among the active lanes; > 1 means the lanes had diverged: told exactly
    when the executor recorded lockstep steps, inferred from per-thread order otherwise), line (one of them).
    ``per_line``: warp instructions and active lanes per source line; ``simt_efficiency`` = mean active
    lanes / warp width over all warp instructions (1.0 = no lane ever idle).
    """

    steps: dict[str, np.ndarray]
    per_line: list[dict]
    totals: dict
    step_recorded: bool


@_single_flight
def divergence(trace: Trace) -> DivergenceReport:
    c = _cache(trace)
    if "divergence" in c:
        return c["divergence"]
    L = trace.launch
    kind = trace.kind
    sel = (kind != K.START) & (kind != K.END)
    block, thread, step, line = trace.block[sel], trace.thread[sel], trace.issue_step[sel], trace.line[sel]
    ws = L.warp_size
    n = len(block)
    if n:
        k = _combine([(block, L.n_blocks), (thread // ws, L.warps_per_block), (step, None)])
        sid, uniq = _dense(k.values, k.range)
        n_steps = len(uniq)
        if k.spec is not None:
            s_block, warp, s_step = k.decode(uniq)
        else:
            rep = np.empty(n_steps, dtype=np.int64)
            rep[sid] = np.arange(n)
            s_block, warp, s_step = block[rep], thread[rep] // ws, step[rep]
        active = _distinct_per_group(sid, n_steps, thread % ws, ws)
        n_lines = np.ones(n_steps, dtype=np.int64)
        first_line = _rep(sid, n_steps, line)
        mixed = _differs(sid, n_steps, line)
        if mixed.any():  # exact count only for the steps whose lanes were on several lines
            m = mixed[sid]
            n_lines = np.maximum(n_lines, _distinct_per_group(sid[m], n_steps, line[m], None))
        width = np.minimum(ws, L.threads_per_block - warp * ws)
        steps = {
            "block": s_block,
            "warp": warp,
            "step": s_step,
            "active": active,
            "idle": width - active,
            "lines": n_lines,
            "line": first_line,
        }
    else:
        steps = {k: np.zeros(0, dtype=np.int64) for k in ("block", "warp", "step", "active", "idle", "lines", "line")}
    n_inst = len(steps["active"])
    width_sum = int((steps["active"] + steps["idle"]).sum())
    totals = {
        "warp_instructions": n_inst,
        "active_lanes": int(steps["active"].sum()),
        "mean_active_lanes": float(steps["active"].mean()) if n_inst else None,
        "simt_efficiency": float(steps["active"].sum() / (n_inst * ws)) if n_inst else None,
        "occupied_lane_fraction": float(steps["active"].sum() / width_sum) if width_sum else None,
        "diverged_instructions": int((steps["lines"] > 1).sum()),
        "partial_instructions": int((steps["idle"] > 0).sum()),
    }
    per_line = _per_line(
        steps["line"],
        {
            "warp_instructions": np.ones(n_inst, dtype=np.int64),
            "active_lanes": steps["active"],
            "idle_lanes": steps["idle"],
            "diverged": (steps["lines"] > 1).astype(np.int64),
        },
    )
    for row in per_line:
        row["mean_active_lanes"] = row["active_lanes"] / row["warp_instructions"]
        row["simt_efficiency"] = row["active_lanes"] / (row["warp_instructions"] * ws)
    report = DivergenceReport(steps, per_line, totals, trace.has("step"))
    c["divergence"] = report
    return report


def _distinct_per_group(ids: np.ndarray, n_ids: int, values: np.ndarray, value_range: int | None) -> np.ndarray:
    """Number of distinct values in each group (``value_range`` None: taken from the values)."""
    k = _combine([(ids, n_ids), (values, value_range)])
    if k.spec is not None:
        radix = k.spec[1][1]
        if _table_ok(k.range, len(k.values)):
            seen = np.zeros(k.range, dtype=bool)
            seen[k.values] = True
            return seen.reshape(n_ids, radix).sum(axis=1)
        return np.bincount(np.unique(k.values) // radix, minlength=n_ids)
    order = np.lexsort((values, ids))
    i, v = ids[order], values[order]
    new = np.r_[True, (i[1:] != i[:-1]) | (v[1:] != v[:-1])]
    return np.bincount(i[new], minlength=n_ids)


# ---- occupancy -------------------------------------------------------------------------------------
def trace_occupancy(trace: Trace, device="H200") -> dict:
    """Occupancy of the trace's launch on ``device``: from the recorded registers and shared bytes when
    the backend gave them (``launch.meta``), else estimated (32 registers; the shared arrays' bytes)."""
    L = trace.launch
    estimated = []
    regs = L.meta.get("registers_per_thread")
    if regs is None:
        regs = 32
        estimated.append("registers_per_thread (assumed 32)")
    smem = L.meta.get("shared_bytes_per_block")
    if smem is None:
        smem = sum(a.nbytes for a in L.arrays if a.space == "shared")
        estimated.append("shared_bytes_per_block (sum of the shared arrays)")
    result = occupancy(L.threads_per_block, int(regs), int(smem), device)
    result["estimated"] = bool(estimated)
    result["estimated_fields"] = estimated
    return result


# ---- summary ---------------------------------------------------------------------------------------
@_single_flight
def summary(trace: Trace, device="H200") -> dict:
    """The headline numbers ``gpuviz info --json`` merges into its output."""
    gm = global_memory(trace)
    sb = shared_banks(trace)
    rc = races(trace)
    get_device(device)  # a clear KeyError for an unknown device before any work is reported
    return {
        "sectors_per_request": {"load": gm.sectors_per_request["load"], "store": gm.sectors_per_request["store"]},
        "global_efficiency": {"load": gm.totals["load"]["efficiency"], "store": gm.totals["store"]["efficiency"]},
        "bank_conflicts": dict(sb.bank_conflicts),
        "races": rc.count,
        "occupancy": trace_occupancy(trace, device),
    }



# ---- what a person must be told about a trace ----------------------------------------------------------
@dataclass(frozen=True)
class TraceWarning:
    """Something wrong or unsafe in a launch, in words, with the source lines it is about."""

    kind: str  # "race" | "capture" (the executor's own warnings: uninitialised reads, wrapped indices...) | "untraced"
    text: str
    lines: tuple[int, ...] = ()


def _lines_named(text: str) -> tuple[int, ...]:
    import re

    found = [int(m) for m in re.findall(r"(?::|\bline )(\d+)\b", text)]
    return tuple(dict.fromkeys(found))


def trace_warnings(trace: Trace, with_races: bool = True) -> list[TraceWarning]:
    """The capture's warnings (uninitialised shared reads, negative indexes...), the data races and, for a
    launch of a program run, why it was not traced: what ``gpuviz info`` reports, for the window's banner,
    Details and the source margin. ``with_races`` False skips the race analysis (a trace too large to
    analyse on the spot)."""
    L = trace.launch
    out = [TraceWarning("capture", str(w), _lines_named(str(w))) for w in L.warnings]
    rec = (L.meta or {}).get("recording")
    if isinstance(rec, dict) and rec.get("status") not in (None, "traced"):
        out.append(TraceWarning("untraced", f"this launch was not traced ({rec.get('status')})"
                                + (f": {rec['reason']}" if rec.get("reason") else "")))
    if with_races and len(trace):
        rc = races(trace)
        if rc.count:
            r = rc.records
            arrays = sorted({rc.array_names[int(a)] for a in r["array"]})
            lines = tuple(sorted({int(x) for x in np.r_[r["line_a"], r["line_b"]] if x > 0}))
            first = rc.describe(1)[0]
            out.append(TraceWarning(
                "race", f"{rc.count:,} data race{'s' if rc.count != 1 else ''} on {', '.join(arrays)} "
                        f"(lines {', '.join(str(x) for x in lines)}): threads read and write the same element with no "
                        f"barrier between them, so the result depends on timing. First: {first}", lines))
    return out
