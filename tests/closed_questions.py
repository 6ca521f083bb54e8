"""What a person sees while a lesson's predict question is open, and whether any of it answers the question.

:func:`visible_texts` collects every text the window shows (labels, the source view's visible lines, the text
drawn in plots, the presenter's caption bar and the lesson panel); :func:`leaks` says which of them give the open
question's answer away, by the rule the lesson player blanks answers with
(:func:`gpuviz.lessons.player.mask_answers`: the answer as shown, or its number followed by its unit or by what
the question counts)."""

from __future__ import annotations

import re

from gpuviz.lessons.player import HIDDEN, mask_answers


def visible_texts(window) -> list[tuple[str, str]]:
    """(where, text) of every text on screen in ``window``."""
    import pyqtgraph as pg
    from PySide6.QtCore import QPoint, QRect
    from PySide6.QtWidgets import QAbstractButton, QLabel, QPlainTextEdit, QTextEdit, QWidget

    out = []
    root_rect = window.rect()
    for w in [window] + window.findChildren(QWidget):
        if w is window or not w.isVisible():
            continue
        if not QRect(w.mapTo(window, QPoint(0, 0)), w.size()).intersects(root_rect):
            continue  # behind a tab
        name = f"{type(w).__name__}#{w.objectName() or '?'}"
        if isinstance(w, QLabel | QAbstractButton):
            out.append((name, w.text()))
        elif isinstance(w, QPlainTextEdit):
            doc, first = w.document(), w.firstVisibleBlock().blockNumber()
            lines = [doc.findBlockByNumber(k).text() for k in range(first, min(first + 60, doc.blockCount()))]
            out.append((name, "\n".join(lines)))
        elif isinstance(w, QTextEdit):
            out.append((name, w.toPlainText()))
        elif isinstance(w, pg.GraphicsView) and w.scene() is not None:
            for item in w.scene().items():
                if item.isVisible() and isinstance(item, pg.TextItem):
                    out.append((f"{name} TextItem", item.toPlainText()))
                elif item.isVisible() and isinstance(item, pg.LabelItem):
                    out.append((f"{name} LabelItem", item.text))
    return [(where, t) for where, t in out if t and t.strip()]


def leaks(texts: list[tuple[str, str]], answer: str, ask: str) -> list[tuple[str, str]]:
    """The texts that would give ``answer`` away while ``ask`` is open: those the lesson player would blank."""
    def plain(t: str) -> str:
        # a launch's shape, "grid (2, 2, 1)", is no answer to a count that closes a bracket, nor a call's number in
        # the source ("cuda.grid(2)", shown once shared_tiling's lit line took one row instead of three)
        return re.sub(r"(?<=\w)\(\d+\)", "(arguments)", re.sub(r"\((\d+, )+\d+\)", "(shape)", t))

    return [(where, t) for where, t in texts if HIDDEN not in t and mask_answers(plain(t), [(answer, ask)]) != plain(t)]
