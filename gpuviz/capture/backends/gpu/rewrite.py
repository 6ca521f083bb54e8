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
written at all: each thread's (or warp's) events sit contiguously at an offset the host computed from a
counting pass, so the host derives them.

Layouts (``uniform``, a compile-time choice made by the host after counting): when every warp needs
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

from ....model.trace import ArrayInfo, EventKind
from ...dtypes import to_dtype
from ...errors import UnsupportedConstruct
from ...frontend.consteval import UNKNOWN, fold
from ...frontend.source import FunctionSource, assigned_names
from ..rewrite import PREFIX, RewriteBase

# site kinds: what a recorder call records; the host turns LD/ST into global or shared by the array's space
SITE_START, SITE_END, SITE_LD, SITE_ST, SITE_AT, SITE_BAR, SITE_WARP = range(7)
SITE_KIND_NAMES = ("start", "end", "load", "store", "atomic", "barrier", "warp")
#: site kinds whose events carry a timestamp and SM id in the default ``timestamps="sync"``
TIMED_SITE_KINDS = (SITE_START, SITE_END, SITE_BAR, SITE_WARP)

#: the trace buffers, extra parameters of the recording kernels, in this order
BUFFERS = (
    "code",  # int32[n_events]: site << 8 | (array id + 1); per-warp mode: [n_diverged_records], the number of
    #          converged records of the warp before each diverged record (their order)
    "idx",  # int32 or int64 [n_events]: flat element index (memory events); per-warp mode: [n_records * 4]
    #         rows of (code, active mask, base index, stride or SLAB_MARK)
    "stride",  # 1 element: kept in the signature (per-warp strides are in idx)
    "mask",  # 1 element: kept in the signature (per-warp masks are in idx)
    "slab",  # like idx, [n_rows * 32] (per-warp mode only): each lane's index where they are irregular
    "time",  # int64[n_timed]: %globaltimer of each timed event
    "sm",  # int16[n_timed]: %smid of each timed event
    "slot",  # int64[n_blocks]: ordinal of each recorded block, -1 for a block that is not recorded
    "off",  # int64[n_slots, 5]: where each slot's first event, timed event, slab row, diverged row (per-warp
    #         mode) and diverged order entry (``code``, per-warp mode) go (table layout)
    "cap",  # int32[n_slots, 5]: how many each slot may write (its warp's largest count; uniform layout: row 0)
    "cnt",  # int32[n_slots, 4]: how many each slot produced (count pass) or wrote (record pass): events
    #         (per-warp mode: converged records), timed events, slab rows, diverged records (per-warp mode)
    "drop",  # int64[4]: events, timed events, slab rows that found their slot full; per-warp mode: lane events
    #          run while diverged from lane 0 (not recorded). Reported, never silent
)
#: columns of ``off`` and ``cap`` (the count columns of ``cnt``, then the diverged order entries)
OFF_COLUMNS = 5
CNT_COLUMNS = 4
BUF_NAMES = tuple(PREFIX + "b_" + b for b in BUFFERS)
#: scalar parameters of the recording kernel itself (not of its device functions), after the buffers: the
#: recorded blocks as a range (first, end, step of linear block ids; used when ``blocks="range"``) and the
#: uniform layout's per-warp capacities (events, timed events, slab rows, diverged records). Scalars live in the kernel's
#: parameter bank, so the test "is this block recorded" and the first positions need no memory load at
#: entry: the user's first loads are not queued behind one.
PARAMS = ("first", "end", "step", "cap0", "cap1", "cap2", "cap3")
PARAM_NAMES = tuple(PREFIX + "p_" + p for p in PARAMS)
#: how the device tells recorded blocks: every block, a range in scalar parameters, or the ``slot`` table
BLOCK_SETS = ("all", "range", "table")
STATE = PREFIX + "s"
# pos, end, timed pos, timed end, on, slot, start, timed start, slab pos, slab end, slab start, lane,
# events this lane ran while diverged from lane 0 (per-warp mode: not recorded, reported in drop[3]),
# and in per-warp mode: the staged record (code, -1: none; base; first record of the stage; stride), the
# diverged records so far, their capacity, their first row and their first ``code`` entry. Per-warp mode
# counts converged records (pos) from 0 in every lane; end is their capacity, start their first row.
STATE_LEN = 21
MAX_INDEX_DIMS = 4
#: ``stride`` of a per-warp record whose lanes' indices are in ``slab`` (no arithmetic progression)
SLAB_MARK = -(2**31)

MODES = ("thread", "warp")
RECORDS = ("all", "global")


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
        return out

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
                  and isinstance(n.value, ast.Call) and self.dotted(n.value.func) == ["cuda", "shared", "array"]}
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
        if isinstance(node.func, ast.Name) and node.func.id in self.fs.device_functions:
            # the callee records into this thread's state and buffers, told which arrays it is handed
            callee = self.fs.device_functions[node.func.id]
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
            extra = [STATE, *BUF_NAMES] + [PREFIX + "a_" + p for p in self.fs.params]
            for p in self.view_param_names():
                extra += [PREFIX + "o_" + p, PREFIX + "z_" + p]
        tree.args.args = tree.args.args + [ast.arg(a) for a in extra]
        ast.fix_missing_locations(tree)
        return tree


# ---- the recorder device functions ---------------------------------------------------------------------
def slice_first(lo, given, step, n):
    """The first index of ``a[lo::step]`` along a dimension of ``n`` elements (``given``: lo was written), as
    Python's ``slice.indices`` gives it; the recorders jit it as a device function."""
    if not given:
        return 0 if step > 0 else n - 1
    if lo < 0:
        lo += n
        if lo < 0:
            lo = 0 if step > 0 else -1
    elif lo >= n:
        lo = n if step > 0 else n - 1
    return lo


def make_recorders(cuda, *, count: bool, warp: bool, time_all: bool, uniform: bool = False, blocks: str = "table",
                   index32: bool = False, grid: tuple | None = None, block: tuple | None = None) -> dict:
    """The ``__gv_r_*`` device functions for one variant. ``count``, ``warp``, ``time_all``, ``uniform`` (the
    layout), ``blocks`` (:data:`BLOCK_SETS`: every block, a range in scalar parameters, or the block
    table), ``index32`` (every recorded array and every buffer has fewer than 2**31 elements: index and
    position arithmetic in 32 bits, and a 32-bit recording state)
    and the launch's ``grid`` and ``block`` shapes (None: read at run time) are compile-time
    constants: the compiler removes the branches they switch off.

    Why the code below looks the way it does: a recording kernel is bound by the instructions it issues,
    not by the bytes it writes (Nsight Compute on an H200, per-warp vector add: 13.8x the plain kernel's
    instructions, 0.9% of its DRAM time in trace bytes). So every buffer index is cast to unsigned (numba
    adds negative-index wraparound, four instructions, to every signed index), divisions by 32 are shifts,
    positions are 32-bit where they fit (:func:`mad`, :func:`at_index`: numba would widen each step to 64
    bits), a warp whose 32 lanes are all converged uses warp intrinsics with the constant full mask (no
    convergence check around them) and stages its records in registers, numbered by a count every lane
    keeps (no lane asks lane 0 where to write), and an index proven to be lane 0's plus the lane needs no
    vote. Per-warp vector add went from 396 warp instructions per warp to 165 (plain: 42).
    """
    import numba

    from .intrinsics import globaltimer, imad32, mad32_index, smid, store_row4

    if blocks not in BLOCK_SETS:
        raise ValueError(f"blocks must be one of {', '.join(BLOCK_SETS)}, not {blocks!r}")
    COUNT, WARP, TIME_ALL, UNIFORM = bool(count), bool(warp), bool(time_all), bool(uniform)
    ALL, RANGE = blocks == "all", blocks == "range"
    U64, I32, I64, U32 = numba.uint64, numba.int32, numba.int64, numba.uint32
    IDX = numba.int32 if index32 else numba.int64
    # 32-bit indices: the recording state (positions, per-warp mode's staged record) in 32 bits too (the host
    # builds such a variant only when every buffer has fewer than 2**31 elements)
    NARROW = bool(index32)
    SI = numba.int32 if NARROW else numba.int64
    GRID_1D = grid is not None and tuple(grid)[1:] in ((), (1,), (1, 1))
    BLOCK_DIMS = None if block is None else tuple(block) + (1,) * (3 - len(block))
    BX, BY, BZ = BLOCK_DIMS or (0, 0, 0)
    TPB = BX * BY * BZ
    BLOCK_1D = BLOCK_DIMS is not None and BY == 1 and BZ == 1
    FULL = 0xFFFFFFFF
    # Layout: in thread mode the 32 lanes of a warp interleave their events (event k of lane l at
    # warp_base + 32 k + l), so a warp's 32 stores of one event land in one 128-byte line (coalesced);
    # thread-contiguous rows made every store a separate memory transaction. In warp mode each record is a
    # row of four fields (code, mask, base index, stride) in the ``idx`` buffer, written with one vector store
    # (store_row4): 32 lanes writing their staged records write 512 contiguous bytes; the lanes together write
    # whole 32-wide slab rows.
    STRIDE = 1 if WARP else 32
    EMPTY = -1  # a staged code that means "no record here" (codes are >= 0)
    MARK = SLAB_MARK
    jit = cuda.jit(device=True, forceinline=True)

    @jit
    def lane_pattern(mask, index, lane):
        """(base, step, regular) of the lanes in ``mask``: regular when each one's index is base + lane * step
        (exact: a vote over every lane). ``mask`` is the constant full mask where it can be (no convergence
        check in the compiled code), else the active mask."""
        ix = IDX(index)
        base = cuda.shfl_sync(mask, ix, 0)
        src = 1 if (mask & 2) != 0 else 0
        step = IDX(cuda.shfl_sync(mask, ix, src) - base)
        regular = (cuda.all_sync(mask, ix == IDX(base + IDX(lane) * step)) != 0) and step != MARK
        return base, step, regular

    @jit
    def record_pattern(mask, index, lane, has_index, linear):
        """(base, step, regular) of an event: :func:`lane_pattern` for a memory event, (0, 0, True) otherwise;
        for an index known to be lane 0's plus the lane (``linear``), that without a vote."""
        if has_index:
            if linear:
                return IDX(index - lane), IDX(1), True
            return lane_pattern(mask, index, lane)
        return IDX(0), IDX(0), True

    @jit
    def mad(a, b, c):
        """``a * b + c`` in the state's width: 32-bit instructions in the narrow state (numba would widen
        each int32 step to 64 bits, two instructions apiece on the GPU)."""
        if NARROW:
            return imad32(a, b, c)
        return SI(a * b + c)

    @jit
    def at_index(a, b, c):
        """The buffer position ``a * b + c`` as an index: 32-bit arithmetic when every buffer has fewer than
        2**31 elements (the narrow state), else 64-bit."""
        if NARROW:
            return mad32_index(a, b, c)
        return U64(a * b + c)

    @jit
    def put_timed(s, time_a, sm_a, drop_a, starts):
        """Lane 0 stamps a timed event: %globaltimer, and %smid at START."""
        q = s[2]
        if q < s[3]:
            time_a[at_index(q, 1, 0)] = globaltimer()
            if starts:  # a block never moves between SMs: its START carries the SM for every event
                sm_a[at_index(q, 1, 0)] = smid()
        else:
            cuda.atomic.add(drop_a, 1, 1)
        s[2] = mad(q, 1, 1)

    @jit
    def count_record(s, lane, which, timed, regular):
        """The counting variant's per-warp record: lane 0 counts it (converged ones in s[0], diverged ones in
        s[17]: what r_end reports), its timestamp and its slab row."""
        if lane == 0:
            s[which] += 1
            if timed or TIME_ALL:
                s[2] += 1
            if not regular:
                s[8] += 1

    @jit
    def put_slab(s, lanes, slab_a, drop_a, index, lane):
        """An irregular record's lanes write their own indices into the warp's next slab row (lane 0 keeps
        the row count: the lanes here take it from lane 0)."""
        row = cuda.shfl_sync(lanes, s[8], 0)
        if row < s[9]:
            slab_a[at_index(row, 32, lane)] = IDX(index)  # the lanes' neighbouring words: one coalesced store
        elif lane == 0:
            cuda.atomic.add(drop_a, 2, 1)
        s[8] = mad(row, 1, 1)

    @jit
    def flush_staged(s, idx_a):
        """This lane writes the converged record it holds, if any, as one 16-byte row (each lane for
        itself: no lane needs another to be here). 32 lanes write 32 neighbouring rows: 512 bytes."""
        if s[13] != EMPTY:
            k = mad(s[15], 1, s[11])  # the record this lane holds: the stage's first, plus the lane
            if k < s[1]:  # records past the slot's capacity are counted at END (drop[0]), not written
                store_row4(idx_a, at_index(k, 1, s[6]), IDX(s[13]), IDX(I32(FULL)), IDX(s[14]), IDX(s[16]))
            s[13] = EMPTY

    @jit
    def put_warp_converged(s, lanes, idx_a, slab_a, time_a, sm_a, drop_a, code, index, has_index, timed, starts, linear):
        """All 32 lanes are here: the constant full mask, straight-line code that every lane runs, and the
        record staged in a lane's registers instead of stored (see the module docstring). Its number k is
        every lane's own converged count: nothing to fetch from lane 0, and known to the compiler in
        straight-line code, where the staging below folds to a few selects."""
        lane = s[11]
        base, step, regular = record_pattern(U32(FULL), index, lane, has_index, linear)
        if COUNT:
            count_record(s, lane, 0, timed, regular)
            return
        if not regular:
            put_slab(s, U32(FULL), slab_a, drop_a, index, lane)
        k = s[0]
        g = mad(s[15], -1, k)
        if g >= 32:  # every lane holds a record: write them all, start a new stage
            flush_staged(s, idx_a)
            s[15] = k
            g = SI(0)
        mine = g == lane  # selects, not a branch: the compiler keeps this straight-line
        s[13] = SI(code) if mine else s[13]
        s[14] = base if mine else s[14]
        s[16] = (step if regular else IDX(MARK)) if mine else s[16]
        s[0] = mad(k, 1, 1)
        if (timed or TIME_ALL) and lane == 0:
            put_timed(s, time_a, sm_a, drop_a, starts)

    @jit
    def put_warp(s, lanes, code_a, idx_a, slab_a, time_a, sm_a, drop_a, code, index, has_index, timed, starts, linear):
        """Some lanes are elsewhere (lane 0 is here): the active mask in every warp intrinsic, and lane 0
        stores the record at once in the slot's diverged part, with the number of converged records before
        it (in ``code``), from which the host restores the program order."""
        lane = s[11]
        base, step, regular = record_pattern(lanes, index, lane, has_index, linear)
        if COUNT:
            count_record(s, lane, 17, timed, regular)
            return
        if not regular:
            put_slab(s, lanes, slab_a, drop_a, index, lane)
        if lane == 0:
            j = s[17]
            if j < s[18]:  # past the capacity: counted at END (drop[0])
                store_row4(idx_a, at_index(j, 1, s[19]), IDX(code), IDX(I32(lanes)), base,
                           step if regular else IDX(MARK))
                code_a[at_index(j, 1, s[20])] = I32(s[0])
            s[17] = mad(j, 1, 1)
            if timed or TIME_ALL:
                put_timed(s, time_a, sm_a, drop_a, starts)

    @jit
    def put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a,
            code, index, has_index, timed, starts, linear):
        if WARP:
            lanes = cuda.activemask()  # read before any branch of ours: the lanes converged here
            if s[4] == 0:
                return
            if lanes == FULL:  # the common case: the constant mask lets the compiler drop its convergence checks
                put_warp_converged(s, lanes, idx_a, slab_a, time_a, sm_a, drop_a, code, index, has_index, timed, starts,
                                   linear)
            elif (lanes & 1) == 0:  # lanes diverged from lane 0: not recorded, but counted (reported, not silent)
                s[12] += 1
            else:
                put_warp(s, lanes, code_a, idx_a, slab_a, time_a, sm_a, drop_a, code, index, has_index, timed, starts, linear)
            return
        if s[4] == 0:
            return
        if COUNT:  # counting: positions are plain counts
            s[0] += 1
            if timed or TIME_ALL:
                s[2] += 1
            return
        p = s[0]
        if p < s[1]:
            at = at_index(p, 1, 0)
            code_a[at] = code
            if has_index:
                idx_a[at] = index
        else:
            cuda.atomic.add(drop_a, 0, 1)
        s[0] = mad(p, 1, STRIDE)
        if timed or TIME_ALL:
            q = s[2]
            if q < s[3]:
                time_a[at_index(q, 1, 0)] = globaltimer()
                if starts:
                    sm_a[at_index(q, 1, 0)] = smid()
            else:
                cuda.atomic.add(drop_a, 1, 1)
            s[2] = mad(q, 1, STRIDE)

    @jit
    def block_ordinal(slot_a, first, end, step):
        """This block's ordinal among the recorded ones, -1 if it is not recorded. ``blocks="range"`` reads
        only scalar parameters (no memory load before the branch); ``"table"`` loads its ``slot`` entry."""
        if GRID_1D:
            bid = I64(cuda.blockIdx.x)
        else:
            gx = I64(cuda.gridDim.x)
            gy = I64(cuda.gridDim.y)
            bid = cuda.blockIdx.x + cuda.blockIdx.y * gx + cuda.blockIdx.z * gx * gy
        if ALL:
            return bid
        if RANGE:
            rel = bid - first
            if rel < 0 or bid >= end:
                return -1
            if step == 1:  # a contiguous range: no division
                return rel
            k = rel // step
            return k if k * step == rel else -1
        return slot_a[U64(bid)]

    @jit
    def r_begin(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code,
                first, end, step, cap0, cap1, cap2, cap3):
        if BLOCK_DIMS is None:
            bdx = cuda.blockDim.x
            bdy = cuda.blockDim.y
            tpb = I32(bdx * bdy * cuda.blockDim.z)
            tid = I32(cuda.threadIdx.x + cuda.threadIdx.y * bdx + cuda.threadIdx.z * bdx * bdy)
        elif BLOCK_1D:  # the launch's block shape is a compile-time constant: no index arithmetic for 1-D blocks
            tpb = I32(TPB)
            tid = I32(cuda.threadIdx.x)
        else:
            tpb = I32(TPB)
            tid = I32(cuda.threadIdx.x + cuda.threadIdx.y * BX + cuda.threadIdx.z * (BX * BY))
        k = block_ordinal(slot_a, first, end, step)
        on = True if ALL else k >= 0  # every block recorded: a constant, and the checks on it fold away
        lane = I32(tid & 31)  # tid >= 0: a mask and a shift, not numba's signed floor division
        group = mad(k, (tpb + 31) >> 5, tid >> 5)  # this warp's number among the recorded warps
        slot = group if WARP else k * tpb + tid
        s[4] = 1 if on else 0
        s[5] = slot
        s[11] = lane
        s[12] = 0
        s[8] = 0
        s[9] = 0
        if WARP:  # converged records counted from 0 in every lane; the stage starts empty
            s[0] = 0
            s[13] = EMPTY
            s[14] = 0
            s[15] = 0
            s[16] = 0
            s[17] = 0
            if COUNT or not on:
                for j in (1, 2, 3, 6, 18, 19, 20):
                    s[j] = 0
            elif UNIFORM:  # every warp gets the largest counts (scalar parameters): positions are arithmetic
                s[6] = mad(group, cap0 + cap3, 0)  # the slot: cap0 converged rows, then cap3 diverged rows
                s[1] = SI(cap0)
                s[19] = mad(group, cap0 + cap3, cap0)
                s[18] = SI(cap3)
                s[20] = mad(group, cap3, 0)
                s[2] = mad(group, cap1, 0)
                s[3] = mad(group, cap1, cap1)
                s[8] = mad(group, cap2, 0)
                s[9] = mad(group, cap2, cap2)
            else:
                at = U64(slot)
                s[6] = off_a[at, 0]
                s[1] = cap_a[at, 0]
                s[2] = off_a[at, 1]
                s[3] = off_a[at, 1] + cap_a[at, 1]
                s[8] = off_a[at, 2]
                s[9] = off_a[at, 2] + cap_a[at, 2]
                s[19] = off_a[at, 3]
                s[18] = cap_a[at, 3]
                s[20] = off_a[at, 4]
        elif COUNT or not on:
            for j in range(4):
                s[j] = 0
        elif UNIFORM:  # every thread of a warp gets the warp's largest count: positions are arithmetic, no load
            s[0] = mad(group, cap0 * 32, lane)
            s[2] = mad(group, cap1 * 32, lane)
            s[1] = mad(cap0, STRIDE, s[0])
            s[3] = mad(cap1, STRIDE, s[2])
        else:
            at = U64(slot)
            s[0] = off_a[at, 0]
            s[1] = off_a[at, 0] + cap_a[at, 0] * STRIDE
            s[2] = off_a[at, 1]
            s[3] = off_a[at, 1] + cap_a[at, 1] * STRIDE
        if not WARP:
            s[6] = s[0]
        s[7] = s[2]
        s[10] = s[8]
        put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, 0, False, True,
            True, False)

    @jit
    def r_end(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code):
        put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, 0, False, True, False, False)
        if not WARP:
            if s[4] != 0:
                slot = U64(s[5])
                cnt_a[slot, 0] = (min(s[0], s[1]) - s[6]) // STRIDE if not COUNT else s[0]
                cnt_a[slot, 1] = (min(s[2], s[3]) - s[7]) // STRIDE if not COUNT else s[2]
            return
        if COUNT:
            if s[4] != 0 and s[11] == 0:  # converged records, timed events, slab rows, diverged records
                store_row4(cnt_a, at_index(s[5], 1, 0), s[0], s[2], s[8], s[17])
            return
        flush_staged(s, idx_a)  # every lane, for itself: this thread is done, what it holds goes out now
        if s[4] != 0 and s[11] == 0:  # lane 0 keeps the warp's counts
            store_row4(cnt_a, at_index(s[5], 1, 0), min(s[0], s[1]), mad(s[7], -1, min(s[2], s[3])),
                       mad(s[10], -1, min(s[8], s[9])), min(s[17], s[18]))
            if s[0] > s[1]:  # records past the slot's capacity were not written: say how many
                cuda.atomic.add(drop_a, 0, I64(mad(s[1], -1, s[0])))
            if s[17] > s[18]:
                cuda.atomic.add(drop_a, 0, I64(mad(s[18], -1, s[17])))
        if s[12] > 0:
            cuda.atomic.add(drop_a, 3, I64(s[12]))

    @jit
    def r_event(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code):
        put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, 0, False, True, False, False)
        return 0

    @jit
    def r_value(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, value):
        put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, 0, False, True, False, False)
        return value

    @jit
    def wrap(i, n):
        return i + n if i < 0 else i

    @jit
    def r_mem1(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, A, i0):
        if code & 255:
            flat = wrap(i0, A.shape[0])
            put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, flat, True, False, False, False)
        return i0

    @jit
    def r_mem1_lane_linear(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code,
                           A, i0):
        """``A[i0]`` with i0 the thread's global index in a 1-D block (GpuRewriter.lane_linear_names)."""
        if code & 255:
            put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, i0, True, False,
                False, True)
        return i0

    @jit
    def r_mem2(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, A, i0, i1):
        if code & 255:
            flat = wrap(i0, A.shape[0]) * A.shape[1] + wrap(i1, A.shape[1])
            put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, flat, True, False, False, False)
        return (i0, i1)

    @jit
    def r_mem3(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, A, i0, i1, i2):
        if code & 255:
            flat = (wrap(i0, A.shape[0]) * A.shape[1] + wrap(i1, A.shape[1])) * A.shape[2] + wrap(i2, A.shape[2])
            put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, flat, True, False, False, False)
        return (i0, i1, i2)

    @jit
    def r_mem4(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, A, i0, i1, i2, i3):
        if code & 255:
            flat = ((wrap(i0, A.shape[0]) * A.shape[1] + wrap(i1, A.shape[1])) * A.shape[2]
                    + wrap(i2, A.shape[2])) * A.shape[3] + wrap(i3, A.shape[3])
            put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, flat, True, False, False, False)
        return (i0, i1, i2, i3)

    slice_start = jit(slice_first)

    @jit
    def r_view1(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, V, off,
                isz, i0):
        """``V[i0]`` of a view ``V`` whose first element lies ``off`` bytes into its array (items of ``isz`` bytes)."""
        if code & 255:
            flat = (off + wrap(i0, V.shape[0]) * V.strides[0]) // isz
            put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, flat, True, False, False, False)
        return i0

    @jit
    def r_view2(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, V, off,
                isz, i0, i1):
        if code & 255:
            flat = (off + wrap(i0, V.shape[0]) * V.strides[0] + wrap(i1, V.shape[1]) * V.strides[1]) // isz
            put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, flat, True, False, False, False)
        return (i0, i1)

    @jit
    def r_view3(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, V, off,
                isz, i0, i1, i2):
        if code & 255:
            flat = (off + wrap(i0, V.shape[0]) * V.strides[0] + wrap(i1, V.shape[1]) * V.strides[1]
                    + wrap(i2, V.shape[2]) * V.strides[2]) // isz
            put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, flat, True, False, False, False)
        return (i0, i1, i2)

    @jit
    def r_view4(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, V, off,
                isz, i0, i1, i2, i3):
        if code & 255:
            flat = (off + wrap(i0, V.shape[0]) * V.strides[0] + wrap(i1, V.shape[1]) * V.strides[1]
                    + wrap(i2, V.shape[2]) * V.strides[2] + wrap(i3, V.shape[3]) * V.strides[3]) // isz
            put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, flat, True, False, False, False)
        return (i0, i1, i2, i3)

    fns = {"r_block_ordinal": block_ordinal, "r_wrap": wrap, "r_slice_start": slice_start, "r_view1": r_view1,
           "r_view2": r_view2, "r_view3": r_view3, "r_view4": r_view4, "r_begin": r_begin, "r_end": r_end, "r_event": r_event, "r_value": r_value,
           "r_mem1": r_mem1, "r_mem1_lane_linear": r_mem1_lane_linear, "r_mem2": r_mem2, "r_mem3": r_mem3, "r_mem4": r_mem4}
    return {PREFIX + k: v for k, v in fns.items()}


@dataclass
class Variant:
    """One compiled recording variant of a kernel and what decoding its buffers needs."""

    dispatcher: object
    info: BuildInfo
    mode: str
    count: bool
    time_all: bool
    sources: dict[str, str]  # function name -> generated Python source (for error messages and tests)
    split: bool = False
    uniform: bool = False
    record: str = "all"
    blocks: str = "table"  # how the device tells recorded blocks: one of BLOCK_SETS


class _RenameCalls(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]):
        self.names = names

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in self.names:
            node.func = _name(self.names[node.func.id])
        return node


def split_kernel(rw: GpuRewriter, instrumented: ast.FunctionDef, plain_names: dict[str, str]) -> ast.FunctionDef:
    """``if <this block is recorded>: <instrumented body> else: <the user's own body>``.

    One test per thread at entry (``r_block_ordinal``: the range of recorded blocks in scalar parameters, or
    the block's entry in the ``slot`` table), so the blocks that are not
    recorded run the user's statements with no recording call at all. Shared arrays declared at the top
    level of the kernel are declared once, before the branch, so that the two bodies do not double the
    block's shared memory. ``plain_names`` renames the user's device-function calls in the plain body to
    names bound to the user's own (uninstrumented) device functions.
    """
    fs = rw.fs
    plain = copy.deepcopy(fs.tree).body
    plain = [_RenameCalls(plain_names).visit(st) for st in plain]
    hoisted, keys = [], set()
    for st in plain:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) \
                and rw.is_shared_decl(st.value):
            hoisted.append(st)
            keys.add((st.targets[0].id, st.lineno))

    def keep(st):
        return not (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)
                    and (st.targets[0].id, getattr(st, "lineno", None)) in keys)

    plain_body = [st for st in plain if keep(st)] or [ast.Pass()]
    recorded_body = [st for st in instrumented.body if keep(st)]
    # recorded blocks as a range: the test reads scalar parameters only; any other set loads its table entry
    ordinal = _call("r_block_ordinal", [_name(BUF_NAMES[BUFFERS.index("slot")]),
                                        *[_name(PREFIX + "p_" + p) for p in ("first", "end", "step")]])
    test = ast.Compare(ordinal, [ast.GtE()], [ast.Constant(0)])
    branch = ast.If(test=test, body=recorded_body, orelse=plain_body)
    instrumented.body = hoisted + [ast.copy_location(branch, fs.tree.body[0])]
    ast.fix_missing_locations(instrumented)
    return instrumented


def build_variant(cuda, root: FunctionSource, array_args: dict[str, ArrayInfo], *, plan, count: bool, mode: str = "thread",
                  time_all: bool = False, split: bool = False, uniform: bool = False, all_blocks: bool = False,
                  record: str = "all", max_registers: int | None = None, block_range: bool = False,
                  index32: bool = False, grid: tuple | None = None, block: tuple | None = None,
                  lane_linear: bool = True, dynamic_shared_bytes: int = 0, c_contiguous: frozenset = frozenset()) -> Variant:
    """Rewrite ``root`` (with its device functions already collected) and jit the result with ``cuda.jit``.

    ``split``: the kernel branches once per thread between the instrumented body (recorded blocks) and
    the user's own body (every other block): see :func:`split_kernel`. ``all_blocks``: every block is
    recorded (no block table is read). ``block_range``: the recorded blocks are ``range(first, end, step)``
    (scalar parameters: nothing is loaded to test a block); otherwise the ``slot`` table says. ``uniform``:
    the arithmetic layout (see the module docstring).
    ``record``: ``"all"`` or ``"global"`` (shared-memory accesses left out). ``max_registers`` caps the
    kernel's registers (numba's ``max_registers``), e.g. to keep the plain kernel's occupancy. ``index32``,
    ``grid`` and ``block``: see :func:`make_recorders` (a variant built with a grid and block shape must be
    launched with that shape). ``lane_linear``: with a 1-D ``block``, record ``a[i]`` for ``i = cuda.grid(1)``
    without a warp vote (:meth:`GpuRewriter.lane_linear_names`). ``dynamic_shared_bytes``: the launch's dynamic
    shared memory (the shape of ``cuda.shared.array(0, dtype)``; the variant is launched with that many bytes).
    """
    import numba

    if mode not in MODES:
        raise ValueError(f"recording mode must be one of {', '.join(MODES)}, not {mode!r}")
    if record not in RECORDS:
        raise ValueError(f"record must be one of {', '.join(RECORDS)}, not {record!r}")
    if split and all_blocks:
        raise ValueError("split=True records chosen blocks: it cannot be combined with all_blocks=True")
    info = BuildInfo(sites=list(plan.sites))
    blocks = "all" if all_blocks else "range" if block_range else "table"
    recorders = make_recorders(cuda, count=count, warp=mode == "warp", time_all=time_all, uniform=uniform, blocks=blocks,
                               index32=index32, grid=grid, block=block)
    built: dict[int, object] = {}
    sources: dict[str, str] = {}
    bindings = call_bindings(root)

    def build(fs: FunctionSource, is_kernel: bool):
        key = id(fs.fn)
        if key in built:
            return built[key]
        ns = dict(fs.names())
        ns.update(recorders)
        ns[PREFIX + "cuda"] = cuda
        ns[PREFIX + "state_t"] = numba.int32 if (index32 and not count) else numba.int64
        plain_names = {}
        for call_name in fs.device_functions:
            if is_kernel and split:  # the plain branch calls the user's own device function
                plain_names[call_name] = PREFIX + "plain_" + call_name
                ns[plain_names[call_name]] = ns[call_name]
        rw = GpuRewriter(fs, is_kernel=is_kernel, info=info, array_args=array_args if is_kernel else {}, record=record,
                         c_contiguous=c_contiguous if is_kernel else frozenset(),
                         plan=plan, bindings=bindings.get(id(fs.fn)),
                         block_1d=lane_linear and block is not None and tuple(block)[1:] in ((), (1,), (1, 1)),
                         dynamic_shared_bytes=dynamic_shared_bytes)
        tree = rw.rewrite()
        if is_kernel and split:
            tree = split_kernel(rw, tree, plain_names)
        module = ast.Module(body=[tree], type_ignores=[])
        sources[fs.name] = ast.unparse(module)
        exec(compile(module, fs.file, "exec"), ns)  # noqa: S102 - the user's kernel, instrumented
        fn = ns[fs.name]
        if is_kernel:
            jitted = cuda.jit(fn) if max_registers is None else cuda.jit(max_registers=int(max_registers))(fn)
        else:
            # a recursive device function cannot be inlined into itself: numba calls it
            jitted = cuda.jit(device=True, forceinline=not _calls_itself(fs))(fn)
        built[key] = jitted
        # the device functions it calls, after it is in ``built``: a recursive one finds its own instrumented
        # copy (numba reads a function's globals when it compiles it, so they can be filled in after the exec)
        for call_name, sub in fs.device_functions.items():
            ns[call_name] = build(sub, False)
        return jitted

    info.view_params = view_parameters(root)
    # the kernel's array parameters (and the arrays in its tuple parameters) come first, in parameter order, as
    # in the other backends
    for name, a in array_args.items():
        info.array(("param", name), a)
    dispatcher = build(root, True)
    return Variant(dispatcher, info, mode, count, time_all, sources, split, uniform, record, blocks)




def _shape_literal(value) -> ast.expr | None:
    """``32`` or ``(4, 8)`` as source, for a shape that is an int or a tuple of ints; else None."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return ast.Constant(int(value))
    if isinstance(value, tuple) and value and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                                  for v in value):
        return ast.Tuple([ast.Constant(int(v)) for v in value], ast.Load())
    return None


def _atomic_name(obj) -> str | None:
    """``add`` for ``cuda.atomic.add`` (numba-cuda's stub class, or the simulator's bound method), else None."""
    if type(getattr(obj, "__self__", None)).__name__ == "FakeCUDAAtomic":
        return obj.__name__
    qual = getattr(obj, "__qualname__", "") or ""
    if qual.startswith("atomic.") and "cuda" in (getattr(obj, "__module__", "") or ""):
        return qual.split(".", 1)[1]
    return None


def compile_time_locals(fs: FunctionSource, bindings: dict) -> dict:
    """``bindings`` (the parameters every call passes one constant) plus the function's names assigned
    once, at the top of its body, a constant expression (``N = 100``; ``shape = (N, 2)``)."""
    out = dict(bindings)
    stores: dict[str, int] = {}
    for n in ast.walk(fs.tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            stores[n.id] = stores.get(n.id, 0) + 1
    for st in fs.tree.body:
        if (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)
                and stores.get(st.targets[0].id) == 1 and st.targets[0].id not in fs.params):
            value = fold(st.value, fs, out)
            if value is not UNKNOWN and isinstance(value, (int, float, tuple, np.integer, np.floating)):
                out[st.targets[0].id] = value
    return out


def callers_first(root: FunctionSource) -> list[FunctionSource]:
    """``root`` and every device function it reaches, breadth first (a function before those it calls, but for
    recursion), each once."""
    order, seen = [root], {id(root.fn)}
    k = 0
    while k < len(order):
        fs = order[k]
        k += 1
        for sub in fs.device_functions.values():
            if id(sub.fn) not in seen:
                seen.add(id(sub.fn))
                order.append(sub)
    return order


def call_bindings(root: FunctionSource) -> dict[int, dict]:
    """{id of a device function: {parameter: value}} for the parameters that every call of the function in
    the kernel passes one and the same constant (a shape, a dtype, an atomic): numba compiles one copy per
    set of such constants, gpuviz's GPU build one per device function, so a parameter two calls pass
    different constants stays unresolved."""
    found: dict[int, dict] = {}
    conflicting: dict[int, set] = {}
    order = callers_first(root)
    for fs in order:  # callers before callees (breadth first): a caller's own bindings are known
        constants = compile_time_locals(fs, found.get(id(fs.fn), {}))
        for node in ast.walk(fs.tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in fs.device_functions):
                continue
            sub = fs.device_functions[node.func.id]
            mine = found.setdefault(id(sub.fn), {})
            bad = conflicting.setdefault(id(sub.fn), set())
            given = dict(zip(sub.params, node.args))
            given.update({kw.arg: kw.value for kw in node.keywords if kw.arg})
            for p in sub.params:
                value = fold(given.get(p), fs, constants)
                if value is UNKNOWN or p in bad:
                    bad.add(p)
                    mine.pop(p, None)
                elif p in mine and not _same(mine[p], value):
                    bad.add(p)
                    del mine[p]
                elif p not in bad:
                    mine[p] = value
    return found


def _is_view_expr(node, views: set) -> bool:
    """Whether ``node`` makes a view (``a[i:j]``, ``a[i, :]``, ``.view(dtype)``/``.reshape(...)`` of one) or names
    one of ``views``."""
    if isinstance(node, ast.Name):
        return node.id in views
    if isinstance(node, ast.Subscript):
        return RewriteBase.index_expr(node.slice) is None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("view", "reshape"):
        return isinstance(node.func.value, ast.Subscript) and _is_view_expr(node.func.value, views) or \
            isinstance(node.func.value, ast.Name) and node.func.value.id in views
    return False


def view_parameters(root: FunctionSource) -> dict[int, set[str]]:
    """{id of a device function: its parameters that some call passes a view}, read off the source before the
    rewrite (callers are rewritten before their callees, and every caller must pass such a parameter the view's
    offset): an argument that makes a view, or names one the caller made or was given."""
    order = callers_first(root)
    found: dict[int, set[str]] = {}
    changed = True
    while changed:
        changed = False
        for fs in order:
            views = set(found.get(id(fs.fn), ()))
            for _ in range(2):  # a view of a view
                views |= {n.targets[0].id for n in ast.walk(fs.tree)
                          if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
                          and _is_view_expr(n.value, views)}
            for node in ast.walk(fs.tree):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in fs.device_functions:
                    sub = fs.device_functions[node.func.id]
                    for p, a in zip(sub.params, node.args):
                        if _is_view_expr(a, views) and p not in found.setdefault(id(sub.fn), set()):
                            found[id(sub.fn)].add(p)
                            changed = True
    return {k: v for k, v in found.items() if v}


def _same(a, b) -> bool:
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001
        return False


def _calls_itself(fs: FunctionSource) -> bool:
    """Whether ``fs`` reaches itself through the device functions it calls (recursion)."""
    seen, stack = set(), list(fs.device_functions.values())
    while stack:
        sub = stack.pop()
        if sub.fn is fs.fn:
            return True
        if id(sub.fn) not in seen:
            seen.add(id(sub.fn))
            stack.extend(sub.device_functions.values())
    return False


def decode_kinds(info: BuildInfo, code: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kind, array id, line) of each event from its recorded code (its site, the plan's, is ``code >> 8``)."""
    site_kind, site_line = info.decode_tables()
    site = code >> 8
    aid = (code & 255).astype(np.int16) - 1
    sk = site_kind[site]
    line = site_line[site]
    shared = np.zeros(len(info.arrays) + 1, dtype=bool)
    for i, a in enumerate(info.arrays):
        shared[i] = a.space == "shared"
    is_shared = shared[aid]  # aid -1 reads the extra False at the end
    kind = np.empty(len(code), dtype=np.uint8)
    table = {
        SITE_START: EventKind.START, SITE_END: EventKind.END, SITE_AT: EventKind.ATOMIC,
        SITE_BAR: EventKind.BARRIER, SITE_WARP: EventKind.WARP_OP,
    }
    for sk_value, ek in table.items():
        kind[sk == sk_value] = ek
    ld, st = sk == SITE_LD, sk == SITE_ST
    kind[ld] = np.where(is_shared[ld], EventKind.SHARED_LOAD, EventKind.GLOBAL_LOAD)
    kind[st] = np.where(is_shared[st], EventKind.SHARED_STORE, EventKind.GLOBAL_STORE)
    return kind, aid, line
