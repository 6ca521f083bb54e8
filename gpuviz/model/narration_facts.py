"""The narrator's facts: what :class:`~gpuviz.model.narration.Narrator` computes once, vectorised, for every frame
of a trace before it words a caption (lanes and elements each frame touches, strides, the rows of the analyses'
per-request tables, thread lifetimes, lanes waiting on another branch, who reached each barrier), and what a
trace index keeps of them (:meth:`NarrationFacts.state`). A narrator of frames adopted from an index restores
them (``frames.saved_narration``) instead of computing them.

numpy only: no Qt, no numba.
"""

from __future__ import annotations

import numpy as np

from . import analysis
from .frames import Frames, _spans, frames_at
from .trace import EventKind as K

# ---- the per-frame facts --------------------------------------------------------------------------------
#: traces with up to this many frames keep their per-frame facts as Python lists
_LIST_FRAMES = 200_000


def _as_list(arr) -> list:
    return np.asarray(arr).tolist()


class _Column:
    """A numpy array read one Python value at a time (what a list of it would give, without the list)."""

    __slots__ = ("_a",)

    def __init__(self, arr):
        self._a = np.asarray(arr)

    def __getitem__(self, i):
        return self._a[i].item()

    def __len__(self) -> int:
        return len(self._a)


def compact_phase_shared(rows) -> dict[int, tuple[tuple[str, ...], tuple[str, ...]]]:
    """``(block * n_phases + phase) -> (shared arrays stored, shared arrays loaded)`` from rows ``(key, stores,
    loads)``, each pair of names one shared tuple. A big launch has a row per block and phase (41,000 for
    reduce_sum over 4,096 blocks): as lists and sets they were 250,000 objects that every full garbage
    collection walked, on the GUI thread too (0.1 s at moments nobody chose); tuples of strings it leaves be."""
    same: dict = {}
    out = {}
    for bp, stores, loads in rows:  # most rows name one array or none: nothing to sort
        pair = (tuple(stores) if len(stores) < 2 else tuple(sorted(stores)),
                tuple(loads) if len(loads) < 2 else tuple(sorted(loads)))
        out[int(bp)] = same.setdefault(pair, pair)
    return out


def compact_phase_shared_rows(rows: list) -> list:
    """The index's JSON rows ``[key, stores, loads]`` as tuples sharing their name tuples (the same JSON when
    saved again), for the same reason as :func:`compact_phase_shared`."""
    return [(bp, stores, loads) for bp, (stores, loads) in compact_phase_shared(rows).items()]


class NarrationCancelled(Exception):
    """A narrator's build was cancelled (:meth:`Narrator.cancel`)."""


class NarrationFacts:
    """The facts half of a :class:`~gpuviz.model.narration.Narrator` (which words them): built once, on first
    use, from its ``frames`` (set by the narrator's ``__init__``)."""

    frames: Frames
    _built = False

    # ---- construction (vectorised, once) ------------------------------------------------------------
    _cancelled = False

    def cancel(self) -> None:
        """Stop a build running on another thread at its next stage (it raises :class:`NarrationCancelled`);
        the window does when another trace replaces this one before its captions are ready."""
        self._cancelled = True

    def _check_cancel(self) -> None:
        if self._cancelled:
            raise NarrationCancelled(self.launch.kernel_name)

    #: what a trace index keeps of a narrator (gpuviz.model.index): its per-frame and per-thread arrays
    STATE_ARRAYS = (
        "lanes", "lane_lo", "lane_hi", "idx_lo", "idx_hi", "idx_stride", "idx_regular", "lane_step", "distinct",
        "max_mult", "_n_main", "g_row", "s_row", "d_row", "t_first", "t_last", "n_waiting", "wait_lo", "wait_hi",
    )

    def state(self) -> tuple[dict, dict]:
        """(arrays, JSON) of the built narrator, for a trace index; :meth:`_restore` takes them back."""
        self._build()
        arrays = {k: getattr(self, k) for k in self.STATE_ARRAYS}
        keys = np.array(sorted(self._bar_threads), dtype=np.int64)
        arrays["bar_keys"] = keys
        arrays["bar_threads"] = np.array([self._bar_threads[k] for k in keys.tolist()], dtype=np.int64)
        js = {"n_ph": int(self._n_ph),
              "phase_shared": [[int(bp), sorted(st), sorted(ld)] for bp, (st, ld) in sorted(self._phase_shared.items())]}
        return arrays, js

    def _restore(self, arrays: dict, js: dict) -> None:
        for k in self.STATE_ARRAYS:
            setattr(self, k, arrays[k])
        self._bar_threads = dict(zip(arrays["bar_keys"].tolist(), arrays["bar_threads"].tolist()))
        self._n_ph = int(js["n_ph"])
        self._phase_shared = compact_phase_shared(js["phase_shared"])
        tr = self.trace
        self.gm = analysis.global_memory(tr)
        self.sb = analysis.shared_banks(tr)
        self.dv = analysis.divergence(tr)

    def _build(self) -> None:
        if self._built:
            return
        self._check_cancel()
        saved = self.frames.saved_narration  # set when the frames were adopted from an index holding it
        if saved is not None:
            self._restore(*saved)  # the trace's file (or the cache) holds it: nothing to compute
        else:
            self._compute()
        self._finish()

    def _compute(self) -> None:
        F, tr, L = self.frames, self.trace, self.launch
        n_frames = F.n_frames
        ws = L.warp_size
        perm = F.perm
        ev_frame = np.empty(len(perm), dtype=np.int64)  # the frame of each position of the frame order
        for i, j in _spans(len(perm)):  # a span at a time: one np.repeat over every event held the GIL for 0.6 s
            ev_frame[i:j] = frames_at(F.offsets, i, j)
        kind_s = tr.kind[perm]
        array_s = tr.array[perm]
        # the frame's own events: those of its kind (a barrier frame: its barrier events) and array
        main = (kind_s == F.kind[ev_frame]) & (array_s == F.array[ev_frame])
        sel = np.flatnonzero(main)
        fr = ev_frame[sel]
        ev = perm[sel]
        starts = np.searchsorted(fr, np.arange(n_frames))
        self._n_main = np.diff(np.r_[starts, len(sel)]).astype(np.int64)
        thread = tr.thread[ev].astype(np.int64)
        lane = thread % ws
        idx = tr.index[ev].astype(np.int64)
        has = self._n_main > 0
        st = np.minimum(starts, max(len(sel) - 1, 0))

        def seg_min(v):
            out = np.zeros(n_frames, dtype=np.int64)
            if len(v):
                out[has] = np.minimum.reduceat(v, st)[has]
            return out

        def seg_max(v):
            out = np.zeros(n_frames, dtype=np.int64)
            if len(v):
                out[has] = np.maximum.reduceat(v, st)[has]
            return out

        # distinct lanes (a thread may hold several events of one frame)
        new_thread = np.ones(len(sel), dtype=np.int64)
        if len(sel):
            new_thread[1:] = (thread[1:] != thread[:-1]) | (fr[1:] != fr[:-1])
        self.lanes = (np.add.reduceat(new_thread, st) * has if len(sel) else np.zeros(n_frames, np.int64)).astype(np.int64)
        self.lane_lo, self.lane_hi = seg_min(lane), seg_max(lane)
        self.idx_lo, self.idx_hi = seg_min(idx), seg_max(idx)
        self._index_strides(fr, idx, lane, n_frames)
        self._distinct(fr, idx, has, n_frames)
        self._check_cancel()
        self._join_analyses()
        self._check_cancel()
        self._lifetimes()
        self._check_cancel()
        self._waiting_table(ev_frame)
        self._check_cancel()
        self._barrier_facts()

    def _index_strides(self, fr: np.ndarray, idx: np.ndarray, lane: np.ndarray, n_frames: int) -> None:
        """Differences between neighbouring events of a frame (lanes in order): a constant stride or not."""
        big = np.iinfo(np.int64).max
        if len(fr) > 1:
            same = fr[1:] == fr[:-1]
            d_idx = np.where(same, idx[1:] - idx[:-1], 0)
            d_lane = np.where(same, lane[1:] - lane[:-1], 0)
            pair_frame = fr[1:][same]
            n_pairs = np.bincount(pair_frame, minlength=n_frames)
            dmin = np.full(n_frames, big, dtype=np.int64)
            dmax = np.full(n_frames, -big, dtype=np.int64)
            lmin = np.full(n_frames, big, dtype=np.int64)
            lmax = np.full(n_frames, -big, dtype=np.int64)
            d_idx, d_lane = d_idx[same], d_lane[same]
            for i, j in _spans(len(pair_frame)):  # ufunc.at holds the GIL for its whole call: a span per call
                np.minimum.at(dmin, pair_frame[i:j], d_idx[i:j])
                np.maximum.at(dmax, pair_frame[i:j], d_idx[i:j])
                np.minimum.at(lmin, pair_frame[i:j], d_lane[i:j])
                np.maximum.at(lmax, pair_frame[i:j], d_lane[i:j])
        else:
            n_pairs = np.zeros(n_frames, dtype=np.int64)
            dmin = dmax = lmin = lmax = np.zeros(n_frames, dtype=np.int64)
        regular = (n_pairs > 0) & (dmin == dmax)
        self.idx_stride = np.where(regular, dmin, 0)
        self.idx_regular = regular | (n_pairs == 0)
        self.lane_step = np.where((n_pairs > 0) & (lmin == lmax), lmin, 0)

    def _distinct(self, fr: np.ndarray, idx: np.ndarray, has: np.ndarray, n_frames: int) -> None:
        """Distinct elements and the most lanes on one element: exact by sorting, only where irregular."""
        self.distinct = np.where(self.idx_stride != 0, self._n_main, np.minimum(self._n_main, 1))
        self.max_mult = np.where(self.idx_stride != 0, 1, self._n_main)
        irregular = np.flatnonzero(~self.idx_regular & has)
        if len(irregular):
            pick = np.zeros(n_frames, dtype=bool)
            pick[irregular] = True
            m = pick[fr]
            lo = int(idx[m].min()) if m.any() else 0
            span = int(idx[m].max()) - lo + 1 if m.any() else 1
            if span * n_frames < 2**62:
                key = fr[m] * span + (idx[m] - lo)
                uk, uc = np.unique(key, return_counts=True)
                ufr = uk // span
            else:  # indices far apart (a file's values, not an executor's): one (frame, index) pair per row
                uk, uc = np.unique(np.stack([fr[m], idx[m]], axis=1), axis=0, return_counts=True)
                ufr = uk[:, 0]
            self.distinct[irregular] = 0
            np.add.at(self.distinct, ufr, 1)
            self.max_mult[irregular] = 0
            np.maximum.at(self.max_mult, ufr, uc)

    def _finish(self) -> None:
        F, L = self.frames, self.launch
        # per-frame values as Python lists: composing a caption reads a dozen of them, and indexing a list
        # is ten times cheaper than indexing a numpy array; for a large trace, lists would take hundreds of
        # megabytes and a second to make: the arrays are read one value at a time instead
        listed = _as_list if F.n_frames <= _LIST_FRAMES else _Column
        self._l = {
            name: listed(arr)
            for name, arr in (
                ("kind", F.kind), ("block", F.block), ("warp", F.warp), ("array", F.array), ("line", F.line),
                ("lanes", self.lanes), ("lane_lo", self.lane_lo), ("lane_hi", self.lane_hi),
                ("lane_step", self.lane_step), ("idx_lo", self.idx_lo), ("idx_hi", self.idx_hi),
                ("stride", self.idx_stride), ("regular", self.idx_regular), ("distinct", self.distinct),
                ("max_mult", self.max_mult), ("g_row", self.g_row), ("s_row", self.s_row), ("d_row", self.d_row),
                ("n_wait", self.n_waiting), ("wait_lo", self.wait_lo), ("wait_hi", self.wait_hi),
            )
        }
        ws, tpb = L.warp_size, L.threads_per_block
        self._width = [min(ws, tpb - w * ws) for w in range(L.warps_per_block)]
        self._block_names: dict[int, str] = {}
        self._expr_cache: dict[tuple, tuple] = {}
        self._strides = [
            [int(np.prod(a.shape[d + 1:], dtype=np.int64)) for d in range(len(a.shape or (a.size,)))]
            for a in L.arrays
        ]
        self._sizes = [a.size for a in L.arrays]
        gr, sr = self.gm.requests, self.sb.requests
        self._req = {
            "sectors": listed(gr["sectors"]), "ideal": listed(gr["ideal_sectors"]),
            "eff": listed(gr["efficiency"]), "ways": listed(sr["ways"]),
            "active": listed(self.dv.steps["active"]),
        }
        self._built = True

    def _waiting_table(self, ev_frame: np.ndarray) -> None:
        """For every frame whose warp runs with lanes missing: how many of the missing lanes are alive (on
        another branch), and the lowest and highest of them. Vectorised over those frames, in chunks."""
        F, L, tr = self.frames, self.launch, self.trace
        ws, tpb = L.warp_size, L.threads_per_block
        n_frames = F.n_frames
        self.n_waiting = np.zeros(n_frames, dtype=np.int64)
        self.wait_lo = np.zeros(n_frames, dtype=np.int64)
        self.wait_hi = np.zeros(n_frames, dtype=np.int64)
        width = np.minimum(ws, tpb - F.warp.astype(np.int64) * ws)
        lanes_all = np.zeros(n_frames, dtype=np.int64)  # lanes with any event in the frame
        if len(ev_frame):
            th = tr.thread[F.perm]
            new = np.ones(len(th), dtype=np.int64)
            new[1:] = (th[1:] != th[:-1]) | (ev_frame[1:] != ev_frame[:-1])
            lanes_all = np.bincount(ev_frame, weights=new, minlength=n_frames).astype(np.int64)
        skip = np.isin(F.kind, [K.START, K.END])
        cand = np.flatnonzero((lanes_all < width) & ~skip)
        if len(cand) == 0:
            return
        lane_ids = np.arange(ws, dtype=np.int64)
        for lo in range(0, len(cand), 1 << 15):
            c = cand[lo: lo + (1 << 15)]
            gts = (F.block[c].astype(np.int64) * tpb + F.warp[c].astype(np.int64) * ws)[:, None] + lane_ids[None, :]
            exists = lane_ids[None, :] < width[c][:, None]
            gts = np.where(exists, gts, 0)
            fcol = c[:, None]
            alive = exists & (self.t_first[gts] <= fcol) & (self.t_last[gts] >= fcol)
            # lanes with an event in the frame: scatter the frame's events into its row
            starts, ends = F.offsets[c], F.offsets[c + 1]
            counts = ends - starts
            ev_pos = np.repeat(starts - np.cumsum(np.r_[0, counts[:-1]]), counts) + np.arange(counts.sum())
            ev = F.perm[ev_pos]
            rows = np.repeat(np.arange(len(c)), counts)
            active = np.zeros((len(c), ws), dtype=bool)
            active[rows, tr.thread[ev] % ws] = True
            waiting = alive & ~active
            n = waiting.sum(axis=1)
            self.n_waiting[c] = n
            self.wait_lo[c] = np.where(n > 0, np.argmax(waiting, axis=1), 0)
            self.wait_hi[c] = np.where(n > 0, ws - 1 - np.argmax(waiting[:, ::-1], axis=1), 0)

    def _join_analyses(self) -> None:
        """Row of each frame in the analyses' per-request tables (-1 where the frame has no request)."""
        F, tr = self.frames, self.trace
        self.gm = analysis.global_memory(tr)
        self.sb = analysis.shared_banks(tr)
        self.dv = analysis.divergence(tr)
        fkey_cols = [F.block, F.warp, F.step, F.kind, F.array, F.line]

        def join(req: dict, keys: list[str]) -> np.ndarray:
            n = len(req["block"])
            out = np.full(F.n_frames, -1, dtype=np.int64)
            if n == 0 or F.n_frames == 0:
                return out
            rcols = [np.asarray(req[k], dtype=np.int64) for k in keys]
            fcols = [np.asarray(c, dtype=np.int64) for c in fkey_cols[: len(keys)]]
            rkey, fkey = self._pack(rcols, fcols)
            order = np.argsort(rkey, kind="stable")
            sk = rkey[order]
            pos = np.minimum(np.searchsorted(sk, fkey), len(sk) - 1)
            hit = sk[pos] == fkey
            out[hit] = order[pos[hit]]
            return out

        req_keys = ["block", "warp", "step", "kind", "array", "line"]
        self.g_row = join(self.gm.requests, req_keys)
        self.s_row = join(self.sb.requests, req_keys)
        self.d_row = join(self.dv.steps, ["block", "warp", "step"])

    @staticmethod
    def _pack(rcols: list[np.ndarray], fcols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """One int64 key per row for two tables with the same columns (mixed radix over both)."""
        rkey = np.zeros(len(rcols[0]), dtype=np.int64)
        fkey = np.zeros(len(fcols[0]), dtype=np.int64)
        for rc, fc in zip(rcols, fcols):
            lo = min(int(rc.min()) if len(rc) else 0, int(fc.min()) if len(fc) else 0)
            hi = max(int(rc.max()) if len(rc) else 0, int(fc.max()) if len(fc) else 0)
            radix = hi - lo + 1
            rkey = rkey * radix + (rc - lo)
            fkey = fkey * radix + (fc - lo)
        return rkey, fkey

    def _lifetimes(self) -> None:
        """First and last frame of every thread: a lane is alive at f when first <= f <= last."""
        F, tr, L = self.frames, self.trace, self.launch
        n_threads = L.n_threads
        gt = tr.global_thread
        fo = F.frame_of_event.astype(np.int64)
        self.t_first = np.full(n_threads, np.iinfo(np.int64).max, dtype=np.int64)
        self.t_last = np.full(n_threads, -1, dtype=np.int64)
        for i, j in _spans(len(fo)):  # ufunc.at holds the GIL for its whole call: a span per call
            np.minimum.at(self.t_first, gt[i:j], fo[i:j])
            np.maximum.at(self.t_last, gt[i:j], fo[i:j])

    def waiting_lanes(self, f: int) -> np.ndarray:
        """Lanes of frame ``f``'s warp that are alive (started, not exited) but not executing at ``f``:
        they sit on another branch (or at a barrier)."""
        self._build()
        F, L = self.frames, self.launch
        ws = L.warp_size
        b, w = int(F.block[f]), int(F.warp[f])
        width = F.lanes_in_warp(w)
        gts = b * L.threads_per_block + w * ws + np.arange(width)
        alive = (self.t_first[gts] <= f) & (self.t_last[gts] >= f)
        active = np.zeros(width, dtype=bool)
        ev = F.events(f)
        active[self.trace.thread[ev] % ws] = True
        return np.flatnonzero(alive & ~active)

    def _barrier_facts(self) -> None:
        """Threads that reached each (block, phase)'s barrier, and the shared arrays each phase wrote/read."""
        tr, L = self.trace, self.launch
        bar = np.flatnonzero(tr.kind == K.BARRIER)
        ph = self.frames.event_phase
        n_ph = int(ph.max()) + 1 if len(ph) else 1
        # a thread reaches the barrier that closes a phase once, so barrier events per (block, phase) are
        # the threads that reached it: a count, not a sort
        key = tr.block[bar].astype(np.int64) * n_ph + ph[bar]
        per = np.bincount(key, minlength=0) if len(bar) else np.zeros(0, np.int64)
        nz = np.flatnonzero(per)
        self._bar_threads = dict(zip(nz.tolist(), per[nz].tolist()))
        self._n_ph = n_ph
        shared = [i for i, a in enumerate(L.arrays) if a.space == "shared"]
        self._phase_shared: dict = {}
        if shared:
            kind = tr.kind
            is_shared_access = (kind == K.SHARED_LOAD) | (kind == K.SHARED_STORE)
            m = np.flatnonzero(is_shared_access & np.isin(tr.array, shared))
            n_arr = len(L.arrays) + 1
            k2 = (tr.block[m].astype(np.int64) * n_ph + ph[m]) * 4 + (kind[m] == K.SHARED_STORE)
            k3 = k2 * n_arr + tr.array[m]
            space = L.n_blocks * n_ph * 4 * n_arr
            # which (block, phase, load/store, array) occur: a bincount over the key space when it is small
            k3 = np.flatnonzero(np.bincount(k3, minlength=space)) if space <= 50_000_000 else np.unique(k3)
            for v in k3.tolist():
                a = v % n_arr
                rest = v // n_arr
                is_store, bp = rest % 4, rest // 4
                stores, loads = self._phase_shared.setdefault(bp, (set(), set()))
                (stores if is_store else loads).add(L.arrays[a].name)
            self._phase_shared = compact_phase_shared((bp, st, ld) for bp, (st, ld) in self._phase_shared.items())
