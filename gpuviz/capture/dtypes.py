"""Element types as the capture passes them around: numpy dtypes, their text, numba's types.

The compiler writes a shared or local array's dtype into the code it generates as text, and the trace names
every array's dtype as text. ``str()`` of a record dtype (``numba.cuda.random``'s aligned xoroshiro128p states, a
struct with a nested array field) is a text ``np.dtype`` does not read back (``format number 1 of "{'names': ...}"
is not recognized``), and a record numba hands over is its own type (``Record(i[type=int32;offset=0],...)``).
:func:`to_dtype` reads all of them; :func:`dtype_text` writes the text the model's
:func:`~gpuviz.model.dtypes.parse_dtype` reads back to the same dtype (alignment and offsets kept).
"""

from __future__ import annotations

import numpy as np

from ..model.dtypes import dtype_text as _model_text
from ..model.dtypes import parse_dtype


def plain(dt: np.dtype) -> np.dtype:
    """``dt`` without numpy's ``np.record`` scalar type (numba's simulator hands records as ``np.recarray``
    rows: their dtype prints as ``(numpy.record, {...})``, which no parser reads back); the layout is kept."""
    return np.dtype((np.void, dt)) if dt.names is not None and dt.type is not np.void else dt


def to_dtype(d) -> np.dtype:
    """The numpy dtype of a numpy dtype or scalar type, a dtype's text (plain or record), or a numba type
    (``float32``, a ``Record``)."""
    if isinstance(d, np.dtype):
        return plain(d)
    if isinstance(d, type) and issubclass(d, np.generic):
        return np.dtype(d)
    if isinstance(d, str):
        return plain(parse_dtype(d))
    module = type(d).__module__ or ""
    if module.startswith("numba"):
        if hasattr(d, "fields") and hasattr(d, "size") and hasattr(d, "aligned"):  # numba's Record type
            from numba.np.numpy_support import as_dtype

            return plain(as_dtype(d))
        name = "bool" if str(d) in ("boolean", "bool_") else getattr(d, "name", None) or str(d)
        return np.dtype(name)
    return plain(np.dtype(d))


def dtype_text(d) -> str:
    """Text for ``d`` that :func:`to_dtype` (and the model's ``parse_dtype``) turns back into the same dtype."""
    return _model_text(to_dtype(d))
