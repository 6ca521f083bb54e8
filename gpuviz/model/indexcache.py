"""Where a prepared trace's index comes from when its file has none: the user's cache folder, or built now.

:func:`ensure_index` gives a :class:`~gpuviz.model.prepared.Prepared` trace its index: the file's own (handed to
it by the loader), the one kept in ``$XDG_CACHE_HOME/gpuviz/index`` for these events (:func:`load_cached`), or one
built now (:func:`gpuviz.model.index.build_index`) and kept there for the next open (:func:`save_cached`). The
cache key is the events' CRCs, count and launch (:func:`gpuviz.model.index.cache_key`), so a trace never read from
a file has none and an edited file never finds a stale index.

numpy only: no Qt, no numba.
"""

from __future__ import annotations

from pathlib import Path

from .index import TraceIndex, build_index, cache_key, cache_path, check_index
from .prepared import Prepared
from .tracefile import TraceFileError, collection_paused, load_index_file, save_index_file

__all__ = ["ensure_index", "key_of", "load_cached", "save_cached"]


def key_of(prepared: Prepared) -> str | None:
    """The cache key of a trace read from a file (None for a trace that was never saved)."""
    if not prepared.crcs:
        return None
    return cache_key(prepared.crcs, len(prepared.trace), prepared.trace.launch.to_json())


def load_cached(prepared: Prepared) -> bool:
    """Use the index kept in the user's cache folder for this trace's events, if there is a fitting one."""
    key = key_of(prepared)
    if key is None:
        return False
    with collection_paused():  # as for a trace file: its JSON rows are compacted here (see tracefile)
        idx = load_index_file(cache_path(key), key)
        if idx is None or check_index(idx, prepared.trace, prepared.crcs) is not None:
            return False
        prepared.use_index(idx, "cache")
    return True


def save_cached(prepared: Prepared, idx: TraceIndex) -> Path | None:
    """Keep ``idx`` in the user's cache folder for the next open of this trace's file (None when it cannot:
    a trace not read from a file, or a cache folder that cannot be written; opening goes on regardless)."""
    key = key_of(prepared)
    if key is None:
        return None
    idx.info["events_crc"] = dict(prepared.crcs)
    path = cache_path(key)
    try:
        save_index_file(path, idx, key)
    except (OSError, TraceFileError):
        return None
    return path


def ensure_index(prepared: Prepared, progress=None, cancelled=None) -> str:
    """Give ``prepared`` its index: the file's own (already there), the cached one, or one built now (then
    cached). Returns where it came from: "file", "cache" or "built"."""
    if prepared.index is not None:
        return prepared.source or "file"
    if load_cached(prepared):
        return "cache"
    idx = build_index(prepared.trace, progress=progress, cancelled=cancelled)
    save_cached(prepared, idx)
    if prepared.crcs:
        idx.info["events_crc"] = dict(prepared.crcs)
    prepared.use_index(idx, "built")
    return "built"
