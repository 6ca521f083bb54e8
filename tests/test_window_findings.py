"""The window's findings of issue 12, one test each: what a person clicked, and what they should have seen."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt

from gpuviz.timing.recordings import list_recordings
from gpuviz.ui.window import MainWindow
from tests.acceptance_checks import settle
from tests.test_acceptance import kernel_trace


@pytest.fixture
def window(qapp):
    made = []

    def make(trace, size=(1600, 900)):
        w = MainWindow(trace)
        w.resize(*size)
        w.show()
        settle()
        made.append(w)
        return w

    yield make
    for w in made:
        from gpuviz.ui.presenter import leave_presenter

        leave_presenter(w)
        w.close()
        w.deleteLater()
    settle()


def _recording(stem):
    return next(r for r in list_recordings(kind="trace") if r.path.stem == stem)


def test_clicking_a_memory_cell_shows_it_in_details(window):
    """Finding 1: a cell click raised AttributeError ('_cached') and Details never showed the cell."""
    w = window(kernel_trace("matmul_tiled"))
    tr = w.session.trace
    a = next(i for i, info in enumerate(tr.launch.arrays) if info.space == "global")
    idx = int(tr.index[tr.array == a][0])
    w.session.selection.select_cell(a, idx)
    settle()
    d = w.views["details"]
    assert d.errors == []
    assert "cell: " + tr.launch.arrays[a].name in d.text and "reads" in d.text


def test_details_describes_the_trace_on_screen_after_opening_a_recording(window):
    """Finding 2: after opening the transpose_shared recording, a block click still showed matmul's frames."""
    w = window(kernel_trace("matmul_tiled"))
    w.session.selection.select_block(0)
    settle()
    before = w.views["details"].text
    assert w.open_recording(_recording("transpose_shared"))
    settle()
    d = w.views["details"]
    assert "frames" not in d.text  # nothing of matmul's block stays on screen
    w.session.selection.select_block(0)
    settle()
    F = w.session.frames
    assert w.session.trace.launch.kernel_name == "transpose_shared"
    assert f"frames {int(F.block_first[0]):,} to {int(F.block_last[0]):,}" in d.text and d.text != before
    sm = int(w.session.trace.sm[w.session.trace.block == 0][0])
    assert f"SM: {sm}" in d.text
    assert d.errors == []


def test_launch_panel_shows_the_size_and_block_of_the_trace_on_screen(window):
    """Finding 3: the panel said Size 24 (the kernel's test size) while a 32 x 32 matmul was on screen."""
    from gpuviz.app import DEFAULT_SIZE, default_trace

    w = window(default_trace())
    w.launch_panel.load_kernels()
    p = w.launch_panel
    assert p.kernel.currentData() == "matmul_tiled"
    assert p.size.value() == DEFAULT_SIZE and p.block.text() == "16x16"
    assert p.request()["size"] == DEFAULT_SIZE  # Run captures what is on screen again
    assert w.open_recording(_recording("transpose_shared"))
    settle()
    assert p.kernel.currentData() == "transpose_shared"
    assert p.selected_recording() is not None and p.selected_recording().path.stem == "transpose_shared"
    assert p.run_button.text() == "Open recording"
