"""Opening a trace file off the GUI thread, with progress in percent and Cancel.

:class:`OpenJob` (a QThread) reads the file (memory-mapped, see :mod:`gpuviz.model.tracefile`), gives the trace
its index (the file's own, the one in the user's cache folder, or one built now and cached, see
:mod:`gpuviz.model.index`) and builds its frames. The window stays responsive meanwhile: menus, scrubbing the
trace on screen, closing, another open (which cancels this one). Only numpy work runs on the thread; it touches
no Qt object but its own signals.

Signals (delivered on the GUI thread):

    progress(int, str)   percent done (0..100) and what it is doing, in words
    finished()           QThread's own: then ``result`` is (trace, frames), or ``error`` a message, or
                         ``cancelled`` is True

Opening the file the trace on screen was read from, unchanged since, reads nothing: the window goes back to its
first frame (``index_source`` "on screen").
"""

from __future__ import annotations

import logging
import os
import sys
import threading

from PySide6.QtCore import QThread, Signal

from ..model import index as index_mod
from ..model import indexcache
from ..model.prepared import prepare as prepare_trace
from ..model.tracefile import load_trace

log = logging.getLogger(__name__)

#: share of the progress bar the file read takes when the index must be built too (the rest is the build)
_READ_SHARE = 0.15

_STAGE_WORDS = {
    "frames": "ordering frames",
    "global_memory": "analysing global memory",
    "shared_banks": "analysing shared-memory banks",
    "divergence": "analysing divergence",
    "races": "looking for races",
    "done": "done",
}


def file_identity(path) -> tuple | None:
    """What says that a file is still the one read before: its device, inode, size and modification time
    (a file written again, in place or replaced by a new one, differs). None when it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (os.path.realpath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


#: the interpreter's thread switch interval (s) while a job runs: the GUI thread shares the GIL with the job's
#: thread, and each time it wants it back (every Qt callback into Python: a timer, a pyqtgraph item's paint) it
#: waited for the job's thread to let go, up to the default 5 ms each time, and a turn of the window made of
#: many callbacks stood still 50-160 ms (bench/gil_gaps.py --window)
SWITCH_INTERVAL = 0.001
_switch_lock = threading.Lock()
_switch_users = [0, None]  # jobs running, the interval before the first of them


def _switch_fast() -> None:
    with _switch_lock:
        if _switch_users[0] == 0:
            _switch_users[1] = sys.getswitchinterval()
            sys.setswitchinterval(min(SWITCH_INTERVAL, _switch_users[1]))
        _switch_users[0] += 1


def _switch_back() -> None:
    with _switch_lock:
        _switch_users[0] -= 1
        if _switch_users[0] == 0 and _switch_users[1] is not None:
            sys.setswitchinterval(_switch_users[1])


class OpenJob(QThread):
    progress = Signal(int, str)

    def __init__(self, path, parent=None, prepare=(), on_screen=None):
        """``prepare``: callables ``(prepared)`` run on the thread once the frames are there (the ``prepare`` hooks
        of the views on screen), so the window only lays out what they built.

        ``on_screen``: ``(identity, prepared)`` of the file the trace on screen was read from; when ``path`` is
        still that file (:func:`file_identity`), it is not read again: the result is that prepared trace
        (``index_source`` "on screen"), so opening it again costs nothing and maps no second copy."""
        super().__init__(parent)
        self.path = str(path)
        self._prepare = list(prepare)
        self._on_screen = on_screen
        self.result = None  # the trace's Prepared (made here: the opener of the file is where it is prepared)
        self.error: str | None = None
        self.cancelled = False
        self.index_source = ""  # "file" | "cache" | "built" | "on screen"
        self.identity: tuple | None = None  # the file's identity when it was read
        self._cancel = False

    def cancel(self) -> None:
        """Ask the job to stop at its next checkpoint (a fraction of a second); ``finished`` still comes."""
        self._cancel = True

    def _percent(self, fraction: float, words: str) -> None:
        self.progress.emit(int(round(100 * min(max(fraction, 0.0), 1.0))), words)

    def run(self) -> None:
        _switch_fast()
        try:
            self._run()
        finally:
            _switch_back()

    def _run(self) -> None:
        try:
            import numpy.ma  # noqa: F401 - numpy imports it lazily, on first use by a view: not on the GUI thread

            self._percent(0.0, "reading the file")
            self.identity = file_identity(self.path)
            if self._on_screen is not None and self.identity is not None and self._on_screen[0] == self.identity:
                self.index_source = "on screen"
                self._percent(1.0, "done: the file on screen, unchanged")
                self.result = self._on_screen[1]
                return
            trace = load_trace(self.path)
            if self._cancel:
                raise index_mod.Cancelled("read")

            def built(fraction: float, stage: str) -> None:
                self._percent(_READ_SHARE + (1 - _READ_SHARE) * fraction,
                              f"indexing for the first time: {_STAGE_WORDS.get(stage, stage)}")

            self._percent(_READ_SHARE, "looking for the index")
            prepared = prepare_trace(trace)
            self.index_source = indexcache.ensure_index(prepared, progress=built, cancelled=lambda: self._cancel)
            _ = prepared.frames  # sorted or adopted here, on this thread, not on the GUI's
            for hook in self._prepare:
                if self._cancel:
                    raise index_mod.Cancelled("prepare")
                self._percent(0.99, "preparing the views")
                try:
                    hook(prepared)
                except Exception:  # noqa: BLE001 - the view reports its own error when it draws
                    log.debug("a view's prepare hook failed", exc_info=True)
            if self._cancel:
                raise index_mod.Cancelled("frames")
            self._percent(1.0, "done")
            self.result = prepared
        except index_mod.Cancelled:
            self.cancelled = True
        except Exception as e:  # noqa: BLE001 - every failure becomes a message for the window
            log.debug("opening %s failed", self.path, exc_info=True)
            self.error = str(e).strip() or type(e).__name__
