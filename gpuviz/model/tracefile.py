"""Trace files (``.gpuviz``): one zip archive, no pickle, a schema version, damaged files rejected clearly.

Layout (schema 3: the archive is what ``np.savez`` would write, plus a manifest and an index)::

    trace0/block.npy          one .npy per trace per recorded field (fields a backend did not record are
    trace0/thread.npy         not stored: they come back filled with "unknown", as ``Trace`` does)
    ...
    trace0/index/<name>.npy   the trace's index (gpuviz.model.index): frame order and offsets, phases, per-block
    ...                       frame ranges, the analysis reports' tables
    meta.json                 {"format": "gpuviz-trace", "schema_version": 3, "gpuviz_version": "...",
                               "traces": [{"launch": Launch.to_json(), "n_events": N,
                                           "fields": ["block", "thread", ...],
                                           "index": {"version": 1, "arrays": [...], "events_crc": {...},
                                                     "reports": {...}}}, ...]}

Members are stored uncompressed, each ``.npy``'s data at a 64-byte aligned offset of the file (a padding
extra field in the zip's local header, as Android's zipalign does), so loading maps the arrays into memory
(``np.memmap``) instead of inflating and copying them: the window touches only the pages it draws. The CRC-32
of every member is still checked. Schema 3 adds the launch's table of recorded sites (``launch.sites``, in the
manifest) and the events' ``site`` field; schema 2 files (no sites: every event's site reads as unknown, -1)
open as they are. Schema 1 files (deflated members, no index) are read as before, by
streaming; a file without an index gets one from :mod:`gpuviz.model.index` (built in the background by the
window, kept in the user's cache folder).

Loading never unpickles or executes anything from the file (``.npy`` headers are parsed by numpy's
literal-only reader, arrays are read as raw bytes of the dtype the schema fixes). Every problem, a
truncated download, a PNG renamed to ``.gpuviz``, a file from a newer gpuviz, events that point outside
their launch, becomes a :class:`TraceFileError` that names the file and says what is wrong.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import io
import json
import mmap
import os
import re
import stat
import struct
import threading
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from . import validate, validate_index
from .index import TraceIndex, build_index, check_index
from .prepared import prepare
from .safewrite import OutputPathError, replace_atomically
from .trace import EVENT_FIELDS, SCHEMA_VERSION, Launch, Trace
from .validate import TraceFileError

FORMAT_MAGIC = "gpuviz-trace"
META_NAME = "meta.json"
SUFFIX = ".gpuviz"

_ALIGN = 64  # data offset alignment of stored members (numpy pads .npy headers to 64 bytes as well)
_PAD_EXTRA_ID = 0xD935  # the zip extra-field id zipalign uses for padding
INDEX_FORMAT_MAGIC = "gpuviz-index"
_READ_CHUNK = 1 << 24  # bytes read from a member at a time, so a huge field never needs two full copies
_MAX_META_BYTES = validate.Limits.max_meta_bytes  # a manifest larger than this is not one gpuviz wrote

__all__ = ["TraceFileError", "load_file", "load_trace", "load_traces", "read_manifest", "save_traces"]


def _member(trace_no: int, field_name: str) -> str:
    return f"trace{trace_no}/{field_name}.npy"


def _index_member(trace_no: int, name: str) -> str:
    return f"trace{trace_no}/index/{name}.npy"


def _gpuviz_version() -> str:
    try:
        from ..version import __version__

        return str(__version__)
    except ImportError:  # the model used on its own, outside the gpuviz package
        return "unknown"


# ---- writing ---------------------------------------------------------------------------------------
def save_traces(path, traces, index: bool = True, recording: dict | None = None) -> None:
    """Write ``traces`` (a list of :class:`Trace`) to one file at ``path``, atomically, and check that it opens.

    ``index``: also store each trace's index (:mod:`gpuviz.model.index`; the one the trace already uses, else
    it is built now), so opening the file reads it instead of computing it. ``recording``: the metadata of the
    run the traces come from (JSON: script, argv, status, every launch traced or not), stored as the manifest's
    ``recording`` entry (:mod:`gpuviz.model.recording` reads it).

    Nothing is said saved that does not open again: the finished temporary file is read back by
    :func:`load_traces` (every check a reader makes) before it is moved over ``path``; a file that would not
    load is never put in place, and the :class:`TraceFileError` names the trace (number and kernel) and why.

    The file is written under a temporary name in the same folder and moved over ``path`` only once
    complete, so a crash or a full disk never leaves half a file where a good one was; a ``path`` that
    is a folder, a device or a FIFO is refused, never replaced (:mod:`gpuviz.model.safewrite`).
    """
    path = Path(path)
    traces = list(traces)
    if not traces:  # the loader refuses a file of no trace (what a cut list looks like): never write one
        raise ValueError(f"save_traces({str(path)!r}): no trace to save")
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
    if recording is not None:
        if not isinstance(recording, dict):
            raise TypeError(f"save_traces({str(path)!r}): recording must be a dict, not {type(recording).__name__}")
        meta["recording"] = recording
    try:
        json.dumps(meta, allow_nan=True)
    except (TypeError, ValueError) as exc:
        raise TraceFileError(
            f"cannot save {path}: the launch metadata is not JSON-serialisable ({exc}); "
            "Launch.meta, versions and timings may hold only numbers, strings, lists and dicts"
        ) from exc

    def write(zf: zipfile.ZipFile) -> None:
        for i, (tr, entry) in enumerate(zip(traces, entries)):
            crcs = {}
            for name in entry["fields"]:
                member = _member(i, name)
                _write_npy(zf, member, np.ascontiguousarray(tr.field(name), dtype=EVENT_FIELDS[name][0]))
                crcs[name] = zf.getinfo(member).CRC
            idx = _index_to_save(tr) if index else None
            if idx is not None:
                for name, arr in idx.arrays.items():
                    _write_npy(zf, _index_member(i, name), arr)
                entry["index"] = {**idx.info, "arrays": list(idx.arrays), "events_crc": crcs}

    def reopen(tmp: Path) -> None:
        try:
            back = load_traces(tmp)
        except TraceFileError as exc:
            raise TraceFileError(f"cannot save {path}: what was written would not open again: "
                                 f"{str(exc).replace(str(tmp), str(path))}") from exc
        for i, (tr, got) in enumerate(zip(traces, back)):
            if len(got) != len(tr) or got.launch.kernel_name != tr.launch.kernel_name:
                raise TraceFileError(f"cannot save {path}: trace {i} ({tr.launch.kernel_name}) read back as "
                                     f"{len(got):,} events of {got.launch.kernel_name}, not {len(tr):,}")
        if len(back) != len(traces):
            raise TraceFileError(f"cannot save {path}: {len(traces)} traces written, {len(back)} read back")

    _write_archive(path, write, lambda: meta, check=reopen)


def _index_to_save(tr: Trace) -> TraceIndex:
    """The index the prepared trace uses, else one built now (and not kept: saving changes nothing)."""
    idx = prepare(tr).index
    return idx if idx is not None else build_index(tr)


def _write_archive(path: Path, write, meta_of, check=None) -> None:
    """A zip of stored, aligned members written by ``write(zf)``, then ``meta.json`` from ``meta_of()``,
    atomically at ``path``; ``check(tmp)``, when given, reads the finished temporary file back and raises
    to keep it from replacing ``path``."""
    try:
        with replace_atomically(path, "trace file") as tmp:
            with open(tmp, "wb") as fh:
                with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as zf:
                    write(zf)
                    zf.writestr(META_NAME, json.dumps(meta_of(), indent=1, allow_nan=True))
                fh.flush()
                os.fsync(fh.fileno())
            if check is not None:
                check(Path(tmp))
    except OutputPathError as exc:
        raise TraceFileError(f"cannot save {path}: {exc}") from exc


def _write_npy(zf: zipfile.ZipFile, member: str, arr: np.ndarray) -> None:
    """One .npy member, stored uncompressed with its array data at an ``_ALIGN``-byte offset of the file."""
    arr = np.ascontiguousarray(arr)
    if arr.dtype.hasobject:
        raise TraceFileError(f"cannot save {member}: object arrays are never written")
    info = zipfile.ZipInfo(member, date_time=(2026, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    name_len = len(member.encode("utf-8"))
    # local header: 30 bytes + name + extra (our padding field, then the 20-byte zip64 field force_zip64 adds)
    start = zf.fp.tell() + 30 + name_len + 4 + 20
    pad = (-start) % _ALIGN
    info.extra = struct.pack("<HH", _PAD_EXTRA_ID, pad) + bytes(pad)
    with zf.open(info, "w", force_zip64=True) as out:
        np.lib.format.write_array(out, arr, allow_pickle=False)


# ---- reading ---------------------------------------------------------------------------------------
def load_trace(path, with_index: bool = True, source_folder=None) -> Trace:
    """The first trace stored in ``path``."""
    # a file of no trace is refused as damaged
    return load_traces(path, with_index=with_index, source_folder=source_folder)[0]


def load_traces(path, with_index: bool = True, max_bytes: int | None = None, source_folder=None) -> list[Trace]:
    """Every trace stored in ``path``, in the order they were saved (see :func:`load_file`)."""
    return load_file(path, with_index=with_index, max_bytes=max_bytes, source_folder=source_folder)[0]


def load_file(path, with_index: bool = True, max_bytes: int | None = None,
              source_folder=None) -> tuple[list[Trace], dict]:
    """Every trace stored in ``path``, in the order they were saved, and the file's manifest (checked; its
    ``recording`` entry, when there is one, describes the run the traces come from).

    Stored (schema 2) fields are memory-mapped, read-only; deflated (schema 1) ones are read into memory.
    ``with_index``: use the index the file carries (when it fits the events): each trace is handed to
    :func:`gpuviz.model.prepared.prepare` with it (``prepare(trace).index`` is None when it had none that fits). ``max_bytes``: what the whole file may hold, inflated (default
    :class:`validate.Limits`: 2 GB, or ``GPUVIZ_MAX_TRACE_BYTES``), checked from the zip directory before
    anything is read; everything else :mod:`gpuviz.model.validate` checks before the traces are handed on.
    ``source_folder``: where this installation keeps the kernels' files: a launch whose file (by name) is there
    gets that path, not the one of the machine that wrote the file (a launch does not change once made: this is
    where its path is chosen)."""
    lim = validate.limits(max_bytes)
    where = str(path)
    with collection_paused(), _open_archive(path, lim) as (zf, raw, size):
        meta = _read_meta(zf, where, lim)
        src = _Source(zf, raw, where, size)
        try:
            try:
                traces = [_read_trace(src, i, entry, with_index, lim, source_folder)
                          for i, entry in enumerate(meta["traces"])]
            except Exception:
                src.check_crcs()  # bytes that were changed are what to say, not what they broke further on
                raise
            src.check_crcs()
        finally:
            src.stop_crcs()
        return traces, meta


@contextlib.contextmanager
def collection_paused():
    """Automatic garbage collection paused while a file is read: a manifest's JSON is many small lists (one per
    block and phase of the narration's facts: 120,000 for reduce_sum over 4,096 blocks) that the index compacts
    and reference counting frees; collections triggered meanwhile walked them half-built, 30-120 ms each with the
    GIL held, on the open job's thread (the GUI thread stood still for as long)."""
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def read_manifest(path) -> dict:
    """meta.json of a trace file, checked like :func:`load_traces` checks it, without reading any event."""
    lim = validate.limits()
    with _open_archive(path, lim) as (zf, _raw, _size):
        return _read_meta(zf, str(path), lim)


def _open_archive(path, lim: validate.Limits) -> "_ClosingZip":
    """The archive at ``path``, opened without blocking (a FIFO or a device is refused, never read), its
    directory checked (:func:`validate.check_archive`)."""
    where = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise TraceFileError(f"{where}: no such file") from None
    except IsADirectoryError:
        raise TraceFileError(f"{where}: is a folder, not a trace file") from None
    except (OSError, ValueError, TypeError) as exc:
        raise TraceFileError(f"{where}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from exc
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise TraceFileError(f"{where}: is a folder, not a trace file")
        if not stat.S_ISREG(st.st_mode):
            raise TraceFileError(f"{where}: is not a regular file (a FIFO, a device or a socket); a trace is a file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    fh = os.fdopen(fd, "rb")
    try:
        if st.st_size == 0:
            raise TraceFileError(f"{where}: the file is empty (0 bytes), not a gpuviz trace")
        try:
            head = fh.read(8)
            fh.seek(0)
        except OSError as exc:
            raise TraceFileError(f"{where}: cannot be read ({exc.strerror or exc})") from exc
        if not head.startswith(b"PK"):
            raise TraceFileError(f"{where}: not a gpuviz trace file: it is {_describe_foreign(head)}, not a zip archive")
        try:
            zf = zipfile.ZipFile(fh, "r")
        except zipfile.BadZipFile as exc:
            raise TraceFileError(
                f"{where}: damaged or truncated ({exc}); the zip directory at the end of the file is missing "
                "or corrupt, which is what an interrupted download or copy leaves"
            ) from exc
        except (OSError, ValueError, EOFError, OverflowError, NotImplementedError) as exc:
            raise TraceFileError(f"{where}: damaged or truncated, cannot open it as a zip archive ({exc})") from exc
        validate.check_archive(zf, where, lim, st.st_size)
    except BaseException:
        fh.close()
        raise
    return _ClosingZip(zf, fh, st.st_size)


class _ClosingZip:
    """``with``: (the ZipFile, the file it reads, its size); closes both."""

    def __init__(self, zf: zipfile.ZipFile, fh, size: int):
        self.zf, self.fh, self.size = zf, fh, size

    def __enter__(self):
        return self.zf, self.fh, self.size

    def __exit__(self, *exc) -> None:
        self.zf.close()
        self.fh.close()


class _Source:
    """An open archive, its raw file (for memory maps) and its name for messages."""

    def __init__(self, zf: zipfile.ZipFile, raw, where: str, size: int):
        self.zf, self.raw, self.where, self.size = zf, raw, where, size
        self._map = None
        self._map_at = 0  # the address the map starts at
        self._buffers = threading.local()  # each thread's buffer CRCs are computed through
        self._pool = None  # the threads that compute the CRCs of mapped members
        self._checks: list = []  # (the CRC being computed, the CRC the zip directory says, what it is of)

    def map(self):
        if self._map is None:
            self._map = mmap.mmap(self.raw.fileno(), 0, access=mmap.ACCESS_READ)
            self._map_at = np.frombuffer(self._map, dtype=np.uint8).__array_interface__["data"][0]
        return self._map

    def check_crc_later(self, start: int, stop: int, expected: int, what: str) -> None:
        """Check that bytes ``start:stop`` have the CRC-32 ``expected`` on two threads of their own, beside the
        reading and validating of the rest of the file (zlib and the reads let go of the GIL: a 1.1 GB trace's
        CRCs took 0.35 s of its 1.1 s load on the reading thread); :meth:`check_crcs` waits for them."""
        if not hasattr(os, "preadv"):  # reads at a position of their own, from several threads: else one by one
            self._checks.append((self.crc32(start, stop), expected, what))
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="gpuviz-crc")
        self._checks.append((self._pool.submit(self.crc32, start, stop), expected, what))

    def check_crcs(self) -> None:
        """Every CRC asked for so far, once computed: the first member whose bytes do not match is refused."""
        checks, self._checks = self._checks, []
        for crc, expected, what in checks:
            got = crc if isinstance(crc, int) else crc.result()
            if got != expected:
                raise TraceFileError(f"{self.where}: {what} is damaged (its CRC-32 does not match: the bytes "
                                     "were changed)")

    def stop_crcs(self) -> None:
        """The CRC threads end (those not started yet do not start): the file is about to be closed."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool.shutdown(wait=True, cancel_futures=True)

    def crc32(self, start: int, stop: int, crc: int = 0) -> int:
        """The CRC-32 of bytes ``start:stop`` of the file, read a chunk at a time into the thread's buffer (never
        through the map: the pages stay the kernel's page cache, not this process's resident memory)."""
        buf = getattr(self._buffers, "buf", None)
        if buf is None:
            buf = self._buffers.buf = bytearray(_READ_CHUNK)
        view = memoryview(buf)
        fd = self.raw.fileno()
        pos = start
        while pos < stop:
            part = view[: min(len(view), stop - pos)]
            if hasattr(os, "preadv"):
                got = os.preadv(fd, [part], pos)
            else:  # Windows
                self.raw.seek(pos)
                got = self.raw.readinto(part) or 0
            if got <= 0:
                raise TraceFileError(f"{self.where}: the file ends at {pos:,} bytes, inside a member (truncated)")
            crc = zlib.crc32(view[:got], crc)
            pos += got
        return crc

    def release(self, arr: np.ndarray, start: int, stop: int) -> None:
        """Let go of the map's pages under items ``start:stop`` of ``arr`` (validated: nothing reads them
        until a view draws them, which reads them again from the page cache). A no-op for arrays not mapped
        from this file."""
        if self._map is None or stop <= start or not hasattr(mmap, "MADV_DONTNEED"):
            return
        at = arr.__array_interface__["data"][0] - self._map_at
        begin, end = at + start * arr.itemsize, at + stop * arr.itemsize
        if at < 0 or begin < 0 or end > self.size or arr.ndim != 1:
            return
        page = mmap.PAGESIZE
        begin = begin // page * page
        try:
            self._map.madvise(mmap.MADV_DONTNEED, begin, end - begin)
        except (OSError, ValueError):
            pass  # it only keeps the memory longer


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
            return _read_bounded(fh, info.file_size)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, NotImplementedError) as exc:
        raise TraceFileError(f"{where}: {name!r} is damaged ({exc})") from exc


_INFLATE_CHUNK = 1 << 20


def _read_bounded(fh, declared: int) -> bytes:
    """A member's bytes, inflated a chunk at a time up to the size its zip directory declares. ``fh.read()`` of a
    deflated member asks zlib for up to 2 GB at once (zipfile cuts it to the declared size only afterwards), so a
    member that declares 1 KB and inflates to 3 GB grew the process by gigabytes before it was refused; read in
    chunks, it stops at its declared end and fails its CRC check there."""
    parts, got = [], 0
    while True:
        chunk = fh.read(min(_INFLATE_CHUNK, declared - got + 1))
        if not chunk:
            return b"".join(parts)
        got += len(chunk)
        parts.append(chunk)


_JSON = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")


def loads_in_pieces(text: str, depth: int = 6):
    """``json.loads(text)``: the same value, the same errors (``json.JSONDecodeError``), but the objects and lists
    of its first ``depth`` levels are walked here and only what lies below them is parsed by json's C scanner, a
    value at a time. One ``json.loads`` of a big trace's manifest (3.9 MB: 41,000 rows of the narration's facts,
    five levels down) held the GIL for 40-100 ms against the GUI thread; a row takes microseconds."""
    if text.startswith("\ufeff"):
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    value, end = _json_piece(text, _WS.match(text, 0).end(), depth)
    end = _WS.match(text, end).end()
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value


def _json_piece(s: str, i: int, depth: int):
    """The JSON value at ``s[i]`` (no whitespace before it) and where it ends."""
    opening = s[i : i + 1]
    if depth <= 0 or opening not in ("[", "{"):
        try:
            return _JSON.scan_once(s, i)
        except StopIteration as exc:
            raise json.JSONDecodeError("Expecting value", s, exc.value) from None
    closing = "]" if opening == "[" else "}"
    out: list | dict = [] if opening == "[" else {}
    skip = _WS.match
    i = skip(s, i + 1).end()
    if s[i : i + 1] == closing:
        return out, i + 1
    if closing == "]" and depth == 1:  # a list of values parsed whole: the common case, kept short
        scan, append = _JSON.scan_once, out.append
        while True:
            try:
                value, i = scan(s, i)
            except StopIteration as exc:
                raise json.JSONDecodeError("Expecting value", s, exc.value) from None
            append(value)
            i = skip(s, i).end()
            sep = s[i : i + 1]
            if sep == "]":
                return out, i + 1
            if sep != ",":
                raise json.JSONDecodeError("Expecting ',' delimiter", s, i)
            i = skip(s, i + 1).end()
    while True:
        if closing == "}":
            if s[i : i + 1] != '"':
                raise json.JSONDecodeError("Expecting property name enclosed in double quotes", s, i)
            key, i = json.decoder.scanstring(s, i + 1)
            i = skip(s, i).end()
            if s[i : i + 1] != ":":
                raise json.JSONDecodeError("Expecting ':' delimiter", s, i)
            i = skip(s, i + 1).end()
            out[key], i = _json_piece(s, i, depth - 1)
        else:
            value, i = _json_piece(s, i, depth - 1)
            out.append(value)
        i = skip(s, i).end()
        sep = s[i : i + 1]
        if sep == closing:
            return out, i + 1
        if sep != ",":
            raise json.JSONDecodeError("Expecting ',' delimiter", s, i)
        i = skip(s, i + 1).end()


def _read_meta(zf: zipfile.ZipFile, where: str, lim: validate.Limits = validate.DEFAULT_LIMITS) -> dict:
    names = set(zf.namelist())
    if META_NAME not in names:
        looks_like = "a numpy .npz archive" if any(n.endswith(".npy") for n in names) else "a zip archive"
        raise TraceFileError(
            f"{where}: not a gpuviz trace file: it is {looks_like} without {META_NAME} "
            f"(holds {len(names)} member(s){': ' + ', '.join(sorted(names)[:5]) if names else ''})"
        )
    raw = _read_member_bytes(zf, where, META_NAME, lim.max_meta_bytes)
    try:
        meta = loads_in_pieces(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # ValueError: JSONDecodeError, huge ints
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
    validate.check_manifest(meta, where, lim)
    return meta


def _read_trace(src: "_Source", i: int, entry: dict, with_index: bool, lim: validate.Limits,
                source_folder=None) -> Trace:
    zf, where = src.zf, src.where
    label = f"trace {i}"
    validate.check_launch_json(entry.get("launch"), where, label, lim)
    try:
        launch = Launch.from_json(entry["launch"])
    except KeyError as exc:
        raise TraceFileError(f"{where}: {label}: the launch description lacks {exc}") from None
    except (TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise TraceFileError(f"{where}: {label}: invalid launch description ({exc})") from exc
    validate.check_launch(launch, where, label)
    launch = _relocated(launch, source_folder)
    label = f"trace {i} ({launch.kernel_name[:80]})"
    validate.check_entry(entry, where, label, lim)
    fields, n_events = entry["fields"], entry["n_events"]
    columns = {name: _read_field(src, label, _member(i, name), name, n_events) for name in fields}
    validate.check_events(where, label, launch, columns, release=src.release)
    trace = Trace(launch, columns)
    crcs = {name: zf.getinfo(_member(i, name)).CRC for name in fields}
    idx = None
    if with_index and isinstance(entry.get("index"), dict):
        idx = _read_index(src, label, i, entry["index"], trace, crcs)
    prepare(trace, index=idx, crcs=crcs, source="file")  # before anything else sees the trace
    return trace


def _relocated(launch: Launch, source_folder) -> Launch:
    """``launch`` with its kernel's file in ``source_folder`` when a file of that name is there."""
    if source_folder is None or not launch.source_file:
        return launch
    here = Path(source_folder) / Path(launch.source_file).name
    return dataclasses.replace(launch, source_file=str(here)) if here.is_file() else launch


def _read_index(src: "_Source", label: str, i: int, spec: dict, trace: Trace, crcs: dict) -> TraceIndex | None:
    """The index stored with trace ``i`` when it fits its events; a stale or foreign one is ignored (None: the
    window builds a fresh one), a damaged one is a damaged file."""
    validate_index.check_index_spec(spec, src.where, label)
    names = spec["arrays"]
    arrays = {}
    for name in names:
        member = _index_member(i, name)
        if member not in src.zf.NameToInfo:
            return None
        arrays[name] = _read_npy(src, f"{label}: index array {name!r}", member)
    idx = TraceIndex(arrays, {k: v for k, v in spec.items() if k != "arrays"})
    try:
        stale = check_index(idx, trace, crcs)
    except (IndexError, KeyError, TypeError, ValueError, OverflowError, AttributeError) as exc:
        raise TraceFileError(f"{src.where}: {label}: its index is damaged ({type(exc).__name__}: {exc})") from exc
    if stale is None:  # it claims to be these events' index: then it must fit them
        cols = {k: trace.field(k) for k in ("block", "line", "array") if trace.has(k)}
        validate_index.check_index_arrays(src.where, label, arrays, len(trace), trace.launch, cols, release=src.release)
        validate_index.check_index_reports(src.where, label, arrays, spec.get("reports"), trace.launch)
        return idx
    return None


def _npy_header(fh):
    try:  # numpy's literal-only header parser fails in many ways on junk (TokenError, SyntaxError, ...)
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            return np.lib.format.read_array_header_1_0(fh)
        if version in ((2, 0), (3, 0)):
            return np.lib.format.read_array_header_2_0(fh)
    except (MemoryError, KeyboardInterrupt, OSError, zipfile.BadZipFile, zlib.error, EOFError):
        raise
    except Exception as exc:  # noqa: BLE001 - any other failure is a damaged header
        raise ValueError(f"a damaged .npy header ({type(exc).__name__}: {exc})") from exc
    raise ValueError(f"unsupported .npy format version {version}")


def _mapped(src: "_Source", info: zipfile.ZipInfo, dtype: np.dtype, n: int, what: str):
    """The array data of a stored member as a read-only memory map, its CRC to be checked; None when the member
    is compressed or its data is not aligned for its dtype (then it is read the streaming way)."""
    where = src.where
    if info.compress_type != zipfile.ZIP_STORED or n == 0:
        return None
    src.raw.seek(info.header_offset)
    local = src.raw.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise TraceFileError(f"{where}: {what} is damaged (no local header at offset {info.header_offset})")
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    start = info.header_offset + 30 + name_len + extra_len
    src.raw.seek(start)
    _npy_header(src.raw)
    data = src.raw.tell()
    nbytes = n * dtype.itemsize
    if data % max(dtype.alignment, 1) or (data - start) + nbytes != info.file_size or data + nbytes > src.size:
        return None  # unaligned, or sizes the streaming read reports precisely
    # checked before the traces are handed on (load_traces); what is read meanwhile is validated as any file's is
    src.check_crc_later(start, data + nbytes, info.CRC, what)
    return np.frombuffer(src.map(), dtype=dtype, count=n, offset=data)


def _read_npy(src: "_Source", what: str, member: str) -> np.ndarray:
    """Any (non-object) array member of an index, memory-mapped when stored."""
    where = src.where
    info = src.zf.getinfo(member)
    try:
        with src.zf.open(info) as fh:
            shape, fortran, dtype = _npy_header(fh)
            header_len = fh.tell()
        validate_index.check_index_header(where, what, dtype, shape, fortran, info.file_size - header_len)
        out = _mapped(src, info, dtype, int(np.prod(shape, dtype=np.int64)), what)
        if out is not None:
            out = out.reshape(shape)
        else:
            out = np.load(io.BytesIO(_read_member_bytes(src.zf, where, member, 1 << 40)), allow_pickle=False)
        return out
    except TraceFileError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, NotImplementedError, TypeError,
            OverflowError, KeyError) as exc:
        raise TraceFileError(f"{where}: {what} ({member}) is damaged ({exc})") from exc


def _read_field(src: "_Source", label: str, member: str, name: str, n_events: int) -> np.ndarray:
    zf, where = src.zf, src.where
    expected = EVENT_FIELDS[name][0]
    try:
        info = zf.getinfo(member)
    except KeyError:
        raise TraceFileError(f"{where}: {label}: field {name!r} is listed but {member!r} is not in the archive") from None
    try:
        with zf.open(info) as fh:
            shape, fortran, dtype = _npy_header(fh)
            validate.check_field_header(where, label, name, dtype, shape, fortran, n_events)
            if n_events * dtype.itemsize > info.file_size:  # checked before allocating: forged sizes
                raise TraceFileError(
                    f"{where}: {label}: field {name!r} would need {n_events * dtype.itemsize:,} bytes but "
                    f"{member!r} holds only {info.file_size:,}"
                )
            if dtype.byteorder not in ("=", "|") and dtype.newbyteorder("=") != dtype:
                mapped = None  # another byte order: converted on a streaming read below
            else:
                mapped = _mapped(src, info, dtype, n_events, f"{label}: field {name!r} ({member})")
            if mapped is not None:
                return mapped
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
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, NotImplementedError, io.UnsupportedOperation,
            TypeError, OverflowError, KeyError) as exc:
        raise TraceFileError(f"{where}: {label}: field {name!r} ({member}) is damaged ({exc})") from exc
    return out.astype(expected, copy=False)


# ---- index files (the user's cache of indexes for trace files that lack one) -------------------------
def save_index_file(path, idx, key: str) -> None:
    """Write a :class:`~gpuviz.model.index.TraceIndex` alone (stored, aligned members: memory-mapped when
    read back), atomically; ``key`` is the cache key it answers to."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)

    def write(zf: zipfile.ZipFile) -> None:
        for name, arr in idx.arrays.items():
            _write_npy(zf, f"index/{name}.npy", arr)

    meta = {"format": INDEX_FORMAT_MAGIC, "key": key, "info": idx.info, "arrays": list(idx.arrays)}
    _write_archive(path, write, lambda: meta)


def load_index_file(path, key: str):
    """The index saved at ``path`` for ``key``, or None when there is none, it is for another key, or it is
    unreadable (a cache entry is never worth an error: the index is rebuilt)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        with collection_paused(), zipfile.ZipFile(path) as zf, open(path, "rb") as raw:
            meta = loads_in_pieces(_read_member_bytes(zf, str(path), META_NAME, _MAX_META_BYTES).decode("utf-8"))
            if meta.get("format") != INDEX_FORMAT_MAGIC or meta.get("key") != key:
                return None
            src = _Source(zf, raw, str(path), size)
            try:
                arrays = {name: _read_npy(src, f"index array {name!r}", f"index/{name}.npy")
                          for name in meta["arrays"]}
                src.check_crcs()
            finally:
                src.stop_crcs()
            return TraceIndex(arrays, dict(meta["info"]))
    except (OSError, KeyError, TypeError, ValueError, zipfile.BadZipFile):
        return None
