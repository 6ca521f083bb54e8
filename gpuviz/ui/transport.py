"""The main window's transport bar: the playback buttons from the action registry, the frame slider, the frame counter
and the speed, with short labels where the full ones do not fit the window's width (a mixin of
:class:`~gpuviz.ui.window.MainWindow`).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSizePolicy, QSlider, QToolBar, QToolButton

from .views.labels import slotted


class TransportMixin:
    """The transport bar of :class:`~gpuviz.ui.window.MainWindow`."""

    #: toolbar labels of the transport's buttons when the full ones do not fit (1280 wide, bigger text):
    #: symbols everyone reads for play / first / last; the words that say what a jump skips to stay
    _COMPACT_ICON_TEXT = {
        "playback.play": "▶",
        "playback.first": "|◀",
        "playback.last": "▶|",
    }

    #: the slider keeps at least this much room; the labels get shorter before it gets narrower
    SLIDER_MIN_WIDTH = 200

    # a window narrower than a 1280-wide screen (a window manager's frame, half a screen): the slider gives up
    # room, down to this, before the speed control is pushed into the bar's overflow menu
    SLIDER_LEAST_WIDTH = 80

    def _build_transport(self) -> None:
        bar = QToolBar("Playback", self)
        bar.setObjectName("toolbar_playback")
        bar.setMovable(False)
        bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        for a in self.actions:
            if a.in_toolbar:
                bar.addAction(self.actions.qaction(a.id))
        self.slider = QSlider(Qt.Orientation.Horizontal, bar)
        self.slider.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.slider.setMinimumWidth(self.SLIDER_MIN_WIDTH)
        self.slider.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.slider.valueChanged.connect(self._scrub)
        bar.addWidget(self.slider)
        self.counter = QLabel("", bar)
        self.counter.setObjectName("frameCounter")
        self.counter.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        bar.addWidget(slotted(self.counter))  # as wide as the widest count: a new count lays nothing out again
        bar.addAction(self.actions.qaction("playback.slower"))
        self.speed_label = QLabel("", bar)
        self.speed_label.setObjectName("speedLabel")
        self.speed_label.setToolTip("playback speed: frames shown per second (− slower, + faster)")
        bar.addWidget(self.speed_label)
        bar.addAction(self.actions.qaction("playback.faster"))
        bar.addSeparator()
        bar.addAction(self.actions.qaction("file.share"))  # the class share's button: File ▸ Share with the class…
        for w in bar.findChildren(QToolButton):
            w.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.addToolBar(Qt.ToolBarArea.BottomToolBarArea, bar)
        self.transport = bar
        self.transport_compact = False  # short labels on: the full ones did not fit the window's width
        self._transport_fit_key = None
        self._label_transport()

    def _label_transport(self) -> None:
        """Put the labels of the current mode (full or compact) on the transport bar."""
        compact = self.transport_compact
        for aid, short in self._COMPACT_ICON_TEXT.items():
            full = self.actions[aid].icon_text
            if aid == "playback.play" and self.session.playback.playing:
                full, short = "❚❚ Pause", "❚❚"
            self.actions.qaction(aid).setIconText(short if compact else full)
        rate = f"{self.session.playback.rate:g}"
        self.speed_label.setText(f"{rate} fps" if compact else f"{rate} frames/s")
        s = self.session
        n = s.frames.n_frames if s.frames is not None else 0
        # as wide as the widest counter of this trace: the slider must not twitch while frames play
        widest = self._counter_text(n - 1, n) if n else ""
        self.counter.setMinimumWidth(self.counter.fontMetrics().horizontalAdvance(widest))
        self.counter.parentWidget().sync()  # its slot's width now: the bar's width is measured next
        self._label_counter()

    def _counter_text(self, f: int, n: int) -> str:
        return f"{f + 1:,} / {n:,}" if self.transport_compact else f"frame {f + 1:,} / {n:,}"

    def _label_counter(self) -> None:
        s = self.session
        if s.frames is None:
            return
        f, n = s.frame, s.frames.n_frames
        self.counter.setText(self._counter_text(f, n))
        self.counter.setToolTip(f"frame {f + 1:,} of {n:,}")

    def _transport_width(self, compact: bool) -> int:
        """The width the transport bar asks for with the full or the compact labels."""
        self.transport_compact = compact
        self._label_transport()
        self.transport.layout().invalidate()
        return self.transport.sizeHint().width()

    def _fit_transport(self) -> None:
        """Full labels when they fit the window's width with the slider at its minimum, else compact ones,
        so the speed control is never pushed off the bar (into the overflow menu) on a 1280-wide screen.
        The width the bar asks for with each set of labels is measured again only when it may change (the text
        size, the frame count: the counter's width, playing or not, the rate); a new window width only picks the
        labels and the slider's minimum from them. (Measuring lays the bar out again, and then the whole window:
        on every resize, a second layout pass of every dock.)"""
        s = self.session
        key = (s.theme.scale, s.frames.n_frames if s.frames is not None else 0, s.playback.playing, s.playback.rate)
        if key != self._transport_fit_key:
            self._transport_fit_key = key
            self.slider.setMinimumWidth(self.SLIDER_MIN_WIDTH)
            self._transport_widths = (self._transport_width(False), self._transport_width(True))
        full, short = self._transport_widths
        self.transport_compact = full > self.width()
        self._label_transport()
        least = self.SLIDER_MIN_WIDTH
        if self.transport_compact and short > self.width():
            least = max(self.SLIDER_LEAST_WIDTH, self.SLIDER_MIN_WIDTH - (short - self.width()))
        if self.slider.minimumWidth() != least:
            self.slider.setMinimumWidth(least)

    def _scrub(self, value: int) -> None:
        s = self.session
        s.playback.pause()
        s.set_frame(value)
