"""Shared test setup.

numba picks its CUDA simulator at import time, so the choice is made here, before any test module
imports numba. Tests run under the simulator unless GPUVIZ_TEST_GPU=1 asks for a real GPU.

Also here: each test process's own cache folder (the suite runs on xdist workers side by side), the one
``make_window``/``window`` fixture of the window tests, and CI's slice of the slow layers: cases marked ``full``
run only with ``--all`` (``bash dev test --all``).
"""

import os
import sys

import pytest

ON_GPU = os.environ.get("GPUVIZ_TEST_GPU") == "1"
if not ON_GPU:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
else:
    import numpy as np

    # GPU images may carry numpy 2.5, where numba-cuda 0.30.x's first compile calls the removed np.row_stack
    # (gpuviz pins numpy<2.5 where it installs itself; gpuviz.capture.gpu applies the same shim)
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack


def pytest_addoption(parser):
    parser.addoption("--all", action="store_true", default=False,
                     help="also run the cases marked 'full': the slow acceptance, layout and browser layers beyond CI's "
                          "representative slice (bash dev test --all)")


def pytest_collection_modifyitems(config, items):
    if not config.getoption("--all") and os.environ.get("GPUVIZ_TEST_ALL") != "1":
        beyond = [item for item in items if item.get_closest_marker("full")]
        if beyond:
            items[:] = [item for item in items if not item.get_closest_marker("full")]
            config.hook.pytest_deselected(items=beyond)
    if ON_GPU:
        return
    skip_gpu = pytest.mark.skip(reason="needs a real NVIDIA GPU: run with GPUVIZ_TEST_GPU=1 on a machine that has one")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


@pytest.fixture(scope="session", autouse=True)
def own_cache_folder(tmp_path_factory):
    """Each test process (each xdist worker, or the one process of a plain run) keeps gpuviz's cache (the trace
    index cache, ``$XDG_CACHE_HOME/gpuviz/index``) in a folder of its own: workers running side by side do not write
    one file at once, and no run reads what an earlier run (or the user's app) left in ``~/.cache``."""
    folder = tmp_path_factory.mktemp("xdg-cache")
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(folder)
    yield folder
    if before is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = before


@pytest.fixture
def make_window(qtbot):
    """Main windows for one test: ``make_window(trace, size=..., **MainWindow kwargs)`` shows one (the tiled matmul
    of ``tests.ui_traces`` when no trace is given) and, unless ``on_screen=False`` (``WA_DontShowOnScreen``), waits
    until it is exposed and active (window shortcuts need the active window). After the test each is taken out of
    presenter mode and closed, and the test fails if one left something behind: a capture process, an open on its
    thread, a playback timer, an error caught in a view, or a main window still open."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    from gpuviz.ui.window import MainWindow
    from tests.ui_traces import matmul_tiled_trace

    made = []

    def make(trace=None, *, size=(1600, 900), on_screen=True, **kw) -> MainWindow:
        w = MainWindow(trace if trace is not None else matmul_tiled_trace(16, 8), **kw)
        qtbot.addWidget(w)
        if not on_screen:
            w.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
        w.resize(*size)
        w.show()
        if on_screen:
            qtbot.waitExposed(w)
            w.activateWindow()
            qtbot.waitUntil(lambda: QApplication.activeWindow() is w)
        for _ in range(3):
            QApplication.processEvents()
        made.append(w)
        return w

    yield make
    left = []
    for w in made:
        left += [f"{vid}: {v.errors}" for vid, v in w.views.items() if v.errors]
        if "gpuviz.ui.presenter" in sys.modules:  # only a test that presented has loaded it
            sys.modules["gpuviz.ui.presenter"].leave_presenter(w)
        w.close()
        if w.launch_panel.runner.busy:
            left.append("a capture process still running")
        if w.session._clock.isActive():
            left.append("the playback timer still ticking")
        if w.opening or w._open_jobs:
            left.append(f"opens still running: {w._open_jobs}")
        w.deleteLater()
    for _ in range(3):
        QApplication.processEvents()
    left += [f"a main window still open: {t.windowTitle()!r}" for t in QApplication.topLevelWidgets()
             if isinstance(t, MainWindow) and t.isVisible()]
    assert not left, "\n".join(left)


@pytest.fixture
def window(make_window):
    """One main window on the tiled matmul of ``tests.ui_traces`` at 1600x900 (see :func:`make_window`)."""
    return make_window()
