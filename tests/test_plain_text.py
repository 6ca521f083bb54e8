"""Names and texts from files are shown as text, never as Qt rich text.

A trace whose array is named ``<img src=...>`` (and whose kernel, source file and warnings hold tags)
is opened in the full window and stepped to frames that touch that array; every label, tooltip and
graphics text item is then read back: none may hold the tags as markup (which is how Qt would load
the image), and the name must be on screen literally.
"""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtGui import QTextDocument  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import Qt as GuiQt  # noqa: E402
from PySide6.QtWidgets import QGraphicsTextItem, QGraphicsView, QLabel, QTreeWidget, QWidget  # noqa: E402

from gpuviz.ui.plaintext import esc, plain_tooltip  # noqa: E402

try:
    from tests.fuzzing import HOSTILE_NAME, _synthetic
except ImportError:  # tests/ not a package in this checkout
    from fuzzing import HOSTILE_NAME, _synthetic

KERNEL = "<b>bold</b>_kernel"
SOURCE_FILE = "<i>/tmp/a.py</i>"
RAW = ("<img", "<b>bold", "<i>/tmp")  # markup that could only have come from the file


def _hostile_trace():
    tr = _synthetic(kernel=KERNEL, hostile=True, n_blocks=2, tpb=32)
    return tr.with_launch(source_file=SOURCE_FILE, warnings=[f"warning about {HOSTILE_NAME}"])


def _is_rich(widget_format, text: str) -> bool:
    return widget_format == Qt.TextFormat.RichText or (widget_format == Qt.TextFormat.AutoText
                                                       and GuiQt.mightBeRichText(text))


def _rendered(html: str) -> str:
    doc = QTextDocument()
    doc.setHtml(html)
    return doc.toPlainText()


def _shown_texts(root: QWidget) -> list[str]:
    """Everything the window shows as text, as a reader sees it; fails on markup that came from the file."""
    shown = []
    widgets = [root, *root.findChildren(QWidget)]
    for w in widgets:
        if isinstance(w, QLabel) and w.text():
            t = w.text()
            if _is_rich(w.textFormat(), t):
                assert not any(m in t for m in RAW), (type(w).__name__, w.objectName(), t[:300])
                shown.append(_rendered(t))
            else:
                shown.append(t)
        tip = w.toolTip()
        if tip and GuiQt.mightBeRichText(tip):
            assert not any(m in tip for m in RAW), (type(w).__name__, tip[:300])
        if isinstance(w, QTreeWidget):
            for i in range(w.topLevelItemCount()):
                item = w.topLevelItem(i)
                for c in range(w.columnCount()):
                    t = item.toolTip(c)
                    assert not (t and GuiQt.mightBeRichText(t) and any(m in t for m in RAW)), t[:300]
        if isinstance(w, QGraphicsView) and w.scene() is not None:
            for item in w.scene().items():
                if isinstance(item, QGraphicsTextItem):
                    html = item.toHtml()
                    assert not any(m in html for m in RAW), html[:300]
                    shown.append(item.toPlainText())
    return shown


def test_helpers_escape_and_force_literal_tooltips():
    assert esc("<img src='x'>") == "&lt;img src=&#x27;x&#x27;&gt;"
    tip = plain_tooltip("a <b>\nb")
    assert tip.startswith("<qt>") and "<b>" not in tip and _rendered(tip) == "a <b>\nb"
    assert plain_tooltip("") == ""


def test_a_trace_with_markup_in_its_names_renders_them_literally(qtbot):
    from gpuviz.ui.window import MainWindow

    tr = _hostile_trace()
    w = MainWindow(tr)
    qtbot.addWidget(w)
    w.resize(1600, 900)
    w.show()
    qtbot.waitExposed(w)
    w.arrange_default()
    frames = w.session.frames
    seen = []
    # step through every frame of the first block: some touch the hostile array (its loads)
    for f in range(min(frames.n_frames, 12)):
        w.session.set_frame(f)
        qtbot.wait(5)
        seen.extend(_shown_texts(w))
    # the memory view in its own window too (undocked, its header says the frame and names the array)
    from gpuviz.ui.session import Session
    from gpuviz.ui.views.base import available_views

    s = Session()
    s.set_trace(tr, "hostile")
    for vid in ("memory", "shared", "grid", "source", "details"):
        view = available_views()[vid](s)
        qtbot.addWidget(view)
        view.resize(900, 600)
        view.show()
        for f in range(min(s.frames.n_frames, 8)):
            s.set_frame(f)
            view.refresh()
            seen.extend(_shown_texts(view))
        view.close()
    s.shutdown()
    text = "\n".join(seen)
    assert HOSTILE_NAME in text  # the array's name, literally, as its title and in the headers
    assert KERNEL in text  # the kernel's name, tags and all, not a bold "bold"
    assert SOURCE_FILE in text
    w.close()


def test_the_window_saves_pictures_only_to_regular_files(qtbot, tmp_path, monkeypatch):
    import os
    import stat

    from PySide6.QtWidgets import QFileDialog

    from gpuviz.model.safewrite import current_umask
    from gpuviz.ui.window import MainWindow

    w = MainWindow(_hostile_trace())
    qtbot.addWidget(w)
    w.resize(800, 600)
    w.show()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    errors = []
    monkeypatch.setattr(w.launch_panel, "show_error", errors.append)
    for target in (fifo, tmp_path / "shot.png"):
        monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, _t=target, **k: (str(_t), "")))
        w.snapshot_dialog()
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and len(errors) == 1 and "FIFO" in errors[0]
    png = tmp_path / "shot.png"
    assert png.read_bytes()[:4] == b"\x89PNG" and stat.S_IMODE(png.stat().st_mode) == 0o666 & ~current_umask()
    w.close()
