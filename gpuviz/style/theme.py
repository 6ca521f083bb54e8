"""Themes: light and dark, high contrast, colour-blind safe, and one global scale factor.

Categories use the Okabe–Ito palette (readable for the common colour-vision deficiencies); heat maps
use cividis (or viridis). Text sizes are ``theme.px(base)``: the base sizes are already large (a
classroom projector is a main use) and the scale factor multiplies them (presenter mode, issue 6).

Views read colours from ``session.theme`` (never hard-code them) and redraw on
``session.theme_changed``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..model.frames import BlockState, LaneState

# Okabe & Ito (2008), "Color Universal Design"
OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "bluish_green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish_purple": "#CC79A7",
}


#: Okabe-Ito orange at 60 % of its light, the same hue: 3.8:1 on white where the orange itself is 2.3:1
ORANGE_ON_WHITE = "#B07900"


def hex_to_rgba(color: str, alpha: int = 255) -> tuple[int, int, int, int]:
    c = color.lstrip("#")
    return int(c[0:2], 16), int(c[2:4], 16), int(c[4:6], 16), alpha


def relative_luminance(color: str) -> float:
    """WCAG 2's relative luminance of an sRGB colour, 0 (black) to 1 (white)."""

    def linear(v: int) -> float:
        c = v / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b, _ = hex_to_rgba(color)
    return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)


def contrast_ratio(a: str, b: str) -> float:
    """WCAG 2's contrast ratio of two colours, 1 to 21: text wants 4.5 or more, graphics 3 or more."""
    hi, lo = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@dataclass(frozen=True)
class Theme:
    name: str
    background: str
    panel: str
    foreground: str
    muted: str
    grid: str
    current: str  # outline of what executes at this frame (current block, current warp)
    selected: str  # outline of the linked selection
    highlight_line: str  # source line being executed
    lane: dict = field(default_factory=dict)  # LaneState -> colour
    block: dict = field(default_factory=dict)  # BlockState -> colour
    load: str = OKABE_ITO["blue"]
    store: str = OKABE_ITO["vermillion"]
    conflict: str = ORANGE_ON_WHITE  # shared memory's bank conflicts (outline and legend), 3:1 or more on the ground
    # text roles beside foreground and muted, each 4.5:1 or more on the background and on the panel
    dimmed: str = "#6A6A6A"  # text of what is listed but inactive (a launch not traced): lighter than muted
    alert: str = "#B04D00"  # text that must catch the eye (a value recording changed, a failed launch): vermillion's hue
    # a selected row or text (tables, lists, fields): Okabe-Ito blue under white text, 5.19:1 (Qt's default
    # highlight #308CC6 under white is 3.69:1); the blue stands 4:1 or more on every theme's ground
    selection: str = OKABE_ITO["blue"]
    selection_text: str = "#FFFFFF"
    heatmap: str = "cividis"
    font_px: int = 16  # base text size in pixels at scale 1
    scale: float = 1.0

    def px(self, base: float | None = None) -> int:
        """A text or line size in pixels, scaled: ``theme.px()`` is the body text size."""
        return max(1, int(round((self.font_px if base is None else base) * self.scale)))

    def scaled(self, scale: float) -> "Theme":
        return replace(self, scale=float(scale))

    def lane_lut(self) -> np.ndarray:
        """RGBA uint8 lookup table indexed by :class:`LaneState`."""
        return np.array([hex_to_rgba(self.lane[s]) for s in LaneState], dtype=np.uint8)

    def block_lut(self) -> np.ndarray:
        return np.array([hex_to_rgba(self.block[s]) for s in BlockState], dtype=np.uint8)

    @property
    def dark(self) -> bool:
        r, g, b, _ = hex_to_rgba(self.background)
        return (r + g + b) < 384


def state_colours(not_begun: str, idle: str, done: str, diverged: str = OKABE_ITO["orange"]) -> dict:
    """Lane and block state colours of a theme: the categories always take the same Okabe-Ito hues
    (active green, diverged orange, at a barrier purple); a theme picks only its greys, its 'done' blue and,
    on a white ground, a darker shade of the orange.

    Every state colour stands at least 3:1 against the theme's background (WCAG's contrast for graphics,
    tests/test_theme_contrast.py): a lane that has not started is a cell a learner counts, not a gap. Work
    not begun is one grey, a lane not started and a block waiting alike; an idle lane is a grey at least
    1.5:1 from it, the two told apart by lightness alone."""
    return {
        "lane": {
            LaneState.NOT_STARTED: not_begun,
            LaneState.IDLE: idle,
            LaneState.ACTIVE: OKABE_ITO["bluish_green"],
            LaneState.DIVERGED: diverged,
            LaneState.BARRIER: OKABE_ITO["reddish_purple"],
            LaneState.EXITED: OKABE_ITO[done],
        },
        "block": {
            BlockState.WAITING: not_begun,
            BlockState.RESIDENT: OKABE_ITO["bluish_green"],
            BlockState.BARRIER: OKABE_ITO["reddish_purple"],
            BlockState.DONE: OKABE_ITO[done],
        },
    }


LIGHT = Theme(
    name="light",
    background="#FFFFFF",
    panel="#F0F0F0",
    foreground="#000000",
    muted="#3C3C3C",
    grid="#858585",  # borders of fields and buttons, the slider groove: 3.28:1 on the panel
    current=OKABE_ITO["black"],
    selected=OKABE_ITO["vermillion"],
    highlight_line="#FBE7A1",
    dimmed="#6A6A6A",  # 5.41:1 on white, 4.75:1 on the panel
    alert="#B04D00",  # vermillion darkened, same hue: 5.37:1 on white, 4.72:1 on the panel (vermillion 3.87:1)
    **state_colours(not_begun="#8E8E8E", idle="#686868", done="blue", diverged=ORANGE_ON_WHITE),
)

DARK = Theme(
    name="dark",
    background="#000000",
    panel="#1A1A1A",
    foreground="#FFFFFF",
    muted="#D0D0D0",
    grid="#6A6A6A",
    current=OKABE_ITO["yellow"],
    selected=OKABE_ITO["orange"],
    highlight_line="#5A4A00",
    dimmed="#8C8C8C",  # 6.25:1 on black, 5.18:1 on the panel
    alert="#E06300",  # vermillion lightened, same hue: 4.93:1 on the panel (vermillion itself 4.50:1)
    **state_colours(not_begun="#5E5E5E", idle="#828282", done="blue"),
    load=OKABE_ITO["sky_blue"],
    store=OKABE_ITO["vermillion"],
    conflict=OKABE_ITO["yellow"],
)

THEMES = {"light": LIGHT, "dark": DARK}

#: the order plotted series take their colours in (timings): Okabe-Ito, most distinct first
SERIES_ORDER = ("blue", "orange", "bluish_green", "vermillion", "reddish_purple", "sky_blue", "yellow", "black")


def series_colours(theme: Theme) -> list[str]:
    """Colours for plotted series on ``theme``'s background, in :data:`SERIES_ORDER`: those that stand 3:1 or
    more on it, the orange darkened on white as the states' orange is; on white the sky blue (2.3:1) and the
    yellow (1.3:1) are left out, on black the black."""
    on_white = {"orange": ORANGE_ON_WHITE} if not theme.dark else {}
    colours = [on_white.get(name, OKABE_ITO[name]) for name in SERIES_ORDER]
    return [c for c in colours if contrast_ratio(c, theme.background) >= 3.0]


def get_theme(name: str, scale: float = 1.0) -> Theme:
    try:
        return THEMES[name].scaled(scale)
    except KeyError:
        raise ValueError(f"unknown theme {name!r}; known: {', '.join(THEMES)}") from None


def stylesheet(theme: Theme) -> str:
    """An application stylesheet: colours and large, scaled text for every plain Qt widget."""
    t = theme
    return f"""
    QWidget {{ background: {t.panel}; color: {t.foreground}; font-size: {t.px()}px;
        selection-background-color: {t.selection}; selection-color: {t.selection_text}; }}
    QMainWindow::separator {{ background: {t.grid}; width: 2px; height: 2px; }}
    QDockWidget {{ font-size: {t.px()}px; font-weight: bold; }}
    QDockWidget::title {{ background: {t.panel}; padding: {t.px(4)}px; }}
    QToolBar {{ background: {t.panel}; border: none; spacing: {t.px(4)}px; }}
    QToolButton {{ padding: {t.px(4)}px {t.px(6)}px; border: 1px solid transparent; border-radius: 4px; }}
    QToolButton:hover {{ border: 1px solid {t.grid}; }}
    QToolButton:checked {{ background: {t.grid}; }}
    QPlainTextEdit, QTextEdit, QListWidget, QTreeWidget, QTableWidget {{
        background: {t.background}; color: {t.foreground}; border: 1px solid {t.grid}; }}
    /* a spin box keeps the style's own frame and arrows: a border or padding here makes Qt draw its up/down
       buttons from the style sheet, a few pixels wide and without arrows */
    QComboBox, QLineEdit {{ background: {t.background}; border: 1px solid {t.grid}; padding: 2px 4px; }}
    QSpinBox {{ background: {t.background}; color: {t.foreground}; }}
    QPushButton {{ background: {t.background}; border: 1px solid {t.grid}; border-radius: 4px;
        padding: {t.px(4)}px {t.px(10)}px; }}
    QPushButton:hover {{ border: 1px solid {t.foreground}; }}
    QPushButton:disabled {{ color: {t.grid}; }}
    QStatusBar {{ color: {t.muted}; }}
    QMenuBar::item:selected, QMenu::item:selected {{ background: {t.grid}; }}
    QSlider::groove:horizontal {{ height: {t.px(6)}px; background: {t.grid}; border-radius: 3px; }}
    QSlider::handle:horizontal {{ background: {t.foreground}; width: {t.px(14)}px; margin: -{t.px(6)}px 0;
        border-radius: {t.px(7)}px; }}
    QProgressBar {{ border: 1px solid {t.grid}; border-radius: 4px; text-align: center; background: {t.background}; }}
    QProgressBar::chunk {{ background: {OKABE_ITO['bluish_green']}; }}
    QLabel#frameText {{ font-size: {t.px(20)}px; font-weight: bold; padding: {t.px(4)}px; }}
    QLabel#captionText {{ font-size: {t.px(17)}px; padding: 0 {t.px(4)}px {t.px(4)}px {t.px(4)}px; }}
    /* black on vermillion in every theme, 5.43:1 (white on it is 3.87:1), as the window's warnings */
    QLabel#errorText {{ color: #000000; background: {OKABE_ITO['vermillion']}; padding: {t.px(6)}px;
        border-radius: 4px; }}
    QLabel#viewTitle {{ color: {t.muted}; }}
    QLabel#viewLegend {{ background: {t.background}; }}
    """
