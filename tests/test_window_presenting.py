"""Presenter mode and lessons in the window: blanking, leaving, Esc, Ctrl+-/+ and answers held back until revealed
(issue 12's findings: what a person pressed, and what they should have seen)."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt

from tests.acceptance_checks import settle
from tests.test_acceptance import kernel_trace


def test_blank_covers_the_screen_in_black(make_window):
    """Finding 8: B showed nothing (the cover drew no background) and the next → only took it away."""
    from gpuviz.ui.presenter import enter_presenter

    from tests.acceptance_checks import image_array

    w = make_window(kernel_trace("matmul_tiled"))
    p = enter_presenter(w, theme="light", size=(1280, 720), fullscreen=False)
    settle()
    p.keys.trigger("blank")
    settle()
    px = image_array(w.grab().toImage())
    assert (px.reshape(-1, 3) == 0).all(axis=1).mean() > 0.99  # all black
    f = w.session.frame
    p.keys.trigger("next")  # the clicker's first press brings the picture back, the second steps
    settle()
    assert not p.blanked and w.session.frame == f
    p.keys.trigger("next")
    assert w.session.frame == f + 1


def test_leaving_presenter_mode_brings_the_caption_back_at_once(make_window):
    """Finding 13: the top bar's caption stayed blank after F5 until the next step."""
    w = make_window(kernel_trace("matmul_tiled"))
    w.session.set_frame(12)
    settle()
    before = w.caption_text.text()
    assert before
    w.actions.trigger("view.present")
    settle()
    assert not w.caption_text.isVisible()  # the caption bar says it; the top bar's room goes to the views
    from gpuviz.ui.presenter import presenter_of

    presenter_of(w).keys.trigger("stop_presenting")  # F5 again, through the presenter's own key
    settle()
    assert w.caption_text.text() == before and w.caption_text.isVisible()
    assert not w.actions.qaction("view.present").isChecked()


def test_escape_in_presenter_mode_closes_the_shortcuts_first(make_window):
    """Seen driving the app: F1 then Esc in presenter mode left presenter mode with the overlay still up."""
    from gpuviz.ui.presenter import enter_presenter, presenter_of

    w = make_window(kernel_trace("matmul_tiled"))
    p = enter_presenter(w, theme="dark", size=(1280, 720), fullscreen=False)
    w.actions.trigger("help.shortcuts")
    settle()
    assert w.overlay.isVisible()
    p.keys.trigger("leave")  # Esc
    settle()
    assert not w.overlay.isVisible() and presenter_of(w) is p
    p.keys.trigger("leave")
    settle()
    assert presenter_of(w) is None


def test_ctrl_minus_and_ctrl_plus_change_the_text_in_presenter_mode(make_window):
    """Finding 7 (part): after F5 at 1280x720, Ctrl+- did nothing (the scale stopped at the automatic one)."""
    from PySide6.QtTest import QTest

    from gpuviz.ui.presenter import MIN_SMALLER_PX, enter_presenter
    from gpuviz.ui.text_sizes import smallest_text

    w = make_window(kernel_trace("matmul_tiled", 32), size=(1280, 720))
    p = enter_presenter(w, theme="dark", size=(1280, 720), fullscreen=False)
    w.activateWindow()
    settle()
    auto = p.scale
    caption_px = p.caption_bar.caption.font().pixelSize()
    QTest.keyClick(w, Qt.Key.Key_Minus, Qt.KeyboardModifier.ControlModifier)  # Ctrl+-, as a person presses it
    settle()
    assert p.scale < auto and p.caption_bar.caption.font().pixelSize() < caption_px
    assert smallest_text(w)[0] >= MIN_SMALLER_PX
    for _ in range(10):  # it stops at a floor, still readable
        QTest.keyClick(w, Qt.Key.Key_Minus, Qt.KeyboardModifier.ControlModifier)
    settle()
    assert smallest_text(w)[0] >= MIN_SMALLER_PX - 0.5
    floor = p.scale
    QTest.keyClick(w, Qt.Key.Key_Plus, Qt.KeyboardModifier.ControlModifier)  # Ctrl++
    QTest.keyClick(w, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier)  # Ctrl+= (no Shift needed)
    settle()
    assert p.scale > floor * 1.2
    QTest.keyClick(w, Qt.Key.Key_0, Qt.KeyboardModifier.ControlModifier)  # Ctrl+0: the automatic scale again
    settle()
    assert smallest_text(w)[0] >= 18 - 0.01


def test_views_and_captions_hold_the_answer_back_until_it_is_revealed(make_window):
    """Finding 11: at bank_conflicts' "how many ways?" the shared view's header and the caption said 32-way."""
    w = make_window(kernel_trace("vector_add"), size=(1920, 1080))
    ctl = w.start_lesson("bank_conflicts")
    settle()
    while not (ctl.player.slide().question and "ways" in ctl.player.slide().question):
        assert ctl.next()
        settle(1)
    slide = ctl.player.slide()
    assert not slide.answer and w.session.predicting == slide.question
    shared = w.views["shared"]
    shared.refresh()
    assert "32-way" not in shared.header.text() and "Predict first" in shared.header.text()
    assert w.caption_text.text() == f"Predict: {slide.question}"
    assert "32-way" not in ctl.panel.plain
    ctl.next()  # the reveal
    settle()
    shared.refresh()
    assert ctl.player.slide().answer and w.session.predicting == ""
    assert "32-way bank conflict" in shared.header.text() and "32-way" in w.caption_text.text()
    assert "32-way" in ctl.panel.plain
    w.stop_lesson()
