"""The values the CPU executor's generated code holds besides numbers and per-lane arrays: array handles, views,
records, functions passed as values, variables bound to different arrays in different lanes; and the small
helpers they share (shared memory's poison, ranges of ids in messages)."""

from __future__ import annotations

import numpy as np

from ....errors import UnsupportedConstruct

#: spaces whose accesses are not events: local arrays (a thread's own), and a record's field that is an array
#: (reached through the record, whose subscript was the access, as for its fields that are numbers)
_UNRECORDED = ("local", "field")
_PER_LANE_ARRAY_FIELD = object()  # _field_of: an array field of records that differ between lanes
_POISON_INT = -0x21524111  # 0xDEADBEEF as a signed 32-bit integer


def _round_ndigits(x, nd: int):
    """``round(x, nd)`` as numba-cuda compiles it (CPython's fallback double_round, in float64, the result in
    x's own type): numpy's ``np.round`` scales in float32 for a float32 and rounds some halfway values the
    other way."""
    xa = np.asarray(x)
    kind = xa.dtype.kind
    out_dtype = xa.dtype if kind == "f" else np.dtype(np.float64)
    xd = xa.astype(np.float64)
    if nd >= 0:
        pow1, pow2 = (10.0 ** (nd - 22), 1e22) if nd > 22 else (10.0**nd, 1.0)
        y = (xd * pow1) * pow2
    else:
        pow1, pow2 = 10.0 ** (-nd), 1.0
        y = xd / pow1
    z = np.rint(y)
    half = np.abs(y - z) == 0.5
    z = np.where(half, 2.0 * np.rint(y / 2.0), z)
    z = (z / pow2) / pow1 if nd >= 0 else z * pow1
    keep = ~np.isfinite(xd) | (np.isinf(y) if nd >= 0 else False)
    z = np.where(keep, xd, z).astype(out_dtype)
    if isinstance(x, np.ndarray):
        return z
    return z[()] if kind == "f" and isinstance(x, np.generic) else float(z)


class FnRef:
    """A function a kernel passes as a value (``cuda.atomic.add``, a device function) to be called later."""

    __slots__ = ("kind", "target")

    def __init__(self, kind: str, target):
        self.kind = kind
        self.target = target


class RecordRef:
    """Elements of a structured (record) array, one per lane: what ``r = ary[i]`` holds. Field reads and
    writes (``r.x``, ``r['x']``, ``ary[i].x = v``) go to the array itself; the subscript was the access."""

    __slots__ = ("h", "where")

    def __init__(self, h, where):
        self.h = h  # the array's handle
        self.where = where  # index columns into h.data, one entry per lane of the grid (or uniform ints)


class View:
    """A slice, row or reshape of an array (``a[i:j]``, ``a[i]`` of a 2-d ``a``, ``a[:, k]``, ``a.reshape(n)``).

    Its accesses are accesses of the array it views: each view index maps to the base array's index (a
    fixed index, per lane or uniform, or start + step * i along a base axis), so events name the base
    array and its element. Its shape is the same for every lane, except the length of a 1-d slice
    (``res[gid:]``), which may differ: ``lengths`` then holds each lane's, ``shape`` the longest."""

    __slots__ = ("base", "dims", "shape", "reshape_of", "lengths")

    def __init__(self, base, dims, shape, reshape_of=None, lengths=None):
        self.base = base  # the ArrayHandle viewed
        self.dims = dims  # per base axis: ("fix", index) or ("ax", start, step)
        self.shape = tuple(int(s) for s in shape)
        self.reshape_of = reshape_of  # for a reshape: the view (or array) reshaped, indexed through its flat index
        self.lengths = lengths  # None, or (1-d views) the length of each lane (an int64 array of one per lane)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        if self.lengths is not None:
            return self.lengths
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def dtype(self):
        return self.base.dtype

    @property
    def name(self):
        return self.base.name


class SplitBinding:
    """A variable that holds one array in some threads and another array in others (``v = a`` in one branch,
    ``v = b`` in the other, the branch taken by some threads only): ``arrays`` the arrays, ``choice`` each lane's
    (an index into ``arrays``). The CPU executor runs a statement on one array for all its lanes, so a use of the
    variable where the lanes running it hold one array is a use of that array, and a use where they hold
    several is refused, with where and why, instead of every thread using the last array bound."""

    __slots__ = ("name", "line", "arrays", "choice", "file")

    def __init__(self, name: str, line: int, arrays: tuple, choice: np.ndarray, file: str):
        self.name, self.line, self.arrays, self.choice, self.file = name, line, arrays, choice, file

    def refuse(self, line: int, picked):
        names = " and ".join(dict.fromkeys(_array_name(self.arrays[k]) for k in picked))
        raise UnsupportedConstruct(
            f"{self.file}:{line}: {self.name!r} is a different array in different threads here ({names}, bound at "
            f"line {self.line}): the CPU executor runs one statement on one array; index one array with a "
            "per-thread offset, or capture with backend='sim' (numba's simulator)", file=self.file, line=line)


def _array_name(a) -> str:
    while isinstance(a, View):
        a = a.base
    return a.name if isinstance(a, ArrayHandle) else type(a).__name__


class ArrayHandle:
    """An array as the kernel sees it: global (a kernel argument), const, shared (one per block) or local."""

    __slots__ = ("aid", "name", "data", "space", "shape", "ndim", "strides", "written", "line", "dtype", "flat_offset")

    def __init__(self, aid: int, name: str, data: np.ndarray, space: str, shape: tuple, line: int = -1):
        self.aid = aid
        self.name = name
        self.data = data
        self.space = space
        self.shape = tuple(int(s) for s in shape)
        self.ndim = len(self.shape)
        self.dtype = data.dtype
        self.line = line
        # C-order element strides: the trace's flat index of a[i, j] is i * shape[1] + j
        st, acc = [], 1
        for s in reversed(self.shape):
            st.append(acc)
            acc *= s
        self.strides = tuple(reversed(st))
        self.flat_offset = 0  # strides and offset map an index to the trace's flat index (a .view() changes both)
        self.written = None

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __repr__(self):
        return f"<{self.space} array {self.name}{list(self.shape)} {self.dtype}>"


_VECTOR_TYPES: dict = {}  # "float64x4" -> its namedtuple (fields x, y, z, w)


def _poison(data: np.ndarray) -> None:
    """Fill shared memory no thread has written yet so that reading it shows: NaN, 0xDEADBEEF or the extreme."""
    dt = data.dtype
    if dt.kind in "fc":
        data.fill(np.nan)
    elif dt.kind == "i":
        data.fill(_POISON_INT if dt.itemsize >= 4 else np.iinfo(dt).min)
    elif dt.kind == "u":
        data.fill(np.iinfo(dt).max)
    else:
        data.fill(0)


def _ranges(ids) -> str:
    """[0,1,2,3,7,9,10] -> '0-3, 7, 9-10' (the first few runs)."""
    ids = sorted(int(i) for i in ids)
    runs, start, prev = [], None, None
    for i in ids:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            runs.append((start, prev))
            start = prev = i
    if start is not None:
        runs.append((start, prev))
    parts = [f"{a}" if a == b else f"{a}-{b}" for a, b in runs[:8]]
    if len(runs) > 8:
        parts.append("...")
    return ", ".join(parts)
