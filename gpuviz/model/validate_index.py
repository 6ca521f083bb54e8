"""What a trace's stored index must satisfy before it is used (schema 2 and later: :mod:`gpuviz.model.index`).

:mod:`gpuviz.model.tracefile` reads an index stored with a trace (and the user's cache folder's index files);
:func:`gpuviz.model.index.check_index` says whether it is these events' index at all (its version and the CRCs
of the events it was computed from); what it claims is then checked here before the frames adopt it: the JSON
part's types (:func:`check_index_spec`), each array's header (:func:`check_index_header`), the frames' arrays
against the events and the format's declaration (:func:`check_index_arrays`), and the analysis reports' JSON
against the form :data:`gpuviz.model.fileformat.REPORT_JSON` writes down, their tables against
``fileformat.REPORTS`` (:func:`check_index_reports`). No analysis is run to check a file. A failure is a
:class:`~gpuviz.model.validate.TraceFileError` naming the file, as for the rest of it (:mod:`gpuviz.model.validate`).

numpy only: no Qt, no numba.
"""

from __future__ import annotations

import math

import numpy as np

from . import fileformat
from .frames import Frames, frames_at
from .trace import Launch
from .validate import DEFAULT_LIMITS, Limits, _bad_name, _is_int, _is_num, _need, _no_release, min_max, spans


def check_index_spec(spec, where: str, label: str, lim: Limits = DEFAULT_LIMITS) -> None:
    """The JSON part of a trace's index entry in meta.json (types only; whether it fits the events is
    :func:`gpuviz.model.index.check_index`'s question)."""
    at = f"{where}: {label}: index"
    _need(isinstance(spec, dict), at, f"must be a JSON object, not {type(spec).__name__}")
    names = spec.get("arrays")
    _need(isinstance(names, list) and len(names) <= 10_000 and all(isinstance(n, str) and not _bad_name(n)
                                                                   and "/" not in n for n in names),
          at, "'arrays' must be a list of array names")
    _need(len(set(names)) == len(names), at, "'arrays' names an array twice")
    crc = spec.get("events_crc")
    if crc is not None:
        _need(isinstance(crc, dict) and all(isinstance(k, str) and _is_int(v) and 0 <= v < (1 << 32)
                                            for k, v in crc.items()), at,
              "'events_crc' must map field names to CRC-32 values")
    if "version" in spec:
        _need(_is_int(spec["version"]), at, f"'version' must be a whole number, not {spec['version']!r}"[:200])
    reports = spec.get("reports")
    if reports is not None:
        _need(isinstance(reports, dict) and all(isinstance(v, dict) for v in reports.values()), at,
              "'reports' must map report names to JSON objects")
        for rname, fields in reports.items():
            for fname, part in fields.items():
                _need(isinstance(part, dict) and ("array" in part or "json" in part or
                                                  (isinstance(part.get("arrays"), list)
                                                   and all(isinstance(k, str) for k in part["arrays"]))),
                      at, f"report {rname!r} field {fname!r} is neither an array, arrays nor JSON")


def check_index_header(where: str, what: str, dtype: np.dtype, shape, fortran: bool, nbytes: int) -> None:
    """An index array's .npy header, before its data is read: a plain number type, 1-d, its data's size."""
    at = f"{where}: {what}"
    plain = dtype.kind in "biufU" and dtype.shape == ()
    record = dtype.names is not None and all(dtype.fields[f][0].kind in "biufU" and dtype.fields[f][0].shape == ()
                                             for f in dtype.names)
    _need(not dtype.hasobject and (plain or record) and dtype.itemsize <= 4096, at,
          f"has dtype {dtype}: not an index array"[:300])
    _need(not fortran and isinstance(shape, tuple) and 1 <= len(shape) <= 4, at, f"has shape {shape}: not an index array")
    items = math.prod(shape)
    _need(items * dtype.itemsize == nbytes, at, f"declares {items:,} items of {dtype.itemsize} bytes but holds "
          f"{nbytes:,} bytes")


def check_index_arrays(where: str, label: str, arrays: dict[str, np.ndarray], n_events: int, launch: Launch,
                       cols: dict[str, np.ndarray], release=None) -> None:
    """The frame arrays of an index that claims to be for these events (its CRCs match them): the event
    permutation and frame offsets, the frame of every event, per-frame summaries equal to the events they
    summarise, per-block ranges and frame lists within the frames. O(events), no sort; per-event arrays are
    checked a span of :data:`CHUNK` at a time (``release`` as :func:`check_events` has it)."""
    at = f"{where}: {label}: index"
    release = release or _no_release
    fr = {k[len("frames."):]: v for k, v in arrays.items() if k.startswith("frames.")}
    if not fr:
        return
    for k in fr:
        if k != "line_count_table" and fileformat.index_member_column("frames." + k) is not None:
            _need(fr[k].ndim == 1 and fr[k].dtype.kind in "iub", at, f"frames.{k} is not a 1-d integer array")
    for k in ("perm", "offsets", "frame_of_event"):
        _need(k in fr, at, f"lacks frames.{k}")
    # the window adopts the saved frames whole (Frames._adopt): an index of this version lacking one is damaged
    missing = [k for k in Frames.STORED if k not in fr]
    _need(not missing, at, "lacks " + ", ".join(f"frames.{k}" for k in missing))
    perm, offsets, foe = fr["perm"], fr["offsets"], fr["frame_of_event"]
    n = n_events
    _need(len(perm) == n and len(foe) == n and len(offsets) >= 1, at, "its per-event arrays do not have one entry per event")
    n_frames = len(offsets) - 1
    offs = offsets.astype(np.int64)
    _need(int(offs[0]) == 0 and int(offs[-1]) == n and bool(np.all(np.diff(offs) > 0)), at,
          "its frame offsets do not rise from 0 to the number of events, one or more events per frame")
    if n:
        lo, hi = min_max(perm)
        _need(lo >= 0 and hi < n, at, "its event permutation points outside the trace")
        seen = np.zeros(n, dtype=bool)
        for i, j in spans(n):
            seen[perm[i:j].astype(np.intp)] = True
        _need(bool(seen.all()), at, "its event permutation repeats events")
        del seen
        # position k of the frame order lies in frame f where offs[f] <= k < offs[f + 1]
        for i, j in spans(n):
            got = foe[perm[i:j].astype(np.intp)].astype(np.int64)
            _need(bool(np.array_equal(got, frames_at(offs, i, j))), at, "the frame of an event disagrees with its offsets")
            release(perm, i, j)
        release(foe, 0, n)
        first = perm[offs[:-1]].astype(np.intp)
        for k in ("block", "line", "array"):
            if k in fr and k in cols:
                _need(len(fr[k]) == n_frames and bool(np.array_equal(fr[k].astype(np.int64), cols[k][first])), at,
                      f"frames.{k} disagrees with the events")
                release(cols[k], 0, n)
        del first
    if "line_count_table" in fr:  # the source view reads it as [lines, counts]: equal to the events' own
        table = fr["line_count_table"]
        _need(table.ndim == 2 and table.shape[0] == 2 and table.dtype.kind in "iu", at,
              "frames.line_count_table is not a 2 x n table of integers")
        if "line" in cols:
            want = _line_counts(cols["line"], release)
            _need(bool(np.array_equal(table.astype(np.int64), want)), at,
                  "frames.line_count_table disagrees with the events")
    # lengths and value ranges: the format's (fileformat.FRAMES)
    env = fileformat.env_of(launch, n, n_frames)
    for k, arr in fr.items():
        declared = fileformat.index_member_column("frames." + k)
        if declared is None:
            continue
        table, col = declared
        want = fileformat.table_length(table, n, n_frames, launch.n_blocks)
        if want is not None:
            _need(len(arr) == want, at, f"frames.{k} has {len(arr):,} entries, the format says one per "
                  f"{table.length.rstrip('s').replace('+1', '')} ({want:,})")
        if arr.ndim == 1 and len(arr) and k not in ("perm", "frame_of_event"):  # those two were checked above
            why = fileformat.column_problem(col, arr, env)
            _need(not why, at, f"frames.{k} {why}")
    ph = arrays.get("trace.phase")
    if ph is not None:
        _need(ph.ndim == 1 and ph.dtype.kind in "iu" and len(ph) == n, at, "trace.phase is not one phase per event")
        if n:
            lo, hi = min_max(ph, release)
            _need(lo >= 0 and hi <= n, at, "trace.phase out of range")


def _line_counts(line: np.ndarray, release=None) -> np.ndarray:
    """``[lines, counts]``: each source line (> 0) the events name and how many events name it, a span at a time."""
    release = release or _no_release
    n = len(line)
    hi = min_max(line)[1] if n else 0
    if 0 < hi < (1 << 24):
        counts = np.zeros(hi + 1, dtype=np.int64)
        for i, j in spans(n):
            part = np.maximum(line[i:j], 0).astype(np.intp)
            if hi < (1 << 20):
                c = np.bincount(part)
                counts[: len(c)] += c
            else:  # a bincount per span would make (and add up) a table of every line up to the largest
                np.add.at(counts, part, 1)
            release(line, i, j)
        counts[0] = 0
        u = np.flatnonzero(counts)
        return np.stack([u, counts[u]])
    us, cs = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    for i, j in spans(n):
        part = line[i:j].astype(np.int64)
        u, c = np.unique(part[part > 0], return_counts=True)
        us.append(u)
        cs.append(c)
        release(line, i, j)
    u, inverse = np.unique(np.concatenate(us), return_inverse=True)
    counts = np.zeros(len(u), dtype=np.int64)
    np.add.at(counts, inverse, np.concatenate(cs))
    return np.stack([u, counts]).reshape(2, -1)


def _fits(v, ref, depth: int = 0) -> bool:
    """Does JSON ``v`` have the form of ``ref`` (the format's example of what the analyses write,
    :data:`gpuviz.model.fileformat.REPORT_JSON`)?"""
    if depth > 20:
        return False
    if isinstance(ref, bool):
        return isinstance(v, bool)
    if ref is None or (isinstance(ref, (int, float))):
        return v is None or _is_num(v) or (ref is None and isinstance(v, str))
    if isinstance(ref, str):
        return isinstance(v, str) and len(v) <= 1_000_000
    if isinstance(ref, list):
        return isinstance(v, list) and len(v) <= 10_000_000 and (not ref or all(_fits(x, ref[0], depth + 1) for x in v))
    if isinstance(ref, dict):
        if not isinstance(v, dict) or not set(ref) <= set(v):
            return False
        sibling = next(iter(ref.values()), None)
        return all(_fits(x, ref[k] if k in ref else sibling, depth + 1) for k, x in v.items())
    return False


def check_index_reports(where: str, label: str, arrays: dict[str, np.ndarray], reports, launch: Launch) -> None:
    """The analysis reports an index carries: their JSON in the form the analyses write, their tables'
    columns of equal length, and the columns that index blocks, warps, arrays or kinds within the launch."""
    at = f"{where}: {label}: index"
    if not isinstance(reports, dict):
        return
    ref = fileformat.REPORT_JSON
    env = fileformat.env_of(launch)
    for name, fields in reports.items():
        if name not in ref:
            continue
        for fname, part in fields.items():
            if "json" in part and fname in ref[name]:
                _need(_fits(part["json"], ref[name][fname]), at,
                      f"report {name!r} field {fname!r} is not in the form the analyses write")
        groups: dict[str, list[str]] = {}
        for key in arrays:
            if key.startswith(name + "."):
                parts = key.split(".")
                groups.setdefault(".".join(parts[:2]), []).append(key)
        for group, keys in groups.items():
            lengths = {len(arrays[k]) for k in keys}
            _need(len(lengths) <= 1, at, f"the columns of {group} differ in length")
            table = fileformat.REPORTS.get(group)
            for k in keys:
                arr = arrays[k]
                if arr.dtype.names is None:
                    cols = [(k.split(".")[-1], arr)]
                    declared = table.columns if table is not None and not table.record else {}
                else:
                    cols = [(f, arr[f]) for f in arr.dtype.names]
                    declared = table.columns if table is not None and table.record and k == group else {}
                    missing = [c for c in declared if c not in arr.dtype.names]
                    _need(not missing, at, f"{k} lacks the column(s) {', '.join(missing)} the format declares")
                for col, values in cols:
                    where_col = f"{k}{'.' + col if arr.dtype.names else ''}"
                    if col in declared:
                        why = fileformat.column_problem(declared[col], values, env)
                        _need(not why, at, f"{where_col} {why}")
                    elif values.dtype.kind == "U" and len(values):  # a column the format does not know: safe text
                        _need(int(np.char.str_len(values).max()) <= 1000, at, f"{where_col} holds overlong text")
