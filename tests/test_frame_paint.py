"""What a frame change paints (issue 13): each changed plot repaints itself, not the widgets under it, and what the
window shows is what a fresh render of each view shows."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import collections

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QGraphicsItem, QWidget

from tests.test_window_resize import PLOT_VIEWS, REDUCTION_WINDOW, idle, on_screen, pixels

pytestmark = REDUCTION_WINDOW


class Paints(QObject):
    """The regions of the paint events each widget got (installed on the application)."""

    def __init__(self, qapp):
        super().__init__()
        self.regions = collections.defaultdict(list)
        self.qapp = qapp
        qapp.installEventFilter(self)

    def eventFilter(self, obj, ev):
        if ev.type() == QEvent.Type.Paint and isinstance(obj, QWidget):
            self.regions[obj].append(ev.region())
        return False

    def close(self):
        self.qapp.removeEventFilter(self)


def test_a_frame_repaints_each_changed_plot_alone_not_the_widgets_under_it(qapp, window):
    for vid in PLOT_VIEWS:
        assert window.views[vid].on_screen(), vid
    window.session.set_frame(3)
    idle(qapp)
    paints = Paints(qapp)
    try:
        for _ in range(4):
            window.actions.trigger("playback.step_forward")
            idle(qapp, 5)
    finally:
        paints.close()
    for vid in PLOT_VIEWS:
        view = window.views[vid]
        assert not view.errors
        for gv in view.findChildren(pg.GraphicsView):
            if not gv.isVisible():
                continue
            assert paints.regions[gv.viewport()], vid  # the plot changed with the frames
            # pyqtgraph's viewport has no background role of its own: Qt took it for see-through and painted the
            # plot widget, the view and the dock under it on every frame (the plot covers all of them there)
            under = [gv, view, view.parentWidget()]
            for w in under:
                plot_area = gv.viewport().rect().translated(gv.viewport().mapTo(w, gv.viewport().rect().topLeft()))
                for region in paints.regions.get(w, []):
                    assert not region.intersects(plot_area), (vid, type(w).__name__, region.boundingRect())
        # and what the window shows is what the view shows rendered afresh, pixel for pixel
        assert np.array_equal(on_screen(window, view), pixels(view.grab().toImage())), vid


def test_the_blocks_grid_lines_and_warp_labels_are_drawn_from_their_cache(qapp, window):
    view = window.views["block"]
    assert view._labels
    cached = QGraphicsItem.CacheMode.DeviceCoordinateCache
    # the same lines and texts over an image that changes every frame: stroked once, copied on every frame after
    for item in [view.gaps, view.bounds] + [label.textItem for label in view._labels]:
        assert item.cacheMode() == cached
    assert view.warp_outline.cacheMode() != cached  # it moves with the issuing warp
    for _ in range(6):
        window.actions.trigger("playback.step_forward")
        idle(qapp, 5)
        assert np.array_equal(on_screen(window, view), pixels(view.grab().toImage()))
    window.resize(1500, 860)  # a new transform: drawn again, at the new size
    idle(qapp)
    assert np.array_equal(on_screen(window, view), pixels(view.grab().toImage()))
    assert not view.errors
