"""Full screen with a window manager or without one (a bare X server, a kiosk or projector setup), and back to the
place and size the window had. F11 and presenter mode use it.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication


def show_full_screen(window) -> None:
    """Full screen whatever runs the display. Qt asks the window manager for it (_NET_WM_STATE_FULLSCREEN);
    with none (a bare X server, a kiosk or projector setup) nothing happened and ``--present`` stayed at
    1600x950. The window then also covers its screen by its own geometry, which a window manager that did
    the job leaves as it is. :func:`show_normal` undoes it."""
    if not is_full_screen(window):
        window._gpuviz_geometry_before_full_screen = window.saveGeometry()
        window._gpuviz_rect_before_full_screen = window.geometry()
    window.showFullScreen()
    window._gpuviz_full_screen = True  # Qt drops its full-screen state when the geometry is set, as below
    screen = window.screen() or QApplication.primaryScreen()
    if screen is not None and window.geometry() != screen.geometry():
        window.setGeometry(screen.geometry())


def is_full_screen(window) -> bool:
    """Full screen by Qt's state or by :func:`show_full_screen`'s geometry (no window manager)."""
    return window.isFullScreen() or bool(getattr(window, "_gpuviz_full_screen", False))


def show_normal(window) -> None:
    """Out of full screen, back to the size and place it had (without a window manager nobody else would)."""
    saved = getattr(window, "_gpuviz_geometry_before_full_screen", None)
    rect = getattr(window, "_gpuviz_rect_before_full_screen", None)
    window._gpuviz_full_screen = False
    window.showNormal()
    if saved is not None:
        window._gpuviz_geometry_before_full_screen = window._gpuviz_rect_before_full_screen = None
        put_back_geometry(window, saved, rect)
        # and once more when Qt has handled leaving full screen: with no window manager it put back the
        # screen-sized geometry it recorded while full screen, after ours
        QTimer.singleShot(0, lambda: is_full_screen(window) or put_back_geometry(window, saved, rect))


def put_back_geometry(window, saved, rect=None) -> None:
    """The window where it was: its saved state (maximized or not) from ``saved`` (``saveGeometry()``), then
    exactly the rectangle ``rect`` it had (``geometry()``) unless it is maximized. ``restoreGeometry`` alone
    fits a window whose frame hangs past the screen's edge back inside it: a window made as large as a
    1280x720 screen (its frame then 1282x725, as bench/window_screenshots.sh and a person dragging do) came
    back from presenter mode 5 px lower and 6 px shorter."""
    window.restoreGeometry(saved)
    if rect is not None and rect.isValid() and not window.isMaximized() and window.geometry() != rect:
        window.setGeometry(rect)
