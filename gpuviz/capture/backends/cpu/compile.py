"""Compile a Numba CUDA kernel's Python source into lockstep numpy code (gpuviz's CPU executor).

Every per-thread value becomes either a uniform Python/numpy scalar or an array with one entry per
thread of the whole grid. Each statement runs once for all threads, under a boolean *mask* of the
threads that execute it: ``if`` splits the mask, loops run while any thread is still in them, and
``return``/``break``/``continue`` take threads out of the mask. This is how a GPU runs a warp (SIMT),
and it is what makes the executor fast: a statement costs a few numpy operations, whatever the number
of threads.

The generated code calls a runtime object ``rt`` (see :mod:`gpuviz.capture.backends.cpu.runtime`) for memory
accesses, barriers, atomics and warp primitives; those calls record the trace.

Generated names start with ``_`` (masks ``_m*``, loop state ``_brk*``/``_cnt*``); the kernel's own
variables live in a dict ``V`` so that a variable first assigned in a branch never raises NameError. The front end
(:mod:`gpuviz.capture.frontend.support`) refuses what this refuses, with the same messages (tests/test_support.py).
"""

from __future__ import annotations

import ast
import math

import numpy as np

from ...errors import UnsupportedConstruct
from ...frontend.consteval import const_eval, is_constant, np_dtype
from ...frontend.constructs import ARRAY_REDUCTIONS, ATOMICS, PREDICATE_BARRIERS, WARP
from ...frontend.names import Diagnostic, is_dtype_name, is_grid_sync
from ...frontend.language import CMATH_FUNCTIONS as CMATH, FP16_FUNCTIONS as FP16, INTRINSICS, METHODS, field_key, \
    text_of, vector_type
from ...frontend.source import FunctionSource, dotted_name, module_attribute
from ...frontend.support import KernelReader
from .tables import BINOPS, BUILTINS, CMPOPS, CUDA_DIMS, MATH, OPERATOR, XYZ, literal


class _Ctx:
    """Where a block of statements sits: its mask variable and the enclosing loop."""

    def __init__(self, mask: str, loop: str | None):
        self.mask = mask
        self.loop = loop


class SimtCompiler(KernelReader):
    """Turns one kernel (or device function) AST into the source of a lockstep numpy function."""

    def __init__(self, fs: FunctionSource, *, is_kernel: bool, device_names: dict[str, str], plan, globals_var: str = "G",
                 debug: bool = False):
        self.fs = fs
        # the capture plan (gpuviz.capture.frontend.plan): what every name refers to (its Refs and tables), and the site
        # ids that go with every recording call. The generator looks no name up itself.
        self.plan = plan
        self.fplan = plan.function(fs)
        self.sites: dict[str, object] = {}  # generated name -> SiteLine, for the generated code's namespace
        self.diagnostics: list = []  # one per statement gpuviz cannot run (plan.Diagnostic)
        self.debug = debug  # numba-cuda's debug=True: Python's error model (division by zero raises)
        # module-level host arrays the kernel reads, copied when it is compiled: numba freezes a kernel's
        # globals (host arrays included) at its first compile, so later changes to them are not seen
        self.frozen: dict[str, np.ndarray] = {}
        self.globals_var = globals_var  # name under which the generated code finds this function's globals
        self.is_kernel = is_kernel
        self.device_names = device_names  # name used in source -> generated function name
        self.ns = fs.names()  # only to evaluate compile-time constants (shapes, dtypes, exceptions)
        self.counter = 0
        self.lines: list[str] = []
        self.shared_decls: dict[str, int] = {}

    # ---- helpers -------------------------------------------------------------------------------
    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"_{prefix}{self.counter}"

    def site(self, kind: str, node) -> str:
        """Source of the value a recording call takes for its site: a name bound to the plan's
        :class:`~gpuviz.capture.frontend.plan.SiteLine` (its line, and its id). ``node`` None: the kernel's implicit end."""
        value = self.plan.site_line(kind, self.fplan, node)
        site = getattr(value, "site", None)
        if site is None:
            return str(int(value))
        name = f"_S{site}"
        self.sites[name] = value
        return name

    def emit(self, indent: int, text: str):
        self.lines.append("    " * indent + text)

    def const_eval(self, node):
        """Evaluate a compile-time constant (shapes, dtypes) in the function's namespace."""
        return const_eval(self.fs, node, self.error)

    def is_constant(self, node) -> bool:
        """Whether ``node`` reads only module-level names (and literals): then it is known at compile time."""
        return is_constant(self.fplan, node)

    def dotted(self, node) -> list[str] | None:
        """['cuda', 'threadIdx', 'x'] for cuda.threadIdx.x, as the plan resolved its root (a module)."""
        return self.fplan.dotted(node)

    # ---- function ------------------------------------------------------------------------------
    def compile(self, gen_name: str) -> str:
        tree = self.fs.tree
        params = [f"p_{p}" for p in self.fs.params] + ([f"*p_{self.fs.vararg}"] if self.fs.vararg else [])
        self.emit(0, f"def {gen_name}(rt, _m0{''.join(', ' + p for p in params)}):")
        self.emit(1, "V = {}")
        for p in self.fs.all_params:  # *rest: the tuple of the further arguments
            self.emit(1, f"V[{p!r}] = p_{p}")
        self.emit(1, "_ret = rt.no_lanes()")
        self.emit(1, "_rv = None")
        self.block(tree.body, 1, _Ctx("_m0", None))
        if self.is_kernel:
            self.emit(1, f"rt.kernel_end(_m0 & ~_ret, {self.site('end', None)})")
        self.emit(1, "return _rv")
        return "\n".join(self.lines) + "\n"

    # ---- statements ----------------------------------------------------------------------------
    def block(self, body: list[ast.stmt], ind: int, ctx: _Ctx):
        for i, stmt in enumerate(body):
            try:
                self.stmt(stmt, ind, ctx)
            except UnsupportedConstruct as exc:
                # keep reading: every construct gpuviz cannot run gets its own message
                self.diagnostics.append(Diagnostic(getattr(exc, "construct", "") or type(stmt).__name__,
                                                   exc.file or self.fs.file, exc.line or stmt.lineno, str(exc)))
            if isinstance(stmt, (ast.Return, ast.Break, ast.Continue)):
                return  # the rest of the block is dead code for the threads that got here
            if self.exits_inside(stmt):
                # some threads may have left (return/break/continue): drop them from this block's mask
                exits = ["_ret"]
                if ctx.loop:
                    exits += [f"_brk{ctx.loop}", f"_cnt{ctx.loop}"]
                self.emit(ind, f"{ctx.mask} = {ctx.mask} & ~({' | '.join(exits)})")
                if i + 1 < len(body):
                    self.emit(ind, f"if {ctx.mask}.any():")
                    self.block(body[i + 1 :], ind + 1, ctx)
                    self.emit(ind + 1, "pass")
                return

    @staticmethod
    def exits_inside(stmt) -> bool:
        if not isinstance(stmt, (ast.If, ast.For, ast.While)):
            return False
        for node in ast.walk(stmt):
            if isinstance(node, ast.Return):
                return True
            if isinstance(node, (ast.Break, ast.Continue)) and isinstance(stmt, ast.If):
                return True
        return False

    def stmt(self, s: ast.stmt, ind: int, ctx: _Ctx):
        m = ctx.mask
        line = getattr(s, "lineno", -1)
        if isinstance(s, ast.Assign):
            if len(s.targets) == 1:
                self.assign(s.targets[0], self.expr(s.value, m), ind, m, line)
            else:
                tmp = self.fresh("t")
                self.emit(ind, f"{tmp} = {self.expr(s.value, m)}")
                for t in s.targets:
                    self.assign(t, tmp, ind, m, line)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.assign(s.target, self.expr(s.value, m), ind, m, line)
        elif isinstance(s, ast.AugAssign):
            self.augassign(s, ind, m)
        elif isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant):
                return  # docstring
            self.emit(ind, self.expr(s.value, m))
        elif isinstance(s, ast.If):
            c = self.fresh("c")
            ma, mb = self.fresh("m"), self.fresh("m")
            self.emit(ind, f"{c} = rt.truth({self.expr(s.test, m)})")
            self.emit(ind, f"{ma} = rt.land({m}, {c})")
            self.emit(ind, f"if {ma}.any():")
            self.block(s.body, ind + 1, _Ctx(ma, ctx.loop))
            self.emit(ind + 1, "pass")
            if s.orelse:
                self.emit(ind, f"{mb} = rt.land({m}, rt.lnot({c}))")
                self.emit(ind, f"if {mb}.any():")
                self.block(s.orelse, ind + 1, _Ctx(mb, ctx.loop))
                self.emit(ind + 1, "pass")
        elif isinstance(s, ast.While):
            if s.orelse:
                raise self.error(s, "'while ... else' is not supported in kernels: set a flag before 'break' and test it "
                                      "after the loop instead")
            self.loop_while(s, ind, ctx)
        elif isinstance(s, ast.For):
            self.loop_for(s, ind, ctx)
        elif isinstance(s, ast.Return):
            if s.value is not None:
                if self.is_kernel:
                    raise self.error(s, "a kernel cannot return a value")
                self.emit(ind, f"_rv = rt.merge({m}, {self.expr(s.value, m)}, _rv)")
            elif self.is_kernel:
                self.emit(ind, f"rt.kernel_end({m}, {self.site('end', s)})")
            self.emit(ind, f"_ret = _ret | {m}")
        elif isinstance(s, ast.Break):
            if ctx.loop is None:
                raise self.error(s, "'break' outside a loop")
            self.emit(ind, f"_brk{ctx.loop} = _brk{ctx.loop} | {m}")
        elif isinstance(s, ast.Continue):
            if ctx.loop is None:
                raise self.error(s, "'continue' outside a loop")
            self.emit(ind, f"_cnt{ctx.loop} = _cnt{ctx.loop} | {m}")
        elif isinstance(s, ast.Raise):
            self.emit(ind, f"rt.kernel_raise({m}, {self.exception_value(s)}, {line})")
            self.emit(ind, f"_ret = _ret | {m}")
        elif isinstance(s, ast.Pass):
            self.emit(ind, "pass")
        elif isinstance(s, ast.FunctionDef):
            self.inner_function(s, ind)
        else:
            raise self.error(s, f"'{type(s).__name__}' statements are not supported in kernels")

    def inner_function(self, s: ast.FunctionDef, ind: int):
        """``def f(...)`` inside a kernel (a closure, which numba inlines): a generated function defined at the same
        place, called like a device function (``rt.call_device``). Its variables start as a copy of the enclosing
        function's at the call (what it reads of them is their value then; what it assigns is its own)."""
        a = s.args
        if a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults or s.decorator_list:
            raise self.error(s, f"the function {s.name!r} defined inside the kernel has **kwargs, keyword-only or "
                                "default arguments, or a decorator: give it positional parameters only")
        gen, outer = self.fresh(f"fn_{s.name}_"), self.fresh("Vo")
        names = [x.arg for x in a.args] + ([a.vararg.arg] if a.vararg else [])
        params = [f"p_{x.arg}" for x in a.args] + ([f"*p_{a.vararg.arg}"] if a.vararg else [])
        self.emit(ind, f"{outer} = V")
        self.emit(ind, f"def {gen}(rt, _m0{''.join(', ' + p for p in params)}):")
        self.emit(ind + 1, f"V = dict({outer})")
        for p in names:
            self.emit(ind + 1, f"V[{p!r}] = p_{p}")
        self.emit(ind + 1, "_ret = rt.no_lanes()")
        self.emit(ind + 1, "_rv = None")
        was_kernel, self.is_kernel = self.is_kernel, False  # its 'return' returns a value, as a device function's
        try:
            self.block(s.body, ind + 1, _Ctx("_m0", None))
        finally:
            self.is_kernel = was_kernel
        self.emit(ind + 1, "return _rv")
        self.emit(ind, f"V[{s.name!r}] = rt.fnref_device({gen})")

    def assign(self, target, value_src: str, ind: int, m: str, line: int):
        if isinstance(target, (ast.Subscript, ast.Attribute)) and not value_src.isidentifier():
            # Python evaluates the value before the target's array and index: the value's loads come first
            tmp = self.fresh("v")
            self.emit(ind, f"{tmp} = {value_src}")
            value_src = tmp
        if isinstance(target, ast.Name):
            self.emit(ind, f"V[{target.id!r}] = rt.merge({m}, {value_src}, V.get({target.id!r}), {line}, {target.id!r})")
        elif isinstance(target, (ast.Tuple, ast.List)):
            tmp = self.fresh("t")
            self.emit(ind, f"{tmp} = rt.unpack({value_src}, {len(target.elts)}, {line})")
            for k, elt in enumerate(target.elts):
                self.assign(elt, f"{tmp}[{k}]", ind, m, line)
        elif isinstance(target, ast.Subscript) and field_key(target) and isinstance(target.value, ast.Subscript):
            # ary[i]["x"] = v: a store of the record ary[i], as ary[i].x = v
            sub = target.value
            rec = f"rt.record_for_store({m}, {self.expr(sub.value, m)}, {self.index(sub.slice, m)}, {self.site('store', sub)})"
            self.emit(ind, f"rt.store({m}, {rec}, {self.index(target.slice, m)}, {value_src}, {line})")
        elif isinstance(target, ast.Subscript):
            base = self.expr(target.value, m)
            idx = self.index(target.slice, m)
            self.emit(ind, f"rt.store({m}, {base}, {idx}, {value_src}, {self.site('store', target)})")
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Subscript):
            # ary[i].x = v: a store of the record ary[i]
            sub = target.value
            rec = f"rt.record_for_store({m}, {self.expr(sub.value, m)}, {self.index(sub.slice, m)}, {self.site('store', sub)})"
            self.emit(ind, f"rt.set_field({m}, {rec}, {target.attr!r}, {value_src}, {line})")
        elif isinstance(target, ast.Attribute):  # a record's field: rec.x = v
            self.emit(ind, f"rt.set_field({m}, {self.expr(target.value, m)}, {target.attr!r}, {value_src}, {line})")
        else:
            raise self.error(target, f"cannot assign to a {type(target).__name__} in a kernel")

    def augassign(self, s: ast.AugAssign, ind: int, m: str):
        op = BINOPS.get(type(s.op))
        if op is None:
            raise self.error(s, f"operator {type(s.op).__name__} is not supported")
        line = s.lineno
        if isinstance(s.target, ast.Name):
            name = s.target.id
            new = self.binop(op, f"V[{name!r}]", f"({self.expr(s.value, m)})", m, line)
            self.emit(ind, f"V[{name!r}] = rt.merge({m}, {new}, V[{name!r}])")
        elif isinstance(s.target, ast.Subscript):
            base, idx = self.fresh("b"), self.fresh("i")
            self.emit(ind, f"{base} = {self.expr(s.target.value, m)}")
            self.emit(ind, f"{idx} = {self.index(s.target.slice, m)}")
            # a[i] += v is a load, then v, then a store: the same order a GPU (and numba's simulator) follows
            new = self.binop(op, f"rt.load({m}, {base}, {idx}, {self.site('load', s.target)})",
                             f"({self.expr(s.value, m)})", m, line)
            self.emit(ind, f"rt.store({m}, {base}, {idx}, {new}, {self.site('store', s.target)})")
        elif isinstance(s.target, ast.Attribute):
            rec = self.fresh("r")
            self.emit(ind, f"{rec} = {self.expr(s.target.value, m)}")
            new = self.binop(op, f"rt.get_field({m}, {rec}, {s.target.attr!r}, {line})", f"({self.expr(s.value, m)})",
                             m, line)
            self.emit(ind, f"rt.set_field({m}, {rec}, {s.target.attr!r}, {new}, {line})")
        else:
            raise self.error(s, "augmented assignment to this target is not supported")

    def loop_while(self, s: ast.While, ind: int, ctx: _Ctx):
        L = str(self.counter + 1)
        self.counter += 1
        lm = f"_ml{L}"
        self.emit(ind, f"_brk{L} = rt.no_lanes()")
        self.emit(ind, f"{lm} = {ctx.mask}")
        self.emit(ind, "while True:")
        self.emit(ind + 1, f"rt.loop_tick({s.lineno}, {lm})")
        self.emit(ind + 1, f"{lm} = rt.land({lm}, rt.truth({self.expr(s.test, lm)}))")
        self.emit(ind + 1, f"if not {lm}.any(): break")
        self.emit(ind + 1, f"_cnt{L} = rt.no_lanes()")
        body_mask = f"_mb{L}"
        self.emit(ind + 1, f"{body_mask} = {lm}")
        self.emit(ind + 1, f"rt.loop_body({body_mask})")
        self.block(s.body, ind + 1, _Ctx(body_mask, L))
        self.emit(ind + 1, f"{lm} = {lm} & ~(_brk{L} | _ret)")

    def iterable(self, node, m: str) -> str:
        """Source of a Python list of the items a ``for`` walks: a tuple, an array's elements, enumerate(),
        zip(), range() inside them (lengths known when the loop starts, the same for every thread)."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and self.ref(node.func).kind == "builtin" \
                and not node.keywords:
            f = node.func.id
            if f == "enumerate" and len(node.args) in (1, 2):
                start = self.expr(node.args[1], m) if len(node.args) == 2 else "0"
                return f"rt.iter_enumerate({self.iterable(node.args[0], m)}, {start})"
            if f == "zip" and node.args:
                return "rt.iter_zip(" + ", ".join(self.iterable(a, m) for a in node.args) + ")"
            if f == "range" and 1 <= len(node.args) <= 3:
                return f"rt.iter_range({node.lineno}, " + ", ".join(self.expr(a, m) for a in node.args) + ")"
            if f == "reversed" and len(node.args) == 1:
                return f"{self.iterable(node.args[0], m)}[::-1]"
        return f"rt.iter_items({self.expr(node, m)}, {getattr(node, 'lineno', -1)})"

    def loop_items(self, s: ast.For, ind: int, ctx: _Ctx):
        """``for x in items``: items known when the loop starts (see iterable()), the body under the loop's mask."""
        L = str(self.counter + 1)
        self.counter += 1
        seq, lm, body_mask, k = f"_seq{L}", f"_ml{L}", f"_mb{L}", f"_k{L}"
        self.emit(ind, f"{seq} = {self.iterable(s.iter, ctx.mask)}")
        self.emit(ind, f"_brk{L} = rt.no_lanes()")
        self.emit(ind, f"{lm} = {ctx.mask}")
        self.emit(ind, f"for {k} in range(len({seq})):")
        self.emit(ind + 1, f"rt.loop_tick({s.lineno}, {lm})")
        self.emit(ind + 1, f"if not {lm}.any(): break")
        self.emit(ind + 1, f"_cnt{L} = rt.no_lanes()")
        self.emit(ind + 1, f"{body_mask} = {lm}")
        self.emit(ind + 1, f"rt.loop_body({body_mask})")
        self.assign(s.target, f"{seq}[{k}]", ind + 1, body_mask, s.lineno)
        self.block(s.body, ind + 1, _Ctx(body_mask, L))
        self.emit(ind + 1, f"{lm} = {lm} & ~(_brk{L} | _ret)")

    def loop_for(self, s: ast.For, ind: int, ctx: _Ctx):
        it = s.iter
        if s.orelse:
            raise self.error(s, "'for ... else' is not supported in kernels: set a flag before 'break' instead")
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and not self.ref(it.func).is_local and not it.keywords and 1 <= len(it.args) <= 3):
            return self.loop_items(s, ind, ctx)
        if not isinstance(s.target, ast.Name):
            raise self.error(s, "the loop variable must be a plain name")
        L = str(self.counter + 1)
        self.counter += 1
        var = s.target.id
        r, lm, body_mask, iv = f"_r{L}", f"_ml{L}", f"_mb{L}", f"_iv{L}"
        args = ", ".join(self.expr(a, ctx.mask) for a in it.args)
        # One loop serves uniform and per-thread bounds: with uniform bounds the counter stays a Python int,
        # the condition a Python bool, and the loop costs what a plain Python loop costs.
        self.emit(ind, f"{r} = rt.range_args({args})")
        self.emit(ind, f"_brk{L} = rt.no_lanes()")
        self.emit(ind, f"{lm} = {ctx.mask}")
        self.emit(ind, f"{iv} = {r}[0]")
        self.emit(ind, "while True:")
        self.emit(ind + 1, f"rt.loop_tick({s.lineno}, {lm})")
        self.emit(ind + 1, f"{lm} = rt.land({lm}, rt.range_cond({iv}, {r}[1], {r}[2]))")
        self.emit(ind + 1, f"if not {lm}.any(): break")
        self.emit(ind + 1, f"_cnt{L} = rt.no_lanes()")
        self.emit(ind + 1, f"{body_mask} = {lm}")
        self.emit(ind + 1, f"rt.loop_body({body_mask})")
        self.emit(ind + 1, f"V[{var!r}] = rt.merge({body_mask}, {iv}, V.get({var!r}))")
        self.block(s.body, ind + 1, _Ctx(body_mask, L))
        self.emit(ind + 1, f"{lm} = {lm} & ~(_brk{L} | _ret)")
        self.emit(ind + 1, f"{iv} = {iv} + {r}[2]")

    # ---- expressions ---------------------------------------------------------------------------
    def index(self, node, m: str) -> str:
        """Source of the index tuple; a slice (a[i:j], a[i, :]) becomes a slice object: the runtime makes a view."""
        def one(e):
            if isinstance(e, ast.Slice):
                parts = [self.expr(x, m) if x is not None else "None" for x in (e.lower, e.upper, e.step)]
                return f"slice({', '.join(parts)})"
            return self.expr(e, m)

        if isinstance(node, ast.Tuple):
            return "(" + "".join(one(e) + ", " for e in node.elts) + ")"
        return "(" + one(node) + ",)"

    def expr(self, n, m: str) -> str:  # noqa: C901 - one branch per construct reads best here
        if isinstance(n, ast.Constant):
            if isinstance(n.value, (int, float, bool, complex)) or n.value is None:
                return literal(n.value)
            if isinstance(n.value, (str, bytes)):  # stored into string arrays and string fields of records
                return repr(n.value)
            raise self.error(n, f"constant {n.value!r} is not supported")
        if isinstance(n, ast.Name):
            return self.name(n)
        if isinstance(n, ast.BinOp):
            op = BINOPS.get(type(n.op))
            if op is None:
                raise self.error(n, f"operator {type(n.op).__name__} is not supported")
            return self.binop(op, self.expr(n.left, m), self.expr(n.right, m), m, n.lineno)
        if isinstance(n, ast.UnaryOp):
            v = self.expr(n.operand, m)
            if isinstance(n.op, ast.Not):
                return f"rt.lnot({v})"
            return {ast.USub: f"(-{v})", ast.UAdd: f"(+{v})", ast.Invert: f"(~{v})"}[type(n.op)]
        if isinstance(n, ast.Compare):
            parts = []
            left = self.expr(n.left, m)
            for k, (op, right) in enumerate(zip(n.ops, n.comparators)):
                o = CMPOPS.get(type(op))
                if o is None:
                    raise self.error(n, f"comparison {type(op).__name__} is not supported in kernels")
                r = self.expr(right, m)
                if k < len(n.ops) - 1:
                    tmp = self.fresh("cmp")
                    r = f"({tmp} := {r})"
                    parts.append(self.compare(left, op, o, r))
                    left = tmp
                else:
                    parts.append(self.compare(left, op, o, r))
            return parts[0] if len(parts) == 1 else "rt.all_of(" + ", ".join(parts) + ")"
        if isinstance(n, ast.BoolOp):
            fn = "rt.and_" if isinstance(n.op, ast.And) else "rt.or_"
            out = self.expr(n.values[0], m)
            for v in n.values[1:]:
                lm = self.fresh("ml")
                out = f"{fn}({m}, {out}, lambda {lm}: {self.expr(v, lm)})"
            return out
        if isinstance(n, ast.IfExp):
            a, b = self.fresh("ml"), self.fresh("ml")
            return (f"rt.ifexp({m}, {self.expr(n.test, m)}, lambda {a}: {self.expr(n.body, a)}, "
                    f"lambda {b}: {self.expr(n.orelse, b)})")
        if isinstance(n, ast.Subscript):
            member = self.enum_subscript(n)  # Color["red"]
            if member is not None:
                return literal(member.value)
            base = self.expr(n.value, m)
            return f"rt.load({m}, {base}, {self.index(n.slice, m)}, {self.site('load', n)})"
        if isinstance(n, ast.Tuple):
            return "(" + "".join(self.expr(e, m) + ", " for e in n.elts) + ")"
        if isinstance(n, ast.Attribute):
            return self.attribute(n, m)
        if isinstance(n, ast.Call):
            return self.call(n, m)
        if isinstance(n, ast.Starred) and isinstance(n.ctx, ast.Load):
            # f(*t) and (*t, x) of a tuple: the generated code unpacks it as Python does
            return "*" + self.expr(n.value, m)
        if isinstance(n, ast.NamedExpr):
            raise self.error(n, "':=' is not supported in kernels")
        if isinstance(n, (ast.List, ast.ListComp, ast.Dict, ast.Set, ast.GeneratorExp, ast.Lambda, ast.JoinedStr)):
            raise self.error(n, f"a {type(n).__name__} cannot be used inside a CUDA kernel: use numbers, tuples of "
                                f"numbers and arrays instead (cuda.local.array for a per-thread table)")
        raise self.error(n, f"'{type(n).__name__}' expressions are not supported in kernels")

    @staticmethod
    def compare(left: str, op, o: str, right: str) -> str:
        if isinstance(op, (ast.Is, ast.IsNot)):
            return f"rt.is_({left}, {right}, {isinstance(op, ast.IsNot)})"
        return f"({left} {o} {right})"

    def exception_value(self, s: ast.Raise) -> str:
        """The exception a ``raise`` raises, built at compile time (numba needs its arguments constant)."""
        if s.exc is None:
            raise self.error(s, "a bare 'raise' cannot be used in a kernel: raise SomeError('message')")
        try:
            exc = self.const_eval(s.exc)
        except UnsupportedConstruct:
            call = s.exc.func if isinstance(s.exc, ast.Call) else s.exc
            exc = self.const_eval(call)  # the class, when its arguments are per-thread values
        if not (isinstance(exc, BaseException) or (isinstance(exc, type) and issubclass(exc, BaseException))):
            raise self.error(s, "'raise' needs an exception class or instance")
        key = f"__gv_exc{len(self.frozen)}"
        self.frozen[key] = exc
        return f"{self.globals_var}[{key!r}]"

    def binop(self, op: str, left: str, right: str, m: str, line: int) -> str:
        if op in ("/", "//", "%"):
            if self.debug:
                return f"rt.div_checked({m}, {left}, {right}, {op!r}, {line})"
            return f"rt.div({left}, {right}, {op!r})"
        return f"({left} {op} {right})"

    def name(self, n: ast.Name) -> str:
        ref = self.ref(n)
        kind = ref.kind
        if ref.is_local:
            return f"V[{n.id!r}]"
        if n.id in ("True", "False", "None"):
            return n.id
        if kind == "builtin":
            raise self.error(n, f"the builtin {n.id!r} cannot be used as a value in a kernel")
        if kind == "undefined":
            raise self.error(n, f"name {n.id!r} is not defined (not a parameter, local, or module-level constant)")
        if kind == "constant":  # a module-level number, or a tuple of numbers
            value = self.fplan.constants[n.id]
            if isinstance(value, tuple):
                return "(" + "".join(literal(x) + ", " for x in value) + ")"
            return literal(value.item() if isinstance(value, np.generic) else value)
        if kind == "device_function" and n.id in self.device_names:
            return f"rt.fnref_device({self.device_names[n.id]})"  # passed as a value, called through a parameter
        if kind == "scalar_type":  # numba's uint32, numpy's np.float32, ... as a value (a cast to apply later)
            return f"rt.dtype_of({ref.target[-1]!r})"
        if kind == "host_array":
            # a module-level host array is a constant array on a GPU, its values frozen at compile time: the
            # plan's table holds the copy it froze when it read the kernel, one copy shared by the backends
            self.frozen[n.id] = self.fplan.host_arrays[n.id]
            return f"rt.const_array({n.id!r}, {self.globals_var}[{n.id!r}], {n.lineno})"
        if kind == "device_array":
            # a module-level device array is captured by pointer: each launch sees its current contents
            self.frozen[n.id] = self.fplan.device_arrays[n.id]
            return f"rt.device_global({n.id!r}, {self.globals_var}[{n.id!r}], {n.lineno})"
        raise self.error(n, f"{n.id!r} ({type(self.ns.get(n.id)).__name__}) cannot be used as a value in a kernel")

    def attribute(self, n: ast.Attribute, m: str) -> str:
        parts = self.dotted(n)
        if parts is not None:
            if parts[0] == "cuda":
                if len(parts) == 3 and parts[1] in CUDA_DIMS and parts[2] in XYZ:
                    return f"{CUDA_DIMS[parts[1]]}[{XYZ[parts[2]]}]"
                if parts[1:] == ["laneid"]:
                    return "rt.laneid"
                if parts[1:] == ["warpsize"]:
                    return "rt.warp_size"
                if len(parts) == 3 and parts[1] == "atomic" and parts[2] in ATOMICS:
                    return f"rt.fnref_atomic({parts[2]!r})"  # passed as a value, called through a parameter
            if parts[0] == "math" and len(parts) == 2 and isinstance(getattr(math, parts[1], None), float):
                return literal(getattr(math, parts[1]))
            if parts[0] == "numpy" and len(parts) == 2 and isinstance(getattr(np, parts[1], None), float):
                return literal(getattr(np, parts[1]))  # np.nan, np.inf, np.pi, np.e
            if parts[0] in ("numba", "numpy") and len(parts) >= 2:
                return f"rt.dtype_of({parts[-1]!r})"
            raise self.error(n, f"'{'.'.join(parts)}' is not supported in kernels")
        root = n.value
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and self.ref(root).kind == "module":  # mymod.N: a number numba freezes
            text, value = module_attribute(n, self.ns)
            if isinstance(value, (bool, int, float, complex, np.integer, np.floating, np.bool_)):
                return literal(value.item() if isinstance(value, np.generic) else value)
            raise self.error(n, f"{text or text_of(n)}: a kernel reads another module's numbers and calls its device "
                                "functions; this is neither")
        member = self.enum_attribute(n)  # Color.RED
        if member is not None:
            return literal(member.value)
        base = self.expr(n.value, m)
        if n.attr in ("shape", "size", "ndim", "dtype"):
            return f"rt.array_attr({base}, {n.attr!r}, {n.lineno})"
        if n.attr in ("real", "imag"):
            return f"rt.real_imag({base}, {n.attr!r}, {n.lineno})"
        return f"rt.get_field({m}, {base}, {n.attr!r}, {n.lineno})"  # a record's field (checked when it runs)

    def call(self, n: ast.Call, m: str) -> str:
        line = n.lineno
        if isinstance(n.func, ast.Name):
            return self.call_name(n, m)
        if is_grid_sync(self.fplan, n):  # g.sync() of g = cuda.cg.this_grid(): a barrier of the whole grid
            return f"rt.grid_sync({m}, {self.site('barrier', n)})"
        dotted_text = dotted_name(n.func)
        if dotted_text in self.device_names:  # a device function of another module: mymod.helper(x)
            if n.keywords:
                raise self.error(n, "keyword arguments to device functions are not supported")
            args = "".join(", " + self.expr(a, m) for a in n.args)
            return f"rt.call_device({self.device_names[dotted_text]}, {m}{args})"
        parts = self.dotted(n.func)
        if parts is None:
            op = self.local_reduction(n)
            if op is not None:
                return f"rt.array_reduce({m}, {self.expr(n.func.value, m)}, {op!r}, {line})"
            if isinstance(n.func, ast.Attribute) and n.func.attr not in METHODS:
                raise self.error(n, f"the method .{n.func.attr}() is not supported by gpuviz (it supports "
                                    f"{', '.join('.' + x + '()' for x in sorted(METHODS | set(ARRAY_REDUCTIONS)))})"
                                    ": index the array instead")
            if isinstance(n.func, ast.Attribute) and not n.keywords:  # a method of a value: x.bit_count()
                args = "".join(", " + self.expr(a, m) for a in n.args)
                return f"rt.method({m}, {line}, {self.expr(n.func.value, m)}, {n.func.attr!r}{args})"
            raise self.error(n, "only cuda.*, math.*, numpy/numba casts and device functions can be called in a "
                                "kernel: call a @cuda.jit(device=True) function for anything else")
        return self.call_dotted(parts, n, m)

    def call_name(self, n: ast.Call, m: str) -> str:
        """A call of a plain name, by what the plan resolved it to."""
        line = n.lineno
        fname = n.func.id
        ref = self.ref(n.func)
        if ref.kind == "inner_function":  # a function defined inside the kernel (see inner_function)
            if n.keywords:
                raise self.error(n, f"keyword arguments to {fname!r} are not supported: pass them by position")
            args = "".join(", " + self.expr(a, m) for a in n.args)
            return f"rt.call_device(V[{fname!r}].target, {m}{args})"
        if ref.is_local:
            # a function a device function was given (a cast, an atomic, another device function)
            if n.keywords:
                raise self.error(n, "keyword arguments to a function passed as a parameter are not supported")
            args = "".join(", " + self.expr(a, m) for a in n.args)
            return f"rt.call_value(V[{fname!r}], {m}, {self.site('atomic', n)}{args})"
        if fname in self.device_names:
            if n.keywords:
                raise self.error(n, "keyword arguments to device functions are not supported")
            args = "".join(", " + self.expr(a, m) for a in n.args)
            return f"rt.call_device({self.device_names[fname]}, {m}{args})"
        if ref.kind == "builtin" and fname in BUILTINS:
            args = ", ".join(self.expr(a, m) for a in n.args)
            return f"{BUILTINS[fname]}({args})" if fname != "tuple" else f"rt.b_tuple({line}, {args})"
        if ref.kind == "builtin" and fname == "print":
            args = ", ".join(self.expr(a, m) for a in n.args)
            return f"rt.kernel_print({m}, {line}, {args})"
        parts = self.fplan.chain(n.func)  # a function imported from a module: `from math import sqrt`
        if ref.kind == "operator" and parts and len(parts) == 2:
            op = parts[1]
            if op in OPERATOR and len(n.args) == 2 and not n.keywords:
                return self.binop(OPERATOR[op], self.expr(n.args[0], m), self.expr(n.args[1], m), m, line)
            if op in ("neg", "pos", "invert", "not_", "truth") and len(n.args) == 1:
                v = self.expr(n.args[0], m)
                return {"neg": f"(-{v})", "pos": f"(+{v})", "invert": f"(~{v})", "not_": f"rt.lnot({v})",
                        "truth": f"rt.truth({v})"}[op]
        elif parts and len(parts) == 2:
            root, qual = parts
            if (root == "math" and qual in MATH) or (root == "cmath" and qual in CMATH) \
                    or root in ("cuda", "numpy", "numba"):
                return self.call_dotted(parts, n, m)
        if ref.kind == "device_function":
            raise self.error(n, f"device function {fname!r} was not found when the kernel was parsed")
        raise self.error(n, f"calling {fname!r} is not supported inside a kernel")

    def call_dotted(self, parts: list[str], n: ast.Call, m: str) -> str:
        kw = {k.arg: k.value for k in n.keywords}
        arg = self.arg_reader(parts, n)

        def ex(node):
            return self.expr(node, m)

        root, rest = parts[0], parts[1:]
        if root == "cuda":
            return self.call_cuda(rest, n, m, arg)
        if root == "operator" and len(rest) == 1 and rest[0] in OPERATOR and len(n.args) == 2 and not kw:
            return self.binop(OPERATOR[rest[0]], ex(n.args[0]), ex(n.args[1]), m, n.lineno)
        if root == "cmath":
            if len(rest) == 1 and rest[0] in CMATH:
                args = ", ".join(ex(a) for a in n.args)
                return f"rt.cmath({rest[0]!r}, {args})"
            raise self.error(n, f"cmath.{'.'.join(rest)}() is not supported by gpuviz's executor")
        if root == "math":
            if len(rest) == 1 and rest[0] in MATH:
                args = ", ".join(ex(a) for a in n.args)
                return f"{MATH[rest[0]]}({args})"
            raise self.error(n, f"math.{'.'.join(rest)}() is not supported")
        if root in ("numpy", "numba"):
            name = rest[-1]
            if len(n.args) == 1 and not kw and is_dtype_name(name):
                return f"rt.cast({ex(n.args[0])}, {name!r})"
            if root == "numpy" and len(rest) == 1 and hasattr(np, name) and isinstance(getattr(np, name), np.ufunc):
                args = ", ".join(ex(a) for a in n.args)
                return f"np.{name}({args})"
            raise self.error(n, f"{root}.{'.'.join(rest)}() is not supported in kernels")
        raise self.error(n, "unsupported call")

    def arg_reader(self, parts: list[str], n: ast.Call):
        """``arg(i, name, default)``: the call's i-th positional argument, or its keyword ``name``, or ``default``."""
        kw = {k.arg: k.value for k in n.keywords}

        def arg(i, name=None, default=None):
            if i < len(n.args):
                return n.args[i]
            if name in kw:
                return kw[name]
            if default is not None:
                return default
            raise self.error(n, f"{'.'.join(parts)}: missing argument {name or i}")

        return arg

    def call_cuda(self, rest: list[str], n: ast.Call, m: str, arg) -> str:
        """A call of ``cuda.<rest>`` (a barrier, an atomic, a warp primitive, an array declaration, ...)."""
        line = n.lineno

        def ex(node):
            return self.expr(node, m)

        name = ".".join(rest)
        if name == "grid":
            return f"rt.grid({self.const_eval(arg(0, 'ndim'))})"
        if name == "gridsize":
            return f"rt.gridsize({self.const_eval(arg(0, 'ndim'))})"
        if name == "syncthreads":
            return f"rt.syncthreads({m}, {self.site('barrier', n)})"
        if name in PREDICATE_BARRIERS:
            return (f"rt.syncthreads({m}, {self.site('barrier', n)}, {ex(arg(0, 'predicate'))}, "
                    f"{name.split('_')[1]!r})")
        if name == "syncwarp":
            return f"rt.syncwarp({m}, {self.site('warp', n)})"
        if name == "cg.this_grid" and not n.args:
            return "rt.grid_group()"
        if name in ("threadfence", "threadfence_block", "threadfence_system"):
            return "None"
        if name == "nanosleep":  # lanes in lockstep: a sleep changes nothing; its argument is still evaluated
            return f"({ex(arg(0, 'ns'))}, None)[1]"
        if name == "activemask":
            return f"rt.activemask({m})"
        if name == "lanemask_lt":
            return "rt.lanemask_lt()"
        if name in WARP:
            args = ", ".join(ex(a) for a in n.args)
            return f"rt.warp_op({name!r}, {m}, {self.site('warp', n)}, {args})"
        if name in ("shared.array", "local.array"):
            space = rest[0]
            self.alignment(name, n)  # where the array starts in memory: checked, then nothing to model
            if self.is_constant(arg(0, "shape")) and self.is_constant(arg(1, "dtype")):
                shape = self.const_eval(arg(0, "shape"))
                dtype = self.const_eval(arg(1, "dtype"))
                return f"rt.{space}_array({shape!r}, {self.np_dtype(dtype, n)!r}, {line})"
            # a shape or dtype a device function is given as an argument: known when it runs
            return f"rt.{space}_array({ex(arg(0, 'shape'))}, rt.dtype_name({ex(arg(1, 'dtype'))}), {line})"
        if name == "const.array_like":
            return ex(arg(0, "ary"))
        if rest and rest[0] == "atomic" and len(rest) == 2 and rest[1] in ATOMICS:
            op = rest[1]
            args = ", ".join(ex(a) for a in n.args)
            return f"rt.atomic({op!r}, {m}, {self.site('atomic', n)}, {args})"
        if name in INTRINSICS:
            return f"rt.intrinsic({name!r}, {ex(arg(0))})"
        if rest[0] == "fp16" and len(rest) == 2 and rest[1] in FP16:
            args = ", ".join(ex(a) for a in n.args)
            return f"rt.fp16({rest[1]!r}, {args})"
        if name == "fma":
            return f"({ex(arg(0))} * {ex(arg(1))} + {ex(arg(2))})"
        vector = vector_type(name)
        if vector is not None:
            args = "".join(", " + ex(a) for a in n.args)
            return f"rt.vector({vector!r}, {line}{args})"
        if name in ("selp",):
            return f"rt.ifexp({m}, {ex(arg(0))}, lambda _a: {ex(arg(1))}, lambda _b: {ex(arg(2))})"
        raise self.error(n, f"cuda.{name}() is not supported by gpuviz's executor")

    def np_dtype(self, dtype, node) -> str:
        """The dtype's text for the generated code (:func:`gpuviz.capture.frontend.consteval.np_dtype`)."""
        return np_dtype(self.fs, dtype, node)


def compile_kernel(plan, *, debug: bool = False):
    """The CPU executor's code for the kernel of ``plan`` (:mod:`gpuviz.capture.frontend.plan`) and its device functions:
    ((source of the generated functions, the kernel's generated name, namespaces they need), diagnostics). The
    recording calls carry the plan's site ids; every statement gpuviz cannot run is a diagnostic rather than the
    end of the reading."""
    gen_names = [f"__simt_{fp.fs.name}_{fp.index}" for fp in plan.functions]
    chunks = []
    namespaces = {}
    diagnostics = []
    for fp in plan.functions:
        names = {call_name: gen_names[index] for call_name, index in fp.device_functions.items()}
        comp = SimtCompiler(fp.fs, is_kernel=fp.is_kernel, device_names=names, globals_var=f"G{fp.index}",
                            debug=debug, plan=plan)
        chunks.append(comp.compile(gen_names[fp.index]))
        namespaces[f"G{fp.index}"] = {**fp.fs.names(), **comp.frozen}
        namespaces.update(comp.sites)
        diagnostics.extend(comp.diagnostics)
    return ("\n".join(chunks), gen_names[0], namespaces), diagnostics
