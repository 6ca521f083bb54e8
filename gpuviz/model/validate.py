"""What a trace file must satisfy before anything else in gpuviz reads it.

:mod:`gpuviz.model.tracefile` reads the archive; this module decides whether what it read may be handed
on. Views, analyses, narration and ``gpuviz info`` index arrays by the values a file holds (block ids,
thread ids, array ids, flat indices, kinds) and allocate by the sizes it declares (launch dimensions,
array shapes, event counts), so a file that lies about any of them is refused here, with a
:class:`TraceFileError` that names the file and says what is wrong, before any allocation that
depends on it:

* the archive: member names (no absolute paths, ``..``, backslashes or control characters; no
  duplicates), compression methods (stored or deflate: what gpuviz writes), no encryption, and a byte
  budget: the sizes the zip directory declares are summed and refused over :attr:`Limits.max_bytes`
  before anything is inflated (zipfile never inflates a member past its declared size, and checks its
  CRC at the end), and a file that would inflate far more than any trace compresses (a zip bomb) is
  refused from its directory alone;
* the manifest: JSON types of every field the program reads, the schema version, the launch
  (dimensions within CUDA's limits, array shapes and dtypes: plain numbers only, never objects),
  the ``meta`` entries the program interprets;
* the events: equal field lengths, dtypes the schema fixes, kinds, blocks and threads within the
  launch, array ids and flat indices within the declared shapes, sequence numbers and steps within
  the range the analyses tabulate.

Fields a backend did not record are not stored and not checked; a field this module does not know
is refused by the reader (it lists the known ones). A trace's stored index is checked by
:mod:`gpuviz.model.validate_index`.
"""

from __future__ import annotations

import math
import os
import re
import zipfile
from dataclasses import dataclass, field

import numpy as np

from . import fileformat
from .dtypes import RECORD_PREFIX, parse_dtype
from .trace import EVENT_FIELDS, REQUIRED_FIELDS, SITE_KINDS, SITE_SCOPES, EventKind, Launch


class TraceFileError(ValueError):
    """A trace file that cannot be read or written: damaged, foreign, too new, or inconsistent."""


#: the numeric dtypes an array of a launch may have (the names ``str(np.dtype(...))`` gives): no objects,
#: strings, records, sub-arrays or datetimes, whose parsing or size could be anything
ARRAY_DTYPES = frozenset(
    ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
     "float64", "complex64", "complex128"]
)
#: the other element types numba-cuda kernels take and gpuviz writes as numpy names them: fixed-width bytes and text
#: (numba-cuda's string-constant tests) and dates and time spans (its datetime tests), at most 4096 characters
_OTHER_ARRAY_DTYPE = re.compile(r"\|S[1-9]\d{0,3}|[<>]U[1-9]\d{0,3}|"
                                r"(datetime64|timedelta64)\[(Y|M|W|D|h|m|s|ms|us|ns|ps|fs|as)\]")
ARRAY_SPACES = ("global", "shared", "local")

_INT31 = (1 << 31) - 1
_GIB = 1 << 30


def _env_bytes(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(float(text))
    except ValueError:
        return default
    return value if value > 0 else default


@dataclass(frozen=True)
class Limits:
    """Bounds on what one file may declare. The defaults hold every trace gpuviz writes for a launch its
    views can draw; ``GPUVIZ_MAX_TRACE_BYTES`` raises or lowers the byte budget."""

    #: bytes the whole file may inflate to (all its members, all its traces together)
    max_bytes: int = field(default_factory=lambda: _env_bytes("GPUVIZ_MAX_TRACE_BYTES", 2 * _GIB))
    #: bytes of meta.json (the kernel's source, launch descriptions)
    max_meta_bytes: int = 16 << 20
    #: inflated / compressed bytes over which a large file is taken for a zip bomb (deflate reaches
    #: ~1,030x on constant bytes; traces gpuviz writes compress 9-35x)
    max_ratio: float = 200.0
    #: the ratio is only judged once a file inflates to more than this
    ratio_floor: int = 64 << 20
    max_members: int = 100_000
    max_traces: int = 10_000
    max_events: int = _INT31  # per trace: frame and event numbers are int32 in the views
    max_blocks: int = 1 << 24  # the grid view draws one cell per block
    max_arrays: int = 4096
    max_array_elements: int = 1 << 28  # the memory view draws one cell per element
    max_total_elements: int = 1 << 29  # over all arrays of one launch
    max_dims: int = 8
    max_text: int = 4 << 20  # characters of one string (source, a warning)
    max_list: int = 100_000  # items of a warnings list / keys of a versions dict


DEFAULT_LIMITS = Limits()

# CUDA's limits on one launch (compute capability 3.0 and later)
_MAX_GRID = (_INT31, 65535, 65535)
_MAX_BLOCK = (1024, 1024, 64)
_MAX_THREADS_PER_BLOCK = 1024

_MEMORY_KIND_CODES = np.array(sorted(int(k) for k in EventKind if k.is_memory), dtype=np.uint8)


def limits(max_bytes: int | None = None) -> Limits:
    """The default limits (read now, so that the environment variable may change between loads), with
    ``max_bytes`` when given."""
    base = Limits()
    if max_bytes is None:
        return base
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ValueError(f"max_bytes must be a positive number of bytes, not {max_bytes!r}")
    return Limits(max_bytes=max_bytes)


def _mb(n: int) -> str:
    return f"{n / (1 << 20):,.1f} MB" if n >= (1 << 20) else f"{n:,} bytes"


# ---- the archive -----------------------------------------------------------------------------------
def _bad_name(name: str) -> str:
    """Why a member name is not one gpuviz writes or would follow ("" when it is fine)."""
    if not name or len(name) > 255:
        return "an empty or overlong name"
    if "\\" in name or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "an absolute or Windows path"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "control characters"
    if any(part in ("..", ".") for part in name.split("/")):
        return "a '..' or '.' path component (path traversal)"
    return ""


def check_archive(zf: zipfile.ZipFile, where: str, lim: Limits = DEFAULT_LIMITS, file_size: int | None = None) -> None:
    """Member names, methods and the byte budget, from the zip directory alone (nothing inflated). The
    budget counts what deflated members would inflate to; stored members must lie within the file
    (``file_size``), which bounds them."""
    if file_size is None:
        file_size = zf.fp.seek(0, 2) if zf.fp is not None else 1 << 62
    infos = zf.infolist()
    if len(infos) > lim.max_members:
        raise TraceFileError(f"{where}: the archive holds {len(infos):,} members, more than a gpuviz file ever has "
                             f"({lim.max_members:,})")
    seen: set[str] = set()
    total = 0
    compressed = 0
    for info in infos:
        name = info.filename
        why = _bad_name(name)
        if why:
            raise TraceFileError(f"{where}: the archive has a member named {name!r}: {why}; gpuviz never writes one")
        if name in seen:
            raise TraceFileError(f"{where}: the archive holds {name!r} twice (which one is meant is ambiguous)")
        seen.add(name)
        if info.flag_bits & 0x1:
            raise TraceFileError(f"{where}: {name!r} is encrypted; gpuviz files never are")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise TraceFileError(f"{where}: {name!r} uses zip compression method {info.compress_type}; gpuviz files "
                                 "are stored or deflated")
        if info.file_size < 0 or info.compress_size < 0:
            raise TraceFileError(f"{where}: {name!r} declares a negative size")
        if info.compress_type == zipfile.ZIP_STORED:  # its bytes are in the file (then mapped, not inflated)
            if info.file_size != info.compress_size or info.header_offset + info.compress_size > file_size:
                raise TraceFileError(f"{where}: {name!r} is stored with {info.file_size:,} bytes that the file does "
                                     "not hold (damaged or truncated)")
            continue
        total += info.file_size
        compressed += info.compress_size
    if total > lim.max_bytes:
        raise TraceFileError(
            f"{where}: the file would inflate to {_mb(total)}, over the {_mb(lim.max_bytes)} a trace file may inflate to "
            "(set GPUVIZ_MAX_TRACE_BYTES to open larger files)")
    if total > lim.ratio_floor and total > lim.max_ratio * max(compressed, 1):
        raise TraceFileError(
            f"{where}: {_mb(compressed)} of compressed data would inflate to {_mb(total)} "
            f"({total / max(compressed, 1):,.0f}x): no trace compresses like that; refusing it as a zip bomb")


# ---- JSON types ------------------------------------------------------------------------------------
def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool))


def _need(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise TraceFileError(f"{where}: {what}")


def _text(v, where: str, key: str, lim: Limits) -> None:
    _need(isinstance(v, str), where, f"{key!r} must be text, not {type(v).__name__}")
    _need(len(v) <= lim.max_text, where, f"{key!r} is {len(v):,} characters long, over {lim.max_text:,}")


def _int_in(v, lo: int, hi: int, where: str, key: str) -> None:
    _need(_is_int(v) and lo <= v <= hi, where, f"{key!r} must be a whole number in {lo}..{hi:,}, not {v!r}")


def check_manifest(meta, where: str, lim: Limits = DEFAULT_LIMITS) -> None:
    """The top level of meta.json (format and schema version are checked by the reader, which knows
    which schema versions it reads)."""
    _need(isinstance(meta, dict), where, f"meta.json must hold a JSON object, found {type(meta).__name__}")
    traces = meta.get("traces")
    _need(isinstance(traces, list) and all(isinstance(t, dict) for t in traces), where,
          "meta.json must list the traces as JSON objects under 'traces'")
    _need(len(traces) <= lim.max_traces, where, f"meta.json lists {len(traces):,} traces, over {lim.max_traces:,}")
    # gpuviz never writes a file of no trace (a recording with none is not saved): its list was cut
    _need(len(traces) > 0, where, "meta.json lists no trace: a gpuviz file holds at least one")
    if "gpuviz_version" in meta:
        _text(meta["gpuviz_version"], where, "gpuviz_version", lim)
    if "recording" in meta:  # the run the traces come from (gpuviz.model.recording): read, never executed
        rec = meta["recording"]
        _need(isinstance(rec, dict), where, f"meta.json 'recording' must be a JSON object, not {type(rec).__name__}")
        launches = rec.get("launches", [])
        _need(isinstance(launches, list) and len(launches) <= lim.max_list
              and all(isinstance(x, dict) for x in launches), where,
              "meta.json 'recording' must list its launches as JSON objects under 'launches'")
        for key in ("script", "status", "backend"):
            if key in rec:
                _text(rec[key], where, f"recording {key}", lim)


def check_entry(entry: dict, where: str, label: str, lim: Limits = DEFAULT_LIMITS) -> None:
    """One trace's entry in the manifest: its field list and event count (the launch separately)."""
    at = f"{where}: {label}"
    fields = entry.get("fields")
    _need(isinstance(fields, list) and all(isinstance(f, str) for f in fields), at,
          "'fields' must be a list of field names")
    unknown = [f for f in fields if f not in EVENT_FIELDS]
    _need(not unknown, at, f"unknown event field(s) {unknown[:5]}; known: {', '.join(EVENT_FIELDS)}")
    _need(len(set(fields)) == len(fields), at, "'fields' names a field twice")
    missing = [f for f in REQUIRED_FIELDS if f not in fields]
    _need(not missing, at, f"required event field(s) {missing} are not stored")
    n = entry.get("n_events")
    _need(_is_int(n) and 0 <= n <= lim.max_events, at, f"invalid n_events {n!r} (a whole number 0..{lim.max_events:,})")


_LAUNCH_TEXT = ("kernel_name", "source", "source_file", "backend", "device", "created")


def check_launch_json(d, where: str, label: str, lim: Limits = DEFAULT_LIMITS) -> None:
    """The JSON types and ranges of a launch description, before :meth:`Launch.from_json` reads it."""
    _need(d is not None, f"{where}: {label}", "the trace entry lacks 'launch'")
    at = f"{where}: {label}: invalid launch description"
    _need(isinstance(d, dict), at, f"it must be a JSON object, not {type(d).__name__}")
    _need("kernel_name" in d, at, "the launch description lacks 'kernel_name'")
    for key in _LAUNCH_TEXT:
        if key in d:
            _text(d[key], at, key, lim)
    _need(bool(d["kernel_name"].strip()), at, "'kernel_name' is empty")
    for key, limit in (("grid", _MAX_GRID), ("block", _MAX_BLOCK)):
        _need(key in d, at, f"the launch description lacks {key!r}")
        v = d[key]
        _need(isinstance(v, list) and 1 <= len(v) <= 3 and all(_is_int(x) for x in v), at,
              f"{key!r} must be a list of 1 to 3 whole numbers, not {v!r}")
        for axis, (x, hi) in enumerate(zip(v, limit)):
            _need(1 <= x <= hi, at, f"{key} {v}: dimension {'xyz'[axis]} must be 1..{hi:,} (CUDA's limit)")
    grid = d["grid"] + [1] * (3 - len(d["grid"]))
    block = d["block"] + [1] * (3 - len(d["block"]))
    tpb = block[0] * block[1] * block[2]
    _need(tpb <= _MAX_THREADS_PER_BLOCK, at, f"a block of {block} is {tpb:,} threads, over CUDA's {_MAX_THREADS_PER_BLOCK}")
    n_blocks = grid[0] * grid[1] * grid[2]
    _need(n_blocks <= lim.max_blocks, at, f"a grid of {grid} is {n_blocks:,} blocks, over the {lim.max_blocks:,} "
          "gpuviz can draw")
    if "warp_size" in d:
        _need(d["warp_size"] == 32 and _is_int(d["warp_size"]), at,
              f"'warp_size' must be 32 (every NVIDIA GPU's), not {d['warp_size']!r}")
    if "first_line" in d:
        _int_in(d["first_line"], 1, _INT31, at, "first_line")
    if "dropped" in d:
        _int_in(d["dropped"], 0, 1 << 62, at, "dropped")
    if "backend" in d:  # cpu, sim, gpu; "plain" for a launch a runner could not instrument
        _need(len(d["backend"]) <= 100, at, "'backend' is longer than a backend's name")
    for key, value_ok, what in (("versions", lambda v: isinstance(v, str) and len(v) <= 10_000, "text"),
                                ("timings", lambda v: _is_num(v), "numbers (seconds)")):
        if key in d:
            v = d[key]
            _need(isinstance(v, dict) and len(v) <= lim.max_list, at, f"{key!r} must be a JSON object")
            bad = [k for k, x in v.items() if not value_ok(x)]
            _need(not bad, at, f"{key!r} must map names to {what}; {bad[0]!r} is {v[bad[0]]!r}" if bad else "")
    if "warnings" in d:
        w = d["warnings"]
        _need(isinstance(w, list) and len(w) <= lim.max_list and all(isinstance(x, str) and len(x) <= lim.max_text
                                                                     for x in w),
              at, "'warnings' must be a list of text")
    if "meta" in d:
        _need(isinstance(d["meta"], dict), at, f"'meta' must be a JSON object, not {type(d['meta']).__name__}")
    arrays = d.get("arrays", [])
    check_arrays_json(arrays, at, lim)
    if "sites" in d:
        check_sites_json(d["sites"], at, lim)
    if "meta" in d:
        check_launch_meta(d["meta"], at, [a["name"] for a in arrays])


def check_arrays_json(arrays, at: str, lim: Limits = DEFAULT_LIMITS) -> None:
    """The launch's arrays: names, dtypes (plain numbers, bytes, text, dates; records as their bytes), shapes,
    spaces and lines, and the elements they hold within what gpuviz can draw."""
    _need(isinstance(arrays, list), at, f"'arrays' must be a list, not {type(arrays).__name__}")
    _need(len(arrays) <= lim.max_arrays, at, f"{len(arrays):,} arrays, over {lim.max_arrays:,}")
    total = 0
    names = set()
    for k, a in enumerate(arrays):
        aat = f"{at}, array {k}"
        _need(isinstance(a, dict), aat, "an array is a JSON object with name, shape, dtype")
        for key in ("name", "shape", "dtype"):
            _need(key in a, aat, f"lacks {key!r}")
        _text(a["name"], aat, "name", lim)
        _need(0 < len(a["name"]) <= 1000, aat, f"its name must be 1..1000 characters, not {len(a['name']):,}")
        _need(a["name"] not in names, aat, f"two arrays are named {a['name']!r}")
        names.add(a["name"])
        _need(isinstance(a["dtype"], str) and (a["dtype"] in ARRAY_DTYPES or _OTHER_ARRAY_DTYPE.fullmatch(a["dtype"])),
              aat, f"dtype {str(a['dtype'])[:100]!r} is not a plain number type ({', '.join(sorted(ARRAY_DTYPES))}),"
              " fixed-width bytes or text (|S12, <U12) or a date or time span (datetime64[D], timedelta64[ns])")
        if a.get("record"):  # an array of records is stored as its bytes, "record" says what they hold
            why = _record_dtype_problem(a["record"]) if isinstance(a["record"], str) else "not text"
            _need(not why, aat, f"its record layout {str(a['record'])[:200]!r} is not one gpuviz writes ({why})")
        shape = a["shape"]
        _need(isinstance(shape, list) and len(shape) <= lim.max_dims and all(_is_int(s) and 0 <= s <= _INT31
                                                                            for s in shape),
              aat, f"shape must be a list of at most {lim.max_dims} whole numbers 0..{_INT31:,}, not {shape!r}"[:300])
        size = math.prod(shape)
        _need(size <= lim.max_array_elements, aat, f"shape {shape} is {size:,} elements, over the "
              f"{lim.max_array_elements:,} gpuviz can draw")
        total += size
        if "space" in a:
            _need(a["space"] in ARRAY_SPACES, aat, f"space must be one of {', '.join(ARRAY_SPACES)}, not {a['space']!r}")
        if "line" in a:
            _int_in(a["line"], -1, _INT31, aat, "line")
    _need(total <= lim.max_total_elements, at, f"the arrays hold {total:,} elements together, over "
          f"{lim.max_total_elements:,}")


def check_sites_json(sites, at: str, lim: Limits = DEFAULT_LIMITS) -> None:
    """The launch's table of recorded sites (schema 3): kind, line, column, and the subscript's text."""
    _need(isinstance(sites, list), at, f"'sites' must be a list, not {type(sites).__name__}")
    _need(len(sites) <= lim.max_list, at, f"{len(sites):,} sites, over {lim.max_list:,}")
    for k, site in enumerate(sites):
        sat = f"{at}, site {k}"
        _need(isinstance(site, dict), sat, "a site is a JSON object with kind and line")
        _need(site.get("kind") in SITE_KINDS, sat, f"kind must be one of {', '.join(SITE_KINDS)}, not "
              f"{str(site.get('kind'))[:100]!r}")
        _need("line" in site, sat, "lacks 'line'")
        _int_in(site["line"], -1, _INT31, sat, "line")
        if "col" in site:
            _int_in(site["col"], -1, _INT31, sat, "col")
        if "scope" in site:  # absent in files written before grid barriers were told apart: a block's barrier
            _need(site["scope"] in SITE_SCOPES, sat, f"scope must be one of {', '.join(SITE_SCOPES)}, not "
                  f"{str(site['scope'])[:100]!r}")
        for key in ("function", "array"):
            if key in site:
                _need(isinstance(site[key], str) and len(site[key]) <= 1000, sat, f"{key!r} must be text of up to "
                      "1000 characters")
        if "index" in site:
            ix = site["index"]
            _need(isinstance(ix, list) and len(ix) <= lim.max_dims
                  and all(isinstance(x, str) and len(x) <= 1000 for x in ix), sat,
                  f"'index' must be a list of at most {lim.max_dims} texts (one per dimension)")


#: ``launch.meta`` entries the program interprets -> (the check, what it must be)
def _is_dict(v) -> bool:
    return isinstance(v, dict)


_META_TYPES = {
    "registers_per_thread": (lambda v: _is_int(v) and 0 <= v <= 255, "a whole number 0..255"),
    "shared_bytes_per_block": (lambda v: _is_int(v) and 0 <= v <= (1 << 20), "a whole number of bytes 0..1 MB"),
    "recording": (_is_dict, "a JSON object"),
    "device": (_is_dict, "a JSON object"),
    "plain": (_is_dict, "a JSON object"),
    "instrumented": (_is_dict, "a JSON object"),
    "fallback": (_is_dict, "a JSON object"),
    "bundled_kernel": (_is_dict, "a JSON object"),
    "recorded_on": (lambda v: isinstance(v, str) and len(v) <= 100, "a date (text)"),
}


def check_launch_meta(meta: dict, at: str, array_names: list[str]) -> None:
    for key, (ok, what) in _META_TYPES.items():
        if key in meta and meta[key] is not None:
            _need(ok(meta[key]), at, f"meta {key!r} must be {what}, not {meta[key]!r}"[:300])
    offsets = meta.get("shared_offsets")
    if offsets is not None:
        _need(isinstance(offsets, dict) and all(_is_int(v) and 0 <= v <= (1 << 20) for v in offsets.values()), at,
              "meta 'shared_offsets' must map shared arrays to byte offsets 0..1 MB")
    dev = meta.get("device")
    if isinstance(dev, dict) and "max_threads_per_sm" in dev:
        _int_in(dev["max_threads_per_sm"], 1, 1 << 16, at, "meta device max_threads_per_sm")
    for key in ("plain", "instrumented"):
        v = meta.get(key)
        if isinstance(v, dict) and "resident_blocks_per_sm" in v:
            _int_in(v["resident_blocks_per_sm"], -1, 1 << 16, at, f"meta {key} resident_blocks_per_sm")
    rec = meta.get("recording")
    if isinstance(rec, dict):
        for key in ("number", "events"):
            if rec.get(key) is not None:
                _int_in(rec[key], 0, 1 << 62, at, f"meta recording {key}")
        for key in ("grid", "block"):
            if rec.get(key) is not None:
                v = rec[key]
                _need(isinstance(v, list) and 1 <= len(v) <= 3 and all(_is_int(x) and 1 <= x <= _INT31 for x in v),
                      at, f"meta recording {key} must be 1 to 3 positive whole numbers, not {v!r}"[:300])
        for key in ("kernel", "status", "reason", "file"):
            if rec.get(key) is not None:
                _need(isinstance(rec[key], str), at, f"meta recording {key} must be text")


def _record_dtype_problem(text: str) -> str:
    """Why ``text`` is not a record dtype an array of a launch may have ("" when it is): a struct (numpy.random's
    xoroshiro128p states, a user's record type) of plain numbers, bytes or text, sub-arrays of them and nested
    records, at most 256 fields and 64 KB an element; never objects."""
    if len(text) > 20_000 or not text.startswith(RECORD_PREFIX + "{"):
        return "not a record layout"
    try:
        dt = parse_dtype(text)
    except (TypeError, ValueError, KeyError, IndexError, RecursionError, MemoryError):
        return "not a layout numpy understands"
    if dt.names is None or dt.hasobject or dt.itemsize > (64 << 10):
        return "not a record of plain types"
    fields = 0
    todo = [dt]
    while todo:
        d = todo.pop()
        base = d.base if d.shape else d
        if base.names is not None:
            fields += len(base.names)
            todo.extend(base.fields[n][0] for n in base.names)
        elif base.kind not in "biufcSU":
            return f"a field of dtype {base}"
        if fields > 256:
            return "more than 256 fields"
    return ""


def check_launch(launch: Launch, where: str, label: str) -> None:
    """What :meth:`Launch.from_json` made (after :func:`check_launch_json`): shapes and dtypes as numpy sees them."""
    at = f"{where}: {label}"
    for a in launch.arrays:
        dt = a.numpy_dtype
        plain = dt.kind in "biufcSUMm" and dt.shape == ()
        _need(not dt.hasobject and (plain or dt.names is not None), at, f"array {a.name!r} has dtype {dt}")


# ---- events ----------------------------------------------------------------------------------------
def check_field_header(where: str, label: str, name: str, dtype: np.dtype, shape, fortran: bool, n_events: int) -> None:
    """A field's .npy header, before its data is read: the schema's dtype, 1-d, the trace's length."""
    expected = EVENT_FIELDS[name][0]
    at = f"{where}: {label}"
    _need(not dtype.hasobject and dtype.kind == expected.kind and dtype.itemsize == expected.itemsize
          and dtype.shape == () and dtype.names is None, at,
          f"field {name!r} has dtype {dtype}, the schema says {expected}")
    _need(isinstance(shape, tuple) and len(shape) == 1, at, f"field {name!r} has shape {shape}, expected 1-d")
    _need(shape[0] == n_events, at, f"field {name!r} has {shape[0]:,} events, the trace has {n_events:,} "
          "(fields of one trace must have equal lengths)")


#: events checked at a time: every pass over a trace's fields goes a span of this many events at a time, so no
#: numpy call runs over a whole 16M-event field (some hold the GIL for all of theirs, against the GUI thread) and
#: no temporary is bigger than a span's
CHUNK = 1 << 20


def spans(n: int, size: int | None = None):
    """``(start, stop)`` of consecutive spans of at most ``size`` (default :data:`CHUNK`) of ``range(n)``."""
    size = max(int(size or CHUNK), 1)
    for i in range(0, n, size):
        yield i, min(i + size, n)


def _no_release(_arr: np.ndarray, _start: int, _stop: int) -> None:
    pass


def min_max(a: np.ndarray, release=None) -> tuple[int, int]:
    """The least and greatest value of a non-empty 1-d integer array, a span at a time."""
    release = release or _no_release
    lo, hi = None, None
    for i, j in spans(len(a)):
        part = a[i:j]
        x, y = int(part.min()), int(part.max())
        lo, hi = (x, y) if lo is None else (min(lo, x), max(hi, y))
        release(a, i, j)
    return lo, hi


class _Tally:
    """How many events a check found bad and the first of them, gathered span by span."""

    __slots__ = ("count", "first")

    def __init__(self):
        self.count, self.first = 0, -1

    def add(self, start: int, bad: np.ndarray) -> None:
        c = int(np.count_nonzero(bad))
        if c:
            if self.first < 0:
                self.first = start + int(np.argmax(bad))
            self.count += c


#: the event fields whose ranges are checked, in the order their messages take precedence (array and index,
#: stored together or not at all, come last)
_EVENT_CHECK_ORDER = ("kind", "block", "thread", "seq", "step", "line", "sm", "site")
_EVENT_NOUNS = {"kind": "a kind", "block": "a block", "thread": "a thread", "seq": "a seq", "step": "a step",
                "line": "a source line", "sm": "an SM", "site": "a site", "array": "an array id",
                "index": "a flat index"}


def _event_check(name: str, env: dict, launch: Launch):
    """(field, what its bad values are, the test of a span) for one event field, from its declared range."""
    col = fileformat.EVENTS[name]
    lo, hi = fileformat.bound(col.lo, env), fileformat.bound(col.hi, env)
    noun = _EVENT_NOUNS[name]
    if hi is None:
        what = f"a negative {name}" if lo == 0 else f"{noun} below {lo}"
        return name, what, (lambda v: v < lo)
    what = f"{noun} outside {lo}..{hi}"
    if name == "kind":
        what = f"a kind outside EventKind ({lo}..{hi})"
    elif name == "site":
        what += f" (the launch lists {len(launch.sites)} recorded site(s))"
    if lo is None or (lo == 0 and name == "kind"):  # unsigned: nothing lies below
        return name, what, (lambda v: v > hi)
    return name, what, (lambda v: (v < lo) | (v > hi))


def check_events(where: str, label: str, launch: Launch, cols: dict[str, np.ndarray], release=None) -> None:
    """The stored event fields against each other and against the launch, a span of :data:`CHUNK` events at a
    time (every field's span checked, then the next span). ``release(array, start, stop)``: told when a span of
    a field has been checked for good (the reader lets go of the file pages it read)."""
    at = f"{where}: {label}"
    n = None
    for name, col in cols.items():
        _need(col.ndim == 1, at, f"field {name!r} is not 1-d")
        if n is None:
            n = len(col)
        _need(len(col) == n, at, f"field {name!r} has {len(col):,} events, others {n:,}")
    n = n or 0
    release = release or _no_release
    n_arrays = len(launch.arrays)
    env = fileformat.env_of(launch, n)
    # (field, what its bad values are, the test of a span): in the order the messages take precedence; the
    # ranges are the format's (fileformat.EVENTS)
    checks = [_event_check(name, env, launch) for name in _EVENT_CHECK_ORDER if name in cols]
    memory = "array" in cols and "index" in cols
    if memory:
        checks += [_event_check("array", env, launch), _event_check("index", env, launch)]
        sizes = np.array([a.size for a in launch.arrays] + [0], dtype=np.int64)  # id -1 -> the trailing 0
    tallies = [_Tally() for _ in checks]
    no_array, outside = _Tally(), _Tally()
    kind = cols["kind"]
    for i, j in spans(n):
        for (name, _what, test), tally in zip(checks, tallies):
            tally.add(i, test(cols[name][i:j]))
        if memory:
            array, index = cols["array"][i:j], cols["index"][i:j]
            is_memory = np.isin(kind[i:j], _MEMORY_KIND_CODES)
            no_array.add(i, is_memory & (array < 0))
            if n_arrays:
                # ids outside the launch are reported above; clipped here only so that indexing cannot fail
                size_of = sizes[np.clip(array, -1, n_arrays - 1)]
                outside.add(i, is_memory & (array >= 0) & ((index < 0) | (index >= size_of)))
        for col in cols.values():
            release(col, i, j)

    def refuse(tally: _Tally, what: str, values: np.ndarray) -> None:
        if tally.count:
            pos = tally.first
            raise TraceFileError(f"{at}: {tally.count:,} event(s) have {what}; the first is event {pos} "
                                 f"(value {values[pos].item()!r})")

    for (name, what, _test), tally in zip(checks[:len(checks) - 2 * memory], tallies):
        refuse(tally, what, cols[name])
    _need(("array" in cols) == ("index" in cols), at,
          "fields 'array' and 'index' are stored together or not at all; one of them is missing")
    if not memory:
        return
    for (name, what, _test), tally in zip(checks[len(checks) - 2:], tallies[len(checks) - 2:]):
        refuse(tally, what, cols[name])
    refuse(no_array, "a memory access (load, store, atomic) on no array", cols["array"])
    if outside.count:
        pos = outside.first
        a = launch.arrays[int(cols["array"][pos])]
        raise TraceFileError(
            f"{at}: {outside.count:,} memory event(s) index outside their array; the first is "
            f"event {pos}: index {int(cols['index'][pos])} into {a.name!r} of shape {a.shape} ({a.size} elements)"
        )
