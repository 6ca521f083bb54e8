"""Shared test setup.

numba picks its CUDA simulator at import time, so the choice is made here, before any test module
imports numba. Tests run under the simulator unless GPUVIZ_TEST_GPU=1 asks for a real GPU.

Also here: each test process's own cache folder (the suite runs on xdist workers side by side), the one
``make_window``/``window`` fixture of the window tests, and CI's slice of the slow layers: cases marked ``full``
run only with ``--all`` (``bash dev test --all``).
"""

import faulthandler
import logging
import os
import sys
import tempfile

import pytest

ON_GPU = os.environ.get("GPUVIZ_TEST_GPU") == "1"
if not ON_GPU:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
else:
    import numpy as np

    # GPU images may carry numpy 2.5, where numba-cuda 0.30.x's first compile calls the removed np.row_stack
    # (gpuviz pins numpy<2.5 where it installs itself; gpuviz.capture.backends.gpu.device applies the same shim)
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


@pytest.hookimpl(trylast=True)  # after pytest's faulthandler plugin pointed the dump at stderr (_keep_fault_stacks)
def pytest_configure(config):
    config.addinivalue_line("markers", "window(trace=None, then=None, **options): the main window the ``window`` "
                                       "fixture opens in this test or module (see the fixture)")
    _keep_fault_stacks(config)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_teardown(item):
    """Widgets a test closed with ``deleteLater`` are destroyed in that test's teardown, after every fixture's and
    pytest-qt's: ``processEvents`` outside an event loop leaves deferred deletions queued, so a test's windows were
    destroyed at some point of a later test (inside its ``waitExposed``, say), a crash there blamed on a test that
    had nothing to do with it, and the moment depended on the other tests a worker happened to run first."""
    yield
    if "PySide6.QtWidgets" not in sys.modules:
        return
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication

    if QApplication.instance() is not None:
        QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


@pytest.fixture
def window(make_window, request):
    """One main window at 1600x900 (see :func:`make_window`): on the tiled matmul of ``tests.ui_traces``, or as the
    test module's (or test's) ``window`` marker says::

        pytestmark = pytest.mark.window(trace=make_trace, then=settle, source_label="test trace", on_screen=False)

    ``trace``: a callable that makes the trace to open (None: the tiled matmul); ``then``: a callable given the window
    once it is shown; anything else goes to ``make_window``."""
    mark = request.node.get_closest_marker("window")
    options = dict(mark.kwargs) if mark is not None else {}
    make_trace, then = options.pop("trace", None), options.pop("then", None)
    w = make_window(make_trace() if make_trace is not None else None, **options)
    if then is not None:
        then(w)
    return w


class _LoggedErrors(logging.Handler):
    """The errors gpuviz logs while a ``person`` fixture's windows are open."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record):
        self.records.append(f"{record.name}: {record.getMessage()}"
                            + (f" ({record.exc_info[1]!r})" if record.exc_info else ""))


@pytest.fixture
def person(qapp, monkeypatch):
    """Opens windows as a person would meet them; fails on any view error or logged error; closes them (the
    acceptance layer's fixture: ``person(trace, size=..., label=..., theme=...)``, ``person.check(w, where)``)."""
    from PySide6.QtWidgets import QDialog, QFileDialog, QMessageBox

    from gpuviz.ui.presenter import leave_presenter
    from gpuviz.ui.window import MainWindow
    from tests.acceptance_checks import settle

    # dialogs answer "cancel" at once: a sweep of File actions must not wait for a person
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: ("", "")))
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: ("", "")))
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *a, **k: ""))
    monkeypatch.setattr(QDialog, "exec", lambda self: QDialog.DialogCode.Rejected)
    for name in ("information", "warning", "critical", "question"):
        monkeypatch.setattr(QMessageBox, name, staticmethod(lambda *a, **k: QMessageBox.StandardButton.Cancel))
    errors = _LoggedErrors()
    logging.getLogger("gpuviz").addHandler(errors)
    made: list = []

    def open_window(trace, size=(1280, 720), label="", theme=None):
        from gpuviz.style.theme import get_theme

        kw = {"theme": get_theme(theme)} if theme else {}
        w = MainWindow(trace, source_label=label, **kw)
        w.resize(*size)
        w.show()
        settle()
        w.activateWindow()
        made.append(w)
        return w

    def check(w, where: str = "") -> None:
        bad = {vid: v.errors for vid, v in w.views.items() if v.errors}
        assert not bad, f"{where}: view errors {bad}"
        assert not errors.records, f"{where}: logged errors {errors.records}"

    open_window.check = check
    yield open_window
    logging.getLogger("gpuviz").removeHandler(errors)
    for w in made:
        leave_presenter(w)
        w.close()
        w.deleteLater()
    settle()


# A worker that dies of a signal (a segfault in Qt, say) shows only the end of faulthandler's dump in CI's output:
# each worker writes its dump to a file of its own as well, and the controller puts the crashed thread's stack into
# that test's failure report, where it is read.
_FAULT_DIR_VARIABLE = "GPUVIZ_TEST_FAULT_DIR"


def _keep_fault_stacks(config):
    worker = getattr(config, "workerinput", None)
    if worker is None:
        if config.pluginmanager.hasplugin("xdist") and _FAULT_DIR_VARIABLE not in os.environ:
            os.environ[_FAULT_DIR_VARIABLE] = tempfile.mkdtemp(prefix="gpuviz-test-faults-")
        return
    folder = os.environ.get(_FAULT_DIR_VARIABLE)
    if folder and os.path.isdir(folder):
        config._gpuviz_fault_file = open(os.path.join(folder, f"{worker['workerid']}.txt"), "w")  # noqa: SIM115
        faulthandler.enable(file=config._gpuviz_fault_file, all_threads=True)


def _fault_stack(worker_id: str) -> str:
    """The stacks faulthandler wrote when worker ``worker_id`` crashed: the crashed thread's in full, the others'
    names only."""
    folder = os.environ.get(_FAULT_DIR_VARIABLE, "")
    try:
        with open(os.path.join(folder, f"{worker_id}.txt"), errors="replace") as f:
            text = f.read()
    except OSError:
        return ""
    keep, in_current = [], False
    for line in text.splitlines():
        if line.startswith(("Fatal Python error", "Current thread", "Thread ")):
            in_current = line.startswith(("Fatal Python error", "Current thread"))
            keep.append(line)
        elif line.startswith("Extension modules"):
            in_current = False
        elif in_current and line.strip() and not any(f"/{m}/" in line for m in _HARNESS):
            keep.append(line)
    return "\n".join(keep[:60])


#: the frames of the test harness under a test's, left out of a crash's stack
_HARNESS = ("_pytest", "pluggy", "xdist", "execnet")


#: crashed tests run once more, at most this many in a session: a crash seen in CI about once in a few runs of the
#: whole suite, in the window tests' teardown (processEvents after a window closed), not reproduced in isolation
_CRASH_RERUNS = 3
_crashes: list[tuple[str, str]] = []  # (test, the crashed thread's stack), for the summary


def pytest_handlecrashitem(crashitem, report, sched):
    """pytest-xdist's hook for a test whose worker died: its report gets the crashed thread's stack, and the test
    runs once more on a fresh worker (the first crash of at most ``_CRASH_RERUNS`` tests). A second crash fails it;
    every crash is listed at the end of the run, passed on its second run or not."""
    stack = _fault_stack(getattr(getattr(report.node, "gateway", None), "id", ""))
    if stack:
        report.longrepr = f"{report.longrepr}\n\nthe worker's last words (faulthandler):\n{stack}"
    first = all(test != crashitem for test, _ in _crashes)
    _crashes.append((crashitem, stack))
    if first and len({test for test, _ in _crashes}) <= _CRASH_RERUNS:
        sched.mark_test_pending(crashitem)
        report.outcome = "rerun"


def pytest_report_teststatus(report, config):
    if report.outcome == "rerun":
        return "rerun", "R", ("RERUN", {"yellow": True})
    return None


def pytest_terminal_summary(terminalreporter):
    if _crashes:
        terminalreporter.section("worker crashes", sep="=", yellow=True, bold=True)
        for test, stack in _crashes:
            terminalreporter.line(f"{test}: its worker crashed (a second crash fails it)")
            terminalreporter.line(stack or "(no faulthandler dump)")
