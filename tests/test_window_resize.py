"""Resizing the window (issue 13): each plot is painted once per resize, and what it shows is what it should show."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import collections
import time

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication

from gpuviz.ui.views.relayout import PlotRelayout
from gpuviz.ui.window import MainWindow
from tests.ui_traces import reduction_trace

PLOT_VIEWS = ("grid", "block", "memory", "shared")


class PaintCounter(QObject):
    """Counts the paint events of every pyqtgraph view's viewport, by view id."""

    def __init__(self, window):
        super().__init__()
        self.of = {}
        for vid in PLOT_VIEWS:
            for gv in window.views[vid].findChildren(pg.GraphicsView):
                self.of[gv.viewport()] = vid
                gv.viewport().installEventFilter(self)
        self.counts = collections.Counter()

    def eventFilter(self, obj, ev):
        if ev.type() == QEvent.Type.Paint and obj in self.of:
            self.counts[self.of[obj]] += 1
        return False


def idle(qapp, turns: int = 30) -> None:
    for _ in range(turns):
        qapp.processEvents()


def settled(qapp, window) -> None:
    """The window's last resize painted long enough ago that the next is a resize on its own, as a user's one step (a
    maximize, a tiling key), not part of a dragged edge's burst (see :class:`PlotRelayout`)."""
    idle(qapp)
    while window.plot_relayout.bursting() or window.plot_relayout.pending:
        qapp.processEvents()
        time.sleep(0.005)


def resize_alone(qapp, window, size) -> None:
    """A resize on its own: the window's plots are laid out with it."""
    settled(qapp, window)
    window.resize(*size)
    idle(qapp)


def pixels(image: QImage) -> np.ndarray:
    image = image.convertToFormat(QImage.Format.Format_RGBA8888)
    return np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine())[
        :, : 4 * image.width()].copy()


#: the conftest's window on a reduction of 4 blocks, idle once shown (test_frame_paint.py opens the same)
REDUCTION_WINDOW = pytest.mark.window(trace=lambda: reduction_trace(n_blocks=4, block=64),
                                      then=lambda w: idle(QApplication.instance()))
pytestmark = REDUCTION_WINDOW


def on_screen(window, view) -> np.ndarray:
    """What the window last painted of ``view`` (the offscreen platform's backing store)."""
    shot = window.windowHandle().screen().grabWindow(window.winId())
    top_left = view.mapTo(window, view.rect().topLeft())
    ratio = shot.devicePixelRatio()
    return pixels(shot.copy(int(top_left.x() * ratio), int(top_left.y() * ratio), int(view.width() * ratio),
                            int(view.height() * ratio)).toImage())


def test_each_plot_is_painted_once_per_resize_and_shows_what_a_fresh_render_shows(qapp, window):
    for vid in PLOT_VIEWS:
        assert window.views[vid].on_screen(), vid
    counter = PaintCounter(window)
    for size in ((1540, 870), (1480, 840), (1600, 900)):
        settled(qapp, window)
        counter.counts.clear()
        window.resize(*size)
        idle(qapp)
        assert window.size().toTuple() == size
        # pyqtgraph applied each ViewBox's new matrix and each TextItem's transform during the paint, and plot
        # layouts ran after it: every plot was painted a second time
        assert dict(counter.counts) == {vid: 1 for vid in PLOT_VIEWS}, size
        for vid in PLOT_VIEWS:
            view = window.views[vid]
            assert not view.errors
            # the one paint showed the settled scene: the view rendered afresh now is the same, pixel for pixel
            fresh = pixels(view.grab().toImage())
            assert np.array_equal(on_screen(window, view), fresh), (vid, size)


def test_a_dragged_edge_lays_the_plots_out_once_it_pauses_and_they_show_what_a_fresh_render_shows(qapp, window):
    """A burst of resizes (an edge dragged: each resize handled, and painted, before the next) lays the plots out once
    the resizes pause, at the size the window has then, not once per resize: only the last size is shown for long."""
    laid_out = collections.Counter()  # pyqtgraph's scene layouts at a new size (GraphicsView.resizeEvent), by plot
    plots = [(vid, gv) for vid in PLOT_VIEWS for gv in window.views[vid].findChildren(pg.GraphicsView)]
    for vid, gv in plots:
        update_matrix = gv.updateMatrix  # the scene's rect and transform for the view's size: twice per layout

        def counted(*args, gv=gv, update_matrix=update_matrix):
            laid_out[gv] += 0.5
            return update_matrix(*args)

        gv.updateMatrix = counted
    counter = PaintCounter(window)
    resize_alone(qapp, window, (1600, 900))
    laid_out.clear()
    window.plot_relayout.CATCH_UP_S = 60.0  # a drag shorter than that: no catch-up within it, whatever this machine's pace
    sizes = [(1600 - 20 * k, 900 - 12 * k) for k in range(1, 8)]
    started = time.perf_counter()
    for size in sizes:  # back to back, as a drag delivers them
        window.resize(*size)
        qapp.processEvents()
    first = sizes[0]
    assert window.plot_relayout.pending
    assert all(laid_out[gv] <= 1 for _, gv in plots), laid_out  # at most with the burst's first resize
    while window.plot_relayout.pending:  # the user stops dragging: the plots follow on their own
        qapp.processEvents()
        time.sleep(0.005)
    idle(qapp)
    assert time.perf_counter() - started >= PlotRelayout.SETTLE_MS / 1e3
    assert window.size().toTuple() == sizes[-1] != first
    assert all(1 <= laid_out[gv] <= 2 for _, gv in plots), laid_out  # with the first resize, and once it paused
    assert all(counter.counts[vid] >= 1 for vid in PLOT_VIEWS)
    for vid in PLOT_VIEWS:
        view = window.views[vid]
        assert not view.errors
        # laid out at the last size: the view rendered afresh now is what the window shows, pixel for pixel
        assert np.array_equal(on_screen(window, view), pixels(view.grab().toImage())), vid
        for gv in view.findChildren(pg.GraphicsView):
            assert gv.range.size().toTuple() == gv.size().toTuple(), vid  # the scene has the view's size


def test_a_burst_ends_as_the_same_size_reached_alone_does(qapp, window):
    """What a dragged edge leaves on screen once it pauses is what one resize to that size shows: the memory view's
    columns, each plot's range and pixels."""
    resize_alone(qapp, window, (1600, 900))
    window.plot_relayout.CATCH_UP_S = 60.0
    for size in ((1580, 860), (1560, 800), (1540, 700), (1530, 650)):
        window.resize(*size)
        qapp.processEvents()
    while window.plot_relayout.pending:
        qapp.processEvents()
        time.sleep(0.005)
    idle(qapp)

    def state():
        shown = {}
        for vid in PLOT_VIEWS:
            view = window.views[vid]
            ranges = [tuple(tuple(r) for r in it.viewRange()) for gv in view.findChildren(pg.GraphicsView)
                      for it in gv.scene().items() if isinstance(it, pg.ViewBox)]
            shown[vid] = (on_screen(window, view), ranges, getattr(view, "_ncols", None))
        return shown

    after_burst = state()
    resize_alone(qapp, window, (1600, 900))
    resize_alone(qapp, window, (1530, 650))
    alone = state()
    for vid in PLOT_VIEWS:
        assert np.array_equal(after_burst[vid][0], alone[vid][0]), vid
        assert after_burst[vid][1:] == alone[vid][1:], vid
        assert not window.views[vid].errors


def axes_of(window) -> list:
    return [it for vid in PLOT_VIEWS for gv in window.views[vid].findChildren(pg.GraphicsView)
            for it in gv.scene().items() if isinstance(it, pg.AxisItem)]


def test_a_resize_sets_no_axis_title_again_and_a_theme_still_does(qapp, window):
    axes = axes_of(window)
    assert any(ax.labelText for ax in axes)
    calls = collections.Counter()
    for ax in axes:
        set_html = ax.label.setHtml

        def counted(html, ax=ax, set_html=set_html):
            calls[id(ax)] += 1
            set_html(html)

        ax.label.setHtml = counted
    def titles():  # each title, and the thickness its axis takes for it (its length follows the plot's size)
        return {id(ax): (ax.label.toHtml(), ax.width() if ax.orientation in ("left", "right") else ax.height())
                for ax in axes if ax.isVisible()}

    before = titles()
    resize_alone(qapp, window, (1500, 860))
    resize_alone(qapp, window, (1600, 900))
    # pyqtgraph set each title's HTML again (and re-sized its axis) on every range change of its view
    assert sum(calls.values()) == 0
    assert titles() == before
    window.toggle_theme()
    idle(qapp)
    titled = [ax for ax in axes if ax.labelText and ax.label.isVisible()]
    assert titled and all(calls[id(ax)] > 0 for ax in titled)
    assert all(ax.labelStyle["color"] in ax.label.toHtml() or ax.labelStyle["color"].upper() in ax.label.toHtml().upper()
               for ax in titled)


def test_a_resize_lays_no_plot_out_a_second_time(qapp, window):
    """pyqtgraph's plot titles (LabelItem.resizeEvent -> updateGeometry) and the memory views' arrangement (the grid's
    spacing set again) asked every titled plot and its canvas for another layout pass after each resize."""
    from PySide6.QtWidgets import QGraphicsWidget

    class Requests(QObject):
        def __init__(self):
            super().__init__()
            self.n = collections.Counter()

        def eventFilter(self, obj, ev):
            if ev.type() == QEvent.Type.LayoutRequest and isinstance(obj, QGraphicsWidget):
                self.n[type(obj).__name__] += 1
            return False

    counter = Requests()
    qapp.installEventFilter(counter)
    try:
        for size in ((1540, 870), (1480, 840), (1600, 900)):
            resize_alone(qapp, window, size)
            counter.n.clear()
            idle(qapp)
            assert not counter.n, size
    finally:
        qapp.removeEventFilter(counter)
    titled = [p.plot for vid in ("memory", "shared") for p in window.views[vid]._panels]
    assert titled and all(p.titleLabel.isVisible() and p.titleLabel.text for p in titled)


def test_plots_change_columns_by_moving_in_their_grid_and_show_what_a_fresh_render_shows(qapp, window):
    """A resize that changes how many arrays stand side by side moves the plots to their new cells: none leaves its
    scene (pyqtgraph's removeItem/addItem took each out and put it back, and laid the grid out after each one)."""
    view = window.views["memory"]
    plots = [p.plot for p in view._panels]
    assert len(plots) >= 2
    scene = view.canvas.scene()
    moves = []
    for plot in plots:
        change = plot.itemChange

        def watched(kind, value, change=change):
            if kind == plot.GraphicsItemChange.ItemSceneChange:
                moves.append(kind)
            return change(kind, value)

        plot.itemChange = watched
    columns = set()
    for size in ((1600, 600), (1600, 900), (1600, 600), (1600, 900)):
        resize_alone(qapp, window, size)
        columns.add(view._ncols)
        assert all(plot.scene() is scene for plot in plots)
        assert np.array_equal(on_screen(window, view), pixels(view.grab().toImage())), size
        # the cells the grid has are the cells pyqtgraph's layout says they are in
        grid = view.canvas.ci.layout
        for k, plot in enumerate(plots):
            row, col = divmod(k, view._ncols)
            assert view.canvas.ci.items[plot] == [(row, col)]
            assert any(grid.itemAt(i).graphicsItem() is plot for i in range(grid.count()))
    assert len(columns) == 2, columns  # the sizes did change the number of columns
    assert not moves and not view.errors


def test_the_dock_title_icons_are_made_once(qapp, window):
    """Fusion made the dock title buttons' icons again (six PNGs each) on every relayout and paint of every dock."""
    from PySide6.QtWidgets import QApplication, QStyle

    style = QApplication.style()
    for which in (QStyle.StandardPixmap.SP_TitleBarCloseButton, QStyle.StandardPixmap.SP_TitleBarNormalButton):
        icon = style.standardIcon(which, None, window.docks["memory"])
        assert not icon.isNull()
        assert style.standardIcon(which, None, window.docks["grid"]).cacheKey() == icon.cacheKey()


def test_the_details_text_keeps_its_height_per_width_until_it_changes(qapp, window):
    from PySide6.QtWidgets import QLabel

    label = window.views["details"].launch_label
    fresh = QLabel()
    fresh.setWordWrap(True)
    fresh.setTextFormat(label.textFormat())
    fresh.setFont(label.font())
    fresh.setText(label.text())
    fresh.setContentsMargins(label.contentsMargins())
    for width in (300, 450, 300):
        assert label.heightForWidth(width) == fresh.heightForWidth(width)
    label.setText(label.text() + "<p>one more paragraph of text about the launch</p>")
    fresh.setText(label.text())
    assert label.heightForWidth(300) == fresh.heightForWidth(300) > 0


def test_a_resize_measures_the_transport_bar_only_when_its_labels_may_change(qapp, window):
    """_fit_transport measured the bar's width with both sets of labels on every new window width, and each measure
    laid the bar out again, and after it the whole window: a second layout pass of every dock per resize."""
    from PySide6.QtWidgets import QWidget

    class Requests(QObject):
        def __init__(self):
            super().__init__()
            self.n = collections.Counter()

        def eventFilter(self, obj, ev):
            if ev.type() == QEvent.Type.LayoutRequest and isinstance(obj, QWidget):
                self.n[obj.objectName() or type(obj).__name__] += 1
            return False

    counter = Requests()
    qapp.installEventFilter(counter)
    try:
        for size in ((1540, 870), (1480, 840), (1600, 900)):
            counter.n.clear()
            window.resize(*size)
            idle(qapp)
            assert counter.n["toolbar_playback"] == 0, (size, dict(counter.n))
            assert not window.transport_compact
        window.resize(1000, 900)  # too narrow for the full labels: the compact ones, the slider given up first
        idle(qapp)
        assert window.transport_compact
        assert window.transport.sizeHint().width() <= 1000 or window.slider.minimumWidth() < window.SLIDER_MIN_WIDTH
        window.session.set_scale(window.session.theme.scale * 1.15)  # bigger text: measured again
        idle(qapp)
        assert counter.n["toolbar_playback"] > 0
    finally:
        qapp.removeEventFilter(counter)


def test_the_first_show_keeps_the_size_asked_for(qapp):
    """The root of c415f9b's and b730088's workarounds: the top bar's two fixed-height lines of text, in LabelSlots,
    answered their height at 19 px wide (464 and 364 px) while the window's first layout ran, before their slots had
    their fixed height, and Qt grew the window to the minimum that gave (1767x1241 for 1767x900)."""
    grown = []

    class Watch(QObject):
        def eventFilter(self, obj, ev):
            if ev.type() == QEvent.Type.Resize:
                grown.append(ev.size().toTuple())
            return False

    for size in ((1767, 900), (1280, 720)):
        w = MainWindow(reduction_trace(n_blocks=4, block=64))
        watch = Watch()
        w.installEventFilter(watch)
        w.resize(*size)
        grown.clear()
        w.show()
        idle(qapp, 5)
        try:
            assert w.size().toTuple() == size
            assert all(g[1] <= size[1] for g in grown), grown
            slot = w.frame_text.parentWidget()
            assert slot.heightForWidth(19) == w.frame_text.height()  # fixed: whatever the width asked
        finally:
            w.close()
            w.deleteLater()
            idle(qapp, 3)


def test_settling_the_plots_before_a_paint_looks_them_up_once(qapp, window):
    """settle_plots_before_paint walked every view's widget tree (findChildren) on every paint of the window."""
    calls = collections.Counter()
    for vid, view in window.views.items():
        find = view.findChildren

        def counted(kind, *args, vid=vid, find=find):
            if kind is pg.GraphicsView:
                calls[vid] += 1
            return find(kind, *args)

        view.findChildren = counted
    counter = PaintCounter(window)
    calls.clear()
    for size in ((1540, 870), (1600, 900)):
        window.resize(*size)
        idle(qapp)
    window.actions.trigger("playback.step_forward")
    idle(qapp)
    assert sum(counter.counts.values()) > 0
    assert not calls, dict(calls)  # each view's plots were looked up once, before
