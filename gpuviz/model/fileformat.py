"""The ``.gpuviz`` file format, declared once: every stored array, its type, its length and the values it may hold.

The writer (:mod:`gpuviz.model.tracefile`), the index builder (:mod:`gpuviz.model.index`), the validator
(:mod:`gpuviz.model.validate`) and the fuzz bench (``tests/fuzzing.py``) all read this table, so what gpuviz
writes and what it accepts cannot drift apart: a range said here is the one the loader enforces, and the
round-trip tests check that every trace gpuviz can produce stays within it.

A range is a pair of bounds, each a whole number or a name of a launch (or trace) quantity, optionally plus or
minus a number: ``("-1", "n_blocks-1")`` reads "from -1 (none) to the launch's last block". The names:

    n_blocks          blocks in the grid              n_events      events of the trace
    threads_per_block threads in one block            n_frames      frames of the trace (its index)
    warps_per_block   warps in one block              warp_size     32
    n_arrays          arrays the launch lists         n_kinds       kinds of event (EventKind)
    n_sites           recorded sites of the launch    int31         2**31 - 1
    big               2**62 (a count, not an index)

numpy only: no Qt, no numba.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .trace import EVENT_FIELDS, EventKind

_INT31 = (1 << 31) - 1


@dataclass(frozen=True)
class Column:
    """One stored array, or one column of a stored record array."""

    kinds: str  # numpy dtype kinds it may have ("iu": integers, "f": floats, "b": bool, "U": text)
    lo: str | int | None = None  # least value (None: unbounded)
    hi: str | int | None = None  # greatest value
    doc: str = ""
    values: tuple[str, ...] = ()  # for text: the values it may hold (empty: any text, up to 1000 characters)

    def range_text(self, env: dict[str, int]) -> str:
        return f"{_show(self.lo, env)}..{_show(self.hi, env)}"


@dataclass(frozen=True)
class Table:
    """Arrays stored side by side (one ``<name>.<column>`` member each, or one record array): equal lengths."""

    length: str  # one entry per: "events", "frames", "frames+1", "blocks", "threads" (of the launch); "rows", "2xrows": any
    columns: dict[str, Column]
    record: bool = False  # stored as one structured array (``races.records``) rather than a member per column


# ---- the events ---------------------------------------------------------------------------------------
#: every event field: its dtype is :data:`gpuviz.model.trace.EVENT_FIELDS`'s (what the writer casts to and the
#: reader requires), its range is here
EVENTS: dict[str, Column] = {
    "block": Column("i", 0, "n_blocks-1", "linear block id"),
    "thread": Column("i", 0, "threads_per_block-1", "linear thread id in its block"),
    "seq": Column("i", 0, None, "per-thread sequence number"),
    "kind": Column("u", 0, "n_kinds-1", "an EventKind"),
    "array": Column("i", -1, "n_arrays-1", "index into launch.arrays (-1: none)"),
    "index": Column("i", -1, None, "flat element index (-1: none); within its array for memory events"),
    "line": Column("i", -1, None, "source line (-1: unknown)"),
    "step": Column("i", -1, None, "lockstep issue step (-1: unknown)"),
    "sm": Column("i", -1, None, "SM the block ran on (-1: unknown)"),
    "time": Column("i", None, None, "%globaltimer in ns (-1: unknown)"),
    "value": Column("f", None, None, "value loaded or stored (NaN: not recorded)"),
    "site": Column("i", -1, "n_sites-1", "index into launch.sites (-1: unknown)"),
}
assert set(EVENTS) == set(EVENT_FIELDS), "every event field is declared"

# ---- a trace's index (gpuviz.model.index) ----------------------------------------------------------------
_FRAME = "frames"
#: the arrays of :class:`gpuviz.model.frames.Frames` that the index stores (``frames.<name>``), by length
FRAMES: dict[str, Table] = {
    "per event": Table("events", {
        "perm": Column("iu", 0, "n_events-1", "the frame order: event numbers"),
        "frame_of_event": Column("iu", 0, "n_frames-1", "the frame of every event"),
    }),
    "memory events": Table("rows", {
        "memory_events": Column("iu", 0, "n_events-1", "the memory events' positions in the frame order"),
    }),
    "offsets": Table("frames+1", {
        "offsets": Column("iu", 0, "n_events", "where each frame's events start in the frame order"),
    }),
    "per frame": Table("frames", {
        "block": Column("iu", 0, "n_blocks-1"),
        "warp": Column("iu", 0, "warps_per_block-1"),
        # the lockstep issue step of the frame's events, as the events' own step: counted over the whole launch, so
        # a recording of chosen blocks has steps past its number of events (hypothesis: 2 blocks of 1 thread,
        # block 0 recorded, 4 events, steps 1..5)
        "step": Column("iu", -1, None),
        "phase": Column("iu", 0, "n_events"),
        "line": Column("iu", -1, None),
        "array": Column("iu", -1, "n_arrays-1"),
        "kind_mask": Column("iu", 0, None, "the kinds of event the frame holds, one bit each"),
        "kind": Column("iu", 0, "n_kinds-1"),
        "n_lanes": Column("iu", 0, "warp_size"),
        "release_frame": Column("iu", -1, "n_frames-1", "the frame a barrier frame's warps are released at"),
        "waiting_warps": Column("iu", 0, "n_events"),
        "_by_block_key": Column("iu", None, None, "the sort key of the block order"),
    }),
    "per block": Table("blocks", {
        "block_first": Column("iu", -1, "n_frames-1", "first frame of each block (-1: none)"),
        "block_last": Column("iu", -1, "n_frames-1"),
        "block_phases": Column("iu", 0, "n_events"),
    }),
    "frame lists": Table("rows", {
        "barrier_frames": Column("iu", 0, "n_frames"),
        "step_starts": Column("iu", 0, "n_frames"),
        "barrier_complete_frames": Column("iu", 0, "n_frames"),
        "unit_starts": Column("iu", 0, "n_frames"),
        "block_starts": Column("iu", 0, "n_frames"),
    }),
    "line counts": Table("2xrows", {
        "line_count_table": Column("iu", 0, None, "[source lines, events on each]"),
    }),
}
#: which table each ``frames.<name>`` array is in
FRAME_TABLE_OF: dict[str, str] = {name: t for t, table in FRAMES.items() for name in table.columns}

#: the barrier phase of every event (``trace.phase``)
PHASE = Table("events", {"trace.phase": Column("iu", 0, "n_events")})

_STEP = Column("iu", -1, "int31", "lockstep step (-1: unknown)")
_BLOCK = Column("iu", 0, "n_blocks-1")
_WARP = Column("iu", 0, "warps_per_block-1")
_KIND = Column("iu", 0, "n_kinds-1")
_ARRAY = Column("iu", -1, "n_arrays-1")
_LINE = Column("iu", -1, "int31")
_LANES = Column("iu", 0, "warp_size")
_COUNT = Column("iu", 0, "big")

#: the analysis reports' tables (``<report>.<field>.<column>``, or one record array ``<report>.<field>``)
REPORTS: dict[str, Table] = {
    "global_memory.requests": Table("rows", {
        "block": _BLOCK, "warp": _WARP, "step": _STEP, "kind": _KIND, "array": _ARRAY, "line": _LINE, "lanes": _LANES,
        "sectors": Column("iu", 0, 1 << 20), "lines": Column("iu", 0, 1 << 20), "bytes": _COUNT,
        "ideal_sectors": Column("iu", 0, 1 << 20), "efficiency": Column("f"),
    }),
    "shared_banks.requests": Table("rows", {
        "block": _BLOCK, "warp": _WARP, "step": _STEP, "kind": _KIND, "array": _ARRAY, "line": _LINE, "lanes": _LANES,
        "ways": Column("iu", 0, 1 << 16, "n-way bank conflict"), "wavefronts": Column("iu", 0, 1 << 16),
        "extra": Column("iu", 0, 1 << 16, "wavefronts beyond the first"),
    }),
    "divergence.steps": Table("rows", {
        "block": _BLOCK, "warp": _WARP, "step": _STEP, "active": _LANES, "idle": _LANES,
        "lines": Column("iu", 0, 1 << 20, "distinct source lines the warp's lanes are on"), "line": _LINE,
    }),
    "races.records": Table("rows", record=True, columns={
        "space": Column("U", values=("shared", "global")),
        "array": Column("iu", 0, "n_arrays-1"),
        "index": Column("iu", -1, None),
        # a race between blocks belongs to no block and no phase: -1
        "block": Column("iu", -1, "n_blocks-1", "the block the race is in (-1: between different blocks)"),
        "phase": Column("iu", -1, "int31", "its barrier phase (-1: between different blocks)"),
        "block_a": Column("iu", -1, "n_blocks-1"), "thread_a": Column("iu", -1, "threads_per_block-1"),
        "kind_a": _KIND, "line_a": _LINE,
        "block_b": Column("iu", -1, "n_blocks-1"), "thread_b": Column("iu", -1, "threads_per_block-1"),
        "kind_b": _KIND, "line_b": _LINE,
        "loads": _COUNT, "stores": _COUNT, "atomics": _COUNT,
    }),
}

#: the form of the reports' JSON parts (``info["reports"][<report>][<field>]["json"]``): keys a dict must have,
#: a list's rows (one example row), 0 for a number (any number or null), "" for text, False for a flag
REPORT_JSON: dict[str, dict] = {
    "global_memory": {
        "per_line": [{
            "line": 0, "requests": 0, "load_requests": 0, "store_requests": 0, "sectors": 0, "ideal_sectors": 0,
            "bytes": 0, "sectors_per_request": 0, "efficiency": 0,
        }],
        "totals": {kind: {"requests": 0, "sectors": 0, "lines": 0, "bytes": 0, "ideal_sectors": 0, "efficiency": 0,
                          "sectors_per_request": 0} for kind in ("load", "store", "atomic")},
        "sectors_per_request": {"load": 0, "store": 0, "atomic": 0},
    },
    "shared_banks": {
        "per_line": [{
            "line": 0, "requests": 0, "wavefronts": 0, "bank_conflicts": 0, "load_conflicts": 0,
            "store_conflicts": 0,
        }],
        "totals": {
            "load": {"requests": 0, "wavefronts": 0, "bank_conflicts": 0, "max_ways": 0},
            "store": {"requests": 0, "wavefronts": 0, "bank_conflicts": 0, "max_ways": 0},
        },
        "bank_conflicts": {"load": 0, "store": 0, "total": 0},
    },
    "divergence": {
        "per_line": [{
            "line": 0, "warp_instructions": 0, "active_lanes": 0, "idle_lanes": 0, "diverged": 0,
            "mean_active_lanes": 0, "simt_efficiency": 0,
        }],
        "totals": {"warp_instructions": 0, "active_lanes": 0, "mean_active_lanes": 0, "simt_efficiency": 0,
                   "occupied_lane_fraction": 0, "diverged_instructions": 0, "partial_instructions": 0},
        "step_recorded": False,
    },
    "races": {
        "array_names": [""],
    },
}

#: the narration's per-frame, per-thread and per-barrier facts (``narration.<name>``)
NARRATION: dict[str, Table] = {
    "per frame": Table("frames", {name: Column("iub") for name in (
        "lanes", "lane_lo", "lane_hi", "idx_lo", "idx_hi", "idx_stride", "idx_regular", "lane_step", "distinct",
        "max_mult", "_n_main", "g_row", "s_row", "d_row", "n_waiting", "wait_lo", "wait_hi")}),
    "per thread": Table("threads", {
        "t_first": Column("iu", 0, None, "each thread's first frame (the int64 maximum: it has none)"),
        "t_last": Column("iu", -1, "n_frames-1", "each thread's last frame (-1: it has none)")}),
    "barriers": Table("rows", {"bar_keys": Column("iu"), "bar_threads": Column("iu")}),
}


# ---- reading the declaration ---------------------------------------------------------------------------
def env_of(launch, n_events: int = 0, n_frames: int = 0) -> dict[str, int]:
    """The quantities the ranges name, for ``launch`` (a :class:`~gpuviz.model.trace.Launch`)."""
    return {
        "n_blocks": int(launch.n_blocks), "threads_per_block": int(launch.threads_per_block),
        "warps_per_block": int(launch.warps_per_block), "warp_size": int(launch.warp_size),
        "n_arrays": len(launch.arrays), "n_sites": len(launch.sites), "n_kinds": len(EventKind),
        "n_events": int(n_events), "n_frames": int(n_frames), "int31": _INT31, "big": 1 << 62,
    }


_BOUND = re.compile(r"^\s*([a-z_0-9]+)\s*(?:([+-])\s*(\d+))?\s*$")


def bound(expr: str | int | None, env: dict[str, int]) -> int | None:
    """The value of one bound of a range (None: unbounded)."""
    if expr is None or isinstance(expr, int):
        return expr
    m = _BOUND.match(expr)
    if not m:
        raise ValueError(f"malformed bound {expr!r}")
    name, sign, k = m.groups()
    base = int(name) if name.lstrip("-").isdigit() else env[name]
    return base + (int(k) if sign == "+" else -int(k) if sign == "-" else 0)


def _show(expr, env) -> str:
    v = bound(expr, env)
    if v is None:
        return ""
    return f"{v:,}" if isinstance(expr, int) or str(expr).lstrip("-").isdigit() else f"{expr} = {v:,}"


def column_problem(col: Column, values: np.ndarray, env: dict[str, int], lo_hi=None) -> str:
    """Why ``values`` do not fit ``col`` ("" when they do). ``lo_hi``: their least and greatest value, when the
    caller has them already (a span-at-a-time pass over a mapped array)."""
    if values.dtype.kind not in col.kinds:
        return f"has dtype {values.dtype}, the format says {_kind_names(col.kinds)}"
    if values.dtype.kind == "U":
        if not len(values):
            return ""
        if col.values:
            bad = ~np.isin(values, np.array(col.values))
            if bad.any():
                return f"holds {str(values[int(np.argmax(bad))])!r}, not one of {', '.join(col.values)}"
        if int(np.char.str_len(values).max()) > 1000:
            return "holds overlong text"
        return ""
    lo, hi = bound(col.lo, env), bound(col.hi, env)
    if (lo is None and hi is None) or not len(values) or values.dtype.kind not in "iub":
        return ""
    vmin, vmax = lo_hi if lo_hi is not None else (int(values.min()), int(values.max()))
    if (lo is not None and vmin < lo) or (hi is not None and vmax > hi):
        return (f"holds values outside {col.range_text(env)} (it holds {vmin:,}..{vmax:,})")
    return ""


def _kind_names(kinds: str) -> str:
    names = {"i": "signed integers", "u": "unsigned integers", "f": "floats", "b": "booleans", "U": "text"}
    return " or ".join(names[k] for k in kinds)


def table_length(table: Table, n_events: int, n_frames: int, n_blocks: int, n_threads: int | None = None) -> int | None:
    """How many entries each column of ``table`` must have (None: any number of rows)."""
    return {"events": n_events, "frames": n_frames, "frames+1": n_frames + 1, "blocks": n_blocks,
            "threads": n_threads}.get(table.length)


def index_member_column(name: str) -> tuple[Table, Column] | None:
    """The declaration of index array ``name`` (``frames.perm``, ``races.records``, ``narration.lanes``,
    ``global_memory.requests.block``), or None for an array the format does not declare."""
    group, _, rest = name.partition(".")
    if group == "frames" and rest in FRAME_TABLE_OF:
        table = FRAMES[FRAME_TABLE_OF[rest]]
        return table, table.columns[rest]
    if name in PHASE.columns:
        return PHASE, PHASE.columns[name]
    if group == "narration":
        for table in NARRATION.values():
            if rest in table.columns:
                return table, table.columns[rest]
        return None
    head, _, column = name.rpartition(".")
    table = REPORTS.get(head)
    if table is not None and not table.record and column in table.columns:
        return table, table.columns[column]
    return None


def undeclared(names) -> list[str]:
    """The index arrays among ``names`` the format does not declare (an index gpuviz builds has none)."""
    return [n for n in names if index_member_column(n) is None and n not in REPORTS]
