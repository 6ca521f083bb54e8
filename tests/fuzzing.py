"""Seeded fuzzers for trace files and lesson files, run by ``tests/test_fuzz*.py`` (a few hundred inputs) and
``bench/fuzz.py`` (tens of thousands).

Each input is made from ``(seed, number)`` alone, so any input can be made again, alone, to name it. The
parent (:func:`fuzz`) starts worker processes, each under a memory limit (``RLIMIT_AS``), that take a
batch of input numbers and report each on its own line (``start N`` before, a JSON record after); an
input that makes no report in its time limit is a hang (the worker is killed and the batch goes on in
a new one after it), a worker that dies on an input is a crash, ``MemoryError`` is a memory blow-up.
Every input counted as a failure is then run again alone, in a fresh worker, to confirm and describe it.

Outcomes of one trace input: ``refused`` (TraceFileError), ``same`` (it loaded and holds what the
seed held), ``different`` (it loaded with other content: then ``gpuviz info`` and ``gpuviz snapshot``
are run on it, in the worker, through :func:`gpuviz.cli.main`), ``traceback`` (any other exception),
``memory``, ``hang``, ``crash``. A lesson input is ``refused`` (LessonError), ``loaded`` (and played,
with a small synthetic trace for every scene) or a failure.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import re
import select
import struct
import subprocess
import sys
import time
import warnings
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
FAILURES = ("traceback", "memory", "hang", "crash", "accepted")
HOSTILE_NAME = "<img src='/tmp/gpuviz-fuzz-image.png'>"


# ---- seed traces -----------------------------------------------------------------------------------------
def _synthetic(kernel="axpy", n_blocks=2, tpb=64, all_fields=True, shared=True, hostile=False, seed=0):
    from gpuviz.model.trace import ArrayInfo, EventKind as K, Launch, Trace

    rng = np.random.default_rng(seed)
    n = n_blocks * tpb
    arrays = [ArrayInfo(HOSTILE_NAME if hostile else "x", (n,), "float32"), ArrayInfo("y", (n,), "float32")]
    if shared:
        arrays.append(ArrayInfo("tile", (tpb,), "float32", space="shared", line=11))
    launch = Launch(kernel, grid=(n_blocks,), block=(tpb,), arrays=arrays,
                    source="def axpy(x, y):\n    i = cuda.grid(1)\n    tile[t] = x[i]\n    cuda.syncthreads()\n"
                           "    y[i] += 2 * tile[t]\n", source_file="/tmp/axpy.py", first_line=10,
                    device="gpuviz CPU executor", versions={"numpy": np.__version__}, timings={"kernel": 0.25},
                    warnings=["example warning"], meta={"registers_per_thread": 40, "shared_offsets": {"tile": 0}})
    kinds = [K.START, K.GLOBAL_LOAD]
    arr = [-1, 0]
    lines = [11, 12]
    if shared:
        kinds += [K.SHARED_STORE, K.BARRIER, K.SHARED_LOAD]
        arr += [2, -1, 2]
        lines += [12, 13, 14]
    kinds += [K.GLOBAL_LOAD, K.GLOBAL_STORE, K.END]
    arr += [1, 1, -1]
    lines += [14, 14, 14]
    gt = np.repeat(np.arange(n), len(kinds))
    tid = gt % tpb
    a = np.tile(arr, n)
    idx = np.where(a == 2, np.repeat(tid, 1), gt)
    idx = np.where(a >= 0, idx, -1)
    ev = {"block": gt // tpb, "thread": tid, "seq": np.tile(np.arange(len(kinds)), n),
          "kind": np.tile(np.array(kinds, dtype=np.uint8), n), "array": a, "index": idx, "line": np.tile(lines, n)}
    if all_fields:
        m = len(gt)
        ev.update(step=ev["seq"].copy(), sm=(ev["block"] % 3).astype(np.int16),
                  time=np.arange(m, dtype=np.int64) * 7 + 10**12,
                  value=np.where(a >= 0, rng.normal(size=m), np.nan))
    return Trace(launch, ev)


def make_seeds(folder: Path) -> list[Path]:
    """The files mutations start from: small synthetic traces (all fields; required fields only; a
    hostile array name), a recording of three launches, and one shipped GPU recording."""
    from gpuviz.model.tracefile import save_traces

    folder.mkdir(parents=True, exist_ok=True)
    seeds = []

    def put(name, traces):
        p = folder / name
        if not p.exists():
            save_traces(p, traces)
        seeds.append(p)

    put("seed_full.gpuviz", [_synthetic()])
    put("seed_required.gpuviz", [_synthetic(all_fields=False, shared=False, n_blocks=3, tpb=32)])
    put("seed_hostile.gpuviz", [_synthetic(kernel="<b>k</b>", hostile=True, n_blocks=1, tpb=32)])
    rec = [_synthetic(kernel=f"k{i}", n_blocks=1 + i, tpb=32, seed=i) for i in range(3)]
    rec = [t.with_launch(meta={**t.launch.meta, "recording": {
        "number": i + 1, "kernel": f"k{i}", "grid": list(t.launch.grid), "block": list(t.launch.block),
        "status": "traced", "events": len(t), "reason": ""}}) for i, t in enumerate(rec)]
    put("seed_recording.gpuviz", rec)
    asset = ROOT / "assets" / "recordings" / "transpose_shared.gpuviz"
    if asset.exists():
        seeds.append(asset)
    return seeds


# ---- zip writing by hand (precompressed members: zip bombs; names zipfile would not write) ---------------
@dataclass
class Member:
    name: str
    data: bytes = b""  # uncompressed (compressed here when raw is None)
    raw: bytes | None = None  # already deflated, with ``size`` and ``crc``
    size: int = 0
    crc: int = 0
    method: int = zipfile.ZIP_DEFLATED


def write_zip(members: list[Member]) -> bytes:
    out = io.BytesIO()
    central = []
    for m in members:
        if m.raw is None:
            if m.method == zipfile.ZIP_DEFLATED:
                c = zlib.compressobj(1, zlib.DEFLATED, -15)
                raw = c.compress(m.data) + c.flush()
            else:
                raw = m.data
            size, crc = len(m.data), zlib.crc32(m.data)
        else:
            raw, size, crc = m.raw, m.size, m.crc
        name = m.name.encode("utf-8", "surrogateescape")
        offset = out.tell()
        extra = struct.pack("<HHQQ", 1, 16, size, len(raw))
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0x800, m.method, 0, 0x21, crc, 0xFFFFFFFF,
                              0xFFFFFFFF, len(name), len(extra)) + name + extra)
        out.write(raw)
        cextra = struct.pack("<HHQQQ", 1, 24, size, len(raw), offset)
        central.append(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0x800, m.method, 0, 0x21, crc,
                                   0xFFFFFFFF, 0xFFFFFFFF, len(name), len(cextra), 0, 0, 0, 0, 0xFFFFFFFF)
                       + name + cextra)
    cd_start = out.tell()
    for c in central:
        out.write(c)
    cd_size = out.tell() - cd_start
    z64 = out.tell()
    out.write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, len(central), len(central), cd_size, cd_start))
    out.write(struct.pack("<IIQI", 0x07064B50, 0, z64, 1))
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0))
    return out.getvalue()


def read_members(data: bytes) -> list[Member]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            return [Member(i.filename, zf.read(i)) for i in zf.infolist()]


_BOMBS: dict[int, tuple] = {}
BOMB_SIZES = (1 << 23, 200 << 20, 3 << 30, 4_300_000_000)  # bytes the zip bombs inflate to


def bomb(size: int, folder: Path) -> tuple[Member, int]:
    """A member of about ``size`` zero bytes after an .npy header of int32[n], deflated (~1,000x), and n.
    Made once per size and kept in ``folder`` (a 4.3 GB bomb takes seconds to deflate)."""
    if size not in _BOMBS:
        n = size // 4 - 32
        cache = folder / f"bomb_{size}.bin"
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(header, {"descr": "<i4", "fortran_order": False, "shape": (n,)})
        head = header.getvalue()
        if cache.exists():
            blob = cache.read_bytes()
            crc, raw = struct.unpack("<I", blob[:4])[0], blob[4:]
        else:
            c = zlib.compressobj(9, zlib.DEFLATED, -15)
            parts = [c.compress(head)]
            crc = zlib.crc32(head)
            chunk = bytes(1 << 22)
            left = n * 4
            while left > 0:
                piece = chunk if left >= len(chunk) else bytes(left)
                parts.append(c.compress(piece))
                crc = zlib.crc32(piece, crc)
                left -= len(piece)
            parts.append(c.flush())
            raw = b"".join(parts)
            folder.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(struct.pack("<I", crc) + raw)
            os.replace(tmp, cache)
        _BOMBS[size] = (raw, crc, len(head) + n * 4, n)
    raw, crc, total, n = _BOMBS[size]
    return Member("", raw=raw, size=total, crc=crc), n


# ---- trace mutations -------------------------------------------------------------------------------------
_EDGE_INTS = [-(2**63), -(2**31), -2, -1, 0, 1, 2, 31, 32, 33, 255, 256, 1023, 1024, 1025, 65535, 65536, 2**31 - 1,
              2**31, 2**32, 2**53, 2**63 - 1, 2**63, 2**64, 10**30]
_WRONG = [None, True, False, "", "x", "1", "nan", -1, 0, 1, 1.5, -0.0, 1e308, 2**63, [], [1], [[1]], {}, {"a": 1},
          "A" * 5000, [0] * 2000, HOSTILE_NAME]
_BAD_DTYPES = ["object", "O", "|O", "V8", "(100000000,)f8", "<U5", "S3", "M8[ns]", "m8", "f8,i4", "float128", "int32",
               ">f4", "complex256", "bool", "", "int", "float"]
_BAD_NAMES = ["../meta.json", "../../etc/passwd", "/etc/passwd", "trace0/../meta.json", "trace0\\block.npy", "C:/x",
              "./meta.json", "trace0//block.npy", "trace0/./block.npy", "", "a" * 300, "trace0/block.npy\x01",
              "meta.json/", "..", "trace9/block.npy", "trace0/colour.npy"]


def _npy(arr, version=None) -> bytes:
    b = io.BytesIO()
    np.lib.format.write_array(b, arr, version=version, allow_pickle=True)
    return b.getvalue()


def _npy_header(descr, shape, fortran=False) -> bytes:
    b = io.BytesIO()
    np.lib.format.write_array_header_1_0(b, {"descr": descr, "fortran_order": fortran, "shape": shape})
    return b.getvalue()


def _json_paths(node, path=()):
    yield path
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _json_paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node[:20]):
            yield from _json_paths(v, path + (i,))


def _get(node, path):
    for p in path:
        node = node[p]
    return node


def _set(root, path, value):
    if not path:
        return value
    _get(root, path[:-1])[path[-1]] = value
    return root


def _field_members(members):
    return [m for m in members if m.name.endswith(".npy")]


def _meta_of(members):
    for m in members:
        if m.name == "meta.json":
            return m, json.loads(m.data)
    return None, None


def _mutate_members(members: list[Member], rng, op: str, bombs: dict) -> str:
    """Mutate ``members`` in place by ``op``; returns a description."""
    from gpuviz.model.trace import EVENT_FIELDS, SCHEMA_VERSION

    meta_m, meta = _meta_of(members)
    fields = _field_members(members)

    def pick(seq):
        return seq[int(rng.integers(len(seq)))]

    def save_meta():
        meta_m.data = json.dumps(meta, allow_nan=True).encode()

    if op == "remove":
        m = pick(members)
        members.remove(m)
        return f"remove {m.name}"
    if op == "rename":
        m = pick(members)
        old, m.name = m.name, pick(_BAD_NAMES + [f.name for f in members])
        return f"rename {old} -> {m.name!r}"
    if op == "duplicate":
        m = pick(members)
        dup = Member(m.name, m.data if rng.random() < 0.5 else m.data[: len(m.data) // 2])
        members.insert(int(rng.integers(len(members) + 1)), dup)
        return f"duplicate {m.name}"
    if op == "add":
        name = pick(_BAD_NAMES)
        members.append(Member(name, bytes(rng.integers(0, 256, int(rng.integers(0, 200)), dtype=np.uint8))))
        return f"add {name!r}"
    if op == "method":
        m = pick(members)
        m.method = pick([zipfile.ZIP_STORED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA, 99])
        if m.method == zipfile.ZIP_BZIP2:
            import bz2

            m.raw, m.size, m.crc = bz2.compress(m.data), len(m.data), zlib.crc32(m.data)
        elif m.method == zipfile.ZIP_LZMA:
            m.raw, m.size, m.crc = b"\x09\x04\x05\x00" + b"\x00" * 5, len(m.data), zlib.crc32(m.data)
        return f"method {m.method} for {m.name}"
    if meta is None:
        return "no meta"
    traces = meta.get("traces") if isinstance(meta, dict) else None
    if op == "json":
        paths = list(_json_paths(meta))
        path = pick(paths)
        r = rng.random()
        if r < 0.15 and path:
            parent = _get(meta, path[:-1])
            if isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent.pop(path[-1])
            save_meta()
            return f"json delete {path}"
        value = pick(_WRONG + _EDGE_INTS)
        meta = _set(meta, path, value)
        save_meta()
        return f"json {path} = {str(value)[:40]!r}"
    if not isinstance(traces, list) or not traces:
        return "no traces"
    t = pick(traces)
    L = t.get("launch", {})
    if op == "shape":
        r = int(rng.integers(7))
        if r == 0 and L.get("arrays"):
            a = pick(L["arrays"])
            a["shape"] = pick([[10**9], [2**31 - 1, 2**31 - 1], [65536, 65536], [2**40], [-1], [0], [1] * 40,
                               [2**31 - 1] * 8, [3, 0], [10**30]])
            desc = f"array shape {a['shape']}"
        elif r == 1:
            L["grid"] = pick([[2**31 - 1, 65535, 65535], [2**31 - 1], [65536, 65536, 1], [0], [2**31], [1, 1, 1, 1],
                              [-1], [16777217]])
            desc = f"grid {L['grid']}"
        elif r == 2:
            L["block"] = pick([[1024, 1024, 64], [2048], [0], [32, 33], [1025], [1, 1, 65]])
            desc = f"block {L['block']}"
        elif r == 3:
            t["n_events"] = pick(_EDGE_INTS)
            desc = f"n_events {t['n_events']}"
        elif r == 4:
            L["warp_size"] = pick([0, 1, 16, 31, 33, 64, 1024, -32, 2**31])
            desc = f"warp_size {L['warp_size']}"
        elif r == 5:
            L["arrays"] = [{"name": f"a{i}", "shape": [1], "dtype": "float32"} for i in range(pick([5000, 40000]))]
            desc = "many arrays"
        else:
            L.setdefault("meta", {})[pick(["registers_per_thread", "shared_bytes_per_block", "shared_offsets",
                                           "recording", "device"])] = pick(_WRONG + _EDGE_INTS)
            desc = "launch meta"
        save_meta()
        return f"shape: {desc}"
    if op == "dtype":
        if rng.random() < 0.5 and L.get("arrays"):
            a = pick(L["arrays"])
            a["dtype"] = pick(_BAD_DTYPES)
            save_meta()
            return f"array dtype {a['dtype']!r}"
        m = pick(fields)
        kind = int(rng.integers(4))
        if kind == 0:
            m.data = _npy(np.array([1, "x", None], dtype=object))  # a pickle inside: must never be unpickled
        elif kind == 1:
            m.data = _npy_header(pick(["|O", "<f8", "<i8", "<U4", "V4", [("a", "<i4")], "<i2", ">i4"]), (10,)) + bytes(80)
        elif kind == 2:
            m.data = _npy(np.zeros(5, dtype=[("a", "<i4"), ("b", "O")]))
        else:
            m.data = b"\x93NUMPY" + bytes([int(rng.integers(0, 5)), 0]) + m.data[8:]
        return f"npy dtype/version of {m.name} ({kind})"
    if op == "length":
        m = pick(fields)
        hdr_len = 10 + struct.unpack("<H", m.data[8:10])[0]
        descr = _skip_magic(m.data)[2]
        n_old = (len(m.data) - hdr_len) // descr.itemsize
        n_new = max(0, n_old + pick([-n_old, -1, 1, 7, n_old]))
        body = np.resize(np.frombuffer(m.data[hdr_len:], dtype=descr), n_new) if n_old else np.zeros(n_new, descr)
        m.data = _npy(body)
        return f"length of {m.name}: {n_old} -> {n_new}"
    if op == "header":
        m = pick(fields)
        descr = _skip_magic(m.data)[2]
        shape = pick([(10**15,), (2**31,), (-1,), (), (3, 3), (0,), (2**62,)])
        m.data = _npy_header(descr.str, shape, fortran=bool(rng.random() < 0.2)) + m.data[10 + struct.unpack("<H", m.data[8:10])[0]:]
        return f"header of {m.name}: shape {shape}"
    if op == "values":
        m = pick(fields)
        name = m.name.rsplit("/", 1)[-1][:-4]
        hdr_len = 10 + struct.unpack("<H", m.data[8:10])[0]
        dt = EVENT_FIELDS.get(name, (np.dtype(np.int32),))[0]
        try:
            arr = np.frombuffer(m.data[hdr_len:], dtype=_skip_magic(m.data)[2]).copy()
        except ValueError:
            return "values: unreadable"
        if not len(arr):
            return "values: empty"
        k = int(rng.integers(1, 4))
        pos = rng.integers(0, len(arr), k)
        if dt.kind == "f":
            arr[pos] = pick([np.nan, np.inf, -np.inf, 1e308, -1e308, 0.0, 5e-324])
        else:
            info = np.iinfo(arr.dtype)
            cands = [v for v in _EDGE_INTS + [int(x) for x in rng.integers(-5, 300, 3)] if info.min <= v <= info.max]
            arr[pos] = pick(cands)
        m.data = _npy(arr)
        return f"values of {m.name} at {pos.tolist()}"
    if op == "range":
        return _push_out_of_range(members, meta, rng, pick)
    if op == "bomb":
        size = pick(bombs["sizes"])
        b, n = bomb(size, bombs["folder"])
        names = [f.name for f in fields if f.name.startswith(fields[0].name.split("/")[0] + "/")]
        prefix = names[0].split("/")[0]
        if prefix[5:].isdigit() and int(prefix[5:]) < len(traces):
            t = traces[int(prefix[5:])]
        t["n_events"] = n
        save_meta()
        which = names if rng.random() < 0.5 else [pick(names)]
        for nm in which:
            for j, m in enumerate(members):
                if m.name == nm:
                    members[j] = Member(nm, raw=b.raw, size=b.size, crc=b.crc)
        return f"bomb {size:,} bytes into {len(which)} field(s)"
    if op == "schema":
        r = int(rng.integers(4))
        if r == 0:
            meta["schema_version"] = SCHEMA_VERSION + int(rng.integers(1, 100))
        elif r == 1:
            meta["format"] = pick(["gpuviz-recording", "", None, "GPUVIZ-TRACE"])
        elif r == 2:
            meta["schema_version"] = pick(_WRONG)
        else:
            meta["traces"] = traces * int(rng.integers(2, 4))
        save_meta()
        return f"schema/format {r}"
    if op == "text":
        key = pick(["kernel_name", "source", "source_file", "device", "created", "backend"])
        L[key] = pick([HOSTILE_NAME, "../../etc/passwd", "", "\x00\x01", "é" * 10, "<b>" * 100, "x" * 100000])
        save_meta()
        return f"launch {key}"
    if op == "meta_big":
        L["source"] = "x" * int(pick([10**6, 5 * 10**6, 20 * 10**6]))
        save_meta()
        return f"big source {len(L['source']):,}"
    return f"unknown op {op}"


def _npy_array(m: Member) -> np.ndarray:
    """The array a ``.npy`` member holds (a copy: the member is rewritten from it)."""
    fh = io.BytesIO(m.data)
    return np.lib.format.read_array(fh, allow_pickle=False).copy()


def _push_out_of_range(members: list[Member], meta: dict, rng, pick) -> str:
    """One value of an index array the format declares a range for (gpuviz.model.fileformat) set just outside it:
    the loader must refuse the file. The format is the fuzzer's idea of valid, as it is the loader's."""
    from gpuviz.model import fileformat
    from gpuviz.model.trace import Launch

    usable = []
    for m in members:
        trace, _, rest = m.name.partition("/index/")
        if not rest.endswith(".npy") or not trace.startswith("trace") or not trace[5:].isdigit():
            continue
        key = rest[:-4]
        declared = fileformat.index_member_column(key)
        if declared is None:
            continue
        table, col = declared
        columns = [(None, col)] if not table.record else list(table.columns.items())
        # the arrays the loader checks against their declared ranges (the narration's facts are not: the narrator
        # reads them as it captions, and reading its 21 arrays at load kept their pages resident)
        checked = key.startswith(("frames.", "races.")) or key == "trace.phase"
        for column, c in columns:
            if checked and (c.lo is not None or c.hi is not None) and "U" not in c.kinds:
                usable.append((m, int(trace[5:]), key, column, c))
    traces = meta.get("traces") if isinstance(meta, dict) else None
    if not usable or not isinstance(traces, list):
        raise ValueError("no declared index array to push out of range")
    m, k, key, column, col = pick(usable)
    arr = _npy_array(m)
    target = arr[column] if column else arr
    if arr.ndim != 1 or not len(arr) or target.dtype.kind not in "iu":
        raise ValueError(f"{key} is not a 1-d integer array")
    offsets = next((x for x in members if x.name == f"trace{k}/index/frames.offsets.npy"), None)
    n_frames = len(_npy_array(offsets)) - 1 if offsets is not None else 0
    launch = Launch.from_json(traces[k]["launch"])
    env = fileformat.env_of(launch, int(traces[k].get("n_events", 0)), n_frames)
    hi, lo = fileformat.bound(col.hi, env), fileformat.bound(col.lo, env)
    value = hi + 1 if hi is not None and (lo is None or rng.random() < 0.5) else lo - 1
    info = np.iinfo(target.dtype)
    if not info.min <= value <= info.max:
        raise ValueError(f"{key} cannot hold {value}")
    target[int(rng.integers(len(arr)))] = value
    m.data = _npy(arr)
    return (f"outside the format: {key}{'.' + column if column else ''} = {value} (declared {col.range_text(env)}) "
            f"in trace{k} ")


def _skip_magic(data: bytes):
    fh = io.BytesIO(data)
    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(fh)
    return np.lib.format.read_array_header_2_0(fh)


TRACE_OPS = ("flip", "flip", "truncate", "remove", "rename", "duplicate", "add", "method", "json", "json", "json",
             "shape", "shape", "dtype", "length", "header", "values", "values", "values", "bomb", "schema", "text",
             "meta_big", "combo")


#: inputs numbered from here set one declared index value just outside its declared range (op "range"): numbered
#: apart, so that the inputs below keep the mutations they always had (tests name some by number)
RANGE_BASE = 1_000_000_000


def make_trace_input(seed: int, number: int, seeds: list[Path], bombs: dict) -> tuple[bytes, int, str]:
    """The ``number``-th mutated trace file of run ``seed``: (bytes, which seed, what was done)."""
    rng = np.random.default_rng([seed, number])
    which = int(rng.integers(len(seeds)))
    data = seeds[which].read_bytes()
    op = "range" if number >= RANGE_BASE else TRACE_OPS[int(rng.integers(len(TRACE_OPS)))]
    if op == "flip":
        buf = bytearray(data)
        k = int(rng.integers(1, 9))
        for p in rng.integers(0, len(buf), k):
            buf[int(p)] ^= 1 << int(rng.integers(8))
        return bytes(buf), which, f"flip {k} bit(s)"
    if op == "truncate":
        cut = int(rng.integers(0, len(data)))
        return data[:cut], which, f"truncate at {cut}"
    members = read_members(data)
    ops = [TRACE_OPS[int(rng.integers(2, len(TRACE_OPS) - 1))] for _ in range(int(rng.integers(2, 4)))] if op == "combo" \
        else [op]
    ops = [o for o in ops if o not in ("flip", "truncate")] or ["json"]
    descs = []
    for o in ops:
        try:
            descs.append(_mutate_members(members, rng, o, bombs))
        except (ValueError, KeyError, IndexError, TypeError, AttributeError, struct.error) as exc:
            descs.append(f"{o}: not applicable ({type(exc).__name__})")
    return write_zip(members), which, "; ".join(descs)


# ---- lessons -----------------------------------------------------------------------------------------------
_PLACEHOLDERS = ["{global_bytes:>1000000000}", "{global_bytes!r}", "{global_bytes.__class__}", "{global_bytes[0]}",
                 "{kernel[matmul_naive][global_bytes]}", "{kernel[x][global_bytes]:>99999999}", "{", "}", "{}", "{0}",
                 "{{literal}}", "{global_bytes:,}", "{global_bytes!s:^40}", "{nope}", "{kernel[]}", "{kernel[a][b][c]}",
                 "{global_bytes:{global_bytes}}"]


def lesson_seeds() -> list[Path]:
    from gpuviz.lessons import builtin_lessons

    return list(builtin_lessons().values())


LESSON_OPS = ("flip", "truncate", "insert", "json", "json", "json", "placeholder", "placeholder", "size", "many",
              "trace")


def make_lesson_input(seed: int, number: int, seeds: list[Path]) -> tuple[bytes, str, str]:
    """The ``number``-th mutated lesson of run ``seed``: (bytes, file suffix, what was done)."""
    import tomllib

    rng = np.random.default_rng([seed, number, 7])
    src = seeds[int(rng.integers(len(seeds)))]
    text = src.read_text(encoding="utf-8")

    def pick(seq):
        return seq[int(rng.integers(len(seq)))]

    op = pick(LESSON_OPS)
    if op in ("flip", "truncate", "insert"):
        b = bytearray(text.encode())
        if op == "flip":
            for p in rng.integers(0, len(b), int(rng.integers(1, 6))):
                b[int(p)] ^= 1 << int(rng.integers(8))
        elif op == "truncate":
            b = b[: int(rng.integers(0, len(b)))]
        else:
            p = int(rng.integers(0, len(b)))
            b[p:p] = pick(['\nsize = 1000000000\n', '"""', "[[scenes]]\n", "\x00", "= = =", "\nnotes = \"{global_bytes:>9999999999}\"\n",
                           "[" * 5000, "a = " + "[" * 400 + "]" * 400 + "\n"]).encode()
        return bytes(b), ".toml", f"{op} of {src.name}"
    data = tomllib.loads(text)
    scenes = data["scenes"]
    sc = pick(scenes)
    if op == "json":
        paths = list(_json_paths(data))
        path = pick(paths)
        data = _set(data, path, pick(_WRONG + _EDGE_INTS))
        desc = f"json {path}"
    elif op == "placeholder":
        key = pick(["notes", "explain"])
        ph = pick(_PLACEHOLDERS)
        if key == "explain" and sc.get("questions"):
            sc["questions"][0]["explain"] = f"x {ph} y"
        else:
            sc["notes"] = f"x {ph} y"
        desc = f"placeholder {ph!r} in {key}"
    elif op == "size":
        sc[pick(["size", "block", "seed", "frames", "stops"])] = pick(
            [10**9, 2**31, -5, 0, [1024, 1024], [2048], [1, 1, 1, 1], [0], 10**30, [10**12, 0], ["start", 10**12],
             [-(2**40), "end"]])
        desc = "size"
    elif op == "many":
        r = int(rng.integers(3))
        if r == 0:
            data["scenes"] = scenes * 150
        elif r == 1:
            sc["stops"] = ["first barrier"] * 5000
        else:
            sc["notes"] = "n" * 100000
        desc = f"many {r}"
    else:
        sc.pop("kernel", None)
        sc["trace"] = pick(["/dev/zero", "/proc/self/mem", "../../etc/passwd", "/etc/passwd", "/dev/null", "nonexistent.gpuviz",
                            "/tmp"])
        desc = f"trace {sc['trace']}"
    return json.dumps(data).encode(), ".json", f"{op}: {desc} ({src.name})"


# ---- the worker --------------------------------------------------------------------------------------------
def _same(a, b) -> bool:
    from gpuviz.model.prepared import prepare
    from gpuviz.model.trace import EVENT_FIELDS

    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if json.dumps(x.launch.to_json(), sort_keys=True, default=str) != json.dumps(y.launch.to_json(), sort_keys=True,
                                                                                      default=str):
            return False
        if x.recorded_fields != y.recorded_fields:
            return False
        for f in EVENT_FIELDS:
            if x.has(f) and not np.array_equal(x.field(f), y.field(f), equal_nan=x.field(f).dtype.kind == "f"):
                return False
        xi, yi = prepare(x).index, prepare(y).index
        if (xi is None) != (yi is None):
            return False
        if xi is not None:  # the saved index (schema 2) is content too: the views and analyses read it
            if set(xi.arrays) != set(yi.arrays) or json.dumps(xi.info, sort_keys=True, default=str) != \
                    json.dumps(yi.info, sort_keys=True, default=str):
                return False
            for k, v in xi.arrays.items():
                w = yi.arrays[k]
                if v.dtype != w.dtype or v.shape != w.shape or np.asarray(v).tobytes() != np.asarray(w).tobytes():
                    return False
    return True


def _classify(exc: BaseException) -> str:
    return "memory" if isinstance(exc, MemoryError) else "traceback"


def _cli(argv) -> tuple[int, str]:
    from gpuviz import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main(argv)
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
    return rc, err.getvalue().strip().splitlines()[-1][:300] if err.getvalue().strip() else ""


def _check_trace(path: Path, originals, snapshot: bool, folder: Path) -> dict:
    from gpuviz.model.prepared import prepare
    from gpuviz.model.tracefile import TraceFileError, load_traces

    rec: dict = {}
    try:
        traces = load_traces(path)
    except TraceFileError as exc:
        rec.update(outcome="refused", message=str(exc)[-200:])
        return rec
    except BaseException as exc:  # noqa: BLE001 - the fuzzer's point
        rec.update(outcome=_classify(exc), error=f"{type(exc).__name__}: {exc}"[:500])
        return rec
    same = _same(traces, originals)
    rec["outcome"] = "same" if same else "different"
    # which traces took their stored index (a stale or damaged one is dropped and rebuilt from the events)
    rec["indexed"] = [prepare(t).index is not None for t in traces]
    del traces
    if same:
        return rec
    try:
        rc, msg = _cli(["info", str(path), "--json"])
        rec["info"] = "ok" if rc == 0 else f"exit {rc}: {msg}"
    except BaseException as exc:  # noqa: BLE001
        rec["info"] = _classify(exc)
        rec["info_error"] = f"{type(exc).__name__}: {exc}"[:500]
    if snapshot:
        try:
            rec["snapshot"] = _snapshot(path, folder / "snap.png")
        except BaseException as exc:  # noqa: BLE001
            rec["snapshot"] = _classify(exc)
            rec["snapshot_error"] = f"{type(exc).__name__}: {exc}"[:500]
    return rec


_WINDOW = None


def close_snapshot_window() -> None:
    """Close the window :func:`_snapshot` keeps (a test in the suite's own process must leave none behind)."""
    global _WINDOW
    if _WINDOW is not None:
        _WINDOW.close()
        _WINDOW.session.shutdown()
        _WINDOW.deleteLater()
        _WINDOW = None
        from PySide6.QtWidgets import QApplication

        QApplication.processEvents()


def _snapshot(path: Path, out: Path) -> str:
    """``gpuviz snapshot FILE`` of the whole window, shown in one window the worker keeps (as File > Open
    shows file after file in a running window): the same loading, views and rendering, without building
    the window's widgets again for every input. The errors ``gpuviz snapshot`` reports in one line are
    "exit 1: ..."; anything else is raised (a traceback)."""
    global _WINDOW
    from gpuviz.app import snapshot, snapshot_window
    from gpuviz.model.tracefile import TraceFileError

    if _WINDOW is None:
        _WINDOW = snapshot_window(size="480x320")
    try:
        snapshot(path, size="480x320", out_png=out, window=_WINDOW)
    except (TraceFileError, ValueError, KeyError, OSError) as exc:
        return f"exit 1: {exc}"[:300]
    return "ok"


def _launch_key(scene) -> tuple:
    return (scene.kernel, scene.size, tuple(scene.block) if scene.block else None, scene.seed)


@functools.lru_cache(maxsize=1)
def _shipped_launches() -> frozenset:
    """The launches the shipped lessons play: a mutant that keeps one gets the real capture."""
    from gpuviz.lessons import load_lesson

    return frozenset(_launch_key(sc) for p in lesson_seeds() for sc in load_lesson(p).scenes if sc.kernel)


@functools.lru_cache(maxsize=16)
def _real_capture(key: tuple, spec_name: str):
    from gpuviz.lessons.format import Scene
    from gpuviz.lessons.player import capture_scene

    kernel, size, block, seed = key
    return capture_scene(Scene(title=spec_name, kernel=kernel, size=size, block=block, seed=seed, backend="cpu"))


def _tiny_trace_loader(scene):
    """A lesson scene's trace: the real capture (CPU executor, cached per worker) when the scene keeps a launch of
    a shipped lesson, so the stops and questions a lesson checks at play meet the trace they were written for; a
    small synthetic trace for any other launch, its size still checked as the player checks it."""
    from gpuviz.lessons.format import MAX_SIZE_FACTOR, LessonError

    if scene.trace:
        from gpuviz.model.tracefile import load_trace

        return load_trace(scene.trace), None
    from gpuviz.catalog import get_kernel

    spec = get_kernel(scene.kernel)
    size = scene.size if scene.size is not None else spec.small_size
    most = MAX_SIZE_FACTOR * max(spec.default_size, spec.small_size)
    if size > most:
        raise LessonError(f"{scene.label}: size over {most}")
    if _launch_key(scene) in _shipped_launches():
        return _real_capture(_launch_key(scene), scene.kernel)
    return _synthetic(kernel=scene.kernel, n_blocks=2, tpb=32), spec


def _check_lesson(path: Path) -> dict:
    from gpuviz.lessons import LessonError, LessonPlayer, load_lesson

    try:
        lesson = load_lesson(path)
    except LessonError as exc:
        return {"outcome": "refused", "message": str(exc)[-200:]}
    except BaseException as exc:  # noqa: BLE001
        return {"outcome": _classify(exc), "error": f"{type(exc).__name__}: {exc}"[:500]}
    try:
        LessonPlayer(lesson, loader=_tiny_trace_loader).play_all(lambda slide: None)
    except LessonError as exc:
        return {"outcome": "refused", "message": "at play: " + str(exc)[-200:]}
    except BaseException as exc:  # noqa: BLE001
        return {"outcome": _classify(exc), "error": f"at play: {type(exc).__name__}: {exc}"[:500]}
    return {"outcome": "loaded"}


def worker_main(argv: list[str]) -> int:
    """``python tests/fuzzing.py worker KIND SEED FOLDER MEM_BYTES SNAPSHOT_EVERY N1 N2 ...``"""
    kind, seed, folder, mem, every = argv[0], int(argv[1]), Path(argv[2]), int(argv[3]), int(argv[4])
    numbers = [int(x) for x in argv[5:]]
    if mem > 0:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    work = folder / f"w{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    from gpuviz.model.tracefile import load_traces

    if kind == "trace":
        seeds = make_seeds(folder / "seeds")
        originals = [load_traces(p) for p in seeds]
        bombs = {"sizes": list(BOMB_SIZES), "folder": folder / "bombs"}
    else:
        seeds = lesson_seeds()
    for n in numbers:
        print(f"start {n}", flush=True)
        t0 = time.monotonic()
        try:
            if kind == "trace":
                data, which, desc = make_trace_input(seed, n, seeds, bombs)
                path = work / f"in{n}.gpuviz"
                path.write_bytes(data)
                rec = _check_trace(path, originals[which], every > 0 and n % every == 0, work)
            else:
                data, suffix, desc = make_lesson_input(seed, n, seeds)
                path = work / f"lesson{n}{suffix}"
                path.write_bytes(data)
                rec = _check_lesson(path)
            path.unlink()
        except BaseException as exc:  # noqa: BLE001 - a broken generator is reported, never hidden
            rec, desc = {"outcome": _classify(exc), "error": f"fuzzer: {type(exc).__name__}: {exc}"[:500]}, "?"
        if desc.startswith("outside the format:") and rec.get("outcome") in ("same", "different"):
            # loaded: fine when the tampered index was dropped (it is rebuilt from the events), a failure when a
            # trace took it with a value the format declares impossible
            found = re.search(r" in trace(\d+) $", desc)
            trace_no = int(found.group(1)) if found else 0
            took = rec.get("indexed", [])
            if trace_no < len(took) and took[trace_no]:
                rec["outcome"] = "accepted"
        rec.update(n=n, what=desc, seconds=round(time.monotonic() - t0, 3))
        print(json.dumps(rec), flush=True)
    return 0


# ---- the parent ----------------------------------------------------------------------------------------------
@dataclass
class Report:
    kind: str
    seed: int
    n: int
    counts: Counter = field(default_factory=Counter)
    failures: list = field(default_factory=list)  # records, confirmed alone
    records: list = field(default_factory=list)
    seconds: float = 0.0
    # the damaged files that loaded and then made `gpuviz info` or `gpuviz snapshot` end in a one-line error:
    # their records (input number, what was done, the message), each run again alone ("alone": that run's record)
    messages: list = field(default_factory=list)

    def failed(self) -> int:
        return sum(self.counts[k] for k in FAILURES) + sum(1 for r in self.records if _post_failure(r))


def _post_failure(rec) -> bool:
    return any(rec.get(s) in FAILURES for s in ("info", "snapshot"))


def _post_message(rec) -> bool:
    """A file that loaded, then ``gpuviz info`` or ``gpuviz snapshot`` ended in a one-line error (not ok)."""
    return any(s in rec and rec[s] != "ok" and rec[s] not in FAILURES for s in ("info", "snapshot"))


def problems(rec) -> list[str]:
    """What went wrong with one input, as the counts name it ('traceback', 'snapshot:message', ...)."""
    out = [rec["outcome"]] if rec.get("outcome") in FAILURES else []
    for s in ("info", "snapshot"):
        if s in rec and rec[s] != "ok":
            out.append(f"{s}:{rec[s] if rec[s] in FAILURES else 'message'}")
    return out


def _run_worker(kind, seed, numbers, folder, mem, snapshot, per_input_s, env) -> list[dict]:
    """Run ``numbers`` in workers; a hang or crash ends that worker and the rest go on in a new one."""
    done: list[dict] = []
    todo = list(numbers)
    while todo:
        cmd = [sys.executable, str(Path(__file__).resolve()), "worker", kind, str(seed), str(folder), str(mem),
               str(int(snapshot)), *map(str, todo)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=str(ROOT))
        current = None
        buf = b""
        deadline = time.monotonic() + per_input_s + 60  # the first input also pays for the imports
        ended = False
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                proc.kill()
                proc.wait()
                if current is not None:
                    done.append({"n": current, "outcome": "hang", "what": "", "seconds": per_input_s})
                    todo = todo[todo.index(current) + 1:]
                else:
                    todo = todo[1:] if todo else todo
                break
            r, _, _ = select.select([proc.stdout], [], [], min(left, 1.0))
            if not r:
                continue
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                ended = True
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                text = line.decode("utf-8", "replace")
                if text.startswith("start "):
                    current = int(text.split()[1])
                    deadline = time.monotonic() + per_input_s
                elif text.startswith("{"):
                    rec = json.loads(text)
                    done.append(rec)
                    current = None
                    todo = todo[todo.index(rec["n"]) + 1:]
        if ended:
            err = proc.stderr.read().decode("utf-8", "replace")
            rc = proc.wait()
            if current is not None:  # died on an input
                mem_hint = "MemoryError" in err or "std::bad_alloc" in err or "Cannot allocate" in err
                done.append({"n": current, "outcome": "memory" if mem_hint else "crash", "what": "",
                             "error": f"worker exit {rc}: {err.strip().splitlines()[-1][:300] if err.strip() else ''}"})
                todo = todo[todo.index(current) + 1:]
            elif todo and rc != 0:
                raise RuntimeError(f"fuzz worker failed before its first input (exit {rc}):\n{err[-3000:]}")
            elif todo:
                raise RuntimeError(f"fuzz worker ended without reporting {len(todo)} inputs:\n{err[-3000:]}")
        proc.stdout.close()
        proc.stderr.close()
    return done


def fuzz(kind: str, seed: int, n: int, folder: Path, start: int = 0, batch: int = 200, mem: int = 3 << 30,
         snapshot: int = 1, per_input_s: float = 30.0, confirm: bool = True, progress=None, jobs: int = 1,
         deadline: float | None = None, numbers: list[int] | None = None) -> Report:
    """Run inputs ``start .. start + n - 1`` of ``kind`` ("trace" or "lesson"), or the inputs ``numbers``
    (then ``start`` and ``n`` are not used); failures, and files whose info or snapshot ended in a one-line
    error (:attr:`Report.messages`), re-run alone.

    ``snapshot``: run ``gpuviz snapshot`` on the loaded-with-different-content inputs whose number is a
    multiple of it (1: all of them; 0: none; ``gpuviz info`` runs on all of them). ``mem``: the worker's
    address-space limit (bytes); ``per_input_s``: an input that takes longer is a hang. ``jobs``: worker
    processes at once (each runs its own batches). ``deadline`` (``time.monotonic()``): no batch starts after it."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               QT_QPA_PLATFORM="offscreen", NUMBA_ENABLE_CUDASIM="1", PYTHONWARNINGS="ignore")
    env.pop("GPUVIZ_MAX_TRACE_BYTES", None)
    folder.mkdir(parents=True, exist_ok=True)
    if numbers is not None:
        numbers = list(numbers)
        n = len(numbers)
    else:
        numbers = list(range(start, start + n))
    report = Report(kind, seed, n)
    t0 = time.monotonic()
    if kind == "trace":  # made here, once: deflating 4 GB of zeros is not an input's time
        for size in BOMB_SIZES:
            bomb(size, folder / "bombs")
    batches = [numbers[i:i + batch] for i in range(0, n, batch)]
    done = 0

    def one(nums):
        if deadline is not None and time.monotonic() > deadline:
            return []  # past the caller's deadline: the report counts the inputs that ran
        return _run_worker(kind, seed, nums, folder, mem, snapshot, per_input_s, env)

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:  # each batch is its own worker process
        for recs in pool.map(one, batches):
            for rec in recs:
                report.records.append(rec)
                report.counts[rec["outcome"]] += 1
                for step in ("info", "snapshot"):
                    if step in rec:
                        report.counts[f"{step}:{rec[step] if rec[step] in FAILURES or rec[step] == 'ok' else 'message'}"] += 1
            done += batch
            if progress:
                progress(report, done)
    bad = [r for r in report.records if r["outcome"] in FAILURES or _post_failure(r)]
    for rec in bad:
        again = _run_worker(kind, seed, [rec["n"]], folder, mem, snapshot, per_input_s, env)[0] if confirm else rec
        again["first_run"] = rec.get("outcome")
        report.failures.append(again)
    for rec in report.records:
        if _post_message(rec):
            # alone, in a fresh worker (a fresh window): is the message the file's, or what the files before it left?
            alone = _run_worker(kind, seed, [rec["n"]], folder, mem, snapshot, per_input_s, env)[0] if confirm else None
            report.messages.append(dict(rec, alone=alone))
    report.seconds = time.monotonic() - t0
    return report


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        sys.exit(worker_main(sys.argv[2:]))
    print(__doc__)
