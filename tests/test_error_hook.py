"""An exception in a Qt callback of the window is loud: logged with its traceback to the app's log, shown in the
status line, and under GPUVIZ_STRICT=1 (bench/drive_app.py) the end of the app with status 70."""

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import sys
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QMainWindow
    from gpuviz.app import install_error_reporting

    install_error_reporting()
    app = QApplication(sys.argv[:1])
    w = QMainWindow(); w.show()

    def broken_slot():
        raise ZeroDivisionError("a slot that divides by zero")

    QTimer.singleShot(0, broken_slot)
    QTimer.singleShot(1500, lambda: (print("STATUS:", w.statusBar().currentMessage(), flush=True), app.exit(0)))
    sys.exit(app.exec())
""")


def _run(strict: bool):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    env.pop("GPUVIZ_STRICT", None)
    if strict:
        env["GPUVIZ_STRICT"] = "1"
    return subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("strict", [False, True])
def test_an_exception_in_a_qt_callback_is_logged_with_its_traceback(strict):
    r = _run(strict)
    assert "CRITICAL gpuviz: uncaught exception in a Qt callback" in r.stderr, r.stderr
    assert "Traceback (most recent call last)" in r.stderr and "in broken_slot" in r.stderr
    assert "ZeroDivisionError: a slot that divides by zero" in r.stderr
    if strict:  # the first failure ends a scripted session
        assert r.returncode == 70 and "STATUS:" not in r.stdout
    else:  # a person's session carries on, and the window says what happened
        assert r.returncode == 0
        assert "STATUS: internal error: ZeroDivisionError: a slot that divides by zero" in r.stdout


def test_the_hook_leaves_keyboard_interrupt_to_python(monkeypatch):
    from gpuviz import app

    seen = []
    monkeypatch.setattr(sys, "__excepthook__", lambda *a: seen.append(a[0]))
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("gpuviz").addHandler(handler)
    try:
        app.report_uncaught(KeyboardInterrupt, KeyboardInterrupt(), None)
    finally:
        logging.getLogger("gpuviz").removeHandler(handler)
    assert seen == [KeyboardInterrupt] and records == []
