"""gpuviz: see what a GPU really does when it runs a kernel.

    >>> import gpuviz
    >>> trace = gpuviz.capture(kernel, grid, block, *args)      # CPU executor by default
    >>> trace.save("run.gpuviz"); gpuviz.load("run.gpuviz")

Importing ``gpuviz`` is cheap: numba and Qt are imported only when something needs them.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .model.trace import ArrayInfo, EventKind, Launch, Trace  # noqa: E402  (numpy only)

# Import the subpackage gpuviz.capture first (numpy only at import time), so that the function below,
# defined after it, is what `gpuviz.capture` names. Its submodules stay importable as gpuviz.capture.X.
from . import capture as _capture_package  # noqa: E402,F401


def capture(kernel, grid, block, *args, backend: str = "cpu", **options) -> Trace:
    """Run ``kernel[grid, block](*args)`` instrumented and return its :class:`Trace`.

    ``kernel`` is an ordinary ``@cuda.jit`` kernel (the dispatcher or its Python function). The
    arguments are updated as a normal launch would update them. ``backend`` is ``"cpu"`` (gpuviz's
    own SIMT executor, the default), ``"sim"`` (numba's CUDA simulator) or ``"gpu"`` (a real GPU).
    """
    return _capture_package.capture(kernel, grid, block, *args, backend=backend, **options)


def load(path) -> Trace:
    """Load a trace saved with :meth:`Trace.save` (no pickle; damaged files give a clear error)."""
    from .model.tracefile import load_trace

    return load_trace(path)


def recording(backend: str = "cpu", **options):
    """``with gpuviz.recording() as rec: ...`` captures every kernel launch of the code inside, in this
    process (for notebooks; ``gpuviz run script.py`` runs a program isolated in a worker instead).
    ``rec.traces``, ``rec.launches``, ``rec.save(path)``. Options: kernel, launches, record_blocks, max_events."""
    from .runner.notebook import recording as _recording

    return _recording(backend=backend, **options)


def show(obj):
    """Open the window on a trace, a recording, a run result or a trace file, in a separate process
    (a notebook is not blocked). Returns the :class:`subprocess.Popen` of the window."""
    from .runner.notebook import show as _show

    return _show(obj)


__all__ = ["ArrayInfo", "EventKind", "Launch", "Trace", "capture", "load", "recording", "show", "__version__"]
