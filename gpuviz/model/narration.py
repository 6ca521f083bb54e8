"""Narration: one plain-words sentence per frame, saying what happens and why it matters.

    >>> n = Narrator(prepared)  # a trace's Prepared: gpuviz.model.prepared.prepare(trace), made where it is opened
    >>> n.caption(17)
    'Warp 1 reads B[k, col] for 32 consecutive col: 4 sectors, fully coalesced'

Captions are computed from the trace and the analyses (:mod:`gpuviz.model.analysis`), never written
per kernel: the sector counts of global accesses come from :func:`~gpuviz.model.analysis.global_memory`,
the n-way conflicts of shared accesses from :func:`~gpuviz.model.analysis.shared_banks`, the active and
idle lanes of a warp instruction from :func:`~gpuviz.model.analysis.divergence`. ``facts(f)`` returns
those numbers for a frame (lessons ask questions about them; tests check captions against them).

Symbolic subscripts ("B[k, col]") are read from the kernel's own source (``launch.source``) with
:mod:`ast`; where a line cannot be matched, the concrete elements are named instead ("B[3, 0..31]").

A bundled kernel may add notes at chosen frames: ``Narrator(prepared, notes={"first barrier": "..."})``,
keyed by *stops* (see :meth:`Narrator.find`), so that notes survive a change of problem size.

Speed: everything that needs the whole trace (per-frame lane/index statistics, the join with the
analyses' per-request tables, thread lifetimes) is computed once, vectorised, on first use; a caption
is then a few dictionary look-ups and an f-string, cached per frame.

numpy only: no Qt, no numba.
"""

from __future__ import annotations

import re

import numpy as np

from .frames import Frames, format_block, format_indices
from .narration_facts import NarrationCancelled, NarrationFacts
from .narration_source import _IDENT, _subscripts, _warp_calls
from .trace import EventKind as K

__all__ = ["Narrator", "NarrationCancelled", "StopError", "STOP_HELP", "human_bytes"]

STOP_HELP = (
    "start | end | frame N | first barrier | last barrier | barrier N | block B | warp W | line N | "
    "source: TEXT | first global load | first global store | first shared load | first shared store | "
    "first atomic | first warp op | first exit | first conflict | first uncoalesced | first coalesced | "
    "first divergence | first broadcast; any of them + N or - N"
)

_GLOBAL_KINDS = (K.GLOBAL_LOAD, K.GLOBAL_STORE)
_SHARED_KINDS = (K.SHARED_LOAD, K.SHARED_STORE)


class StopError(ValueError):
    """A stop (a named frame: "first barrier", "end", ...) that is unknown or absent from this trace."""


def human_bytes(n: float) -> str:
    """``1536`` -> ``"1.5 KB"`` (decimal units, as GPU bandwidths are quoted)."""
    n = float(n)
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            if unit == "bytes":
                return f"{int(n):,} bytes"
            return f"{n:.1f} {unit}"
        n /= 1000.0
    return f"{n:.1f} TB"  # pragma: no cover - the loop always returns


def _times(n: int) -> str:
    return {3: "three times", 4: "four times"}.get(n, f"{n} times")


def _lane_range(lo: int, hi: int) -> str:
    return f"lane {lo}" if lo == hi else f"lanes {lo}-{hi}"


def _plural(n: int, word: str) -> str:
    if n == 1:
        return f"{n} {word}"
    return f"{n} {word}es" if word.endswith("s") else f"{n} {word}s"


def atomic_queue_phrase(lanes: int, addresses: int, most_on_one: int) -> str:
    """What one warp's atomics do: updates of one address serialise, queued one after another. The caption and
    the shared-memory view's header both say it in these words (the header called 32 lanes' atomics on 12 words
    'broadcast, no conflict' while the caption under it said up to 7 of them queue)."""
    if lanes <= 1 or most_on_one <= 1:
        return f"{_plural(addresses, 'address')}, no two lanes collide"
    return (f"{lanes} lanes on {_plural(addresses, 'address')}: up to {most_on_one} updates of one address "
            f"queue one after another")


class Narrator(NarrationFacts):
    """Captions (and the facts behind them) for every frame of one prepared trace.

    ``prepared``: the trace's :class:`~gpuviz.model.prepared.Prepared` (its frames, and the narration facts its
    index saved); :meth:`of_frames` narrates frames that no prepared trace holds yet (the index's builder)."""

    def __init__(self, prepared, notes=None):
        self._start(prepared.frames, notes)

    @classmethod
    def of_frames(cls, frames: Frames, notes=None) -> "Narrator":
        """A narrator of ``frames`` themselves: for the index's builder, which narrates before the trace is
        prepared, and for frames built apart from any prepared trace."""
        narrator = cls.__new__(cls)
        narrator._start(frames, notes)
        return narrator

    def _start(self, frames: Frames, notes) -> None:
        self.frames = frames
        self.trace = frames.trace
        self.launch = frames.launch
        self._built = False
        self._captions: dict[int, str] = {}
        self._subs = None
        self._notes_raw = list(notes.items()) if isinstance(notes, dict) else list(notes or [])
        self._notes: dict[int, str] | None = None

    # ---- facts and captions --------------------------------------------------------------------------
    def facts(self, f: int) -> dict:
        """The numbers behind frame ``f``'s caption, each taken from the analyses where they have it."""
        self._build()
        F, L = self.frames, self.launch
        f = F._check(f)
        kind = K(int(F.kind[f]))
        w = int(F.warp[f])
        out = {
            "frame": f,
            "kind": kind.label,
            "block": int(F.block[f]),
            "warp": w,
            "line": int(F.line[f]),
            "lanes": int(self.lanes[f]),
            "width": F.lanes_in_warp(w),
            "distinct": int(self.distinct[f]),
        }
        a = int(F.array[f])
        if 0 <= a < len(L.arrays):
            out["array"] = L.arrays[a].name
        g = int(self.g_row[f])
        if g >= 0:
            r = self.gm.requests
            out.update(
                sectors=int(r["sectors"][g]),
                ideal_sectors=int(r["ideal_sectors"][g]),
                efficiency=float(r["efficiency"][g]),
                bytes=int(r["bytes"][g]),
                cache_lines=int(r["lines"][g]),
            )
        s = int(self.s_row[f])
        if s >= 0:
            out["ways"] = int(self.sb.requests["ways"][s])
        d = int(self.d_row[f])
        if d >= 0:
            out["active_lanes"] = int(self.dv.steps["active"][d])
            out["idle_lanes"] = int(self.dv.steps["idle"][d])
        if kind == K.BARRIER:
            b, p = int(F.block[f]), int(F.phase[f])
            out["waiting_warps"] = int(F.waiting_warps[f])
            out["warps_per_block"] = L.warps_per_block
            out["threads_at_barrier"] = int(self._bar_threads.get(b * self._n_ph + p, 0))
            out["barrier_opens"] = F.barrier_opens_at(f)
            out["grid_barrier"] = F.is_grid_barrier(f)  # a grid.sync(): every block waits, not just this one
        if kind not in (K.START, K.END):
            out["waiting_lanes"] = int(self.n_waiting[f])
        return out

    def caption(self, f: int) -> str:
        """One sentence: what frame ``f`` does and why it matters."""
        hit = self._captions.get(f)
        if hit is None:
            self._build()
            if self.frames.n_frames == 0:
                return "Nothing was recorded: this launch has no events"
            hit = self._captions[int(f)] = self._compose(self.frames._check(f))
        return hit

    def captions(self, start: int = 0, stop: int | None = None) -> list[str]:
        """Captions of frames ``start`` .. ``stop - 1`` (all frames by default)."""
        stop = self.frames.n_frames if stop is None else stop
        return [self.caption(f) for f in range(start, stop)]

    def note(self, f: int) -> str:
        """The kernel's own note at frame ``f`` ("" when it has none there)."""
        if self._notes is None:
            self._notes = {}
            for stop, text in self._notes_raw:
                self._notes[self.find(stop)] = str(text)
        return self._notes.get(int(f), "")

    def text(self, f: int) -> str:
        """Caption and, where the kernel has one, its note."""
        note = self.note(f)
        return self.caption(f) + (f". {note}" if note else "")

    # ---- composing one sentence ------------------------------------------------------------------------
    def _who(self, f: int, plural_lanes: bool) -> tuple[str, bool]:
        """Subject of the sentence and whether it is plural ("Warp 3" / "Lanes 0-15 of warp 3")."""
        col = self._l  # the per-frame columns, as lists where that is cheaper
        w = col["warp"][f]
        width = self._width[w]
        n = col["lanes"][f]
        if n >= width:
            return f"Warp {w}", False
        lo, hi = col["lane_lo"][f], col["lane_hi"][f]
        if n == 1:
            return f"Lane {lo} of warp {w}", False
        if hi - lo + 1 == n:
            return f"Lanes {lo}-{hi} of warp {w}", True
        step = col["lane_step"][f]
        if step > 1:
            return f"{n} lanes of warp {w} (every {_ordinal(step)} one)", True
        return f"{n} of {width} lanes of warp {w}", True

    def _waiting_clause(self, f: int) -> str:
        """"lanes 16-31 wait on the other branch, so divergence halves the warp's speed" or ""."""
        col = self._l
        n_wait = col["n_wait"][f]
        if n_wait == 0:
            return ""
        width = self._width[col["warp"][f]]
        d = col["d_row"][f]
        active = self._req["active"][d] if d >= 0 else col["lanes"][f]
        lo, hi = col["wait_lo"][f], col["wait_hi"][f]
        who = _lane_range(lo, hi) if hi - lo + 1 == n_wait else f"the other {n_wait} lanes"
        verb = "waits" if n_wait == 1 else "wait"
        if active * 2 == width:
            cost = "divergence halves the warp's speed"  # the example teachers quote
        else:
            cost = f"divergence leaves {width - active} of {width} lanes idle"
        return f"{who} {verb} on the other branch, so {cost}"

    def _expr(self, f: int) -> tuple[str, list[str] | None]:
        """``B[k, col]`` as written in the source (with its dimension texts), else the concrete elements."""
        F, L, tr = self.frames, self.launch, self.trace
        col = self._l
        a, kind, line = col["array"][f], col["kind"][f], col["line"][f]
        info = L.arrays[a]
        ndim = max(len(info.shape), 1)
        if L.sites and tr.has("site"):
            # the event's own site (the capture plan's): the subscript as written there, no reading of the source.
            # Two subscripts of one array on one line (x[i] + x[i + 1]) are two sites, told apart.
            ev = F.events(f)
            ev = ev[(tr.kind[ev] == kind) & (tr.array[ev] == a)]
            sites = np.unique(tr.site[ev]) if len(ev) else ()
            if len(sites) == 1 and 0 <= int(sites[0]) < len(L.sites):
                key = ("site", int(sites[0]), a)
                hit = self._expr_cache.get(key)
                if hit is not None:
                    return hit
                site = L.sites[int(sites[0])]
                if site.array and len(site.index) == ndim:
                    dims = list(site.index)
                    hit = self._expr_cache[key] = (f"{info.name}[{', '.join(dims)}]", dims)
                    return hit
        hit = self._expr_cache.get((line, a, kind))
        if hit is not None:
            return hit
        store = kind in (K.GLOBAL_STORE, K.SHARED_STORE)
        if self._subs is None:
            self._subs = _subscripts(L)
        subs = self._subs.get(line, [])
        mine = [s for s in subs if s.name == info.name and len(s.dims) == ndim]
        if not mine:  # a device function's parameter name: the one subscript of that shape on the line
            known = {x.name for x in L.arrays}
            mine = [s for s in subs if s.name not in known and len(s.dims) == ndim]
            if len({(s.store, tuple(s.dims)) for s in mine}) > 2:
                mine = []
        if kind == K.ATOMIC:
            pick = mine
        else:
            pick = [s for s in mine if s.store == store] or ([] if store else mine)
        if pick and len({tuple(s.dims) for s in pick}) == 1:
            dims = pick[0].dims
            hit = self._expr_cache[(line, a, kind)] = (f"{info.name}[{', '.join(dims)}]", dims)
            return hit
        ev = F.events(f)  # concrete elements: these differ frame to frame, so they are not cached
        ev = ev[(tr.kind[ev] == kind) & (tr.array[ev] == a)]
        return format_indices(info, tr.index[ev]), None

    def _pattern(self, f: int, dims: list[str] | None) -> str:
        """How the lanes' elements lie: " for 32 consecutive col", " down a column", " (one element)"."""
        col = self._l
        n = col["lanes"][f]
        if n <= 1:
            return ""
        a = col["array"][f]
        info = self.launch.arrays[a]
        shape = info.shape or (info.size,)
        stride = col["stride"][f]
        if stride == 0 or not col["regular"][f]:  # a broadcast is said by the why-clause
            return ""
        # element strides of each dimension; the lanes walk one dimension when the stride is one of them
        el = self._strides[a]
        lo, hi = col["idx_lo"][f], col["idx_hi"][f]
        if lo < 0 or hi >= self._sizes[a]:
            return ""
        for d in range(len(shape)):
            if abs(stride) != el[d]:
                continue
            # the other coordinates stay put: same row (higher dims), same position in it (lower dims)
            outer = el[d] * shape[d]
            if lo // outer != hi // outer or lo % el[d] != hi % el[d]:
                continue
            name = dims[d] if dims and _IDENT.match(dims[d]) else None
            if d == len(shape) - 1:
                if name:
                    return f" for {n} consecutive {name}"
                return f" for {n} consecutive elements" if len(shape) == 1 else f" along a row ({n} neighbouring elements)"
            gap = human_bytes(abs(stride) * info.itemsize)
            what = f"{n} values of {name}" if name else f"{n} elements"
            return f" down a column ({what}, {gap} apart)"
        if abs(stride) > 1:
            return f" (every {_ordinal(abs(stride))} element)"
        return ""

    def loop_iterations(self, f: int) -> np.ndarray:
        """Loop iterations run by each thread that ends at frame ``f`` (the CPU executor records them on END
        events when a loop's length depends on the data); empty where not recorded."""
        tr = self.trace
        if not tr.has("value"):
            return np.zeros(0)
        ev = self.frames.events(f)
        ev = ev[tr.kind[ev] == K.END]
        vals = tr.value[ev]
        return vals[np.isfinite(vals)]

    def _loop_clause(self, f: int) -> str:
        """': its lanes looped 2 to 64 times (mean 17.0); the warp ran all 64 for them, so its lanes sat idle in
        73% of them (divergence)', for a warp whose loop length depends on the data ("" where not recorded)."""
        vals = self.loop_iterations(f)
        if len(vals) == 0:
            return ""
        lo, hi, mean = int(vals.min()), int(vals.max()), float(vals.mean())
        if hi == lo:
            return f": every lane looped {_plural(hi, 'time')} (no divergence)"
        idle = 1.0 - mean / hi
        return (f": its lanes looped {lo} to {hi} times (mean {mean:.1f}); the warp ran all {hi} for them, so its "
                f"lanes sat idle in {idle:.0%} of them (divergence)")

    def _compose(self, f: int) -> str:
        F, L, col = self.frames, self.launch, self._l
        kind = K(col["kind"][f])
        w = col["warp"][f]
        b = col["block"][f]
        bname = self._block_names.get(b)
        if bname is None:
            bname = self._block_names[b] = format_block(L, b)
        if kind == K.BARRIER:
            return self._barrier(f, b, w, bname)
        if kind == K.START:
            lo = w * L.warp_size
            hi = lo + F.lanes_in_warp(w) - 1
            return (f"Warp {w} of block {bname} starts: threads {lo}-{hi} each work out their own data "
                    f"from blockIdx and threadIdx")
        if kind == K.END:
            loops = self._loop_clause(f)
            if int(F.block_last[b]) == f:
                # a block waits only while one has not started yet: the last blocks to finish free their SM for none
                waits = bool(len(F.block_first)) and f < int(np.max(F.block_first))
                if loops:
                    free = "its SM free for a waiting block" if waits else "no block waits for its SM"
                    return f"Warp {w} finishes, the last of its block (block {bname} is done, {free}){loops}"
                tail = (f"block {bname} is done and its SM is free for a waiting block" if waits
                        else f"block {bname} is done; no block waits for its SM")
                return f"Warp {w} finishes, the last of its block: {tail}"
            if loops:
                return f"Warp {w} of block {bname} finishes{loops}"
            return f"Warp {w} of block {bname} finishes: its {_plural(int(self.lanes[f]), 'thread')} exit"
        if kind == K.WARP_OP:
            return self._join(self._warp_op(f), "", self._waiting_clause(f))
        if not kind.is_memory or not 0 <= col["array"][f] < len(L.arrays):
            return f"Warp {w} of block {bname}: {F.describe_action(f)}"
        who, plural = self._who(f, True)
        expr, dims = self._expr(f)
        pattern = self._pattern(f, dims)
        waiting = self._waiting_clause(f)
        if kind == K.ATOMIC:
            verb = "atomically update" if plural else "atomically updates"
            why = atomic_queue_phrase(int(col["lanes"][f]), int(col["distinct"][f]), int(col["max_mult"][f]))
            g = col["g_row"][f]
            if g >= 0:
                why = f"{_plural(self._req['sectors'][g], 'sector')}, {why}"
            return self._join(f"{who} {verb} {expr}{pattern}", why, waiting)
        verb = ("read" if plural else "reads") if kind in (K.GLOBAL_LOAD, K.SHARED_LOAD) else ("write" if plural else "writes")
        g, s = col["g_row"][f], col["s_row"][f]
        if g >= 0:
            why = self._sectors_phrase(f, g)
        elif s >= 0:
            why = self._banks_phrase(f, s)
        else:
            why = ""
        return self._join(f"{who} {verb} {expr}{pattern}", why, waiting)

    _calls = None  # source line -> its warp shuffles and votes (_warp_calls), read at the first one narrated
    _call_nth = None  # source line -> (frames of warp ops on it, which execution by its warp each one is)

    def _execution(self, f: int, line: int) -> int:
        """Which execution of line ``line``'s warp op frame ``f`` is for its warp (0 for the first)."""
        if self._call_nth is None:
            self._call_nth = {}
        got = self._call_nth.get(line)
        if got is None:
            F = self.frames
            fr = np.flatnonzero((F.line == line) & (F.kind == K.WARP_OP))
            key = F.block[fr].astype(np.int64) * max(self.launch.warps_per_block, 1) + F.warp[fr]
            order = np.argsort(key, kind="stable")  # frames of one warp in frame order, warp after warp
            ks = key[order]
            first = np.r_[0, np.flatnonzero(ks[1:] != ks[:-1]) + 1]
            nth = np.arange(len(ks)) - np.repeat(first, np.diff(np.r_[first, len(ks)]))
            out = np.empty(len(fr), dtype=np.int64)
            out[order] = nth
            got = self._call_nth[line] = (fr, out)
        fr, nth = got
        i = int(np.searchsorted(fr, f))
        return int(nth[i]) if i < len(fr) and fr[i] == f else 0

    def _warp_op(self, f: int) -> str:
        """A shuffle or vote in the words of its source call: shfl_down_sync is a one-way read from lane + offset
        (it was narrated as 'swaps values'), with the offset and which lanes read which where the source says."""
        col = self._l
        who, plural = self._who(f, True)
        line = int(col["line"][f])
        if self._calls is None:
            self._calls = _warp_calls(self.launch)
        calls = self._calls.get(line, [])
        plain = "register to register, with no shared memory and no barrier"
        if len(calls) != 1:
            return f"{who} {'exchange' if plural else 'exchanges'} values with a warp shuffle or vote: {plain}"
        c = calls[0]
        val = c.args[1] if len(c.args) > 1 else "a value"
        lo, hi = int(col["lane_lo"][f]), int(col["lane_hi"][f])
        top = min(hi, self.launch.warp_size - 1)
        offset = None
        if c.offsets:
            k = self._execution(f, line)
            # one offset every time (a literal), else the k-th of the loop's sequence
            offset = c.offsets[0] if len(c.offsets) == 1 else c.offsets[k] if k < len(c.offsets) else None
        expr = c.args[2] if len(c.args) > 2 else "offset"
        read = "read" if plural else "reads"
        if c.name in ("shfl_down_sync", "shfl_up_sync"):
            down = c.name == "shfl_down_sync"
            if offset is None:
                return (f"{who} {read} {val} from the lane {expr} {'above' if down else 'below'} (cuda.{c.name}: lane i "
                        f"gets lane i {'+' if down else '-'} {expr}'s value), a one-way read: {plain}")
            if down:
                readers, sources, own = (lo, top - offset), (lo + offset, top), (max(lo, top - offset + 1), top)
            else:
                readers, sources, own = (lo + offset, top), (lo, top - offset), (lo, min(top, lo + offset - 1))
            if readers[0] > readers[1]:
                pairs = f"every lane's source is outside the warp, so each keeps its own {val}"
            else:
                pairs = (f"{_lane_range(*readers)} {'read' if readers[0] != readers[1] else 'reads'} "
                         f"{_lane_range(*sources)}, {_lane_range(*own)} "
                         f"{'keeps its' if own[0] == own[1] else 'keep their'} own")
            return (f"{who} {read} {val} from the lane {offset} {'above' if down else 'below'} (cuda.{c.name}, "
                    f"offset {offset}), a one-way read: {pairs}; {plain}")
        if c.name == "shfl_xor_sync":
            if offset is None:
                return (f"{who} {'swap' if plural else 'swaps'} {val} with lane i XOR {expr} (cuda.shfl_xor_sync): "
                        f"pairs of lanes exchange both ways, {plain}")
            return (f"{who} {'swap' if plural else 'swaps'} {val} in pairs {offset} lanes apart (cuda.shfl_xor_sync, "
                    f"lane i with lane i XOR {offset}: lane {lo} with lane {lo ^ offset}): {plain}")
        if c.name == "shfl_sync":
            if offset is not None:
                return f"{who} {read} {val} from lane {offset} (cuda.shfl_sync): lane {offset}'s value for all, {plain}"
            return f"{who} {read} {val} from lane {expr} (cuda.shfl_sync), each from the lane it names: {plain}"
        if c.name == "syncwarp":
            return f"{who} {'meet' if plural else 'meets'} at cuda.syncwarp: the warp's lanes wait for each other"
        pred = c.args[1] if len(c.args) > 1 else "a condition"
        what = {"ballot_sync": f"a 32-bit mask of the lanes where {pred} holds, the same for every lane",
                "all_sync": f"whether {pred} holds on every lane", "any_sync": f"whether {pred} holds on any lane"}
        return f"{who} {'vote' if plural else 'votes'} with cuda.{c.name}: each gets {what[c.name]}, {plain}"

    @staticmethod
    def _join(action: str, why: str, waiting: str) -> str:
        if waiting:
            return f"{action}: {why}; {waiting}" if why else f"{action}; {waiting}"
        return f"{action}: {why}" if why else action

    def _sectors_phrase(self, f: int, g: int) -> str:
        r = self._req
        sectors, ideal = r["sectors"][g], r["ideal"][g]
        if self._l["lanes"][f] > 1 and self._l["distinct"][f] == 1:
            return f"{_plural(sectors, 'sector')}, one fetch serves every lane (a broadcast)"
        if sectors <= ideal:
            return f"{_plural(sectors, 'sector')}, fully coalesced"
        pct = int(round(100.0 * r["eff"][g]))
        return (f"{sectors} sectors where {ideal} would do: uncoalesced, only {pct}% of the bytes fetched "
                f"are used")

    def _banks_phrase(self, f: int, s: int) -> str:
        ways = self._req["ways"][s]
        n, distinct = self._l["lanes"][f], self._l["distinct"][f]
        if ways > 1:
            slower = "twice as slow as it could be" if ways == 2 else f"{_times(ways)} slower than it could be"
            return f"{_a(ways)} {ways}-way bank conflict, {slower}"
        if n > 1 and distinct == 1:
            return "one word for every lane: a broadcast, no bank conflict"
        if distinct < n:
            return f"{distinct} words in different banks, shared by {n} lanes: no bank conflict"
        if n <= 1:
            return "one word, no bank conflict"
        return "one word per bank: conflict-free, served in one pass"

    def _grid_barrier(self, f: int, w: int, bname: str) -> str:
        """A warp at a ``grid.sync()``: every block of the grid waits there, not only the warp's own."""
        F, L = self.frames, self.launch
        blocks_there, n_blocks, threads_there = F.grid_barrier_arrivals(f)
        if F.barrier_opens_at(f):
            return (f"Warp {w} of block {bname} is the last to reach grid.sync(): all {threads_there} threads of all "
                    f"{n_blocks} blocks are there, so the grid barrier opens and every block goes on, safe to read "
                    "what any block wrote before it")
        return (f"Warp {w} reaches grid.sync() ({int(F.waiting_warps[f])} of {L.warps_per_block} warps of block "
                f"{bname} are there): a barrier of the whole grid, so every block waits until the last thread of the "
                f"last block arrives ({blocks_there} of {n_blocks} blocks all there)")

    def _barrier(self, f: int, b: int, w: int, bname: str) -> str:
        F, L = self.frames, self.launch
        if F.is_grid_barrier(f):
            return self._grid_barrier(f, w, bname)
        p = int(F.phase[f])
        if F.barrier_opens_at(f):
            n_at = int(self._bar_threads.get(b * self._n_ph + p, 0))
            stores, loads = self._phase_shared.get(b * self._n_ph + p, ((), ()))
            if stores:
                names = " and ".join(sorted(stores))
                why = (f"the shared array {names} is complete, safe for every thread to read" if len(stores) == 1
                       else f"the shared arrays {names} are complete, safe for every thread to read")
            elif loads:
                names = " and ".join(sorted(loads))
                why = f"everyone is done reading {names}, so {'it' if len(loads) == 1 else 'they'} may be overwritten"
            else:
                why = "every warp has finished the work before it"
            if n_at < L.threads_per_block:
                return (f"Only {n_at} of the {L.threads_per_block} threads of block {bname} reach this "
                        f"syncthreads: the others left early, so it is a divergent barrier")
            return f"All {n_at} threads of block {bname} are at syncthreads and it opens: {why}"
        waiting = int(F.waiting_warps[f])
        there = f"{waiting} of {L.warps_per_block} warps of block {bname} are there"
        if waiting > L.warps_per_block:
            # a GPU recording without lockstep: a warp's lanes may reach a barrier apart (independent thread
            # scheduling), one frame each group; '6 of 1 warps' counted the groups as warps
            there = (f"arrival {waiting} at it in block {bname}, whose {_plural(L.warps_per_block, 'warp')} reached "
                     f"it lanes apart, as a GPU may schedule them")
        warps, lengths = self.phase_lengths(b, p)
        mine = lengths[warps == w]
        if not len(mine) or len(lengths) == 1:
            # no other warp of the block issues in this phase (one warp per block, the rest recorded elsewhere or
            # gone): no one to wait for, and no one to name (numba-cuda's laplace kernel on the H200: IndexError)
            return f"Warp {w} reaches syncthreads ({there}): no other warp of its block issues in this phase"
        if len(lengths) > 1 and lengths.min() == lengths.max():
            # on the issue-step clock (the Barriers view) they all arrive together: the frames only show one warp
            # at a time, and 'waits' here contradicted the Barriers header's 'nobody waits'
            return (f"Warp {w} reaches syncthreads ({there}): every warp issues the same {int(lengths[0])} "
                    f"instructions to get here, so all arrive at the same step and none waits for another")
        longest = int(lengths.max())
        if len(mine) and int(mine[0]) < longest:
            last = warps[lengths == longest]
            return (f"Warp {w} reaches syncthreads {_plural(longest - int(mine[0]), 'step')} before "
                    f"{_warp_names(last)} and waits for {'it' if len(last) == 1 else 'them'} ({there})")
        early = warps[lengths < longest]
        return (f"Warp {w} reaches syncthreads after {longest} instructions, the most in its block: "
                f"{_warp_names(early)} wait for it ({there})")

    _lengths = None  # (keys, counts): instructions per (block, phase, warp), built at the first barrier asked about

    def phase_lengths(self, b: int, p: int) -> tuple[np.ndarray, np.ndarray]:
        """(warps, instructions each issues in phase ``p`` of block ``b``): the clock the Barriers view draws, on
        which the warps with fewer instructions wait for the ones with the most (one frame is one instruction)."""
        F, L = self.frames, self.launch
        n_ph, wpb = max(int(self._n_ph), int(F.phase.max()) + 1 if F.n_frames else 1), max(L.warps_per_block, 1)
        if self._lengths is None:
            key = (F.block.astype(np.int64) * n_ph + F.phase) * wpb + F.warp
            self._lengths = np.unique(key, return_counts=True)
        keys, counts = self._lengths
        lo = (int(b) * n_ph + int(p)) * wpb
        i, j = np.searchsorted(keys, [lo, lo + wpb])
        return (keys[i:j] - lo).astype(np.int64), counts[i:j].astype(np.int64)

    # ---- stops: named frames ------------------------------------------------------------------------------
    def find(self, stop) -> int:
        """The frame a stop names: ``"first barrier"``, ``"end"``, ``"line 14"``, ``"first conflict + 2"``...

        An int is a frame number (negative: from the end). Unknown or absent stops raise :class:`StopError`.
        """
        F = self.frames
        n = F.n_frames
        if n == 0:
            raise StopError("this trace has no frames")
        if isinstance(stop, (int, np.integer)) and not isinstance(stop, bool):
            f = int(stop) + (n if int(stop) < 0 else 0)
            if not 0 <= f < n:
                raise StopError(f"frame {stop} is out of range: this trace has {n} frames")
            return f
        if not isinstance(stop, str) or not stop.strip():
            raise StopError(f"a stop is a frame number or a name ({STOP_HELP}), not {stop!r}")
        text = " ".join(stop.strip().split())
        offset = 0
        m = re.match(r"^(.*?)\s*([+-])\s*(\d+)$", text)
        if m and m.group(1) and not re.match(r"^(frame|barrier|block|warp|line)$", m.group(1).lower()):
            text, offset = m.group(1), int(m.group(3)) * (1 if m.group(2) == "+" else -1)
        f = self._find_base(text)
        return min(max(f + offset, 0), n - 1)

    def _find_base(self, text: str) -> int:
        F = self.frames
        n = F.n_frames
        low = text.lower()
        if low.startswith("source:"):
            needle = text.split(":", 1)[1].strip()
            lines = self.launch.source_lines()
            first = int(self.launch.first_line or 1)
            hits = [first + i for i, ln in enumerate(lines) if needle and needle in ln]
            frames = np.flatnonzero(np.isin(F.line, hits)) if hits else np.zeros(0, np.int64)
            if len(frames) == 0:
                where = "no source line contains it" if not hits else "no frame runs the line(s) " + ", ".join(map(str, hits))
                raise StopError(f"stop {text!r}: {where}")
            return int(frames[0])
        if low in ("start", "first", "first frame", "begin"):
            return 0
        if low in ("end", "last", "last frame"):
            return n - 1
        if low in ("first barrier", "last barrier") or re.match(r"^barrier \d+$", low):
            bars = F.barrier_complete_frames
            if len(bars) == 0:
                raise StopError(f"stop {text!r}: this launch has no syncthreads")
            if low == "first barrier":
                return int(bars[0])
            if low == "last barrier":
                return int(bars[-1])
            k = int(low.split()[1])
            if not 1 <= k <= len(bars):
                raise StopError(f"stop {text!r}: this launch has {len(bars)} barrier openings (barrier 1..{len(bars)})")
            return int(bars[k - 1])
        m = re.match(r"^(frame|block|warp|line) (-?\d+)$", low)
        if m:
            what, k = m.group(1), int(m.group(2))
            if what == "frame":
                return self.find(k)
            col = {"block": F.block, "warp": F.warp, "line": F.line}[what]
            hits = np.flatnonzero(col == k)
            if len(hits) == 0:
                raise StopError(f"stop {text!r}: no frame has {what} {k}")
            return int(hits[0])
        kinds = {
            "first global load": (K.GLOBAL_LOAD,), "first global store": (K.GLOBAL_STORE,),
            "first shared load": (K.SHARED_LOAD,), "first shared store": (K.SHARED_STORE,),
            "first atomic": (K.ATOMIC,), "first warp op": (K.WARP_OP,), "first exit": (K.END,),
        }
        if low in kinds:
            hits = np.flatnonzero(np.isin(F.kind, kinds[low]))
            if len(hits) == 0:
                raise StopError(f"stop {text!r}: this launch has none")
            return int(hits[0])
        self._build()
        if low in ("first conflict", "first uncoalesced", "first coalesced", "first broadcast"):
            if low == "first conflict":
                rows = self.s_row
                ok = rows >= 0
                good = np.zeros(n, dtype=bool)
                good[ok] = self.sb.requests["ways"][rows[ok]] > 1
            elif low == "first broadcast":
                good = (self.lanes > 1) & (self.distinct == 1) & ((self.g_row >= 0) | (self.s_row >= 0))
            else:
                rows = self.g_row
                ok = rows >= 0
                good = np.zeros(n, dtype=bool)
                eff = self.gm.requests["efficiency"][rows[ok]]
                good[ok] = (eff < 1.0) if low == "first uncoalesced" else ((eff >= 1.0) & (self.lanes[ok] > 1))
            hits = np.flatnonzero(good)
            if len(hits) == 0:
                raise StopError(f"stop {text!r}: this launch has none")
            return int(hits[0])
        if low == "first divergence":
            L = self.launch
            width = np.minimum(L.warp_size, L.threads_per_block - F.warp.astype(np.int64) * L.warp_size)
            cand = np.flatnonzero(self.lanes < width)
            for f in cand.tolist():
                if K(int(F.kind[f])) not in (K.START, K.END) and len(self.waiting_lanes(f)):
                    return f
            raise StopError(f"stop {text!r}: no warp of this launch diverges")
        raise StopError(f"unknown stop {text!r}; stops are: {STOP_HELP}")


def _warp_names(warps) -> str:
    """'warp 3', 'warps 2 and 3', 'warps 4-7', 'warps 1, 4 and 6'."""
    ws = [int(w) for w in warps]
    if len(ws) == 1:
        return f"warp {ws[0]}"
    if len(ws) > 2 and ws == list(range(ws[0], ws[-1] + 1)):
        return f"warps {ws[0]}-{ws[-1]}"
    if len(ws) > 6:
        return f"warps {', '.join(map(str, ws[:5]))} and {len(ws) - 5} more"
    return f"warps {', '.join(map(str, ws[:-1]))} and {ws[-1]}"


def _a(n: int) -> str:
    """The article before a number said aloud: "an 8-way", "an 11-way", "a 32-way"."""
    return "an" if str(n).startswith("8") or n in (11, 18) or 80 <= n < 90 else "a"


def _ordinal(n: int) -> str:
    if 10 <= n % 100 <= 20:
        suffix = "th"
    else:
        suffix = {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
