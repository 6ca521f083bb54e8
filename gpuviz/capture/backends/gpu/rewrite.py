"""The per-thread rewrite for a real GPU: the kernel's own code, recording into device arrays.

:class:`~gpuviz.capture.backends.rewrite.RewriteBase` (the per-thread rewrite the simulator shares) wraps every access in a
``__gv_*`` call that a Python recorder resolves at run time by object identity. A GPU has no object
identity, so :class:`GpuRewriter` runs that rewrite with its recording hooks (``rec``, ``rec_stmt``,
``bind_temp``, ``device_call``) overridden to emit GPU recorder calls directly (nothing is read back out of
the rewritten tree), deciding statically which names are recorded arrays:

* kernel parameters bound to array arguments, ``cuda.shared.array`` results and module-level numpy
  arrays get a fixed array id (an index into ``launch.arrays``);
* a device function gets one extra ``__gv_a_<param>`` argument per parameter: the caller passes the id of
  the array it hands over (a constant, or its own ``__gv_a_`` argument), ``-1`` for anything else, so
  ``load_tile(K, k_tile, ...)`` records K and k_tile;
* anything else that is subscripted (local arrays, ``x.shape[0]``, tuples) is not recorded, as on the
  simulator and in the CPU executor.

Each ``__gv_*`` call becomes a call of a recorder device function (:func:`make_recorders`) that also
takes the thread's recording state (``__gv_s``, a small local array that the compiler keeps in
registers) and the trace buffers, which are extra kernel parameters (:data:`BUFFERS`), one device array
per field (structure of arrays: see DESIGN.md "Recording on a GPU").

Per event the device writes ``code`` (int32: ``site << 8 | (array id + 1)``; the site is the construct's id
in the capture plan's site table (:mod:`gpuviz.capture.frontend.plan`), which the host maps back to (kind, line) and
which the events keep as their ``site``) and, for memory events, the flat element
``index``. START, BARRIER, WARP_OP and END events (every event with ``timestamps="all"``) also go to a
second, "timed" stream: ``%globaltimer`` and ``%smid``. Block, thread and sequence number are not
written at all: each thread's (or warp's) events sit contiguously at an offset the host computed from its
count (a counting pass's, or a first recording run's into guessed room: :mod:`.launch`), so the host derives them.

Layouts (``uniform``, a compile-time choice made by the host from the counts): when every warp needs
about as many slots as the largest, each slot's first position is computed from its warp number and
that largest count, so a thread loads nothing to find where to write; otherwise it reads its offset from
a table the host filled with exclusive prefix sums. Either way the sizes are exact (a slot gets at most
its warp's largest count), and whatever would not fit is counted in ``drop``, never silently lost.

Per-warp mode (``mode="warp"``): one record per instruction that lane 0 of a warp executes, in lane 0's
program order: the event's code, the mask of lanes converged with lane 0 there (``cuda.activemask()``)
and the element index of *every* lane in that mask. A record is one row of four fields (code, mask,
base, stride) in the ``idx`` buffer. The indices are stored exactly but compactly: when the converged
lanes' indices are ``base + lane * stride`` (checked with a warp vote, ``all_sync``) the record holds them
so; otherwise its stride is :data:`SLAB_MARK` and the lanes write their own indices into the next 32-wide
row of ``slab`` (one coalesced 128-byte store per warp). Lanes that run code while diverged from lane 0
(lane 0 elsewhere or finished) are not recorded; each counts the events it ran so, and the total comes
back in ``drop[3]``.

A recording kernel is bound by the instructions it issues, so the common case costs as few as it can:

* *Converged* records (all 32 lanes here) are numbered by a counter that every lane keeps and that is the
  same in every lane (every lane takes part in every converged record), so no lane asks another where to
  write, and in straight-line code the compiler knows the number outright. Record k is *staged* in the
  registers of lane ``k mod 32`` (its code, base and stride; its mask is the full mask); each lane writes
  the record it holds as one 16-byte row when the 32 lanes' stage is full, at END, or, for a lane that
  leaves early, at its own END. Converged rows fill the start of the warp's slot.
* *Diverged* records (some lanes elsewhere, lane 0 here) are stored at once by lane 0, one row each, in a
  second part of the slot, and ``code`` holds, for each, how many converged records came before it, so
  the host puts the two streams back in program order.

``stride`` and ``mask`` stay in the kernel signature with one element each, unused in this mode.

Compiled variants come from one rewritten source, chosen by constants the compiler folds away:
``count`` (count events per slot), ``record`` (write them), and the user's own kernel untouched as the
plain variant (gpu.py), so the plain PTX holds no recording at all. With ``split=True`` (recording
chosen blocks) the kernel is ``if <this block is recorded>: <instrumented body> else: <the user's body>``:
one branch per thread at entry, and the blocks that are not recorded run the user's own code.
``record="global"`` leaves every shared-memory access (loads, stores, atomics) out of the recording (the
shared arrays are still listed); global loads, stores and atomics, barriers and warp operations stay.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from ....model.trace import ArrayInfo
from ...dtypes import to_dtype
from ...errors import UnsupportedConstruct
from ...frontend.consteval import fold
from ...frontend.source import FunctionSource, assigned_names
from ..rewrite import PREFIX, RewriteBase, device_alias
from .bindings import _is_view_expr, compile_time_locals
from .layout import (BUF_NAMES, MAX_INDEX_DIMS, PARAM_NAMES, SITE_AT, SITE_BAR, SITE_END,
                     SITE_KIND_NAMES, SITE_LD, SITE_ST, SITE_START, SITE_WARP, STATE, STATE_LEN)

@dataclass
class BuildInfo:
    """What the host needs to decode a recording: the arrays (shared by every function) and the plan's sites."""

    arrays: list[ArrayInfo] = field(default_factory=list)
    #: the capture plan's site table (gpuviz.model.trace.Site): the recorded codes hold these ids
    sites: list = field(default_factory=list)
    _array_keys: dict = field(default_factory=dict)
    #: (id of a device function, parameter) that some call passes a value that is no array to index (a number,
    #: a tuple, one record): the callee does not record through it (a recorder call would not compile there)
    not_arrays: set = field(default_factory=set)
    #: {id of a device function: its parameters some call passes a view (``f(a[i, :])``)}: each also gets the
    #: view's byte offset and its array's item size (:func:`view_parameters`)
    view_params: dict = field(default_factory=dict)

    def site(self, kind: int, site: int) -> int:
        """The plan's site id ``site``, checked to be a site of ``kind`` that a code can hold."""
        if not 0 <= site < len(self.sites) or SITE_KIND_NAMES[kind] != self.sites[site].kind:
            raise UnsupportedConstruct(f"internal error: the GPU recorder was given site {site} as a "
                                       f"{SITE_KIND_NAMES[kind]} site, which the kernel's plan does not list")
        if len(self.sites) >= 1 << 23:
            raise UnsupportedConstruct("the kernel has too many recorded source sites for gpuviz's GPU recorder")
        return site

    def array(self, key, info: ArrayInfo) -> int:
        aid = self._array_keys.get(key)
        if aid is None:
            aid = len(self.arrays)
            if aid >= 255:
                raise UnsupportedConstruct("gpuviz's GPU recorder handles at most 255 distinct arrays per kernel")
            self.arrays.append(info)
            self._array_keys[key] = aid
        return aid

    def decode_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """(site kind, site line) arrays indexed by site id."""
        kinds = np.array([SITE_KIND_NAMES.index(s.kind) for s in self.sites] or [0], dtype=np.uint8)
        lines = np.array([s.line for s in self.sites] or [-1], dtype=np.int32)
        return kinds, lines


def _name(n: str, ctx=None) -> ast.Name:
    return ast.Name(n, ctx or ast.Load())


def _bufs() -> list[ast.Name]:
    return [_name(b) for b in BUF_NAMES]


def _call(fn: str, args: list) -> ast.Call:
    return ast.Call(func=_name(PREFIX + fn), args=args, keywords=[])


class GpuRewriter(RewriteBase):
    """The per-thread rewrite the simulator shares, lowered to GPU recorder calls (see the module docstring)."""

    runtime_rewrites = False  # views and calls through parameters stay as numba compiles them

    def __init__(self, fs: FunctionSource, *, is_kernel: bool, info: BuildInfo, array_args: dict[str, ArrayInfo],
                 record: str = "all", block_1d: bool = False, dynamic_shared_bytes: int = 0, plan=None,
                 bindings: dict | None = None, c_contiguous: frozenset = frozenset()):
        super().__init__(fs, is_kernel=is_kernel, plan=plan)
        self.c_contiguous = c_contiguous  # kernel parameters the launch passes C-contiguous arrays
        #: what numba compiles as constants that the plan leaves to run time: the device function's parameters
        #: that every call passes the same constant (``cuda.shared.array(n, dtype)`` with n, dtype given by the
        #: caller) and the function's locals bound once to a constant (``N = 100``)
        self.constants = compile_time_locals(fs, bindings or {})
        self.info = info
        if not info.sites:
            info.sites = list(self.plan.sites)
        self.array_args = array_args  # kernel: parameters bound to arrays at this launch
        # {line: (shape, dtype)} of the plan's shared declarations with constant shapes; a dynamic one (shape 0)
        # holds as many elements as the launch's ``dynamic_shared_bytes`` fit
        self.shared_decls = {
            d.line: ((int(dynamic_shared_bytes) // to_dtype(d.dtype).itemsize,) if d.shape == (0,) else d.shape, d.dtype)
            for d in self.fplan.shared if d.shape is not None}
        for line, (shape, dtype) in self.resolved_shared_decls().items():
            self.shared_decls[line] = ((int(dynamic_shared_bytes) // to_dtype(dtype).itemsize,) if shape == (0,)
                                       else shape, dtype)
        self.skip_shared = record == "global"  # record="global": shared loads/stores are not recorded
        self.members: dict[tuple[str, int], int] = {}  # (tuple parameter, k): id of the array x[k] (_init_arrays)
        self.lane_linear = self.lane_linear_names() if (is_kernel and block_1d) else set()
        #: the device functions it calls, by the name the rewritten call goes by (``mymod.helper``'s instrumented copy
        #: is called by a name of its own: rewrite.device_alias)
        self.callees = {device_alias(name): sub for name, sub in fs.device_functions.items()}

    def atomic_call(self, node):
        """Also ``binop(ary, idx, v)`` for a parameter every call binds to a ``cuda.atomic`` function (numba-cuda's
        test_atomics passes ``cuda.atomic.add`` into a device function): recorded as that atomic, as the
        simulator's recorder and the CPU executor record it."""
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self.fs.params
                and not node.keywords and len(node.args) >= 3
                and _atomic_name(self.constants.get(node.func.id)) not in (None, "compare_and_swap", "cas")):
            pre, names = [], []
            for a in node.args:
                t = self.fresh()
                pre.append(self.bind_temp(t, self.visit(a)))
                names.append(t)
            pre.extend(self.rec_stmt("at", _name(names[0]), _name(names[1]), line=node.lineno,
                                     site=self.site("atomic", node)))
            return pre, ast.Call(func=node.func, args=[_name(n) for n in names], keywords=[])
        return super().atomic_call(node)

    def visit_Call(self, node):
        node = super().visit_Call(node)
        if isinstance(node, ast.Call) and self.is_shared_decl(node):
            # a shape the callers give as an argument (the same constant at every call) is written in as that
            # constant: numba folds it so too, and then needs no literal retyping of the parameter
            kw = {k.arg: k for k in node.keywords}
            shape_node = node.args[0] if node.args else (kw["shape"].value if "shape" in kw else None)
            params = set(self.fs.params)
            if shape_node is not None and any(isinstance(n, ast.Name) and n.id in params for n in ast.walk(shape_node)):
                value = fold(shape_node, self.fs, self.constants)
                literal = _shape_literal(value)
                if literal is not None:
                    if node.args:
                        node.args[0] = literal
                    else:
                        kw["shape"].value = literal
        return node

    def resolved_shared_decls(self) -> dict[int, tuple[tuple[int, ...], str]]:
        """{line: (shape, dtype)} of the shared declarations the plan sizes at run time, read from
        :attr:`constants` (numba needs them constant too: it compiles them into the kernel)."""
        out = {}
        unsized = {d.line for d in self.fplan.shared if d.shape is None}
        for node in ast.walk(self.fs.tree):
            if not (isinstance(node, ast.Call) and node.lineno in unsized and self.is_shared_decl(node)):
                continue
            kw = {k.arg: k.value for k in node.keywords}
            shape_node = node.args[0] if node.args else kw.get("shape")
            dtype_node = node.args[1] if len(node.args) > 1 else kw.get("dtype")
            shape, dtype = (fold(n, self.fs, self.constants) for n in (shape_node, dtype_node))
            if isinstance(shape, (int, np.integer)):
                shape = (int(shape),)
            try:
                dtype = str(np.dtype(getattr(dtype, "name", None) or dtype))
            except TypeError:
                continue
            if isinstance(shape, tuple) and shape and all(isinstance(x, (int, np.integer)) and x >= 0 for x in shape):
                out[node.lineno] = (tuple(int(x) for x in shape), dtype)
        return out

    def lane_linear_names(self) -> set[str]:
        """Kernel variables bound once, to the thread's global index in a 1-D block: ``cuda.grid(1)`` or
        ``blockIdx.x * blockDim.x + threadIdx.x``. In such a block, lane l of a warp holds lane 0's value
        plus l, so a per-warp record of an access ``a[i]`` needs no warp vote to find its lanes' indices
        (and the value is never negative: no wraparound)."""
        stores: dict[str, int] = {}
        for node in ast.walk(self.fs.tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                stores[node.id] = stores.get(node.id, 0) + 1
        out = set()
        for st in self.fs.tree.body:
            if (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)
                    and stores.get(st.targets[0].id) == 1 and st.targets[0].id not in self.fs.params
                    and self.is_global_index(st.value)):
                out.add(st.targets[0].id)
        # a closure's parameter of the same name is another variable
        return out - {a.arg for n in ast.walk(self.fs.tree) if isinstance(n, ast.FunctionDef) and n is not self.fs.tree
                      for a in n.args.args}

    def is_global_index(self, node) -> bool:
        if isinstance(node, ast.Call):
            return (self.dotted(node.func) == ["cuda", "grid"] and len(node.args) == 1 and not node.keywords
                    and isinstance(node.args[0], ast.Constant) and node.args[0].value == 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            for prod, tx in ((node.left, node.right), (node.right, node.left)):
                if (self.dotted(tx) == ["cuda", "threadIdx", "x"] and isinstance(prod, ast.BinOp)
                        and isinstance(prod.op, ast.Mult)
                        and sorted([self.dotted(prod.left) or [], self.dotted(prod.right) or []])
                        == [["cuda", "blockDim", "x"], ["cuda", "blockIdx", "x"]]):
                    return True
        return False

    # ---- array ids --------------------------------------------------------------------------------------
    def _init_arrays(self) -> None:
        """Which names are recorded arrays, before the rewrite: the kernel's parameters bound to arrays at this
        launch (a device function's: the id its caller passes in ``__gv_a_<param>``) and the module-level host
        arrays the plan found; shared arrays join as their declarations are rewritten, temporaries bound to an
        array as they are bound (:meth:`bind_temp`)."""
        # name -> array id (int) or the name of the variable holding it (device-function parameters)
        self.arrays: dict[str, int | str] = {}
        # names every assignment of which is a tuple display of one length (``bin = (tx, ty)``), and the
        # temporaries bound to an index tuple (``a[i, j] op= v``, an atomic's index): recorded element by element
        self.index_tuples: dict[str, int] = {}
        tuple_stores: dict[str, set] = {}
        for n in ast.walk(self.fs.tree):
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    if isinstance(t, ast.Name):
                        tuple_stores.setdefault(t.id, set()).add(len(n.value.elts) if isinstance(n.value, ast.Tuple)
                                                                  else None)
        self.index_tuples.update({name: next(iter(lens)) for name, lens in tuple_stores.items()
                                  if len(lens) == 1 and None not in lens and name not in self.fs.params})
        self.rebound = assigned_names(self.fs.tree)
        subscripted = {n.value.id for n in ast.walk(self.fs.tree)
                       if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)}
        for p in self.fs.params:
            if self.is_kernel and p not in self.array_args:
                continue
            if not self.is_kernel and p in self.constants and not hasattr(self.constants[p], "shape"):
                continue  # every call passes it a constant that is no array (a shape, a dtype, a flag)
            if not self.is_kernel and (id(self.fs.fn), p) in self.info.not_arrays:
                continue  # a call passes it a number, a tuple or one record (BuildInfo.not_arrays)
            if p in self.rebound and not self.only_reshaped(p):
                if p in subscripted:
                    raise self.error(self.fs.tree, f"parameter {p!r} is indexed and also assigned to inside {self.fs.name}; "
                                                   "gpuviz records an array by its name, so give the new value another name")
                continue  # a scalar parameter reused as a variable
            if self.is_kernel:
                self.arrays[p] = self.info.array(("param", p), self.array_args[p])
            else:
                self.arrays[p] = PREFIX + "a_" + p
        for name, obj in self.fplan.host_arrays.items():  # module-level host arrays the plan found it reading
            self.arrays[name] = self.info.array(("const", name), ArrayInfo.of(name, obj.shape, to_dtype(obj.dtype), "global"))
        # the arrays in a tuple parameter (``x[0][i]``), and names bound only to one of them (``v0 = data[0]``,
        # in each branch of an if): recorded as the CPU executor names them, ``x[0]``
        if self.is_kernel:
            for name in self.array_args:
                base, _, rest = name.partition("[")
                if rest and rest[:-1].isdigit() and rest.endswith("]") and base in self.fs.params \
                        and base not in self.rebound:
                    self.members[(base, int(rest[:-1]))] = self.info.array(("param", name), self.array_args[name])
        if self.members:
            self._init_member_names()
        once = {n for n in self.rebound if n not in self.rebound_more_than_once()}
        c_order = {p for p in self.c_contiguous if p in self.arrays and p not in self.rebound}
        c_order |= {name for name in self.fplan.host_arrays if self.fplan.host_arrays[name].flags["C_CONTIGUOUS"]}
        for n in ast.walk(self.fs.tree):
            # y = X.reshape(shape) of a C-contiguous X: y[i, j] is X's element at y's C-order flat index, the
            # index the recorder computes from y's own shape (the simulator's recorder maps it so too)
            if (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
                    and n.targets[0].id in once and isinstance(n.value, ast.Call) and not n.value.keywords
                    and isinstance(n.value.func, ast.Attribute) and n.value.func.attr == "reshape"
                    and isinstance(n.value.func.value, ast.Name) and n.value.func.value.id in c_order
                    and isinstance(self.arrays.get(n.value.func.value.id), int)):
                self.arrays[n.targets[0].id] = self.arrays[n.value.func.value.id]
            # C = cuda.const.array_like(HOST): C's elements are HOST's, recorded as HOST's (as the other backends do)
            if (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
                    and n.targets[0].id in once and isinstance(n.value, ast.Call) and len(n.value.args) == 1
                    and not n.value.keywords and self.dotted(n.value.func) == ["cuda", "const", "array_like"]
                    and isinstance(n.value.args[0], ast.Name) and isinstance(self.arrays.get(n.value.args[0].id), int)):
                self.arrays[n.targets[0].id] = self.arrays[n.value.args[0].id]

    def _init_member_names(self) -> None:
        """Names bound only to one array of a tuple parameter (``v0 = data[0]``, in each branch of an if): that
        array."""
        bound: dict[str, set] = {}
        for n in ast.walk(self.fs.tree):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                bound.setdefault(n.targets[0].id, set()).add(self.member_of(n.value))
        stores: dict[str, int] = {}
        for n in ast.walk(self.fs.tree):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                stores[n.id] = stores.get(n.id, 0) + 1
        assigns = {name: sum(1 for n in ast.walk(self.fs.tree) if isinstance(n, ast.Assign) and len(n.targets) == 1
                             and isinstance(n.targets[0], ast.Name) and n.targets[0].id == name) for name in bound}
        for name, members in bound.items():
            if len(members) == 1 and None not in members and assigns[name] == stores.get(name) \
                    and name not in self.fs.params:
                self.arrays[name] = next(iter(members))

    def _init_aliases(self) -> None:
        """Local names bound to arrays by plain assignment: ``v = a``, or ``v = a`` in one branch and ``v = b`` in
        the other (an array per thread), a name otherwise only a ``range`` loop's counter (numba-cuda's test_ssa
        issue 5493 rebinds its counter, ``t = B``). Each such assignment also sets ``__gv_a_v`` to the id of the
        array it binds (:meth:`stmt`), so ``v[i]`` is recorded as an element of the array the thread bound, as the
        other backends record it. A name also bound in any other way (a tuple, a call's result, unpacking) stays
        unrecorded, as before."""
        self.aliases: set[str] = set()
        shared = {n.targets[0].id for n in ast.walk(self.fs.tree)
                  if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
                  and self.is_shared_decl(n.value)}
        binds: dict[str, list] = {}
        for n in ast.walk(self.fs.tree):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                array = isinstance(n.value, ast.Name) and (n.value.id in self.arrays or n.value.id in shared)
                binds.setdefault(n.targets[0].id, []).append("array" if array else "other")
            elif isinstance(n, ast.For) and isinstance(n.target, ast.Name):
                ref = self.fplan.ref(n.iter.func) if isinstance(n.iter, ast.Call) else None
                counter = ref is not None and ref.kind == "builtin" and ref.text == "range"
                binds.setdefault(n.target.id, []).append("counter" if counter else "other")
        stores: dict[str, int] = {}
        for n in ast.walk(self.fs.tree):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                stores[n.id] = stores.get(n.id, 0) + 1
        indexed = {n.value.id for n in ast.walk(self.fs.tree) if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)}
        for name, kinds in binds.items():
            if (name in self.fs.params or name in self.arrays or name in self.views or name in shared
                    or name not in indexed or stores.get(name) != len(kinds) or "other" in kinds or "array" not in kinds):
                continue
            self.aliases.add(name)
            self.arrays[name] = PREFIX + "a_" + name

    def member_of(self, node) -> int | None:
        """The array id of ``x[k]``, an array in the tuple parameter ``x`` (None for anything else)."""
        if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and isinstance(node.slice, ast.Constant)
                and isinstance(node.slice.value, int) and not isinstance(node.slice.value, bool)):
            return self.members.get((node.value.id, node.slice.value))
        return None

    def only_reshaped(self, p: str) -> bool:
        """Whether every assignment to kernel parameter ``p`` is ``p = p.reshape(...)`` of the C-contiguous array the
        launch passes (numba-cuda's test_ssa): each element keeps its C-order flat index, which the recorder
        computes from the shape ``p`` has where it is indexed."""
        if not (self.is_kernel and p in self.c_contiguous):
            return False
        stores = [n for n in ast.walk(self.fs.tree) if isinstance(n, ast.Name) and n.id == p and isinstance(n.ctx, ast.Store)]
        reshapes = [n for n in ast.walk(self.fs.tree)
                    if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
                    and n.targets[0].id == p and isinstance(n.value, ast.Call) and not n.value.keywords
                    and isinstance(n.value.func, ast.Attribute) and n.value.func.attr == "reshape"
                    and isinstance(n.value.func.value, ast.Name) and n.value.func.value.id == p]
        return bool(stores) and len(stores) == len(reshapes)

    def aid_of(self, node) -> ast.expr | None:
        """The array id expression of a subscripted base, None when it is not a recorded array.

        With ``record="global"`` a shared array counts as not recorded: its loads, stores and atomics are
        left out, and device functions receive it as "not an array" (-1), so theirs are left out too.
        """
        member = self.member_of(node)
        if member is not None:
            return ast.Constant(member)
        if (isinstance(node, ast.Attribute) and node.attr in ("real", "imag") and isinstance(node.value, ast.Name)
                and node.value.id in self.arrays):
            # values.real[i] (cuda.atomic.add(values.real, i, 1)): element i of the complex array, as the other
            # backends record it
            return self.aid_of(node.value)
        return self._aid_of_name(node)

    def _aid_of_name(self, node) -> ast.expr | None:
        if isinstance(node, ast.Name) and node.id in self.arrays:
            v = self.arrays[node.id]
            if isinstance(v, int):
                if self.skip_shared and self.info.arrays[v].space == "shared":
                    return None
                if self.info.arrays[v].shape == ():
                    return None  # one record (a numpy.void argument): rec[0], rec["x"] are its fields
                return ast.Constant(v)
            return _name(v)
        return None

    def code(self, kind: int, site: int, aid: ast.expr | None) -> ast.expr:
        """``site << 8 | (array id + 1)`` for the plan's site ``site`` (see the module docstring)."""
        site = ast.Constant(self.info.site(kind, site) << 8)
        if aid is None:
            return site
        if isinstance(aid, ast.Constant):
            return ast.Constant(site.value | (aid.value + 1))
        # a device function's array argument: -1 (not an array) gives array bits 0, which records nothing
        return ast.BinOp(site, ast.Add(), ast.BinOp(aid, ast.Add(), ast.Constant(1)))

    def rebound_more_than_once(self) -> set[str]:
        counts: dict[str, int] = {}
        for node in ast.walk(self.fs.tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                counts[node.id] = counts.get(node.id, 0) + 1
        return {n for n, c in counts.items() if c > 1}

    def mem(self, kind: int, base, idx, site: int, line: int) -> ast.expr | None:
        """A recorder call for an access of ``base[idx]``; None when base is not a recorded array."""
        if not (isinstance(base, ast.Name) and base.id in self.arrays) and self.member_of(base) is None:
            view = self.view_of(base)
            if view is not None:
                return self.view_mem(kind, base, idx, site, line, view)
        aid = self.aid_of(base)
        if aid is None:
            return None
        elts = idx.elts if isinstance(idx, ast.Tuple) else [idx]
        if any(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in elts):
            # rec["x"] on one record: a field, kept as numba compiles it (a recorder call in the index would take
            # the field name where numba needs it literal); not recorded
            return None
        if isinstance(idx, ast.Name) and idx.id in self.index_tuples:
            elts = [ast.Subscript(_name(idx.id), ast.Constant(k), ast.Load()) for k in range(self.index_tuples[idx.id])]
        if len(elts) > MAX_INDEX_DIMS:
            raise self.error(SimpleNamespace(lineno=line), f"gpuviz records arrays of up to {MAX_INDEX_DIMS} dimensions")
        fn = f"r_mem{len(elts)}"
        if (len(elts) == 1 and isinstance(elts[0], ast.Name) and elts[0].id in self.lane_linear
                and isinstance(aid, ast.Constant) and len(self.info.arrays[aid.value].shape) == 1):
            fn = "r_mem1_lane_linear"  # a[i] with i the global thread index: lane l's index is lane 0's + l
        return _call(fn, [_name(STATE), *_bufs(), self.code(kind, site, aid), copy.deepcopy(base), *elts])

    # ---- views: a[i:j], a[i, :], their .view(dtype) and .reshape(...) ------------------------------------
    # numba makes the view; gpuviz records each element read or written through it as the element of the
    # array it views, as the other backends do. The element's byte offset from that array's first element is
    # the view's own offset (worked out where the view is made, from the slice bounds and the strides of what
    # it slices) plus the index times the view's strides; over the array's item size that is its flat index,
    # the index the recorder stores (the array is C-contiguous: a parameter the launch passes so, a shared or
    # a module-level array).
    def _init_views(self) -> None:
        #: name -> (array id expression, item size expression, byte offset expression) of a view
        self.views: dict[str, tuple] = {}
        for p in self.view_param_names():
            self.arrays.pop(p, None)
            self.views[p] = (_name(PREFIX + "a_" + p), _name(PREFIX + "z_" + p), _name(PREFIX + "o_" + p))

    def view_param_names(self) -> list[str]:
        if self.is_kernel:
            return []
        viewed = self.info.view_params.get(id(self.fs.fn), set())
        return [p for p in self.fs.params if p in viewed]

    def is_view_expr(self, node) -> bool:
        return _is_view_expr(node, set(self.views))

    def view_of(self, node):
        """(array id or None when not recorded, item size, byte offset) of the array or view ``node`` is, as
        expressions; None when ``node`` is neither (a local array, a number)."""
        if isinstance(node, ast.Name):
            if node.id in self.views:
                return self.views[node.id]
            if node.id not in self.arrays:
                return None
            return self.aid_of(node), ast.Attribute(_name(node.id), "itemsize", ast.Load()), ast.Constant(0)
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and self.index_expr(node.slice) is None:
            inner = self.view_of(node.value)
            if inner is None:
                return None
            self.check_viewable(node.value)
            aid, isz, off = inner
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            for e in elts:
                self.check_view_bound(e)
            offset = off
            for d, e in enumerate(elts):
                shape_d = ast.Subscript(ast.Attribute(copy.deepcopy(node.value), "shape", ast.Load()), ast.Constant(d),
                                        ast.Load())
                stride_d = ast.Subscript(ast.Attribute(copy.deepcopy(node.value), "strides", ast.Load()),
                                         ast.Constant(d), ast.Load())
                if isinstance(e, ast.Slice):
                    if e.lower is None and (e.step is None or (isinstance(e.step, ast.Constant) and e.step.value > 0)):
                        continue  # starts at 0
                    first = _call("r_slice_start", [copy.deepcopy(e.lower) if e.lower is not None else ast.Constant(0),
                                                    ast.Constant(e.lower is not None),
                                                    copy.deepcopy(e.step) if e.step is not None else ast.Constant(1),
                                                    shape_d])
                else:
                    first = _call("r_wrap", [copy.deepcopy(e), shape_d])
                term = ast.BinOp(first, ast.Mult(), stride_d)
                offset = term if isinstance(offset, ast.Constant) and offset.value == 0 else \
                    ast.BinOp(offset, ast.Add(), term)
            return aid, isz, offset
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("view", "reshape")
                and not node.keywords):
            inner = self.view_of(node.func.value)
            if inner is not None:
                self.check_viewable(node.func.value)
            return inner  # the same first element: the offset stays, the strides change
        return None

    def check_viewable(self, node) -> None:
        """Refuse a view of a kernel parameter the launch passes as an array that is not C-contiguous: a view's
        byte offsets give the flat (C-order) index only in a C-contiguous array."""
        if (isinstance(node, ast.Name) and self.is_kernel and node.id in self.fs.params and node.id in self.arrays
                and node.id not in self.c_contiguous):
            raise self.error(node, f"a view of {node.id!r}, which this launch passes as an array that is not "
                                   "C-contiguous: the GPU backend follows views of C-contiguous arrays only (pass "
                                   "np.ascontiguousarray(...), or capture with --backend cpu or sim)")

    def check_view_bound(self, node) -> None:
        """The bounds of a view are evaluated twice (by the view and by its offset): refuse any that reads memory."""
        parts = [node.lower, node.upper, node.step] if isinstance(node, ast.Slice) else [node]
        for part in parts:
            for n in ast.walk(part) if part is not None else ():
                if isinstance(n, (ast.Subscript, ast.Call, ast.NamedExpr)):
                    raise self.error(n, "a view whose bounds read memory or call a function: the GPU backend "
                                        "evaluates them twice; bind the bound to a name first")

    def view_mem(self, kind: int, base, idx, site: int, line: int, view) -> ast.expr | None:
        aid, isz, off = view
        if aid is None:
            return None
        if isinstance(aid, ast.Constant) and self.skip_shared and self.info.arrays[aid.value].space == "shared":
            return None
        elts = idx.elts if isinstance(idx, ast.Tuple) else [idx]
        if isinstance(idx, ast.Name) and idx.id in self.index_tuples:
            elts = [ast.Subscript(_name(idx.id), ast.Constant(k), ast.Load()) for k in range(self.index_tuples[idx.id])]
        if len(elts) > MAX_INDEX_DIMS:
            raise self.error(SimpleNamespace(lineno=line), f"gpuviz records arrays of up to {MAX_INDEX_DIMS} dimensions")
        return _call(f"r_view{len(elts)}", [_name(STATE), *_bufs(), self.code(kind, site, aid), copy.deepcopy(base),
                                             copy.deepcopy(off), copy.deepcopy(isz), *elts])

    def visit_Subscript(self, node):
        if isinstance(node.ctx, ast.Load) and self.index_expr(node.slice) is None and self.view_of(node.value) is not None:
            # a view, made as numba makes it (its bounds read nothing: check_view_bound); its elements are
            # recorded where they are read or written
            node.value = self.visit(node.value)
            return node
        return super().visit_Subscript(node)

    def stmt(self, s) -> list:
        if isinstance(s, ast.FunctionDef):
            self.check_closure(s)
        if (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
                and s.targets[0].id in self.aliases):
            aid = self.aid_of(s.value) or ast.Constant(-1)  # -1: no array recorded (a shared one, record="global")
            keep = ast.copy_location(ast.Assign([_name(PREFIX + "a_" + s.targets[0].id, ast.Store())], aid), s)
            return [keep, *super().stmt(s)]
        if (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
                and s.targets[0].id not in self.arrays and self.is_view_expr(s.value)):
            view = self.view_of(s.value)
            if view is not None:
                name = s.targets[0].id
                if name in self.rebound_more_than_once():
                    raise self.error(s, f"view {name!r} is assigned more than once: the GPU backend follows a view "
                                        "bound once; give each view its own name")
                aid, isz, off = view
                offset = PREFIX + "vo_" + name
                value = self.visit(s.value)
                self.views[name] = (aid, isz, _name(offset))
                out = [ast.Assign([_name(offset, ast.Store())], off), ast.Assign([_name(name, ast.Store())], value)]
                return [ast.copy_location(n, s) for n in out]
        return super().stmt(s)

    def check_closure(self, s: ast.FunctionDef) -> None:
        """A closure (a ``def`` inside the function, which numba inlines) is rewritten in place: what it reads and
        writes of the enclosing function's arrays is recorded as theirs. Refused: one that subscripts its own
        parameter, whose array the GPU build cannot tell (the cpu and sim back ends record it)."""
        params = {a.arg for a in (*s.args.args, *s.args.posonlyargs, *s.args.kwonlyargs)}
        if s.args.vararg is not None:
            params.add(s.args.vararg.arg)
        for n in ast.walk(s):
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id in params:
                raise self.error(n, f"the function {s.name!r} defined inside {self.fs.name} subscripts its parameter "
                                    f"{n.value.id!r}: the GPU backend records the arrays a closure reads from the "
                                    "enclosing function, not through its parameters; read the array by its own name "
                                    "there, or capture this kernel with --backend cpu or sim")

    # ---- the per-thread rewrite's recordings, as GPU recorder calls -------------------------------------
    def rec(self, name, *args, line=None, site=None):
        """What the simulator records with ``__gv_<name>``, as the GPU recorder's device calls (or nothing)."""
        if name == "enter":
            state = ast.Assign(
                [_name(STATE, ast.Store())],
                ast.Call(func=ast.Attribute(ast.Attribute(_name(PREFIX + "cuda"), "local", ast.Load()), "array", ast.Load()),
                         args=[ast.Constant(STATE_LEN), _name(PREFIX + "state_t")], keywords=[]),
            )
            begin = ast.Expr(_call("r_begin", [_name(STATE), *_bufs(), self.code(SITE_START, site, None),
                                               *[_name(p) for p in PARAM_NAMES]]))
            return [state, begin]
        if name == "reg":
            return None  # array ids are static here (_init_arrays)
        if name == "reg_shared":
            var = args[0].id
            decl = self.shared_decls.get(line)
            where = SimpleNamespace(lineno=line)
            if decl is None:
                raise self.error(where, f"cannot read the shape of shared array {var!r}: the GPU backend needs it "
                                        "constant when it builds the kernel: give the shape and dtype as literals, "
                                        "module-level constants, or the same constants at every call of "
                                        f"{self.fs.name}")
            if var in self.rebound_more_than_once():
                raise self.error(where, f"shared array {var!r} is assigned twice; give each shared array its own name")
            self.arrays[var] = self.info.array(("shared", self.fs.file, line), ArrayInfo.of(var, decl[0], to_dtype(decl[1]), "shared", line))
            return None
        if name in ("ld", "st"):
            base, idx = args[0], args[1]
            out = self.mem(SITE_LD if name == "ld" else SITE_ST, base, idx, site, line)
            return idx if out is None else out
        if name == "at":
            return self.mem(SITE_AT, args[0], args[1], site, line)
        if name == "bar":
            return _call("r_event", [_name(STATE), *_bufs(), self.code(SITE_BAR, site, None)])
        if name == "barv":  # a barrier's predicate, read, then the barrier recorded: the predicate goes on to it
            return _call("r_value", [_name(STATE), *_bufs(), self.code(SITE_BAR, site, None), args[0]])
        if name == "warp_stmt":
            return _call("r_event", [_name(STATE), *_bufs(), self.code(SITE_WARP, site, None)])
        if name == "warp":
            return _call("r_value", [_name(STATE), *_bufs(), self.code(SITE_WARP, site, None), args[0]])
        if name == "end":
            return _call("r_end", [_name(STATE), *_bufs(), self.code(SITE_END, site, None)])
        raise UnsupportedConstruct(f"internal error: the GPU recorder has no lowering of the per-thread "
                                   f"recording {name!r} ({self.fs.file}:{line})", file=self.fs.file, line=line)

    def bind_temp(self, name: str, value) -> ast.Assign:
        if isinstance(value, ast.Name) and value.id in self.arrays:
            self.arrays[name] = self.arrays[value.id]  # a temporary bound to an array (``a[i] += v``, atomics)
        elif isinstance(value, ast.Name) and value.id in self.views:
            self.views[name] = self.views[value.id]
        elif self.member_of(value) is not None:
            self.arrays[name] = self.member_of(value)  # cuda.atomic.add(x[0], i, v)
        elif (isinstance(value, ast.Attribute) and value.attr in ("real", "imag") and isinstance(value.value, ast.Name)
              and isinstance(self.arrays.get(value.value.id), int)):
            self.arrays[name] = self.arrays[value.value.id]  # cuda.atomic.add(values.real, i, 1)
        elif self.is_view_expr(value) and self.view_of(value) is not None:
            # an atomic on a view (``cuda.atomic.compare_and_swap(res[gid:], ...)``): the temporary and its offset
            # are bound together, ``t, t_offset = res[gid:], <offset>``
            aid, isz, off = self.view_of(value)
            offset = PREFIX + "vo_" + name
            self.views[name] = (aid, isz, _name(offset))
            return ast.Assign([ast.Tuple([_name(name, ast.Store()), _name(offset, ast.Store())], ast.Store())],
                              ast.Tuple([value, off], ast.Load()))
        if isinstance(value, ast.Tuple):
            self.index_tuples[name] = len(value.elts)  # the index tuple of ``a[i, j] op= v`` (test_idiv)
        elif isinstance(value, ast.Name) and value.id in self.index_tuples:
            self.index_tuples[name] = self.index_tuples[value.id]  # an atomic's index held in a tuple variable
        return super().bind_temp(name, value)

    def device_call(self, node: ast.Call) -> ast.Call:
        callee = self.callees.get(node.func.id) if isinstance(node.func, ast.Name) else None
        if callee is not None:
            if callee.vararg:
                node.args = self.packed_varargs(node, callee)
            # the callee records into this thread's state and buffers, told which arrays it is handed
            viewed = self.info.view_params.get(id(callee.fn), set())
            aids, views = [], []
            for p, a in zip(callee.params, node.args):
                if self.is_no_array(a):
                    self.info.not_arrays.add((id(callee.fn), p))
                view = self.view_of(a)
                if p in viewed:
                    if view is not None:
                        self.check_viewable(a)  # the callee reads it through its strides
                    aid, isz, off = view if view is not None else (None, ast.Constant(1), ast.Constant(0))
                    aids.append(aid or ast.Constant(-1))
                    views += [off, isz]
                elif view is not None and not (isinstance(a, ast.Name) and a.id in self.arrays):
                    raise self.error(node, f"a view is passed to {callee.name}'s parameter {p!r} in a way the GPU "
                                           "backend does not follow: pass the slice itself, or bind it to a name first "
                                           "in the function that calls")
                else:
                    aids.append(self.aid_of(a) or ast.Constant(-1))
            node.args = node.args + [_name(STATE), *_bufs(), *aids, *views]
        return node

    def packed_varargs(self, node: ast.Call, callee: FunctionSource) -> list:
        """The arguments of a call of ``def f(a, *rest)`` with the further ones packed into ``rest``'s tuple,
        ``f(a, x, y)`` -> ``f(a, (x, y))``: the recording parameters come after ``rest``, so the instrumented copy
        takes it as a parameter of its own (numba packs it so too; :meth:`rewrite`)."""
        if any(isinstance(a, ast.Starred) for a in node.args) or node.keywords:
            raise self.error(node, f"a call of {callee.name}, which takes *{callee.vararg}, with *args or keywords: "
                                   "the GPU backend packs the further arguments itself; pass them one by one")
        n = len(callee.params)
        for a in node.args[n:]:
            if self.aid_of(a) is not None:
                # the callee would read it as rest[k][i], which the GPU build cannot tell apart from a number: its
                # accesses would be missing from the trace (the cpu and sim back ends record them), so refused
                raise self.error(node, f"a call of {callee.name} passes the array {ast.unparse(a)!r} through "
                                       f"*{callee.vararg}: the GPU backend does not record accesses through a device "
                                       "function's *args; pass the array as a named parameter, or capture this "
                                       "kernel with --backend cpu or sim")
        return node.args[:n] + [ast.Tuple(node.args[n:], ast.Load())]

    def is_no_array(self, node) -> bool:
        """Whether a call's argument is known to be no array to index: a tuple display, a kernel parameter the
        launch passes a number or a tuple, one record, or a parameter some caller passes such a value."""
        if isinstance(node, ast.Tuple):
            return True
        if not isinstance(node, ast.Name):
            return False
        if node.id in self.fs.params and node.id not in self.rebound:
            if self.is_kernel:
                return node.id not in self.array_args or self.array_args[node.id].shape == ()
            return (id(self.fs.fn), node.id) in self.info.not_arrays
        v = self.arrays.get(node.id)
        return isinstance(v, int) and self.info.arrays[v].shape == ()

    def rewrite(self) -> ast.FunctionDef:
        self._init_arrays()
        self._init_views()
        self._init_aliases()
        tree = super().rewrite()
        extra = list(BUF_NAMES) + list(PARAM_NAMES)
        if not self.is_kernel:
            if self.fs.vararg:  # def f(a, *rest): rest is the tuple each call packs (packed_varargs)
                tree.args.args.append(ast.arg(self.fs.vararg))
                tree.args.vararg = None
            extra = [STATE, *BUF_NAMES] + [PREFIX + "a_" + p for p in self.fs.params]
            for p in self.view_param_names():
                extra += [PREFIX + "o_" + p, PREFIX + "z_" + p]
        tree.args.args = tree.args.args + [ast.arg(a) for a in extra]
        ast.fix_missing_locations(tree)
        return tree


def _shape_literal(value) -> ast.expr | None:
    """``32`` or ``(4, 8)`` as source, for a shape that is an int or a tuple of ints; else None."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return ast.Constant(int(value))
    if isinstance(value, tuple) and value and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                                  for v in value):
        return ast.Tuple([ast.Constant(int(v)) for v in value], ast.Load())
    return None


def _atomic_name(obj) -> str | None:
    """``add`` for ``cuda.atomic.add`` (the class numba-cuda declares it with, or the simulator's bound method), else None."""
    if type(getattr(obj, "__self__", None)).__name__ == "FakeCUDAAtomic":
        return obj.__name__
    qual = getattr(obj, "__qualname__", "") or ""
    if qual.startswith("atomic.") and "cuda" in (getattr(obj, "__module__", "") or ""):
        return qual.split(".", 1)[1]
    return None


