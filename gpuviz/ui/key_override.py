"""Keys taken over on a window (presenter mode's clicker keys, a lesson's): new callbacks bound to them, the window's
own actions for those keys set aside until the override is released.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QWidget


class KeyOverride:
    """Bind keys to new callbacks on a window, setting aside the window's own actions for those keys
    (two actions on one key would be ambiguous and neither would fire) until :meth:`release`.

    Overrides stack per window (a lesson's clicker keys, then a presenter's on top, or the other way round): the
    latest one holds a key, the ones below get it back as it is released, and the window's own actions get a key
    back only once no override holds it. (Each override used to set aside and give back the shortcuts it found:
    a lesson at the desk took → from Step forward, F5's presenter took it from nobody, and the lesson handing its
    keys to the presenter gave → back to Step forward, beside the presenter's own: 'Ambiguous shortcut overload'.)"""

    def __init__(self, window, bindings: list[tuple[str, tuple[str, ...], object]]):
        self.window = window
        self.actions: dict[str, QAction] = {}
        self._keys: dict[str, list[str]] = {}  # binding name -> its key sequences, as text
        for name, ks, callback in bindings:
            qa = QAction(name, window)
            qa.setObjectName(f"presenter.{name}")
            qa.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            qa.triggered.connect(lambda _c=False, cb=callback: cb())
            window.addAction(qa)
            self.actions[name] = qa
            self._keys[name] = [QKeySequence(k).toString() for k in ks]
        _overrides(window).append(self)
        _rebind(window)

    def trigger(self, name: str) -> None:
        self.actions[name].trigger()

    def release(self) -> None:
        for qa in self.actions.values():
            self.window.removeAction(qa)
            qa.setShortcuts([])
            qa.deleteLater()
        self.actions = {}
        stack = _overrides(self.window)
        if self in stack:
            stack.remove(self)
        _rebind(self.window)


def _overrides(window) -> list[KeyOverride]:
    """The window's live key overrides, oldest first."""
    stack = getattr(window, "_gpuviz_key_overrides", None)
    if stack is None:
        stack = window._gpuviz_key_overrides = []
    return stack


def _rebind(window) -> None:
    """Every key to exactly one action: the latest override that binds it, else the window's own action for it."""
    own = getattr(window, "_gpuviz_own_shortcuts", None)
    if own is None:
        own = window._gpuviz_own_shortcuts = {}
    held: set[str] = set()
    for override in reversed(_overrides(window)):
        for name, qa in override.actions.items():
            mine = [k for k in override._keys[name] if k not in held]
            qa.setShortcuts([QKeySequence(k) for k in mine])
            held.update(mine)
    for qa in QWidget.actions(window):
        if qa.objectName().startswith("presenter."):
            continue
        if qa not in own:
            own[qa] = [s.toString() for s in qa.shortcuts()]
        keep = [QKeySequence(k) for k in own[qa] if k not in held]
        if [s.toString() for s in qa.shortcuts()] != [k.toString() for k in keep]:
            qa.setShortcuts(keep)
