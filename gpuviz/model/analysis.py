"""Analyses of a trace: global-memory coalescing, shared-memory bank conflicts, races, divergence, occupancy.

All of them are vectorised numpy over the whole trace (no Python loop over events or requests), so they run
on 10M-event traces in well under a second. The main tool is the *index space*: a tuple of small integer
fields (block, warp, step, ...) packed into one int64 key by mixed radix (:mod:`gpuviz.model.analysis_base`,
with the per-trace cache every report is kept in).

``summary()`` on a large trace goes through one chunked pass (``_prep``, :mod:`gpuviz.model.analysis_prep`) that
serves every analysis. Anything that pass cannot decide (a warp-step split across the trace, shared atomics, huge
ranges) goes down the general path here, which gives the same results on any trace.

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

from dataclasses import dataclass, field

import numpy as np

from .analysis_base import (
    BANK_BYTES, LINE_BYTES, N_BANKS, REPORT_NAMES, SECTOR_BYTES, K, _arrays, _bank_ways, _cache, _combine, _dense,
    _differs, _distinct_per_group, _per_line, _phase_of, _rep, _request_ids, _single_flight, _space,
    cached_report, clear_cache, seed_report,
)
from .analysis_prep import _build_prep, _Prep
from .devices import DEVICES, get_device, occupancy
from .trace import Trace

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
    "cached_report",
    "seed_report",
    "REPORT_NAMES",
    "DEVICES",
    "SECTOR_BYTES",
    "LINE_BYTES",
    "BANK_BYTES",
    "N_BANKS",
]


_FAST_PATH = True  # False: every analysis takes its general path (bench/analysis.py --check compares the two)


def _prep(trace: Trace) -> "_Prep | None":
    """The fast path's results, or None when the trace's ranges are too large for small tables. Cached."""
    c = _cache(trace)
    if "prep" not in c:
        c["prep"] = _build_prep(trace) if _FAST_PATH else None
    return c["prep"]


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
    totals, spr, per_line = _global_sums(requests)
    report = GlobalMemoryReport(requests, per_line, totals, spr)
    c["global_memory"] = report
    return report


def _global_sums(requests: dict[str, np.ndarray]) -> tuple[dict, dict, list[dict]]:
    """(totals per kind, sectors per request per kind, per-line rows) of the global requests."""
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
    return totals, spr, per_line


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

    # global memory: group by element over the launch; accesses from different blocks race, unless a grid.sync()
    # stands between them (then they are of different grid phases, and grouped apart)
    gl = _subset(trace, "global")
    if len(gl["kind"]):
        by_grid_phase = [(trace.grid_phase[gl["mask"]], None)] if len(trace.grid_barrier_sites) else []
        g, n_g = _element_key(trace, gl, by_grid_phase, "global")
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
