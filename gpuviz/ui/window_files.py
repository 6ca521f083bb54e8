"""The main window's files: a trace opened off the GUI thread (progress and Cancel in the status line), a recording
or a program sent to the launch list, the shipped GPU recordings, a trace saved, a picture of the window (a mixin
of :class:`~gpuviz.ui.window.MainWindow`).
"""

from __future__ import annotations

import weakref
from pathlib import Path

from PySide6.QtWidgets import QDialog, QFileDialog, QLabel, QProgressBar, QPushButton

from ..export.verify import check_export
from ..model.safewrite import replace_atomically
from ..model.tracefile import save_traces
from ..style.theme import stylesheet
from ..timing.recordings import list_recordings
from .open_job import OpenJob
from .recordings_dialog import RecordingsDialog
from .views.launches import load_recording, needs_launch_list, run_program, show_recording


class FilesMixin:
    """Opening, saving and picturing of :class:`~gpuviz.ui.window.MainWindow`."""

    # ---- GPU recordings ---------------------------------------------------------------------------
    def gpu_recordings(self) -> list:
        """The GPU trace recordings shipped in ``assets/recordings`` (read once)."""
        if self._recordings is None:
            try:
                self._recordings = list_recordings(kind="trace")
            except Exception as e:  # noqa: BLE001 - a damaged index must not keep the window from opening
                self._recordings = []
                self.statusBar().showMessage(f"the GPU recordings could not be listed: {e}", 15000)
        return self._recordings

    def open_recording(self, rec) -> bool:
        """Open one shipped GPU recording (a :class:`gpuviz.timing.recordings.Recording`)."""
        try:
            traces = rec.load()
        except (OSError, ValueError) as e:  # unreadable, or TraceFileError: damaged
            self.launch_panel.show_error(f"Could not open the recording {rec.label}: {e}")
            return False
        if not traces:
            self.launch_panel.show_error(f"The recording {rec.label} holds no launches")
            return False
        if len(traces) == 1:
            self.set_trace(traces[0], rec.label)
        else:
            show_recording(self, traces, rec.label)
        return True

    def open_recording_dialog(self) -> None:
        recs = self.gpu_recordings()
        if not recs:
            self.launch_panel.show_error("No GPU recordings are installed (assets/recordings is missing or empty).")
            return
        dialog = RecordingsDialog(recs, self)
        dialog.setStyleSheet(stylesheet(self.session.theme))
        if dialog.exec() == QDialog.DialogCode.Accepted and dialog.chosen() is not None:
            self.open_recording(dialog.chosen())

    def _build_open_progress(self) -> None:
        """Opening a file: its name and stage, a percent bar and Cancel, at the right of the status line."""
        bar = self.statusBar()
        self.open_label = QLabel("", bar)
        self.open_label.setObjectName("openLabel")
        self.open_bar = QProgressBar(bar)
        self.open_bar.setObjectName("openProgress")
        self.open_bar.setRange(0, 100)
        self.open_bar.setTextVisible(True)
        self.open_bar.setFixedWidth(200)
        self.open_cancel = QPushButton("Cancel", bar)
        self.open_cancel.setObjectName("openCancel")
        self.open_cancel.setToolTip("stop opening this file; the trace on screen stays")
        self.open_cancel.clicked.connect(lambda: self.cancel_open())
        for w in (self.open_label, self.open_bar, self.open_cancel):
            bar.addPermanentWidget(w)
            w.hide()

    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Open a trace, a recording or a Numba CUDA program", "",
            "gpuviz traces and programs (*.gpuviz *.py);;gpuviz traces (*.gpuviz);;Python programs (*.py);;All files (*)",
        )
        if path:
            self.open_path(path)

    def open_path(self, path: str) -> bool:
        """Open a trace; a recording of several launches or a program (.py) goes to the launch list."""
        if needs_launch_list(path):
            if str(path).endswith(".py"):
                run_program(self, path)  # in a worker process: the window never runs user code itself
                return True
            return load_recording(self, path)
        self.open_in_background(path)
        return True

    # ---- opening a trace file off the GUI thread ------------------------------------------------------
    def open_in_background(self, path: str):
        """Read ``path`` on a thread (gpuviz/ui/open_job.py) while the window goes on with the trace on screen;
        the new trace replaces it when ready. A second open cancels the first; Cancel keeps the old trace."""
        self.cancel_open(quiet=True)
        s = self.session
        opened = self._opened_file
        on_screen = (opened[0], s.prepared) if opened is not None and opened[1]() is s.trace else None
        job = OpenJob(path, self, prepare=[type(v).prepare for v in self.views.values() if v.on_screen()],
                      on_screen=on_screen)
        job.progress.connect(lambda pct, words, job=job: self._open_progress(job, pct, words))
        job.finished.connect(lambda job=job: self._open_finished(job))
        self._open_job = job
        self._open_jobs.append(job)
        # nothing is built ahead while the file is read (Qt items built then competed with this job's thread
        # for the GIL and held the GUI thread several times as long): the views build what the new trace's
        # layout takes in turns of their own once it is here (TraceView.warm_up_steps)
        self.open_label.setText(f"opening {Path(path).name}")
        self.open_bar.setValue(0)
        self.open_bar.setFormat("%p%")
        for w in (self.open_label, self.open_bar, self.open_cancel):
            w.show()
        job.start()
        return job

    @property
    def opening(self) -> bool:
        """Is a trace file being opened in the background now?"""
        return self._open_job is not None

    def cancel_open(self, quiet: bool = False) -> None:
        """Stop the open in progress (the trace on screen stays)."""
        job = self._open_job
        if job is None:
            return
        job.cancel()
        self._open_job = None
        self._hide_open_progress()
        if not quiet:
            self.statusBar().showMessage(f"opening {Path(job.path).name} cancelled", 8000)

    def _hide_open_progress(self) -> None:
        for w in (self.open_label, self.open_bar, self.open_cancel):
            w.hide()

    def _open_progress(self, job, pct: int, words: str) -> None:
        if job is self._open_job:
            self.open_bar.setValue(pct)
            self.open_bar.setToolTip(words)
            self.open_label.setText(f"opening {Path(job.path).name}: {words}")

    def _open_finished(self, job) -> None:
        if job in self._open_jobs:
            self._open_jobs.remove(job)
        job.deleteLater()
        if job is not self._open_job:
            return  # cancelled or replaced by another open: its result is dropped
        self._open_job = None
        self._hide_open_progress()
        if job.error is not None:
            self.launch_panel.show_error(f"Could not open {job.path}: {job.error}")
        elif job.result is not None:
            prepared = job.result
            trace = prepared.trace
            self._live_trace = None
            if job.index_source == "on screen" and trace is self.session.trace:
                self.session.show_again(job.path)  # the same file, unchanged: nothing to rebuild
            else:
                self.session.set_trace(prepared, job.path)
            # a weak reference: the trace's arrays must not outlive its time on screen because of this
            self._opened_file = (job.identity, weakref.ref(trace)) if job.identity is not None else None
            if job.index_source == "built":
                self.statusBar().showMessage(f"{Path(job.path).name} indexed; the index is kept for the next open", 8000)

    def save_dialog(self) -> None:
        if self.session.trace is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Save the trace", f"{self.session.trace.launch.kernel_name}.gpuviz",
                                              "gpuviz traces (*.gpuviz)")
        if path:
            trace = self.session.trace
            number = (trace.launch.meta.get("recording") or {}).get("number")
            what = f"launch {number} ({trace.launch.kernel_name})" if number else trace.launch.kernel_name
            try:
                save_traces(path, [trace])  # read back before it is put in place: 'saved' only once it opens again
                self.statusBar().showMessage(f"saved {path}: {what}, {len(trace):,} events, read back", 8000)
            except (OSError, ValueError) as e:  # the disk, or TraceFileError: it would not read back
                self.launch_panel.show_error(f"Could not save {what} to {path}: {e}")

    def snapshot_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save a picture of the window", "gpuviz.png", "PNG (*.png)")
        if path:
            self.session.settle_now()  # views still to adopt a big trace (one a turn): every one drawn first
            try:  # a regular file or a new one, complete or not at all (never a device or a FIFO)
                with replace_atomically(path, "picture") as tmp:
                    if not self.grab().save(str(tmp), "PNG"):
                        raise OSError("the image could not be written")
                    held = check_export(tmp, "png", name=path)  # read back before it is moved into place
                self.statusBar().showMessage(f"saved {path} ({held})", 8000)
            except (OSError, ValueError) as e:
                self.launch_panel.show_error(f"Could not save {path}: {e}")
