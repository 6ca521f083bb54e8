"""A frame reached by a jump (the slider dragged, End, Home) shows exactly what stepping to it frame by frame shows.

The window's views keep state between frames (the memory view's running counts and the pixels it repaints
incrementally, the labels that only pass a new size on): this drives the real window as a person does, with
keys and the slider, and compares what the views hold at each frame either way.
"""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from gpuviz.model.trace import EventKind as K
from gpuviz.ui.window import MainWindow

pytest.importorskip("pytestqt")


def memory_state(w: MainWindow) -> dict:
    """What the global memory view shows: each panel's pixels, the counts behind them, its header."""
    view = w.views["memory"]
    counts = view._counts.counts_at(w.session.frame)
    out = {"header": view.header.text()}
    for p in view._panels:
        out[p.info.name] = (p.buffer.copy(), counts[view._counts.slice_of(p.array_id)].copy())
    return out


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        a[k] == b[k] if isinstance(a[k], str) else all((x == y).all() for x, y in zip(a[k], b[k])) for k in a)


@pytest.mark.parametrize("repaint", ["changed cells", "every cell"])
def test_jumps_show_what_stepping_shows_in_the_memory_view(window, qtbot, repaint):
    w = window
    view = w.views["memory"]
    if repaint == "every cell":
        view._INCREMENTAL_EVENTS = 0  # a jump of more than a few events repaints every cell (as at a million)
    assert view.on_screen() and view._panels  # drawn per frame, in the window's default layout
    n = w.session.frames.n_frames
    rng = np.random.default_rng(11)
    targets = sorted({int(f) for f in rng.integers(1, n - 1, 16)})
    jumped = {}
    for f in rng.permutation(targets):  # the slider dragged there, back and forth
        w.slider.setValue(int(f))
        QApplication.processEvents()
        assert w.session.frame == f
        jumped[int(f)] = memory_state(w)
    qtbot.keyClick(w, Qt.Key.Key_End)
    QApplication.processEvents()
    jumped[n - 1] = memory_state(w)
    qtbot.keyClick(w, Qt.Key.Key_Home)
    QApplication.processEvents()
    assert w.session.frame == 0
    # now every frame in turn, with the arrow key, comparing at each frame a jump reached
    compared = 0
    lit = 0
    for f in range(1, n):
        qtbot.keyClick(w, Qt.Key.Key_Right)
        assert w.session.frame == f
        if f in jumped:
            QApplication.processEvents()
            assert same(memory_state(w), jumped[f]), f"frame {f}: a jump and stepping show different memory"
            compared += 1
            lit += int(w.session.frames.kind[f]) in (K.GLOBAL_LOAD, K.GLOBAL_STORE)
    assert compared == len(jumped)
    assert lit > 0  # some compared frames light cells of the current access too
    # the heat map at the end holds every access: nothing dropped by either way of getting there
    total = sum(int(c.sum()) for k, v in jumped[n - 1].items() if k != "header" for c in [v[1]])
    assert total == len(view._counts.cells)


class _LayoutRequests:
    """Counts the layout requests the main window and its docks receive (each one lays the window out again)."""

    def __init__(self, w: MainWindow):
        from PySide6.QtCore import QEvent, QObject

        self.n = 0
        counter = self

        class Filter(QObject):
            def eventFilter(self, obj, ev):
                if ev.type() == QEvent.Type.LayoutRequest and (obj is w or obj in w.docks.values()):
                    counter.n += 1
                return False

        self.filter = Filter()
        QApplication.instance().installEventFilter(self.filter)

    def close(self):
        QApplication.instance().removeEventFilter(self.filter)


def test_stepping_lays_the_window_out_again_only_when_a_text_needs_another_height(window, qtbot):
    w = window
    for _ in range(3):
        qtbot.keyClick(w, Qt.Key.Key_Right)
    QApplication.processEvents()
    requests = _LayoutRequests(w)
    try:
        headers = set()
        for _ in range(40):  # every caption, header and the counter say something new at each frame
            qtbot.keyClick(w, Qt.Key.Key_Right)
            QApplication.processEvents()
            headers.add((w.frame_text.text(), w.counter.text(), w.views["memory"].header.text(),
                         w.views["block"].caption.text()))
        assert len(headers) == 40 and len({h[2] for h in headers}) > 1
        assert requests.n <= 2, f"{requests.n} window layouts in 40 steps"
        # a header that needs more lines gets them: its slot passes the new height on
        view = w.views["memory"]
        label = view.header
        before = label.height()
        label.setText("<br>".join(["one more line of the header"] * 4))
        qtbot.waitUntil(lambda: label.height() >= label.heightForWidth(label.width()) > before
                        and label.geometry() == label.parentWidget().rect())
        assert label.isVisible()
        # one that fits in fewer lines keeps the room (the arrays below do not jump back up on the next frame,
        # issue 28 finding 11) until the text size changes
        grown = label.height()
        label.setText("short")
        QApplication.processEvents()
        assert label.height() == grown
        w.session.set_scale(w.session.theme.scale)  # the same size again: nothing changes
        w.session.set_scale(w.session.theme.scale * 1.15)
        w.session.set_scale(w.session.theme.scale / 1.15)
        qtbot.waitUntil(lambda: label.height() < grown)
    finally:
        requests.close()
