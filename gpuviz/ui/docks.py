"""The main window's docks: one per registered view and the launch panel's, their default layout for the window's
size (global and shared memory as tabs in a short window, the one a frame is about in front), and titles that fit
(a mixin of :class:`~gpuviz.ui.window.MainWindow`).
"""

from __future__ import annotations

import sys

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QDockWidget, QFrame, QScrollArea, QTabBar, QWidget
from shiboken6 import isValid

from ..model.trace import EventKind
from .dock_titles import fit_dock_titles
from .launch import LaunchPanel
from .views.base import available_views


_AREAS = {
    "left": Qt.DockWidgetArea.LeftDockWidgetArea,
    "right": Qt.DockWidgetArea.RightDockWidgetArea,
    "bottom": Qt.DockWidgetArea.BottomDockWidgetArea,
    "top": Qt.DockWidgetArea.TopDockWidgetArea,
}


def presenting(window):
    """:func:`gpuviz.ui.presenter.presenter_of`, without importing the presenter module on a trace's first frame
    (~700 lines; compiled 10-18 ms where no bytecode is cached): none presents before that module is imported."""
    presenter = sys.modules.get("gpuviz.ui.presenter")
    return presenter.presenter_of(window) if presenter is not None else None


class DocksMixin:
    """The docks of :class:`~gpuviz.ui.window.MainWindow`: built, arranged, titled."""

    def _build_views(self) -> None:
        by_area: dict[str, list[str]] = {}
        for vid, cls in available_views().items():
            try:
                view = cls(self.session, self)
            except Exception as e:  # noqa: BLE001 - one broken view must not keep the window from opening
                self.statusBar().showMessage(f"view {vid} could not be built: {type(e).__name__}: {e}", 20000)
                continue
            # A view whose controls are wide (occupancy, timings) must not force the whole window wider
            # than a 1280x720 projector: an explicit minimum overrides the layout's, and the view clips.
            hint = view.minimumSizeHint()
            view.setMinimumSize(min(hint.width(), 240), min(hint.height(), 120))
            dock = QDockWidget(cls.title or vid, self)
            dock.setObjectName(f"dock_{vid}")
            dock.setWidget(view)
            # a tab brought to the front draws what it missed (the layout settles first: hence the timer)
            dock.visibilityChanged.connect(lambda shown, v=view: shown and QTimer.singleShot(0, v.catch_up))
            dock.setFeatures(
                QDockWidget.DockWidgetFeature.DockWidgetMovable
                | QDockWidget.DockWidgetFeature.DockWidgetFloatable
                | QDockWidget.DockWidgetFeature.DockWidgetClosable
            )
            self.views[vid] = view
            self.docks[vid] = dock
            area = cls.default_area if cls.default_area in _AREAS else "right"
            if cls.tabify_with in self.docks:
                self.tabifyDockWidget(self.docks[cls.tabify_with], dock)
                continue
            by_area.setdefault(area, []).append(vid)
        # each area: its first view on top, the second below it, any more tabbed with the second
        for area, vids in by_area.items():
            docks = [self.docks[v] for v in vids]
            self.addDockWidget(_AREAS[area], docks[0])
            if len(docks) > 1:
                self.splitDockWidget(docks[0], docks[1], Qt.Orientation.Vertical)
                for d in docks[2:]:
                    self.tabifyDockWidget(docks[1], d)
                docks[1].raise_()
        self._by_area = by_area
        # The docks share the whole window: the bottom area fills the middle column. The central widget is an
        # empty strip of no height rather than none at all: with no central widget, Qt (6.11) moves both side
        # columns 1-2 px outwards at every relayout once resizeDocks() has sized them (arrange_default), and
        # views relayout on every frame (a caption that wraps differently), so playing a few hundred frames
        # squeezed the middle column (global and shared memory) to its minimum and resized every plot each frame.
        spacer = QWidget(self)
        spacer.setObjectName("centralSpacer")
        spacer.setMaximumHeight(0)
        self.setCentralWidget(spacer)
        self._arranged = False

    #: below this window height the bottom column's views (global and shared memory, barriers, timings) are
    #: tabs rather than stacked
    STACKED_MEMORY_MIN_HEIGHT = 820

    _memory_tabbed = False

    def arrange_default(self) -> None:
        """Column widths and row heights of the default layout, for the window's current size."""
        w, h = max(self.width(), 640), max(self.height(), 400)
        cols, widths = [], []
        # the source column the widest: its lines wrap below 60 columns, and the middle column's arrays
        # size themselves to what they get (a gap stayed empty beside them while the source was cut)
        for area, frac in (("left", 0.22), ("right", 0.37)):
            vids = self._by_area.get(area)
            if vids:
                cols.append(self.docks[vids[0]])
                widths.append(int(w * frac))
        if cols:
            self.resizeDocks(cols, widths, Qt.Orientation.Horizontal)
        bottom = self._by_area.get("bottom", [])
        if h < self.STACKED_MEMORY_MIN_HEIGHT and len(bottom) > 1 and not self._memory_tabbed:
            # a short window (a 1280x720 projector, a 1366x768 laptop): global and shared memory stacked got a
            # strip each, 32x32 arrays a pixel a cell. As tabs, each gets the column's height, and the one the
            # frame is about comes to the front (_follow_memory_tab), as in presenter mode
            first = self.docks[bottom[0]]
            for vid in bottom[1:]:
                self.tabifyDockWidget(first, self.docks[vid])
            first.raise_()
            self._memory_tabbed = True
        # the source over Details: at a short window's height Details got four lines (finding 11 of issue 28)
        right_top = 0.58 if h >= self.STACKED_MEMORY_MIN_HEIGHT else 0.5
        for area, top in (("left", 0.36), ("right", right_top), ("bottom", 0.55)):
            vids = self._by_area.get(area, [])
            if area == "bottom" and self._memory_tabbed:
                continue
            if len(vids) > 1:
                self.resizeDocks([self.docks[vids[0]], self.docks[vids[1]]], [int(h * top), int(h * (1 - top))],
                                 Qt.Orientation.Vertical)
        self._arranged = True
        QTimer.singleShot(0, self._hide_stale_tab_bars)

    def _hide_stale_tab_bars(self) -> None:
        """Qt (6.11) leaves the tab bars of intermediate tab groups visible, floating over the docks,
        when docks are tabbed before the window is first laid out. A live tab bar sits below its
        group's docks, never on top of a dock: hide the ones that cover one."""
        docks = [d.geometry() for d in self.findChildren(QDockWidget) if d.isVisible() and not d.isFloating()]
        for bar in self.findChildren(QTabBar):
            if bar.parent() is not self or not bar.isVisible():
                continue
            g = bar.geometry()
            if any(d.intersected(g).height() > 4 and d.intersected(g).width() > 4 for d in docks):
                bar.hide()
        self._fit_dock_titles()

    def _fit_dock_titles(self) -> None:
        """Each dock's full title where it fits its title bar and its tab, else its view's short title: at
        1280x720 the desk cut 'Block: warps x la…' and 'Per l…' (presenter mode fits its own the same way)."""
        if isValid(self) and self.isVisible():
            fit_dock_titles(self)

    def _build_launch_dock(self) -> None:
        self.launch_panel = LaunchPanel(self)
        dock = QDockWidget("Launch", self)
        dock.setObjectName("dock_launch")
        # scrolls rather than forcing the window taller than a 720-pixel screen (the panel grows with notices)
        scroll = QScrollArea(dock)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # the panel wraps, it does not scroll sideways
        scroll.setWidget(self.launch_panel)
        dock.setWidget(scroll)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
        if "details" in self.docks:
            self.tabifyDockWidget(self.docks["details"], dock)
            self.docks["details"].raise_()
        self.docks["launch"] = dock

    #: the tab that shows what a frame does, by event kind: shared memory, global memory, the barrier
    _MEMORY_TABS = ("memory", "shared", "barriers")

    def _follow_memory_tab(self, f: int) -> None:
        """With the memory views tabbed (a short window), bring forward the one this frame is about, unless
        another kind of view (timings) was chosen: a shuffle or a start leaves the tabs as they are."""
        if presenting(self) is not None:
            return  # presenter mode follows the frame with its own tabs
        kind = int(self.session.frames.kind[min(max(f, 0), self.session.frames.n_frames - 1)])
        vid = ("shared" if kind in (EventKind.SHARED_LOAD, EventKind.SHARED_STORE) else
               "memory" if kind in (EventKind.GLOBAL_LOAD, EventKind.GLOBAL_STORE, EventKind.ATOMIC) else
               "barriers" if kind == EventKind.BARRIER else None)
        dock = self.docks.get(vid) if vid else None
        if dock is None or not dock.isVisible() or not dock.visibleRegion().isEmpty():
            return
        front = [v for v in self._by_area.get("bottom", []) if v in self.docks and self.docks[v].isVisible()
                 and not self.docks[v].visibleRegion().isEmpty()]
        if front and all(v in self._MEMORY_TABS for v in front) and self.tabifiedDockWidgets(dock):
            dock.raise_()
