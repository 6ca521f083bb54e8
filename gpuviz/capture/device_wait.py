"""Where the host waits for a kernel on a real GPU: marked, so that a watchdog in another thread can tell.

A kernel running on a GPU cannot be interrupted from inside the process that launched it: the host
thread sits in the CUDA driver (``cuCtxSynchronize``, a copy back) until it ends. gpuviz's GPU code
waits inside :func:`waiting`; :mod:`gpuviz.capture.launch_watch` reads :func:`current` from its own
thread and stops the program when one wait lasts longer than the watchdog allows.
"""

from __future__ import annotations

import contextlib
import threading
import time

_lock = threading.Lock()
_current: tuple[float, str] | None = None  # (time.monotonic() when the wait began, what is waited for)


@contextlib.contextmanager
def waiting(what: str):
    """Mark the calling thread's wait for the device (``what``: "the kernel", "the counting pass", ...)."""
    global _current
    with _lock:
        outer, _current = _current, (time.monotonic(), what)
    try:
        yield
    finally:
        with _lock:
            _current = outer


def current() -> tuple[float, str] | None:
    """(start, what) of the device wait in progress, or None."""
    return _current
