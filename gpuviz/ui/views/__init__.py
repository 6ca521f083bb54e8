"""Docked views. Each view module registers its views with :func:`gpuviz.ui.views.base.register_view`; ``plots.py``,
``labels.py``, ``relayout.py`` and ``panels.py`` hold what several views share."""

import sys


def _import_pyqtgraph() -> None:
    """Import pyqtgraph without its CUDA interop: pyqtgraph's RawImageWidget imports ``cuda.bindings``
    (installed here with numba-cuda) when it can, 0.1-0.3 s of the window's start, for drawing arrays that
    live on a GPU. gpuviz hands pyqtgraph numpy arrays only, so pyqtgraph is shown no ``cuda.bindings``
    while it loads (its own fallback: ``cudart = None``); a capture imports the real one later as usual."""
    if "pyqtgraph" in sys.modules:
        return
    hidden = "cuda.bindings" not in sys.modules
    if hidden:
        sys.modules["cuda.bindings"] = None  # an import of it raises ImportError while this stands
    try:
        import pyqtgraph  # noqa: F401
    finally:
        if hidden and sys.modules.get("cuda.bindings", 0) is None:
            del sys.modules["cuda.bindings"]


_import_pyqtgraph()
