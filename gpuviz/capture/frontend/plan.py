"""The capture plan: a kernel read once, for every backend.

:func:`plan_for` reads a ``@cuda.jit`` kernel's source (and the device functions it reaches) once and
resolves it into a :class:`KernelPlan`:

* a :class:`Ref` for every name the source reads: a parameter, a local, a shared, local or constant array,
  a module-level host or device array, a device function, a constant, ``cuda.*``, ``math.*``/``numpy.*``,
  a builtin, or something a kernel cannot use;
* tables, per function: shared declarations (name, line, shape, dtype), local arrays, the module-level host
  arrays the kernel reads (frozen at compile time, as numba freezes them), device arrays, device functions
  and constants;
* the table of recorded *sites* (:class:`gpuviz.model.trace.Site`): every place in the source that records
  events (a subscript read or written, an atomic, a barrier, a warp primitive, the kernel's start and ends),
  numbered once. Every backend tags its events with these ids and the table travels in the trace;
* every diagnostic: one :class:`Diagnostic` per unsupported construct (construct, file, line, message).

What gpuviz supports is the front end's to say (:mod:`.support`): the plan reads every statement once and
keeps each refusal (a statement gpuviz cannot run does not stop the reading of the next). No back end is
imported or run to make a plan: each back end makes its own code from it when it first runs it (the CPU
executor's generator, the simulator's instrumentation, the GPU recorder), takes the plan's site ids, shared
declarations and host arrays instead of working them out again, refuses what the plan refuses, and keeps what
it made in its own cache, not on the plan.

This module is the one place a kernel's names are looked up (:func:`_resolve_names`): the support check, the
generator and the rewrites read the Refs (:meth:`FunctionPlan.ref`, :meth:`~FunctionPlan.dotted`,
:meth:`~FunctionPlan.chain`) and the tables, never the kernel's module, so a name cannot mean one thing to
one back end and another to the next.
"""

from __future__ import annotations

import ast
import builtins
import enum
import linecache
import os
import time
import types
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from ...model.trace import Site
from ..dtypes import to_dtype
from ..errors import UnsupportedConstruct
from .consteval import const_eval, construct_error, is_constant, np_dtype
from .constructs import ARRAY_REDUCTIONS, BACKEND_LIMITS, array_declaration, call_site_kind, refused_call
from .names import Diagnostic, Ref, is_grid_sync, is_this_grid, module_role, scalar_type_name
from .source import FunctionSource, assigned_names, collect_device_functions, is_device_function, parse_function, \
    python_function, reachable_functions
from .support import support_diagnostics

@dataclass(frozen=True)
class ArrayDecl:
    """A ``cuda.shared.array`` or ``cuda.local.array`` declaration. ``shape``/``dtype`` are None when a
    device function is given them as arguments (known when it runs); ``shape`` is (0,) for dynamic shared
    memory (sized by the launch; not counted in :attr:`KernelPlan.static_shared_bytes`)."""

    function: str
    name: str
    line: int
    shape: tuple[int, ...] | None
    dtype: str | None

    @property
    def nbytes(self) -> int:
        if self.shape is None or self.dtype is None:
            return 0
        return int(np.prod(self.shape, dtype=np.int64)) * to_dtype(self.dtype).itemsize


class SiteLine(int):
    """A recorded site's line number that also knows the site's id.

    The CPU executor's generated code passes one where it used to pass the line: the runtime reads
    ``.site`` when it records an event and uses the number itself for messages, as before."""

    site: int

    def __new__(cls, line: int, site: int):
        obj = super().__new__(cls, line)
        obj.site = site
        return obj

    def __reduce__(self):  # an error's ``line`` crosses from the capture worker to the window pickled
        return (SiteLine, (int(self), self.site))


@dataclass
class FunctionPlan:
    """One function (the kernel or a device function) of a plan."""

    fs: FunctionSource
    index: int
    is_kernel: bool
    refs: dict[tuple[int, int], Ref] = field(default_factory=dict)  # (line, col) of a Name -> what it is
    shared: list[ArrayDecl] = field(default_factory=list)
    local_arrays: list[ArrayDecl] = field(default_factory=list)
    host_arrays: dict[str, np.ndarray] = field(default_factory=dict)  # module-level numpy arrays it reads
    device_arrays: dict[str, object] = field(default_factory=dict)  # module-level device arrays it reads
    device_functions: dict[str, int] = field(default_factory=dict)  # name used -> function index
    constants: dict[str, object] = field(default_factory=dict)  # module-level numbers it reads
    enums: dict[str, type] = field(default_factory=dict)  # module-level enum classes it reads (their members)
    locals: frozenset = frozenset()  # the names bound in the function: its parameters and what it assigns
    site_ids: dict[tuple[str, int, int], int] = field(default_factory=dict)  # (kind, line, col) -> site id

    def ref(self, node: ast.Name) -> Ref | None:
        return self.refs.get((getattr(node, "lineno", None), getattr(node, "col_offset", None)))

    def chain(self, node) -> list[str] | None:
        """What ``node`` (a Name, or an attribute chain rooted at one) stands for as a dotted chain: the
        :meth:`dotted` chain of a module attribute, and also a name imported from a module (``sqrt`` read as
        ``['math', 'sqrt']``, ``syncthreads`` as ``['cuda', 'syncthreads']``; see :attr:`Ref.target`)."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        ref = self.ref(node)
        if ref is None or not ref.target:
            return None
        out = [*ref.target, *reversed(parts)]
        if out[0] == "numba" and len(out) > 1 and out[1] == "cuda":
            out = out[1:]
        return out

    def dotted(self, node) -> list[str] | None:
        """['cuda', 'threadIdx', 'x'] for ``cuda.threadIdx.x`` (a chain rooted at a module the plan resolved;
        ``numba.cuda.*`` reads as ``cuda.*``), None for anything else, as the plan read the names."""
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        ref = self.ref(root) if isinstance(root, ast.Name) else None
        if ref is None or len(ref.target) != 1:  # a module's chain, not a name imported from one
            return None
        return self.chain(node)

    def site(self, kind: str, node) -> int | None:
        """The site id of ``kind`` at ``node`` (a Subscript, a Call, a Return; None: the kernel's def line or
        implicit end), or None when the plan has no such site."""
        if node is None:
            line = self.fs.first_line if kind == "start" else self.fs.last_line
            return self.site_ids.get((kind, line, -1))
        return self.site_ids.get((kind, node.lineno, node.col_offset))

    def shared_at(self, line: int) -> ArrayDecl | None:
        for d in self.shared:
            if d.line == line:
                return d
        return None


@dataclass
class KernelPlan:
    root: FunctionSource
    functions: list[FunctionPlan]
    sites: list[Site]
    diagnostics: list[Diagnostic]
    debug: bool = False
    #: sites a backend asked for and the plan did not list (its events then carry site -1): none expected
    unplanned: list[tuple] = field(default_factory=list)
    build_seconds: float = 0.0  # reading the kernel into this plan (parse, resolve, check)
    #: the constructs of :data:`BACKEND_LIMITS` the kernel uses: (construct, file, line), in source order
    limited: list[tuple[str, str, int]] = field(default_factory=list)

    @property
    def kernel(self) -> FunctionPlan:
        return self.functions[0]

    def function(self, fs: FunctionSource) -> FunctionPlan:
        for fp in self.functions:
            if fp.fs.fn is fs.fn:
                return fp
        raise KeyError(f"{fs.name} is not a function of the plan of {self.root.name}")

    @property
    def shared_decls(self) -> list[ArrayDecl]:
        return [d for fp in self.functions for d in fp.shared]

    @property
    def static_shared_bytes(self) -> int:
        return sum(d.nbytes for d in self.shared_decls)

    def shared_names(self) -> dict[int, str]:
        """{declaration line: the variable it is assigned to} of the shared arrays."""
        return {d.line: d.name for d in self.shared_decls}

    @property
    def grid_sync(self) -> bool:
        """Whether the kernel or a device function it calls syncs the whole grid (``cuda.cg.this_grid().sync()``):
        numba-cuda launches such a kernel cooperatively."""
        return any(site.is_grid_barrier for site in self.sites)  # its sites say so (_function_sites)

    def site_line(self, kind: str, fp: FunctionPlan, node) -> int | SiteLine:
        """What the executor's generated code passes for a recorded site: a :class:`SiteLine`."""
        site = fp.site(kind, node)
        line = getattr(node, "lineno", None) or (fp.fs.first_line if kind == "start" else fp.fs.last_line)
        if site is None:
            self.unplanned.append((fp.fs.name, kind, line, getattr(node, "col_offset", -1)))
            return line
        return SiteLine(line, site)

    def refuse_on(self, backend: str, n_blocks: int = 1) -> None:
        """Raise UnsupportedConstruct for the first construct the plan accepts that ``backend`` does not model
        (:data:`BACKEND_LIMITS`), naming the construct and its file:line; nothing when the back end models them
        all. ``n_blocks``: the launch's blocks (a grid-wide barrier of one block is a block's barrier)."""
        for construct, file, line in self.limited:
            why = BACKEND_LIMITS.get(construct, {}).get(backend)
            if why is None or (construct == "grid.sync()" and n_blocks <= 1 and backend == "sim"):
                continue
            text = linecache.getline(file, line).strip()
            raise UnsupportedConstruct(f"{file}:{line}: {construct} is not supported on the {backend} backend: {why}"
                                       + (f"\n    {text}" if text else ""), file=file, line=line)

    def raise_if_unsupported(self) -> None:
        """Raise the first diagnostic as an UnsupportedConstruct (all of them on ``.diagnostics``)."""
        if self.diagnostics:
            raise unsupported(self.diagnostics)


def unsupported(diagnostics: list[Diagnostic]) -> UnsupportedConstruct:
    """The UnsupportedConstruct of a kernel's diagnostics: the first one's message, then the next five's first
    lines and how many more; all of them on its ``.diagnostics``."""
    first = diagnostics[0]
    message = first.message
    if len(diagnostics) > 1:
        others = "\n".join(f"  {d.file}:{d.line}: {d.message.splitlines()[0].split(': ', 1)[-1]}"
                           for d in diagnostics[1:6])
        more = len(diagnostics) - 6
        message += f"\n{len(diagnostics) - 1} more construct(s) gpuviz does not support:\n{others}"
        if more > 0:
            message += f"\n  ... and {more} more"
    exc = UnsupportedConstruct(message, file=first.file, line=first.line)
    exc.diagnostics = list(diagnostics)
    return exc


def _limited_constructs(fp: FunctionPlan) -> list[tuple[str, str, int]]:
    """The constructs of :data:`BACKEND_LIMITS` one function uses: (construct, file, line)."""
    fs = fp.fs
    out = []
    if fs.vararg:
        out.append(("*args of a kernel" if fp.is_kernel else "*args of a device function", fs.file, fs.first_line))
    for n in ast.walk(fs.tree):
        if isinstance(n, ast.FunctionDef) and n is not fs.tree:
            out.append(("a def inside a kernel", fs.file, n.lineno))
        elif isinstance(n, ast.Call) and is_grid_sync(fp, n):
            out.append(("grid.sync()", fs.file, n.lineno))
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and "." in _text(n.func) \
                and _text(n.func) in fp.device_functions:
            out.append(("a device function of another module", fs.file, n.lineno))
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "tuple" \
                and (fp.ref(n.func) or Ref("", "")).kind == "builtin":
            out.append(("tuple(...)", fs.file, n.lineno))
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) \
                and n.func.attr in ARRAY_REDUCTIONS and (fp.ref(n.func.value) or Ref("", "")).kind == "local_array":
            out.append((f".{n.func.attr}()", fs.file, n.lineno))
        elif isinstance(n, ast.Call) and refused_call(fp.chain(n.func)) is not None:
            out.append((refused_call(fp.chain(n.func)), fs.file, n.lineno))  # a cuda.* call a back end refuses
    # the constructs every back end models (a closure, tuple(...), .sum() of a local array) are read and dropped here
    return sorted((c for c in out if c[0] in BACKEND_LIMITS), key=lambda c: c[2])


# ---- reading ------------------------------------------------------------------------------------------
def _call_site_kind(fp: FunctionPlan, node: ast.Call) -> str | None:
    """The site kind of a call that records (atomic, barrier, warp), else None: read off the names' Refs and the
    construct table."""
    if is_grid_sync(fp, node):
        return "barrier"  # a grid-wide barrier: every thread of every block arrives before any goes on
    if isinstance(node.func, ast.Name) and (fp.ref(node.func) or Ref("", "")).kind == "inner_function":
        return None  # a closure's call records what its body does
    if isinstance(node.func, ast.Name) and (fp.ref(node.func) or Ref("", "")).is_local:
        return "atomic"  # a function a device function was given: recorded as the atomic it may be
    return call_site_kind(fp.chain(node.func))


def _index_texts(node) -> tuple[str, ...]:
    elts = node.elts if isinstance(node, ast.Tuple) else [node]
    out = []
    for e in elts:
        try:
            out.append(ast.unparse(e))
        except Exception:  # noqa: BLE001 - an exotic node ast cannot print back
            out.append("?")
    return tuple(out)


def _text(node) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001
        return "?"


def _function_sites(fp: FunctionPlan) -> list[tuple]:
    """(kind, line, col, array text, index texts, scope) of every recorded site of one function, in source order;
    scope is "grid" for a grid-wide barrier (``grid.sync()``), else "block"."""
    tree = fp.fs.tree
    aug_targets = {id(n.target) for n in ast.walk(tree) if isinstance(n, ast.AugAssign)}
    field_stores = set()  # ary[i] in ``ary[i].x = v`` and ``ary[i]["x"] = v``: a store of the record ary[i]
    field_targets = set()  # ary[i]["x"] itself there: not an access of its own (the record's store is)
    for n in ast.walk(tree):
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, (ast.AnnAssign,
                                                                                           ast.AugAssign)) else []
        stack = list(targets)
        while stack:
            t = stack.pop()
            if isinstance(t, (ast.Tuple, ast.List)):
                stack.extend(t.elts)
            elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Subscript):
                field_stores.add(id(t.value))
            elif (isinstance(t, ast.Subscript) and isinstance(t.value, ast.Subscript)
                  and isinstance(t.slice, ast.Constant) and isinstance(t.slice.value, str)):
                field_stores.add(id(t.value))
                field_targets.add(id(t))
    inner_returns = {id(r) for d in ast.walk(tree) if isinstance(d, ast.FunctionDef) and d is not tree
                     for r in ast.walk(d) if isinstance(r, ast.Return)}  # a closure's return ends the closure
    found = []
    if fp.is_kernel:
        found.append(("start", fp.fs.first_line, -1, "", (), "block"))
    for n in ast.walk(tree):
        if isinstance(n, ast.Subscript) and id(n) in field_targets:
            continue
        if isinstance(n, ast.Subscript):
            kinds = []
            if isinstance(n.ctx, ast.Load):
                kinds.append("load")
                if id(n) in field_stores:
                    kinds.append("store")
            elif isinstance(n.ctx, ast.Store):
                kinds.append("store")
                sl = n.slice
                is_slice = isinstance(sl, ast.Slice) or (isinstance(sl, ast.Tuple)
                                                         and any(isinstance(e, ast.Slice) for e in sl.elts))
                if id(n) in aug_targets or is_slice:  # a[i] += v reads a[i]; a[i:j] = b reads b's elements
                    kinds.append("load")
            for kind in kinds:
                found.append((kind, n.lineno, n.col_offset, _text(n.value), _index_texts(n.slice), "block"))
        elif isinstance(n, ast.Call):
            kind = _call_site_kind(fp, n)
            if kind == "atomic" and len(n.args) >= 2:
                found.append((kind, n.lineno, n.col_offset, _text(n.args[0]), _index_texts(n.args[1]), "block"))
            elif kind is not None:  # a grid.sync() holds back every block, not just its own: the frames need to know
                scope = "grid" if kind == "barrier" and is_grid_sync(fp, n) else "block"
                found.append((kind, n.lineno, n.col_offset, "", (), scope))
        elif isinstance(n, ast.Return) and fp.is_kernel and id(n) not in inner_returns:
            found.append(("end", n.lineno, n.col_offset, "", (), "block"))
    if fp.is_kernel:
        found.append(("end", fp.fs.last_line, -1, "", (), "block"))
    order = {k: i for i, k in enumerate(("start", "load", "store", "atomic", "barrier", "warp", "end"))}
    found.sort(key=lambda s: (s[0] == "end" and s[2] == -1, s[1], s[2], order[s[0]]))
    return found


def _attr_chains(tree) -> dict[int, str]:
    """{id of the root Name of a dotted chain: the longest chain's text} (``cuda.threadIdx.x``)."""
    attr_chain: dict[int, str] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute):
            root, chain = n, []
            while isinstance(root, ast.Attribute):
                chain.append(root.attr)
                root = root.value
            if isinstance(root, ast.Name):
                text = ".".join([root.id, *reversed(chain)])
                if len(text) > len(attr_chain.get(id(root), "")):
                    attr_chain[id(root)] = text
    return attr_chain


def _module_level_ref(fp: FunctionPlan, name: str, obj, device_names: set) -> tuple[str, tuple[str, ...]]:
    """(kind, target) of a module-level (or closure) name bound to ``obj``; fills the function's tables of
    constants, host and device arrays and enums."""
    role = module_role(obj)
    mod = getattr(obj, "__module__", None) or ""
    qual = getattr(obj, "__name__", None)
    if role is not None:
        return (role if role in ("cuda", "math", "numpy", "numba", "operator") else "math"), (role,)  # cmath too
    if isinstance(obj, types.ModuleType):
        return "module", ()  # another module: its device functions and numbers (mymod.helper(x), mymod.N)
    if name in device_names or is_device_function(obj):
        return "device_function", ()
    if isinstance(obj, (bool, int, float, complex, np.integer, np.floating, np.bool_)) or (
            isinstance(obj, tuple) and all(isinstance(x, (int, float)) for x in obj)):
        fp.constants[name] = obj  # a number, or a tuple of numbers: numba freezes it into the kernel
        return "constant", ()
    if isinstance(obj, np.ndarray):
        if name not in fp.host_arrays:
            fp.host_arrays[name] = np.array(obj, copy=True)  # frozen, as numba freezes it
        return "host_array", ()
    if hasattr(obj, "copy_to_host") and hasattr(obj, "shape") and hasattr(obj, "dtype"):
        fp.device_arrays[name] = obj
        return "device_array", ()
    if isinstance(obj, enum.EnumMeta):
        fp.enums[name] = obj
        return "enum", ()
    if scalar_type_name(obj) is not None:
        numpy_class = isinstance(obj, type) and issubclass(obj, np.generic)
        return "scalar_type", ("numpy" if numpy_class else "numba", scalar_type_name(obj))
    if mod in ("_operator", "operator") and isinstance(qual, str):
        return "operator", ("operator", qual)
    if mod in ("math", "cmath") and isinstance(qual, str):
        return "math", (mod, qual)
    if "cuda" in mod and mod.startswith(("numba", "numba_cuda")) and isinstance(qual, str):
        return "cuda", ("cuda", qual)  # from numba.cuda import syncthreads
    return "unsupported", ()


def _declared_kinds(fp: FunctionPlan) -> dict[str, str]:
    """{local name: kind} of the locals that are more than values: an array declaration's (x =
    cuda.shared.array(...)), a function defined inside the function (a closure), the grid group g =
    cuda.cg.this_grid()."""
    spaces = {"shared": "shared", "local": "local_array", "const": "const_array"}
    decl_kinds: dict[str, str] = {}
    for n in ast.walk(fp.fs.tree):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                and isinstance(n.value, ast.Call):
            parts = fp.dotted(n.value.func)
            if parts and parts[0] == "cuda" and parts[1:] in (["shared", "array"], ["local", "array"],
                                                               ["const", "array_like"]):
                decl_kinds[n.targets[0].id] = spaces[parts[1]]
    assigned = {n.id for n in ast.walk(fp.fs.tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    for n in ast.walk(fp.fs.tree):
        if isinstance(n, ast.FunctionDef) and n is not fp.fs.tree and n.name not in assigned:
            decl_kinds[n.name] = "inner_function"
        elif isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                and is_this_grid(fp, n.value):
            decl_kinds[n.targets[0].id] = "grid_group"
    return decl_kinds


def _resolve_names(fp: FunctionPlan, ns: dict, device_names: set) -> None:
    """A Ref for every Name the function reads, and its tables of module-level values: the one place a name
    of a kernel is looked up (the back ends read the Refs and the tables)."""
    attr_chain = _attr_chains(fp.fs.tree)
    local = fp.locals
    for n in ast.walk(fp.fs.tree):
        if not isinstance(n, ast.Name):
            continue
        name, text = n.id, attr_chain.get(id(n), n.id)
        target: tuple[str, ...] = ()
        if name in fp.fs.all_params:
            kind = "parameter"
        elif name in local:
            kind = "local"
        elif name in ("True", "False", "None"):
            kind = "constant"
        elif name not in ns:
            kind = "builtin" if hasattr(builtins, name) else "undefined"
        else:
            kind, target = _module_level_ref(fp, name, ns[name], device_names)
        fp.refs[(n.lineno, n.col_offset)] = Ref(kind, text, target)
    decl_kinds = _declared_kinds(fp)
    if decl_kinds:
        for key, ref in fp.refs.items():
            if ref.kind == "local" and ref.text.split(".")[0] in decl_kinds:
                fp.refs[key] = Ref(decl_kinds[ref.text.split(".")[0]], ref.text)


def _array_decls(plan: KernelPlan, fp: FunctionPlan, diagnostics: list[Diagnostic]) -> None:
    """The function's shared and local array declarations, sized from their constant shapes."""
    fs = fp.fs

    def error(node, what):
        return construct_error(fs, node, what)

    targets = {}
    for n in ast.walk(fp.fs.tree):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            targets[id(n.value)] = n.targets[0].id
    for node in ast.walk(fp.fs.tree):
        if not isinstance(node, ast.Call):
            continue
        space = array_declaration(fp.dotted(node.func))
        if space is None:
            continue
        name = targets.get(id(node), f"{space}@{node.lineno}")
        kw = {k.arg: k.value for k in node.keywords}
        shape_node = node.args[0] if node.args else kw.get("shape")
        dtype_node = node.args[1] if len(node.args) > 1 else kw.get("dtype")
        table = fp.shared if space == "shared" else fp.local_arrays
        try:
            if shape_node is None or dtype_node is None:
                raise error(node, f"cuda.{space}.array needs a shape and a dtype")
            if not (is_constant(fp, shape_node) and is_constant(fp, dtype_node)):
                table.append(ArrayDecl(fp.fs.name, name, node.lineno, None, None))  # sized when it runs
                continue
            shape = const_eval(fs, shape_node, error)
            dtype = np_dtype(fs, const_eval(fs, dtype_node, error), node)
            if space == "shared" and isinstance(shape, (int, np.integer)) and int(shape) == 0:
                # dynamic shared memory: its size is the launch's, kernel[grid, block, stream, nbytes]
                table.append(ArrayDecl(fp.fs.name, name, node.lineno, (0,), dtype))
                continue
            shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
            if space == "shared" and any(int(s) <= 0 for s in shape):
                raise error(node, f"shared array shape {shape} has an empty or negative dimension: give "
                                       "each dimension a positive size (shape 0 alone declares dynamic shared "
                                       "memory)")
            table.append(ArrayDecl(fp.fs.name, name, node.lineno, tuple(int(s) for s in shape), dtype))
        except UnsupportedConstruct as exc:
            if space == "local":  # the support check judges local arrays (support.SupportCheck.array_declaration)
                table.append(ArrayDecl(fp.fs.name, name, node.lineno, None, None))
            elif not any(d.file == fp.fs.file and d.line == node.lineno for d in diagnostics):
                diagnostics.append(Diagnostic("Call", fp.fs.file, node.lineno, str(exc)))


def build_plan(root: FunctionSource, *, debug: bool = False) -> KernelPlan:
    """The plan of ``root`` (its device functions already collected: :func:`collect_device_functions`)."""
    funcs = reachable_functions(root)
    index_of = {id(fs.fn): i for i, fs in enumerate(funcs)}
    plans = [FunctionPlan(fs, i, i == 0) for i, fs in enumerate(funcs)]
    sites: list[Site] = []
    diagnostics: list[Diagnostic] = []
    for fp in plans:
        fs = fp.fs
        try:
            fp.locals = frozenset(assigned_names(fs.tree) | set(fs.all_params))
        except UnsupportedConstruct as exc:
            diagnostics.append(Diagnostic("Global", fs.file, exc.line or fs.first_line, str(exc)))
            fp.locals = frozenset(fs.all_params)
        fp.device_functions = {name: index_of[id(sub.fn)] for name, sub in fs.all_device_functions().items()}
        _resolve_names(fp, fs.names(), set(fp.device_functions))
        for kind, line, col, array, index, scope in _function_sites(fp):
            fp.site_ids[(kind, line, col)] = len(sites)
            sites.append(Site(kind, line, fs.name, array, index, col, scope))
    plan = KernelPlan(root, plans, sites, diagnostics, debug)
    plan.limited = [c for fp in plans for c in _limited_constructs(fp)]
    # the front end's reading of what gpuviz supports, the same for every back end: every refusal is kept
    diagnostics.extend(support_diagnostics(plan))
    for fp in plans:
        _array_decls(plan, fp, diagnostics)
    return plan


def kernel_debug(kernel) -> bool:
    """Whether ``kernel`` was jitted with ``debug=True`` (numba-cuda's dispatcher or the simulator's)."""
    if getattr(kernel, "_debug", None):
        return True
    opts = getattr(kernel, "targetoptions", None)
    return bool(opts.get("debug")) if isinstance(opts, dict) else False


#: plans, one per kernel object (a dispatcher, or a plain function), least recently used last out.
#: numba compiles a dispatcher once and freezes what the compile read: closure values, globals (host arrays
#: too), device functions, shared-array shapes. Keyed by the object itself (a kernel factory's closures are
#: distinct objects over one code object), and by its file's mtime so that an edited, reloaded file recompiles.
#: An entry holds its kernel weakly and goes when the kernel does: a kernel nobody holds frees its plan, and with
#: it what the back ends keep per plan (their caches hold the plan weakly).
_cache: "OrderedDict[tuple, tuple]" = OrderedDict()
_CACHE_SIZE = 256


def _held_weakly(kernel, key: tuple):
    """A callable that returns ``kernel`` while it lives (None after), whose death drops ``_cache[key]``."""

    def forget(ref, cache=_cache):  # the cache bound now: a kernel may die while the interpreter shuts down
        entry = cache.get(key)
        if entry is not None and entry[0] is ref:  # not a later entry under the same key
            del cache[key]

    try:
        return weakref.ref(kernel, forget)
    except TypeError:  # an object that takes no weak reference is held (its id cannot be reused while cached)
        return lambda: kernel


def plan_for(kernel) -> KernelPlan:
    """The plan of ``kernel`` (read once per kernel object; see ``_cache``)."""
    fn = python_function(kernel)
    try:
        mtime = os.path.getmtime(fn.__code__.co_filename)
    except OSError:
        mtime = 0.0
    debug = kernel_debug(kernel)
    key = (id(kernel), fn.__code__, mtime, debug)
    hit = _cache.get(key)
    if hit is not None and hit[0]() is kernel:  # a dead kernel's id may be a new object's
        _cache.move_to_end(key)
        return hit[1]
    t0 = time.perf_counter()
    root = parse_function(fn)
    collect_device_functions(root)
    plan = build_plan(root, debug=debug)
    plan.build_seconds = time.perf_counter() - t0
    _cache[key] = (_held_weakly(kernel, key), plan)
    while len(_cache) > _CACHE_SIZE:
        _cache.popitem(last=False)
    return plan
