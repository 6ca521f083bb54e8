"""The construct table: every call and statement gpuviz intercepts, once.

Each :class:`Construct` says how the source names it, what it records (the site kind its events carry: a
barrier, an atomic, a warp primitive; None for what records nothing of its own), and which back ends do not
model it, with the refusal each gives (:data:`BACKEND_LIMITS`, refused by ``KernelPlan.refuse_on``). The front end
(the plan's site table and support check), the CPU executor's code generator, the simulator's and the GPU's rewrites all read the
names below from here, so that a construct cannot be a barrier to one reader and unknown to the next.

Adding a construct: a row here (its name, what it records, the back ends that refuse it and why), its acceptance
by the front end's support check (:mod:`.support`, with :mod:`.language` for a name of the language), then the code
of each back end that models it (``backends/cpu/compile.py`` and the runtime, ``backends/rewrite.py`` for the
per-thread rewrites, ``backends/gpu/rewrite.py`` for the GPU's recorders).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

#: every back end, by name
ALL_BACKENDS = ("cpu", "sim", "gpu")

#: site kinds a construct can record (gpuviz.model.trace.Site.kind)
SITE_KINDS = ("start", "end", "load", "store", "atomic", "barrier", "warp")

#: why the GPU back end refuses a local array's .min() and .max(): numba-cuda (0.30) does not compile them, so the
#: user's own kernel could not run there either (its typing of the reduction fails in numpy_take of a 0-d array)
_NUMBA_CUDA_NO_MIN_MAX = ("numba-cuda does not compile a local array's .min() or .max() (its typing fails), so the "
                          "kernel cannot run on a GPU; capture it with the cpu or sim backend, or write the loop")


@dataclass(frozen=True)
class Construct:
    """One intercepted construct. ``name``: as the source reads it, ``cuda.*`` chains after numba's module
    (``cuda.atomic.add``, ``cuda.syncthreads``), a method as ``.sum()``, a statement in words. ``records``: the
    site kind it records, or None. ``group``: the family it belongs to (the local arrays' reductions, which the
    support check reads as one); each construct is refused by its own name. ``refused``: {back end: why it does not
    model it, and what to do instead}."""

    name: str
    records: str | None = None
    group: str = ""
    refused: dict[str, str] = field(default_factory=dict)

    @property
    def backends(self) -> tuple[str, ...]:
        """The back ends that model it."""
        return tuple(b for b in ALL_BACKENDS if b not in self.refused)

    @property
    def short(self) -> str:
        """The last part of its name: ``add`` of ``cuda.atomic.add``, ``sum`` of ``.sum()``."""
        return self.name.rstrip("()").rsplit(".", 1)[-1]


_ATOMIC_OPS = ("add", "sub", "max", "min", "nanmax", "nanmin", "exch", "cas", "compare_and_swap", "inc", "dec",
               "and_", "or_", "xor")
_BARRIER_NAMES = ("syncthreads", "syncthreads_count", "syncthreads_and", "syncthreads_or")
_WARP_NAMES = ("shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync", "ballot_sync", "all_sync",
               "any_sync", "eq_sync", "match_any_sync")
#: reductions of a thread's own (local) array that numba-cuda compiles in a kernel: method -> numpy's, over each
#: thread's elements; of a global or shared array they would read memory the trace must show
_REDUCTIONS = {"sum": "sum", "prod": "prod", "mean": "mean", "min": "min", "max": "max", "all": "all",
               "any": "any", "argmin": "argmin", "argmax": "argmax"}
_LOCAL_REDUCTION = "a local array's reduction (.sum(), .mean(), ...)"

CONSTRUCTS: tuple[Construct, ...] = (
    *(Construct(f"cuda.atomic.{op}", records="atomic") for op in _ATOMIC_OPS),
    *(Construct(f"cuda.{name}", records="barrier") for name in _BARRIER_NAMES),
    Construct("grid.sync()", records="barrier", refused={
        "sim": "numba's simulator runs the blocks of a grid one after another (it syncs a one-block cooperative "
               "grid only), so a grid-wide barrier across several blocks cannot happen there; capture it with the "
               "cpu backend, which runs the whole grid in lockstep",
    }),  # on a GPU: recorded as the barrier it is, in a cooperative launch (backends/gpu/cooperative.py)
    Construct("cuda.syncwarp", records="warp"),
    *(Construct(f"cuda.{name}", records="warp") for name in _WARP_NAMES),
    # a thread sleeps about ns nanoseconds (a back-off in a spin loop): no value changes, nothing of its own recorded
    Construct("cuda.nanosleep", refused={
        "sim": "numba's simulator has no cuda.nanosleep, so the kernel cannot run there; capture it with the cpu "
               "backend (which runs it as the no-op it is for the values) or the gpu backend",
    }),
    Construct("cuda.shared.array"),  # a declaration: the arrays' accesses record, the declaration does not
    Construct("cuda.local.array"),
    # numba-cuda compiles them in the user's kernel and in the GPU recorder's variants alike (the rewrite keeps them
    # as written: a local array records nothing), but for .min() and .max(), which it does not compile at all
    *(Construct(f".{m}()", group=_LOCAL_REDUCTION,
                refused={"gpu": _NUMBA_CUDA_NO_MIN_MAX} if m in ("min", "max") else {}) for m in _REDUCTIONS),
    Construct("a def inside a kernel"),  # a closure numba inlines: its body recorded where it is called
    # numba-cuda's kernel dispatcher types each argument of a launch and does not fold the further ones into the
    # kernel's *args tuple (the launch fails: "Signature mismatch"); a device function's call it folds, as numba does
    Construct("*args of a kernel", refused={
        "gpu": "numba-cuda does not launch a kernel with *args (it types each argument of the launch and the "
               "kernel takes the further ones as one tuple: 'Signature mismatch'), so the kernel cannot run on a "
               "GPU; capture it with the cpu or sim backend, or give the kernel one parameter per argument",
    }),
    Construct("*args of a device function"),  # its further arguments packed into the tuple at each call
    Construct("a device function of another module"),  # mymod.helper(x): instrumented as one called by name
    Construct("tuple(...)"),  # a tuple of values: nothing recorded of its own; every back end runs it as numba does
)

BY_NAME: dict[str, Construct] = {c.name: c for c in CONSTRUCTS}


def _short_names(prefix: str, records: str | None = None) -> frozenset[str]:
    return frozenset(c.name[len(prefix):] for c in CONSTRUCTS if c.name.startswith(prefix)
                     and (records is None or c.records == records))


#: ``cuda.atomic.<op>``: the atomics
ATOMICS = _short_names("cuda.atomic.")
#: ``cuda.<name>()``: the block's barriers (the predicate ones count, and, or)
BARRIERS = _short_names("cuda.", "barrier")
#: the barriers that take a predicate
PREDICATE_BARRIERS = BARRIERS - {"syncthreads"}
#: ``cuda.<name>(mask, ...)``: the warp primitives (``syncwarp``, a warp barrier, apart: it records as a statement)
WARP = _short_names("cuda.", "warp") - {"syncwarp"}
#: ``local_array.<method>()``: reductions over a thread's own array -> numpy's function
ARRAY_REDUCTIONS = {c.short: _REDUCTIONS[c.short] for c in CONSTRUCTS if c.group == _LOCAL_REDUCTION}

#: constructs every back end's front end accepts that a back end does not model: construct name ->
#: {back end: why, and what to do instead}. ``KernelPlan.refuse_on`` refuses them (the cpu back end models them all).
BACKEND_LIMITS: dict[str, dict[str, str]] = {c.name: dict(c.refused) for c in CONSTRUCTS if c.refused}


def call_site_kind(parts: list[str] | None) -> str | None:
    """The site kind a ``cuda.*`` call records, from its dotted chain (``['cuda', 'atomic', 'add']``), else None."""
    if not parts or parts[0] != "cuda":
        return None
    rest = parts[1:]
    if len(rest) == 2 and rest[0] == "atomic":
        return "atomic" if rest[1] in ATOMICS else None
    c = BY_NAME.get("cuda." + ".".join(rest))
    return c.records if c is not None and c.records in ("barrier", "warp") else None


def refused_call(parts: list[str] | None) -> str | None:
    """The table's name of a ``cuda.*`` call some back end refuses (its :data:`BACKEND_LIMITS` key), else None."""
    if not parts or parts[0] != "cuda":
        return None
    c = BY_NAME.get(".".join(parts))
    return c.name if c is not None and c.refused else None


def array_declaration(parts: list[str] | None) -> str | None:
    """``'shared'`` or ``'local'`` when the dotted chain is ``cuda.shared.array`` or ``cuda.local.array``."""
    if parts and parts[0] == "cuda" and len(parts) == 3 and parts[2] == "array" and parts[1] in ("shared", "local"):
        return parts[1]
    return None


def is_shared_declaration(dotted, node) -> bool:
    """Whether ``node`` is a ``cuda.shared.array(...)`` call; ``dotted``: the reader's dotted-chain resolver."""
    return isinstance(node, ast.Call) and array_declaration(dotted(node.func)) == "shared"
