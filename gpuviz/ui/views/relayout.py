"""Plots laid out once a window's resizes pause, settled before each paint, opaque, and drawn from a cache.

:class:`PlotRelayout` (one per main window) and :func:`relaid_by_window` defer pyqtgraph's scene layouts while the
window is resized in a burst; :func:`settle_plots_before_paint` hands the scenes' pending updates to their views
before the window paints; :func:`opaque_plots` and :func:`drawn_from_cache` keep a frame's repaint to the plots
that changed.
"""

from __future__ import annotations

import time

import pyqtgraph as pg
from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QPixmapCache
from PySide6.QtWidgets import QGraphicsItem, QGraphicsView, QWidget
from shiboken6 import isValid


class PlotRelayout(QObject):
    """While a window is resized in quick succession (an edge dragged), its plots are laid out again once the resizes
    pause, not on every one of them; a lone resize lays them out at once, and so does any other relayout of a plot
    (the window's first show, a label that needs another line, a dock's edge dragged).

    A resize of the window lays its widgets out (Qt) and then, in each pyqtgraph view, the scene: the plot's
    layout, its ViewBox, its axes' ranges and ticks, the view's own fitting (:meth:`TraceView.plots_resized`),
    and the next paint draws every axis anew: more than half of the GUI thread's time per resize of reduce_sum's
    full window, for a size that the next resize replaces. Within a burst the plots keep their layout (each view
    shows its scene as it was, centred, until it catches up) and are laid out at the size they have
    :data:`SETTLE_MS` after the burst's last resize, and with a resize at least every :data:`CATCH_UP_S` while it
    goes on."""

    #: a resize of the window this soon after it painted its last one is part of a burst (the pause before a resize
    #: tells a burst, not the time between two: on a slow machine a resize handled in 150 ms is followed by the next
    #: as closely as one handled in 15)
    BURST_S = 0.1
    #: the plots are laid out this long after a burst's last resize
    SETTLE_MS = 100
    #: and with a resize at least this often while a burst goes on: they follow a long drag
    CATCH_UP_S = 0.25

    def __init__(self, window: QWidget):
        super().__init__(window)
        self._decided: bool | None = None  # whether this resize's plots wait, until the window paints it
        self._resized = False  # the plots resized since the last paint are the window's resize
        self._painted_size = None  # the window's size when it last painted
        self._resize_done = float("-inf")  # when the window painted its last resize
        self._caught_up = float("-inf")
        self._plots: dict = {}  # pyqtgraph views whose scene waits to be laid out -> how
        self._views: dict = {}  # TraceViews whose plots_resized waits -> it
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.flush)

    def bursting(self) -> bool:
        """Whether a resize of the window now would be part of a burst: it painted its last one less than
        :data:`BURST_S` ago."""
        return time.perf_counter() - self._resize_done < self.BURST_S

    def defers(self) -> bool:
        """Whether a plot resized now waits for the burst to pause; the same answer for every plot until the window
        paints (one resize of the window resizes each of them, in one or two layout passes)."""
        if self._decided is None:
            window = self.parent()
            if not window.isVisible():
                return False  # nothing painted, nothing to pause for
            self._resized = window.size() != self._painted_size
            if not self._resized:
                self._decided = False  # not the window's resize: laid out at once
                return False
            now = time.perf_counter()
            self._decided = self.bursting() and now - self._caught_up < self.CATCH_UP_S
            if not self._decided:
                self._caught_up = now  # laid out with this resize; what an earlier one deferred follows the timer
            self._resize_done = now
            if self._decided or self.pending:
                self._timer.start(self.SETTLE_MS)
        return self._decided

    def painted(self) -> None:
        """The window painted (its UpdateRequest is done): a resize of it before is handled by now."""
        if self._decided is not None:
            self._decided = None
            if self._resized:
                self._resize_done = time.perf_counter()
        self._painted_size = self.parent().size()

    def defer(self, what, relayout) -> None:
        """``relayout()`` (``what``'s layout at its new size: a pyqtgraph view's scene, or a view's
        :meth:`TraceView.plots_resized`) once the burst pauses; a later call for the same ``what`` replaces it."""
        pending = self._plots if isinstance(what, QGraphicsView) else self._views
        pending[what] = relayout
        if not self._timer.isActive():
            self._timer.start(self.SETTLE_MS)

    def done(self, what) -> None:
        """``what`` was laid out now: nothing of it waits."""
        self._plots.pop(what, None)
        self._views.pop(what, None)

    def flush(self) -> None:
        """Lay out now all that waits, at the sizes it has: the plots' scenes first, then the views fitting what
        depends on them."""
        self._timer.stop()
        self._caught_up = time.perf_counter()
        self._decided = None  # a window that does not paint (minimized) decides again at its next resize
        for pending in (self._plots, self._views):
            while pending:
                what = next(iter(pending))
                relayout = pending.pop(what)
                if isValid(what):
                    relayout()

    @property
    def pending(self) -> bool:
        """Whether a plot or a view still waits to be laid out."""
        return bool(self._plots or self._views)


def relaid_by_window(view: QWidget) -> None:
    """Each pyqtgraph view inside ``view`` lays its scene out at a new size when its window's
    :class:`PlotRelayout` says so: at once, or once the window's resizes pause."""
    for gv in view.findChildren(pg.GraphicsView):
        if gv.__dict__.get("_gpuviz_relaid"):
            continue
        gv._gpuviz_relaid = True
        lay_out = gv.resizeEvent  # pyqtgraph's: the scene's range and central item follow the view's size

        def resized(ev, gv=gv, lay_out=lay_out) -> None:
            relayout = getattr(gv.window(), "plot_relayout", None)
            if ev is not None and relayout is not None and relayout.defers():
                QGraphicsView.resizeEvent(gv, ev)  # Qt's own: the scene stays as it was, centred in the view
                relayout.defer(gv, lambda: lay_out(None))
            else:
                if relayout is not None:
                    relayout.done(gv)
                lay_out(ev)

        gv.resizeEvent = resized


def settle_plots_before_paint(widgets) -> None:
    """Bring the pyqtgraph scenes inside ``widgets`` up to date now, before the window paints them (the main
    window calls it on each of its UpdateRequests, just ahead of the paint).

    pyqtgraph defers work to the paint: ``GraphicsView.paintEvent`` first emits the scene's sigPrepareForPaint,
    on which each ViewBox applies the matrix of its new size (``ViewBox.updateMatrix``, flagged by its
    resizeEvent) and each TextItem takes its new transform (``TextItem.updateTransform``); plot layouts whose
    axes asked for another width wait for their posted LayoutRequest. Those changes, made while or after the
    view paints, mark the scene dirty once more, so every resize painted each plot twice (the second time
    showing what the first already showed). Done here, the scene's own queued updates are handed to its views
    before the paint and merge into it: one paint, of the same pixels.

    The plots of each widget are looked up once (a view builds its plots when it is built): findChildren walked
    every view's widget tree on every paint of the window."""
    QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
    for widget in widgets:
        if not widget.isVisible():
            continue
        views = widget.__dict__.get("_gpuviz_graphics_views")
        if views is None:
            views = widget._gpuviz_graphics_views = widget.findChildren(pg.GraphicsView)
        for gv in views:
            if not gv.isVisible():
                continue
            scene = gv.scene()
            scene.prepareForPaint()
            QCoreApplication.sendPostedEvents(scene, QEvent.Type.MetaCall)  # its dirty items: regions to paint


def opaque_plots(widget: QWidget) -> None:
    """Tell Qt that each plot inside ``widget`` paints every pixel of its viewport (its background brush is
    opaque): a plot that changes then repaints itself alone, not also the view, the plot widget and the dock
    behind it (pyqtgraph's GraphicsView gives its viewport no background role of its own, so Qt took it for
    see-through and painted each of those under every changed plot, every frame)."""
    for gv in widget.findChildren(pg.GraphicsView):
        gv.viewport().setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, gv.backgroundBrush().isOpaque())


#: room for the pixmaps of items drawn from their cache (:func:`drawn_from_cache`), in KiB: Qt's 10 MiB holds
#: the axes and grid lines of the default window, not those of a full-screen one, and an item whose pixmap finds no
#: room is drawn afresh on every paint
PIXMAP_CACHE_KIB = 64 * 1024


def drawn_from_cache(*items: QGraphicsItem) -> None:
    """Items that look the same from one frame to the next (a block's grid lines, its warp labels) are drawn once
    into a pixmap of device pixels and copied from it whenever a frame's changes repaint them
    (``QGraphicsItem.DeviceCoordinateCache``). Qt draws them again when they change themselves (a new path, pen
    or text) or their view is transformed (a resize, a zoom). Only for items drawn inside their bounding rect:
    the pixmap is that rect (an AxisItem's tick at the rect's edge came out a pixel shorter)."""
    if QPixmapCache.cacheLimit() < PIXMAP_CACHE_KIB:
        QPixmapCache.setCacheLimit(PIXMAP_CACHE_KIB)
    for item in items:
        item.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
