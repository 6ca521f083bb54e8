"""Where a chart's words go when it is narrow: value labels over bars that neither collide nor leave the plot, and a
title wrapped to the plot's width. Plain geometry in pixels (no Qt): the Timings view measures the text and maps
the answers to its plot (timings.py).

Issue 28: in a 510 px dock on a projector, the host flow's ten value labels ran into each other ('492.4 µs' over
'2.86 ms') and out of the plot ('1.30 m'), and its title ('host flow of one vector add, n = 16,777,216 float32')
made the plot wider than the dock, which cut its last bars, ticks and legend at the right.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass
class Box:
    """A rectangle in pixels of a plot's data area: x from its left edge, y up from the bars' base line."""

    left: float
    bottom: float
    width: float
    height: float

    @property
    def right(self) -> float:
        return self.left + self.width

    @property
    def top(self) -> float:
        return self.bottom + self.height

    def overlaps(self, other: "Box") -> bool:
        return (self.left < other.right and other.left < self.right
                and self.bottom < other.top and other.bottom < self.top)


def stack_value_labels(labels: list[Box], bars: list[Box], area_width: float, gap: float = 1.0) -> list[Box]:
    """Each label (given its size and, as ``left``/``bottom``, the centre and top of its bar) placed just above its
    bar, centred on it but kept inside ``0..area_width``, and raised above whatever it would cover: a label placed
    before it or a taller bar. The lowest bars' labels are placed first, so each label sits as near its own bar as
    the others let it. Returns the labels' boxes in the order given."""
    placed: list[Box] = []
    out: list[Box | None] = [None] * len(labels)
    for i in sorted(range(len(labels)), key=lambda k: labels[k].bottom):
        want = labels[i]
        # centred on its bar, else slid sideways (its bar's centre still under it) clear of a neighbour's bar
        # or label before it is raised: a label raised over a tall neighbour reads as that neighbour's
        lefts = [want.left - want.width / 2 + want.width * k / 8 for k in (0, -1, 1, -2, 2, -3, 3)]
        lefts = list(dict.fromkeys(min(max(x, 0.0), max(0.0, area_width - want.width)) for x in lefts))
        bottom = want.bottom + gap
        while True:  # each pass raises it strictly, over one thing in its way: it ends
            tries = [Box(left, bottom, want.width, want.height) for left in lefts]
            free = [b for b in tries if not any(b.overlaps(o) for o in placed + bars)]
            if free:
                box = free[0]
                break
            bottom = max(o.top for o in placed + bars if tries[0].overlaps(o)) + gap
        placed.append(box)
        out[i] = box
    return out  # type: ignore[return-value]


def bar_chart_top(values_top: float, place: Callable[[float], float], area_height: float, tries: int = 12) -> float:
    """The top of a bar chart's y range that leaves room over the bars for their labels: ``place(top)`` places the
    labels with the range ``0..top`` and says how many pixels they reach up to. The labels' size does not scale with
    the range, so the top is raised until what they need fits in ``area_height`` (or ``tries`` run out: a data area
    shorter than a stack of labels)."""
    top = values_top * 1.05 if values_top > 0 else 1.0
    for _ in range(tries):
        need = place(top)
        if need <= area_height:
            return top
        # what the labels take over the tallest bar stays; the bars get the rest of the height
        over_bars = need - area_height * values_top / top
        top = values_top * area_height / max(area_height - over_bars, 0.1 * area_height) * 1.02
    return top


def wrap_words(text: str, width_of: Callable[[str], float], room: float, max_lines: int = 2,
               ellipsis: str = "…") -> list[str]:
    """``text`` in lines no wider than ``room`` (``width_of`` measures a string), broken between words; past
    ``max_lines`` the last line ends in ``ellipsis``. A single word wider than the room is cut too."""
    lines: list[str] = []
    for word in text.split():
        if lines and width_of(f"{lines[-1]} {word}") <= room:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    if len(lines) > max_lines:
        lines = lines[: max_lines - 1] + [" ".join(lines[max_lines - 1:])]
    for i, line in enumerate(lines):
        if width_of(line) > room:
            while len(line) > 1 and width_of(line + ellipsis) > room:
                line = line[:-1]
            lines[i] = line.rstrip() + ellipsis
    return lines
