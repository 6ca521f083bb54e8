"""Per-thread instrumentation: the kernel's own code, with a recording call at each memory access.

Used with numba's CUDA simulator (``backend="sim"``), the reference the CPU executor is tested
against. The rewrite keeps the user's statements and their evaluation order and only wraps:

* ``A[idx]`` (load)       -> ``A[__gv_ld(A, idx, LINE, SITE)]``  (records, returns idx unchanged)
* ``A[idx] = v``          -> ``A[__gv_st(A, idx, LINE, SITE)] = v``  (v is evaluated first, as in Python)
* ``A[idx] op= v``        -> ``__gv_i = idx; A[__gv_st(A, __gv_i, ...)] = A[__gv_ld(A, __gv_i, ...)] op v``
* ``cuda.atomic.op(A, idx, v)`` -> operands hoisted to temporaries, the event recorded, then the atomic
* ``cuda.syncthreads()``  -> ``__gv_bar(LINE, SITE)`` before it; warp primitives record as they are called
* a prologue that records START, ``__gv_end(LINE, SITE)`` before each ``return`` and at the end.

``SITE`` is the id of the construct in the capture plan's site table (:mod:`gpuviz.capture.plan`): the
events carry it, as the CPU executor's do.

Which subscripted objects are arrays worth recording is decided at run time by identity: kernel
array arguments, ``cuda.shared.array`` results and module-level arrays register themselves; local
arrays and tuples do not.
"""

from __future__ import annotations

import ast
import copy
import gc
import os
import sys
import threading

import numpy as np

from ..model.trace import ArrayInfo, EventKind, Launch, Trace
from . import faults
from .dtypes import to_dtype
from .errors import BackendUnavailable, CaptureError, UnsupportedConstruct
from .limits import check_launch
from .plan import is_grid_sync
from .simt_compile import _WARP
from .source import FunctionSource, dotted_name, source_span

PREFIX = "__gv_"

#: what the GPU recorder's rewrite says of the slicing it does not follow: a slice assigned to (``a[i:j] = v``,
#: ``a[i:j] op= v``) or a view of what is no recorded array (a local array); it follows views read and written
#: element by element (GpuRewriter.view_of), the simulator's recorder follows them all
SLICE_REFUSAL = ("this use of array slicing is not supported by the GPU backend (it follows views such as "
                 "v = a[i:j] or a[i, :] read and written element by element, of kernel arguments, shared and "
                 "module-level arrays): assign element by element, or capture this kernel with --backend cpu or sim")


class PerThreadRewriter(ast.NodeTransformer):
    """Rewrites one function's AST in place (on a copy) to call the recorder functions."""

    #: rewrites the simulator's Python recorder resolves at run time and the GPU lowering does not know:
    #: views (slices), functions called through a parameter
    runtime_rewrites = True

    def __init__(self, fs: FunctionSource, *, is_kernel: bool, plan=None):
        self.fs = fs
        self.is_kernel = is_kernel
        if plan is None:  # a function read on its own (tests): its plan
            from .plan import build_plan

            plan = build_plan(fs)
        self.plan = plan
        self.fplan = plan.function(fs)  # what every name refers to: the rewrite looks no name up itself
        self.tmp = 0

    def fresh(self) -> str:
        self.tmp += 1
        return f"{PREFIX}t{self.tmp}"

    def error(self, node, what):
        line = getattr(node, "lineno", self.fs.first_line)
        return UnsupportedConstruct(f"{self.fs.file}:{line}: {what}\n    {self.fs.line_text(line)}", file=self.fs.file, line=line)

    def dotted(self, node) -> list[str] | None:
        """['cuda', 'threadIdx', 'x'] for ``cuda.threadIdx.x``: read off the plan's resolution of the names."""
        return self.fplan.dotted(node)

    def callee(self, node) -> list[str] | None:
        """What a called name stands for, as the plan lists its sites: ``cuda.syncthreads`` and also
        ``syncthreads`` imported from numba.cuda read ``['cuda', 'syncthreads']`` (see ``FunctionPlan.chain``)."""
        return self.fplan.chain(node)

    def is_local(self, node: ast.Name) -> bool:
        """Whether the plan resolved ``node`` to a parameter or a local of the function."""
        ref = self.fplan.ref(node)
        return ref is not None and ref.is_local

    @staticmethod
    def call(name, *args, line=None, site=None):
        """``__gv_<name>(*args, line, site)``: ``site`` is the plan's id of the construct that records."""
        a = list(args) + ([ast.Constant(line)] if line is not None else [])
        if site is not None:
            a.append(ast.Constant(int(site)))
        return ast.Call(func=ast.Name(PREFIX + name, ast.Load()), args=a, keywords=[])

    # ---- recorder calls: what a back end records (GpuRewriter overrides these four) ------------------------
    def rec(self, name, *args, line=None, site=None):
        """The recording for ``__gv_<name>(*args, line, site)`` in an expression: here that call, which the
        simulator's Python recorder (:class:`SimRecorder`) resolves at run time."""
        return self.call(name, *args, line=line, site=site)

    def rec_stmt(self, name, *args, line=None, site=None) -> list:
        """The statements that record ``name`` where a statement stands (nothing, where nothing is recorded)."""
        out = self.rec(name, *args, line=line, site=site)
        if out is None:
            return []
        return out if isinstance(out, list) else [ast.Expr(out)]

    def bind_temp(self, name: str, value) -> ast.Assign:
        """``name = value`` for a temporary the rewrite introduces (an operand evaluated once)."""
        return ast.Assign([ast.Name(name, ast.Store())], value)

    def device_call(self, node: ast.Call) -> ast.Call:
        """A call of a device function, its arguments rewritten."""
        return node

    def site(self, kind: str, node) -> int:
        """The plan's site id of ``kind`` at ``node`` (None: the kernel's start or implicit end); -1 if unplanned."""
        site = self.fplan.site(kind, node)
        if site is None:
            self.plan.unplanned.append((self.fs.name, kind, getattr(node, "lineno", -1), getattr(node, "col_offset", -1)))
            return -1
        return site

    @staticmethod
    def index_expr(slice_node):
        if isinstance(slice_node, ast.Slice) or (
            isinstance(slice_node, ast.Tuple) and any(isinstance(e, ast.Slice) for e in slice_node.elts)
        ):
            return None
        return slice_node

    # ---- function ------------------------------------------------------------------------------
    def rewrite(self) -> ast.FunctionDef:
        tree = copy.deepcopy(self.fs.tree)
        tree.body = self.stmts(tree.body)
        if self.is_kernel:
            prologue = self.rec_stmt("enter", *[
                ast.Attribute(ast.Attribute(ast.Name(PREFIX + "cuda", ast.Load()), comp, ast.Load()), ax, ast.Load())
                for comp in ("blockIdx", "threadIdx") for ax in "xyz"
            ], line=self.fs.first_line, site=self.site("start", None))
            for p in self.fs.all_params:
                prologue.extend(self.rec_stmt("reg", ast.Name(p, ast.Load()), ast.Constant(p)))
            for name in self.fplan.host_arrays:  # module-level host arrays the plan found the kernel reading
                prologue.extend(self.rec_stmt("reg", ast.Name(name, ast.Load()), ast.Constant(name)))
            tree.body = prologue + tree.body
            if not tree.body or not isinstance(tree.body[-1], ast.Return):
                tree.body.extend(self.rec_stmt("end", line=self.fs.last_line, site=self.site("end", None)))
        ast.fix_missing_locations(tree)
        return tree

    def stmts(self, body):
        out = []
        for s in body:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s) -> list:
        line = getattr(s, "lineno", -1)
        if isinstance(s, ast.Return):
            if self.is_kernel:
                return [ast.copy_location(n, s) for n in self.rec_stmt("end", line=line, site=self.site("end", s))] + [s]
            if s.value is not None:
                s.value = self.visit(s.value)
            return [s]
        if isinstance(s, ast.FunctionDef):  # a closure: its body recorded as a device function's (its returns
            was_kernel, self.is_kernel = self.is_kernel, False  # return from it, not from the kernel)
            try:
                s.body = self.stmts(s.body)
            finally:
                self.is_kernel = was_kernel
            return [s]
        if isinstance(s, (ast.If, ast.While)):
            s.test = self.visit(s.test)
            s.body = self.stmts(s.body)
            s.orelse = self.stmts(s.orelse)
            return [s]
        if isinstance(s, ast.For):
            s.iter = self.visit(s.iter)
            s.body = self.stmts(s.body)
            s.orelse = self.stmts(s.orelse)
            return [s]
        if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Subscript):
            idx = self.index_expr(s.target.slice)
            if idx is None:
                raise self.error(s, SLICE_REFUSAL if not self.runtime_rewrites else
                                 "a[i:j] op= v is not supported: write the loop over its elements")
            base = s.target.value
            tmp_i, tmp_b = self.fresh(), self.fresh()
            pre = [self.bind_temp(tmp_b, self.visit(base)), self.bind_temp(tmp_i, self.visit(idx))]
            load = ast.Subscript(ast.Name(tmp_b, ast.Load()),
                                 self.rec("ld", ast.Name(tmp_b, ast.Load()), ast.Name(tmp_i, ast.Load()), line=line,
                                           site=self.site("load", s.target)), ast.Load())
            value = ast.BinOp(load, s.op, self.visit(s.value))
            target = ast.Subscript(ast.Name(tmp_b, ast.Load()),
                                   self.rec("st", ast.Name(tmp_b, ast.Load()), ast.Name(tmp_i, ast.Load()), line=line,
                                             site=self.site("store", s.target)), ast.Store())
            out = pre + [ast.Assign([target], value)]
            return [ast.copy_location(n, s) for n in out]
        if (isinstance(s, ast.Assign) and self.runtime_rewrites and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Subscript) and self.index_expr(s.targets[0].slice) is None):
            # a[i:j] = v: the recorder stores element by element (reading v's elements when v is an array)
            t = s.targets[0]
            return [ast.copy_location(n, s) for n in self.rec_stmt(
                "setslice", self.visit(t.value), self.visit(_slices_as_calls(t.slice)), self.visit(s.value), line=line,
                site=self.site("store", t))]
        if isinstance(s, ast.Assign):
            atomic = self.atomic_call(s.value)
            if atomic is not None:
                pre, call = atomic
                s.value = call
                s.targets = [self.target(t) for t in s.targets]
                return [ast.copy_location(n, s) for n in pre] + [s]
            s.value = self.visit(s.value)
            s.targets = [self.target(t) for t in s.targets]
            if self.is_shared_decl(s.value) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
                reg = self.rec_stmt("reg_shared", ast.Name(s.targets[0].id, ast.Load()), ast.Constant(s.targets[0].id),
                                    line=line)
                return [s] + [ast.copy_location(n, s) for n in reg]
            return [s]
        if isinstance(s, ast.AnnAssign):
            if s.value is not None:
                s.value = self.visit(s.value)
            s.target = self.target(s.target)
            return [s]
        if isinstance(s, ast.AugAssign):
            s.value = self.visit(s.value)
            return [s]
        if isinstance(s, ast.Expr):
            atomic = self.atomic_call(s.value)
            if atomic is not None:
                pre, call = atomic
                return [ast.copy_location(n, s) for n in pre] + [ast.copy_location(ast.Expr(call), s)]
            parts = self.callee(s.value.func) if isinstance(s.value, ast.Call) else None
            if is_grid_sync(self.fplan, s.value):  # g.sync(): recorded as the barrier it is, then called
                return [ast.copy_location(n, s) for n in self.rec_stmt(
                    "bar", line=line, site=self.site("barrier", s.value))] + [s]
            if parts and parts[0] == "cuda" and parts[1:] in (["syncthreads"], ["syncwarp"]) and not s.value.args:
                kind = "bar" if parts[1] == "syncthreads" else "warp_stmt"
                site = self.site("barrier" if kind == "bar" else "warp", s.value)
                return [ast.copy_location(n, s) for n in self.rec_stmt(kind, line=line, site=site)] + [s]
            s.value = self.visit(s.value)
            return [s]
        return [self.visit(s)]

    def target(self, t):
        field_store = (isinstance(t, ast.Subscript) and isinstance(t.value, ast.Subscript)
                       and isinstance(t.slice, ast.Constant) and isinstance(t.slice.value, str))
        if (isinstance(t, ast.Attribute) or field_store) and isinstance(t.value, ast.Subscript):
            # ary[i].x = v and ary[i]["x"] = v write the record ary[i]: a store of that element (on the GPU too:
            # ary[<recorder call returning i>].x = v is the same store for numba)
            sub = t.value
            idx = self.index_expr(sub.slice)
            if idx is not None:
                base = self.visit(sub.value)
                sub.value = base
                sub.slice = self.rec("st", copy.deepcopy(base), self.visit(idx), line=t.lineno,
                                      site=self.site("store", sub))
            return t
        if field_store:  # the GPU lowering keeps a record's field store as numba compiles it, as for ary[i].x = v
            return t
        if isinstance(t, ast.Subscript):
            idx = self.index_expr(t.slice)
            if idx is None:
                raise self.error(t, SLICE_REFUSAL)
            base = self.visit(t.value)
            t.value = base
            t.slice = self.rec("st", copy.deepcopy(base), self.visit(idx), line=t.lineno, site=self.site("store", t))
            return t
        if isinstance(t, (ast.Tuple, ast.List)):
            t.elts = [self.target(e) for e in t.elts]
            return t
        return t

    def is_shared_decl(self, node) -> bool:
        if isinstance(node, ast.Call):
            parts = self.dotted(node.func)
            return bool(parts) and parts[0] == "cuda" and parts[1:] == ["shared", "array"]
        return False

    def atomic_call(self, node):
        """(statements before, the call) for cuda.atomic.op(A, idx, v...) in statement position."""
        if not isinstance(node, ast.Call):
            return None
        parts = self.callee(node.func)
        if not parts or parts[0] != "cuda" or len(parts) != 3 or parts[1] != "atomic":
            return None
        if len(node.args) < 3 or node.keywords:
            raise self.error(node, "cuda.atomic.* takes (array, index, value...) as positional arguments")
        line = node.lineno
        pre, names = [], []
        for a in node.args:
            t = self.fresh()
            pre.append(self.bind_temp(t, self.visit(a)))
            names.append(t)
        # compare_and_swap(ary, old, val) works on the first element of a 1-d array: its second argument is a
        # value, not an index
        index = ast.Constant(0) if parts[2] == "compare_and_swap" else ast.Name(names[1], ast.Load())
        pre.extend(self.rec_stmt("at", ast.Name(names[0], ast.Load()), index, line=line,
                                 site=self.site("atomic", node)))
        call = ast.Call(func=node.func, args=[ast.Name(n, ast.Load()) for n in names], keywords=[])
        return pre, call

    # ---- expressions ---------------------------------------------------------------------------
    def visit_Subscript(self, node):
        if isinstance(node.ctx, ast.Load):
            idx = self.index_expr(node.slice)
            if idx is None and self.runtime_rewrites:  # a view: the recorder maps its elements to the array's
                call = self.rec("view", self.visit(node.value), self.visit(_slices_as_calls(node.slice)),
                                 line=node.lineno)
                return ast.copy_location(call, node)
            if idx is None:
                raise self.error(node, SLICE_REFUSAL)
            base = self.visit(node.value)
            if self.runtime_rewrites and not isinstance(base, ast.Name):
                # a[i]["x"], a[i][j]: the base is itself an access; evaluated once (named by ':=', read again by
                # the recorder), so that its own load is recorded once
                t = self.fresh()
                node.value = ast.NamedExpr(ast.Name(t, ast.Store()), base)
                node.slice = self.rec("ld", ast.Name(t, ast.Load()), self.visit(idx), line=node.lineno,
                                       site=self.site("load", node))
                return node
            node.value = base
            node.slice = self.rec("ld", copy.deepcopy(base), self.visit(idx), line=node.lineno,
                                   site=self.site("load", node))
        return node

    def visit_Call(self, node):
        if is_grid_sync(self.fplan, node):  # g.sync() in an expression: recorded, then called
            rec = self.rec("bar", line=node.lineno, site=self.site("barrier", node))
            return ast.Subscript(ast.Tuple([rec, node], ast.Load()), ast.Constant(1), ast.Load())
        text = dotted_name(node.func)
        if text is not None and text in self.fplan.device_functions:
            # a device function of another module (mymod.helper(x)): its instrumented copy, under a name of its own
            self.generic_visit(node)
            node.func = ast.copy_location(ast.Name(device_alias(text), ast.Load()), node.func)
            return self.device_call(node)
        parts = self.callee(node.func)
        if parts and parts[0] == "cuda":
            name = ".".join(parts[1:])
            if name == "atomic" or (len(parts) == 3 and parts[1] == "atomic"):
                raise self.error(node, "gpuviz records cuda.atomic.* used as a statement or assigned to a name")
            node.args = [self.visit(a) for a in node.args]
            if name in _WARP or name == "syncwarp":
                if node.args:
                    node.args[-1] = self.rec("warp", node.args[-1], line=node.lineno, site=self.site("warp", node))
                return node
            if name in ("syncthreads_count", "syncthreads_and", "syncthreads_or") and node.args:
                # the predicate is read first, then the barrier is reached (the GPU recorder too: numba-cuda's
                # test_sync, cuda.syncthreads_count(ary_in[i]), records the load before the barrier)
                node.args[0] = self.rec("barv", node.args[0], line=node.lineno, site=self.site("barrier", node))
                return node
            if name in ("syncthreads", "syncthreads_count", "syncthreads_and", "syncthreads_or"):
                # record the barrier, then call it: (record, call)[1]
                rec = self.rec("bar", line=node.lineno, site=self.site("barrier", node))
                return ast.Subscript(ast.Tuple([rec, node], ast.Load()), ast.Constant(1), ast.Load())
            return node
        self.generic_visit(node)
        if self.runtime_rewrites and isinstance(node.func, ast.Attribute) and node.func.attr in ("reshape", "view") \
                and not node.keywords:
            # a reshape, or a view as another dtype, is a view too: the recorder maps its elements to the array's
            recorder = {"reshape": "reshape", "view": "dtype_view"}[node.func.attr]
            call = ast.Call(func=ast.Name(PREFIX + recorder, ast.Load()), args=[node.func.value, *node.args],
                            keywords=[])
            return ast.copy_location(call, node)
        if isinstance(node.func, ast.Name) and self.is_local(node.func) and self.runtime_rewrites \
                and self.fplan.ref(node.func).kind != "inner_function":
            # a function passed as a parameter (cuda.atomic.add, a cast): recorded as what it turns out to be
            if not node.keywords:
                call = ast.Call(func=ast.Name(PREFIX + "callv", ast.Load()),
                                args=[node.func, ast.Constant(node.lineno), ast.Constant(self.site("atomic", node)),
                                      *node.args], keywords=[])
                return ast.copy_location(call, node)
        return self.device_call(node)


    def visit_Attribute(self, node):
        self.generic_visit(node)
        if self.runtime_rewrites and isinstance(node.ctx, ast.Load) and node.attr in ("real", "imag"):
            # the .real / .imag of a complex array views its elements: recorded as the array's
            call = ast.Call(func=ast.Name(PREFIX + "part", ast.Load()), args=[node.value, ast.Constant(node.attr)],
                            keywords=[])
            return ast.copy_location(call, node)
        return node


def device_alias(call_name: str) -> str:
    """The name the instrumented copy of a device function goes by in the rewritten code: its own name, or for
    ``mymod.helper`` (another module's) a name of its own."""
    return call_name if "." not in call_name else PREFIX + "dev_" + call_name.replace(".", "__")


def _slices_as_calls(node):
    """The index with each ``a:b:c`` as ``slice(a, b, c)`` (a slice is no expression outside a subscript)."""
    def one(e):
        if isinstance(e, ast.Slice):
            parts = [e.lower or ast.Constant(None), e.upper or ast.Constant(None), e.step or ast.Constant(None)]
            return ast.Call(func=ast.Name("slice", ast.Load()), args=parts, keywords=[])
        return e

    if isinstance(node, ast.Tuple):
        return ast.Tuple([one(e) for e in node.elts], ast.Load())
    return one(node)


def sim_ndarray(obj):
    """The numpy array behind a simulator array object (FakeWithinKernelCUDAArray, FakeCUDAArray) or obj."""
    for _ in range(4):
        if isinstance(obj, np.ndarray):
            return obj
        inner = obj.__dict__.get("_item") if hasattr(obj, "__dict__") else None
        if inner is None:
            inner = getattr(obj, "_ary", None)
        if inner is None:
            return None
        obj = inner
    return obj if isinstance(obj, np.ndarray) else None


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
        from .errors import TraceTooLarge

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
        rec = self

        def enter(bx, by, bz, tx, ty, tz, line, site):
            gx, gy, _ = rec.grid
            bdx, bdy, _ = rec.block
            st = rec.local
            st.block = bx + by * gx + bz * gx * gy
            st.thread = tx + ty * bdx + tz * bdx * bdy
            st.seq = 0
            st.on = rec.record_blocks is None or st.block in rec.record_blocks
            emit(EventKind.START, -1, -1, line, site)

        def emit(kind, aid, flat, line, site):
            st = rec.local
            if st.on:
                if rec.max_events is not None and len(rec.events) >= rec.max_events:
                    rec.too_large(line)
                rec.events.append((st.block, st.thread, st.seq, int(kind), aid, flat, line, site))
                st.seq += 1

        def reg(obj, name):
            if isinstance(obj, tuple) and name in rec.tuple_params:  # arrays inside a tuple argument: x[0], ...
                for k, e in enumerate(obj):
                    if hasattr(e, "shape") and hasattr(e, "dtype") and not isinstance(e, np.generic):
                        aid = rec._aid(("param", f"{name}[{k}]"), f"{name}[{k}]", e.shape, e.dtype, "global")
                        rec.by_id[id(e)] = aid
                        rec.shapes[aid] = tuple(e.shape)
                return
            if name in rec.array_params and hasattr(obj, "shape"):
                aid = rec._aid(("param", name), name, obj.shape, obj.dtype, "global")
                rec.by_id[id(obj)] = aid
                rec.shapes[aid] = tuple(obj.shape)
                nd = sim_ndarray(obj)
                if nd is not None and nd.flags.c_contiguous:
                    rec.base_nd[aid] = nd
            elif isinstance(obj, np.ndarray) and name not in rec.array_params:
                aid = rec._aid(("const", name), name, obj.shape, obj.dtype, "global")
                rec.by_id[id(obj)] = aid
                rec.shapes[aid] = tuple(obj.shape)

        def reg_shared(obj, name, line):
            aid = rec._aid(("shared", line), name, obj.shape, obj.dtype, "shared", line)
            rec.by_id[id(obj)] = aid
            rec.shapes[aid] = tuple(obj.shape)
            nd = sim_ndarray(obj)
            if nd is not None and nd.flags.c_contiguous:
                with rec.lock:
                    rec.base_nd[aid] = nd  # a block's own array: views of it map into it

        def reshape(arr, *shape):
            return viewed_as(arr, arr.reshape(*shape))

        def dtype_view(arr, *dtype):
            return viewed_as(arr, arr.view(*dtype))

        def part(value, which):
            out = getattr(value, which)
            return viewed_as(value, out) if len(getattr(out, "shape", ())) else out

        def view(arr, idx, line):
            return viewed_as(arr, arr[idx])

        def viewed_as(arr, out):
            aid = rec.by_id.get(id(arr))
            base_nd = rec.base_nd.get(aid)
            view_nd = sim_ndarray(out)
            if aid is not None and base_nd is not None and view_nd is not None:
                with rec.lock:
                    rec.keep.append(out)  # alive while recording: its id names it
                    rec.by_id[id(out)] = aid
                    rec.views[id(out)] = view_nd
            return out

        def setslice(arr, idx, value, line, site):
            target = view(arr, idx, line)
            shape = np.shape(sim_ndarray(target)) if sim_ndarray(target) is not None else np.shape(target)
            src = value if hasattr(value, "shape") and np.shape(value) == shape and shape else None
            for ix in np.ndindex(*shape):
                v = src[access(EventKind.GLOBAL_LOAD, EventKind.SHARED_LOAD)(src, ix, line, site)] if src is not None \
                    else value
                target[access(EventKind.GLOBAL_STORE, EventKind.SHARED_STORE)(target, ix, line, site)] = v

        def barv(value, line, site):
            emit(EventKind.BARRIER, -1, -1, line, site)
            return value

        def flat_of(aid, idx, obj=None):
            vnd = rec.views.get(id(obj)) if obj is not None else None
            if vnd is not None:  # an element of a view: its place in the viewed array
                if not isinstance(idx, tuple):
                    idx = (idx,)
                base_nd = rec.base_nd[aid]
                off = vnd.__array_interface__["data"][0] - base_nd.__array_interface__["data"][0]
                for i, s, st in zip(idx, vnd.shape, vnd.strides):
                    i = int(i)
                    off += (i + s if i < 0 else i) * st
                return off // base_nd.itemsize

            shape = rec.shapes[aid]
            if not isinstance(idx, tuple):
                idx = (idx,)
            flat = 0
            for i, s in zip(idx, shape):
                i = int(i)
                if i < 0:
                    i += s
                flat = flat * s + i
            return flat

        def access(kind_global, kind_shared):
            def f(arr, idx, line, site):
                aid = rec.by_id.get(id(arr))
                if aid is not None:
                    kind = kind_shared if rec.arrays[aid].space == "shared" else kind_global
                    emit(kind, aid, flat_of(aid, idx, arr), line, site)
                return idx

            return f

        def at(arr, idx, line, site):
            aid = rec.by_id.get(id(arr))
            if aid is not None:
                emit(EventKind.ATOMIC, aid, flat_of(aid, idx, arr), line, site)

        def callv(f, line, site, *args):
            if type(getattr(f, "__self__", None)).__name__ == "FakeCUDAAtomic" and args:
                arr = args[0]
                idx = (0,) * arr.ndim if f.__name__ == "compare_and_swap" else args[1]
                at(arr, idx, line, site)
            return f(*args)

        def bar(line, site):
            emit(EventKind.BARRIER, -1, -1, line, site)

        def warp(value, line, site):
            emit(EventKind.WARP_OP, -1, -1, line, site)
            return value

        def warp_stmt(line, site):
            emit(EventKind.WARP_OP, -1, -1, line, site)

        def end(line, site):
            emit(EventKind.END, -1, -1, line, site)

        return {
            PREFIX + "enter": enter,
            PREFIX + "reg": reg,
            PREFIX + "reg_shared": reg_shared,
            PREFIX + "ld": access(EventKind.GLOBAL_LOAD, EventKind.SHARED_LOAD),
            PREFIX + "st": access(EventKind.GLOBAL_STORE, EventKind.SHARED_STORE),
            PREFIX + "at": at,
            PREFIX + "callv": callv,
            PREFIX + "view": view,
            PREFIX + "reshape": reshape,
            PREFIX + "dtype_view": dtype_view,
            PREFIX + "part": part,
            PREFIX + "setslice": setslice,
            PREFIX + "barv": barv,
            PREFIX + "bar": bar,
            PREFIX + "warp": warp,
            PREFIX + "warp_stmt": warp_stmt,
            PREFIX + "end": end,
        }

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


def simulator_cuda():
    """numba.cuda in simulator mode, importing it so if numba.cuda is not imported yet."""
    mod = sys.modules.get("numba.cuda")
    if mod is None:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        from numba import config

        config.reload_config()
        from numba import cuda as mod
    if not getattr(mod, "simulator_enabled", False) and "simulator" not in type(getattr(mod, "jit", None)).__module__:
        from numba import config

        if not config.ENABLE_CUDASIM:
            raise BackendUnavailable(
                "backend='sim' needs numba's CUDA simulator, which numba chooses when numba.cuda is first imported: "
                "set NUMBA_ENABLE_CUDASIM=1 before importing numba (the gpuviz CLI and app do this in their worker)"
            )
    return mod


def build_sim_kernel(kernel, recorder: SimRecorder):
    """The per-thread instrumented copy of ``kernel`` jitted with the simulator's cuda.jit."""
    from .plan import plan_for

    cuda = simulator_cuda()
    plan = plan_for(kernel)
    plan.raise_if_unsupported()
    recorder_fns = recorder.functions()
    built: dict[int, object] = {}

    def build(fp):
        fs, is_kernel = fp.fs, fp.is_kernel
        key = id(fs.fn)
        if key in built:
            return built[key]
        ns = dict(fs.names())
        ns.update(recorder_fns)
        ns[PREFIX + "cuda"] = cuda  # the simulator swaps it for its per-thread module during the launch
        tree = PerThreadRewriter(fs, is_kernel=is_kernel, plan=plan).rewrite()
        module = ast.Module(body=[tree], type_ignores=[])
        exec(compile(module, fs.file, "exec"), ns)  # noqa: S102 - the user's kernel, instrumented
        fn = ns[fs.name]
        from .plan import kernel_debug

        jitted = cuda.jit(device=not is_kernel, debug=kernel_debug(kernel))(fn)
        if is_kernel:  # the dispatcher's extensions (input-only arguments, ...) apply to the copy's launches too
            jitted.extensions = list(getattr(kernel, "extensions", None) or ())
        built[key] = jitted
        # the device functions it calls, after it is known: a recursive one (fib calling fib) finds itself
        # (the names are looked up in ns when the function runs, not when it is defined)
        for call_name, index in fp.device_functions.items():  # the plan's table of the device functions it calls
            ns[device_alias(call_name)] = build(plan.functions[index])
        return jitted

    return plan, build(plan.kernel)


def capture_sim(kernel, grid, block, args, *, record_blocks=None, max_events=50_000_000, dynamic_shared_bytes=0,
                watchdog: float | None = None, **_ignored) -> Trace:
    """The launch on numba's simulator, instrumented. ``watchdog``: seconds it may go without progress before
    it is stopped with KernelStalled (None or 0: never; see :mod:`gpuviz.capture.sim_watch`)."""
    import time

    from .sim_watch import SimWatch

    from . import versions

    from .plan import plan_for

    root = plan_for(kernel).root  # the kernel as its plan read it (once, for every backend)
    # numpy scalars have a shape and a dtype too, but they are numbers, not arrays
    from .args import _hint

    array_params = [p for p, a in zip(root.params, (_hint(a)[1] for a in args))
                    if hasattr(a, "shape") and hasattr(a, "dtype") and not isinstance(a, np.generic)]
    check_launch(grid, block, where=f"{root.file}:{root.first_line}", kernel=root.name)
    recorder = SimRecorder(grid, block, array_params, record_blocks, max_events=max_events, file=root.file)
    recorder.tuple_params = [p for p, a in zip(root.params, args) if isinstance(a, tuple)]
    if root.vararg:  # def k(a, *rest): the further arguments, a tuple, their arrays named rest[0], ...
        recorder.tuple_params.append(root.vararg)
    plan, jitted = build_sim_kernel(kernel, recorder)
    root = plan.root
    args = [as_sim_records(a) for a in args]
    t0 = time.perf_counter()
    # numba's simulator runs every CUDA thread of a block as a Python thread, parked at barriers: a garbage
    # collection that starts in one of them runs the finalizers of whatever was garbage then (the Qt objects of
    # a closed window, in the app or the suite), in that thread, holding the GIL, and a finalizer that waits for
    # another thread leaves the whole block parked for good (seen once in CI: 255 threads at a barrier, one
    # inside a collection). So collect here, in the caller's thread, and start none during the launch.
    gc.collect()
    collecting = gc.isenabled()
    gc.disable()
    watch = SimWatch(kernel, grid, block, watchdog, name=root.name)
    try:
        with watch:
            jitted[grid, block, 0, int(dynamic_shared_bytes)](*args)
        watch.raise_if_stalled()
    except CaptureError:
        if recorder.stopped_at is not None:  # the simulator re-raised it as "tid=[..] ctaid=[..]: ...", line lost
            raise recorder.too_large_error() from None
        raise
    except Exception as exc:  # the simulator raises plain Python errors (IndexError, ...) from the kernel
        watch.raise_if_stalled()  # the watchdog's release of the block's threads is why
        raise CaptureError(f"{root.file}: {root.name} failed under numba's simulator: {type(exc).__name__}: {exc}",
                           file=root.file) from exc
    finally:
        if collecting:
            gc.enable()
    elapsed = time.perf_counter() - t0
    faults.check("run", "sim")
    faults.check("events", "sim")
    events = recorder.trace_events()
    if len(events["kind"]) > max_events:
        from .errors import TraceTooLarge

        raise TraceTooLarge(f"the trace has {len(events['kind']):,} events, over max_events={max_events:,}")
    text, first, _ = source_span(root)
    launch = Launch(
        kernel_name=root.name, grid=grid, block=block, arrays=recorder.arrays, source=text, source_file=root.file,
        first_line=first, backend="sim", device="numba CUDA simulator", versions=versions(),
        timings={"instrumented_s": elapsed},
        meta={"kernel_lines": [root.first_line, root.last_line]}, sites=list(plan.sites),
    )
    # a shared element a thread reads that no thread of its block writes holds whatever the simulator's fresh
    # shared memory held (on a GPU: garbage): warned as the GPU backend warns it
    from .gpu import uninitialised_shared_reads

    launch.warnings.extend(uninitialised_shared_reads(events, recorder.arrays, launch.grid, launch.block, root.file))
    faults.check("assemble", "sim")
    return Trace(launch, events)
