"""Opening trace files off the GUI thread: the window goes on meanwhile, Cancel and a second open leave the
right trace on screen, files without an index (or of an older schema) open, hidden views compute nothing."""

import os
import threading

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import pytest
from PySide6.QtWidgets import QApplication

from gpuviz.model import index as index_mod
from gpuviz.model import indexcache
from gpuviz.model.prepared import has_index
from gpuviz.model.tracefile import save_traces
from gpuviz.ui.window import MainWindow
from tests.test_index import SCHEMA1_FILE
from tests.ui_traces import matmul_tiled_trace, reduction_trace, vector_add_trace


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture
def gate(monkeypatch):
    """Holds every open at its index step until released; records which thread it ran on."""
    release = threading.Event()
    seen = {}
    real = indexcache.ensure_index

    def held(prepared, progress=None, cancelled=None):
        seen["thread"] = threading.current_thread()
        release.wait(20)
        return real(prepared, progress=progress, cancelled=cancelled)

    monkeypatch.setattr(indexcache, "ensure_index", held)
    return release, seen


def saved(tmp_path, trace, name, index=True):
    path = tmp_path / name
    save_traces(path, [trace], index=index)
    return str(path)


def test_opening_runs_off_the_gui_thread_and_the_window_goes_on(window, qtbot, tmp_path, gate):
    release, seen = gate
    path = saved(tmp_path, reduction_trace(), "reduce.gpuviz")
    before = window.session.trace
    window.open_in_background(path)
    qtbot.waitUntil(lambda: "thread" in seen)
    assert seen["thread"] is not threading.main_thread()
    # a second action while the open is still running: the window handles it now
    assert window.opening and window.open_bar.isVisible()
    window.actions.trigger("playback.step_forward")
    assert window.session.frame == 1 and window.session.trace is before
    release.set()
    qtbot.waitUntil(lambda: not window.opening, timeout=20000)
    assert window.session.trace is not before and window.session.trace.launch.kernel_name == "block_sum"
    assert window.session.frame == 0 and not window.open_bar.isVisible()


def test_the_gui_thread_gets_the_gil_back_sooner_while_a_file_is_read(window, qtbot, tmp_path, gate):
    import sys

    from gpuviz.ui import open_job

    before = sys.getswitchinterval()
    assert before > open_job.SWITCH_INTERVAL
    release, seen = gate
    window.open_in_background(saved(tmp_path, reduction_trace(), "reduce.gpuviz"))
    qtbot.waitUntil(lambda: "thread" in seen)
    assert sys.getswitchinterval() == open_job.SWITCH_INTERVAL
    window.open_in_background(saved(tmp_path, matmul_tiled_trace(32, 16), "matmul.gpuviz"))  # cancels the first
    assert len(window._open_jobs) == 2 and sys.getswitchinterval() == open_job.SWITCH_INTERVAL
    release.set()
    qtbot.waitUntil(lambda: not window.opening and window._open_jobs == [], timeout=20000)
    assert window.session.trace.launch.grid == (2, 2, 1)
    assert sys.getswitchinterval() == before  # back once no job runs


def test_a_cancelled_open_leaves_the_previous_trace_on_screen(window, qtbot, tmp_path, gate):
    release, _ = gate
    before = window.session.trace
    job = window.open_in_background(saved(tmp_path, reduction_trace(), "reduce.gpuviz"))
    window.open_cancel.click()
    assert not window.opening and not window.open_bar.isVisible()
    release.set()
    qtbot.waitUntil(lambda: job not in window._open_jobs, timeout=20000)
    QApplication.processEvents()
    assert window.session.trace is before
    assert "cancelled" in window.statusBar().currentMessage()


def test_a_second_open_cancels_the_first(window, qtbot, tmp_path, gate):
    release, _ = gate
    first = window.open_in_background(saved(tmp_path, reduction_trace(), "reduce.gpuviz"))
    window.open_in_background(saved(tmp_path, matmul_tiled_trace(32, 16), "mm32.gpuviz"))
    release.set()
    qtbot.waitUntil(lambda: not window.opening and first not in window._open_jobs, timeout=20000)
    QApplication.processEvents()
    assert window.session.trace.launch.grid == (2, 2, 1)  # the second file's trace, not the first's
    assert first.cancelled


def test_a_file_without_the_index_opens_and_its_index_is_cached(window, qtbot, tmp_path):
    path = saved(tmp_path, reduction_trace(), "bare.gpuviz", index=False)
    job = window.open_in_background(path)
    qtbot.waitUntil(lambda: not window.opening, timeout=20000)
    assert job.index_source == "built" and window.session.trace.launch.kernel_name == "block_sum"
    assert list(index_mod.cache_dir().glob("*.gpuviz-index"))
    window.set_trace(matmul_tiled_trace(16, 8))  # another trace on screen: the file is read again
    job = window.open_in_background(path)
    qtbot.waitUntil(lambda: not window.opening, timeout=20000)
    assert job.index_source == "cache"
    assert window.session.frames.n_frames > 0


def test_an_older_trace_file_opens_in_the_window(window, qtbot):
    window.open_in_background(str(SCHEMA1_FILE))
    qtbot.waitUntil(lambda: not window.opening, timeout=20000)
    assert window.session.trace.launch.kernel_name == "reduce_sum" and len(window.session.trace) == 32_760


def test_a_damaged_file_is_reported_and_the_trace_stays(window, qtbot, tmp_path):
    bad = tmp_path / "bad.gpuviz"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    before = window.session.trace
    window.open_in_background(str(bad))
    qtbot.waitUntil(lambda: not window.opening, timeout=20000)
    assert window.session.trace is before
    assert "bad.gpuviz" in window.launch_panel.error.text()


def test_hidden_views_compute_nothing_for_a_new_trace_until_shown(window, qtbot):
    hidden = [v for v in window.views.values() if not v.on_screen()]
    assert hidden, "the default layout keeps some views behind tabs"
    view = hidden[0]
    calls = []
    real = view.on_trace_changed
    view.on_trace_changed = lambda: (calls.append(1), real())[1]
    window.set_trace(reduction_trace())
    assert calls == []
    window.docks[view.view_id].raise_()
    qtbot.waitUntil(lambda: calls == [1])


def test_a_capture_reports_its_progress_in_percent(window, qtbot):
    panel = window.launch_panel
    seen = []
    panel.runner.percent.connect(seen.append)
    with qtbot.waitSignal(panel.runner.succeeded, timeout=120_000):
        panel.run({"kernel": "reduce_sum", "size": 2048, "block": None, "backend": "cpu"})
    assert seen and seen == sorted(seen) and seen[-1] == 100
    assert window.session.trace.launch.kernel_name == "reduce_sum"
    assert has_index(window.session.trace)  # the worker indexed it: the window sorted nothing


def test_opening_the_file_on_screen_again_reads_nothing_unless_it_changed(window, qtbot, tmp_path):
    path = saved(tmp_path, reduction_trace(), "reduce.gpuviz")
    window.open_in_background(path)
    qtbot.waitUntil(lambda: not window.opening, timeout=20000)
    first = window.session.trace
    window.actions.trigger("playback.step_forward")
    window.session.selection.select_block(0)
    rebuilt = []
    view = next(v for v in window.views.values() if v.on_screen())
    real = view.on_trace_changed
    view.on_trace_changed = lambda: (rebuilt.append(1), real())[1]
    qtbot.waitUntil(lambda: not window.session.settling, timeout=20000)
    job = window.open_in_background(path)
    assert not window.session.settling  # nothing built ahead for it either: the views keep what they have
    qtbot.waitUntil(lambda: not window.opening, timeout=20000)
    assert job.index_source == "on screen" and window.session.trace is first  # no second copy read or mapped
    assert window.session.frame == 0 and window.session.selection.block is None  # as a fresh open shows it
    assert rebuilt == [] and view.errors == []
    # written again (a new capture saved over it): read again
    save_traces(path, [matmul_tiled_trace(32, 16)])
    job = window.open_in_background(path)
    assert not window.session.settling  # nothing built while it is read: the views build once it is here
    qtbot.waitUntil(lambda: not window.opening, timeout=20000)
    assert job.index_source != "on screen" and window.session.trace is not first
    assert window.session.trace.launch.grid == (2, 2, 1)
    # another trace on screen (a capture, say): the same file is read again, not taken from memory
    window.set_trace(reduction_trace())
    job = window.open_in_background(path)
    qtbot.waitUntil(lambda: not window.opening, timeout=20000)
    assert job.index_source != "on screen" and window.session.trace.launch.grid == (2, 2, 1)


# ---- a big trace: the views adopt it one per event-loop turn ------------------------------------------------
@pytest.fixture
def staged(monkeypatch):
    """Every trace counts as big (its views adopt it one a turn); records each adoption and what still waited."""
    from gpuviz.ui.views import base

    monkeypatch.setattr(base.TraceView, "STAGED_EVENTS", 0)
    adopted = []
    real = base.TraceView._adopt_trace

    def adopt(view):
        adopted.append((view.view_id, sum(1 for k in view.session._later if isinstance(k, base.TraceView))))
        if not view._trace_stale:  # it rebuilt already (all at once, in the turn the trace came): not staged
            adopted.append((view.view_id, "already rebuilt"))
        real(view)

    monkeypatch.setattr(base.TraceView, "_adopt_trace", adopt)
    return adopted


def test_a_big_trace_is_adopted_by_one_view_a_turn_and_hidden_views_wait(window, qtbot, tmp_path, staged):
    on_screen = sorted(vid for vid, v in window.views.items() if v.on_screen())
    hidden = [v for v in window.views.values() if not v.on_screen()]
    assert len(on_screen) >= 3 and hidden
    window.open_in_background(saved(tmp_path, reduction_trace(), "reduce.gpuviz"))
    qtbot.waitUntil(lambda: not window.opening and not window.session.settling, timeout=20000)
    # each view on screen adopted the trace once, in a turn of its own: when the first did, the others waited
    assert sorted(vid for vid, _ in staged) == on_screen
    assert [waiting for _, waiting in staged] == list(range(len(on_screen) - 1, -1, -1))
    for vid in on_screen:
        v = window.views[vid]
        assert not v._trace_stale and not v._stale and v.errors == [], vid
    assert all(v._trace_stale for v in hidden)  # behind a tab: nothing computed for this trace yet


def test_the_window_handles_a_step_while_the_views_adopt_a_big_trace(window, qtbot, tmp_path, staged):
    from PySide6.QtCore import Qt

    job = window.open_in_background(saved(tmp_path, reduction_trace(), "reduce.gpuviz"))
    stepped = {}

    def step_at_once():  # runs right after the window took the trace, before any view's turn
        stepped["waiting"] = window.session.settling
        window.actions.trigger("playback.step_forward")

    job.finished.connect(step_at_once, Qt.ConnectionType.QueuedConnection)
    qtbot.waitUntil(lambda: "waiting" in stepped and not window.session.settling, timeout=20000)
    assert stepped["waiting"] and window.session.frame == 1
    # every view on screen drew frame 1 in its turn: the same image as drawing frame 1 now
    block = window.views["block"]
    drawn = block.rgba.copy()
    block.refresh()
    assert block.shown_block is not None and np.array_equal(drawn, block.rgba)
    grid = window.views["grid"]
    assert grid.errors == [] and not grid._stale


def test_views_build_their_plots_in_turns_of_their_own_once_the_trace_is_read(window, qtbot, tmp_path, monkeypatch,
                                                                            staged, gate):
    """No pyqtgraph item is built while the file is read (they competed with the open job's thread for the GIL),
    nor in the memory view's turn to adopt the trace: each plot and its colour bar in a turn before it."""
    import pyqtgraph as pg

    from gpuviz.ui.views import base, panels

    monkeypatch.setattr(panels, "_STOCK_PLOTS", [])
    built = []  # (the item, was a file being read, the view adopting the trace in this turn)
    adopting = []
    real_init = pg.PlotItem.__init__

    def init(item, *args, **kwargs):
        real_init(item, *args, **kwargs)
        built.append((item, window.opening, adopting[-1] if adopting else None))

    monkeypatch.setattr(pg.PlotItem, "__init__", init)  # a ColorBarItem is a PlotItem too
    real_adopt = base.TraceView._adopt_trace

    def adopt(view):
        adopting.append(view.view_id)
        try:
            real_adopt(view)
        finally:
            adopting.pop()

    monkeypatch.setattr(base.TraceView, "_adopt_trace", adopt)
    view = window.views["memory"]
    assert view.on_screen()
    bar = view.colour_bar
    assert bar is not None  # the matmul trace on screen has its global arrays' bar
    release, _ = gate
    window.open_in_background(saved(tmp_path, vector_add_trace(300), "vector_add.gpuviz"))
    qtbot.wait(200)  # the job waits at its index step: the window is idle meanwhile
    assert window.opening and not window.session.settling and built == []
    release.set()
    qtbot.waitUntil(lambda: not window.opening and not window.session.settling, timeout=20000)
    assert view.errors == [] and [p.info.name for p in view._panels] == ["a", "b", "c"]
    assert not [b for b in built if b[1]]  # nothing while the file was read
    assert not [b for b in built if b[2] == "memory"]  # nor in the memory view's turn to adopt it
    mine = {id(b[0]) for b in built}
    assert all(id(p.plot) in mine for p in view._panels)  # its panels took the plots built ahead
    # and the colour bar of the trace that was on screen: none built for it at all
    assert view.colour_bar is bar and not [b for b in built if isinstance(b[0], pg.ColorBarItem)]
    assert view._spare_bar is None


def test_after_a_big_trace_the_views_build_the_next_ones_plots_while_the_window_is_idle(window, qtbot, tmp_path,
                                                                                      monkeypatch, staged):
    import pyqtgraph as pg

    from gpuviz.ui.views import panels

    monkeypatch.setattr(panels, "_STOCK_PLOTS", [])
    views = [window.views["memory"], window.views["shared"]]
    window.open_in_background(saved(tmp_path, reduction_trace(), "reduce.gpuviz"))
    qtbot.waitUntil(lambda: not window.opening and not window.session.settling, timeout=20000)
    # once every view adopted it, the plots for the next trace, built in idle turns (the colour bars on screen are
    # the next trace's)
    qtbot.waitUntil(lambda: len(panels._STOCK_PLOTS) == panels.STOCK_PLOTS_MAX, timeout=20000)
    qtbot.wait(100)
    assert all(v.colour_bar is not None and v._spare_bar is None for v in views)  # no bar built beside them
    stock, bar = list(panels._STOCK_PLOTS), views[0].colour_bar
    built = []  # (was a file being read, were views adopting a trace)
    real_init = pg.PlotItem.__init__

    def init(item, *args, **kwargs):
        real_init(item, *args, **kwargs)
        built.append((window.opening, window.session.settling))

    monkeypatch.setattr(pg.PlotItem, "__init__", init)
    window.open_in_background(saved(tmp_path, vector_add_trace(300), "vector_add.gpuviz"))
    qtbot.waitUntil(lambda: not window.opening and not window.session.settling, timeout=20000)
    view = views[0]
    assert view.errors == [] and [p.info.name for p in view._panels] == ["a", "b", "c"]
    assert not [b for b in built if b[0] or b[1]]  # nothing built while it was read or adopted
    assert all(any(p.plot is s for s in stock) for p in view._panels) and view.colour_bar is bar


def test_the_views_build_nothing_ahead_while_frames_are_stepped(window, qtbot, tmp_path, monkeypatch, staged):
    """The plots and colour bars built ahead for the next trace wait for idle time: not between a user's steps
    (a colour bar built in a turn of its own held the step after it back by 47-70 ms in reduce_sum's window)."""
    import time

    import pyqtgraph as pg

    from gpuviz.ui.views import panels

    monkeypatch.setattr(panels, "_STOCK_PLOTS", [])
    stepping = []
    built = []  # was a step under way (between the first step and the last)
    real_init = pg.PlotItem.__init__

    def init(item, *args, **kwargs):
        real_init(item, *args, **kwargs)
        built.append(bool(stepping))

    monkeypatch.setattr(pg.PlotItem, "__init__", init)  # a ColorBarItem is a PlotItem too
    window.open_in_background(saved(tmp_path, reduction_trace(), "reduce.gpuviz"))
    qtbot.waitUntil(lambda: not window.opening and not window.session.settling, timeout=20000)
    stepping.append(True)
    end = time.perf_counter() + 1.5
    while time.perf_counter() < end:
        window.actions.trigger("playback.step_forward")
        qtbot.wait(40)
    stepping.clear()
    assert True not in built
    # and once the frames stop, the idle turns build them
    qtbot.waitUntil(lambda: len(panels._STOCK_PLOTS) == panels.STOCK_PLOTS_MAX, timeout=20000)
    assert all(v.errors == [] for v in window.views.values())


def test_the_memory_view_adopts_a_big_trace_a_plot_a_turn_and_paints_once_its_frame_is_drawn(window, qtbot, tmp_path,
                                                                                            staged):
    """Its plots are added one per event-loop turn (each 5-15 ms of the GUI thread; all in one turn, with the first
    frame, held it 30-50 ms), the view not painted while half built, its first frame drawn in a turn after them."""
    from gpuviz.ui.views import memory

    view = window.views["memory"]
    turns = []  # per turn of the view's adoption: [updates on when it began, panels built, frames drawn]
    real_more, real_panel, real_draw = view._adopt_more, memory._ArrayPanel.__init__, view.on_frame_changed

    def more():
        turns.append([view.updatesEnabled(), 0, 0])
        real_more()

    def panel(p, *args, **kwargs):
        real_panel(p, *args, **kwargs)
        if turns:
            turns[-1][1] += 1

    def draw():
        real_draw()
        if turns:
            turns[-1][2] += 1

    view._adopt_more, view.on_frame_changed = more, draw
    memory._ArrayPanel.__init__ = panel
    try:
        window.open_in_background(saved(tmp_path, vector_add_trace(300), "vector_add.gpuviz"))
        qtbot.waitUntil(lambda: not window.opening and not window.session.settling, timeout=20000)
    finally:
        memory._ArrayPanel.__init__ = real_panel
    assert view.errors == [] and [p.info.name for p in view._panels] == ["a", "b", "c"]
    assert [t[1] for t in turns] == [1, 1, 1, 0, 0]  # a plot a turn, then the colour bar and the arrangement
    assert [t[2] for t in turns] == [0, 0, 0, 0, 1]  # the first frame in a turn of its own, after them
    assert [t[0] for t in turns[1:]] == [False] * 4  # not painted while half built
    assert view.updatesEnabled() and not view._stale


def test_no_view_builds_a_plot_in_its_turns_to_adopt_a_trace_each_claims_its_own(window, qtbot, tmp_path,
                                                                                  monkeypatch, staged):
    """The memory and shared views adopt a trace in pieces, interleaved: each takes the plots it claimed in its
    warm-up turns, not those another view's warm-up counted on (then built in that view's adoption turn)."""
    import pyqtgraph as pg

    from gpuviz.ui.views import base, panels

    monkeypatch.setattr(panels, "_STOCK_PLOTS", [pg.PlotItem(enableMenu=False)])  # one built when idle
    adopting = []
    built = []  # the views adopting when a plot was built
    real_init, real_more = pg.PlotItem.__init__, base.TraceView._adopt_more

    def init(item, *args, **kwargs):
        real_init(item, *args, **kwargs)
        built.append(adopting[-1] if adopting else None)

    def adopting_in(real):
        def call(view):
            adopting.append(view.view_id)
            try:
                real(view)
            finally:
                adopting.pop()
        return call

    monkeypatch.setattr(pg.PlotItem, "__init__", init)
    monkeypatch.setattr(base.TraceView, "_adopt_trace", adopting_in(base.TraceView._adopt_trace))
    monkeypatch.setattr(base.TraceView, "_adopt_more", adopting_in(real_more))
    trace = reduction_trace()
    assert sum(a.space == "global" for a in trace.launch.arrays) >= 2 and any(a.space == "shared"
                                                                             for a in trace.launch.arrays)
    window.open_in_background(saved(tmp_path, trace, "reduce.gpuviz"))
    qtbot.waitUntil(lambda: not window.opening and not window.session.settling, timeout=20000)
    assert all(window.views[v].errors == [] and window.views[v]._panels for v in ("memory", "shared"))
    assert [b for b in built if b is not None] == []  # every plot built in a warm-up turn


def test_a_trace_that_comes_while_a_view_adopts_another_in_pieces_replaces_it(window, qtbot, tmp_path, staged):
    view = window.views["memory"]
    window.open_in_background(saved(tmp_path, vector_add_trace(300), "vector_add.gpuviz"))
    qtbot.waitUntil(lambda: view._adoption is not None, timeout=20000)
    assert not view.updatesEnabled()
    window.set_trace(reduction_trace())  # a capture, say: the rest of vector_add's pieces are not run
    qtbot.waitUntil(lambda: not window.session.settling, timeout=20000)
    want = [a.name for a in window.session.trace.launch.arrays if a.space == "global"]
    assert view.errors == [] and [p.info.name for p in view._panels] == want and view.updatesEnabled()
    # a snapshot in the middle of an adoption: every piece of it at once
    window.open_in_background(saved(tmp_path, vector_add_trace(300), "vector_add2.gpuviz"))
    qtbot.waitUntil(lambda: view._adoption is not None, timeout=20000)
    window.session.settle_now()
    assert view._adoption is None and view.updatesEnabled() and not view._trace_stale
    assert [p.info.name for p in view._panels] == ["a", "b", "c"] and view.errors == []


def test_the_block_view_moves_the_warp_labels_it_has_for_the_next_trace(window, qtbot, tmp_path, staged):
    from gpuviz.ui.views.block import BlockView
    from gpuviz.ui.session import Session

    view = window.views["block"]
    before = list(view._labels)
    assert before
    window.open_in_background(saved(tmp_path, reduction_trace(), "reduce.gpuviz"))
    qtbot.waitUntil(lambda: not window.opening and not window.session.settling, timeout=20000)
    assert view.errors == []
    n = min(len(before), len(view._labels))
    assert all(a is b for a, b in zip(before[:n], view._labels[:n]))  # the same items, not built again
    # the fresh view and its session are the window's children: they go with it, in Qt's order, not whenever
    # Python's collector reaches their wrappers (a worker segfaulted in this test's teardown, 2 runs in 5)
    fresh = BlockView(Session(window.session.trace, theme=window.session.theme, parent=window), parent=window)
    fresh.start()
    shown = [(t.toPlainText(), t.pos(), t.color.name(), t.textItem.font().pixelSize()) for t in view._labels]
    assert shown == [(t.toPlainText(), t.pos(), t.color.name(), t.textItem.font().pixelSize()) for t in fresh._labels]
    assert all(t.scene() is view.plot.getPlotItem().scene() for t in view._labels)


def memory_view_shows(view):
    """What the global memory view shows: per panel its name, title, axis labels and pixels; the bar's scale."""
    bar = view.colour_bar
    return {
        "ncols": view._ncols,
        "bar": None if bar is None else (tuple(bar.levels()), bar.axis._tickLevels, bar.axis.labelText),
        "panels": [(p.info.name, p.plot.titleLabel.text, p.plot.getAxis("left").labelText,
                    p.plot.getAxis("bottom").labelText, p.plot.getAxis("bottom").isVisible(), p.buffer.copy())
                   for p in view._panels],
    }


def test_a_second_trace_of_another_shape_shows_what_a_fresh_window_shows(window, qtbot, tmp_path, staged):
    view = window.views["memory"]
    for trace, name in ((reduction_trace(), "reduce.gpuviz"), (vector_add_trace(300), "vector_add.gpuviz"),
                        (matmul_tiled_trace(32, 16), "matmul.gpuviz")):
        path = saved(tmp_path, trace, name)
        window.open_in_background(path)
        qtbot.waitUntil(lambda: not window.opening and not window.session.settling, timeout=20000)
        assert view.errors == []
        fresh = MainWindow()
        qtbot.addWidget(fresh)
        fresh.resize(window.size())
        fresh.show()
        qtbot.waitExposed(fresh)
        # its docks are laid out for an empty window: the memory view's canvas as big as the other's, for its pixels
        fresh.views["memory"].canvas.setFixedSize(view.canvas.size())
        qtbot.waitUntil(lambda: fresh.views["memory"].canvas.size() == view.canvas.size())
        fresh.open_in_background(path)
        qtbot.waitUntil(lambda: not fresh.opening and not fresh.session.settling, timeout=20000)
        seen, want = memory_view_shows(view), memory_view_shows(fresh.views["memory"])
        assert [p[:5] for p in seen["panels"]] == [p[:5] for p in want["panels"]], name
        assert all(np.array_equal(a[5], b[5]) for a, b in zip(seen["panels"], want["panels"])), name
        assert (seen["ncols"], seen["bar"]) == (want["ncols"], want["bar"]), name
        a = view.canvas.grab().toImage()
        b = fresh.views["memory"].canvas.grab().toImage()
        assert a.size() == b.size() and a == b, name
        fresh.close()


def test_session_later_runs_one_call_a_turn_in_order_and_settles_on_demand(qtbot):
    from gpuviz.ui.session import Session

    s = Session()
    ran = []
    s.later("a", lambda: ran.append("a"))
    s.later("b", lambda: ran.append("b"))
    s.later("a", lambda: ran.append("a2"))  # queued again: replaces its call, once
    assert s.settling and s.is_later("a") and ran == []
    s._run_one_later()
    assert ran == ["b"] and s.is_later("a")
    s.settle_now()
    assert ran == ["b", "a2"] and not s.settling
    s.later("c", lambda: ran.append("c"))
    qtbot.waitUntil(lambda: not s.settling)
    assert ran[-1] == "c"
    s.shutdown()
