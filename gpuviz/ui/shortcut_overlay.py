"""The keyboard shortcuts overlay (F1 or ?): every key binding of the window's action registry and of presenter mode,
large, over the window.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QGridLayout, QLabel, QMainWindow, QWidget


class ShortcutOverlay(QWidget):
    """Every key binding, large, over the window (F1 or ? shows it; any key or click hides it)."""

    def __init__(self, window: QMainWindow):
        super().__init__(window)
        self.window_ = window
        self.setAutoFillBackground(True)
        self.label = QLabel(self)
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        lay = QGridLayout(self)
        lay.addWidget(self.label, 0, 0, Qt.AlignmentFlag.AlignCenter)
        self.hide()

    def _html(self, px: int, per_row: int) -> str:
        t = self.window_.session.theme
        groups: dict[str, list] = {}
        for group, text, keys in self.window_.actions.help_rows():
            groups.setdefault(group, []).append((html.escape(text), html.escape(keys)))
        # its own keys (B blanks the screen) were missing here. Imported here: the presenter module loads when
        # someone presents (or asks for this overlay), not with the window (tests/test_startup.py)
        from .presenter import PRESENTER_HELP

        for text, keys in PRESENTER_HELP:
            groups.setdefault("Presenter mode (F5)", []).append((html.escape(text), html.escape(keys)))
        cells = []
        for group, rows in groups.items():
            body = "".join(
                f"<tr><td style='padding:1px 14px 1px 0'><b>{keys}</b></td><td>{text}</td></tr>" for text, keys in rows
            )
            cells.append(f"<td style='vertical-align:top; padding:0 20px 10px 0'><h3>{group}</h3><table>{body}</table></td>")
        rows = "".join(f"<tr>{''.join(cells[i:i + per_row])}</tr>" for i in range(0, len(cells), per_row))
        return (f"<div style='font-size:{px}px; color:{t.foreground}'>"
                f"<h2>Keyboard shortcuts</h2><table>{rows}</table>"
                f"<p style='color:{t.muted}'>Press any key or click to close.</p></div>")

    def refresh(self) -> None:
        """Every shortcut, as large as the window allows: the groups side by side, or two by two, and the
        text smaller (never below 12 px) until it fits the window."""
        t = self.window_.session.theme
        self.setStyleSheet(f"ShortcutOverlay {{ background: {t.background}; }} QLabel {{ background: {t.background}; }}")
        room = self.window_.rect().size()
        n_groups = len({g for g, _, _ in self.window_.actions.help_rows()} | {"Presenter mode (F5)"})
        px = t.px(18)
        best = None
        while True:
            for per_row in dict.fromkeys((n_groups, 3, 2, 1)):  # three a row: the presenter's group fits under
                self.label.setText(self._html(px, per_row))
                hint = self.label.sizeHint()
                if hint.width() <= room.width() - 16 and hint.height() <= room.height() - 16:
                    return
                best = best or (px, per_row)
            if px <= 12:
                break
            px = max(12, int(px * 0.9))
        self.label.setText(self._html(12, 3))

    def show_over(self) -> None:
        self.refresh()
        self.setGeometry(self.window_.rect())
        self.raise_()
        self.show()
        self.setFocus()

    def paintEvent(self, ev) -> None:
        # a plain QWidget draws no style-sheet background: without this the docks showed through the overlay
        p = QPainter(self)
        p.fillRect(self.rect(), QColor(self.window_.session.theme.background))
        p.end()

    def keyPressEvent(self, ev) -> None:
        self.hide()

    def mousePressEvent(self, ev) -> None:
        self.hide()
