"""The window's panels (Details, the launch panel, the per-line table, Timings), its warning banner and its views'
captions say what is true of the trace on screen, after every way of changing it (issue 12's findings: what a
person clicked, and what they should have seen)."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
from PySide6.QtCore import QPoint, Qt

from gpuviz.timing.recordings import list_recordings
from tests.acceptance_checks import settle
from tests.test_acceptance import kernel_trace


def _recording(stem):
    return next(r for r in list_recordings(kind="trace") if r.path.stem == stem)


def test_clicking_a_memory_cell_shows_it_in_details(make_window):
    """Finding 1: a cell click raised AttributeError ('_cached') and Details never showed the cell."""
    w = make_window(kernel_trace("matmul_tiled"))
    tr = w.session.trace
    a = next(i for i, info in enumerate(tr.launch.arrays) if info.space == "global")
    idx = int(tr.index[tr.array == a][0])
    w.session.selection.select_cell(a, idx)
    settle()
    d = w.views["details"]
    assert d.errors == []
    assert "cell: " + tr.launch.arrays[a].name in d.text and "reads" in d.text


def test_details_describes_the_trace_on_screen_after_opening_a_recording(make_window):
    """Finding 2: after opening the transpose_shared recording, a block click still showed matmul's frames."""
    w = make_window(kernel_trace("matmul_tiled"))
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
    assert f"frames {int(F.block_first[0]) + 1:,} to {int(F.block_last[0]) + 1:,}" in d.text and d.text != before  # from 1
    sm = int(w.session.trace.sm[w.session.trace.block == 0][0])
    assert f"SM: {sm}" in d.text
    assert d.errors == []


def test_launch_panel_shows_the_size_and_block_of_the_trace_on_screen(make_window):
    """Finding 3: the panel said Size 24 (the kernel's test size) while a 32 x 32 matmul was on screen."""
    from gpuviz.app import DEFAULT_SIZE, default_trace

    w = make_window(default_trace())
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


def test_a_bad_block_size_is_said_where_the_run_button_is(make_window):
    """Finding 20: Run, Open recording and capture errors sat below the fold; a bad block size seemed to do
    nothing."""
    from tests.acceptance_checks import shown

    w = make_window(kernel_trace("matmul_tiled"), size=(1280, 720))
    w.launch_panel.load_kernels()
    p = w.launch_panel
    w.docks["launch"].raise_()
    settle()
    assert shown(p.run_button), "Run is below the fold"
    p.block.setText("16 by 16")
    from PySide6.QtTest import QTest

    QTest.mouseClick(p.run_button, Qt.MouseButton.LeftButton)
    settle()
    assert shown(p.error) and "block size" in p.error.text()
    assert not p.runner.busy
    ev = p.error.mapTo(w, QPoint(0, 0))
    assert 0 <= ev.y() < w.height() // 2 + 200


def test_an_uninitialised_read_is_in_the_banner_details_and_source_margin(make_window):
    """Finding 6: `gpuviz info` named an uninitialised shared read; the window showed none of it."""
    import gpuviz
    from tests import capture_kernels as K

    out = np.zeros(128, dtype=np.float32)
    trace = gpuviz.capture(K.shared_read_before_write, 2, 64, out)
    import inspect

    src, first = inspect.getsourcelines(K.shared_read_before_write.py_func)
    line = first + next(i for i, t in enumerate(src) if "= s[t]" in t)
    assert any(f":{line}:" in w for w in trace.launch.warnings)
    w = make_window(trace)
    assert "before any thread of its block wrote it" in w.warning_text and w.warning_bar.isVisible()
    assert "warning: " in w.views["details"].launch_text
    assert "before any thread" in w.views["details"].launch_text
    src = w.views["source"]
    assert line in src.warning_lines
    text = src.editor.document().findBlockByNumber(line - src._first_line).text()
    assert text.startswith(f"{line}⚠")


def test_races_are_in_the_banner_and_margin_and_go_with_their_trace(make_window):
    w = make_window(kernel_trace("race_missing_sync"))
    assert "data race" in w.warning_text and "tile" in w.warning_text
    assert w.views["source"].warning_lines == {25, 28}  # the store and the read that race
    assert "data race" in w.views["details"].launch_text
    w.set_trace(kernel_trace("race_fixed"))
    settle()
    assert w.warning_text == "" and not w.warning_bar.isVisible()
    assert w.views["source"].warning_lines == set() and "warning" not in w.views["details"].launch_text


def test_a_gpu_recording_says_where_its_sms_and_its_source_are(make_window):
    """Finding 21: the grid's caption promised SMs that were not drawn; the source showed the recording
    machine's path. Finding 23: "1 blocks of 128 threads"."""
    w = make_window(_recording("vector_add").load()[0])
    grid, src = w.views["grid"], w.views["source"]
    labels_shown = bool(grid._labels) and grid._labels[0].isVisible()
    assert ("the SM each block ran on is on it" in grid.caption.text()) == labels_shown
    assert labels_shown or "Details names the SM" in grid.caption.text()
    path = w.session.trace.launch.source_file
    assert path not in src.caption.text() and "as recorded" in src.caption.text()
    assert path.rsplit("/", 1)[-1] in src.caption.text()
    w.set_trace(kernel_trace("vector_add", 100))
    settle()
    assert "1 block of 256 threads" in grid.caption.text() and "SM" not in grid.caption.text()


def test_timings_say_they_are_not_of_the_kernel_on_screen(make_window):
    """Finding 22 (part): the Timings dock showed c = a + b while a matmul was on screen, as if it were its."""
    w = make_window(kernel_trace("matmul_tiled"))
    view = w.views["timings"]
    w.docks["timings"].raise_()
    settle()
    view.redraw()
    assert view.timing_set is not None  # the shipped H200 timings of c = a + b
    assert "not of matmul_tiled on screen" in view.label.text()
    w.set_trace(kernel_trace("vector_add"))
    settle()
    assert "not of" not in view.label.text()  # vector add is c = a + b: these are its timings


def test_per_line_table_keeps_the_line_in_view_sorts_worst_first_and_w_jumps_there(make_window):
    """Finding 15 and "finding the worst line": at the default width only line and source showed, and
    scrolling right to the metrics lost the line numbers."""
    from PySide6.QtTest import QTest

    from gpuviz.model import analysis
    from gpuviz.ui.views.occupancy import _COLUMNS

    w = make_window(kernel_trace("transpose_shared"), size=(1280, 720))
    w.docks["lines"].show()
    w.docks["lines"].raise_()
    settle()
    view = w.views["lines"]
    t = view.table
    assert _COLUMNS[0] == "bank conflicts" and _COLUMNS[-1] == "source"  # metrics first, source last
    assert t.verticalHeader().isVisible()
    lines = [int(t.verticalHeaderItem(r).text()) for r in range(t.rowCount())]
    assert lines == sorted(lines) and lines == [r["line"] for r in view.rows]
    t.horizontalScrollBar().setValue(t.horizontalScrollBar().maximum())
    settle()
    assert t.verticalHeader().isVisible() and t.verticalHeader().width() > 0  # the line numbers stay
    # a header click sorts worst first
    per_line = {r["line"]: r["bank_conflicts"] for r in analysis.shared_banks(w.session.trace).per_line}
    worst = max(per_line, key=per_line.get)
    assert per_line[worst] > 0
    header = t.horizontalHeader()
    QTest.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(header.sectionViewportPosition(0) + 5, 5))
    settle()
    assert view.sort_column == "bank conflicts" and view.line_of_row(0) == worst
    w.session.set_frame(0)
    f = w.jump_to_worst_line()
    assert f is not None and int(w.session.frames.line[w.session.frame]) == worst
    assert f == int(np.flatnonzero(w.session.frames.line == worst)[0])  # its first frame
    w.session.set_frame(0)
    w.actions.trigger("playback.worst_line")  # the W key's action
    assert int(w.session.frames.line[w.session.frame]) == worst
    assert view.table.selectionModel().isRowSelected(0)  # the table follows: the worst row, on top
