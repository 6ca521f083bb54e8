"""What of a kernel gpuviz supports, decided by the front end: one :class:`Diagnostic` per construct it refuses.

:func:`support_diagnostics` walks the kernel's and its device functions' statements as every back end reads them,
with the front end's own tables (the construct table :mod:`.constructs`, the language's names :mod:`.language`, the
plan's resolved names, the constant evaluator :mod:`.consteval`), and keeps one diagnostic per statement gpuviz
cannot run: the first construct of that statement it refuses, with its file, line, the line as written and what to
write instead. A statement refused does not stop the reading of the next; statements after a ``return``, ``break``
or ``continue`` of the same block are dead code and not read. The plan (:func:`.plan.build_plan`) keeps these
diagnostics, and every back end refuses the kernel with them alike (``KernelPlan.raise_if_unsupported``).

The CPU executor's code generator (``backends/cpu/compile.py``) reads the statements in the same order and refuses
the same constructs with the same messages (``tests/test_support.py`` holds the two to each other on every bundled
kernel and on examples of each refusal): a construct added to one is added to the other. A construct only one back
end cannot model is no diagnostic here but a row of the construct table's ``BACKEND_LIMITS``.
"""

from __future__ import annotations

import ast
import math
import struct

import numpy as np

from ..errors import UnsupportedConstruct
from .consteval import const_eval, construct_error, is_constant, np_dtype
from .constructs import ARRAY_REDUCTIONS, ATOMICS, PREDICATE_BARRIERS, WARP
from .language import (AXES, BINARY_OPERATORS, BUILTIN_CALLS, CMATH_FUNCTIONS, COMPARISONS, CONTAINER_EXPRESSIONS,
                       FP16_FUNCTIONS, INTRINSICS, MATH_FUNCTIONS, METHODS, OPERATOR_FUNCTIONS, THREAD_INDEXES,
                       UNARY_OPERATOR_FUNCTIONS, field_key, text_of, vector_type)
from .names import Diagnostic, Ref, is_dtype_name, is_grid_sync
from .source import FunctionSource, dotted_name, module_attribute

#: ``cuda.<name>()`` calls that take no checking beyond their name: barriers, fences, lane masks, the grid group
_PLAIN_CUDA_CALLS = frozenset({"syncthreads", "syncwarp", "threadfence", "threadfence_block", "threadfence_system",
                               "activemask", "lanemask_lt"})


def support_diagnostics(plan) -> list[Diagnostic]:
    """One diagnostic per statement of ``plan``'s functions gpuviz cannot run, function by function in the plan's
    order, statement by statement in source order."""
    out: list[Diagnostic] = []
    for fp in plan.functions:
        check = SupportCheck(fp)
        check.block(fp.fs.tree.body, in_loop=False)
        out.extend(check.diagnostics)
    return out


def _is_number(value) -> bool:
    return isinstance(value, (bool, int, float, complex, np.integer, np.floating, np.bool_))


class KernelReader:
    """What both readers of a kernel's statements share, the front end's :class:`SupportCheck` and the CPU back
    end's code generator: errors located in the source, names as the plan resolved them, and the lookups whose
    refusals must read the same from both (enum members, array reductions). Needs ``self.fs`` and ``self.fplan``."""

    fs: FunctionSource
    fplan: object

    def error(self, node, what: str) -> UnsupportedConstruct:
        return construct_error(self.fs, node, what)  # .construct: which construct (the plan's diagnostics name it)

    def ref(self, n: ast.Name) -> Ref:
        """What the plan resolved the name ``n`` to."""
        ref = self.fplan.ref(n)
        return ref if ref is not None else Ref("undefined", n.id)

    def alignment(self, name: str, n: ast.Call) -> None:
        """``alignment=`` of a shared or local array: where the array starts in memory, which no back end's trace
        depends on (each shared array's banks count from its own first element), so every back end runs it (the
        simulator's rewrite leaves it out: numba's simulator refuses it). Checked as numba-cuda checks it (None, or a
        constant power of two that is a multiple of the pointer size), so that gpuviz refuses what numba refuses."""
        node = n.args[2] if len(n.args) > 2 else {k.arg: k.value for k in n.keywords}.get("alignment")
        if node is None:
            return
        pointer = struct.calcsize("P")
        need = f"cuda.{name}(..., alignment=) must be a constant power of two that is a multiple of {pointer}, as " \
               "numba-cuda requires"
        if not is_constant(self.fplan, node):
            raise self.error(n, f"{need}, not a value known only when it runs")
        value = const_eval(self.fs, node, self.error)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0
                                  or value & (value - 1) or value % pointer):
            raise self.error(n, f"{need}, not {value!r}")

    def enum_subscript(self, n: ast.Subscript):
        """The member of ``Color["red"]``, an enum member looked up by a constant name (None: ``n`` is no enum
        lookup; refused when the name is not constant or the member is not a number)."""
        if not (isinstance(n.value, ast.Name) and self.ref(n.value).kind == "enum"):
            return None
        cls = self.fplan.enums[n.value.id]
        if not (isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str)):
            raise self.error(n, f"{n.value.id}[...]: kernels look an enum member up by a constant name, "
                                f"{n.value.id}['NAME'], or as {n.value.id}.NAME")
        member = cls.__members__.get(n.slice.value)
        if member is None or not isinstance(member.value, (int, float, bool)):
            raise self.error(n, f"{n.value.id}[{n.slice.value!r}]: kernels use enum members whose values are numbers")
        return member

    def enum_attribute(self, n: ast.Attribute):
        """The member of ``Color.RED`` (None: ``n`` is no enum's attribute; refused when it is not a number)."""
        if not (isinstance(n.value, ast.Name) and self.ref(n.value).kind == "enum"):
            return None
        member = getattr(self.fplan.enums[n.value.id], n.attr, None)
        if member is None or not isinstance(member.value, (int, float, bool)):
            raise self.error(n, f"{n.value.id}.{n.attr}: kernels use enum members whose values are numbers")
        return member

    def local_reduction(self, n: ast.Call) -> str | None:
        """The numpy reduction of ``a.sum()``, ``a.mean()``, ... of a thread's own local array (None: ``n`` is no
        such method call; refused with arguments, or on any other array)."""
        if not (isinstance(n.func, ast.Attribute) and n.func.attr in ARRAY_REDUCTIONS):
            return None
        if n.args or n.keywords:
            raise self.error(n, f".{n.func.attr}() with arguments (an axis, a dtype) is not supported in "
                                f"kernels: numba-cuda compiles .{n.func.attr}() of a whole array")
        owner = n.func.value
        if not (isinstance(owner, ast.Name) and self.ref(owner).kind == "local_array"):
            raise self.error(n, f"the method .{n.func.attr}() of {text_of(owner)}: gpuviz runs it on a "
                                "thread's own cuda.local.array only (a global or shared array's loads would "
                                "go unrecorded): write the loop")
        return ARRAY_REDUCTIONS[n.func.attr]


class SupportCheck(KernelReader):
    """Reads one function of a plan (:class:`~gpuviz.capture.frontend.plan.FunctionPlan`) statement by statement;
    each refused statement adds a :class:`Diagnostic` to :attr:`diagnostics`."""

    def __init__(self, fplan):
        self.fplan = fplan
        self.fs = fplan.fs
        self.is_kernel = fplan.is_kernel  # a closure's body is read as a device function's
        self.device_names = set(fplan.device_functions)  # device functions as the source calls them (mymod.f too)
        self.ns = self.fs.names()  # only to evaluate compile-time constants and to name what a name is
        self.diagnostics: list[Diagnostic] = []

    # ---- statements ----------------------------------------------------------------------------
    def block(self, body: list[ast.stmt], in_loop: bool) -> None:
        for stmt in body:
            try:
                self.statement(stmt, in_loop)
            except UnsupportedConstruct as exc:
                self.diagnostics.append(Diagnostic(getattr(exc, "construct", "") or type(stmt).__name__,
                                                   exc.file or self.fs.file, exc.line or stmt.lineno, str(exc)))
            if isinstance(stmt, (ast.Return, ast.Break, ast.Continue)):
                return  # the rest of the block is dead code

    def statement(self, s: ast.stmt, in_loop: bool) -> None:  # noqa: C901 - one branch per statement reads best
        if isinstance(s, ast.Assign):
            self.expr(s.value)  # the value is read before its targets
            for target in s.targets:
                self.assign(target)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.expr(s.value)
                self.assign(s.target)
        elif isinstance(s, ast.AugAssign):
            self.augassign(s)
        elif isinstance(s, ast.Expr):
            if not isinstance(s.value, ast.Constant):  # a docstring
                self.expr(s.value)
        elif isinstance(s, ast.If):
            self.expr(s.test)
            self.block(s.body, in_loop)
            self.block(s.orelse, in_loop)
        elif isinstance(s, ast.While):
            if s.orelse:
                raise self.error(s, "'while ... else' is not supported in kernels: set a flag before 'break' and test "
                                    "it after the loop instead")
            self.expr(s.test)
            self.block(s.body, in_loop=True)
        elif isinstance(s, ast.For):
            self.loop_for(s)
        elif isinstance(s, ast.Return):
            if s.value is not None:
                if self.is_kernel:
                    raise self.error(s, "a kernel cannot return a value")
                self.expr(s.value)
        elif isinstance(s, (ast.Break, ast.Continue)):
            if not in_loop:
                raise self.error(s, f"'{'break' if isinstance(s, ast.Break) else 'continue'}' outside a loop")
        elif isinstance(s, ast.Raise):
            self.exception(s)
        elif isinstance(s, ast.FunctionDef):
            self.inner_function(s)
        elif not isinstance(s, ast.Pass):
            raise self.error(s, f"'{type(s).__name__}' statements are not supported in kernels")

    def inner_function(self, s: ast.FunctionDef) -> None:
        """``def f(...)`` inside a kernel (a closure numba inlines): positional parameters only; its body is read
        as a device function's (its ``return`` returns a value, and it is not inside the enclosing loop)."""
        a = s.args
        if a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults or s.decorator_list:
            raise self.error(s, f"the function {s.name!r} defined inside the kernel has **kwargs, keyword-only or "
                                "default arguments, or a decorator: give it positional parameters only")
        was_kernel, self.is_kernel = self.is_kernel, False
        try:
            self.block(s.body, in_loop=False)
        finally:
            self.is_kernel = was_kernel

    def assign(self, target) -> None:
        if isinstance(target, ast.Name):
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self.assign(elt)
        elif isinstance(target, ast.Subscript) and field_key(target) and isinstance(target.value, ast.Subscript):
            self.expr(target.value.value)  # ary[i]["x"] = v: a store of the record ary[i]
            self.index(target.value.slice)
            self.index(target.slice)
        elif isinstance(target, ast.Subscript):
            self.expr(target.value)
            self.index(target.slice)
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Subscript):
            self.expr(target.value.value)  # ary[i].x = v
            self.index(target.value.slice)
        elif isinstance(target, ast.Attribute):  # a record's field: rec.x = v
            self.expr(target.value)
        else:
            raise self.error(target, f"cannot assign to a {type(target).__name__} in a kernel")

    def augassign(self, s: ast.AugAssign) -> None:
        if type(s.op) not in BINARY_OPERATORS:
            raise self.error(s, f"operator {type(s.op).__name__} is not supported")
        if isinstance(s.target, ast.Name):
            self.expr(s.value)
        elif isinstance(s.target, ast.Subscript):  # a[i] += v: the array, the index, then v
            self.expr(s.target.value)
            self.index(s.target.slice)
            self.expr(s.value)
        elif isinstance(s.target, ast.Attribute):
            self.expr(s.target.value)
            self.expr(s.value)
        else:
            raise self.error(s, "augmented assignment to this target is not supported")

    def loop_for(self, s: ast.For) -> None:
        it = s.iter
        if s.orelse:
            raise self.error(s, "'for ... else' is not supported in kernels: set a flag before 'break' instead")
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and not self.ref(it.func).is_local and not it.keywords and 1 <= len(it.args) <= 3):
            self.iterable(s.iter)  # for x in items: the items, then the target, then the body
            self.assign(s.target)
        else:
            if not isinstance(s.target, ast.Name):
                raise self.error(s, "the loop variable must be a plain name")
            for a in it.args:
                self.expr(a)
        self.block(s.body, in_loop=True)

    def iterable(self, node) -> None:
        """What a ``for`` walks: a tuple, an array's elements, enumerate(), zip(), range() and reversed() of them."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and self.ref(node.func).kind == "builtin" \
                and not node.keywords:
            f, args = node.func.id, node.args
            if f == "enumerate" and len(args) in (1, 2):
                if len(args) == 2:
                    self.expr(args[1])  # the start is read before the items
                self.iterable(args[0])
                return
            if f == "zip" and args:
                for a in args:
                    self.iterable(a)
                return
            if f == "range" and 1 <= len(args) <= 3:
                for a in args:
                    self.expr(a)
                return
            if f == "reversed" and len(args) == 1:
                self.iterable(args[0])
                return
        self.expr(node)

    def exception(self, s: ast.Raise) -> None:
        """A ``raise``: its exception is built at compile time (numba needs its arguments constant)."""
        if s.exc is None:
            raise self.error(s, "a bare 'raise' cannot be used in a kernel: raise SomeError('message')")
        try:
            exc = const_eval(self.fs, s.exc, self.error)
        except UnsupportedConstruct:
            call = s.exc.func if isinstance(s.exc, ast.Call) else s.exc
            exc = const_eval(self.fs, call, self.error)  # the class, when its arguments are per-thread values
        if not (isinstance(exc, BaseException) or (isinstance(exc, type) and issubclass(exc, BaseException))):
            raise self.error(s, "'raise' needs an exception class or instance")

    # ---- expressions ---------------------------------------------------------------------------
    def index(self, node) -> None:
        for e in node.elts if isinstance(node, ast.Tuple) else [node]:
            if isinstance(e, ast.Slice):
                for x in (e.lower, e.upper, e.step):
                    if x is not None:
                        self.expr(x)
            else:
                self.expr(e)

    def expr(self, n) -> None:  # noqa: C901 - one branch per expression reads best
        if isinstance(n, ast.Constant):
            if not (isinstance(n.value, (int, float, bool, complex, str, bytes)) or n.value is None):
                raise self.error(n, f"constant {n.value!r} is not supported")
        elif isinstance(n, ast.Name):
            self.name(n)
        elif isinstance(n, ast.BinOp):
            if type(n.op) not in BINARY_OPERATORS:
                raise self.error(n, f"operator {type(n.op).__name__} is not supported")
            self.expr(n.left)
            self.expr(n.right)
        elif isinstance(n, ast.UnaryOp):
            self.expr(n.operand)
        elif isinstance(n, ast.Compare):
            self.expr(n.left)
            for op, right in zip(n.ops, n.comparators):
                if type(op) not in COMPARISONS:
                    raise self.error(n, f"comparison {type(op).__name__} is not supported in kernels")
                self.expr(right)
        elif isinstance(n, ast.BoolOp):
            for v in n.values:
                self.expr(v)
        elif isinstance(n, ast.IfExp):
            for part in (n.test, n.body, n.orelse):
                self.expr(part)
        elif isinstance(n, ast.Subscript):
            if self.enum_subscript(n) is None:
                self.expr(n.value)
                self.index(n.slice)
        elif isinstance(n, ast.Tuple):
            for e in n.elts:
                self.expr(e)
        elif isinstance(n, ast.Attribute):
            self.attribute(n)
        elif isinstance(n, ast.Call):
            self.call(n)
        elif isinstance(n, ast.Starred) and isinstance(n.ctx, ast.Load):  # f(*t), (*t, x) of a tuple
            self.expr(n.value)
        elif isinstance(n, ast.NamedExpr):
            raise self.error(n, "':=' is not supported in kernels")
        elif isinstance(n, CONTAINER_EXPRESSIONS):
            raise self.error(n, f"a {type(n).__name__} cannot be used inside a CUDA kernel: use numbers, tuples of "
                                f"numbers and arrays instead (cuda.local.array for a per-thread table)")
        else:
            raise self.error(n, f"'{type(n).__name__}' expressions are not supported in kernels")

    def name(self, n: ast.Name) -> None:
        """A name read as a value: a parameter or local, a module-level number, array or scalar type, a device
        function passed on."""
        ref = self.ref(n)
        kind = ref.kind
        if ref.is_local or n.id in ("True", "False", "None"):
            return
        if kind == "builtin":
            raise self.error(n, f"the builtin {n.id!r} cannot be used as a value in a kernel")
        if kind == "undefined":
            raise self.error(n, f"name {n.id!r} is not defined (not a parameter, local, or module-level constant)")
        if kind in ("constant", "scalar_type", "host_array", "device_array") or (
                kind == "device_function" and n.id in self.device_names):
            return
        raise self.error(n, f"{n.id!r} ({type(self.ns.get(n.id)).__name__}) cannot be used as a value in a kernel")

    def attribute(self, n: ast.Attribute) -> None:
        parts = self.fplan.dotted(n)
        if parts is not None:
            if parts[0] == "cuda" and ((len(parts) == 3 and parts[1] in THREAD_INDEXES and parts[2] in AXES)
                                       or parts[1:] in (["laneid"], ["warpsize"])
                                       or (len(parts) == 3 and parts[1] == "atomic" and parts[2] in ATOMICS)):
                return  # an index, the lane, the warp's size; an atomic passed as a value
            if parts[0] in ("math", "numpy") and len(parts) == 2 \
                    and isinstance(getattr(math if parts[0] == "math" else np, parts[1], None), float):
                return  # math.pi, np.nan, np.inf ...
            if parts[0] in ("numba", "numpy") and len(parts) >= 2:
                return  # a scalar type as a value
            raise self.error(n, f"'{'.'.join(parts)}' is not supported in kernels")
        root = n.value
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and self.ref(root).kind == "module":  # mymod.N: a number numba freezes
            text, value = module_attribute(n, self.ns)
            if _is_number(value):
                return
            raise self.error(n, f"{text or text_of(n)}: a kernel reads another module's numbers and calls its device "
                                "functions; this is neither")
        if self.enum_attribute(n) is not None:
            return
        self.expr(n.value)  # .shape, .size, .real, a record's field ... (checked when it runs)

    # ---- calls ---------------------------------------------------------------------------------
    def call(self, n: ast.Call) -> None:
        if isinstance(n.func, ast.Name):
            self.call_name(n)
            return
        if is_grid_sync(self.fplan, n):  # g.sync() of g = cuda.cg.this_grid()
            return
        if dotted_name(n.func) in self.device_names:  # a device function of another module: mymod.helper(x)
            if n.keywords:
                raise self.error(n, "keyword arguments to device functions are not supported")
            self.exprs(n.args)
            return
        parts = self.fplan.dotted(n.func)
        if parts is not None:
            self.call_dotted(parts, n)
            return
        if self.local_reduction(n) is not None:
            self.expr(n.func.value)
            return
        if isinstance(n.func, ast.Attribute) and n.func.attr not in METHODS:
            raise self.error(n, f"the method .{n.func.attr}() is not supported by gpuviz (it supports "
                                f"{', '.join('.' + x + '()' for x in sorted(METHODS | set(ARRAY_REDUCTIONS)))})"
                                ": index the array instead")
        if isinstance(n.func, ast.Attribute) and not n.keywords:  # a method of a value: x.bit_count()
            self.exprs(n.args)
            self.expr(n.func.value)
            return
        raise self.error(n, "only cuda.*, math.*, numpy/numba casts and device functions can be called in a "
                            "kernel: call a @cuda.jit(device=True) function for anything else")

    def exprs(self, nodes) -> None:
        for a in nodes:
            self.expr(a)

    def call_name(self, n: ast.Call) -> None:
        """A call of a plain name, by what the plan resolved it to."""
        fname = n.func.id
        ref = self.ref(n.func)
        if ref.kind == "inner_function" or ref.is_local or fname in self.device_names:
            if n.keywords:
                raise self.error(n, f"keyword arguments to {fname!r} are not supported: pass them by position"
                                 if ref.kind == "inner_function" else
                                 "keyword arguments to a function passed as a parameter are not supported"
                                 if ref.is_local else "keyword arguments to device functions are not supported")
            self.exprs(n.args)
            return
        if ref.kind == "builtin" and (fname in BUILTIN_CALLS or fname == "print"):
            self.exprs(n.args)
            return
        parts = self.fplan.chain(n.func)  # a function imported from a module: `from math import sqrt`
        if ref.kind == "operator" and parts and len(parts) == 2:
            op = parts[1]
            if op in OPERATOR_FUNCTIONS and len(n.args) == 2 and not n.keywords:
                self.exprs(n.args)
                return
            if op in UNARY_OPERATOR_FUNCTIONS and len(n.args) == 1:
                self.expr(n.args[0])
                return
        elif parts and len(parts) == 2:
            root, qual = parts
            if (root == "math" and qual in MATH_FUNCTIONS) or (root == "cmath" and qual in CMATH_FUNCTIONS) \
                    or root in ("cuda", "numpy", "numba"):
                self.call_dotted(parts, n)
                return
        if ref.kind == "device_function":
            raise self.error(n, f"device function {fname!r} was not found when the kernel was parsed")
        raise self.error(n, f"calling {fname!r} is not supported inside a kernel")

    def call_dotted(self, parts: list[str], n: ast.Call) -> None:
        """A call of a module's function: ``cuda.*``, ``math.*``, ``cmath.*``, ``operator.*``, numpy's and numba's
        casts and numpy's ufuncs."""
        root, rest = parts[0], parts[1:]
        if root == "cuda":
            self.call_cuda(parts, n)
            return
        if root == "operator" and len(rest) == 1 and rest[0] in OPERATOR_FUNCTIONS and len(n.args) == 2 \
                and not n.keywords:
            self.exprs(n.args)
            return
        if root == "cmath":
            if len(rest) == 1 and rest[0] in CMATH_FUNCTIONS:
                self.exprs(n.args)
                return
            raise self.error(n, f"cmath.{'.'.join(rest)}() is not supported by gpuviz's executor")
        if root == "math":
            if len(rest) == 1 and rest[0] in MATH_FUNCTIONS:
                self.exprs(n.args)
                return
            raise self.error(n, f"math.{'.'.join(rest)}() is not supported")
        if root in ("numpy", "numba"):
            name = rest[-1]
            if len(n.args) == 1 and not n.keywords and is_dtype_name(name):
                self.expr(n.args[0])  # a cast
                return
            if root == "numpy" and len(rest) == 1 and hasattr(np, name) and isinstance(getattr(np, name), np.ufunc):
                self.exprs(n.args)
                return
            raise self.error(n, f"{root}.{'.'.join(rest)}() is not supported in kernels")
        raise self.error(n, "unsupported call")

    def argument(self, parts: list[str], n: ast.Call, i: int, name: str | None = None):
        """The call's i-th positional argument, or its keyword ``name``; refused when it has neither."""
        if i < len(n.args):
            return n.args[i]
        kw = {k.arg: k.value for k in n.keywords}
        if name in kw:
            return kw[name]
        raise self.error(n, f"{'.'.join(parts)}: missing argument {name or i}")

    def call_cuda(self, parts: list[str], n: ast.Call) -> None:  # noqa: C901 - one branch per cuda.* call
        """A call of ``cuda.<rest>`` (a barrier, an atomic, a warp primitive, an array declaration, ...)."""
        rest = parts[1:]
        name = ".".join(rest)

        def arg(i, arg_name=None):
            return self.argument(parts, n, i, arg_name)

        if name in ("grid", "gridsize"):
            const_eval(self.fs, arg(0, "ndim"), self.error)
        elif name in _PLAIN_CUDA_CALLS or (name == "cg.this_grid" and not n.args):
            return
        elif name in PREDICATE_BARRIERS:
            self.expr(arg(0, "predicate"))
        elif name == "nanosleep":
            self.expr(arg(0, "ns"))
        elif name in WARP:
            self.exprs(n.args)
        elif name in ("shared.array", "local.array"):
            self.array_declaration(name, n, arg)
        elif name == "const.array_like":
            self.expr(arg(0, "ary"))
        elif rest and rest[0] == "atomic" and len(rest) == 2 and rest[1] in ATOMICS:
            self.exprs(n.args)
        elif name in INTRINSICS:
            self.expr(arg(0))
        elif rest[0] == "fp16" and len(rest) == 2 and rest[1] in FP16_FUNCTIONS:
            self.exprs(n.args)
        elif name in ("fma", "selp"):
            for i in range(3):
                self.expr(arg(i))
        elif vector_type(name) is not None:
            self.exprs(n.args)
        else:
            raise self.error(n, f"cuda.{name}() is not supported by gpuviz's executor")

    def array_declaration(self, name: str, n: ast.Call, arg) -> None:
        """``cuda.shared.array`` / ``cuda.local.array``: a constant shape and dtype, or (in a device function) ones it
        is given, known when it runs."""
        self.alignment(name, n)
        if is_constant(self.fplan, arg(0, "shape")) and is_constant(self.fplan, arg(1, "dtype")):
            const_eval(self.fs, arg(0, "shape"), self.error)
            dtype = const_eval(self.fs, arg(1, "dtype"), self.error)
            np_dtype(self.fs, dtype, n)
        else:
            self.expr(arg(0, "shape"))
            self.expr(arg(1, "dtype"))
