"""Trace files (``.gpuviz``): one zip archive, no pickle, a schema version, damaged files rejected clearly.

Layout (the archive is what ``np.savez_compressed`` would write, plus a manifest)::

    meta.json                 {"format": "gpuviz-trace", "schema_version": 1, "gpuviz_version": "...",
                               "traces": [{"launch": Launch.to_json(), "n_events": N,
                                           "fields": ["block", "thread", ...]}, ...]}
    trace0/block.npy          one .npy per trace per recorded field (fields a backend did not record are
    trace0/thread.npy         not stored: they come back filled with "unknown", as ``Trace`` does)
    ...

Loading never unpickles or executes anything from the file (``.npy`` headers are parsed by numpy's
literal-only reader, arrays are read as raw bytes of the dtype the schema fixes). Every problem, a
truncated download, a PNG renamed to ``.gpuviz``, a file from a newer gpuviz, events that point outside
their launch, becomes a :class:`TraceFileError` that names the file and says what is wrong.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile
import zlib
from pathlib import Path

import numpy as np

from .trace import EVENT_FIELDS, REQUIRED_FIELDS, SCHEMA_VERSION, EventKind, Launch, Trace

FORMAT_MAGIC = "gpuviz-trace"
META_NAME = "meta.json"
SUFFIX = ".gpuviz"

# Deflate level 1: a 10M-event trace saves several times faster than at the default level 6 and the file
# is only slightly larger (event fields are small integers that compress well at any level).
_COMPRESS_LEVEL = 1
_READ_CHUNK = 1 << 24  # bytes read from a member at a time, so a huge field never needs two full copies
_MAX_META_BYTES = 64 << 20  # a manifest larger than this is not one gpuviz wrote

_MEMORY_KIND_CODES = np.array(sorted(int(k) for k in EventKind if k.is_memory), dtype=np.uint8)


class TraceFileError(ValueError):
    """A trace file that cannot be read or written: damaged, foreign, too new, or inconsistent."""


def _member(trace_no: int, field_name: str) -> str:
    return f"trace{trace_no}/{field_name}.npy"


def _gpuviz_version() -> str:
    try:
        from .. import __version__

        return str(__version__)
    except ImportError:  # the model used on its own, outside the gpuviz package
        return "unknown"


# ---- writing ---------------------------------------------------------------------------------------
def save_traces(path, traces) -> None:
    """Write ``traces`` (a list of :class:`Trace`) to one file at ``path``, atomically.

    The file is written under a temporary name in the same folder and moved over ``path`` only once
    complete, so a crash or a full disk never leaves half a file where a good one was.
    """
    path = Path(path)
    traces = list(traces)
    for i, tr in enumerate(traces):
        if not isinstance(tr, Trace):
            raise TypeError(f"save_traces({str(path)!r}): item {i} is a {type(tr).__name__}, not a Trace")

    entries = []
    for i, tr in enumerate(traces):
        fields = [name for name in EVENT_FIELDS if tr.has(name)]
        entries.append({"launch": tr.launch.to_json(), "n_events": len(tr), "fields": fields})
    meta = {
        "format": FORMAT_MAGIC,
        "schema_version": SCHEMA_VERSION,
        "gpuviz_version": _gpuviz_version(),
        "traces": entries,
    }
    try:
        meta_text = json.dumps(meta, indent=1, allow_nan=True)
    except (TypeError, ValueError) as exc:
        raise TraceFileError(
            f"cannot save {path}: the launch metadata is not JSON-serialisable ({exc}); "
            "Launch.meta, versions and timings may hold only numbers, strings, lists and dicts"
        ) from exc

    folder = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise TraceFileError(f"cannot save {path}: cannot create a file in {folder} ({exc.strerror or exc})") from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=_COMPRESS_LEVEL) as zf:
                zf.writestr(META_NAME, meta_text)
                for i, (tr, entry) in enumerate(zip(traces, entries)):
                    for name in entry["fields"]:
                        arr = np.ascontiguousarray(tr.field(name), dtype=EVENT_FIELDS[name][0])
                        with zf.open(_member(i, name), "w", force_zip64=True) as out:
                            np.lib.format.write_array(out, arr, allow_pickle=False)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except OSError:
            pass
        raise


# ---- reading ---------------------------------------------------------------------------------------
def load_trace(path) -> Trace:
    """The first trace stored in ``path``."""
    traces = load_traces(path)
    if not traces:
        raise TraceFileError(f"{path}: the file is a valid gpuviz trace file but holds no traces")
    return traces[0]


def load_traces(path) -> list[Trace]:
    """Every trace stored in ``path``, in the order they were saved."""
    path = Path(path)
    where = str(path)
    if not path.exists():
        raise TraceFileError(f"{where}: no such file")
    if path.is_dir():
        raise TraceFileError(f"{where}: is a folder, not a trace file")
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError as exc:
        raise TraceFileError(f"{where}: cannot be read ({exc.strerror or exc})") from exc
    if size == 0:
        raise TraceFileError(f"{where}: the file is empty (0 bytes), not a gpuviz trace")
    if not head.startswith(b"PK"):
        raise TraceFileError(f"{where}: not a gpuviz trace file: it is {_describe_foreign(head)}, not a zip archive")
    try:
        zf = zipfile.ZipFile(path, "r")
    except zipfile.BadZipFile as exc:
        raise TraceFileError(
            f"{where}: damaged or truncated ({exc}); the zip directory at the end of the file is missing "
            "or corrupt, which is what an interrupted download or copy leaves"
        ) from exc
    except (OSError, ValueError, EOFError) as exc:
        raise TraceFileError(f"{where}: damaged or truncated, cannot open it as a zip archive ({exc})") from exc
    with zf:
        meta = _read_meta(zf, where)
        return [_read_trace(zf, where, i, entry) for i, entry in enumerate(meta["traces"])]


def _describe_foreign(head: bytes) -> str:
    known = {
        b"\x89PNG": "a PNG image",
        b"\xff\xd8\xff": "a JPEG image",
        b"GIF8": "a GIF image",
        b"%PDF": "a PDF document",
        b"\x93NUMPY": "a single .npy array",
        b"\x1f\x8b": "a gzip file",
        b"\x80": "a Python pickle",
        b"{": "a JSON/text file",
    }
    for magic, what in known.items():
        if head.startswith(magic):
            return what
    return f"unrecognised content (starts with {head[:8]!r})"


def _read_member_bytes(zf: zipfile.ZipFile, where: str, name: str, limit: int) -> bytes:
    try:
        info = zf.getinfo(name)
    except KeyError:
        raise TraceFileError(f"{where}: the archive lacks {name!r}") from None
    if info.file_size > limit:
        raise TraceFileError(f"{where}: {name!r} is {info.file_size:,} bytes, more than a gpuviz file ever holds")
    try:
        with zf.open(info) as fh:
            return fh.read()
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, NotImplementedError) as exc:
        raise TraceFileError(f"{where}: {name!r} is damaged ({exc})") from exc


def _read_meta(zf: zipfile.ZipFile, where: str) -> dict:
    names = set(zf.namelist())
    if META_NAME not in names:
        looks_like = "a numpy .npz archive" if any(n.endswith(".npy") for n in names) else "a zip archive"
        raise TraceFileError(
            f"{where}: not a gpuviz trace file: it is {looks_like} without {META_NAME} "
            f"(holds {len(names)} member(s){': ' + ', '.join(sorted(names)[:5]) if names else ''})"
        )
    raw = _read_member_bytes(zf, where, META_NAME, _MAX_META_BYTES)
    try:
        meta = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TraceFileError(f"{where}: {META_NAME} is not valid JSON ({exc})") from exc
    if not isinstance(meta, dict):
        raise TraceFileError(f"{where}: {META_NAME} must hold a JSON object, found {type(meta).__name__}")
    if meta.get("format") != FORMAT_MAGIC:
        raise TraceFileError(
            f"{where}: not a gpuviz trace file: {META_NAME} says format {meta.get('format')!r}, "
            f"expected {FORMAT_MAGIC!r}"
        )
    version = meta.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise TraceFileError(f"{where}: {META_NAME} has an invalid schema_version {version!r}")
    if version > SCHEMA_VERSION:
        raise TraceFileError(
            f"{where}: written by a newer gpuviz ({meta.get('gpuviz_version', 'unknown version')}, trace schema "
            f"{version}); this gpuviz reads schema {SCHEMA_VERSION} and older: upgrade gpuviz to open it"
        )
    traces = meta.get("traces")
    if not isinstance(traces, list) or not all(isinstance(t, dict) for t in traces):
        raise TraceFileError(f"{where}: {META_NAME} must list the traces as JSON objects under 'traces'")
    return meta


def _read_trace(zf: zipfile.ZipFile, where: str, i: int, entry: dict) -> Trace:
    label = f"trace {i}"
    try:
        launch = Launch.from_json(entry["launch"])
        _check_launch(launch)
    except KeyError as exc:
        raise TraceFileError(f"{where}: {label}: the launch description lacks {exc}") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise TraceFileError(f"{where}: {label}: invalid launch description ({exc})") from exc
    label = f"trace {i} ({launch.kernel_name})"

    fields = entry.get("fields")
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise TraceFileError(f"{where}: {label}: 'fields' must be a list of field names")
    unknown = [f for f in fields if f not in EVENT_FIELDS]
    if unknown:
        raise TraceFileError(f"{where}: {label}: unknown event field(s) {unknown}; known: {', '.join(EVENT_FIELDS)}")
    missing = [f for f in REQUIRED_FIELDS if f not in fields]
    if missing:
        raise TraceFileError(f"{where}: {label}: required event field(s) {missing} are not stored")
    n_events = entry.get("n_events")
    if not isinstance(n_events, int) or isinstance(n_events, bool) or n_events < 0:
        raise TraceFileError(f"{where}: {label}: invalid n_events {n_events!r}")

    columns = {name: _read_field(zf, where, label, _member(i, name), name, n_events) for name in fields}
    _check_events(where, label, launch, columns)
    return Trace(launch, columns)


def _check_launch(launch: Launch) -> None:
    if not isinstance(launch.kernel_name, str):
        raise ValueError("kernel_name must be a string")
    if min(launch.grid) < 1 or min(launch.block) < 1:
        raise ValueError(f"grid {launch.grid} and block {launch.block} must be positive")
    if not isinstance(launch.warp_size, int) or launch.warp_size < 1:
        raise ValueError(f"warp_size must be a positive integer, got {launch.warp_size!r}")
    if not isinstance(launch.meta, dict):
        raise ValueError("meta must be a JSON object")
    for a in launch.arrays:
        if any(s < 0 for s in a.shape):
            raise ValueError(f"array {a.name!r} has a negative dimension in shape {a.shape}")
        if np.dtype(a.dtype).hasobject:
            raise ValueError(f"array {a.name!r} has an object dtype")


def _read_field(zf: zipfile.ZipFile, where: str, label: str, member: str, name: str, n_events: int) -> np.ndarray:
    expected = EVENT_FIELDS[name][0]
    try:
        info = zf.getinfo(member)
    except KeyError:
        raise TraceFileError(f"{where}: {label}: field {name!r} is listed but {member!r} is not in the archive") from None
    try:
        with zf.open(info) as fh:
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                shape, _fortran, dtype = np.lib.format.read_array_header_1_0(fh)
            elif version in ((2, 0), (3, 0)):
                shape, _fortran, dtype = np.lib.format.read_array_header_2_0(fh)
            else:
                raise ValueError(f"unsupported .npy format version {version}")
            if dtype.hasobject or dtype.kind != expected.kind or dtype.itemsize != expected.itemsize:
                raise TraceFileError(
                    f"{where}: {label}: field {name!r} has dtype {dtype}, the schema says {expected}"
                )
            if len(shape) != 1:
                raise TraceFileError(f"{where}: {label}: field {name!r} has shape {shape}, expected 1-d")
            if shape[0] != n_events:
                raise TraceFileError(
                    f"{where}: {label}: field {name!r} has {shape[0]:,} events, the trace has {n_events:,} "
                    "(fields of one trace must have equal lengths)"
                )
            if n_events * dtype.itemsize > info.file_size:  # checked before allocating: forged sizes
                raise TraceFileError(
                    f"{where}: {label}: field {name!r} would need {n_events * dtype.itemsize:,} bytes but "
                    f"{member!r} holds only {info.file_size:,}"
                )
            out = np.empty(n_events, dtype=dtype)
            view = out.view(np.uint8)
            pos = 0
            while pos < view.size:
                got = fh.readinto(memoryview(view[pos : pos + _READ_CHUNK]))
                if not got:
                    raise TraceFileError(
                        f"{where}: {label}: field {name!r} is truncated ({pos:,} of {view.size:,} bytes)"
                    )
                pos += got
            if fh.read(1):  # also runs the CRC check at the end of the member
                raise TraceFileError(f"{where}: {label}: field {name!r} has bytes after its {n_events:,} events")
    except TraceFileError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, NotImplementedError, io.UnsupportedOperation) as exc:
        raise TraceFileError(f"{where}: {label}: field {name!r} ({member}) is damaged ({exc})") from exc
    return out.astype(expected, copy=False)


def _first_bad(where: str, label: str, bad: np.ndarray, what: str, values: np.ndarray) -> None:
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise TraceFileError(
            f"{where}: {label}: {int(bad.sum()):,} event(s) have {what}; the first is event {pos} "
            f"(value {values[pos].item()!r})"
        )


def _check_events(where: str, label: str, launch: Launch, cols: dict[str, np.ndarray]) -> None:
    kind = cols["kind"]
    _first_bad(where, label, kind >= len(EventKind), f"a kind outside EventKind (0..{len(EventKind) - 1})", kind)
    block = cols["block"]
    _first_bad(where, label, (block < 0) | (block >= launch.n_blocks), f"a block outside 0..{launch.n_blocks - 1}", block)
    thread = cols["thread"]
    tpb = launch.threads_per_block
    _first_bad(where, label, (thread < 0) | (thread >= tpb), f"a thread outside 0..{tpb - 1}", thread)
    seq = cols["seq"]
    _first_bad(where, label, seq < 0, "a negative seq", seq)
    if "array" not in cols:
        return
    array = cols["array"]
    n_arrays = len(launch.arrays)
    _first_bad(where, label, (array < -1) | (array >= n_arrays), f"an array id outside -1..{n_arrays - 1}", array)
    if "index" not in cols or n_arrays == 0:
        return
    index = cols["index"]
    sizes = np.array([a.size for a in launch.arrays] + [0], dtype=np.int64)  # id -1 -> the trailing 0
    on_array = np.isin(kind, _MEMORY_KIND_CODES) & (array >= 0)
    size_of = sizes[array]  # array == -1 indexes the trailing 0, masked out by on_array anyway
    bad = on_array & ((index < 0) | (index >= size_of))
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        a = launch.arrays[int(array[pos])]
        raise TraceFileError(
            f"{where}: {label}: {int(bad.sum()):,} memory event(s) index outside their array; the first is "
            f"event {pos}: index {int(index[pos])} into {a.name!r} of shape {a.shape} ({a.size} elements)"
        )
