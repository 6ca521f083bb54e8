"""File ▸ Share with the class… (and ``gpuviz --present --share``): the window's side of :mod:`gpuviz.share`.

    controller = share_with_class(window, lan=True)    # the server, and the dialog with the URL and its QR code
    controller.polls.counts()                          # the open question's answers: {"n", "distribution"}
    controller.stop()                                  # also when the window closes

The controller watches the window (its frame, selection, theme, trace and lesson, through the session's signals and the
lesson player's observer) and publishes the presenter's state on every change; the server sends it on its own
thread, so the window never waits for a page. When the window shows another trace or lesson, the page is built
anew (on the server's worker thread) and every page reloads.
"""

from __future__ import annotations

import io
import logging

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QFont, QPixmap
from PySide6.QtWidgets import (QCheckBox, QDialog, QFileDialog, QHBoxLayout, QLabel, QPushButton, QVBoxLayout)

from ..export.html import MAX_FRAMES_WITHOUT_RANGE, lesson_page_data, trace_page_data
from ..lessons.player import LessonPlayer

__all__ = ["ShareController", "ShareDialog", "export_polls_dialog", "qr_pixmap", "share_with_class"]

log = logging.getLogger("gpuviz.share")

#: the QR code's side on screen, in pixels: scannable from the back of a room when projected
QR_PX = 520
#: a trace with more frames than the HTML page takes whole is served as this many frames around the presenter's
SERVED_FRAMES = 5000


def qr_pixmap(text: str, px: int = QR_PX) -> QPixmap:
    """``text`` as a QR code (segno), black on white with its quiet zone, about ``px`` pixels a side."""
    import segno

    qr = segno.make(text, error="m")
    side = qr.symbol_size(scale=1, border=4)[0]
    buf = io.BytesIO()
    qr.save(buf, kind="png", scale=max(2, px // side), border=4, dark="#000000", light="#ffffff")
    pm = QPixmap()
    pm.loadFromData(buf.getvalue(), "PNG")
    return pm


def _trace_builder(prepared, narrator, frame: int, theme: str):
    def build(ws_origin: str):
        from ..share.page import served_page  # gpuviz.share loads websockets: when a share starts, not with the window

        n = prepared.frames.n_frames
        rng = None
        if n > MAX_FRAMES_WITHOUT_RANGE:
            first = max(0, min(n - SERVED_FRAMES, frame - SERVED_FRAMES // 2))
            rng = (first, min(n, first + SERVED_FRAMES))
        data = trace_page_data(prepared, rng, narrator=narrator)
        return served_page(data, theme, ws_origin), {}
    return build


def _lesson_builder(controller, theme: str, done):
    lesson, source = controller.lesson, controller.player

    def build(ws_origin: str):
        from ..share.page import served_page, strip_answers  # websockets, as above

        # a player of its own (play_all walks every beat: the window's player must not move), with the scenes
        # the window has captured already
        player = LessonPlayer(lesson, loader=source.loader)
        player._loaded.update(source._loaded)
        data = lesson_page_data(lesson, player)
        offsets, n = [], 0
        for i in range(len(lesson.scenes)):
            offsets.append(n)
            n += len(player.load(i).beats)
        served, reveals = strip_answers(data, lesson)
        html = served_page(served, theme, ws_origin)
        done(offsets)
        return html, reveals
    return build


class ShareController(QObject):
    """One share of one window: its server, and the state it publishes. Use :func:`share_with_class`."""

    #: the lesson's page is built (on the server's worker thread): the beats' numbering is known
    offsets_ready = Signal()

    def __init__(self, window, lan: bool = False, port: int = 0):
        super().__init__(window)
        from ..share.server import ShareServer  # websockets loads when a share starts, not with the window

        self.window = window
        self.lan = lan
        self.server = ShareServer(lan=lan, port=port)
        self._key = None
        self._offsets: list[int] | None = None
        self._last = None
        self._observed = None
        self._unobserve = None
        self._question = None

    @property
    def polls(self):
        return self.server.polls

    @property
    def url(self) -> str:
        return self.server.url

    def start(self) -> "ShareController":
        self._key, builder = self._page()
        self.server.start(builder)
        s = self.window.session
        s.frame_changed.connect(self.push)
        s.selection_changed.connect(self.push)
        s.theme_changed.connect(self.push)
        s.trace_changed.connect(self.push)
        self.offsets_ready.connect(self.push)
        self.window.installEventFilter(self)
        self.push()
        return self

    def stop(self) -> None:
        s = self.window.session
        for sig in (s.frame_changed, s.selection_changed, s.theme_changed, s.trace_changed):
            try:
                sig.disconnect(self.push)
            except (RuntimeError, TypeError):  # not connected, or already gone with the window
                pass
        if self._unobserve is not None:
            self._unobserve()
            self._unobserve = None
        self.window.removeEventFilter(self)
        self.server.stop()

    def eventFilter(self, obj, ev) -> bool:
        if obj is self.window and ev.type() == QEvent.Type.Close:
            self.stop()  # the server stops with the window
        return False

    # ---- what is on screen ------------------------------------------------------------------------------------
    def _theme(self) -> str:
        return "dark" if self.window.session.theme.dark else "light"

    def _page(self):
        """(key, builder) of the page of what the window shows now."""
        w, s = self.window, self.window.session
        ctl = w.lesson
        if ctl is not None:
            self._offsets = None
            return ("lesson", id(ctl)), _lesson_builder(ctl, self._theme(), self._set_offsets)
        narrator = getattr(w, "_narrator", None)
        if getattr(w, "_narrator_frames", None) is not s.frames:
            narrator = None  # the page narrates the launch itself (as File ▸ Export an HTML page does)
        return ("trace", id(s.trace)), _trace_builder(s.prepared, narrator, s.frame, self._theme())

    def _set_offsets(self, offsets: list[int]) -> None:
        self._offsets = offsets  # from the server's worker thread: one assignment, and a queued signal
        self.offsets_ready.emit()

    def push(self, *_) -> None:
        """Publish the presenter's state if it changed (a new trace or lesson: a new page first)."""
        w, s = self.window, self.window.session
        if not self.server.running or s.trace is None or s.frames is None:
            return
        ctl = w.lesson
        if (ctl is not None) != (self._key is not None and self._key[0] == "lesson") or (
                ctl is not None and self._key != ("lesson", id(ctl))) or (
                ctl is None and self._key != ("trace", id(s.trace))):
            self._key, builder = self._page()
            self._last = None
            self.server.set_page(builder)
        if ctl is not self._observed:
            if self._unobserve is not None:
                self._unobserve()
            self._observed = ctl
            self._unobserve = ctl.player.observe(lambda _what: self.push()) if ctl is not None else None
        sel = s.selection
        state = dict(frame=s.frame, theme=self._theme(),
                     selection=None if sel.block is None else (sel.block, sel.thread))
        question, reveal, correct = None, (), ""
        if ctl is not None and self._offsets is not None:
            pl = ctl.player
            beat = pl.beat
            flat = self._offsets[pl.scene_index] + pl.beat_index
            state.update(scene=pl.scene_index, beat=flat)
            if beat.question is not None:
                k = next(i for i, q in enumerate(pl.current.scene.questions) if q is beat.question)
                qid = f"scene{pl.scene_index + 1}-q{k + 1}"
                if beat.revealed:
                    reveal = (flat,)
                    correct = pl.slide().answer.partition(". ")[0]
                else:
                    question = {"id": qid, "ask": beat.question.ask}
        self._track_poll(question, correct)
        key = (tuple(sorted(state.items())), question and question["id"], reveal)
        if key == self._last:
            return
        self._last = key
        self.server.publish(question=question, reveal_beats=reveal, **state)

    def _track_poll(self, question, correct: str) -> None:
        polls = self.polls
        if question is not None:
            if polls.open_question != question["id"]:
                polls.open(question["id"], question["ask"])
        elif polls.open_question is not None:
            polls.close(correct)

    # ---- the room ---------------------------------------------------------------------------------------------
    def counts_text(self) -> str:
        """The open question's answers in words (the dialog shows it), "" when no question is open."""
        if self.polls.open_question is None:
            return ""
        c = self.polls.counts()
        dist = " · ".join(f"{v}: {n}" for v, n in c["distribution"].items())
        return (f"Predict: {c['ask']}\n{c['n']} answer{'' if c['n'] == 1 else 's'}" + (f" — {dist}" if dist else ""))


class ShareDialog(QDialog):
    """The join link in large text and as a QR code, how many pages follow, and the open question's answers."""

    def __init__(self, window, controller: ShareController):
        super().__init__(window)
        self.setWindowTitle("Share with the class")
        self.window_ = window
        self.controller = controller
        lay = QVBoxLayout(self)
        self.how = QLabel("Students open this address (or scan the code) on the same network; nothing to install. "
                          "They follow your frame; F lets them step alone and come back.")
        self.how.setWordWrap(True)
        lay.addWidget(self.how)
        self.url = QLabel()
        self.url.setTextFormat(Qt.TextFormat.PlainText)
        self.url.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        f = QFont(self.url.font())
        f.setPixelSize(26)
        f.setBold(True)
        self.url.setFont(f)
        self.url.setWordWrap(True)
        lay.addWidget(self.url)
        self.qr = QLabel()
        self.qr.setAlignment(Qt.AlignmentFlag.AlignCenter)
        lay.addWidget(self.qr)
        from ..share.server import lan_address  # websockets, as above

        self.lan = QCheckBox(f"On the LAN ({lan_address()}): students' devices can reach it (otherwise only this "
                             f"machine)")
        self.lan.setChecked(controller.lan)
        self.lan.toggled.connect(self._lan_toggled)
        lay.addWidget(self.lan)
        self.room = QLabel()
        self.room.setTextFormat(Qt.TextFormat.PlainText)
        self.room.setWordWrap(True)
        f2 = QFont(self.room.font())
        f2.setPixelSize(20)
        self.room.setFont(f2)
        lay.addWidget(self.room)
        row = QHBoxLayout()
        self.csv = QPushButton("Export the answers (CSV)…")
        self.csv.clicked.connect(lambda: export_polls_dialog(window))
        self.stop_button = QPushButton("Stop sharing")
        self.stop_button.clicked.connect(self._stop)
        row.addWidget(self.csv)
        row.addStretch(1)
        row.addWidget(self.stop_button)
        lay.addLayout(row)
        self.timer = QTimer(self)
        self.timer.setInterval(300)
        self.timer.timeout.connect(self.refresh)
        self.timer.start()
        self.show_link()

    def show_link(self) -> None:
        self.url.setText(self.controller.url)
        self.qr.setPixmap(qr_pixmap(self.controller.url))
        self.refresh()

    def refresh(self) -> None:
        c = self.controller
        n = c.server.n_clients
        text = f"{n} page{'' if n == 1 else 's'} connected"
        counts = c.counts_text()
        self.room.setText(text + ("\n" + counts if counts else ""))

    def _lan_toggled(self, on: bool) -> None:
        ctl = restart_share(self.window_, lan=on)
        self.controller = ctl
        self.show_link()

    def _stop(self) -> None:
        stop_share(self.window_)
        self.close()

    def closeEvent(self, ev) -> None:
        self.timer.stop()
        super().closeEvent(ev)


def sharing(window) -> ShareController | None:
    """The window's share, or None."""
    ctl = getattr(window, "_gpuviz_share", None)
    return ctl if ctl is not None and ctl.server.running else None


def stop_share(window) -> None:
    ctl = getattr(window, "_gpuviz_share", None)
    if ctl is not None:
        ctl.stop()
    window._gpuviz_polls = ctl.polls if ctl is not None else getattr(window, "_gpuviz_polls", None)
    window._gpuviz_share = None


def restart_share(window, lan: bool) -> ShareController:
    stop_share(window)
    ctl = ShareController(window, lan=lan).start()
    window._gpuviz_share = ctl
    return ctl


def share_with_class(window, lan: bool = False, dialog: bool = True) -> ShareController | None:
    """Start sharing ``window`` (or keep its share) and show the dialog; None (and a message) when it cannot."""
    s = window.session
    if s.trace is None or s.frames is None or not s.frames.n_frames:
        window.launch_panel.show_error("There is nothing to share: open or capture a launch, or play a lesson, first.")
        return None
    ctl = sharing(window)
    if ctl is None:
        try:
            ctl = restart_share(window, lan=lan)
        except OSError as e:
            window.launch_panel.show_error(f"Could not share with the class: {e}")
            return None
    if dialog:
        dlg = getattr(window, "_gpuviz_share_dialog", None)
        if dlg is None:
            dlg = window._gpuviz_share_dialog = ShareDialog(window, ctl)
        else:
            dlg.controller = ctl
            dlg.show_link()
        dlg.show()
        dlg.raise_()
    window.statusBar().showMessage(f"sharing at {ctl.url}", 15000)
    return ctl


def export_polls_dialog(window, path: str | None = None):
    """File ▸ Export the class's answers (CSV)…: every question's answers, counted; returns the path written."""
    from ..share.protocol import write_polls_csv  # gpuviz.share loads websockets: only when answers are exported

    ctl = getattr(window, "_gpuviz_share", None)
    polls = ctl.polls if ctl is not None else getattr(window, "_gpuviz_polls", None)
    if polls is None or not polls.questions():
        window.statusBar().showMessage("No answers yet: share with the class (File ▸ Share with the class…) "
                                       "and ask a lesson's predict question first", 10000)
        return None
    if path is None:
        path, _ = QFileDialog.getSaveFileName(window, "Export the class's answers", "answers.csv", "CSV (*.csv)")
        if not path:
            return None
    try:
        write_polls_csv(polls, path)
    except (OSError, ValueError) as e:  # the disk, or OutputPathError: not a file we may write
        window.launch_panel.show_error(f"Could not write {path}: {e}")
        return None
    window.statusBar().showMessage(f"saved the answers to {path}", 10000)
    return path
