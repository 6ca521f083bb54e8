"""The analyses' common ground: index spaces, the per-trace cache, and the fields they gather once.

*Index space*: a tuple of small integer fields (block, warp, step, ...) packed into one int64 key by mixed radix
(:func:`_combine`). When the key's range is small (the usual case: a key range near the number of events) group
statistics come from ``np.bincount`` and scatter/gather on tables indexed by the key; only when the range is huge
do we fall back to sorting (``np.unique``). Sorting 10M int64 keys costs ~0.5 s on a laptop core, a table pass
~20 ms.

Every analysis of a trace keeps what it computed in the trace's cache (:func:`_cache`, a weak reference: it goes
with the trace), under the trace's lock (:func:`_single_flight`: one computation however many threads ask).
:func:`seed_report` puts a report read from an index there (:class:`gpuviz.model.prepared.Prepared` does).

The reports themselves are in :mod:`gpuviz.model.analysis`; the chunked pass that serves several of them at once
in :mod:`gpuviz.model.analysis_prep`.

numpy only: no Qt, no numba.
"""

from __future__ import annotations

import functools
import threading
import weakref
from dataclasses import dataclass

import numpy as np

from .trace import EventKind, Trace

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
