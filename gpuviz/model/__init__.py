"""The Qt-free, numba-free model: traces, frames, playback, analyses, files. Imports numpy only."""

from .trace import EVENT_FIELDS, SCHEMA_VERSION, ArrayInfo, EventKind, Launch, Trace

__all__ = ["EVENT_FIELDS", "SCHEMA_VERSION", "ArrayInfo", "EventKind", "Launch", "Trace"]
