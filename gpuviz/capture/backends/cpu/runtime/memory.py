"""Memory accesses, recorded: loads, stores and atomics over the lanes of a mask, and reductions of a thread's own
local array.

A part of :class:`~gpuviz.capture.backends.cpu.runtime.SimtRuntime` (see the package's docstring).
"""

from __future__ import annotations

import numpy as np

from .....model.trace import EventKind
from ....errors import KernelFault, KernelRaised, UnsupportedConstruct
from .values import _UNRECORDED, ArrayHandle, RecordRef, View


class Memory:
    def load(self, m, base, idx, line):
        base = self.one_array(m, base, line)
        idx = self._unpacked(idx)
        if isinstance(base, View):
            if self._is_view_index(base, idx):
                return self.make_view(m, base, idx, line)
            base, idx = self._resolve(m, base, idx, line)
        elif isinstance(base, ArrayHandle) and self._is_view_index(base, idx):
            return self.make_view(m, base, idx, line)
        if isinstance(base, RecordRef):
            return self.get_field(m, base, self._field_name(base, idx, line), line)
        if isinstance(base, ArrayHandle):
            act, ixs, flat = self._indices(m, base, idx, line, "reads")
            where = self._where_in_data(base, act, ixs)
            if base.dtype.names:  # a record: the access is recorded here, its fields are read through it
                if base.space not in _UNRECORDED:
                    self._rec(act, EventKind.SHARED_LOAD if base.space == "shared" else EventKind.GLOBAL_LOAD,
                              base.aid, flat, line)
                return self._record(base, act, where)
            vals = base.data[where]
            if base.space == "shared":
                unwritten = ~base.written[where]
                if np.any(unwritten):
                    lane = int(act[int(np.flatnonzero(np.atleast_1d(unwritten))[0])]) if np.ndim(unwritten) else int(act[0])
                    self.warn(
                        ("uninit", base.aid, line),
                        f"{self.where(line)}: {self.lane_name(lane)} reads {base.name} before any thread of its block "
                        "wrote it (uninitialised shared memory reads as garbage on a GPU; here as NaN/0xDEADBEEF)",
                    )
            if base.space not in _UNRECORDED:
                shared = base.space == "shared"
                # values are kept for shared memory (the bank view shows them); global arrays are too big to be worth it
                self._rec(act, EventKind.SHARED_LOAD if shared else EventKind.GLOBAL_LOAD, base.aid, flat, line, vals if shared else None)
            if np.ndim(vals) == 0 and self.covers(m):
                return vals[()] if isinstance(vals, np.ndarray) else vals
            return self._full(act, vals, base.dtype)
        if isinstance(base, tuple):
            if len(idx) != 1:
                raise KernelFault(f"{self.where(line)}: a tuple takes one index", file=self.file, line=line)
            k = idx[0]
            n = len(base)
            kk = np.broadcast_to(np.asarray(k, dtype=np.int64), (self.N,))
            kk = np.where(kk < 0, kk + n, kk)
            bad = ((kk < 0) | (kk >= n)) & np.broadcast_to(m, (self.N,)) & self.alive
            if bad.any():
                lane = int(np.flatnonzero(bad)[0])
                raise KernelRaised(f"{self.where(line)}: {self.lane_name(lane)} indexes a tuple of {n} outside its "
                                   f"range\n    {self.line_text(line)}", file=self.file, line=line,
                                   exception=IndexError("tuple index out of range"))
            if isinstance(k, np.ndarray):
                stacked = np.stack([np.broadcast_to(np.asarray(e), (self.N,)) for e in base])
                return stacked[np.where(np.broadcast_to(m, (self.N,)), kk, 0), self.lanes]
            return base[int(kk[0])]
        raise KernelFault(
            f"{self.where(line)}: cannot index a {type(base).__name__}\n    {self.line_text(line)}", file=self.file, line=line
        )

    def store(self, m, base, idx, value, line):
        base = self.one_array(m, base, line)
        idx = self._unpacked(idx)
        if isinstance(base, (ArrayHandle, View)) and self._is_view_index(base, idx):
            # a[i:j] = v: every element of the view, in C order (v a number, or an array of the view's shape)
            v = self.make_view(m, base, idx, line)
            if v.lengths is not None or (isinstance(value, View) and value.lengths is not None):
                self._fixed_length(v, line)
            src_shape = tuple(value.shape) if isinstance(value, (ArrayHandle, View)) else None
            if src_shape is not None and src_shape != v.shape:
                raise KernelFault(f"{self.where(line)}: cannot assign an array of shape {src_shape} to a slice of "
                                  f"shape {v.shape}\n    {self.line_text(line)}", file=self.file, line=line)
            for ix in np.ndindex(*v.shape):
                val = self.load(m, value, ix, line) if src_shape is not None else value
                self.store(m, v, ix, val, line)
            return None
        if isinstance(base, View):
            base, idx = self._resolve(m, base, idx, line)
        if isinstance(base, RecordRef):
            return self.set_field(m, base, self._field_name(base, idx, line), value, line)
        if not isinstance(base, ArrayHandle):
            raise KernelFault(
                f"{self.where(line)}: cannot assign into a {type(base).__name__}\n    {self.line_text(line)}",
                file=self.file,
                line=line,
            )
        if base.space == "const":
            raise KernelFault(f"{self.where(line)}: {base.name} is a constant array", file=self.file, line=line)
        act, ixs, flat = self._indices(m, base, idx, line, "writes")
        if isinstance(value, RecordRef):  # ary[i] = ary[j]: the whole record
            value = value.h.data[tuple(np.broadcast_to(np.asarray(w), (self.N,))[act] for w in value.where)]
            vals = value
        else:
            vals = value[act] if isinstance(value, np.ndarray) and value.ndim else value
        where = self._where_in_data(base, act, ixs)
        if isinstance(vals, np.ndarray) and vals.ndim:
            # several lanes may store to one element (`if tid == 0: out[0] = v`, a uniform index): per-lane
            # index columns, so that the last lane in lane order wins, as the simulator's thread order gives
            where = self._columns(where, len(act))
        base.data[where] = vals
        if base.space == "shared":
            base.written[where] = True
        if base.space not in _UNRECORDED:
            shared = base.space == "shared"
            self._rec(act, EventKind.SHARED_STORE if shared else EventKind.GLOBAL_STORE, base.aid, flat, line, vals if shared else None)

    def atomic(self, op, m, line, base, idx, *vals):
        base = self.one_array(m, base, line)
        if not isinstance(base, (ArrayHandle, View)):
            raise KernelFault(f"{self.where(line)}: cuda.atomic.{op} needs an array", file=self.file, line=line)
        if op == "compare_and_swap":  # cuda.atomic.compare_and_swap(array, old, val) works on element 0
            vals = (idx,) + vals
            idx = (0,) * base.ndim
        if not isinstance(idx, tuple):
            idx = (idx,)
        idx = self._unpacked(idx)
        if isinstance(base, View):
            base, idx = self._resolve(m, base, idx, line)
        act, ixs, flat = self._indices(m, base, idx, line, "updates")
        k = len(act)
        where = self._columns(self._where_in_data(base, act, ixs), k)
        vs = [v[act] if isinstance(v, np.ndarray) and v.ndim else np.broadcast_to(np.asarray(v), (k,)) for v in vals]
        data = base.data
        if op in ("add", "sub"):
            v = vs[0].astype(data.dtype, copy=False)
            if op == "sub":
                v = -v
            # atomics from the lanes of one step apply in lane order; each lane sees the sum before it
            flat_b = np.broadcast_to(np.asarray(flat), (k,))
            key = flat_b + (self.slot[act] * base.size if base.space == "shared" else 0)
            order = np.argsort(key, kind="stable")
            sk, sv = key[order], v[order]
            start = np.r_[True, sk[1:] != sk[:-1]] if k else np.zeros(0, bool)
            excl = np.cumsum(sv) - sv
            grp_first = np.flatnonzero(start)
            grp = np.cumsum(start) - 1
            within = excl - excl[grp_first][grp]
            before = data[where]
            old = np.empty(k, dtype=data.dtype)
            old[order] = np.broadcast_to(before, (k,))[order] + within
            np.add.at(data, where, v)
        else:
            old = np.empty(k, dtype=data.dtype)
            cols = [np.broadcast_to(np.asarray(w), (k,)) for w in where]
            for j in range(k):
                at = tuple(int(c[j]) for c in cols)
                cur = data[at]
                old[j] = cur
                a = vs[0][j] if vs else None
                if op in ("max", "nanmax"):
                    data[at] = max(cur, a) if not (op == "nanmax" and np.isnan(cur)) else a
                elif op in ("min", "nanmin"):
                    data[at] = min(cur, a) if not (op == "nanmin" and np.isnan(cur)) else a
                elif op == "exch":
                    data[at] = a
                elif op in ("cas", "compare_and_swap"):
                    if cur == vs[0][j]:
                        data[at] = vs[1][j]
                elif op == "inc":
                    data[at] = 0 if cur >= a else cur + 1
                elif op == "dec":
                    data[at] = a if (cur == 0 or cur > a) else cur - 1
                elif op == "and_":
                    data[at] = cur & a
                elif op == "or_":
                    data[at] = cur | a
                elif op == "xor":
                    data[at] = cur ^ a
        if base.space == "shared":
            base.written[where] = True
        if base.space not in _UNRECORDED:
            self._rec(act, EventKind.ATOMIC, base.aid, flat, line, vs[-1] if vs else None)
        return self._full(act, old, data.dtype)

    def array_reduce(self, m, obj, op, line):
        """``a.sum()``, ``a.mean()``, ... of a thread's own local array: over each thread's elements."""
        if not (isinstance(obj, ArrayHandle) and obj.space == "local"):
            raise UnsupportedConstruct(
                f"{self.where(line)}: .{op}() of a {getattr(obj, 'space', type(obj).__name__)} array: gpuviz runs it "
                f"on a thread's own cuda.local.array only (a global or shared array's loads would go unrecorded): "
                f"write the loop\n    {self.line_text(line)}", file=self.file, line=line)
        data = obj.data.reshape(obj.data.shape[0], -1)
        return getattr(np, op)(data, axis=1)

    def b_tuple(self, line, x=()):
        """``tuple(t)`` of a tuple (numba compiles it for tuples, whose length it knows): the same values."""
        if isinstance(x, tuple):
            return x
        raise UnsupportedConstruct(
            f"{self.where(line)}: tuple() of a {type(x).__name__}: numba-cuda makes a tuple of a tuple's values only "
            f"(its length must be known when it compiles): write (a, b, ...)\n    {self.line_text(line)}",
            file=self.file, line=line)
