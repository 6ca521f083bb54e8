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
   (:class:`~gpuviz.ui.views.relayout.PlotRelayout`), and ``plots_resized`` follows them.
4. To select on click, call ``self.session.selection.select_block(b)`` / ``select_warp(b, w)`` /
   ``select_thread(b, t)`` / ``select_cell(array_id, flat_index)``; every view and the details panel
   follow.

An exception in a hook is logged and kept in ``view.errors`` (the view stays up and playback goes on);
tests should assert that list is empty.

Use :func:`~gpuviz.ui.views.plots.make_image_plot` for a pixel view (an aspect-locked, y-down ``PlotWidget`` with an
``ImageItem``) so all views look and zoom alike. Hidden views (a closed or background-tabbed dock) are
not redrawn per frame, and in a window on screen they do not even rebuild for a new trace
(``on_trace_changed``): they catch up when shown.

Beside it: ``plots.py`` (helpers for pixel views: layouts, image plots, legends, axes), ``labels.py`` (labels whose
text changes per frame, wrapped text heights) and ``relayout.py`` (plots laid out once a window's resizes pause).
"""

from __future__ import annotations

import importlib
import logging

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QLabel, QWidget

from ..wheel import wheel_passes_over
from .labels import LabelSlot, OneLineLabel, wrapped_text_height
from .relayout import opaque_plots, relaid_by_window

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
    def prepared(self):
        """The trace on screen prepared (:class:`gpuviz.model.prepared.Prepared`): its frames, phases, reports."""
        return self.session.prepared

    @property
    def frame(self) -> int:
        return self.session.playback.frame

    @property
    def theme(self):
        return self.session.theme

    # ---- hooks: override these -------------------------------------------------------------------
    @classmethod
    def prepare(cls, prepared) -> None:
        """Per-trace numpy work (from ``prepared``, the trace's :class:`~gpuviz.model.prepared.Prepared`) this view's ``on_trace_changed`` needs, done ahead on the thread that opens a
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
    #: presenting a crowded lesson scene: captions and headers on one line, no legend (see :meth:`set_compact`)
    compact = False

    def set_compact(self, on: bool) -> None:
        """Chrome on one line for a view given a strip of a projector (a crowded lesson scene at 1280x720): its
        caption or header one line, led by the view's title (whoever compacts it hides its dock's title bar), cut
        with an ellipsis (whole in its tooltip), its legend left out (in the view's tooltip), so that its plot keeps
        the height. Off: as it was."""
        if on == self.compact:
            return
        self.compact = on
        for label in self.findChildren(OneLineLabel):
            label.set_one_line(on, lead=self.title or self.view_id)
        self.keep_labels_whole()
        self.compact_changed()

    def compact_changed(self) -> None:
        """:attr:`compact` changed: a view with more chrome than its labels (axis titles, margins) fits it."""

    def stacked_height(self, width: int) -> int | None:
        """Compact in a column of views ``width`` wide: the most height its picture can use (a block's 8 warps),
        what it leaves going to the others; None: an even share."""
        return None

    def one_line_px(self) -> int:
        """The height of a one-line caption or header, margins included (for :meth:`stacked_height`)."""
        label = next(iter(self.findChildren(OneLineLabel)), None)
        return label.sizeHint().height() + 8 if label is not None else 0

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
        plots). Called after a resize, once pyqtgraph has laid the plots out (see
        :class:`~gpuviz.ui.views.relayout.PlotRelayout`)."""

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
            fits = self.height() - total >= self.MIN_PLOT_PX and not self.compact
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
