"""Entry points of the desktop app: ``run_app`` (the window) and ``snapshot`` (a PNG, headless).

``gpuviz`` with no argument opens the window on an embedded default: a bundled kernel (``matmul_tiled`` at
a small size) as gpuviz's CPU executor runs it: no GPU, no file to pick. Its trace ships with gpuviz
(``gpuviz/assets/default_trace.gpuviz``), so the first frame needs neither numba nor a capture; without that
file it is captured on the spot.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import traceback
from pathlib import Path

import numpy as np
from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QApplication, QMainWindow

import gpuviz

from .catalog import get_kernel, kernels_folder
from .model.trace import Trace
from .model.tracefile import load_trace, save_traces
from .qt_platform import ensure_platform
from .style.theme import get_theme, stylesheet
from .ui.session import Session
from .ui.share import share_with_class
from .ui.views.base import available_views
from .ui.views.launches import load_recording, run_program
from .ui.window import MainWindow

DEFAULT_KERNEL = "matmul_tiled"
DEFAULT_SIZE = 32  # 2 x 2 blocks of 16 x 16 threads: every view readable, captured in well under a second
DEFAULT_TRACE_PATH = Path(__file__).resolve().parent / "assets" / "default_trace.gpuviz"


def capture_default_trace():
    """The embedded default captured now with the CPU executor (imports numba and the bundled kernels)."""
    spec = get_kernel(DEFAULT_KERNEL)
    grid, block = spec.launch(DEFAULT_SIZE, spec.default_block)
    args = spec.make_args(DEFAULT_SIZE, np.random.default_rng(0))
    return gpuviz.capture(spec.kernel, grid, block, *args, backend="cpu",
                          meta={"bundled_kernel": {"name": DEFAULT_KERNEL, "size": DEFAULT_SIZE,
                                                   "size_label": spec.size_label}})


def write_default_trace(path=DEFAULT_TRACE_PATH) -> Path:
    """Capture the embedded default and store it where :func:`default_trace` reads it (with its index).

    ``python -c "from gpuviz.app import write_default_trace; write_default_trace()"`` after changing the
    default kernel or the CPU executor's event order (``tests/test_startup.py`` says when)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_traces(path, [capture_default_trace()])
    return path


def load_default_trace():
    """The shipped trace of the embedded default, or None when gpuviz was installed without it."""
    if not DEFAULT_TRACE_PATH.is_file():
        return None
    # the kernel's file as this installation has it, not the path of the machine that wrote the trace
    return load_trace(DEFAULT_TRACE_PATH, source_folder=kernels_folder())


def default_trace():
    """The embedded default, ``matmul_tiled`` at size 32 on the CPU executor: the shipped trace, else captured now."""
    trace = load_default_trace()
    return trace if trace is not None else capture_default_trace()


def _load(path_or_trace):
    """(trace, label, live): ``live`` when the trace was captured just now, on this machine."""
    if path_or_trace is None:
        trace = load_default_trace()
        if trace is not None:
            return trace, f"embedded default: {DEFAULT_KERNEL} size {DEFAULT_SIZE} (shipped trace)", False
        return capture_default_trace(), f"embedded default: {DEFAULT_KERNEL} size {DEFAULT_SIZE}", True
    if isinstance(path_or_trace, Trace):
        return path_or_trace, "", False
    path = Path(path_or_trace)
    if not path.exists():
        raise FileNotFoundError(f"no trace file at {path}")
    return load_trace(path), str(path), False


#: set by bench/drive_app.py (and anyone who wants it): an exception in a Qt callback also ends the app with
#: this status, so that a scripted session cannot carry on past the first failure
STRICT_ENV = "GPUVIZ_STRICT"
STRICT_EXIT_STATUS = 70


def report_uncaught(exc_type, exc, tb) -> None:
    """``sys.excepthook`` of the app: an exception raised in a Qt callback (a slot, a timer, a paint or key
    event) is logged with its whole traceback through the ``gpuviz`` logger (stderr: the app's log), shown in
    the status line, and under ``GPUVIZ_STRICT=1`` ends the app with status 70. PySide6 hands such an exception
    to ``sys.excepthook`` and carries on; without this the window would go on in a half-updated state and
    the only trace of it would be Python's bare print."""
    if issubclass(exc_type, KeyboardInterrupt):
        sys.__excepthook__(exc_type, exc, tb)
        return
    text = "".join(traceback.format_exception(exc_type, exc, tb))
    logging.getLogger("gpuviz").critical("uncaught exception in a Qt callback:\n%s", text.rstrip())
    app = QApplication.instance()
    if app is None:
        return
    for w in app.topLevelWidgets():
        if isinstance(w, QMainWindow) and w.isVisible():
            w.statusBar().showMessage(f"internal error: {exc_type.__name__}: {exc} (the traceback is in the log)",
                                      30000)
    if os.environ.get(STRICT_ENV) == "1":
        app.exit(STRICT_EXIT_STATUS)


def install_error_reporting() -> None:
    """Log records of the ``gpuviz`` logger to stderr with their level, and :func:`report_uncaught` as
    ``sys.excepthook``: what a window session writes is its log."""
    logger = logging.getLogger("gpuviz")
    if not any(getattr(h, "_gpuviz_log", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        handler._gpuviz_log = True
        logger.addHandler(handler)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)
    sys.excepthook = report_uncaught


def _application(headless: bool = False):
    if headless and not os.environ.get("QT_QPA_PLATFORM") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or sys.platform in ("win32", "darwin")
    ):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    app = QApplication.instance()
    if app is None:
        ensure_platform()  # a platform plugin that cannot load is a plain message with its fix, not Qt's abort
        app = QApplication(sys.argv[:1])
        app.setApplicationName("gpuviz")
        # what is imported and set up by now (numpy, Qt, pyqtgraph, numba's modules: ~70,000 objects) lives as long
        # as the program: kept out of the garbage collector's full passes, which walked it all in 80-120 ms with
        # the GIL held, a stall of the window wherever one fell (on the open job's thread while it parses a
        # trace's manifest too); after this, 2-7 ms
        gc.freeze()
    return app


def fit_to_screen(window, preferred=(1600, 950)) -> None:
    """Open at the preferred size, or at most 92% of a smaller screen (a 1366x768 laptop, a projector),
    centred on it. The place is the window's own, not left to the window manager: presenter mode saves it
    on entering and puts the window back there on leaving, and with ``--present`` it entered before any
    window manager had placed the window, so leaving moved it to the screen's corner."""
    screen = window.screen() or QApplication.primaryScreen()
    w, h = preferred
    if screen is not None:
        avail = screen.availableGeometry()
        w, h = min(w, int(avail.width() * 0.92)), min(h, int(avail.height() * 0.92))
        window.resize(w, h)
        window.move(avail.left() + (avail.width() - w) // 2, avail.top() + (avail.height() - h) // 2)
    else:
        window.resize(w, h)


def run_app(trace_path=None, present: bool = False, theme: str = "light", share=False) -> int:
    """Open the main window on ``trace_path`` (or the embedded default); returns the exit status. ``share``: True
    shares it with the class on this machine, ``"lan"`` on the LAN (gpuviz.ui.share)."""
    install_error_reporting()
    app = _application()
    window = open_main_window(trace_path, present=present, theme=theme)
    if isinstance(window, int):
        return window
    if share:
        if share_with_class(window, lan=share == "lan") is None:
            return 2
    return app.exec()


def open_main_window(trace_path=None, present: bool = False, theme: str = "light"):
    """The window ``run_app`` shows (sized to the screen, presenting if asked), or an exit status (int) when
    there is nothing to show. Needs a QApplication."""
    if isinstance(trace_path, (str, os.PathLike)):
        # a file opens in the background (gpuviz/ui/open_job.py): the window is up at once, with the progress
        path = Path(trace_path)
        if not path.is_file():
            print(f"gpuviz: no trace file at {path}", file=sys.stderr)
            return 2
        window = MainWindow(theme=get_theme(theme))
        fit_to_screen(window)
        window.show()
        window.open_in_background(str(path))
    else:
        try:
            trace, label, live = _load(trace_path)
        except Exception as e:  # noqa: BLE001 - the default capture or a trace object failing in any way: one line, exit 2
            print(f"gpuviz: {e}", file=sys.stderr)
            return 2
        # shown before the trace is set: a view that the window's layout puts behind a tab then computes nothing
        # for it until it comes to the front (a window not on screen yet has every view build at once). The first
        # paint comes from the event loop, after the trace is in: no empty frame is drawn
        window = MainWindow(theme=get_theme(theme))
        fit_to_screen(window)
        window.show()
        _lay_out_now(window)  # the docks in the places the first show gave them (tabs included), not painted yet
        # a trace captured just now, on this machine (the default without its shipped file): the window may say so
        window.set_trace(trace, label, live=live)
    settle_on_screen(window)
    if present:
        # here only: a window that nobody presents never loads the presenter (tests/test_startup.py)
        from .ui.presenter import enter_presenter

        enter_presenter(window, theme="dark")
    return window


def open_window(path, present: bool = False, argv=(), **options) -> int:
    """The window with its launch list on a recording, or on a program it runs (``.py``) in a worker (``gpuviz
    open``); returns the exit status."""
    app = _application()
    window = MainWindow()
    fit_to_screen(window)
    if Path(path).suffix == ".py":
        if not Path(path).is_file():
            print(f"gpuviz: no such program: {path}", file=sys.stderr)
            return 2
        run_program(window, path, argv, **options)
    elif not load_recording(window, path):
        print(f"gpuviz: {window.launch_list_dock.launch_list.error.text().splitlines()[0]}", file=sys.stderr)
        return 2
    if present:
        window.toggle_present()
    else:
        window.show()
    return app.exec()

def _lay_out_now(window) -> None:
    """Run the layout requests that showing ``window`` posted (its docks moved into the tabs and sizes of
    ``arrange_default``), and nothing else: no paint, no timer, no input."""
    QApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)


def settle_on_screen(window) -> None:
    """Let the first layout run, and fit the window to its screen again if it grew past it: while the docks take
    their places on the first show, the window's minimum height passes a 720-pixel screen for a moment (every
    dock's minimum in one column), and Qt grows the window to it, past the screen (1280x1265 on a 1280x720
    projector); arranged, the docks fit the size asked for again."""
    for _ in range(3):
        QApplication.processEvents()
    screen = window.screen() or QApplication.primaryScreen()
    if screen is not None:
        avail = screen.availableGeometry()
        if window.width() > avail.width() or window.height() > avail.height():
            fit_to_screen(window)
            QApplication.processEvents()


def _parse_size(size) -> tuple[int, int]:
    if isinstance(size, str):
        try:
            w, h = (int(x) for x in size.lower().split("x"))
        except ValueError:
            raise ValueError(f"size {size!r}: write WIDTHxHEIGHT, e.g. 1920x1080") from None
        size = (w, h)
    w, h = (int(x) for x in size)
    if w < 64 or h < 64:
        raise ValueError(f"size {w}x{h} is too small: at least 64x64")
    return w, h


def snapshot(path_or_trace, frame: int | None = 0, view: str | None = None, size=(1920, 1080), out_png="snapshot.png",
             theme: str = "light", scale: float = 1.0, selection: dict | None = None, window=None) -> Path:
    """Render the whole window, or one view (by view id: ``grid``, ``block``, ``source`` ...), to a PNG.

    ``frame`` may be negative (counted from the end). Works headless (offscreen Qt). Returns the path.
    ``window``: a :class:`~gpuviz.ui.window.MainWindow` made by an earlier call (:func:`snapshot_window`) to
    show the trace in, as File > Open does in a running window, instead of building one (a second or more).
    """
    w, h = _parse_size(size)
    app = _application(headless=True)
    trace, label, live = _load(path_or_trace)
    views = available_views()
    if view is not None and view not in views and view != "window":
        raise ValueError(f"no view named {view!r}; views: window, {', '.join(views)}")
    if window is not None and view in (None, "window"):
        return _snapshot_into(window, trace, label, frame, selection, (w, h), out_png, app)
    session = Session(theme=get_theme(theme, scale))
    session.set_trace(trace, label)
    _go_to(session, frame, selection)
    if view is None or view == "window":
        widget = MainWindow(session=session)
        if live:  # the embedded default was captured just now, here
            widget.mark_live(trace)
    else:
        widget = views[view](session)
        widget.setWindowTitle(views[view].title)
        widget.setStyleSheet(stylesheet(session.theme))
    widget.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
    widget.resize(w, h)
    widget.show()
    app.processEvents()
    if view not in (None, "window"):
        widget.refresh()
    else:
        widget.arrange_default()
    for _ in range(3):  # dock layouts settle over a few passes (tab bars are placed last)
        app.processEvents()
    if view in (None, "window"):
        widget._hide_stale_tab_bars()
    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    image = widget.grab()
    if not image.save(str(out), "PNG"):
        raise OSError(f"could not write {out}")
    widget.close()
    widget.deleteLater()
    session.shutdown()
    app.processEvents()
    return out


def _go_to(session, frame, selection) -> None:
    """Show ``frame`` (0-based; negative counts from the end) with ``selection`` (a thread, warp or block, and
    a memory cell), as a snapshot asks."""
    n = session.frames.n_frames
    if frame is not None and n:
        f = int(frame) + (n if int(frame) < 0 else 0)
        if not 0 <= f < n:
            raise ValueError(f"frame index {frame} out of range: this trace has {n} frames (indexes 0..{n - 1}, "
                             f"numbered 1..{n} in the window)")
        session.set_frame(f)
    if selection:
        sel = session.selection
        if "thread" in selection:
            sel.select_thread(selection["block"], selection["thread"])
        elif "warp" in selection:
            sel.select_warp(selection["block"], selection["warp"])
        elif "block" in selection:
            sel.select_block(selection["block"])
        if "array" in selection:
            sel.select_cell(selection["array"], selection["index"])


def snapshot_window(size=(1920, 1080), theme: str = "light", scale: float = 1.0):
    """A headless main window, empty, for :func:`snapshot` (``window=``) to show trace after trace in."""
    w, h = _parse_size(size)
    _application(headless=True)
    window = MainWindow(session=Session(theme=get_theme(theme, scale)))
    window.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
    window.resize(w, h)
    window.show()
    return window


def _snapshot_into(window, trace, label, frame, selection, size, out_png, app) -> Path:
    session = window.session
    window.set_trace(trace, label)
    _go_to(session, frame, selection)
    window.resize(*size)
    app.processEvents()
    window.arrange_default()
    for _ in range(3):
        app.processEvents()
    window._hide_stale_tab_bars()
    session.settle_now()  # a big trace's views adopt it one a turn in a window on screen: all of them, now
    app.processEvents()
    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    if not window.grab().save(str(out), "PNG"):
        raise OSError(f"could not write {out}")
    return out
