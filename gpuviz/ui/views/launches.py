"""The launch list: every kernel launch of a recording (or of a program run from the window), in order.

A recording (``gpuviz run`` / ``gpuviz.recording()``) holds several traces, one per launch, some of them
not traced (not chosen, over the event limit, a kernel gpuviz cannot instrument) or failed (the launch
that stopped the program). The list shows them all; picking a traced one puts it on screen.

For a program (``gpuviz open my_program.py``) the dock also runs it: in a worker process
(:mod:`gpuviz.runner.worker`, started through a QProcess so the GUI thread never waits), with Cancel, a
time limit, the program's output, a clear report when it fails, and a re-run when the file is saved.
The window never runs user code in its own process.

Hooks for the main window (all in this module, none needs window.py changed to work):
    install_launch_list(window) -> LaunchListDock   add the dock (idempotent)
    show_recording(window, traces, label)           fill it with a recording's traces
    load_recording(window, path) -> bool            open a recording file (errors shown, window stays)
    run_program(window, script, argv, backend=...)  run a program and show its launches as they come
    needs_launch_list(path)                          whether ``gpuviz open`` shows the list (gpuviz.app.open_window)
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

from PySide6.QtCore import QFileSystemWatcher, QObject, QProcess, QProcessEnvironment, Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QCheckBox,
    QDockWidget,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ...model.prepared import relaunched
from ...model.recording import load_recording as read_recording
from ...model.trace import EVENT_FIELDS, REQUIRED_FIELDS, Launch, Trace
from ...model.tracefile import TraceFileError, read_manifest
from ..capture_job import kill_worker
from ..plaintext import plain_tooltip

_COLUMNS = ("#", "kernel", "grid", "block", "events", "status")
_STATUS_COLUMN = _COLUMNS.index("status")
#: item data of a row's first column: (traced, status), what its colours follow
_LOOK_ROLE = Qt.ItemDataRole.UserRole + 1
_STACK_GRACE_MS = 400


def _dims(d) -> str:
    d = list(d)
    while len(d) > 1 and d[-1] == 1:
        d.pop()
    return "x".join(str(x) for x in d)


def recording_info(trace: Trace) -> dict:
    """The launch record a runner stored with a trace (number, status, reason...), or one made up for a
    plain trace file."""
    rec = trace.launch.meta.get("recording")
    if isinstance(rec, dict):
        return rec
    return {"number": None, "kernel": trace.launch.kernel_name, "grid": list(trace.launch.grid),
            "block": list(trace.launch.block), "status": "traced", "events": len(trace), "reason": ""}


def _end_program(proc: QProcess) -> None:
    """Kill a program's worker and every process below it (what the program forked or started: the worker
    is their subreaper), not the worker alone."""
    # gpuviz.runner imports gpuviz.capture: loaded when a program runs, never with the window (tests/test_startup.py)
    from ...runner import procs

    pid = int(proc.processId() or 0)
    if pid and proc.state() != QProcess.ProcessState.NotRunning:
        procs.end_tree(pid)
    proc.kill()


# ---- running a program from the window ------------------------------------------------------------------
class ScriptRunJob(QObject):
    """One program run in a worker QProcess; a new run replaces (kills) a running one."""

    launch_seen = Signal(dict)  # a launch the worker finished (its JSON record), as it happens
    progress = Signal(dict)  # a running launch's progress (number, kernel, seconds, events, threads_done, ...)
    output = Signal(str)  # the program's stdout/stderr, as it comes
    finished = Signal(object)  # a gpuviz.runner.script.RunResult
    busy_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None, time_limit_s: float = 300.0):
        super().__init__(parent)
        self.time_limit_s = time_limit_s
        self._proc: QProcess | None = None
        self._folder: str | None = None
        self._log = None  # the run's EventLogReader
        self._seen = 0
        self._ending = "exited"
        self._stdout, self._stderr = [], []
        self._t0 = 0.0
        self._poll = QTimer(self)
        self._poll.setInterval(150)
        self._poll.timeout.connect(self._read_events)
        self._deadline = QTimer(self)
        self._deadline.setSingleShot(True)
        self._deadline.timeout.connect(lambda: self._stop("timeout"))

    @property
    def busy(self) -> bool:
        return self._proc is not None

    def start(self, script, argv=(), **options) -> None:
        from ...runner.script import EventLogReader, prepare_run, run_key  # gpuviz.capture: see _end_program

        self.shutdown()
        self._folder, command, env = prepare_run(script, argv, **options)
        self._log = EventLogReader(self._folder)
        self._seen, self._ending, self._stdout, self._stderr = 0, "exited", [], []
        proc = QProcess(self)
        qenv = QProcessEnvironment()
        for k, v in env.items():
            qenv.insert(k, v)
        proc.setProcessEnvironment(qenv)
        proc.setWorkingDirectory(str(Path(script).resolve().parent))
        proc.readyReadStandardOutput.connect(lambda p=proc: self._read_output(p, False))
        proc.readyReadStandardError.connect(lambda p=proc: self._read_output(p, True))
        proc.finished.connect(lambda code, status, p=proc: self._finished(p, code))
        proc.errorOccurred.connect(lambda err, p=proc: self._error(p, err))
        self._proc = proc
        self._t0 = time.perf_counter()
        self.busy_changed.emit(True)
        proc.start(command[0], command[1:])
        proc.write((run_key(self._folder) + "\n").encode("ascii"))  # the key the worker signs its events with
        proc.closeWriteChannel()
        self._poll.start()
        self._deadline.start(int(self.time_limit_s * 1000))

    def cancel(self) -> None:
        self._stop("cancelled")

    def shutdown(self) -> None:
        """Kill a running worker silently (the window is closing, or a new run replaces it)."""
        proc, self._proc = self._proc, None
        self._poll.stop()
        self._deadline.stop()
        if proc is not None:
            _end_program(proc)
            kill_worker(proc)
            self.busy_changed.emit(False)
        self._cleanup()

    def _cleanup(self) -> None:
        if self._folder:
            from ...runner.script import forget_run

            forget_run(self._folder)
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None
            self._log = None

    def _stop(self, why: str) -> None:
        proc = self._proc
        if proc is None:
            return
        self._ending = why
        self._deadline.stop()
        pid = int(proc.processId() or 0)
        if why == "timeout" and pid and hasattr(signal, "SIGUSR1"):
            try:
                os.kill(pid, signal.SIGUSR1)  # the worker writes where it is before it is killed
            except OSError:
                pass
            QTimer.singleShot(_STACK_GRACE_MS, lambda p=proc: _end_program(p) if p is self._proc else None)
        else:
            _end_program(proc)

    def _read_output(self, proc: QProcess, err: bool) -> None:
        if proc is not self._proc:
            return
        data = bytes(proc.readAllStandardError() if err else proc.readAllStandardOutput()).decode(errors="replace")
        if data:
            (self._stderr if err else self._stdout).append(data)
            self.output.emit(data)

    def _read_events(self) -> None:
        if not self._folder or self._log is None:
            return
        for ev in self._log.poll():
            if ev["event"] == "launch":
                self._seen += 1
                self.launch_seen.emit(ev)
            elif ev["event"] == "progress":
                self.progress.emit(ev)

    def _finished(self, proc: QProcess, code: int) -> None:
        from ...runner.script import collect_run

        if proc is not self._proc:
            return
        self._read_output(proc, False)
        self._read_output(proc, True)
        self._poll.stop()
        self._deadline.stop()
        self._proc = None
        proc.deleteLater()
        result = collect_run(self._folder, code, ended=self._ending, timeout=self.time_limit_s,
                             seconds=time.perf_counter() - self._t0)
        result.stdout, result.stderr = "".join(self._stdout), "".join(self._stderr)
        self._cleanup()
        self.busy_changed.emit(False)
        self.finished.emit(result)

    def _error(self, proc: QProcess, err) -> None:
        if proc is not self._proc or err != QProcess.ProcessError.FailedToStart:
            return  # a crash is reported by finished
        self.shutdown()
        from ...runner.script import RunResult

        self.finished.emit(RunResult(script="", argv=[], status="crashed", exit_code=None,
                                     error={"kind": "FailedToStart", "message": f"could not start {sys.executable}"}))


# ---- the dock --------------------------------------------------------------------------------------------
class LaunchList(QWidget):
    """The launches of a recording; picking a traced one shows it in the window."""

    def __init__(self, window, parent: QWidget | None = None):
        super().__init__(parent)
        self.window_ = window
        self.traces: list[Trace] = []
        self.script: str | None = None
        self.argv: list[str] = []
        self.run_options: dict = {}
        self.last_result = None
        self.job = ScriptRunJob(self)
        self.watcher = QFileSystemWatcher(self)
        self.watcher.fileChanged.connect(self._file_changed)
        self._rerun_timer = QTimer(self)
        self._rerun_timer.setSingleShot(True)
        self._rerun_timer.setInterval(300)  # editors write a file in several steps: wait for the last
        self._rerun_timer.timeout.connect(self.rerun)

        self.title = QLabel("", self)
        self.title.setWordWrap(True)
        self.title.setTextFormat(Qt.TextFormat.PlainText)  # file and kernel names: never rich text
        self.tree = QTreeWidget(self)
        self.tree.setColumnCount(len(_COLUMNS))
        self.tree.setHeaderLabels(list(_COLUMNS))
        self.tree.setRootIsDecorated(False)
        self.tree.setUniformRowHeights(True)
        self.tree.header().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.tree.header().setStretchLastSection(True)
        self.tree.itemSelectionChanged.connect(self._picked)
        # room for the header and six launches: at 1280x720 the dock shared its column with the source and
        # showed two rows of a recording of twenty
        rows = self.tree.fontMetrics().height() + 6
        self.tree.setMinimumHeight(7 * rows + 2 * self.tree.frameWidth())
        self.run_button = QPushButton("Run again", self)
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.setEnabled(False)
        self.watch_box = QCheckBox("re-run on save", self)
        self.watch_box.setChecked(True)
        # `gpuviz run --run-untraced`: the program's results matter more than a trace of every launch
        self.untraced_box = QCheckBox("run too-large launches untraced", self)
        self.untraced_box.setToolTip(
            "A launch too large to trace (its trace would pass the event limit) runs untraced, so the program "
            "goes on and gets its results; the launch list shows it as not traced. Unchecked, the program is "
            "stopped at that launch with the estimate, the limit and how to trace it (gpuviz run --run-untraced).")
        self.run_button.clicked.connect(self.rerun)
        self.cancel_button.clicked.connect(self.job.cancel)
        buttons = QHBoxLayout()
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.watch_box)
        buttons.addStretch(1)
        options = QHBoxLayout()
        options.addWidget(self.untraced_box)
        options.addStretch(1)
        self.error = QLabel("", self)
        self.error.setObjectName("errorText")
        self.error.setWordWrap(True)
        self.error.setTextFormat(Qt.TextFormat.PlainText)
        self.error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error.setVisible(False)
        self.output = QPlainTextEdit(self)
        self.output.setReadOnly(True)
        self.output.setPlaceholderText("the program's output")
        self.output.setMaximumBlockCount(5000)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addLayout(buttons)
        layout.addLayout(options)
        layout.addWidget(self.tree, 3)
        layout.addWidget(self.error)
        layout.addWidget(self.output, 1)
        self._show_program_controls(False)
        self.job.launch_seen.connect(self._launch_seen)
        self.job.progress.connect(self._progress)
        self.job.output.connect(self._append_output)
        self.job.finished.connect(self._run_finished)
        self.job.busy_changed.connect(self._busy)
        window.session.theme_changed.connect(self._restyle_rows)

    # ---- a recording ----------------------------------------------------------------------------------
    def set_recording(self, traces: list[Trace], label: str = "") -> None:
        """List ``traces`` (one per launch) and show the first traced one."""
        self._clear()
        self.traces = list(traces)
        for trace in self.traces:
            self._add_row(trace)
        self.title.setText(label or f"{len(self.traces)} launch(es)")
        self.show_first_traced()

    def set_launches(self, recording, label: str = "") -> None:
        """List every launch of ``recording`` (a :class:`gpuviz.model.recording.Recording`), those whose trace is
        not in the file too (not traced, failed to save, the one the program died in), each with its reason."""
        self._clear()
        self.error.setVisible(False)  # what an earlier file or run went wrong with is not this one's
        for la in recording.launches:
            trace = recording[la.trace] if la.trace is not None else None
            if trace is None:
                trace = _untraced_launch_trace(la)
            else:  # the launch list's record of it: what the recording says, its save problem included
                trace = relaunched(trace, meta={**trace.launch.meta,
                                                "recording": {**recording_info(trace), **la.to_json()}})
            self.traces.append(trace)
            self._add_row(trace)
        self.title.setText(label or recording.summary_line())
        unsaved = recording.unsaved()
        if unsaved:
            self.show_error("\n".join(f"{la.label} is not in the recording: {la.save_error}" for la in unsaved))
        self.show_first_traced()

    def _clear(self) -> None:
        self.tree.blockSignals(True)
        self.tree.clear()
        self.tree.blockSignals(False)
        self.traces = []

    def show_first_traced(self) -> None:
        for row, trace in enumerate(self.traces):
            if len(trace):
                self.tree.setCurrentItem(self.tree.topLevelItem(row))
                return

    def _add_row(self, trace: Trace) -> QTreeWidgetItem:
        info = recording_info(trace)
        status = info.get("status", "traced")
        reason = str(info.get("reason") or "")
        text = {"traced": "traced", "untraced": "not traced", "failed": "FAILED"}.get(status, status)
        if info.get("save_error"):  # the launch ran, its trace is not in the file: said as a failure
            status, reason, text = "failed", str(info["save_error"]), "NOT SAVED"
        if reason:
            text += ": " + reason.strip().splitlines()[0]
        number = info.get("number") or (self.tree.topLevelItemCount() + 1)
        item = QTreeWidgetItem([str(number), trace.launch.kernel_name, _dims(trace.launch.grid),
                                _dims(trace.launch.block), f"{len(trace):,}", text])
        item.setToolTip(_STATUS_COLUMN, plain_tooltip(reason or text))
        item.setData(0, Qt.ItemDataRole.UserRole, self.tree.topLevelItemCount())
        item.setData(0, _LOOK_ROLE, (bool(len(trace)), status))
        self._style_row(item)
        self.tree.addTopLevelItem(item)
        return item

    def _style_row(self, item: QTreeWidgetItem) -> None:
        """A launch not traced in the theme's dimmed text, a failed one's status in its alert colour (both
        4.5:1 or more on the list): the theme's, so that a theme change restyles the rows."""
        theme = self.window_.session.theme
        traced, status = item.data(0, _LOOK_ROLE)
        if not traced:  # a traced row keeps the list's own text colour
            dimmed = QBrush(QColor(theme.dimmed))
            for c in range(len(_COLUMNS)):
                item.setForeground(c, dimmed)
        if status == "failed":
            item.setForeground(_STATUS_COLUMN, QBrush(QColor(theme.alert)))

    def _restyle_rows(self) -> None:
        for row in range(self.tree.topLevelItemCount()):
            self._style_row(self.tree.topLevelItem(row))

    def _picked(self) -> None:
        item = self.tree.currentItem()
        if item is None:
            return
        row = int(item.data(0, Qt.ItemDataRole.UserRole))
        if not 0 <= row < len(self.traces):
            return
        trace = self.traces[row]
        info = recording_info(trace)
        if not len(trace):  # a launch that ran without a trace: say why, keep the current one on screen
            why = str(info.get("save_error") or info.get("reason") or "").strip()
            verb = "is not in the recording" if info.get("save_error") else "was not traced"
            self.window_.statusBar().showMessage(
                f"launch {info.get('number')} ({trace.launch.kernel_name}) {verb}: "
                f"{why.splitlines()[0] if why else 'no events'}", 15000)
            return
        label = f"launch {info.get('number')} of {Path(self.script).name if self.script else 'the recording'}"
        self.window_.set_trace(trace, label)

    # ---- a program --------------------------------------------------------------------------------------
    def run_program(self, script, argv=(), **options) -> None:
        """Run ``script`` in a worker and list its launches as they finish (replaces a running one).

        ``run_untraced`` (as ``gpuviz run --run-untraced``), when given, sets the panel's checkbox; the run
        (and every re-run) takes the checkbox's state."""
        if "run_untraced" in options:
            self.untraced_box.setChecked(bool(options.pop("run_untraced")))
        path = str(Path(script).resolve())
        if self.script != path:
            if self.watcher.files():
                self.watcher.removePaths(self.watcher.files())
            if Path(path).exists():
                self.watcher.addPath(path)
        self.script, self.argv, self.run_options = path, [str(a) for a in argv], dict(options)
        self._show_program_controls(True)
        timeout = options.pop("timeout", None)
        if timeout:
            self.job.time_limit_s = float(timeout)
        self._clear()
        self.output.clear()
        self.error.setVisible(False)
        self.title.setText(f"running {Path(path).name} {' '.join(self.argv)}".strip())
        self.job.start(path, self.argv, run_untraced=self.untraced_box.isChecked(), **options)

    def rerun(self) -> None:
        if self.script:
            self.run_program(self.script, self.argv, **self.run_options)

    def _file_changed(self, path: str) -> None:
        if path not in self.watcher.files() and Path(path).exists():
            self.watcher.addPath(path)  # an editor that saves by replacing the file: keep watching
        if self.watch_box.isChecked():
            self._rerun_timer.start()

    def _show_program_controls(self, on: bool) -> None:
        for w in (self.run_button, self.cancel_button, self.watch_box, self.untraced_box, self.output):
            w.setVisible(on)

    def _busy(self, busy: bool) -> None:
        self.cancel_button.setEnabled(busy)
        self.run_button.setText("Restart" if busy else "Run again")

    def _append_output(self, text: str) -> None:
        self.output.moveCursor(self.output.textCursor().MoveOperation.End)
        self.output.insertPlainText(text)

    def _launch_seen(self, ev: dict) -> None:
        rec = {k: v for k, v in ev.items() if k not in ("event", "trace_file")}
        self.title.setText(f"running {Path(self.script).name}: launch {rec.get('number')} ({rec.get('kernel')}) done")

    def _progress(self, ev: dict) -> None:
        if self.script:
            from ...runner.script import progress_text

            self.title.setText(f"running {Path(self.script).name}: {progress_text(ev)}")

    def _run_finished(self, result) -> None:
        self.last_result = result
        name = Path(result.script or self.script or "").name
        n = len(result.launches)
        traced = sum(1 for r in result.launches if r.traced)
        state = {"ok": "finished", "exited": f"exited with status {result.exit_code}"}.get(result.status, result.status)
        # every launch, in order: those that left no trace (the run died inside them, or their trace could not be
        # saved or read back) are listed where they ran, with why
        recording = result.recording()
        self.set_launches(recording)
        self.title.setText(f"{name}: {state} in {result.seconds:.1f} s · {n} launch(es), {traced} traced "
                           f"({result.backend})")
        if result.notices:
            self.title.setText(self.title.text() + "\n" + "\n".join(result.notices))
        problems = [result.message] if result.error else []
        problems += [f"{la.label} is not in the recording: {la.save_error}" for la in recording.unsaved()]
        if problems:
            self.show_error("\n".join(problems))
        if traced:
            self.show_first_traced()
        elif not result.error:
            self.show_error(f"{name} ran without launching a kernel that could be traced: nothing to show")

    def show_error(self, message: str) -> None:
        self.error.setText(message + "\nThe window and the trace on screen are unaffected.")
        self.error.setVisible(True)
        self.window_.statusBar().showMessage(message.splitlines()[0], 20000)

    def shutdown(self) -> None:
        self.job.shutdown()


def _untraced_launch_trace(rec) -> Trace:
    """An empty trace for a launch known only from the worker's events (it died inside the launch)."""
    import numpy as np

    launch = Launch(kernel_name=rec.kernel, grid=tuple(rec.grid) or (1,), block=tuple(rec.block) or (1,),
                    source_file=rec.file, backend="none", device="not traced", meta={"recording": rec.to_json()})
    return Trace(launch, {f: np.empty(0, EVENT_FIELDS[f][0]) for f in REQUIRED_FIELDS})


class LaunchListDock(QDockWidget):
    def __init__(self, window):
        super().__init__("Launches", window)
        self.setObjectName("dock_launches")
        self.launch_list = LaunchList(window, self)
        self.setWidget(self.launch_list)


# ---- hooks for the main window ----------------------------------------------------------------------------
def install_launch_list(window) -> LaunchListDock:
    """Add the launch-list dock to ``window`` (once); it is tabbed with the Launch panel when there is one."""
    dock = getattr(window, "launch_list_dock", None)
    if dock is not None:
        return dock
    dock = LaunchListDock(window)
    window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
    docks = getattr(window, "docks", {})
    anchor = docks.get("launch") or docks.get("details")
    if anchor is not None:
        window.tabifyDockWidget(anchor, dock)
    dock.raise_()
    docks["launches"] = dock
    window.launch_list_dock = dock
    window.destroyed.connect(lambda *_: dock.launch_list.shutdown())
    return dock


def show_recording(window, traces: list[Trace], label: str = "") -> LaunchListDock:
    dock = install_launch_list(window)
    dock.launch_list.set_recording(traces, label)
    dock.raise_()
    return dock


def load_recording(window, path) -> bool:
    """Open a recording (or a single trace) file into ``window``, every launch it lists in the launch list;
    a damaged file is reported in the dock."""
    dock = install_launch_list(window)
    try:
        recording = read_recording(path)
    except (TraceFileError, OSError) as exc:
        dock.launch_list.show_error(f"Could not open {path}: {exc}")
        dock.raise_()
        return False
    dock.launch_list.set_launches(recording, f"{Path(path).name}: {recording.summary_line()}")
    dock.raise_()
    return True


def run_program(window, script, argv=(), **options) -> LaunchListDock:
    """Run a program from the window (in a worker process) and list its launches."""
    dock = install_launch_list(window)
    dock.launch_list.run_program(script, argv, **options)
    dock.raise_()
    return dock


def needs_launch_list(path) -> bool:
    """Does ``gpuviz open PATH`` need the launch list: a program to run, or a file of several launches?"""
    p = Path(path)
    if p.suffix == ".py":
        return True
    try:
        meta = read_manifest(p)  # the manifest alone, checked and bounded: nothing is loaded or executed
        traces = meta.get("traces", [])
        return meta.get("recording") is not None or len(traces) > 1 or any("recording" in (t.get("launch", {}).get("meta") or {}) for t in traces)
    except Exception:  # noqa: BLE001 - unreadable files go the ordinary way, which reports them
        return False

