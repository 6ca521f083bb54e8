"""The trace: what one kernel launch did, thread by thread.

This is the contract between capture (which writes traces) and everything else (views, analyses,
lessons, files). It depends on numpy alone: no Qt, no numba.

Events are stored field-major: one numpy array per field, all of the same length, one row per event.
Stored fields (see ``EVENT_FIELDS``):

    block   int32   linear block id (bx + by*gx + bz*gx*gy)
    thread  int32   linear thread id in its block (tx + ty*bx + tz*bx*by)
    seq     int32   per-thread sequence number, 0 for the thread's START event
    kind    uint8   an :class:`EventKind`
    array   int16   index into ``launch.arrays`` (-1 when the event touches no array)
    index   int64   flat (C-order) element index into that array (-1 when none)
    line    int32   source line in ``launch.source_file`` (absolute, 1-based)
    step    int32   lockstep issue step: events of lanes of one warp with equal step ran as one
                    SIMT instruction (-1 when the backend does not know; then ``seq`` stands in)
    sm      int16   SM the thread's block ran on (-1 when unknown)
    time    int64   %globaltimer in ns (-1 when unknown)
    value   float64 value loaded or stored (NaN when not recorded)
    site    int32   the recorded site of the kernel's source the event came from: an index into
                    ``launch.sites`` (-1 when unknown: files written before schema 3)

Warp, lane and barrier phase are derived, never stored. A trace does not change once made: what is derived from
it for showing (frames, phases, analyses, narration, its file's index) lives in
:class:`gpuviz.model.prepared.Prepared`; files are read and written by :mod:`gpuviz.model.tracefile`
(``load_trace``, ``save_traces``).
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as _dt
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any

import numpy as np

from .dtypes import describe, dtype_text, is_record, parse_dtype

_SPAN = 1 << 20  # events a pass over every event handles at a time (see Trace.phase)

#: 1: deflated .npy members. 2: stored (uncompressed) .npy members at 64-byte aligned offsets, which are
#: memory-mapped on load, and an optional precomputed index (frames, phases, analysis reports).
#: 3: the launch's table of recorded sites (``launch.sites``) and each event's ``site``.
SCHEMA_VERSION = 3


class EventKind(enum.IntEnum):
    START = 0
    END = 1
    GLOBAL_LOAD = 2
    GLOBAL_STORE = 3
    SHARED_LOAD = 4
    SHARED_STORE = 5
    ATOMIC = 6
    BARRIER = 7
    WARP_OP = 8

    @property
    def label(self) -> str:
        return self.name.lower()

    @property
    def is_memory(self) -> bool:
        return self in _MEMORY_KINDS

    @property
    def is_write(self) -> bool:
        return self in (EventKind.GLOBAL_STORE, EventKind.SHARED_STORE, EventKind.ATOMIC)


_MEMORY_KINDS = frozenset(
    {EventKind.GLOBAL_LOAD, EventKind.GLOBAL_STORE, EventKind.SHARED_LOAD, EventKind.SHARED_STORE, EventKind.ATOMIC}
)

#: name -> (dtype, fill value used when a backend does not record the field)
EVENT_FIELDS: dict[str, tuple[np.dtype, Any]] = {
    "block": (np.dtype(np.int32), None),
    "thread": (np.dtype(np.int32), None),
    "seq": (np.dtype(np.int32), None),
    "kind": (np.dtype(np.uint8), None),
    "array": (np.dtype(np.int16), -1),
    "index": (np.dtype(np.int64), -1),
    "line": (np.dtype(np.int32), -1),
    "step": (np.dtype(np.int32), -1),
    "sm": (np.dtype(np.int16), -1),
    "time": (np.dtype(np.int64), -1),
    "value": (np.dtype(np.float64), np.nan),
    "site": (np.dtype(np.int32), -1),
}
REQUIRED_FIELDS = ("block", "thread", "seq", "kind")


@dataclass(frozen=True)
class ArrayInfo:
    """One array a kernel touches: a kernel argument (global), a ``cuda.shared.array`` or a local one.

    An array of records (a structured dtype: ``numba.cuda.random``'s states, a user's struct) has ``record``,
    its element's layout as :func:`gpuviz.model.dtypes.dtype_text` writes it, and ``dtype`` is that layout in
    words (``record(s0 uint64 @0, s1 uint64 @8; 16 bytes, aligned)``); events index whole records, and
    ``itemsize`` is the record's. A trace file names plain number types only, so there the array's ``dtype`` is
    ``"uint8"`` (its bytes) and ``record`` says what the bytes hold; loading restores the words. Build one from a
    numpy dtype with :meth:`of`."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    space: str = "global"  # "global" | "shared" | "local"
    line: int = -1  # where a shared/local array is declared
    record: str = ""  # a record element's layout (dtype_text); "" for plain number types

    @classmethod
    def of(cls, name: str, shape, dtype, space: str = "global", line: int = -1) -> "ArrayInfo":
        """The description of an array of ``dtype`` (any numpy dtype, plain or record)."""
        dt = np.dtype(dtype)
        shape = tuple(int(s) for s in shape)
        if is_record(dt):
            return cls(name, shape, describe(dt), space, line, record=dtype_text(dt))
        return cls(name, shape, str(dt), space, line)

    @property
    def numpy_dtype(self) -> np.dtype:
        """The element's numpy dtype (the record itself for an array of records)."""
        return parse_dtype(self.record) if self.record else np.dtype(self.dtype)

    @property
    def itemsize(self) -> int:
        return self.numpy_dtype.itemsize

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    def to_json(self) -> dict:
        d = {"name": self.name, "shape": list(self.shape), "dtype": "uint8" if self.record else self.dtype,
             "space": self.space, "line": self.line}
        if self.record:
            d["record"] = self.record
        return d

    @classmethod
    def from_json(cls, d: dict) -> "ArrayInfo":
        if d.get("record"):
            record = str(d["record"])
            try:
                dt = parse_dtype(record)
            except (ValueError, TypeError) as exc:
                raise ValueError(f"array {d.get('name')!r}: its record layout cannot be read ({exc})") from exc
            return cls(name=str(d["name"]), shape=tuple(int(s) for s in d["shape"]), dtype=describe(dt),
                       space=str(d.get("space", "global")), line=int(d.get("line", -1)), record=record)
        return cls(
            name=str(d["name"]),
            shape=tuple(int(s) for s in d["shape"]),
            dtype=str(np.dtype(d["dtype"])),
            space=str(d.get("space", "global")),
            line=int(d.get("line", -1)),
        )


#: what a site records: the kernel's start and end, an array element read, written or updated atomically, a
#: barrier, a warp primitive. Whether a load or store is of global or shared memory is the array's space.
SITE_KINDS = ("start", "end", "load", "store", "atomic", "barrier", "warp")

#: who a barrier site holds back: the threads of one block (``cuda.syncthreads()``, the default) or every thread of
#: every block (``cuda.cg.this_grid().sync()``)
SITE_SCOPES = ("block", "grid")


@dataclass(frozen=True)
class Site:
    """One place in the kernel's source that records events (the capture plan's table of them).

    ``array`` and ``index`` are the subscript as written (``sA``, ``("ty", "k")``): a device function's
    parameter name where the array is a parameter of one (the event's ``array`` says which array it was).
    ``col`` is the 0-based column of the construct on its line (-1 for the kernel's start and implicit end).
    ``scope`` (:data:`SITE_SCOPES`) says who a barrier holds back: "block" for ``syncthreads()`` (and for every
    site that is no barrier), "grid" for ``grid.sync()``, which no thread of any block passes before every thread
    of every block has arrived. Saved only when it is "grid", so files written before it read the same.
    """

    kind: str
    line: int
    function: str = ""
    array: str = ""
    index: tuple[str, ...] = ()
    col: int = -1
    scope: str = "block"

    @property
    def is_grid_barrier(self) -> bool:
        return self.kind == "barrier" and self.scope == "grid"

    @property
    def text(self) -> str:
        """``B[k, col]``, ``cuda.syncthreads()`` style text of the site (for captions and tables)."""
        if self.array:
            return f"{self.array}[{', '.join(self.index)}]"
        return self.kind

    def to_json(self) -> dict:
        d = {"kind": self.kind, "line": self.line, "function": self.function, "array": self.array,
             "index": list(self.index), "col": self.col}
        if self.scope != "block":
            d["scope"] = self.scope
        return d

    @classmethod
    def from_json(cls, d: dict) -> "Site":
        return cls(kind=str(d["kind"]), line=int(d["line"]), function=str(d.get("function", "")),
                   array=str(d.get("array", "")), index=tuple(str(x) for x in d.get("index", ())),
                   col=int(d.get("col", -1)), scope=str(d.get("scope", "block")))


def _dim3(v) -> tuple[int, int, int]:
    if isinstance(v, (int, np.integer)):
        v = (int(v),)
    v = tuple(int(x) for x in v)
    if not 1 <= len(v) <= 3:
        raise ValueError(f"a launch dimension has 1 to 3 components, got {v!r}")
    return v + (1,) * (3 - len(v))


@dataclass
class Launch:
    """Everything about one launch except its events. It does not change once made (setting an attribute
    raises, and its lists are tuples, its dicts read-only): a launch that differs is a new one,
    ``dataclasses.replace(launch, source_file=...)``, and a trace with it a new trace (:meth:`Trace.with_launch`)."""

    kernel_name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    arrays: tuple[ArrayInfo, ...] = ()
    source: str = ""
    source_file: str = ""
    # ``source`` holds lines ``first_line``.. of ``source_file``: the kernel and the device functions of its
    # file it calls. Event lines are absolute lines of source_file, so line L is source_lines()[L - first_line].
    first_line: int = 1
    warp_size: int = 32
    backend: str = "cpu"  # "cpu" (gpuviz executor) | "sim" (numba simulator) | "gpu"
    device: str = ""  # e.g. "gpuviz CPU executor" or "NVIDIA H200"
    versions: Mapping[str, str] = field(default_factory=dict)
    timings: Mapping[str, float] = field(default_factory=dict)  # seconds
    created: str = ""
    dropped: int = 0  # events lost to a full buffer: always reported, never silent
    warnings: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)  # backend extras (registers, smem, ...)
    #: the recorded sites of the kernel (the capture plan's), indexed by the events' ``site``; empty for
    #: traces from files written before schema 3 and for traces made without a plan
    sites: tuple[Site, ...] = ()

    def __post_init__(self):
        made = object.__setattr__
        made(self, "grid", _dim3(self.grid))
        made(self, "block", _dim3(self.block))
        for name in ("arrays", "warnings", "sites"):
            made(self, name, tuple(getattr(self, name)))
        # a copy behind a read-only view: neither the launch's reader nor the dict it was made from changes it
        # (values inside are kept as given: meta's entries are JSON, read, never written in place)
        for name in ("versions", "timings", "meta"):
            made(self, name, MappingProxyType(dict(getattr(self, name))))
        if not self.created:
            made(self, "created", _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
        made(self, "_made", True)

    def __setattr__(self, name, value):
        if "_made" in self.__dict__:
            raise AttributeError(f"a Launch does not change once made (setting {name!r}): make a new one with "
                                 "dataclasses.replace(launch, ...) and its trace with Trace.with_launch(...)")
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        raise AttributeError(f"a Launch does not change once made (deleting {name!r})")

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def n_blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def n_threads(self) -> int:
        return self.threads_per_block * self.n_blocks

    @property
    def warps_per_block(self) -> int:
        return -(-self.threads_per_block // self.warp_size)

    def block_coords(self, linear) -> tuple:
        """Linear block id(s) -> (x, y, z)."""
        gx, gy, _ = self.grid
        linear = np.asarray(linear)
        return linear % gx, (linear // gx) % gy, linear // (gx * gy)

    def thread_coords(self, linear) -> tuple:
        bx, by, _ = self.block
        linear = np.asarray(linear)
        return linear % bx, (linear // bx) % by, linear // (bx * by)

    def array_id(self, name: str) -> int:
        for i, a in enumerate(self.arrays):
            if a.name == name:
                return i
        raise KeyError(f"no array named {name!r} in launch of {self.kernel_name}")

    def source_lines(self) -> list[str]:
        return self.source.splitlines()

    def to_json(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["arrays"] = [a.to_json() for a in self.arrays]
        d["sites"] = [s.to_json() for s in self.sites]
        d["grid"] = list(self.grid)
        d["block"] = list(self.block)
        d["warnings"] = list(self.warnings)
        for name in ("versions", "timings", "meta"):
            d[name] = copy.deepcopy(dict(d[name]))  # what was written is the writer's: later reads see the launch's
        return d

    @classmethod
    def from_json(cls, d: dict) -> "Launch":
        d = dict(d)
        d["arrays"] = [ArrayInfo.from_json(a) for a in d.get("arrays", [])]
        d["sites"] = [Site.from_json(s) for s in d.get("sites", [])]
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


class Trace:
    """One launch and its events (field-major numpy arrays of equal length)."""

    def __init__(self, launch: Launch, events: dict[str, np.ndarray]):
        self.launch = launch
        n = None
        cols: dict[str, np.ndarray] = {}
        for name in REQUIRED_FIELDS:
            if name not in events:
                raise ValueError(f"trace events lack the required field {name!r}")
        for name, arr in events.items():
            if name not in EVENT_FIELDS:
                raise ValueError(f"unknown event field {name!r}; known: {', '.join(EVENT_FIELDS)}")
            arr = np.ascontiguousarray(arr, dtype=EVENT_FIELDS[name][0])
            if arr.ndim != 1:
                raise ValueError(f"event field {name!r} must be 1-d, got shape {arr.shape}")
            if n is None:
                n = len(arr)
            elif len(arr) != n:
                raise ValueError(f"event field {name!r} has {len(arr)} rows, others have {n}")
            cols[name] = arr
        self._n = n or 0
        self._cols = cols
        self.recorded_fields = frozenset(events)
        self._made = True

    def __setattr__(self, name, value):
        if "_made" in self.__dict__:
            raise AttributeError(f"a Trace does not change once made (setting {name!r}): what is derived from it "
                                 "belongs in gpuviz.model.prepared.Prepared")
        object.__setattr__(self, name, value)

    def with_launch(self, **changes) -> "Trace":
        """These events under ``dataclasses.replace(self.launch, **changes)``: a new trace, the event arrays shared
        (this one does not change). Nothing derived from this trace comes along: for one read from a file or
        already indexed, :func:`gpuviz.model.prepared.relaunched` also carries its index over."""
        return Trace(dataclasses.replace(self.launch, **changes),
                     {name: self._cols[name] for name in self.recorded_fields})

    # ---- stored fields -------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._n

    @property
    def n_events(self) -> int:
        return len(self)

    def __getattr__(self, name):
        if name in EVENT_FIELDS and "_cols" in self.__dict__:
            return self.field(name)
        raise AttributeError(name)

    def field(self, name: str) -> np.ndarray:
        """One event field; a field the backend did not record comes back filled with its 'unknown' value."""
        col = self._cols.get(name)
        if col is None:
            dtype, fill = EVENT_FIELDS[name]  # KeyError for a name that is no field
            col = np.full(self._n, fill, dtype=dtype)
            col.setflags(write=False)
            self._cols[name] = col
        return col

    @property
    def columns(self) -> dict[str, np.ndarray]:
        return {name: self.field(name) for name in EVENT_FIELDS}

    def has(self, name: str) -> bool:
        """True if the backend recorded this field (rather than it being filled with 'unknown')."""
        return name in self.recorded_fields

    # ---- derived fields ------------------------------------------------------------------------
    @property
    def warp(self) -> np.ndarray:
        return self.field("thread") // self.launch.warp_size

    @property
    def lane(self) -> np.ndarray:
        return self.field("thread") % self.launch.warp_size

    @property
    def global_thread(self) -> np.ndarray:
        return self.field("block").astype(np.int64) * self.launch.threads_per_block + self.field("thread")

    @cached_property
    def thread_order(self) -> np.ndarray:
        """Permutation sorting events by (block, thread, seq): each thread's events in program order."""
        seq = self.field("seq").astype(np.int64)
        span = int(seq.max()) + 1 if len(seq) else 1
        # one packed int64 key (unique per event) sorts several times faster than a 3-key lexsort
        key = self.global_thread * span + seq
        if not len(key) or int(self.launch.n_threads) * span < 2**62:
            return np.argsort(key, kind="stable")
        return np.lexsort((self.field("seq"), self.field("thread"), self.field("block")))

    @cached_property
    def phase(self) -> np.ndarray:
        """Barrier phase of each event: how many barriers its thread passed before it.

        A BARRIER event itself belongs to the phase it closes.
        """
        return self._passed_before(self.field("kind") == EventKind.BARRIER)

    @cached_property
    def grid_barrier_sites(self) -> np.ndarray:
        """The ids of the launch's grid-wide barrier sites (``grid.sync()``), sorted; empty for most kernels."""
        return np.array([i for i, s in enumerate(self.launch.sites) if s.is_grid_barrier], dtype=np.int64)

    @cached_property
    def grid_phase(self) -> np.ndarray:
        """Grid phase of each event: how many grid-wide barriers (``grid.sync()``) its thread passed before it; the
        barrier event itself belongs to the grid phase it closes. Zeros, with no sort, for a kernel without one."""
        grid_sites = self.grid_barrier_sites
        if not len(grid_sites) or not self.has("site"):
            return np.zeros(len(self), dtype=np.int32)
        at_grid = (self.field("kind") == EventKind.BARRIER) & np.isin(self.field("site"), grid_sites)
        if not at_grid.any():
            return np.zeros(len(self), dtype=np.int32)
        return self._passed_before(at_grid)

    def _passed_before(self, flags: np.ndarray) -> np.ndarray:
        """For each event, how many events of its thread earlier in program order are ``flags``ed."""
        order = self.thread_order
        n = len(order)
        out = np.empty(n, dtype=np.int32)
        if n == 0:
            return out
        gt_all = self.global_thread
        # a span of the order at a time (np.cumsum and np.repeat over every event held the GIL for 50-80 ms each,
        # against the GUI thread): what carries over is the barriers counted so far, the thread the last span
        # ended in and the count at that thread's first event
        carry, base_carry, last_gt = 0, 0, None
        for i in range(0, n, _SPAN):
            o = order[i : i + _SPAN]
            is_bar = flags[o]
            before = np.cumsum(is_bar, dtype=np.int64) + (carry - is_bar)  # barriers strictly before, in the order
            carry = int(before[-1]) + int(is_bar[-1])
            gt = gt_all[o]
            new = np.empty(len(gt), dtype=bool)  # a thread's first event: the count restarts there
            new[0] = last_gt is None or gt[0] != last_gt
            np.not_equal(gt[1:], gt[:-1], out=new[1:])
            run = np.maximum.accumulate(np.where(new, np.arange(len(gt)), -1))  # where each event's thread began
            base = np.where(run >= 0, before[np.maximum(run, 0)], base_carry)
            out[o] = before - base
            base_carry, last_gt = int(base[-1]), gt[-1]
        return out

    @cached_property
    def issue_step(self) -> np.ndarray:
        """The lockstep step of each event: ``step`` where recorded, else ``seq`` (lanes in lockstep)."""
        if self.has("step"):
            return self.field("step")
        return self.field("seq")

    # ---- summaries -----------------------------------------------------------------------------
    def counts_by_kind(self) -> dict[str, int]:
        counts = np.bincount(self.field("kind"), minlength=len(EventKind))
        return {k.label: int(counts[k]) for k in EventKind}

    def barriers_per_thread(self) -> tuple[int, int]:
        """[min, max] number of barriers a thread reached, over all threads of the launch."""
        n_threads = self.launch.n_threads
        if n_threads == 0:
            return (0, 0)
        bar = self.field("kind") == EventKind.BARRIER
        per = np.bincount(self.global_thread[bar], minlength=n_threads)
        return (int(per.min()), int(per.max()))

    def events_of_thread(self, block: int, thread: int) -> np.ndarray:
        """Indices of one thread's events in program order (a whole-trace sort on first use: the frames of a
        prepared trace find them from one block's events, ``Prepared.events_of_thread``)."""
        order = self.thread_order
        keys = self.field("block")[order].astype(np.int64) << 32 | self.field("thread")[order]
        key = (int(block) << 32) | int(thread)
        lo, hi = np.searchsorted(keys, key, "left"), np.searchsorted(keys, key, "right")
        return order[lo:hi]

    def per_thread_sequences(self) -> dict[tuple[int, int], list[tuple]]:
        """{(block, thread): [(kind, array name, index, line), ...]} in program order. For tests."""
        names = [a.name for a in self.launch.arrays]
        out: dict[tuple[int, int], list[tuple]] = {}
        c = {name: self.field(name) for name in ("block", "thread", "kind", "array", "index", "line")}
        for i in self.thread_order:
            key = (int(c["block"][i]), int(c["thread"][i]))
            a = int(c["array"][i])
            out.setdefault(key, []).append(
                (EventKind(int(c["kind"][i])).label, names[a] if a >= 0 else None, int(c["index"][i]), int(c["line"][i]))
            )
        return out

    def info(self) -> dict:
        """The summary ``gpuviz info --json`` prints."""
        L = self.launch
        return {
            "kernel": L.kernel_name,
            "backend": L.backend,
            "device": L.device,
            "grid": list(L.grid),
            "block": list(L.block),
            "threads": L.n_threads,
            "warp_size": L.warp_size,
            "arrays": [a.to_json() for a in L.arrays],
            "n_events": len(self),
            "events": self.counts_by_kind(),
            "barriers_per_thread": list(self.barriers_per_thread()),
            "dropped": int(L.dropped),
            "warnings": list(L.warnings),
            "timings": dict(L.timings),
            "created": L.created,
        }

    def __repr__(self) -> str:
        L = self.launch
        return (
            f"<Trace {L.kernel_name} grid={L.grid} block={L.block} backend={L.backend} "
            f"events={len(self):,} dropped={L.dropped}>"
        )
