"""The global and shared memory views in the window: axes and colour bars that say what they count, value labels
inside their cells, tabs that follow the frame in a short window (issue 12's findings)."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np

from tests.acceptance_checks import settle
from tests.test_acceptance import kernel_trace


def test_memory_axes_say_what_they_count(make_window):
    """Finding 18 (part): the shared y-axis counts bytes and the global one elements, neither said so."""
    w = make_window(kernel_trace("reduce_sum"))
    for vid in ("shared", "memory"):
        w.docks[vid].raise_()
        settle()
    shared_ticks = [t for _, t in w.views["shared"]._panels[0].plot.getAxis("left")._tickLevels[0]]
    assert shared_ticks and all(t.endswith(" B") for t in shared_ticks)
    strip = next(p for p in w.views["memory"]._panels if len(p.info.shape) == 1)
    global_ticks = [t for _, t in strip.plot.getAxis("left")._tickLevels[0]]
    assert global_ticks and all(t.startswith("[") and t.endswith("]") for t in global_ticks)


def test_memory_views_say_what_their_axes_and_colours_count(make_window):
    """Finding 18 (part): the axes were not labelled and the heat maps had no colour bar."""
    import pyqtgraph as pg

    w = make_window(kernel_trace("matmul_tiled", 32))
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


def test_shared_value_labels_stay_in_their_cells_under_the_conflict_outline(make_window):
    """Finding 18 (part): the values written in lit shared-memory cells spilled over their neighbours and
    hid the conflict column."""
    from PySide6.QtGui import QFontMetrics

    from gpuviz.model.trace import EventKind as K

    trace = kernel_trace("transpose_shared", 64)
    for size in ((1280, 720), (1600, 900), (1920, 1080), (2560, 1440)):
        w = make_window(trace, size=size)
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


def test_memory_views_are_tabs_that_follow_the_frame_in_a_short_window(make_window):
    """Findings 7 and 22: at 1280x720 global and shared memory stacked each got a strip (C cut off); in a
    short window they are tabs, and the one the frame is about comes to the front."""
    from gpuviz.model.trace import EventKind as K

    w = make_window(kernel_trace("matmul_tiled", 32), size=(1280, 720))
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
    big = make_window(kernel_trace("matmul_tiled", 32), size=(1920, 1080))
    big.arrange_default()
    settle()
    assert big.docks["shared"] not in big.tabifiedDockWidgets(big.docks["memory"])  # room to see both at once
