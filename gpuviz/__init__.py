"""gpuviz: see what a GPU really does when it runs a kernel.

    >>> import gpuviz
    >>> trace = gpuviz.capture(kernel, grid, block, *args)      # CPU executor by default
    >>> gpuviz.model.tracefile.save_traces("run.gpuviz", [trace]); gpuviz.load("run.gpuviz")

Importing ``gpuviz`` is cheap: numba and Qt are imported only when something needs them. Every ``gpuviz.X``
import runs this file first (the worker of ``gpuviz run``, the model alone with Qt and numba blocked): the
functions below import the layer that does their work (the capture package, the runner, the HTML page) when
they are called, not here.
"""

from __future__ import annotations

import sys
import types

from .version import __version__  # in a module of its own: the model and the capture read it without this one

from .model.recording import load as _load_file  # noqa: E402  (numpy only)
from .model.tracefile import save_traces as _save_traces  # noqa: E402  (numpy only; recording imports it anyway)
from .model.trace import ArrayInfo, EventKind, Launch, Trace  # noqa: E402  (numpy only)



class _Package(types.ModuleType):
    """``gpuviz`` itself. Importing the subpackage ``gpuviz.capture`` (when a capture is asked for, not before:
    the window opens without it) binds it as an attribute of its parent; the function below keeps the name.
    Its submodules stay importable as ``gpuviz.capture.X``."""

    def __setattr__(self, name, value):
        if name == "capture" and isinstance(value, types.ModuleType) and value.__name__ == f"{__name__}.capture":
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def capture(kernel, grid, block, *args, backend: str = "cpu", **options) -> Trace:
    """Run ``kernel[grid, block](*args)`` instrumented and return its :class:`Trace`.

    ``kernel`` is an ordinary ``@cuda.jit`` kernel (the dispatcher or its Python function). The
    arguments are updated as a normal launch would update them. ``backend`` is ``"cpu"`` (gpuviz's
    own SIMT executor, the default), ``"sim"`` (numba's CUDA simulator) or ``"gpu"`` (a real GPU).
    """
    from .capture import capture as run_capture

    return run_capture(kernel, grid, block, *args, backend=backend, **options)


def save(path, trace) -> None:
    """Save ``trace`` (a :class:`Trace`, or a sequence of them) to a ``.gpuviz`` file, with its index: the file
    :func:`load` opens, as the window and ``gpuviz open`` do. (``Trace`` itself has no ``save``: the model's trace
    knows nothing of files.)"""
    traces = [trace] if isinstance(trace, Trace) else list(trace)
    _save_traces(path, traces)


def load(path):
    """Load a file: the :class:`Trace` of a one-trace file (saved with :func:`save`), or a
    :class:`~gpuviz.model.recording.Recording` (every launch of a run, a sequence of traces with the run's
    metadata) for a recording (``gpuviz run``, ``gpuviz.recording()``). No pickle; damaged files give a
    clear error."""
    return _load_file(path)


def recording(backend: str = "cpu", **options):
    """``with gpuviz.recording() as rec: ...`` captures every kernel launch of the code inside, in this
    process (for notebooks; ``gpuviz run script.py`` runs a program isolated in a worker instead).
    ``rec.traces``, ``rec.launches``, ``rec.save(path)``. Options: kernel, launches, record_blocks, max_events,
    run_untraced (a launch too large to trace runs untraced instead of raising TraceTooLarge)."""
    from .runner.notebook import recording as _recording

    return _recording(backend=backend, **options)


def show(obj, inline: bool | None = None, **page):
    """Show a trace, a recording, a lesson, a run result or a file.

    In a notebook (Jupyter, JupyterLab, VS Code, Colab) the page of the HTML export is drawn inline, in the
    cell's output (``page``: ``frames="A:B"``, ``theme="dark"``, ``height=`` in pixels), and nothing is returned.
    Elsewhere (``inline=False``, or outside a notebook) the window opens on it in a separate process (a notebook
    is not blocked) and its :class:`subprocess.Popen` is returned."""
    from .export.inline import InlinePage, in_notebook

    if inline is None:
        inline = in_notebook()
    if inline:
        from IPython.display import display

        display(InlinePage(obj, **page))
        return None
    if page:
        raise TypeError(f"gpuviz.show: {', '.join(page)} only apply to the page drawn inline in a notebook")
    from .runner.notebook import show as _show

    return _show(obj)


def _trace_repr_html(self) -> str:
    """A trace as a notebook cell's last line: the page of the HTML export, inline (see :func:`show`)."""
    from .export.inline import inline_html

    return inline_html(self)


# the model imports no export: the package's front door gives Trace its rich display
Trace._repr_html_ = _trace_repr_html


__all__ = ["ArrayInfo", "EventKind", "Launch", "Trace", "capture", "load", "recording", "save", "show", "__version__"]
