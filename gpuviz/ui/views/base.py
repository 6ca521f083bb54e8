"""TraceView: the base class of every docked view, and the registry the main window docks from.

How another view plugs in
-------------------------
1. Subclass :class:`TraceView` in a module under ``gpuviz/ui/views/`` and decorate it with
   ``@register_view``. Set the class attributes ``view_id`` (stable, lower-case: used by
   ``gpuviz snapshot --view ID``, saved layouts and lessons), ``title`` (the dock's title),
   ``default_area`` (``"left"``, ``"right"``, ``"bottom"`` or ``"top"``) and ``order`` (position among
   the views of that area; tabs when ``tabify_with`` names another view id).
2. Add the module's name to :data:`BUILTIN_VIEW_MODULES` (a missing module is skipped, so views can land
   in any order).
3. Implement the three hooks; the base class connects them to the :class:`~gpuviz.ui.session.Session`:
     ``on_trace_changed()``      a new trace: rebuild what does not change per frame (layout, lookup
                                 tables, per-line counts, pixel coordinates) and cache it on ``self``;
     ``on_frame_changed()``      the current frame ``self.frame`` changed: update colours only, e.g.
                                 fill a cached RGBA array and hand it to a pyqtgraph ``ImageItem``
                                 with ``setImage(rgba, autoLevels=False)``. Draw threads/cells as image
                                 pixels, never as thousands of scatter points. Keep it well under 16 ms
                                 at a million threads;
     ``on_selection_changed()``  ``self.session.selection`` changed: light the selected block / warp /
                                 thread / cell if it is yours.
   and, if the view has its own colours or fonts, ``on_theme_changed()`` (read ``self.theme``); a view that fits
   something to its plots' size (a range, which labels fit) does it in ``plots_resized()``, not in ``resizeEvent``:
   while the window is resized in quick succession, the plots are laid out once the resizes pause
   (:class:`PlotRelayout`), and ``plots_resized`` follows them.
4. To select on click, call ``self.session.selection.select_block(b)`` / ``select_warp(b, w)`` /
   ``select_thread(b, t)`` / ``select_cell(array_id, flat_index)``; every view and the details panel
   follow.

An exception in a hook is logged and kept in ``view.errors`` (the view stays up and playback goes on);
tests should assert that list is empty.

Use :func:`make_image_plot` for a pixel view (an aspect-locked, y-down ``PlotWidget`` with an
``ImageItem``) so all views look and zoom alike. Hidden views (a closed or background-tabbed dock) are
not redrawn per frame, and in a window on screen they do not even rebuild for a new trace
(``on_trace_changed``): they catch up when shown.
"""

from __future__ import annotations

import importlib
import logging
import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QColor, QFont, QPixmapCache
from PySide6.QtWidgets import QGraphicsItem, QGraphicsView, QLabel, QVBoxLayout, QWidget
from shiboken6 import isValid

from ..wheel import wheel_passes_over

log = logging.getLogger(__name__)

#: modules imported by :func:`available_views` (missing ones are skipped)
BUILTIN_VIEW_MODULES = (
    "gpuviz.ui.views.grid",
    "gpuviz.ui.views.block",
    "gpuviz.ui.views.source",
    "gpuviz.ui.views.details",
    "gpuviz.ui.views.memory",
    "gpuviz.ui.views.shared",
    "gpuviz.ui.views.barriers",
    "gpuviz.ui.views.occupancy",
    "gpuviz.ui.views.timings",
)

_REGISTRY: dict[str, type["TraceView"]] = {}

#: what a view says in place of a figure that would answer a lesson's open question
PREDICT_TEXT = "<i>what happens here? Predict first: the answer shows once it is revealed</i>"


def register_view(cls: type["TraceView"]) -> type["TraceView"]:
    """Class decorator: make a view available to the main window and to ``snapshot --view``."""
    vid = getattr(cls, "view_id", "")
    if not vid or not isinstance(vid, str):
        raise ValueError(f"{cls.__name__} needs a view_id (a short lower-case name)")
    other = _REGISTRY.get(vid)
    if other is not None and other.__qualname__ != cls.__qualname__:
        raise ValueError(f"view id {vid!r} is taken by {other.__module__}.{other.__qualname__}")
    _REGISTRY[vid] = cls
    return cls


def available_views() -> dict[str, type["TraceView"]]:
    """Every registered view by id (importing the built-in view modules first), in dock order."""
    for name in BUILTIN_VIEW_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name != name:  # a view module that exists but imports something missing: say so
                log.warning("view module %s could not be loaded: %s", name, e)
        except Exception as e:  # noqa: BLE001 - a broken view must not keep the app from starting
            log.warning("view module %s failed to load: %s: %s", name, type(e).__name__, e)
    return dict(sorted(_REGISTRY.items(), key=lambda kv: (kv[1].order, kv[0])))


class TraceView(QWidget):
    """A docked renderer of (trace, current frame, settings). See the module docstring."""

    view_id: str = ""
    title: str = ""
    #: the dock's title where the full one does not fit its title bar or tab (presenter mode at 1280x720)
    short_title: str = ""
    default_area: str = "right"  # "left" | "right" | "bottom" | "top"
    order: int = 100
    tabify_with: str | None = None  # view_id of a view to share a tab group with

    def __init__(self, session, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self._stale = True  # the frame changed while hidden
        self.errors = []
        self.setObjectName(f"view_{self.view_id}")
        session.trace_changed.connect(self._trace_slot)
        session.frame_changed.connect(self._frame_slot)
        session.selection_changed.connect(self._selection_slot)
        session.theme_changed.connect(self._theme_slot)

    _started = False
    #: errors raised by this view's hooks (logged once each; the view stays up, the app keeps running)
    errors: list[str]

    def _call(self, hook) -> None:
        try:
            hook()
        except Exception as e:  # noqa: BLE001 - one broken view must not stop playback or the other views
            self._failed(hook, e)

    def _failed(self, hook, e: Exception) -> None:
        """Keep ``e``, raised by ``hook``, in ``errors`` (logged once); called in the ``except`` block."""
        text = f"{type(e).__name__}: {e}"
        if not hasattr(self, "errors"):
            self.errors = []
        if text not in self.errors:
            self.errors.append(text)
            log.exception("view %r failed in %s", self.view_id, getattr(hook, "__name__", hook))

    def start(self) -> None:
        """Draw the current state. The window calls it once after construction; if nobody does, the
        first show or session signal does (hooks never run before the view was started)."""
        self._started = True
        wheel_passes_over(self)  # a wheel turn over the dock scrolls it, never a combobox's choice under the pointer
        self._call(self.on_theme_changed)
        opaque_plots(self)
        relaid_by_window(self)
        if self.session.trace is not None:
            self._call(self.on_trace_changed)
            self._call(self.on_frame_changed)
            self._call(self.on_selection_changed)
        self._stale = False

    # ---- what the session holds ------------------------------------------------------------------
    @property
    def trace(self):
        return self.session.trace

    @property
    def frames(self):
        return self.session.frames

    @property
    def frame(self) -> int:
        return self.session.playback.frame

    @property
    def theme(self):
        return self.session.theme

    # ---- hooks: override these -------------------------------------------------------------------
    @classmethod
    def prepare(cls, trace, frames) -> None:
        """Per-trace numpy work this view's ``on_trace_changed`` needs, done ahead on the thread that opens a
        trace file (gpuviz/ui/open_job.py) for the views on screen: no Qt here. Keep what it builds with
        ``render.per_frames`` so ``on_trace_changed`` finds it."""

    def warm_up_steps(self) -> list:
        """Callables, each a short piece of the Qt work this view's ``on_trace_changed`` will want for the
        session's trace (plots and colour bars built ahead): a big trace's views run them one per event-loop
        turn, each a turn of its own, just before their turn to adopt it (:meth:`_trace_slot`). Not while the
        file is read: Qt items built then competed with the open job's thread for the GIL (a 10 ms PlotItem
        held the GUI thread 85-135 ms, a colour bar 210-290 ms)."""
        return []

    def on_trace_changed(self) -> None:
        pass

    def trace_changed_steps(self):
        """``on_trace_changed`` in pieces, for a big trace: a generator that does what ``on_trace_changed`` does
        and yields between pieces; the view's turn to adopt the trace (:meth:`_adopt_trace`) runs the first piece
        and each further one gets an event-loop turn of its own, the view not painted until the last (its
        current frame drawn then, in a turn of its own when the generator yields last). A view that overrides it
        lets ``on_trace_changed`` run it through. Default: all of ``on_trace_changed`` in one piece."""
        self.on_trace_changed()
        return
        yield

    def on_frame_changed(self) -> None:
        pass

    def on_selection_changed(self) -> None:
        pass

    def on_theme_changed(self) -> None:
        pass

    # ---- plumbing -----------------------------------------------------------------------------------
    def _live(self) -> bool:
        return self.session.trace is not None and self.session.frames is not None and self.session.frames.n_frames > 0

    _trace_stale = False  # a new trace arrived while hidden: on_trace_changed runs when shown

    #: a trace of more events than this, arriving in a window on screen, is adopted by the views on screen one
    #: per event-loop turn (:meth:`Session.later`): each view's rebuild and first paint is a turn of its own,
    #: with input and painting handled between, instead of one turn holding the GUI thread for all of them
    STAGED_EVENTS = 200_000

    def _trace_slot(self) -> None:
        self._drop_adoption()  # a trace adopted in pieces and not finished: this one replaces it
        if self.session.trace is None:
            return
        if not self._started:
            self.start()
            return
        if not self.on_screen() and self.window().isVisible():
            # hidden in a window on screen (a background tab, a closed dock): compute nothing for this trace
            # until shown; a window not shown yet (built for a snapshot or a test) rebuilds at once
            self._trace_stale = True
            self._stale = True
            return
        if self.window().isVisible() and len(self.session.trace) > self.STAGED_EVENTS:
            self._trace_stale = True
            self._stale = True
            for k, step in enumerate(self.warm_up_steps()):
                self.session.later((self, "warm up", k), step)
            self.session.later(self, self._adopt_trace)
            return
        self._trace_stale = False
        self._call(self.on_trace_changed)
        self._restyle_if_stale()
        self._stale = True
        self.keep_labels_whole()

    #: the pieces of the trace's adoption still to run (:meth:`trace_changed_steps`), None when none are
    _adoption = None
    _pieces = 0  # how many of them ran in turns of their own

    def _adopt_trace(self) -> None:
        """This view's turn to adopt the trace on screen (queued by :meth:`_trace_slot`): rebuild, then draw the
        current frame; a view that rebuilds in pieces (:meth:`trace_changed_steps`) runs its first piece here and
        each further one in a later turn (:meth:`_adopt_more`). A view hidden meanwhile waits until it is shown."""
        if not self._trace_stale or self.session.trace is None or not self.on_screen():
            return
        self._adoption = self.trace_changed_steps()
        self._pieces = 0
        # not painted until the last piece is in: the window keeps showing what it showed (as the views still
        # waiting for their turn do), and no turn paints a half-built layout
        self.setUpdatesEnabled(False)
        self._adopt_more()

    def _adopt_more(self) -> None:
        """The next piece of the trace's adoption; once none is left, the current frame drawn."""
        pieces = self._adoption
        if pieces is None:
            return
        try:
            more = next(pieces, StopIteration) is not StopIteration
        except Exception as e:  # noqa: BLE001 - a broken view must not stop the others: it keeps what it built
            more = False
            self._failed(self.trace_changed_steps, e)
        if more and self.session.trace is not None:
            self._pieces += 1
            self.session.later((self, "adopting"), self._adopt_more)
            return
        self._end_adoption()
        if self._live() and self.on_screen():
            self._stale = False
            self._call(self.on_frame_changed)
            self._call(self.on_selection_changed)
        self.keep_labels_whole()
        if self._pieces:
            # painted first now: the session settles once the paint and the layout it asks for (pyqtgraph's axes
            # take the width of the tick texts they drew) are done, as a view adopting in one turn is
            self._pieces = 0
            self.session.later((self, "adopted"), lambda: None)

    def _end_adoption(self) -> None:
        self._adoption = None
        self._trace_stale = False
        if not self.updatesEnabled():
            self.setUpdatesEnabled(True)
        self._restyle_if_stale()

    def _restyle_if_stale(self) -> None:
        """The theme that changed while this view held the previous trace, applied now that it holds the new one."""
        if self._theme_stale:
            self._theme_stale = False
            self._call(self.on_theme_changed)
            opaque_plots(self)

    def _drop_adoption(self) -> None:
        """A piecewise adoption left unfinished (another trace came): its pieces are not run."""
        pieces = self._adoption
        if pieces is not None:
            self._adoption = None
            pieces.close()
            if not self.updatesEnabled():
                self.setUpdatesEnabled(True)

    def _catch_up_trace(self) -> None:
        pieces = self._adoption
        if pieces is not None:  # the trace needed whole now (shown, refreshed, settled): the rest of it at once
            try:
                for _ in pieces:
                    pass
            except Exception as e:  # noqa: BLE001 - kept in view.errors as a hook's error is
                self._failed(self.trace_changed_steps, e)
            self._end_adoption()
        elif self._trace_stale and self.session.trace is not None:
            self._trace_stale = False
            self._call(self.on_trace_changed)
            self._restyle_if_stale()

    def _frame_slot(self, _f: int = 0) -> None:
        if not self._live():
            return
        if not self._started:
            self.start()
            return
        if not self.on_screen():
            self._stale = True  # drawn when it comes to the front (catch_up), not on every frame behind a tab
            return
        if self._trace_stale and (self.session.is_later(self) or self._adoption is not None):
            self._stale = True  # its turn to adopt the new trace is still to come: it draws this frame then
            return
        self._catch_up_trace()
        self._stale = False
        self._call(self.on_frame_changed)

    def _selection_slot(self) -> None:
        if not self._started:
            self.start()
        elif self._trace_stale:
            self._stale = True  # its layout is still the previous trace's: drawn when shown
        elif self._live():
            self._call(self.on_selection_changed)

    #: the theme changed while the view still held the previous trace's layout (hidden behind a tab when a new
    #: trace came): restyled once it has adopted the new one (:meth:`_end_adoption`, :meth:`_catch_up_trace`)
    _theme_stale = False

    def _theme_slot(self) -> None:
        if not self._started:
            self.start()
            return
        if self._trace_stale:
            # its panels are the previous trace's and the session's frames the new one's: a restyle that redraws
            # the current block read the new frames through the old layout (IndexError: index 81920 is out of
            # bounds for axis 0 with size 80896, the shared view hidden while a bigger launch was captured)
            self._theme_stale = True
            self._stale = True
            return
        self._call(self.on_theme_changed)
        opaque_plots(self)
        if self._live() and not self._trace_stale:
            self._call(self.on_frame_changed)
            self._call(self.on_selection_changed)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self._started:
            self.start()
        elif self._stale and self._live():
            if not self.on_screen():
                # shown behind a tab (Qt shows a dock tabbed behind another, off screen) or not placed yet: drawn
                # once the layout has run, if it is on screen then (a tab brought to the front later draws itself)
                QTimer.singleShot(0, self.catch_up)
                return
            self._catch_up_trace()
            self._stale = False
            self._call(self.on_frame_changed)
            self._call(self.on_selection_changed)

    #: the plot keeps at least this height; a legend that would leave it less is hidden
    MIN_PLOT_PX = 60

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.session.note_activity()  # a window being resized is not idle
        self.keep_labels_whole()
        relayout = getattr(self.window(), "plot_relayout", None)
        if relayout is not None and relayout.defers():
            relayout.defer(self, self.plots_resized)  # with the plots, once the window's resizes pause
        else:
            if relayout is not None:
                relayout.done(self)
            self.plots_resized()

    def plots_resized(self) -> None:
        """The view's plots have their new size: fit what depends on it (a range, which labels fit, the columns of
        plots). Called after a resize, once pyqtgraph has laid the plots out (see :class:`PlotRelayout`)."""

    def keep_labels_whole(self) -> None:
        """A wrapped caption or legend keeps the height its text needs at the view's width; the plot below it
        gives the room up. (A short dock squeezed them otherwise: "running now" cut in half.)"""
        legend = getattr(self, "legend", None)
        total = 0
        # the width the labels will have once the layout has run (their own width may still be the old one)
        lay = self.layout()
        m = lay.contentsMargins() if lay is not None else None
        width = self.width() - ((m.left() + m.right()) if m is not None else 0)
        for label in self.findChildren(QLabel):
            parent = label.parentWidget()
            if isinstance(parent, LabelSlot):
                parent = parent.parentWidget()
            if label.wordWrap() and parent is self and (label.isVisibleTo(self) or label is legend):
                if getattr(label, "holds_height", False):  # a frame's header holds its own height (FrameHeader)
                    total += label.height()
                    continue
                need = wrapped_text_height(label, width) if label.text() else 0
                total += need
                if need > 0 and label.minimumHeight() != need:
                    label.setMinimumHeight(need)
                    if isinstance(label.parentWidget(), LabelSlot):
                        label.parentWidget().sync()
        if isinstance(legend, QLabel) and self.height() > 0:
            # a dock too short for its texts and a plot: the colour key goes (its colours are named in the
            # view's tooltip), never the caption, and never a key drawn over the caption
            fits = self.height() - total >= self.MIN_PLOT_PX
            if legend.isVisibleTo(self) != fits:
                legend.setVisible(fits)
                self.setToolTip("" if fits else legend.text())

    def on_screen(self) -> bool:
        """Shown and not hidden behind another tab: Qt keeps a tabbed-behind dock 'visible', off-screen."""
        return self.isVisible() and not self.visibleRegion().isEmpty()

    def catch_up(self) -> None:
        """Brought to the front (a dock tab raised): draw the frames missed while behind."""
        if self._started and self._stale and self._live() and self.on_screen():
            self._catch_up_trace()
            self._stale = False
            self._call(self.on_frame_changed)
            self._call(self.on_selection_changed)

    def refresh(self) -> None:
        """Redraw now, visible or not (snapshots and tests)."""
        if not self._started:
            self.start()
        elif self._live():
            self._catch_up_trace()
            self._stale = False
            self._call(self.on_frame_changed)
            self._call(self.on_selection_changed)


class LabelSlot(QWidget):
    """Stands in a layout for one QLabel whose text changes every frame (a caption, a counter), its child.

    A QLabel's new text asks the layouts above it to run again (Qt's updateGeometry), and they ask theirs:
    the view's, its dock's (which loads the dock title's icons again) and the main window's, for every label
    on every frame, though the text nearly always fits the room it has. The label here has no layout above
    it: the slot sizes it by hand, and passes a change on to its own layout only when the room the label
    asks for differs (its size hints, its height at the slot's width, its minimum and maximum sizes)."""

    def __init__(self, label: QLabel, parent: QWidget | None = None):
        super().__init__(parent if parent is not None else label.parentWidget())
        hidden = label.isHidden() and label.testAttribute(Qt.WidgetAttribute.WA_WState_ExplicitShowHide)
        self.label = label
        label.setParent(self)
        label.move(0, 0)
        self._hints = None
        self.setVisible(not hidden)
        label.setVisible(not hidden)
        label.installEventFilter(self)
        self.sync()

    def _room(self) -> tuple:
        lab = self.label
        lo, hi = lab.minimumSize(), lab.maximumSize()
        if lab.hasHeightForWidth():
            # a wrapped text: the height it needs at the width it has (none, at a fixed height); its size hints
            # (the size it would like unwrapped, the width of its longest word) go with every text and place
            # nothing in a laid-out window
            fixed = lo.height() == hi.height()
            return (lo, hi, lab.sizePolicy(), -1 if fixed or self.width() <= 0 else lab.heightForWidth(self.width()))
        return (lo, hi, lab.sizePolicy(), lab.sizeHint().expandedTo(lo).boundedTo(hi),
                lab.minimumSizeHint().expandedTo(lo).boundedTo(hi))

    def sync(self) -> None:
        """Pass the label's room on to the layout now if it changed (after setting the label's minimum size: the
        layout may be asked for its size before the posted request arrives)."""
        room = self._room()
        if room != self._hints:
            self._hints = room
            lab = self.label
            self.setSizePolicy(lab.sizePolicy())
            self.setMinimumSize(lab.minimumSize())
            self.setMaximumSize(lab.maximumSize())
            self.updateGeometry()

    # the label's room, as the layout asks for it
    def sizeHint(self):
        return self.label.sizeHint()

    def minimumSizeHint(self):
        return self.label.minimumSizeHint()

    def hasHeightForWidth(self) -> bool:
        lab = self.label
        return lab.hasHeightForWidth() and lab.minimumHeight() != lab.maximumHeight()  # a fixed height is fixed

    def heightForWidth(self, width: int) -> int:
        # within the label's own minimum and maximum height, as they are now: the slot's copies of them follow only
        # once the label's posted LayoutRequest arrives (sync). Unbounded, the top bar's two fixed-height lines of
        # text, asked their height at 19 px wide while the window's first layout ran, answered 464 and 364 px: the
        # window's minimum height passed a 720-pixel screen for a moment, and Qt grew the window to it
        # (1767x1241 for 1767x900; 1280x1265 on a 1280x720 screen)
        lab = self.label
        return max(lab.minimumHeight(), min(lab.maximumHeight(), lab.heightForWidth(width)))

    def event(self, ev) -> bool:
        if ev.type() == QEvent.Type.LayoutRequest:  # posted by the label's updateGeometry: did its room change?
            self.sync()
            return True
        return super().event(ev)

    def resizeEvent(self, ev) -> None:
        super().resizeEvent(ev)
        self.label.setGeometry(self.rect())
        self.sync()  # at the new width the label may need another height

    def showEvent(self, ev) -> None:
        super().showEvent(ev)
        self.sync()  # texts set while hidden posted nothing

    def eventFilter(self, obj, ev) -> bool:
        # the label shown or hidden by its owner: so is its place in the layout
        if obj is self.label:
            if ev.type() == QEvent.Type.ShowToParent and self.isHidden():
                self.show()
            elif ev.type() == QEvent.Type.HideToParent and not self.isHidden():
                self.hide()
        return False


class WrappedLabel(QLabel):
    """A word-wrapped QLabel that keeps its height at each width it was asked for, while its text, font and margins
    stay the same.

    QLabel lays its text out again (a QTextDocument, for rich text) on every ``heightForWidth``, and a layout asks at
    several widths per relayout: a scroll area that fits its widget's height asks once with its scroll bar and once
    without, and again for the widget's minimum size (the Details view's two labels: ~7% of a window resize's CPU)."""

    def heightForWidth(self, width: int) -> int:
        m = self.contentsMargins()
        key = (width, self.text(), self.font().key(), self.textFormat(), self.margin(), self.indent(), m.left(),
               m.top(), m.right(), m.bottom())
        cache = self.__dict__.setdefault("_heights", {})
        height = cache.get(key)
        if height is None:
            if len(cache) >= 16:
                cache.clear()
            height = cache[key] = super().heightForWidth(width)
        return height


def slotted(label: QLabel) -> LabelSlot:
    """``label`` in a :class:`LabelSlot`, to add to a layout in its place."""
    return LabelSlot(label)


def lines_height(font, lines: int) -> int:
    """The height ``lines`` lines of text take in ``font``, measured as :func:`wrapped_text_height` measures (a
    QTextDocument: a few pixels more than ``lines`` line spacings, so a floor of line spacings grew by them)."""
    from PySide6.QtGui import QTextDocument

    doc = QTextDocument()
    doc.setDefaultFont(font)
    doc.setDocumentMargin(0)
    doc.setPlainText("\n".join(["Xg"] * max(lines, 1)))
    return int(doc.size().height() + 0.999)


def wrapped_text_height(label: QLabel, width: int) -> int:
    """The height ``label``'s text takes wrapped at ``width`` (QLabel.heightForWidth over-asks, by lines)."""
    from PySide6 import QtGui
    from PySide6.QtCore import Qt as _Qt
    from PySide6.QtGui import QTextDocument

    label.ensurePolished()
    text, font, fmt = label.text(), label.font(), label.textFormat()
    cr = label.contentsMargins()
    # a window resized back and forth (a dragged edge) asks for the same captions at the same widths again, each a
    # QTextDocument laid out: the height is kept by what it depends on alone
    key = (text, font.key(), fmt, width, cr.left(), cr.top(), cr.right(), cr.bottom(), label.margin())
    known = _WRAPPED_HEIGHTS.get(key)
    if known is not None:
        return known
    doc = QTextDocument()
    doc.setDefaultFont(font)
    doc.setDocumentMargin(0)
    rich = fmt == _Qt.TextFormat.RichText or (fmt == _Qt.TextFormat.AutoText and QtGui.Qt.mightBeRichText(text))
    doc.setHtml(text) if rich else doc.setPlainText(text)
    doc.setTextWidth(max(1, width - cr.left() - cr.right() - 2 * label.margin()))
    height = int(doc.size().height() + 0.999) + cr.top() + cr.bottom() + 2 * label.margin()
    if len(_WRAPPED_HEIGHTS) >= 512:
        _WRAPPED_HEIGHTS.pop(next(iter(_WRAPPED_HEIGHTS)))  # the oldest
    _WRAPPED_HEIGHTS[key] = height
    return height


_WRAPPED_HEIGHTS: dict[tuple, int] = {}


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


# ---- helpers for pixel views ----------------------------------------------------------------------
def captioned_layout(view: TraceView) -> tuple[QVBoxLayout, QLabel]:
    """A view's vertical layout with its caption line on top (the caption wraps; themes style it by name)."""
    layout = QVBoxLayout(view)
    layout.setContentsMargins(4, 4, 4, 4)
    layout.setSpacing(2)
    caption = QLabel(view)
    caption.setObjectName("viewTitle")
    caption.setWordWrap(True)
    caption.setTextFormat(Qt.TextFormat.PlainText)  # kernel names, file paths: text from the trace file
    layout.addWidget(slotted(caption))  # its text changes per frame: the window is not laid out again for it
    return layout, caption


def legend_label(view: TraceView) -> QLabel:
    """A view's word-wrapping legend under its plot, on the plot's background (themes style it by name): its
    colour chips stand against the same ground as the cells they name, where the theme's contrast holds."""
    legend = QLabel(view)
    legend.setObjectName("viewLegend")
    legend.setWordWrap(True)
    return legend


def make_image_plot(view: TraceView, with_axes: bool = False) -> tuple[pg.PlotWidget, pg.ImageItem]:
    """An aspect-locked, y-down plot holding one ImageItem, in ``view``'s layout (created if needed).

    The ImageItem is row-major: pass RGBA arrays shaped ``(height, width, 4)``, row 0 at the top.
    Pixel (row r, column c) covers plot coordinates x in [c, c+1], y in [r, r+1].
    """
    plot = pg.PlotWidget(parent=view, enableMenu=False)  # no menus: not even built (a few ms a plot)
    plot.setMenuEnabled(False)
    plot.hideButtons()
    vb = plot.getPlotItem().getViewBox()
    vb.setAspectLocked(True)
    vb.invertY(True)
    vb.setMouseEnabled(x=True, y=True)
    if not with_axes:
        plot.hideAxis("left")
        plot.hideAxis("bottom")
    image = pg.ImageItem(axisOrder="row-major")
    plot.addItem(image)
    layout = view.layout()
    if layout is None:
        layout = QVBoxLayout(view)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
    layout.addWidget(plot)
    return plot, image


def style_plot(plot: pg.PlotWidget, theme) -> None:
    """Theme colours and scaled fonts for a pyqtgraph plot."""
    plot.setBackground(theme.background)
    font = QFont()
    font.setPixelSize(theme.px())
    pi = plot.getPlotItem()
    for name in ("left", "bottom", "right", "top"):
        ax = pi.getAxis(name)
        ax.setPen(pg.mkPen(theme.foreground))
        ax.setTextPen(pg.mkPen(theme.foreground))
        ax.setTickFont(font)
        ax.label.setFont(font)
        thin_tick_labels(ax)


def text_item(text: str, theme, size: float | None = None, color: str | None = None, bold: bool = False,
              anchor=(0, 0)) -> pg.TextItem:
    item = pg.TextItem(text, color=QColor(color or theme.foreground), anchor=anchor)
    font = QFont()
    font.setPixelSize(theme.px(size))
    font.setBold(bold)
    item.setFont(font)
    return item


def outline_pen(color: str, theme, width: float = 3.0) -> "pg.QtGui.QPen":
    pen = pg.mkPen(QColor(color), width=max(1.0, width * theme.scale))
    pen.setCosmetic(True)
    pen.setJoinStyle(Qt.PenJoinStyle.MiterJoin)
    return pen


def rgba_lut(colors: list[str]) -> np.ndarray:
    from ...style.theme import hex_to_rgba

    return np.array([hex_to_rgba(c) for c in colors], dtype=np.uint8)


def legend_html(items: list[tuple[str, str]], theme) -> str:
    """Colour chips with labels, as rich text for a word-wrapping QLabel: ``[(colour, label), ...]``."""
    return " ".join(
        f"<span style='white-space:nowrap'><span style='background-color:{c}'>&nbsp;&nbsp;&nbsp;&nbsp;</span>"
        f"&nbsp;{label}</span>&nbsp;&nbsp;"
        for c, label in items
    )


def thin_tick_labels(axis: pg.AxisItem, gap_px: float = 4.0) -> pg.AxisItem:
    """Draw only the tick labels that fit: a label that would overlap the last one drawn is left out (its
    tick mark stays). Custom ticks (``setTicks``) are all drawn by pyqtgraph, however narrow the plot;
    "0 48121620…" on a 32-bank axis at projector size reads as noise."""
    if getattr(axis, "_gpuviz_thinned", False):
        return axis
    draw_specs = axis.generateDrawSpecs

    def thinned(p):
        specs = draw_specs(p)
        if not specs:
            return specs
        axis_spec, tick_specs, text_specs = specs
        horizontal = axis.orientation in ("top", "bottom")
        kept, last = [], None
        for spec in sorted(text_specs, key=lambda s: s[0].left() if horizontal else s[0].top()):
            r = spec[0]
            lo, hi = (r.left(), r.right()) if horizontal else (r.top(), r.bottom())
            if last is None or lo >= last + gap_px:
                kept.append(spec)
                last = hi
        return axis_spec, tick_specs, kept

    axis.generateDrawSpecs = thinned
    axis._gpuviz_thinned = True
    keep_label_unless_changed(axis)
    return axis


def keep_label_unless_changed(axis: pg.AxisItem) -> pg.AxisItem:
    """The axis title is set again (``setHtml``, and the axis resized to it) only when it would differ.

    pyqtgraph's AxisItem, its SI prefix on (the default), rebuilds its title's HTML and re-sizes itself on every
    range change of its view (``linkedViewChanged`` -> ``updateAutoSIPrefix`` -> ``_updateLabel``), so each
    plot's axes re-laid their titles out on every resize (756 ``setHtml`` in 21 resizes of reduce_sum's window).
    Whatever that re-sizing reads is in the key (the title's text, font and visibility, the tick font, the
    widest and tallest tick text, a fixed size); with all of it the same the axis is only repainted."""
    if getattr(axis, "_gpuviz_label_kept", False):
        return axis
    update_label = axis._updateLabel

    def updated():
        font = axis.style.get("tickFont")
        key = (axis.labelString(), axis.label.font().toString(), axis.label.isVisible(), axis.isVisible(),
               font.toString() if font is not None else None, axis.textWidth, axis.textHeight, axis.fixedWidth,
               axis.fixedHeight)
        if key == axis._gpuviz_label_key:
            axis.picture = None
            axis.update()
            return
        axis._gpuviz_label_key = key
        update_label()

    axis._gpuviz_label_key = None
    axis._updateLabel = updated
    axis._gpuviz_label_kept = True
    return axis


def hide_overlapping_texts(items, gap_px: float = 2.0) -> int:
    """Show each text item unless it would overlap one shown before it (in the order given); returns how
    many are hidden. For labels pinned to data (barrier lines, blocks) that pile up when a plot is narrow."""
    shown_rects = []
    hidden = 0
    for item in items:
        item.setVisible(True)
    for item in items:
        if not item.isVisible() or not item.scene():
            continue
        r = item.sceneBoundingRect().adjusted(-gap_px, -gap_px, gap_px, gap_px)
        if any(r.intersects(o) for o in shown_rects):
            item.setVisible(False)
            hidden += 1
        else:
            shown_rects.append(r)
    return hidden


# ---- dock titles that fit -------------------------------------------------------------------------------
def _title_room(dock) -> int:
    """The width a dock's title bar leaves its title: up to its float and close buttons, less its padding."""
    from PySide6.QtGui import QFontMetrics
    from PySide6.QtWidgets import QAbstractButton

    buttons = [b.x() for b in dock.findChildren(QAbstractButton)
               if b.parent() is dock and b.isVisible() and b.objectName().startswith("qt_dockwidget")]
    pad = QFontMetrics(dock.font()).averageCharWidth()
    return (min(buttons) if buttons else dock.width()) - 2 * pad


def _tab_groups(window) -> list:
    """(tab bar, [dock of each tab]) for every visible tab bar of the window's docks."""
    from PySide6.QtWidgets import QTabBar

    by_title = {}
    for d in window.docks.values():
        by_title.setdefault(d.windowTitle(), d)
    groups = []
    for bar in window.findChildren(QTabBar):
        if bar.parent() is window and bar.isVisible() and bar.count() > 1:
            groups.append((bar, [by_title.get(bar.tabText(i)) for i in range(bar.count())]))
    return groups


def fit_dock_titles(window) -> int:
    """Each dock's full title where it fits both its title bar and its tab, else its view's ``short_title``
    (at a projector's 1280 pixels 'Block: warps x l…' and tabs 'Global mem…', 'Barri…' were cut, at the desk
    'Block: warps x la…' and 'Per l…'); returns how many titles changed."""
    from PySide6.QtGui import QFont, QFontMetrics

    changed = 0

    def full(dock):
        view = dock.widget()
        return getattr(type(view), "title", "") or dock.windowTitle()

    def short(dock):
        return getattr(type(dock.widget()), "short_title", "") or full(dock)

    want = {}
    for dock in window.docks.values():
        if dock.isVisible() and not dock.isFloating() and dock.widget() is not None:
            bold = QFont(dock.font())
            bold.setBold(True)
            fits = QFontMetrics(bold).horizontalAdvance(full(dock)) <= _title_room(dock)
            want[dock] = full(dock) if fits else short(dock)
    for bar, docks in _tab_groups(window):
        fm = QFontMetrics(bar.font())
        need = 0
        for i, dock in enumerate(docks):
            extra = bar.tabSizeHint(i).width() - fm.horizontalAdvance(bar.tabText(i))
            need += extra + fm.horizontalAdvance(full(dock) if dock is not None else bar.tabText(i))
        # the room: the tab bar's, or the dock in front's (a dock behind its tab keeps the width it had when last
        # shown: at the desk's wider column, which left the presenter's tabs 'Global mem…', 'Barri…')
        front = [d.width() for d in docks if d is not None and not d.visibleRegion().isEmpty()]
        if need > max([bar.width()] + front):
            for dock in docks:
                if dock is not None:
                    want[dock] = short(dock)
    for dock, title in want.items():
        if dock.windowTitle() != title:
            dock.setWindowTitle(title)
            changed += 1
    return changed


def restore_dock_titles(window) -> None:
    for dock in window.docks.values():
        view = dock.widget()
        title = getattr(type(view), "title", "")
        if title and dock.windowTitle() != title:
            dock.setWindowTitle(title)
