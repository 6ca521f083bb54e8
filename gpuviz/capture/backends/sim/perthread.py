"""Per-thread instrumentation for numba's CUDA simulator (``backend="sim"``), the reference the CPU executor is
tested against: the shared per-thread rewrite (:mod:`gpuviz.capture.backends.rewrite`) with its recording calls
left for :class:`SimRecorder` to resolve at run time. The rewrite only wraps:

* ``A[idx]`` (load)       -> ``A[__gv_ld(A, idx, LINE, SITE)]``  (records, returns idx unchanged)
* ``A[idx] = v``          -> ``A[__gv_st(A, idx, LINE, SITE)] = v``  (v is evaluated first, as in Python)
* ``A[idx] op= v``        -> ``__gv_i = idx; A[__gv_st(A, __gv_i, ...)] = A[__gv_ld(A, __gv_i, ...)] op v``
* ``cuda.atomic.op(A, idx, v)`` -> operands hoisted to temporaries, the event recorded, then the atomic
* ``cuda.syncthreads()``  -> ``__gv_bar(LINE, SITE)`` before it; warp primitives record as they are called
* a prologue that records START, ``__gv_end(LINE, SITE)`` before each ``return`` and at the end.

``SITE`` is the id of the construct in the capture plan's site table (:mod:`gpuviz.capture.frontend.plan`): the
events carry it, as the CPU executor's do.

Which subscripted objects are arrays worth recording is decided at run time by identity: kernel
array arguments, ``cuda.shared.array`` results and module-level arrays register themselves; local
arrays and tuples do not.
"""

from __future__ import annotations

import threading

import numpy as np

from ....model.trace import ArrayInfo, EventKind
from ...dtypes import to_dtype
from ...errors import TraceTooLarge
from ...launch_watch import sim_ndarray
from ..rewrite import PREFIX, RewriteBase


class PerThreadRewriter(RewriteBase):
    """The simulator's rewrite: views, reshapes and calls through parameters resolved by the recorder at run time."""

    runtime_rewrites = True

    def visit_Call(self, node):
        if self.callee(node.func) in (["cuda", "shared", "array"], ["cuda", "local", "array"]):
            # numba's simulator refuses alignment= ("not supported in cudasim"); it only says where the array
            # starts in memory, which the trace does not depend on (the front end checked it as numba-cuda does)
            node.args = node.args[:2]
            node.keywords = [k for k in node.keywords if k.arg != "alignment"]
        return super().visit_Call(node)


class SimRecorder:
    """Collects events from the simulator's threads (one Python thread per CUDA thread)."""

    def __init__(self, grid, block, array_params: list[str], record_blocks=None, max_events: int | None = None,
                 file: str = "the kernel"):
        self.grid, self.block = grid, block
        # each event is a tuple of Python ints here (~150 bytes): a kernel that loops long but makes progress (so the
        # watchdog lets it run) is stopped at the event limit while it runs, not after it filled the memory
        self.max_events = max_events
        self.file = file
        self.tpb = block[0] * block[1] * block[2]
        self.local = threading.local()
        self.events: list[tuple] = []
        self.by_id: dict[int, int] = {}
        self.arrays: list[ArrayInfo] = []
        self.aid_of_name: dict[tuple, int] = {}
        self.array_params = array_params
        self.record_blocks = None if record_blocks is None else set(int(b) for b in record_blocks)
        self.lock = threading.Lock()
        self.shapes: dict[int, tuple] = {}
        self.base_nd: dict[int, np.ndarray] = {}  # array id -> its numpy array (to place a view's elements)
        self.views: dict[int, np.ndarray] = {}  # id of a view object -> its numpy view
        self.keep: list = []  # the view objects, kept alive so that their ids stay theirs
        self.tuple_params: list[str] = []

    stopped_at: int | None = None  # the line whose event passed max_events

    def too_large(self, line) -> None:
        """Raised in the simulated thread that would record one event past the limit (the launch ends there)."""
        if self.stopped_at is None:  # the first thread to reach the limit names the line; the others follow it
            self.stopped_at = int(line)
        raise self.too_large_error()

    def too_large_error(self):
        return TraceTooLarge(f"{self.file}:{self.stopped_at}: the trace passed max_events={self.max_events:,} events "
                             "while the kernel ran on numba's simulator: capture a smaller problem, fewer blocks "
                             "(record_blocks=...), or raise max_events", file=self.file, line=self.stopped_at)

    def _aid(self, key, name, shape, dtype, space, line=-1):
        with self.lock:
            aid = self.aid_of_name.get(key)
            if aid is None:
                aid = len(self.arrays)
                self.arrays.append(ArrayInfo.of(name, shape, to_dtype(dtype), space, line))
                self.aid_of_name[key] = aid
            return aid

    def functions(self) -> dict:
        """The ``__gv_*`` functions the rewritten kernel calls: this recorder's methods, by the names the rewrite uses."""
        return {
            PREFIX + "enter": self.enter,
            PREFIX + "reg": self.reg,
            PREFIX + "reg_shared": self.reg_shared,
            PREFIX + "ld": self.access(EventKind.GLOBAL_LOAD, EventKind.SHARED_LOAD),
            PREFIX + "st": self.access(EventKind.GLOBAL_STORE, EventKind.SHARED_STORE),
            PREFIX + "at": self.at,
            PREFIX + "callv": self.callv,
            PREFIX + "view": self.view,
            PREFIX + "reshape": self.reshape,
            PREFIX + "dtype_view": self.dtype_view,
            PREFIX + "part": self.part,
            PREFIX + "setslice": self.setslice,
            PREFIX + "barv": self.barv,
            PREFIX + "bar": self.bar,
            PREFIX + "warp": self.warp,
            PREFIX + "warp_stmt": self.warp_stmt,
            PREFIX + "end": self.end,
        }

    # ---- what the rewritten kernel calls (from the simulator's threads) -----------------------------------
    def enter(self, bx, by, bz, tx, ty, tz, line, site):
        gx, gy, _ = self.grid
        bdx, bdy, _ = self.block
        st = self.local
        st.block = bx + by * gx + bz * gx * gy
        st.thread = tx + ty * bdx + tz * bdx * bdy
        st.seq = 0
        st.on = self.record_blocks is None or st.block in self.record_blocks
        self.emit(EventKind.START, -1, -1, line, site)

    def emit(self, kind, aid, flat, line, site):
        st = self.local
        if st.on:
            if self.max_events is not None and len(self.events) >= self.max_events:
                self.too_large(line)
            self.events.append((st.block, st.thread, st.seq, int(kind), aid, flat, line, site))
            st.seq += 1

    def reg(self, obj, name):
        if isinstance(obj, tuple) and name in self.tuple_params:  # arrays inside a tuple argument: x[0], ...
            for k, e in enumerate(obj):
                if hasattr(e, "shape") and hasattr(e, "dtype") and not isinstance(e, np.generic):
                    aid = self._aid(("param", f"{name}[{k}]"), f"{name}[{k}]", e.shape, e.dtype, "global")
                    self.by_id[id(e)] = aid
                    self.shapes[aid] = tuple(e.shape)
            return
        if name in self.array_params and hasattr(obj, "shape"):
            aid = self._aid(("param", name), name, obj.shape, obj.dtype, "global")
            self.by_id[id(obj)] = aid
            self.shapes[aid] = tuple(obj.shape)
            nd = sim_ndarray(obj)
            if nd is not None and nd.flags.c_contiguous:
                self.base_nd[aid] = nd
        elif isinstance(obj, np.ndarray) and name not in self.array_params:
            aid = self._aid(("const", name), name, obj.shape, obj.dtype, "global")
            self.by_id[id(obj)] = aid
            self.shapes[aid] = tuple(obj.shape)

    def reg_shared(self, obj, name, line):
        aid = self._aid(("shared", line), name, obj.shape, obj.dtype, "shared", line)
        self.by_id[id(obj)] = aid
        self.shapes[aid] = tuple(obj.shape)
        nd = sim_ndarray(obj)
        if nd is not None and nd.flags.c_contiguous:
            with self.lock:
                self.base_nd[aid] = nd  # a block's own array: views of it map into it

    def reshape(self, arr, *shape):
        return self.viewed_as(arr, arr.reshape(*shape))

    def dtype_view(self, arr, *dtype):
        return self.viewed_as(arr, arr.view(*dtype))

    def part(self, value, which):
        out = getattr(value, which)
        return self.viewed_as(value, out) if len(getattr(out, "shape", ())) else out

    def view(self, arr, idx, line):
        return self.viewed_as(arr, arr[idx])

    def viewed_as(self, arr, out):
        aid = self.by_id.get(id(arr))
        base_nd = self.base_nd.get(aid)
        view_nd = sim_ndarray(out)
        if aid is not None and base_nd is not None and view_nd is not None:
            with self.lock:
                self.keep.append(out)  # alive while recording: its id names it
                self.by_id[id(out)] = aid
                self.views[id(out)] = view_nd
        return out

    def setslice(self, arr, idx, value, line, site):
        target = self.view(arr, idx, line)
        shape = np.shape(sim_ndarray(target)) if sim_ndarray(target) is not None else np.shape(target)
        src = value if hasattr(value, "shape") and np.shape(value) == shape and shape else None
        for ix in np.ndindex(*shape):
            v = src[self.access(EventKind.GLOBAL_LOAD, EventKind.SHARED_LOAD)(src, ix, line, site)] if src is not None \
                else value
            target[self.access(EventKind.GLOBAL_STORE, EventKind.SHARED_STORE)(target, ix, line, site)] = v

    def barv(self, value, line, site):
        self.emit(EventKind.BARRIER, -1, -1, line, site)
        return value

    def flat_of(self, aid, idx, obj=None):
        vnd = self.views.get(id(obj)) if obj is not None else None
        if vnd is not None:  # an element of a view: its place in the viewed array
            if not isinstance(idx, tuple):
                idx = (idx,)
            base_nd = self.base_nd[aid]
            off = vnd.__array_interface__["data"][0] - base_nd.__array_interface__["data"][0]
            for i, s, st in zip(idx, vnd.shape, vnd.strides):
                i = int(i)
                off += (i + s if i < 0 else i) * st
            return off // base_nd.itemsize

        shape = self.shapes[aid]
        if not isinstance(idx, tuple):
            idx = (idx,)
        flat = 0
        for i, s in zip(idx, shape):
            i = int(i)
            if i < 0:
                i += s
            flat = flat * s + i
        return flat

    def access(self, kind_global, kind_shared):
        def f(arr, idx, line, site):
            aid = self.by_id.get(id(arr))
            if aid is not None:
                kind = kind_shared if self.arrays[aid].space == "shared" else kind_global
                self.emit(kind, aid, self.flat_of(aid, idx, arr), line, site)
            return idx

        return f

    def at(self, arr, idx, line, site):
        aid = self.by_id.get(id(arr))
        if aid is not None:
            self.emit(EventKind.ATOMIC, aid, self.flat_of(aid, idx, arr), line, site)

    def callv(self, f, line, site, *args):
        if type(getattr(f, "__self__", None)).__name__ == "FakeCUDAAtomic" and args:
            arr = args[0]
            idx = (0,) * arr.ndim if f.__name__ == "compare_and_swap" else args[1]
            self.at(arr, idx, line, site)
        return f(*args)

    def bar(self, line, site):
        self.emit(EventKind.BARRIER, -1, -1, line, site)

    def warp(self, value, line, site):
        self.emit(EventKind.WARP_OP, -1, -1, line, site)
        return value

    def warp_stmt(self, line, site):
        self.emit(EventKind.WARP_OP, -1, -1, line, site)

    def end(self, line, site):
        self.emit(EventKind.END, -1, -1, line, site)

    def trace_events(self) -> dict[str, np.ndarray]:
        ev = np.array(self.events, dtype=np.int64).reshape(-1, 8)
        return {
            "block": ev[:, 0], "thread": ev[:, 1], "seq": ev[:, 2], "kind": ev[:, 3],
            "array": ev[:, 4], "index": ev[:, 5], "line": ev[:, 6], "site": ev[:, 7],
        }


def as_sim_records(arg):
    """A structured host array as a ``np.recarray`` view of the same memory (what the kernel writes lands in the
    caller's array); anything else as it is.

    numba's simulator copies a record only out of a recarray: on a plain structured array ``ary[i] = ary[j]``
    (numba-cuda's test_record_dtype.set_record) and ``res[0] = ary[0]`` raise inside the simulator (the element
    it hands back is its own wrapper, which numpy cannot store), while a GPU and gpuviz's CPU executor copy the
    record. numba-cuda's own tests pass recarrays for that reason."""
    if type(arg) is np.ndarray and arg.dtype.names is not None and arg.ndim:
        return arg.view(np.recarray)
    return arg
