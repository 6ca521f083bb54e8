"""One registry of actions: id, text, shortcuts, callback. Menus, toolbar, key bindings and the
shortcuts overlay are all built from it, so they cannot drift apart.

Callbacks take no argument; they close over the window/session. Commands themselves live in the
Qt-free models (:mod:`gpuviz.model.playback`); an action only binds one to a key, a menu and a button.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QKeySequence


@dataclass
class Action:
    id: str  # stable, dotted: "playback.step_forward"
    text: str  # menu text, "&" marks the mnemonic
    callback: Callable[[], object]
    shortcuts: tuple[str, ...] = ()  # QKeySequence strings: "Right", "PgDown", "Ctrl+O"
    group: str = ""  # menu it belongs to: "File", "Playback", "View", "Help"
    tip: str = ""
    checkable: bool = False
    checked: Callable[[], bool] | None = None  # current state of a checkable action
    enabled: Callable[[], bool] | None = None  # whether it can do anything now (None: always)
    icon_text: str = ""  # short label for the toolbar (a symbol), defaults to text
    in_toolbar: bool = False

    @property
    def plain_text(self) -> str:
        return self.text.replace("&", "")

    def shortcut_text(self) -> str:
        return ", ".join(QKeySequence(s).toString(QKeySequence.SequenceFormat.NativeText) for s in self.shortcuts)


class ActionRegistry:
    """Actions by id, in registration order, and their QActions for one window."""

    def __init__(self):
        self._actions: dict[str, Action] = {}
        self._qactions: dict[str, QAction] = {}

    def add(self, action: Action) -> Action:
        if action.id in self._actions:
            raise ValueError(f"action id {action.id!r} is registered twice")
        taken = {s: a.id for a in self._actions.values() for s in a.shortcuts}
        for s in action.shortcuts:
            if s in taken:
                raise ValueError(f"shortcut {s!r} of {action.id!r} is already bound to {taken[s]!r}")
        self._actions[action.id] = action
        return action

    def __getitem__(self, action_id: str) -> Action:
        return self._actions[action_id]

    def __contains__(self, action_id: str) -> bool:
        return action_id in self._actions

    def __iter__(self):
        return iter(self._actions.values())

    def groups(self) -> dict[str, list[Action]]:
        out: dict[str, list[Action]] = {}
        for a in self._actions.values():
            out.setdefault(a.group, []).append(a)
        return out

    def trigger(self, action_id: str):
        """Run an action by id, exactly as its key or menu entry would."""
        qa = self._qactions.get(action_id)
        if qa is not None:
            qa.trigger()
            return None
        return self._actions[action_id].callback()

    def qaction(self, action_id: str) -> QAction:
        return self._qactions[action_id]

    def bind(self, owner: QObject) -> dict[str, QAction]:
        """Create one QAction per action, parented to (and shortcuts active in) ``owner``'s window."""
        for a in self._actions.values():
            qa = QAction(a.text, owner)
            qa.setObjectName(a.id)
            if a.shortcuts:
                qa.setShortcuts([QKeySequence(s) for s in a.shortcuts])
                qa.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            tip = a.tip or a.plain_text
            if a.shortcuts:
                tip += f"  ({a.shortcut_text()})"
            qa.setToolTip(tip)
            qa.setStatusTip(tip)
            if a.icon_text:
                qa.setIconText(a.icon_text)
            if a.enabled is not None:
                qa.setEnabled(bool(a.enabled()))
            if a.checkable:
                qa.setCheckable(True)
                if a.checked is not None:
                    qa.setChecked(bool(a.checked()))
                qa.triggered.connect(lambda _checked=False, a=a: a.callback())
            else:
                qa.triggered.connect(lambda _checked=False, a=a: a.callback())
            self._qactions[a.id] = qa
            if hasattr(owner, "addAction"):
                owner.addAction(qa)  # shortcuts work even when the menu bar is hidden (presenter mode)
        return self._qactions

    def sync_checked(self) -> None:
        """Each checkable action's check mark, and each action's enabled state, as they are now."""
        for a in self._actions.values():
            if a.enabled is not None and a.id in self._qactions:
                self._qactions[a.id].setEnabled(bool(a.enabled()))
            if a.checkable and a.checked is not None and a.id in self._qactions:
                qa = self._qactions[a.id]
                qa.blockSignals(True)
                qa.setChecked(bool(a.checked()))
                qa.blockSignals(False)

    def help_rows(self) -> list[tuple[str, str, str]]:
        """(group, text, shortcuts) for every action that has a shortcut, for the help overlay."""
        return [(a.group, a.plain_text, a.shortcut_text()) for a in self._actions.values() if a.shortcuts]
