"""Threads meeting: block barriers (a barrier some live threads miss is reported), the grid barrier of a
cooperative launch, and the warp primitives (votes, shuffles, match, activemask).

A part of :class:`~gpuviz.capture.backends.cpu.runtime.SimtRuntime` (see the package's docstring).
"""

from __future__ import annotations

import numpy as np

from .....model.trace import EventKind
from ....errors import DivergentBarrierError, KernelFault
from .values import FnRef, _ranges


class Threads:
    def syncthreads(self, m, line, predicate=None, mode=None):
        at = m & self.alive
        missing = self.alive & ~m
        nb = self.n_slots
        blocks_at = np.bincount(self.slot[at], minlength=nb) > 0
        blocks_missing = np.bincount(self.slot[missing], minlength=nb) > 0
        bad = np.flatnonzero(blocks_at & blocks_missing)
        if len(bad):
            b = int(bad[0])
            in_b = self.slot == b
            arrived = self.thread_lin[at & in_b]
            absent = self.thread_lin[missing & in_b]
            coords = (int(self.bid[0][b * self.tpb]), int(self.bid[1][b * self.tpb]), int(self.bid[2][b * self.tpb]))
            more = f" ({len(bad) - 1} more block(s) likewise)" if len(bad) > 1 else ""
            raise DivergentBarrierError(
                f"{self.where(line)}: divergent barrier in block {coords}{more}: threads {_ranges(arrived)} "
                f"reached cuda.syncthreads() but threads {_ranges(absent)} are still running elsewhere and never "
                f"arrive. On a GPU this hangs or corrupts shared memory: every live thread of a block must reach "
                f"the same barrier.\n    {self.line_text(line)}",
                file=self.file,
                line=line,
                block=coords,
                arrived=arrived,
                missing=absent,
            )
        act = np.flatnonzero(at)
        self.barriers_passed += 1
        self._rec(act, EventKind.BARRIER, -1, None, line)
        if mode is None:
            return None
        pred = np.broadcast_to(self.truth(predicate), (self.N,)) & at
        count = np.bincount(self.slot[pred], minlength=nb)
        total = np.bincount(self.slot[at], minlength=nb)
        if mode == "count":
            per = count
        elif mode == "and":
            per = (count == total).astype(np.int64)
        else:
            per = (count > 0).astype(np.int64)
        return per[self.slot]

    @staticmethod
    def grid_group():
        """``cuda.cg.this_grid()``: the grid group, whose ``.sync()`` is :meth:`grid_sync`."""
        return FnRef("grid", None)

    def grid_sync(self, m, line):
        """``g.sync()`` of ``g = cuda.cg.this_grid()``: a barrier of the whole grid. The executor runs every block
        at once, so every live thread of every block reaches it before any goes on: one BARRIER event per thread,
        at one issue step. A thread still running elsewhere, or a block that ended before it, never arrives: on a
        GPU the grid waits for it forever."""
        at = m & self.alive
        missing = self.alive & ~m
        nb = self.n_slots
        ended = np.flatnonzero(np.bincount(self.slot[self.alive], minlength=nb) == 0) if at.any() else []
        if missing.any() or len(ended):
            b = int(self.slot[np.flatnonzero(missing)[0]]) if missing.any() else int(ended[0])
            in_b = self.slot == b
            coords = (int(self.bid[0][b * self.tpb]), int(self.bid[1][b * self.tpb]), int(self.bid[2][b * self.tpb]))
            absent = self.thread_lin[missing & in_b]
            why = (f"threads {_ranges(absent)} of block {coords} are still running elsewhere and never arrive"
                   if missing.any() else f"block {coords} ended before it and never arrives")
            raise DivergentBarrierError(
                f"{self.where(line)}: divergent grid barrier: {why} at grid.sync(). On a GPU the grid waits for "
                f"them forever: every live thread of every block must reach the same grid.sync().\n"
                f"    {self.line_text(line)}",
                file=self.file, line=line, block=coords, arrived=self.thread_lin[at & in_b], missing=absent)
        self.barriers_passed += 1
        self._rec(np.flatnonzero(at), EventKind.BARRIER, -1, None, line)

    def syncwarp(self, m, line):
        self._rec(np.flatnonzero(m), EventKind.WARP_OP, -1, None, line)

    def activemask(self, m):
        return self._per_warp_bits(m)

    def lanemask_lt(self):
        return (np.int64(1) << self.laneid) - 1

    def _per_warp_bits(self, bits_mask):
        bits = np.where(bits_mask, np.left_shift(np.int64(1), self.laneid), 0).astype(np.int64)
        acc = np.zeros(self.n_slots * self.warps_per_block, dtype=np.int64)
        np.add.at(acc, self.warp_gid, bits)
        return acc[self.warp_gid]

    def warp_op(self, name, m, line, *args):
        act = np.flatnonzero(m)
        self._rec(act, EventKind.WARP_OP, -1, None, line)
        if name in ("ballot_sync", "all_sync", "any_sync"):
            pred = np.broadcast_to(self.truth(args[1]), (self.N,)) & m
            if name == "ballot_sync":
                return self._per_warp_bits(pred)
            n_true = np.bincount(self.warp_gid[pred], minlength=self.n_slots * self.warps_per_block)
            n_act = np.bincount(self.warp_gid[m], minlength=self.n_slots * self.warps_per_block)
            per = (n_true == n_act) if name == "all_sync" else (n_true > 0)
            return per[self.warp_gid]
        if name not in ("shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync"):
            raise KernelFault(f"{self.where(line)}: cuda.{name} is not supported by gpuviz's executor", file=self.file, line=line)
        val = np.broadcast_to(np.asarray(args[1]), (self.N,))
        arg = args[2]
        lane = self.laneid
        if name == "shfl_sync":
            src = np.asarray(arg) % self.warp_size
            valid = np.ones(self.N, dtype=bool)
        elif name == "shfl_up_sync":
            src = lane - arg
            valid = src >= 0
        elif name == "shfl_down_sync":
            src = lane + arg
            valid = src < self.warp_size
        else:
            src = lane ^ arg
            valid = (src >= 0) & (src < self.warp_size)
        src = np.broadcast_to(src, (self.N,))
        src_thread = self.thread_lin - lane + src
        valid = valid & (src_thread < self.tpb)
        src_lane = np.where(valid, self.lanes - lane + src, self.lanes)
        return val[src_lane]
