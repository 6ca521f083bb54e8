"""Dock titles that fit: each dock's full title where it fits its title bar and its tab, else its view's short title.

The main window fits them after each resize and text size change; presenter mode does the same, and puts the full
titles back when it ends.
"""

from __future__ import annotations

from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QAbstractButton, QTabBar


def _title_room(dock) -> int:
    """The width a dock's title bar leaves its title: up to its float and close buttons, less its padding."""
    buttons = [b.x() for b in dock.findChildren(QAbstractButton)
               if b.parent() is dock and b.isVisible() and b.objectName().startswith("qt_dockwidget")]
    pad = QFontMetrics(dock.font()).averageCharWidth()
    return (min(buttons) if buttons else dock.width()) - 2 * pad


def _tab_groups(window) -> list:
    """(tab bar, [dock of each tab]) for every visible tab bar of the window's docks."""
    by_title = {}
    for d in window.docks.values():
        by_title.setdefault(d.windowTitle(), d)
    groups = []
    for bar in window.findChildren(QTabBar):
        if bar.parent() is window and bar.isVisible() and bar.count() > 1:
            groups.append((bar, [by_title.get(bar.tabText(i)) for i in range(bar.count())]))
    return groups


def fit_dock_titles(window) -> int:
    """Each dock's full title where it fits both its title bar and its tab, else its view's ``short_title``
    (at a projector's 1280 pixels 'Block: warps x l…' and tabs 'Global mem…', 'Barri…' were cut, at the desk
    'Block: warps x la…' and 'Per l…'); returns how many titles changed."""
    changed = 0

    def full(dock):
        view = dock.widget()
        return getattr(type(view), "title", "") or dock.windowTitle()

    def short(dock):
        return getattr(type(dock.widget()), "short_title", "") or full(dock)

    want = {}
    for dock in window.docks.values():
        if dock.isVisible() and not dock.isFloating() and dock.widget() is not None:
            bold = QFont(dock.font())
            bold.setBold(True)
            fits = QFontMetrics(bold).horizontalAdvance(full(dock)) <= _title_room(dock)
            want[dock] = full(dock) if fits else short(dock)
    for bar, docks in _tab_groups(window):
        fm = QFontMetrics(bar.font())
        need = 0
        for i, dock in enumerate(docks):
            extra = bar.tabSizeHint(i).width() - fm.horizontalAdvance(bar.tabText(i))
            need += extra + fm.horizontalAdvance(full(dock) if dock is not None else bar.tabText(i))
        # the room: the tab bar's, or the dock in front's (a dock behind its tab keeps the width it had when last
        # shown: at the desk's wider column, which left the presenter's tabs 'Global mem…', 'Barri…')
        front = [d.width() for d in docks if d is not None and not d.visibleRegion().isEmpty()]
        if need > max([bar.width()] + front):
            for dock in docks:
                if dock is not None:
                    want[dock] = short(dock)
    for dock, title in want.items():
        if dock.windowTitle() != title:
            dock.setWindowTitle(title)
            changed += 1
    return changed


def restore_dock_titles(window) -> None:
    for dock in window.docks.values():
        view = dock.widget()
        title = getattr(type(view), "title", "")
        if title and dock.windowTitle() != title:
            dock.setWindowTitle(title)
