"""The per-thread rewrite both per-thread back ends share: the kernel's own code, with a recording call at each
memory access, barrier, atomic and warp primitive.

The simulator's rewrite (:class:`gpuviz.capture.backends.sim.perthread.PerThreadRewriter`) keeps the recording
calls for its Python recorder to resolve at run time; the GPU's (:class:`gpuviz.capture.backends.gpu.rewrite.GpuRewriter`)
lowers them to device-side recorders. Both are subclasses of :class:`RewriteBase`; neither inherits the other.
What records what (barriers, warp primitives, atomics, shared declarations) is read off the construct table
(:mod:`gpuviz.capture.frontend.constructs`) and the capture plan, never looked up again here.

The rewrite keeps the user's statements and their evaluation order and only wraps:

* ``A[idx]`` (load)       -> ``A[__gv_ld(A, idx, LINE, SITE)]``  (records, returns idx unchanged)
* ``A[idx] = v``          -> ``A[__gv_st(A, idx, LINE, SITE)] = v``  (v is evaluated first, as in Python)
* ``A[idx] op= v``        -> ``__gv_i = idx; A[__gv_st(A, __gv_i, ...)] = A[__gv_ld(A, __gv_i, ...)] op v``
* ``cuda.atomic.op(A, idx, v)`` -> operands hoisted to temporaries, the event recorded, then the atomic
* ``cuda.syncthreads()``  -> ``__gv_bar(LINE, SITE)`` before it; warp primitives record as they are called
* a prologue that records START, ``__gv_end(LINE, SITE)`` before each ``return`` and at the end.
"""

from __future__ import annotations

import ast
import copy

from ..frontend.consteval import construct_error
from ..frontend.constructs import BARRIERS, PREDICATE_BARRIERS, WARP, is_shared_declaration
from ..frontend.names import is_grid_sync
from ..frontend.plan import build_plan
from ..frontend.source import FunctionSource, dotted_name

PREFIX = "__gv_"

#: what the GPU recorder's rewrite says of the slicing it does not follow: a slice assigned to (``a[i:j] = v``,
#: ``a[i:j] op= v``) or a view of what is no recorded array (a local array); it follows views read and written
#: element by element (GpuRewriter.view_of), the simulator's recorder follows them all
SLICE_REFUSAL = ("this use of array slicing is not supported by the GPU backend (it follows views such as "
                 "v = a[i:j] or a[i, :] read and written element by element, of kernel arguments, shared and "
                 "module-level arrays): assign element by element, or capture this kernel with --backend cpu or sim")


class RewriteBase(ast.NodeTransformer):
    """Rewrites one function's AST in place (on a copy) to call the recorder functions.

    A back end's rewrite is a subclass: it says whether the recorder resolves views and calls through
    parameters at run time (``runtime_rewrites``) and overrides the recorder calls (``rec``, ``rec_stmt``,
    ``bind_temp``, ``device_call``) and what else it lowers differently."""

    #: rewrites the simulator's Python recorder resolves at run time and the GPU lowering does not know:
    #: views (slices), functions called through a parameter
    runtime_rewrites: bool

    def __init__(self, fs: FunctionSource, *, is_kernel: bool, plan=None):
        self.fs = fs
        self.is_kernel = is_kernel
        if plan is None:  # a function read on its own (tests): its plan
            plan = build_plan(fs)
        self.plan = plan
        self.fplan = plan.function(fs)  # what every name refers to: the rewrite looks no name up itself
        self.tmp = 0

    def fresh(self) -> str:
        self.tmp += 1
        return f"{PREFIX}t{self.tmp}"

    def error(self, node, what):
        return construct_error(self.fs, node, what)

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

    # ---- recorder calls: what a back end records (a back end's rewrite overrides these four) ------------------------
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
            return self.aug_subscript(s, line)
        if (isinstance(s, ast.Assign) and self.runtime_rewrites and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Subscript) and self.index_expr(s.targets[0].slice) is None):
            # a[i:j] = v: the recorder stores element by element (reading v's elements when v is an array)
            t = s.targets[0]
            return [ast.copy_location(n, s) for n in self.rec_stmt(
                "setslice", self.visit(t.value), self.visit(_slices_as_calls(t.slice)), self.visit(s.value), line=line,
                site=self.site("store", t))]
        if isinstance(s, ast.Assign):
            return self.assign(s, line)
        if isinstance(s, ast.AnnAssign):
            if s.value is not None:
                s.value = self.visit(s.value)
            s.target = self.target(s.target)
            return [s]
        if isinstance(s, ast.AugAssign):
            s.value = self.visit(s.value)
            return [s]
        if isinstance(s, ast.Expr):
            return self.expr_stmt(s, line)
        return [self.visit(s)]

    def aug_subscript(self, s: ast.AugAssign, line: int) -> list:
        """``A[idx] op= v``: the index and the base evaluated once, the load and the store each recorded."""
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

    def assign(self, s: ast.Assign, line: int) -> list:
        """``x = ...``: an atomic's operands hoisted, the targets' stores recorded, a shared declaration registered."""
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

    def expr_stmt(self, s: ast.Expr, line: int) -> list:
        """A call as a statement: an atomic, a barrier or ``syncwarp`` recorded before it is called."""
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
        return is_shared_declaration(self.dotted, node)

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
            if name in WARP or name == "syncwarp":
                if node.args:
                    node.args[-1] = self.rec("warp", node.args[-1], line=node.lineno, site=self.site("warp", node))
                return node
            if name in PREDICATE_BARRIERS and node.args:
                # the predicate is read first, then the barrier is reached (the GPU recorder too: numba-cuda's
                # test_sync, cuda.syncthreads_count(ary_in[i]), records the load before the barrier)
                node.args[0] = self.rec("barv", node.args[0], line=node.lineno, site=self.site("barrier", node))
                return node
            if name in BARRIERS:
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
