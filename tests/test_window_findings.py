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


def test_an_uninitialised_read_is_in_the_banner_details_and_source_margin(window):
    """Finding 6: `gpuviz info` named an uninitialised shared read; the window showed none of it."""
    import gpuviz
    from tests import capture_kernels as K

    out = np.zeros(128, dtype=np.float32)
    trace = gpuviz.capture(K.shared_read_before_write, 2, 64, out)
    import inspect

    src, first = inspect.getsourcelines(K.shared_read_before_write.py_func)
    line = first + next(i for i, t in enumerate(src) if "= s[t]" in t)
    assert any(f":{line}:" in w for w in trace.launch.warnings)
    w = window(trace)
    assert "before any thread of its block wrote it" in w.warning_text and w.warning_bar.isVisible()
    assert "warning: " in w.views["details"].launch_text
    assert "before any thread" in w.views["details"].launch_text
    src = w.views["source"]
    assert line in src.warning_lines
    text = src.editor.document().findBlockByNumber(line - src._first_line).text()
    assert text.startswith(f"{line}⚠")


def test_races_are_in_the_banner_and_margin_and_go_with_their_trace(window):
    w = window(kernel_trace("race_missing_sync"))
    assert "data race" in w.warning_text and "tile" in w.warning_text
    assert w.views["source"].warning_lines == {25, 28}  # the store and the read that race
    assert "data race" in w.views["details"].launch_text
    w.set_trace(kernel_trace("race_fixed"))
    settle()
    assert w.warning_text == "" and not w.warning_bar.isVisible()
    assert w.views["source"].warning_lines == set() and "warning" not in w.views["details"].launch_text


def test_dark_theme_lights_the_current_line_and_details_readably(window):
    """Finding 9: after Ctrl+T the current source line stayed pale yellow under white text."""
    from PySide6.QtGui import QColor

    from tests.acceptance_checks import contrast_problems, source_problems

    w = window(kernel_trace("matmul_tiled"), size=(1920, 1080))
    w.session.set_frame(40)
    settle()
    w.actions.trigger("view.theme")
    settle()
    src = w.views["source"]
    t = w.session.theme
    assert t.dark
    sels = src.editor.extraSelections()
    assert sels and sels[0].format.background().color() == QColor(t.highlight_line)
    assert source_problems(w) == []
    w.docks["details"].raise_()
    w.session.selection.select_block(0)
    settle()
    assert contrast_problems(w) == []
    # the check sees what it is for: white text on the light theme's pale yellow fails it
    sels[0].format.setBackground(QColor("#FBE7A1"))
    src.editor.setExtraSelections(sels)
    settle()
    assert any("contrast" in p for p in source_problems(w))


def test_blank_covers_the_screen_in_black(window):
    """Finding 8: B showed nothing (the cover drew no background) and the next → only took it away."""
    from gpuviz.ui.presenter import enter_presenter

    from tests.acceptance_checks import image_array

    w = window(kernel_trace("matmul_tiled"))
    p = enter_presenter(w, theme="light", size=(1280, 720), fullscreen=False)
    settle()
    p.keys.trigger("blank")
    settle()
    px = image_array(w.grab().toImage())
    assert (px.reshape(-1, 3) == 0).all(axis=1).mean() > 0.99  # all black
    f = w.session.frame
    p.keys.trigger("next")  # the clicker's first press brings the picture back, the second steps
    settle()
    assert not p.blanked and w.session.frame == f
    p.keys.trigger("next")
    assert w.session.frame == f + 1


def test_leaving_presenter_mode_brings_the_caption_back_at_once(window):
    """Finding 13: the top bar's caption stayed blank after F5 until the next step."""
    w = window(kernel_trace("matmul_tiled"))
    w.session.set_frame(12)
    settle()
    before = w.caption_text.text()
    assert before
    w.actions.trigger("view.present")
    settle()
    assert not w.caption_text.isVisible()  # the caption bar says it; the top bar's room goes to the views
    from gpuviz.ui.presenter import presenter_of

    presenter_of(w).keys.trigger("stop_presenting")  # F5 again, through the presenter's own key
    settle()
    assert w.caption_text.text() == before and w.caption_text.isVisible()
    assert not w.actions.qaction("view.present").isChecked()


def test_per_line_table_keeps_the_line_in_view_sorts_worst_first_and_w_jumps_there(window):
    """Finding 15 and "finding the worst line": at the default width only line and source showed, and
    scrolling right to the metrics lost the line numbers."""
    from PySide6.QtTest import QTest

    from gpuviz.model import analysis
    from gpuviz.ui.views.occupancy import _COLUMNS

    w = window(kernel_trace("transpose_shared"), size=(1280, 720))
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


def test_views_and_captions_hold_the_answer_back_until_it_is_revealed(window):
    """Finding 11: at bank_conflicts' "how many ways?" the shared view's header and the caption said 32-way."""
    w = window(kernel_trace("vector_add"), size=(1920, 1080))
    ctl = w.start_lesson("bank_conflicts")
    settle()
    while not (ctl.player.slide().question and "ways" in ctl.player.slide().question):
        assert ctl.next()
        settle(1)
    slide = ctl.player.slide()
    assert not slide.answer and w.session.predicting == slide.question
    shared = w.views["shared"]
    shared.refresh()
    assert "32-way" not in shared.header.text() and "Predict first" in shared.header.text()
    assert w.caption_text.text() == f"Predict: {slide.question}"
    assert "32-way" not in ctl.panel.plain
    ctl.next()  # the reveal
    settle()
    shared.refresh()
    assert ctl.player.slide().answer and w.session.predicting == ""
    assert "32-way bank conflict" in shared.header.text() and "32-way" in w.caption_text.text()
    assert "32-way" in ctl.panel.plain
    w.stop_lesson()


def test_a_gpu_recording_says_where_its_sms_and_its_source_are(window):
    """Finding 21: the grid's caption promised SMs that were not drawn; the source showed the recording
    machine's path. Finding 23: "1 blocks of 128 threads"."""
    w = window(_recording("vector_add").load()[0])
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


def test_a_bad_block_size_is_said_where_the_run_button_is(window):
    """Finding 20: Run, Open recording and capture errors sat below the fold; a bad block size seemed to do
    nothing."""
    from tests.acceptance_checks import shown

    w = window(kernel_trace("matmul_tiled"), size=(1280, 720))
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


def test_escape_in_presenter_mode_closes_the_shortcuts_first(window):
    """Seen driving the app: F1 then Esc in presenter mode left presenter mode with the overlay still up."""
    from gpuviz.ui.presenter import enter_presenter, presenter_of

    w = window(kernel_trace("matmul_tiled"))
    p = enter_presenter(w, theme="dark", size=(1280, 720), fullscreen=False)
    w.actions.trigger("help.shortcuts")
    settle()
    assert w.overlay.isVisible()
    p.keys.trigger("leave")  # Esc
    settle()
    assert not w.overlay.isVisible() and presenter_of(w) is p
    p.keys.trigger("leave")
    settle()
    assert presenter_of(w) is None


def test_memory_axes_say_what_they_count(window):
    """Finding 18 (part): the shared y-axis counts bytes and the global one elements, neither said so."""
    w = window(kernel_trace("reduce_sum"))
    for vid in ("shared", "memory"):
        w.docks[vid].raise_()
        settle()
    shared_ticks = [t for _, t in w.views["shared"]._panels[0].plot.getAxis("left")._tickLevels[0]]
    assert shared_ticks and all(t.endswith(" B") for t in shared_ticks)
    strip = next(p for p in w.views["memory"]._panels if len(p.info.shape) == 1)
    global_ticks = [t for _, t in strip.plot.getAxis("left")._tickLevels[0]]
    assert global_ticks and all(t.startswith("[") and t.endswith("]") for t in global_ticks)


def test_timings_say_they_are_not_of_the_kernel_on_screen(window):
    """Finding 22 (part): the Timings dock showed c = a + b while a matmul was on screen, as if it were its."""
    w = window(kernel_trace("matmul_tiled"))
    view = w.views["timings"]
    w.docks["timings"].raise_()
    settle()
    view.redraw()
    assert view.timing_set is not None  # the shipped H200 timings of c = a + b
    assert "not of matmul_tiled on screen" in view.label.text()
    w.set_trace(kernel_trace("vector_add"))
    settle()
    assert "not of" not in view.label.text()  # vector add is c = a + b: these are its timings


def test_ctrl_minus_and_ctrl_plus_change_the_text_in_presenter_mode(window):
    """Finding 7 (part): after F5 at 1280x720, Ctrl+- did nothing (the scale stopped at the automatic one)."""
    from PySide6.QtTest import QTest

    from gpuviz.ui.presenter import MIN_SMALLER_PX, enter_presenter, smallest_text

    w = window(kernel_trace("matmul_tiled", 32), size=(1280, 720))
    p = enter_presenter(w, theme="dark", size=(1280, 720), fullscreen=False)
    w.activateWindow()
    settle()
    auto = p.scale
    caption_px = p.caption_bar.caption.font().pixelSize()
    QTest.keyClick(w, Qt.Key.Key_Minus, Qt.KeyboardModifier.ControlModifier)  # Ctrl+-, as a person presses it
    settle()
    assert p.scale < auto and p.caption_bar.caption.font().pixelSize() < caption_px
    assert smallest_text(w)[0] >= MIN_SMALLER_PX
    for _ in range(10):  # it stops at a floor, still readable
        QTest.keyClick(w, Qt.Key.Key_Minus, Qt.KeyboardModifier.ControlModifier)
    settle()
    assert smallest_text(w)[0] >= MIN_SMALLER_PX - 0.5
    floor = p.scale
    QTest.keyClick(w, Qt.Key.Key_Plus, Qt.KeyboardModifier.ControlModifier)  # Ctrl++
    QTest.keyClick(w, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier)  # Ctrl+= (no Shift needed)
    settle()
    assert p.scale > floor * 1.2
    QTest.keyClick(w, Qt.Key.Key_0, Qt.KeyboardModifier.ControlModifier)  # Ctrl+0: the automatic scale again
    settle()
    assert smallest_text(w)[0] >= 18 - 0.01


def test_shared_value_labels_stay_in_their_cells_under_the_conflict_outline(window):
    """Finding 18 (part): the values written in lit shared-memory cells spilled over their neighbours and
    hid the conflict column."""
    from PySide6.QtGui import QFontMetrics

    from gpuviz.model.trace import EventKind as K

    trace = kernel_trace("transpose_shared", 64)
    for size in ((1280, 720), (1600, 900), (1920, 1080), (2560, 1440)):
        w = window(trace, size=size)
        w.docks["shared"].raise_()
        settle()
        view, frames = w.views["shared"], w.session.frames
        f = next(f for f in range(frames.n_frames) if frames.kind[f] == K.SHARED_STORE and frames.n_lanes[f] == 32)
        w.session.set_frame(f)
        settle()
        panel = view.panel_of("tile")
        cell_px = panel.plot.vb.width() / 32
        for item in (it for it in panel.labels if it.isVisible()):
            text_px = QFontMetrics(item.textItem.font()).horizontalAdvance(item.toPlainText())
            assert text_px <= cell_px - 2, f"{size}: {item.toPlainText()!r} is {text_px} px in a {cell_px:.0f} px cell"
            assert item.zValue() < panel.conflict.zValue()
        w.close()


def test_memory_views_say_what_their_axes_and_colours_count(window):
    """Finding 18 (part): the axes were not labelled and the heat maps had no colour bar."""
    import pyqtgraph as pg

    w = window(kernel_trace("matmul_tiled", 32))
    for vid in ("memory", "shared"):
        w.docks[vid].raise_()
        settle()
    glob, shared = w.views["memory"], w.views["shared"]
    first = glob._panels[0].plot
    assert first.getAxis("left").labelText == "row" and first.getAxis("bottom").labelText == "column"
    sp = shared._panels[0].plot
    assert sp.getAxis("left").labelText == "bytes" and sp.getAxis("top").labelText == "bank"
    for view, label in ((glob, "accesses so far"), (shared, "accesses in this block")):
        bar = view.colour_bar
        assert isinstance(bar, pg.ColorBarItem) and bar.scene() is view.canvas.scene()
        assert bar.getAxis("left").labelText == label
        vmax = max(p.vmax for p in view._panels)
        assert bar.levels() == (0, vmax) and vmax > 1
        # the bar's colours are the cells': its top is the colour of a cell touched vmax times
        top = bar.colorMap().map(1.0, mode="byte")[:3]
        assert tuple(int(c) for c in top) == tuple(int(c) for c in view._panels[0].palette.view(np.uint8).reshape(-1, 4)[vmax][:3])


def test_the_source_column_gets_the_room_at_1280x720(window):
    """Finding 10: the source was cut to 12-15 characters (later wrapped at 22) at 1280x720 while the memory
    column beside it stayed half empty; in presenter mode its text must stay at 18 px or more."""
    from PySide6.QtGui import QFontMetrics

    from gpuviz.ui.presenter import MIN_TEXT_PX, enter_presenter

    w = window(kernel_trace("matmul_tiled", 32), size=(1280, 720))
    w.arrange_default()
    settle()
    src = w.views["source"]
    fm = QFontMetrics(src.editor.font())
    code_cols = src.editor.viewport().width() / fm.horizontalAdvance("0") - src._gutter_len
    assert code_cols >= 32, f"{code_cols:.0f} columns of code"
    assert src._gutter_len <= 10  # line, mark, a count of at most 5 characters, "│ "
    enter_presenter(w, theme="dark", size=(1280, 720), fullscreen=False)
    settle()
    px = src.editor.font().pixelSize()
    assert px >= MIN_TEXT_PX, f"presenter source text {px} px"


def test_plot_ticks_and_axis_titles_grow_with_ctrl_plus(window):
    """Finding 22 (part): Ctrl++ enlarged the labels but not the plots' ticks and axis titles."""
    import pyqtgraph as pg

    from gpuviz.ui.presenter import _font_px

    w = window(kernel_trace("matmul_tiled", 32))

    def sizes():
        out = {}
        for vid, dock in w.docks.items():
            dock.raise_()
            settle(2)
            for gv in dock.findChildren(pg.GraphicsView):
                for it in gv.scene().items():
                    if isinstance(it, pg.AxisItem) and it.isVisible() and it.style.get("showValues", True):
                        f = it.style.get("tickFont")
                        out[(vid, id(it), "ticks")] = _font_px(f) if f else 0
                        if it.labelText and it.label.isVisible():
                            out[(vid, id(it), "title")] = _font_px(it.label.font())
        return out

    before = sizes()
    for _ in range(3):
        w.actions.trigger("view.bigger")
    settle()
    after = sizes()
    common = before.keys() & after.keys()
    assert len(common) > 20
    small = [k for k in common if not after[k] > before[k]]
    assert not small, f"not enlarged: {small}"


def test_memory_views_are_tabs_that_follow_the_frame_in_a_short_window(window):
    """Findings 7 and 22: at 1280x720 global and shared memory stacked each got a strip (C cut off); in a
    short window they are tabs, and the one the frame is about comes to the front."""
    from gpuviz.model.trace import EventKind as K

    w = window(kernel_trace("matmul_tiled", 32), size=(1280, 720))
    w.arrange_default()
    settle()
    assert w.docks["shared"] in w.tabifiedDockWidgets(w.docks["memory"])
    frames = w.session.frames
    for kind, vid in ((K.GLOBAL_LOAD, "memory"), (K.SHARED_LOAD, "shared"), (K.BARRIER, "barriers")):
        f = int(np.flatnonzero(frames.kind == kind)[0])
        w.session.set_frame(f)
        settle()
        assert w.views[vid].on_screen(), f"frame {f} ({kind.name}): {vid} is not in front"
    w.docks["timings"].raise_()  # a view chosen by hand stays in front
    settle()
    w.session.set_frame(int(np.flatnonzero(frames.kind == K.GLOBAL_LOAD)[0]))
    settle()
    assert w.views["timings"].on_screen()
    big = window(kernel_trace("matmul_tiled", 32), size=(1920, 1080))
    big.arrange_default()
    settle()
    assert big.docks["shared"] not in big.tabifiedDockWidgets(big.docks["memory"])  # room to see both at once


def test_source_code_keeps_its_colour_when_the_source_is_filled_again(window):
    """Seen in the dark screenshot: after a second fill (another trace, the margin's counts dropped), every line
    took the margin's grey, the format the lit line's cursor had left behind."""
    from PySide6.QtGui import QTextCursor

    w = window(kernel_trace("matmul_tiled", 32), size=(1280, 720))
    src = w.views["source"]
    w.session.set_frame(300)
    settle()
    w.set_trace(kernel_trace("transpose_shared"))
    w.session.set_frame(10)
    settle()
    muted = w.session.theme.muted.lower()
    doc = src.editor.document()
    grey = []
    for i in range(doc.blockCount()):
        block = doc.findBlockByNumber(i)
        for k in range(src._gutter_len + 1, block.length() - 1):
            c = QTextCursor(block)
            c.setPosition(block.position() + k)
            if c.charFormat().foreground().color().name().lower() == muted:
                grey.append(block.text())
                break
    assert not grey, f"{len(grey)} lines of code in the margin's grey, e.g. {grey[:2]}"


def test_a_legend_chip_stays_on_the_line_of_its_label_at_any_width(window):
    """At 1280x720 the grid's legend put its "running now" chip at the end of one line and the words on the next
    (seen under Xvfb): every chip is joined to its label, so no width breaks between them."""
    from tests.acceptance_checks import chip_breaks

    w = window(kernel_trace("matmul_tiled"), size=(1280, 720))
    for name in ("grid", "block", "memory", "shared", "barriers"):
        legend = w.views[name].legend
        assert legend.text()
        breaks = {width: rows for width in range(100, 600, 3) if (rows := chip_breaks(legend, width))}
        assert not breaks, f"{name}: {breaks}"


def test_the_top_bar_shows_every_frames_whole_text_at_any_width(window):
    """At 1176x662 (1280x720 less a window manager's frame) a barrier's opening, described in three lines, was cut
    to the two the top bar kept for every frame; its narration too."""
    from tests.acceptance_checks import label_problems

    w = window(kernel_trace("matmul_tiled", 32))
    s = w.session
    n = s.frames.n_frames
    wordiest = max(range(n), key=lambda f: len(s.frames.describe(f)))
    narrated = max(range(n), key=lambda f: len(w._caption(f)))
    problems = []
    for width in range(1000, 1700, 88):
        w.resize(width, 700)
        settle()
        for f in (0, wordiest, narrated, 0):
            s.set_frame(f)
            settle()
            problems += [f"{width} px, frame {f}: {p}" for p in label_problems(w.top_bar)]
    assert not problems, "\n".join(problems)
    # a short text after a long one keeps the room (the window is not laid out again for every frame's text)
    heights = w.frame_text.height()
    s.set_frame(wordiest)
    settle()
    assert w.frame_text.height() == heights
