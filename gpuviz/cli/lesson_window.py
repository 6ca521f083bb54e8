"""``gpuviz lesson``'s window: the lesson played in the main window (presenting with ``--present``). Qt, and the
presenter that the lesson player drives, load with this module only (:mod:`gpuviz.cli.lesson` imports it when a
window is asked for)."""

from __future__ import annotations

import sys

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMessageBox

from ..app import fit_to_screen, install_error_reporting
from ..lessons import LessonError
from ..qt_platform import ensure_platform
from ..style.theme import get_theme
from ..ui.lesson_player import play_lesson
from ..ui.window import MainWindow


def play_lesson_window(lesson, present: bool, theme: str) -> int:
    install_error_reporting()
    if QApplication.instance() is None:
        ensure_platform()  # a platform plugin that cannot load is a plain message with its fix, not Qt's abort
    app = QApplication.instance() or QApplication(sys.argv[:1])

    window = MainWindow(theme=get_theme(theme))
    fit_to_screen(window)  # a 1280x720 projector gets a window that fits it
    window.show()
    try:
        play_lesson(window, lesson, present=present, theme=theme)
    except LessonError as exc:
        box = QMessageBox(QMessageBox.Icon.Critical, "gpuviz lesson", str(exc), parent=window)
        box.setTextFormat(Qt.TextFormat.PlainText)  # the message quotes the lesson file: never rich text
        box.exec()
        print(f"gpuviz lesson: {exc}", file=sys.stderr)
        return 1
    return app.exec()
