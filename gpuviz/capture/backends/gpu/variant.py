"""A recording variant of a kernel: its functions rewritten (:class:`~.rewrite.GpuRewriter`) with the recorders of
its mode (:mod:`.recorders`), compiled with numba-cuda; and the decoding of what the variant wrote (site and
array codes back to event kinds, arrays and lines)."""

from __future__ import annotations

import ast
import copy
import types
from dataclasses import dataclass

import numpy as np

from ....model.trace import ArrayInfo, EventKind
from ...frontend.source import FunctionSource
from ..rewrite import PREFIX, device_alias
from . import disk_cache
from .bindings import _calls_itself, call_bindings, view_parameters
from .layout import (BUF_NAMES, BUFFERS, MODES, RECORDS, SITE_AT, SITE_BAR, SITE_END, SITE_LD, SITE_ST, SITE_START,
                     SITE_WARP)
from .recorders import make_recorders
from .rewrite import BuildInfo, GpuRewriter, _call, _name


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
    """Renames the calls of ``names`` (device functions), and ``inner`` (functions defined in the body, closures)
    wherever they are defined or read."""

    def __init__(self, names: dict[str, str], inner: dict[str, str] | None = None):
        self.names = names
        self.inner = inner or {}

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in self.names:
            node.func = _name(self.names[node.func.id])
        return node

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        node.name = self.inner.get(node.name, node.name)
        return node

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.inner:
            node.id = self.inner[node.id]
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
    # a closure defined in both bodies goes by another name in the plain one: numba inlines a closure only where
    # its name has one definition
    inner = {n.name: PREFIX + "plain_" + n.name for n in ast.walk(fs.tree) if isinstance(n, ast.FunctionDef)
             and n is not fs.tree}
    plain = [_RenameCalls(plain_names, inner).visit(st) for st in plain]
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


def _check_options(mode: str, record: str, split: bool, all_blocks: bool) -> None:
    if mode not in MODES:
        raise ValueError(f"recording mode must be one of {', '.join(MODES)}, not {mode!r}")
    if record not in RECORDS:
        raise ValueError(f"record must be one of {', '.join(RECORDS)}, not {record!r}")
    if split and all_blocks:
        raise ValueError("split=True records chosen blocks: it cannot be combined with all_blocks=True")


def build_variant(cuda, root: FunctionSource, array_args: dict[str, ArrayInfo], *, plan, count: bool, mode: str = "thread",
                  time_all: bool = False, split: bool = False, uniform: bool = False, all_blocks: bool = False,
                  record: str = "all", max_registers: int | None = None, block_range: bool = False,
                  index32: bool = False, grid: tuple | None = None, block: tuple | None = None,
                  lane_linear: bool = True, dynamic_shared_bytes: int = 0, c_contiguous: frozenset = frozenset(),
                  keep_rewrite: bool | None = None) -> Variant:
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
    ``keep_rewrite``: read the rewrite from the disk cache, and keep it there (:func:`.disk_cache.load_build`);
    None: when the disk cache is on and ``cuda`` is numba's (not a stand-in such as SourceOnlyCuda).
    """
    import numba

    _check_options(mode, record, split, all_blocks)
    # everything the generated code depends on besides the user's sources and what their names read (the view
    # parameters, read off the sources, shape the generated sources and so are not listed)
    options = (count, mode, time_all, split, uniform, all_blocks, record, max_registers, block_range, index32, grid,
               block, lane_linear, dynamic_shared_bytes, sorted(c_contiguous), repr(array_args))
    # a warm capture spent a third of its time rewriting the kernel again in every new process (bench/
    # gpu_capture_profile.py: 1.5 of 4.1 s over 56 corpus launches on an H200, the variants' code read from disk):
    # the rewrite is kept on disk as its code objects, keyed by the trees it rewrites
    if keep_rewrite is None:
        keep_rewrite = disk_cache.enabled() and isinstance(cuda, types.ModuleType)
    names = build_key = kept = None
    if keep_rewrite:
        user_functions = root.reachable()
        try:
            names = disk_cache.globals_description(user_functions)
        except disk_cache.NoStableDescription:
            keep_rewrite = False
        else:
            build_key = disk_cache.build_key(user_functions, options, names)
            kept = disk_cache.load_build(build_key)
            if kept is not None and set(kept["functions"]) != {disk_cache.function_id(fs)
                                                               for fs in root.reachable(passed=False)}:
                kept = None  # not the functions this build rewrites (two of one name and line): rewritten again
    made: dict[str, dict] = {}
    info = BuildInfo(sites=list(plan.sites))
    blocks = "all" if all_blocks else "range" if block_range else "table"
    recorders = make_recorders(cuda, count=count, warp=mode == "warp", time_all=time_all, uniform=uniform, blocks=blocks,
                               index32=index32, grid=grid, block=block)
    built: dict[int, object] = {}
    sources: dict[str, str] = {}
    functions: list[FunctionSource] = []
    bindings = call_bindings(root)

    def build(fs: FunctionSource, is_kernel: bool):
        key = id(fs.fn)
        if key in built:
            return built[key]
        functions.append(fs)
        ns = dict(fs.names())
        ns.update(recorders)
        ns[PREFIX + "cuda"] = cuda
        ns[PREFIX + "state_t"] = numba.int32 if (index32 and not count) else numba.int64
        plain_names = {}
        for call_name in fs.device_functions:
            # the plain branch calls the user's own device function (one of another module, mymod.helper, it
            # reaches through that module as the user wrote it)
            if is_kernel and split and "." not in call_name:
                plain_names[call_name] = PREFIX + "plain_" + call_name
                ns[plain_names[call_name]] = ns[call_name]
        if kept is not None:
            generated = kept["functions"][disk_cache.function_id(fs)]
        else:
            rw = GpuRewriter(fs, is_kernel=is_kernel, info=info, array_args=array_args if is_kernel else {},
                             record=record, c_contiguous=c_contiguous if is_kernel else frozenset(),
                             plan=plan, bindings=bindings.get(id(fs.fn)),
                             block_1d=lane_linear and block is not None and tuple(block)[1:] in ((), (1,), (1, 1)),
                             dynamic_shared_bytes=dynamic_shared_bytes)
            tree = rw.rewrite()
            if is_kernel and split:
                tree = split_kernel(rw, tree, plain_names)
            module = ast.Module(body=[tree], type_ignores=[])
            generated = {"source": ast.unparse(module), "code": compile(module, fs.file, "exec")}
            made[disk_cache.function_id(fs)] = generated
        sources[fs.name] = generated["source"]
        exec(generated["code"], ns)  # noqa: S102 - the user's kernel, instrumented
        fn = ns[fs.name]
        if is_kernel:
            # no link-time optimization: numba-cuda turns it on wherever nvJitLink is, and then compiles the kernel's
            # IR with NVVM twice (PTX, which its kernel reads, and LTO-IR for the link), while the recorders are in
            # the kernel's own IR, inlined by NVVM already (bench/gpu_capture_profile.py on an H200: 550 NVVM compiles
            # for 275 variants, 14.5 of their 35 s the LTO-IR ones). Files the kernel links (numba's fp16 helpers) link
            # as PTX, as numba did before nvJitLink
            jit_options = {"lto": False} if max_registers is None else {"lto": False, "max_registers": int(max_registers)}
            jitted = cuda.jit(**jit_options)(fn)
        else:
            # a recursive device function cannot be inlined into itself: numba calls it
            jitted = cuda.jit(device=True, forceinline=not _calls_itself(fs))(fn)
        built[key] = jitted
        # the device functions it calls, after it is in ``built``: a recursive one finds its own instrumented
        # copy (numba reads a function's globals when it compiles it, so they can be filled in after the exec)
        for call_name, sub in fs.device_functions.items():
            ns[device_alias(call_name)] = build(sub, False)
        return jitted

    if kept is not None:
        info.arrays = list(kept["arrays"])  # what decoding needs; the rewrite's other notes served only the rewrite
    else:
        info.view_params = view_parameters(root)
        # the kernel's array parameters (and the arrays in its tuple parameters) come first, in parameter order, as
        # in the other backends
        for name, a in array_args.items():
            info.array(("param", name), a)
    dispatcher = build(root, True)
    disk_cache.attach(dispatcher, sources=sources, options=options, functions=functions, names=names)
    if keep_rewrite and kept is None:
        disk_cache.save_build(build_key, made, info.arrays)
    return Variant(dispatcher, info, mode, count, time_all, sources, split, uniform, record, blocks)


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
