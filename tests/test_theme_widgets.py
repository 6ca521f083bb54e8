"""Widgets the theme's style sheet dresses keep what makes them usable (finding 23: squashed size-spinner arrows)."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import pytest
from PySide6.QtWidgets import QStyle, QStyleOptionSpinBox

from tests.acceptance_checks import image_array, settle


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_size_spinner_has_real_up_and_down_buttons_with_arrows(qapp, theme):
    from gpuviz.style.theme import get_theme
    from gpuviz.ui.window import MainWindow

    w = MainWindow(theme=get_theme(theme))
    try:
        w.resize(1280, 720)
        w.show()
        dock = w.docks["launch"]
        dock.show()
        dock.raise_()
        settle(5)
        spin = w.launch_panel.size
        opt = QStyleOptionSpinBox()
        spin.initStyleOption(opt)
        style = spin.style()
        up = style.subControlRect(QStyle.ComplexControl.CC_SpinBox, opt, QStyle.SubControl.SC_SpinBoxUp, spin)
        down = style.subControlRect(QStyle.ComplexControl.CC_SpinBox, opt, QStyle.SubControl.SC_SpinBoxDown, spin)
        for rect in (up, down):
            assert rect.width() >= 12 and rect.height() >= 8, (theme, rect)
        pixels = image_array(spin.grab().toImage())[..., :3].astype(int)
        background = np.median(pixels[:, : spin.width() // 3].reshape(-1, 3), axis=0)
        for rect in (up, down):  # an arrow is drawn inside each button (its frame left out): ink on the field
            inside = pixels[rect.top() + 2:rect.bottom() - 1, rect.left() + 2:rect.right() - 1]
            ink = int((np.abs(inside - background).sum(axis=2) > 150).sum())
            assert ink >= 6, (theme, rect, ink)
    finally:
        w.close()
        w.deleteLater()
