"""The window's capture of a bundled kernel in a worker process: the Qt side of the one worker protocol
(:mod:`gpuviz.runner.protocol`), a thin adapter from its messages to Qt signals.

:class:`CaptureRunner` starts ``python -m gpuviz.runner.worker`` on a bundled-kernel request
(:mod:`gpuviz.runner.bundled` is the job) in a QProcess: the GUI thread never waits on it, a crash or hang
there (or a GPU fault, which poisons the process's CUDA context) cannot take the window down, Cancel kills it,
and a second Run while one is running replaces the first (the stale one is killed and its result ignored). It
follows the worker's signed messages as they come: ``stage`` and ``percent`` under the progress bar, a
``notice`` (e.g. no GPU here, so the CPU executor captured the kernel instead), then the ``launch`` whose trace
is read back on a thread, or the ``error`` as one readable message. A worker that dies without an error, or
runs past the time limit, ends in a message too. This module imports no numba and no capture package.
"""

from __future__ import annotations

import shutil
import sys
import tempfile

from PySide6.QtCore import QObject, QProcess, QProcessEnvironment, QTimer, Signal

from ..runner.protocol import EventLogReader, error_text, forget_run, new_run, run_key, trace_path
from .open_job import OpenJob


def kill_worker(proc: QProcess) -> None:
    """Stop a worker process for good: no more of its signals reach us, then kill it and free it."""
    for sig in (proc.readyReadStandardOutput, proc.readyReadStandardError, proc.finished, proc.errorOccurred):
        try:
            sig.disconnect()
        except (RuntimeError, TypeError):  # nothing was connected
            pass
    if proc.state() != QProcess.ProcessState.NotRunning:
        proc.kill()
        proc.waitForFinished(3000)
    proc.deleteLater()


class CaptureRunner(QObject):
    """Runs one capture at a time in a child process; newer requests replace older ones."""

    stage = Signal(str)  # what the worker does now
    percent = Signal(int)  # how far it is, 0..100 (the worker's percent messages)
    notice = Signal(str, dict)  # (something the user must see, the request): e.g. no GPU, fell back to the CPU
    succeeded = Signal(object, dict)  # (Trace, the request)
    failed = Signal(str, dict)  # (readable message, the request)
    busy_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None, time_limit_s: float = 300.0):
        super().__init__(parent)
        self._proc: QProcess | None = None
        self._request: dict | None = None
        self._tmpdir: str | None = None
        self._log: EventLogReader | None = None  # the worker's messages
        self._err = ""
        self._done: dict | None = None  # the worker's launch message: the trace is saved
        self._error_text: str | None = None  # the worker's error message, as the window shows it
        self._notices: list[str] = []
        self.time_limit_s = time_limit_s
        self._loading = None  # the finished capture's trace being read back (an OpenJob)
        self._load_jobs: list = []  # it, and replaced ones still winding down
        self._watchdog = QTimer(self)
        self._watchdog.setSingleShot(True)
        self._watchdog.timeout.connect(self._timed_out)
        self._poll = QTimer(self)
        self._poll.setInterval(100)
        self._poll.timeout.connect(self._read_events)

    @property
    def busy(self) -> bool:
        return self._proc is not None or self._loading is not None

    def run(self, request: dict) -> None:
        """Start capturing ``request`` (kernel, size, block, backend; fallback_to_cpu, watchdog: see
        :mod:`gpuviz.runner.bundled`); a running capture is cancelled."""
        self._stop(silent=True)
        self._tmpdir, command, env = new_run({"bundled": dict(request)},
                                             tempfile.mkdtemp(prefix="gpuviz-capture-"))
        self._request = dict(request)
        self._log = EventLogReader(self._tmpdir)
        self._err, self._done, self._error_text, self._notices = "", None, None, []
        proc = QProcess(self)
        qenv = QProcessEnvironment()
        for k, v in env.items():
            qenv.insert(k, v)
        proc.setProcessEnvironment(qenv)
        proc.readyReadStandardOutput.connect(lambda p=proc: p.readAllStandardOutput())  # not the protocol's
        proc.readyReadStandardError.connect(lambda p=proc: self._read_err(p))
        proc.finished.connect(lambda code, status, p=proc: self._finished(p, code, status))
        proc.errorOccurred.connect(lambda err, p=proc: self._error(p, err))
        self._proc = proc
        self.busy_changed.emit(True)
        self.stage.emit("starting the capture process")
        proc.start(command[0], command[1:])
        proc.write((run_key(self._tmpdir) + "\n").encode("ascii"))  # the key the worker signs its messages with
        proc.closeWriteChannel()
        self._poll.start()
        self._watchdog.start(int(self.time_limit_s * 1000))

    def cancel(self) -> None:
        if self.busy:
            self._stop(silent=True)
            self.stage.emit("cancelled")

    def shutdown(self) -> None:
        self._stop(silent=True)
        for job in list(self._load_jobs):
            job.wait()  # stops at its next checkpoint: no thread outlives the window

    # ---- process plumbing ------------------------------------------------------------------------
    def _stop(self, silent: bool) -> None:
        self._watchdog.stop()
        self._poll.stop()
        proc, self._proc = self._proc, None
        loading, self._loading = self._loading, None
        if loading is not None:
            loading.cancel()
        if proc is not None:
            kill_worker(proc)
        if proc is not None or loading is not None:
            self.busy_changed.emit(False)
        self._cleanup()

    def _cleanup(self) -> None:
        if self._tmpdir:
            forget_run(self._tmpdir)
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def _read_events(self) -> None:
        """The worker's new messages, as signals (the trace and the error are kept for the end)."""
        if self._log is None:
            return
        for ev in self._log.poll():
            kind = ev["event"]
            if kind == "stage":
                self.stage.emit(str(ev.get("text", "")))
            elif kind == "percent":
                try:
                    self.percent.emit(max(0, min(100, int(ev.get("value", 0)))))
                except (TypeError, ValueError):
                    pass
            elif kind == "notice":
                text = str(ev.get("text", ""))
                self._notices.append(text)
                self.notice.emit(text, dict(self._request or {}))
            elif kind == "launch":
                self._done = ev
            elif kind == "error":
                self._error_text = error_text(ev)

    def _read_err(self, proc: QProcess) -> None:
        if proc is self._proc:
            self._err += bytes(proc.readAllStandardError()).decode(errors="replace")

    def _finished(self, proc: QProcess, code: int, status) -> None:
        if proc is not self._proc:
            return  # a replaced request: ignore it
        self._read_events()
        self._read_err(proc)
        request = self._request or {}
        self._watchdog.stop()
        self._poll.stop()
        self._proc = None
        proc.deleteLater()
        message = self._error_text
        done = trace_path(self._tmpdir, self._done) if self._done is not None else None
        if message is None and (status == QProcess.ExitStatus.CrashExit or code != 0 or done is None):
            tail = self._err.strip().splitlines()[-3:]
            message = f"the capture process stopped unexpectedly (exit code {code})" + (
                ": " + " / ".join(tail) if tail else ""
            )
        if message is None:
            # read back on a thread (memory-mapped, with the index the worker saved): a big trace must not
            # freeze the window while it is read and checked
            job = OpenJob(str(done), self)
            job.finished.connect(lambda job=job, request=request: self._loaded(job, request))
            self._loading = job
            self._load_jobs.append(job)
            self.stage.emit("reading the captured trace back")
            job.start()
            return
        self._cleanup()
        self.busy_changed.emit(False)
        self.failed.emit(str(message), request)

    def _loaded(self, job, request: dict) -> None:
        if job in self._load_jobs:
            self._load_jobs.remove(job)
        job.deleteLater()
        if job is not self._loading:
            return  # cancelled, or replaced by a newer request
        self._loading = None
        self._cleanup()
        self.busy_changed.emit(False)
        if job.result is not None:
            if self._notices:
                request = dict(request, notice="\n".join(self._notices))
            self.succeeded.emit(job.result.trace, request)
        else:
            self.failed.emit(f"the captured trace could not be read back: {job.error or 'cancelled'}", request)

    def _error(self, proc: QProcess, err) -> None:
        if proc is not self._proc or err != QProcess.ProcessError.FailedToStart:
            return  # crashes are reported by finished
        self._stop(silent=True)
        self.failed.emit(f"could not start the capture process ({sys.executable})", self._request or {})

    def _timed_out(self) -> None:
        request = self._request or {}
        self._stop(silent=True)
        self.failed.emit(f"the capture took longer than {self.time_limit_s:g} s and was stopped "
                         "(a hang at a divergent barrier, or a size too big for this machine?)", request)

