"""The narration of the trace on screen, built on the spot or, for a large trace, on a thread (numpy only) with the
trace's warnings, races included; a bundled kernel's own notes at chosen frames go into it.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QThread

from ..catalog import kernel_info  # no numba: the catalog is plain data
from ..model.analysis import trace_warnings
from ..model.narration import NarrationCancelled, Narrator


log = logging.getLogger(__name__)


def kernel_notes(trace) -> tuple:
    """A bundled kernel's own notes at chosen frames (KernelSpec.frame_notes), if the trace is of one."""
    bundled = (trace.launch.meta or {}).get("bundled_kernel") or {}
    if not bundled.get("name"):
        return ()
    try:
        return kernel_info(bundled["name"]).frame_notes
    except KeyError:
        return ()


def build_narrator(prepared, notes, narrator=None):
    narrator = narrator or Narrator(prepared, notes=notes)
    narrator.caption(0)  # analyses the whole trace once; later captions are lookups
    return narrator


class NarratorJob(QThread):
    """Builds a Narrator off the GUI thread (numpy only: it touches no Qt object)."""

    def __init__(self, prepared, notes, parent=None):
        super().__init__(parent)
        self.prepared, self.notes, self.narrator = prepared, notes, None
        self.frames = prepared.frames  # which frames it narrates: the window drops a job of frames gone
        self.warnings = None  # the trace's warnings, races included (too large to analyse on the GUI thread)
        self._building = Narrator(prepared, notes=notes)

    _cancelled = False

    def cancel(self) -> None:
        """Another trace is on screen: stop at the next stage and let go of this one's arrays."""
        self._cancelled = True
        building = self._building
        if building is not None:
            building.cancel()

    def run(self) -> None:
        try:
            self.narrator = build_narrator(self.prepared, self.notes, self._building)
        except NarrationCancelled:
            pass
        except Exception:  # noqa: BLE001 - no caption is better than a crashed thread; the view says so
            log.exception("narration failed")
        finally:
            self._building = None
        if self._cancelled:
            return
        try:
            self.warnings = trace_warnings(self.prepared.trace)
        except Exception:  # noqa: BLE001
            log.exception("the trace's warnings could not be worked out")
