"""The app's real-GPU features on a machine without a GPU (pytest-qt, offscreen): the H200 recordings
offered and labelled, their device/date and SM ids on screen, backend "gpu" falling back to the CPU
executor with a visible notice, a GPU fault reported with the previous trace kept, plain vs instrumented
resources in the details panel, and the timings view on the H200 set with every series labelled."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt

from gpuviz.timing.recordings import list_recordings
from gpuviz.ui.recordings_dialog import RecordingsDialog
from tests.ui_traces import matmul_tiled_trace

RECORDINGS = list_recordings(kind="trace")


def _recording(kernel: str):
    return next(r for r in RECORDINGS if r.kernel == kernel)


# the conftest's window, labelled, with the launch panel's kernel list filled
pytestmark = pytest.mark.window(trace=lambda: matmul_tiled_trace(16, 8), source_label="test trace",
                                then=lambda w: w.launch_panel.load_kernels())


def test_the_recordings_are_shipped_and_labelled():
    assert len(RECORDINGS) >= 10
    for r in RECORDINGS:
        assert r.device == "NVIDIA H200" and r.driver and r.date and r.versions.get("numba_cuda"), r


def test_launch_panel_offers_live_and_recorded_sources_with_their_labels(window):
    panel = window.launch_panel
    panel.select_source("matmul_tiled", recorded=False)
    texts = [panel.source.itemText(i) for i in range(panel.source.count())]
    assert texts[0] == "live on this machine: CPU executor"
    assert texts[1] == "recorded on NVIDIA H200 (2026-11-29): matrix side 24"
    assert panel.run_button.text() == "Run" and panel.size.isEnabled() and not panel.recording_info.isVisible()
    # the live entry names the backend chosen below it
    panel.backend.setCurrentIndex(panel.backend.findData("sim"))
    assert panel.source.itemText(0) == "live on this machine: numba simulator"
    # every shipped recording is offered under its kernel
    for rec in RECORDINGS:
        panel.select_source(rec.kernel, recorded=str(rec.path))
        assert panel.selected_recording() == rec
    # choosing one shows device, driver, date and versions, and Run opens it instead of capturing
    panel.select_source("matmul_tiled")
    info = panel.recording_info.text()
    assert panel.run_button.text() == "Open recording" and not panel.size.isEnabled() and not panel.backend.isEnabled()
    assert not panel.form.isRowVisible(panel.size) and not panel.form.isRowVisible(panel.backend)
    for words in ("NVIDIA H200", "driver 580.159.04", "2026-11-29", "numba-cuda 0.30.4", "32 plain → 40 recorded"):
        assert words in info, (words, info)


def test_opening_a_recording_shows_its_device_and_date_and_sm_ids(window):
    panel = window.launch_panel
    panel.select_source("matmul_tiled")
    panel.run_button.click()  # opens the recording: no worker process
    assert not panel.runner.busy
    trace = window.session.trace
    assert trace.launch.backend == "gpu" and trace.launch.kernel_name == "matmul_tiled"
    for text in (window.windowTitle(), window.origin_status.text()):
        assert "recorded on NVIDIA H200 on 2026-11-29" in text, text
    assert window.origin_badge.text() == "GPU recording · NVIDIA H200 · 2026-11-29"
    # the grid view shows the SM each block ran on
    grid = window.views["grid"]
    sm = trace.sm[trace.block == 0][0]
    labels = [item.toPlainText() for item in grid._labels]
    # the caption says where the SMs are: on the blocks when their labels fit this window, else in Details
    on_blocks = grid._labels[0].isVisible()
    assert ("the SM each block ran on is on it" if on_blocks else "Details names the SM") in grid.caption.text()
    assert labels[0] == f"(0,0)\nSM {sm}" and all("\nSM " in t for t in labels) and len(labels) == 4
    details = window.views["details"]
    assert details.launch_text.startswith("from: recorded on NVIDIA H200 on 2026-11-29 (driver 580.159.04)")


def test_the_file_menu_lists_the_recordings(window):
    action = window.actions.qaction("file.open_recording")
    file_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&File")
    assert action in file_menu.actions() and action.text() == "Open a &GPU recording…"
    dialog = RecordingsDialog(window.gpu_recordings(), window)
    rows = dialog.rows()
    assert len(rows) == len(RECORDINGS)
    tiled = rows[[r.kernel for r in RECORDINGS].index("matmul_tiled")]
    assert tiled[:4] == ["matmul_tiled, matrix side 24", "NVIDIA H200", "580.159.04", "2026-11-29"]
    assert "numba-cuda 0.30.4" in tiled[4] and "Python 3.12.3" in tiled[4]
    dialog.table.setCurrentItem(dialog.table.topLevelItem(rows.index(tiled)))
    assert dialog.chosen().kernel == "matmul_tiled" and "registers/thread 32 plain" in dialog.info.text()
    assert window.open_recording(dialog.chosen())
    assert window.session.trace.launch.backend == "gpu"
    dialog.deleteLater()


def test_a_cpu_trace_never_passes_for_a_gpu_one(window):
    from gpuviz.app import default_trace

    window.set_trace(default_trace(), "embedded default", live=True)
    assert "CPU executor on this machine" in window.windowTitle() and "no GPU" in window.windowTitle()
    assert window.origin_badge.text() == "CPU executor · this machine · no GPU"
    details = window.views["details"]
    assert "schedule: the CPU executor's lockstep order, not a GPU's" in details.launch_text
    assert "plain" not in details.launch_text  # no registers to compare: nothing was compiled for a GPU
    # the same trace opened from a file is not said to come from this machine
    window.set_trace(window.session.trace, "a file")
    assert "on this machine" not in window.windowTitle() and "CPU executor captured" in window.windowTitle()
    assert "from: CPU executor captured" in details.launch_text
    window.mark_live(window.session.trace)  # what `gpuviz snapshot` does for the embedded default
    assert "CPU executor on this machine" in window.windowTitle() and "on this machine" in details.launch_text


@pytest.mark.skipif(os.environ.get("GPUVIZ_TEST_GPU") == "1", reason="a machine with a GPU captures on it: no fallback")
def test_backend_gpu_without_a_gpu_falls_back_to_the_cpu_with_a_notice(window, qtbot):
    panel = window.launch_panel
    before = window.session.trace
    with qtbot.waitSignal(panel.runner.succeeded, timeout=60_000):
        panel.run({"kernel": "vector_add", "size": 100, "block": [32], "backend": "gpu"})
    trace = window.session.trace
    assert trace is not before and trace.launch.kernel_name == "vector_add" and trace.launch.backend == "cpu"
    assert trace.launch.meta["fallback"]["asked"] == "gpu"
    assert len(trace) > 0 and window.views["grid"].rgba.shape[:2] == (1, 4)  # a real trace, drawn
    # visible, says why, and is not an error
    assert window.notice_bar.isVisible() and not panel.error.isVisible()
    notice = window.notice_text
    assert notice.startswith("No GPU here: vector_add[grid 4, block 32] (size 100, 128 threads) was captured with "
                             "gpuviz's CPU executor instead, on this machine's CPU, not a GPU. Why: ")
    assert "no usable NVIDIA GPU" in notice and "Use backend=" not in notice  # the why, without repeating itself
    assert window.statusBar().currentMessage() == ("No GPU here: vector_add was captured with the CPU executor instead "
                                                   "(the notice above says why)")
    assert panel.notice.isVisible() and panel.notice.text() == notice
    assert "(GPU asked for, unavailable here)" in window.windowTitle()
    assert "GPU unavailable" in window.origin_badge.text()
    assert "fallback: asked for the GPU: backend='gpu' is unavailable" in window.views["details"].launch_text
    # the notice goes with that trace
    window.set_trace(before, "back")
    assert not window.notice_bar.isVisible() and window.notice_text == ""


def test_the_notice_says_why_without_repeating_itself():
    from gpuviz.runner.bundled import short_reason

    broken = ("backend='gpu' is unavailable: the CUDA driver failed to start (CudaSupportError: Error at driver init: "
              "Call to cuInit results in CUDA_ERROR_NO_DEVICE (100))")
    assert short_reason(broken) == ("the CUDA driver failed to start (CudaSupportError: Error at driver init: Call to "
                                    "cuInit results in CUDA_ERROR_NO_DEVICE (100))")
    missing = ("backend='gpu' is unavailable: no usable NVIDIA GPU was found: Error at driver init: CUDA driver library "
               "cannot be found.. Use backend='cpu' (gpuviz's CPU executor) or open a GPU recording")
    assert short_reason(missing) == ("no usable NVIDIA GPU was found: Error at driver init: CUDA driver library "
                                     "cannot be found")


def test_a_gpu_kernel_fault_names_kernel_and_launch_and_keeps_the_trace(window, monkeypatch, tmp_path):
    """The worker turns a KernelFault into one error message naming the launch; the window shows it and
    keeps the previous trace (the fault itself needs a GPU: here the gpu backend is made to raise one)."""
    import gpuviz
    from gpuviz.capture.errors import KernelFault
    from gpuviz.runner import bundled
    from gpuviz.runner.protocol import EventLog, EventLogReader, error_text

    def faulting_capture(kernel, grid, block, *args, backend="cpu", **kw):
        raise KernelFault("kernels/vector_add.py:11: vector_add[(4, 1, 1), (32, 1, 1)] faulted on the GPU during the "
                          "record launch: CudaAPIError: [700] CUDA_ERROR_ILLEGAL_ADDRESS")

    monkeypatch.setattr(gpuviz, "capture", faulting_capture)
    request = {"kernel": "vector_add", "size": 100, "block": [32], "backend": "gpu"}
    key = "ab" * 32
    log = EventLog(tmp_path / "events.jsonl", bytes.fromhex(key))
    assert bundled.run({"bundled": request}, tmp_path, log) == bundled.EXIT_FAILED
    message = error_text(next(ev for ev in EventLogReader(tmp_path, key).poll() if ev["event"] == "error"))
    assert message.startswith("KernelFault: vector_add[grid 4, block 32] (size 100, 128 threads) on backend 'gpu'")
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in message
    # what the window does with that message
    before = window.session.trace
    window.launch_panel.runner.failed.emit(message, request)
    error_text = window.launch_panel.error.text()
    assert window.launch_panel.error.isVisible() and window.session.trace is before and window.isVisible()
    assert "Capture of vector_add (size 100, block 32, backend gpu) failed: KernelFault" in error_text
    assert "ILLEGAL_ADDRESS" in error_text and "previous trace stays on screen" in error_text


def test_details_show_plain_vs_instrumented_resources_of_a_gpu_recording(window):
    rec = _recording("mandelbrot")
    window.open_recording(rec)
    details = window.views["details"]
    text = details.launch_text
    assert "recording changes registers and occupancy (plain | instrumented):" in text
    assert f"registers / thread: {rec.details['registers_plain']} | {rec.details['registers_instrumented']}" in text
    assert (f"resident blocks / SM: {rec.details['blocks_per_sm_plain']} | "
            f"{rec.details['blocks_per_sm_instrumented']}") in text
    assert "occupancy: " in text and "schedule: SM ids and times are those of the instrumented run" in text
    assert "plain kernel" in details.launch_label.text() and "instrumented (recorded)" in details.launch_label.text()


def test_timings_view_opens_on_the_h200_set_with_gpu_labelled_series(window):
    from gpuviz.model.timings import Series, TimingSet

    tv = window.views["timings"]
    assert tv.set_box.currentText() == "GPU · NVIDIA H200 · 2026-11-29 (recorded)"
    assert tv.timing_set.device == "NVIDIA H200" and tv.plot_box.currentData() == "cpu_vs_gpu"
    assert "driver 580.159.04" in tv.set_box.itemData(0, Qt.ItemDataRole.ToolTipRole)
    # the window shows matmul: the label says these are a + b's timings, then where they were recorded
    assert "GPU timings recorded on NVIDIA H200 (driver 580.159.04), 2026-11-29" in tv.label.text()
    assert "numba vector_add · GPU: NVIDIA H200" in tv.legend_names
    assert "numpy a + b · CPU: Intel Xeon Processor (NVIDIA H200 host)" in tv.legend_names
    for name in tv.legend_names:  # every series says which processor, and which device
        assert " · GPU: NVIDIA H200" in name or " · CPU: " in name, name
    # the fusion lesson's set times another operation: not drawn on the a + b plot, shown alone when chosen
    assert not any("a * x + b * y" in n or "axpby" in n or "unfused" in n for n in tv.legend_names), tv.legend_names
    fusion = tv.set_box.findText("GPU · NVIDIA H200 · out = a * x + b * y · 2026-11-29 (recorded)")
    assert fusion > 0
    tv.set_box.setCurrentIndex(fusion)
    assert sorted(tv.legend_names) == sorted(f"{impl} · GPU: NVIDIA H200" for impl in (
        "numba axpby_fused", "numba unfused chain", "cupy a * x + b * y", "torch a * x + b * y")), tv.legend_names
    tv.set_box.setCurrentIndex(0)
    for kind in ("host_flow", "compile_vs_run", "block_sweep"):
        tv.plot_box.setCurrentIndex(tv.plot_box.findData(kind))
        assert tv.legend_names and all(n.endswith("GPU: NVIDIA H200") for n in tv.legend_names), (kind, tv.legend_names)
        legend = tv.plot.getPlotItem().legend
        assert [label.text for _sample, label in legend.items] == tv.legend_names  # each series listed once
    # live CPU timings (a small hand-made set here, as Measure CPU would add) sit next to the GPU lines
    tv.plot_box.setCurrentIndex(tv.plot_box.findData("cpu_vs_gpu"))
    cpu = TimingSet(label="cpu", processor="cpu", device="Test CPU", date="2026-11-30")
    cpu.add(Series("cpu_vs_gpu", "numpy", "cpu", {"size": [1000, 10000], "implementation": ["numpy a + b"] * 2,
                                                 "processor": ["cpu"] * 2, "seconds": [1e-6, 5e-6]}))
    tv.add_set(cpu, live=True)
    assert tv.set_box.currentText() == "CPU · Test CPU · 2026-11-30 (measured on this machine)"
    assert "no GPU was timed" in tv.label.text()
    assert tv.legend_names[0] == "numpy a + b · CPU: Test CPU (this machine)"
    assert "numba vector_add · GPU: NVIDIA H200" in tv.legend_names
    # a CPU set holds no GPU host flow: said, not drawn from the GPU set
    tv.plot_box.setCurrentIndex(tv.plot_box.findData("host_flow"))
    assert tv.legend_names == [] and "no host flow measurements" in tv.label.text()
