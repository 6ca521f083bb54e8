"""Where an access lands: a subscript's indices per lane (bounds checked), records and their fields, views
(slices, rows, reshapes) resolved to their base array.

A part of :class:`~gpuviz.capture.backends.cpu.runtime.SimtRuntime` (see the package's docstring).
"""

from __future__ import annotations

import enum

import numpy as np

from .....model.trace import EventKind
from ....errors import KernelFault, UnsupportedConstruct
from .values import _PER_LANE_ARRAY_FIELD, _UNRECORDED, ArrayHandle, RecordRef, View


class Indexing:
    def _indices(self, m, h: ArrayHandle, idx, line, verb):
        act = np.flatnonzero(m)
        if len(idx) != h.ndim:
            raise KernelFault(
                f"{self.where(line)}: {h.name} has {h.ndim} dimension(s) but is indexed with {len(idx)}\n"
                f"    {self.line_text(line)}",
                file=self.file,
                line=line,
            )
        ixs = []
        flat = h.flat_offset
        for d, ix in enumerate(idx):
            if isinstance(ix, np.ndarray):
                if ix.dtype.kind not in "iub":
                    raise KernelFault(
                        f"{self.where(line)}: index {d} of {h.name} is a {ix.dtype} value; array indices must be "
                        f"integers\n    {self.line_text(line)}",
                        file=self.file,
                        line=line,
                    )
                v = (ix[act] if ix.ndim else np.full(len(act), ix)).astype(np.int64, copy=False)
            else:
                if isinstance(ix, (float, np.floating)):
                    raise KernelFault(
                        f"{self.where(line)}: index {d} of {h.name} is the float {ix}; array indices must be "
                        f"integers\n    {self.line_text(line)}",
                        file=self.file,
                        line=line,
                    )
                v = int(ix)
            size = h.shape[d]
            neg = v < 0
            if neg.any() if isinstance(neg, np.ndarray) else neg:
                # numba wraps negative indices like Python does; on a GPU this is rarely what was meant
                self.warn(
                    ("neg", h.aid, line),
                    f"{self.where(line)}: negative index into {h.name} wraps around to the end (as in numba)",
                )
                v = np.where(neg, v + size, v) if isinstance(v, np.ndarray) else v + size
            bad = (v < 0) | (v >= size)
            if bad.any() if isinstance(bad, np.ndarray) else bad:
                k = int(np.flatnonzero(np.atleast_1d(bad))[0]) if isinstance(bad, np.ndarray) else 0
                lane = int(act[k])
                shown = []
                for ix2 in idx:
                    shown.append(str(int(ix2[lane])) if isinstance(ix2, np.ndarray) and ix2.ndim else str(int(ix2)))
                raise KernelFault(
                    f"{self.where(line)}: {self.lane_name(lane)} {verb} {h.name}[{', '.join(shown)}], outside its "
                    f"shape {h.shape}\n    {self.line_text(line)}",
                    file=self.file,
                    line=line,
                )
            ixs.append(v)
            flat = flat + v * h.strides[d]
        return act, tuple(ixs), flat

    def _where_in_data(self, h: ArrayHandle, act, ixs):
        if h.space == "shared":
            return (self.slot[act],) + ixs
        if h.space == "local":
            return (act,) + ixs
        return ixs

    @staticmethod
    def _columns(where, k):
        """Index columns of one entry per active lane (a uniform index repeated)."""
        return tuple(w if isinstance(w, np.ndarray) and w.ndim else np.full(k, int(w), dtype=np.int64) for w in where)

    def _full(self, act, vals, dtype):
        if isinstance(vals, np.ndarray) and vals.ndim and len(act) == self.N:
            return vals
        out = np.zeros(self.N, dtype=dtype)
        out[act] = vals
        return out

    def _lane_cols(self, where):
        return tuple(np.broadcast_to(np.asarray(w, dtype=np.int64), (self.N,)) for w in where)

    def _record(self, h, act, where):
        cols = []
        for w in where:
            if isinstance(w, np.ndarray) and w.ndim:
                full = np.zeros(self.N, dtype=np.int64)
                full[act] = w
                cols.append(full)
            else:
                cols.append(int(w))
        return RecordRef(h, tuple(cols))

    def _field_of(self, rec, field, line):
        names = rec.h.dtype.names or ()
        if field not in names:
            raise KernelFault(f"{self.where(line)}: {rec.h.name} has no field {field!r} (its fields: "
                              f"{', '.join(names)})\n    {self.line_text(line)}", file=self.file, line=line)
        if rec.h.dtype[field].shape:
            if rec.h.space in ("global", "const") and all(not isinstance(w, np.ndarray) for w in rec.where):
                return None  # an array field of one record: get_field / set_field make it an array of its own
            return _PER_LANE_ARRAY_FIELD  # each lane's own record (or one in shared/local memory): a view per lane
        return rec.h.data[field]

    def _field_name(self, rec, idx, line) -> str:
        """The field ``rec[idx]`` names: a field name, or a constant position (numba's ``rec[0]``)."""
        if len(idx) == 1 and isinstance(idx[0], str):
            return idx[0]
        names = rec.h.dtype.names or ()
        if len(idx) == 1 and isinstance(idx[0], (int, np.integer)) and -len(names) <= int(idx[0]) < len(names):
            return names[int(idx[0])]
        raise UnsupportedConstruct(f"{self.where(line)}: a record is indexed by a field name or a constant field "
                                   f"position (0..{len(names) - 1}), the same for every thread\n    "
                                   f"{self.line_text(line)}", file=self.file, line=line)

    @staticmethod
    def _array_field(rec, field):
        """The array field of one record (the same for every lane) as an array of its own: a view of the
        record array's memory, so writes go through; its accesses are not events (see _UNRECORDED)."""
        data = rec.h.data[field][tuple(int(w) for w in rec.where)]
        return ArrayHandle(-1, f"{rec.h.name}.{field}", data, "field", data.shape, rec.h.line)

    @staticmethod
    def _array_field_view(rec, field):
        """The array field of each lane's record (``sm[t].j`` of a shared array of records with a nested array
        field): a view whose leading axes are fixed at each lane's record, over the field's memory, so ``j[a, b]``
        reads and writes that lane's element; like an array field of one record, its accesses are not events."""
        data = rec.h.data[field]
        base = ArrayHandle(-1, f"{rec.h.name}.{field}", data, "field", data.shape, rec.h.line)
        field_shape = rec.h.dtype[field].shape
        return View(base, [("fix", w) for w in rec.where] + [("ax", 0, 1)] * len(field_shape), field_shape)

    def record_for_store(self, m, base, idx, line):
        """The record ``base[idx]`` about to be written through a field (``ary[i].x = v``): recorded as a store."""
        idx = self._unpacked(idx)
        if isinstance(base, View):
            base, idx = self._resolve(m, base, idx, line)
        if not (isinstance(base, ArrayHandle) and base.dtype.names):
            return self.load(m, base, idx, line)
        act, ixs, flat = self._indices(m, base, idx, line, "writes")
        if base.space not in _UNRECORDED:
            self._rec(act, EventKind.SHARED_STORE if base.space == "shared" else EventKind.GLOBAL_STORE, base.aid,
                      flat, line)
        return self._record(base, act, self._where_in_data(base, act, ixs))

    def record_of(self, h):
        """A record argument (one ``np.void``): element 0 of its one-element array, for every lane."""
        return RecordRef(h, (0,))

    def get_field(self, m, rec, field, line):
        if isinstance(rec, tuple) and field in getattr(type(rec), "_fields", ()):
            return getattr(rec, field)  # a namedtuple argument
        if isinstance(rec, enum.Enum) and field == "value":
            return rec.value  # an enum member argument
        if not isinstance(rec, RecordRef):
            raise UnsupportedConstruct(f"{self.where(line)}: attribute '.{field}' of a {type(rec).__name__} is not "
                                       f"supported in kernels\n    {self.line_text(line)}", file=self.file, line=line)
        data = self._field_of(rec, field, line)
        if data is None:
            return self._array_field(rec, field)
        if data is _PER_LANE_ARRAY_FIELD:
            return self._array_field_view(rec, field)
        act = np.flatnonzero(m)
        vals = data[tuple(w[act] if isinstance(w, np.ndarray) else w for w in rec.where)]
        if np.ndim(vals) == 0 and self.covers(m):
            return vals[()] if isinstance(vals, np.ndarray) else vals
        return self._full(act, vals, data.dtype)

    def set_field(self, m, rec, field, value, line):
        if not isinstance(rec, RecordRef):
            raise UnsupportedConstruct(f"{self.where(line)}: cannot assign to '.{field}' of a {type(rec).__name__} "
                                       f"in a kernel\n    {self.line_text(line)}", file=self.file, line=line)
        data = self._field_of(rec, field, line)
        if data is _PER_LANE_ARRAY_FIELD:
            raise UnsupportedConstruct(f"{self.where(line)}: field {field!r} of {rec.h.name} is an array: assign its "
                                       f"elements ({rec.h.name}[i].{field}[k] = v)\n    {self.line_text(line)}",
                                       file=self.file, line=line)
        if data is None:  # rec.arr = an array of its shape, or a number for every element
            target = self._array_field(rec, field)
            if isinstance(value, ArrayHandle) and value.space in ("global", "const", "field"):
                if value.shape != target.shape:
                    raise KernelFault(f"{self.where(line)}: cannot assign an array of shape {value.shape} to field "
                                      f"{field!r} of shape {target.shape}\n    {self.line_text(line)}",
                                      file=self.file, line=line)
                target.data[...] = value.data  # copied whole, as numba copies it: no element is an event
            elif isinstance(value, (int, float, bool, complex, np.generic)):
                target.data[...] = value
            else:
                raise UnsupportedConstruct(f"{self.where(line)}: field {field!r} is assigned a "
                                           f"{type(value).__name__}: assign a kernel argument array of its shape, "
                                           f"another record's field, or a number\n    {self.line_text(line)}",
                                           file=self.file, line=line)
            return None
        act = np.flatnonzero(m)
        vals = value[act] if isinstance(value, np.ndarray) and value.ndim else value
        where = tuple(w[act] if isinstance(w, np.ndarray) else w for w in rec.where)
        if isinstance(vals, np.ndarray) and vals.ndim:
            where = self._columns(where, len(act))
        data[where] = vals

    def _is_view_index(self, base, idx):
        return any(isinstance(i, slice) for i in idx) or len(idx) < base.ndim

    def make_view(self, m, base, idx, line):
        """The view ``base[idx]`` (idx holds slices, or fewer indices than base has dimensions)."""
        if isinstance(base, View) and base.reshape_of is not None:
            base = self._materialize_reshape(base)
        if isinstance(base, View) and base.lengths is not None:
            self._fixed_length(base, line)
        if isinstance(base, ArrayHandle):
            dims, vshape = [("ax", 0, 1) for _ in base.shape], list(base.shape)
            handle = base
        else:
            dims, vshape, handle = list(base.dims), list(base.shape), base.base
        if len(idx) > len(vshape):
            raise KernelFault(f"{self.where(line)}: {handle.name} has {len(vshape)} dimension(s) but is indexed with "
                              f"{len(idx)}\n    {self.line_text(line)}", file=self.file, line=line)
        idx = tuple(idx) + (slice(None),) * (len(vshape) - len(idx))
        act = np.flatnonzero(np.broadcast_to(m, (self.N,)))
        new_dims, new_shape, k = [], [], 0
        for d in dims:
            if d[0] == "fix":
                new_dims.append(d)
                continue
            _, start, step = d
            n = vshape[k]
            ix = idx[k]
            k += 1
            if isinstance(ix, slice):
                s0, length, s_step = self._slice_bounds(ix, n, act, line)
                new_dims.append(("ax", start + step * s0, step * s_step))
                new_shape.append(length)
            else:
                v = self._check_index(ix, n, act, handle, line)
                new_dims.append(("fix", start + step * v))
        varying = [s for s in new_shape if isinstance(s, np.ndarray)]
        if not varying:
            return View(handle, new_dims, new_shape)
        if len(new_shape) != 1:
            self._fixed_length(None, line)
        lengths = varying[0]
        return View(handle, new_dims, [int(lengths[act].max()) if len(act) else 0], lengths=lengths)

    def _fixed_length(self, view, line):
        """Refuse what needs a view's length to be the same for every lane."""
        raise UnsupportedConstruct(
            f"{self.where(line)}: this slice has a different length in different threads; gpuviz's executor indexes "
            f"such a slice of a 1-d array (and reads its len() and .size), but needs the same length in every "
            f"thread to slice it again, reshape, copy or loop over it, or assign a slice: index the array directly\n"
            f"    {self.line_text(line)}", file=self.file, line=line)

    def _check_index(self, ix, n, act, h, line):
        v = ix.astype(np.int64) if isinstance(ix, np.ndarray) else int(ix)
        v = np.where(v < 0, v + n, v) if isinstance(v, np.ndarray) else (v + n if v < 0 else v)
        bad = (v < 0) | (v >= n)
        bad_act = bad[act] if isinstance(bad, np.ndarray) and bad.ndim else bad
        if np.any(bad_act):
            lane = int(act[int(np.flatnonzero(np.atleast_1d(bad_act))[0])]) if np.ndim(bad_act) else int(act[0])
            length = int(n[lane]) if isinstance(n, np.ndarray) else n
            raise KernelFault(f"{self.where(line)}: {self.lane_name(lane)} indexes a view of {h.name} outside its "
                              f"length {length}\n    {self.line_text(line)}", file=self.file, line=line)
        return v

    def _slice_bounds(self, sl, n, act, line):
        """(start, length, step) of a slice over an axis of n: start may be per lane, and length too (then an
        array of one per lane)."""
        step = 1 if sl.step is None else sl.step
        if isinstance(step, np.ndarray):
            if step.ndim and len(np.unique(step[act])) > 1:
                raise UnsupportedConstruct(f"{self.where(line)}: a slice step that differs between threads is not "
                                           f"supported\n    {self.line_text(line)}", file=self.file, line=line)
            step = int(step[act][0] if step.ndim else step)
        step = int(step)
        if step == 0:
            raise KernelFault(f"{self.where(line)}: slice step cannot be zero", file=self.file, line=line)

        def norm(v, default):
            if v is None:
                return default
            v = v.astype(np.int64) if isinstance(v, np.ndarray) else int(v)
            v = np.where(v < 0, v + n, v) if isinstance(v, np.ndarray) else (v + n if v < 0 else v)
            lo, hi = (0, n) if step > 0 else (-1, n - 1)
            return np.clip(v, lo, hi) if isinstance(v, np.ndarray) else min(max(v, lo), hi)

        start = norm(sl.start, 0 if step > 0 else n - 1)
        stop = norm(sl.stop, n if step > 0 else -1)
        length = np.maximum(0, (stop - start + (step - (1 if step > 0 else -1))) // step)
        if isinstance(length, np.ndarray) and length.ndim:
            vals = np.unique(length[act]) if len(act) else np.array([0])
            if len(vals) > 1:  # a length per lane (an N-long array): make_view keeps it
                return start, np.broadcast_to(length, (self.N,)).astype(np.int64), step
            length = int(vals[0])
        return start, int(length), step

    def reshape(self, base, shape, line):
        if isinstance(base, View) and base.lengths is not None:
            self._fixed_length(base, line)
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
        if -1 in shape:
            known = int(np.prod([s for s in shape if s != -1]))
            shape = tuple(base.size // known if s == -1 else s for s in shape)
        if int(np.prod(shape)) != base.size:
            raise KernelFault(f"{self.where(line)}: cannot reshape {base.size} elements of {base.name} into {shape}",
                              file=self.file, line=line)
        h = base if isinstance(base, ArrayHandle) else base.base
        return View(h, None, shape, reshape_of=base)

    def _materialize_reshape(self, v):
        raise KernelFault("a view of a reshaped array is not supported", file=self.file)

    def _resolve(self, m, view, idx, line):
        """(base array, base index tuple) of ``view[idx]`` (a full index)."""
        if len(idx) != view.ndim or any(isinstance(i, slice) for i in idx):
            raise KernelFault(f"{self.where(line)}: a view of {view.name} with shape {view.shape} is indexed with "
                              f"{len(idx)} index(es)\n    {self.line_text(line)}", file=self.file, line=line)
        act = np.flatnonzero(np.broadcast_to(m, (self.N,)))
        sizes = (view.lengths,) if view.lengths is not None else view.shape
        ixs = [self._check_index(ix, n, act, view.base, line) for ix, n in zip(idx, sizes)]
        if view.reshape_of is not None:
            flat = 0
            for ix, n in zip(ixs, view.shape):
                flat = flat * n + ix
            inner, out = view.reshape_of.shape, []
            for n in reversed(inner):
                out.append(flat % n)
                flat = flat // n
            inner_idx = tuple(reversed(out))
            if isinstance(view.reshape_of, View):
                return self._resolve(m, view.reshape_of, inner_idx, line)
            return view.reshape_of, inner_idx
        base_idx, k = [], 0
        for d in view.dims:
            if d[0] == "fix":
                base_idx.append(d[1])
            else:
                base_idx.append(d[1] + d[2] * ixs[k])
                k += 1
        return view.base, tuple(base_idx)

    @staticmethod
    def _unpacked(idx):
        """``a[gid]`` with ``gid = cuda.grid(2)``: a tuple variable as the index is its elements."""
        return idx[0] if len(idx) == 1 and isinstance(idx[0], tuple) else idx
