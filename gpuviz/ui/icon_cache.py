"""The application's style with the dock title buttons' icons made once (Fusion builds them anew on every use).
"""

from __future__ import annotations

from PySide6.QtWidgets import QApplication, QProxyStyle, QStyle


class StandardIconCache(QProxyStyle):
    """The application's style, with the icons of the dock title buttons made once rather than on every use.

    Fusion builds a standard icon anew each time it is asked for one (QIcon.addFile of its six sizes, each a
    resource PNG read), and Qt asks for the close and float buttons' icons whenever a dock's title is measured or
    painted: QDockWidgetLayout.setGeometry and QDockWidget.paintEvent, for every dock at every relayout of the
    window (~7% of a window resize's CPU, perf, reduce_sum in the full window). The same files whatever the palette:
    the same icons."""

    CACHED = frozenset({QStyle.StandardPixmap.SP_TitleBarCloseButton, QStyle.StandardPixmap.SP_TitleBarNormalButton,
                        QStyle.StandardPixmap.SP_DockWidgetCloseButton, QStyle.StandardPixmap.SP_TitleBarMaxButton,
                        QStyle.StandardPixmap.SP_TitleBarMinButton})

    def __init__(self, base: QStyle):
        super().__init__(base)
        self._icons: dict = {}

    def standardIcon(self, which, option=None, widget=None):
        if which not in self.CACHED:
            return super().standardIcon(which, option, widget)
        icon = self._icons.get(which)
        if icon is None:
            icon = self._icons[which] = super().standardIcon(which, option, widget)
        return icon


def cache_standard_icons() -> None:
    """Put :class:`StandardIconCache` over the application's style (once)."""
    app = QApplication.instance()
    if app is not None and not isinstance(app.style(), StandardIconCache):
        app.setStyle(StandardIconCache(app.style()))
