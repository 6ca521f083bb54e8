"""Element types as text that turns back into the same numpy dtype: plain numbers and records alike.

A plain number type is its numpy name (``"float32"``). ``str()`` of a record (structured) dtype is a text numpy
cannot read back: ``np.dtype(str(np.dtype([("s0", "<u8")], align=True)))`` raises ``format number 1 of
"{'names': ...}" is not recognized``, and numba's ``numba.cuda.random`` states are such a record (aligned). So
a record is written as ``record`` followed by the JSON of its layout (names, formats, offsets, itemsize,
aligned), each format a plain name, a sub-array ``{"base": ..., "shape": [...]}`` or a nested record
``{"record": {...}}``; :func:`parse_dtype` reads either form back to an equal dtype (``==`` and the same
``isalignedstruct``).

Numpy only: the capture writes these texts into generated code and the model reads them from trace files.
"""

from __future__ import annotations

import json

import numpy as np

RECORD_PREFIX = "record"


def is_record(dt) -> bool:
    """A structured dtype (fields), as opposed to a plain number type or a bare void."""
    return np.dtype(dt).names is not None


def _format_spec(dt: np.dtype):
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        return {"base": _format_spec(base), "shape": [int(s) for s in shape]}
    if dt.names is not None:
        return {"record": record_spec(dt)}
    return dt.str  # byte order kept: '<u8'


def record_spec(dt) -> dict:
    """The layout of a record dtype as JSON-able data (see the module's text)."""
    dt = np.dtype(dt)
    if dt.names is None:
        raise ValueError(f"{dt} is not a record dtype")
    return {"names": list(dt.names), "formats": [_format_spec(dt.fields[n][0]) for n in dt.names],
            "offsets": [int(dt.fields[n][1]) for n in dt.names], "itemsize": int(dt.itemsize),
            "aligned": bool(dt.isalignedstruct)}


def _format_dtype(spec):
    if isinstance(spec, str):
        return np.dtype(spec)
    if isinstance(spec, dict) and "record" in spec:
        return dtype_from_spec(spec["record"])
    if isinstance(spec, dict) and "base" in spec:
        return np.dtype((_format_dtype(spec["base"]), tuple(int(s) for s in spec["shape"])))
    raise ValueError(f"not a field format: {spec!r}")


def dtype_from_spec(spec: dict) -> np.dtype:
    """The dtype :func:`record_spec` described."""
    try:
        return np.dtype({"names": list(spec["names"]), "formats": [_format_dtype(f) for f in spec["formats"]],
                         "offsets": [int(o) for o in spec["offsets"]], "itemsize": int(spec["itemsize"]),
                         "aligned": bool(spec.get("aligned", False))})
    except (KeyError, TypeError) as exc:
        raise ValueError(f"not a record layout: {spec!r} ({exc})") from exc


def dtype_text(dt) -> str:
    """Text for ``dt`` that :func:`parse_dtype` turns back into it."""
    dt = np.dtype(dt)
    if dt.names is not None:
        return RECORD_PREFIX + json.dumps(record_spec(dt), separators=(",", ":"))
    return str(dt)


def parse_dtype(text) -> np.dtype:
    """The dtype of :func:`dtype_text`'s text; anything else numpy reads (a name, a type, a dtype) as numpy does."""
    if isinstance(text, str) and text.startswith(RECORD_PREFIX + "{"):
        return dtype_from_spec(json.loads(text[len(RECORD_PREFIX):]))
    return np.dtype(text)


def describe(dt) -> str:
    """A record's layout for a person: ``record(s0 uint64 @0, s1 uint64 @8; 16 bytes, aligned)``; a plain
    number type is its name."""
    dt = np.dtype(dt)
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        return f"{describe(base)}[{','.join(str(int(s)) for s in shape)}]"
    if dt.names is None:
        return str(dt)
    fields = ", ".join(f"{n} {describe(dt.fields[n][0])} @{int(dt.fields[n][1])}" for n in dt.names)
    return f"record({fields}; {dt.itemsize} bytes{', aligned' if dt.isalignedstruct else ''})"
