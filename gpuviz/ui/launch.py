"""The launch panel: pick a bundled kernel, then either capture it live here (size, block, backend; in a
worker process) or open its recording made on a real GPU (shipped in ``assets/recordings``).

:class:`~gpuviz.ui.capture_job.CaptureRunner` captures in a worker process: the GUI thread never waits on
it, a crash or hang there (or a GPU fault, which poisons the process's CUDA context) cannot take the
window down, Cancel kills it, and a second Run while one is running replaces the first (the stale one is
killed and its result ignored). Errors come back as one readable message; the trace on screen stays until
a new one has loaded. Backend "gpu" on a machine without a usable GPU captures with the CPU executor
instead and says why (a notice, not an error).

The *Source* choice keeps live and recorded traces apart: "live on this machine: CPU executor" or
"recorded on NVIDIA H200 (2026-11-29)", with the recording's device, driver, date and versions shown.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from ..catalog import kernel_catalog
from ..style.theme import OKABE_ITO
from .capture_job import CaptureRunner
from .plaintext import esc
from .views.details import versions_text
from .wheel import wheel_passes_over


def parse_block(text: str) -> tuple[int, ...]:
    """``"16x16"``, ``"16, 16"`` or ``"256"`` -> a tuple of ints; ValueError saying what is wrong."""
    parts = [p for p in text.replace("x", " ").replace("X", " ").replace(",", " ").split() if p]
    if not 1 <= len(parts) <= 3:
        raise ValueError(f"block size {text!r}: write 1 to 3 numbers, e.g. 256 or 16x16")
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        raise ValueError(f"block size {text!r}: {', '.join(parts)} are not all whole numbers") from None
    if any(d < 1 for d in dims):
        raise ValueError(f"block size {text!r}: every dimension must be at least 1")
    return dims


BACKEND_WORDS = {
    "cpu": "CPU executor",
    "sim": "numba simulator",
    "gpu": "NVIDIA GPU",
}


def recording_choice_text(rec) -> str:
    """The Source entry of a shipped recording: device and date first, then what was recorded."""
    what = rec.title
    if rec.kernel and what.startswith(rec.kernel + ", "):
        what = what[len(rec.kernel) + 2:]
    return f"recorded on {rec.device} ({rec.date}): {what}"


def recording_description(rec) -> str:
    """Everything that says where and with what a recording was made (rich text for the panel)."""
    d = rec.details
    lines = [f"<b>Recorded on {esc(rec.device)}</b>, driver {esc(rec.driver)}, {esc(rec.date)}",
             f"{esc(rec.title)}" + (f" · {int(d['events']):,} events" if "events" in d else ""),
             esc(versions_text(rec.versions))]
    if "registers_plain" in d and "registers_instrumented" in d:
        lines.append(esc(f"registers/thread {d['registers_plain']} plain → {d['registers_instrumented']} recorded; "
                         f"blocks/SM {d.get('blocks_per_sm_plain', '?')} → {d.get('blocks_per_sm_instrumented', '?')}"))
    lines.append("A recording: it opens as it was captured on that GPU; nothing runs here.")
    return "<br>".join(lines)


class LaunchPanel(QWidget):
    """Kernel, source (live here or a GPU recording), size, block, backend, Run / Cancel, progress, errors."""

    LIVE = "live"

    def __init__(self, window, parent: QWidget | None = None):
        super().__init__(parent)
        self.window_ = window
        self.runner = CaptureRunner(self)
        self._specs: dict = {}
        self.recordings: list = []  # the shipped GPU recordings of traces (gpuviz.timing.recordings.Recording)
        form = self._build_form()
        self.note = QLabel(self)
        self.note.setWordWrap(True)
        self.note.setObjectName("viewTitle")
        self.note.setTextFormat(Qt.TextFormat.PlainText)
        self.recording_info = QLabel(self)
        self.recording_info.setObjectName("recordingInfo")
        self.recording_info.setWordWrap(True)
        self.recording_info.setTextFormat(Qt.TextFormat.RichText)
        self.recording_info.setVisible(False)
        buttons = QHBoxLayout()
        self.run_button = QPushButton("Run", self)
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.setEnabled(False)
        self.run_button.clicked.connect(self.run)
        self.cancel_button.clicked.connect(self.runner.cancel)
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.cancel_button)
        self.progress = QProgressBar(self)
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setTextVisible(False)
        self.status = QLabel("", self)
        self.status.setWordWrap(True)
        self.status.setTextFormat(Qt.TextFormat.PlainText)  # kernel names and messages: never rich text
        self.notice = QLabel("", self)
        self.notice.setObjectName("noticeText")
        self.notice.setStyleSheet(f"background: {OKABE_ITO['yellow']}; color: #000000; padding: 6px; border-radius: 4px;")
        self.notice.setWordWrap(True)
        self.notice.setTextFormat(Qt.TextFormat.PlainText)
        self.notice.setVisible(False)
        self.error = QLabel("", self)
        self.error.setObjectName("errorText")
        self.error.setWordWrap(True)
        self.error.setTextFormat(Qt.TextFormat.PlainText)
        self.error.setVisible(False)
        # what the person acts on and what went wrong come first, above the fold of a 720-pixel screen: an error
        # (a bad block size), Run / Open recording, progress; the descriptions after them
        layout = QVBoxLayout(self)
        layout.addWidget(self.error)
        layout.addWidget(self.notice)
        layout.addLayout(buttons)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        layout.addLayout(form)
        layout.addWidget(self.recording_info)
        layout.addWidget(self.note)
        layout.addStretch(1)
        wheel_passes_over(self)  # scrolling the panel turns no size, kernel or backend under the pointer
        self.runner.stage.connect(self.status.setText)
        self.runner.percent.connect(self._percent)
        self.runner.busy_changed.connect(self._busy)
        self.runner.succeeded.connect(self._succeeded)
        self.runner.failed.connect(self._failed)
        self.runner.notice.connect(lambda text, _req: self.show_notice(text))

    def _build_form(self) -> QFormLayout:
        """The launch's choices: kernel, source (live or a GPU recording), size, block and back end."""
        form = self.form = QFormLayout()
        self.kernel = QComboBox(self)
        self.kernel.currentIndexChanged.connect(self._kernel_changed)
        self.source = QComboBox(self)
        self.source.setToolTip("capture the kernel here and now, or open what it did on a real GPU (a recording)")
        self.source.currentIndexChanged.connect(self._source_changed)
        self.size = QSpinBox(self)
        self.size.setRange(1, 1 << 24)
        self.block = QLineEdit(self)
        self.block.setPlaceholderText("e.g. 256 or 16x16")
        self.backend = QComboBox(self)
        self.backend.addItem("CPU executor (fast, no GPU)", "cpu")
        self.backend.addItem("numba simulator (slow reference)", "sim")
        self.backend.addItem("NVIDIA GPU (falls back to the CPU executor without one)", "gpu")
        self.backend.currentIndexChanged.connect(self._backend_changed)
        for combo in (self.kernel, self.source, self.backend):
            # long entries must not widen the dock: show ~24 characters, the list pops up full width
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(12)
            combo.view().setTextElideMode(Qt.TextElideMode.ElideNone)
        form.addRow("Kernel", self.kernel)
        # the source gets the panel's whole width: "recorded on NVIDIA H200 (2026-11-29): ..." is long
        source_label = QLabel("Source: live, or a GPU recording", self)
        source_label.setWordWrap(True)
        form.addRow(source_label)
        form.addRow(self.source)
        form.addRow("Size", self.size)
        form.addRow("Block", self.block)
        form.addRow("Backend", self.backend)
        return form

    def load_kernels(self) -> None:
        """Fill the kernel list from the kernels' catalog (plain data: numba waits for a capture, in its worker)."""
        if self._specs:
            return
        try:
            self._specs = kernel_catalog()
        except Exception as e:  # noqa: BLE001 - a broken bundled kernel must not keep the panel from opening: it is shown
            self.show_error(f"the bundled kernels could not be loaded: {type(e).__name__}: {e}")
            return
        self.recordings = self.window_.gpu_recordings()
        self.kernel.blockSignals(True)
        for name, spec in self._specs.items():
            self.kernel.addItem(name, name)
        self.kernel.blockSignals(False)
        self.kernel.setCurrentIndex(0)
        self._kernel_changed()
        self.follow_trace()

    def follow_trace(self) -> None:
        """Show the settings of the trace on screen: its kernel, size and block, or the recording it came from,
        so that the panel never names a size the views are not showing (Run then captures it again)."""
        s = self.window_.session
        if not self._specs or s.trace is None:
            return
        L = s.trace.launch
        meta = L.meta or {}
        bundled = meta.get("bundled_kernel") if isinstance(meta.get("bundled_kernel"), dict) else {}
        name = bundled.get("name") or L.kernel_name
        i = self.kernel.findData(name)
        if i < 0:
            return  # not a bundled kernel (a user's program): the panel keeps what was chosen
        if i != self.kernel.currentIndex():
            self.kernel.setCurrentIndex(i)
        else:
            self._kernel_changed()
        rec = next((r for r in self.recordings_of(name) if r.label == s.source_label), None)
        if rec is not None:
            self.source.setCurrentIndex(max(0, self.source.findData(str(rec.path))))
            return
        size = bundled.get("size")
        if size:
            self.size.setValue(int(size))
        dims = list(L.block)
        while len(dims) > 1 and dims[-1] == 1:
            dims.pop()
        self.block.setText("x".join(str(int(d)) for d in dims))

    def recordings_of(self, kernel: str) -> list:
        return [r for r in self.recordings if r.kernel == kernel]

    def _live_text(self) -> str:
        return f"live on this machine: {BACKEND_WORDS.get(self.backend.currentData(), 'CPU executor')}"

    def _kernel_changed(self, *_):
        spec = self._specs.get(self.kernel.currentData())
        if spec is None:
            return
        self.size.setValue(int(spec.small_size if spec.small_size else spec.default_size))
        self.block.setText("x".join(str(b) for b in spec.default_block))
        self.note.setText(f"{spec.description}")
        self.size.setToolTip(f"problem size ({spec.size_label}); default {spec.default_size}")
        self.source.blockSignals(True)
        self.source.clear()
        self.source.addItem(self._live_text(), self.LIVE)
        for rec in self.recordings_of(spec.name):
            self.source.addItem(recording_choice_text(rec), str(rec.path))
            self.source.setItemData(self.source.count() - 1, rec.label, Qt.ItemDataRole.ToolTipRole)
        self.source.setCurrentIndex(0)
        self.source.blockSignals(False)
        self._source_changed()

    def _backend_changed(self, *_):
        if self.source.count():
            self.source.setItemText(0, self._live_text())

    def selected_recording(self):
        """The recording chosen as Source, or None for a live capture."""
        data = self.source.currentData()
        if data in (None, self.LIVE):
            return None
        return next((r for r in self.recordings if str(r.path) == data), None)

    def _source_changed(self, *_):
        rec = self.selected_recording()
        live = rec is None
        for w in (self.size, self.block, self.backend):
            w.setEnabled(live)
            self.form.setRowVisible(w, live)  # a recording has its own size and block: only its facts show
        self.run_button.setText("Run" if live else "Open recording")
        self.run_button.setToolTip("capture the kernel here, in a worker process" if live
                                   else f"open {rec.label}")
        self.recording_info.setVisible(not live)
        if rec is not None:
            self.recording_info.setText(recording_description(rec))

    def select_source(self, kernel: str, recorded: bool | str = True) -> None:
        """Choose ``kernel`` and its first recording (``recorded=True``), a recording by path, or live."""
        i = self.kernel.findData(kernel)
        if i < 0:
            raise ValueError(f"no bundled kernel named {kernel!r}")
        self.kernel.setCurrentIndex(i)
        if recorded is False:
            self.source.setCurrentIndex(0)
            return
        j = self.source.findData(str(recorded)) if isinstance(recorded, str) else (1 if self.source.count() > 1 else -1)
        if j < 1:
            raise ValueError(f"{kernel} has no GPU recording" + (f" at {recorded}" if isinstance(recorded, str) else ""))
        self.source.setCurrentIndex(j)

    def request(self) -> dict:
        return {
            "kernel": self.kernel.currentData() or self.kernel.currentText(),
            "size": int(self.size.value()),
            "block": list(parse_block(self.block.text())),
            "backend": self.backend.currentData(),
        }

    def run(self, request: dict | None = None) -> None:
        """Capture the panel's settings (or ``request``) in the worker; replaces a running capture.

        With a recording chosen as Source (and no ``request``), open that recording instead."""
        if not isinstance(request, dict):
            rec = self.selected_recording()
            if rec is not None:
                self.error.setVisible(False)
                self.window_.open_recording(rec)
                return
        try:
            request = request if isinstance(request, dict) else self.request()
        except ValueError as e:
            self.show_error(str(e))
            return
        self.error.setVisible(False)
        self.notice.setVisible(False)
        self.runner.run(request)

    def _busy(self, busy: bool) -> None:
        self.cancel_button.setEnabled(busy)
        # a busy indicator until the worker says how far it is (PERCENT), then a percent bar
        self.progress.setRange(0, 0 if busy else 1)
        self.progress.setTextVisible(False)

    def _percent(self, pct: int) -> None:
        if not self.runner.busy:
            return
        self.progress.setRange(0, 100)
        self.progress.setValue(pct)
        self.progress.setFormat("%p%")
        self.progress.setTextVisible(True)

    def _succeeded(self, trace, request) -> None:
        L = trace.launch
        used = BACKEND_WORDS.get(L.backend, L.backend)
        self.status.setText(f"captured {L.kernel_name} with the {used}: {len(trace):,} events")
        asked = request.get("backend")
        label = f"{request.get('kernel')} (size {request.get('size')}, {used}"
        label += ", fell back: no GPU here)" if asked != L.backend else ")"
        self.window_.set_trace(trace, label, live=True)
        if request.get("notice"):
            fell_back = asked != L.backend
            self.window_.show_notice(request["notice"], f"No GPU here: {L.kernel_name} was captured with the CPU executor "
                                     "instead (the notice above says why)" if fell_back else "")

    def _failed(self, message: str, request) -> None:
        self.status.setText("")
        what = request.get("kernel", "the kernel")
        if request.get("size") is not None:
            block = "x".join(str(b) for b in request.get("block") or []) or "default"
            what += f" (size {request.get('size')}, block {block}, backend {request.get('backend', 'cpu')})"
        extra = ""
        if message.startswith("KernelFault") and request.get("backend") == "gpu":
            extra = "\nThe GPU worker process that faulted was stopped; the next capture starts a fresh one."
        self.show_error(f"Capture of {what} failed: {message}{extra}\nThe previous trace stays on screen.")

    def show_notice(self, message: str) -> None:
        """Something the user must see that is not an error (the capture went on)."""
        self.notice.setText(message)
        self.notice.setVisible(True)

    def show_error(self, message: str) -> None:
        self.error.setText(message)
        self.error.setVisible(True)
        self.window_.statusBar().showMessage(message.splitlines()[0], 15000)
        dock = getattr(self.window_, "docks", {}).get("launch")
        if dock is not None and not dock.isFloating():
            dock.raise_()  # the panel may sit behind the details tab: bring the message forward
        scroll = dock.widget() if dock is not None else None
        if hasattr(scroll, "ensureWidgetVisible"):
            scroll.ensureWidgetVisible(self.error)  # scrolled down to the form's end: bring the message into view
