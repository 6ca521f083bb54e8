"""Value widgets that the mouse wheel passes over: a combobox, spin box or slider changes with the wheel only once
it has been clicked (has the focus). Scrolling down a dock with the wheel turned the Occupancy view's GPU model
from H200 to RTX 4090, and every figure with it, as the combobox passed under the pointer; the wheel now scrolls
the dock instead."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import (QAbstractScrollArea, QAbstractSlider, QAbstractSpinBox, QApplication, QComboBox, QScrollBar,
                               QWidget)

#: the widgets a stray wheel turn would change
VALUE_WIDGETS = (QComboBox, QAbstractSpinBox, QAbstractSlider)


class _WheelGuard(QObject):
    def eventFilter(self, obj, ev) -> bool:
        if ev.type() != QEvent.Type.Wheel or not isinstance(obj, QWidget) or obj.hasFocus():
            return False
        # not clicked: the wheel is the person scrolling past it, so the dock around it scrolls
        parent = obj.parentWidget()
        while parent is not None and not isinstance(parent, QAbstractScrollArea):
            parent = parent.parentWidget()
        if parent is not None:
            QApplication.sendEvent(parent.verticalScrollBar(), ev)
        return True


_guard: _WheelGuard | None = None


def wheel_passes_over(root: QWidget) -> None:
    """Every combobox, spin box and slider in ``root`` (itself included) takes the wheel only when focused, and
    the wheel does not give it the focus."""
    global _guard
    if _guard is None:
        _guard = _WheelGuard(QApplication.instance())
    widgets = [root] + root.findChildren(QWidget)
    for w in widgets:
        # a scroll bar is what the wheel is for (and where a guarded widget sends it)
        if isinstance(w, VALUE_WIDGETS) and not isinstance(w, QScrollBar) and not w.property("gpuviz_wheel_guarded"):
            w.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
            w.installEventFilter(_guard)
            w.setProperty("gpuviz_wheel_guarded", True)
