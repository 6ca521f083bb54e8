"""What a lesson scene talks about, and the views that must be on screen while it does.

A scene's notes quote recorded timings ({fusion_timings}), bank conflicts or coalesced sectors; a student told
"look at the timings" must see a timings plot, and the plot of the timings quoted (the fusion set, not the a + b
one). :func:`missing_views` is the check, run on every shipped lesson by the tests and on every lesson file by
:func:`gpuviz.lessons.format.parse_lesson` for the placeholders (a ``{timings}`` without a timings view is always
a mistake; words are only checked for the shipped lessons, whose wording we know).

:func:`timings_subject` says which recorded timing set and plot a scene's timings view shows, and
:func:`is_timings_scene` whether the scene is about timings at all (its first, large view is the timings view):
such a scene's caption is its own, not the narration of whichever warp its last frame happens to show.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass


@dataclass(frozen=True)
class Topic:
    name: str
    views: tuple[str, ...]  # any one of them shows it
    placeholders: tuple[str, ...] = ()
    words: tuple[str, ...] = ()  # lower-case; matched as whole words at their start


TOPICS = (
    Topic("recorded timings", ("timings",), ("timings", "add_timings", "fusion_timings"),
          ("timings", "how long", "microsecond", "µs")),
    Topic("bank conflicts", ("shared",), ("bank_conflicts", "max_ways", "ways"), ("bank conflict", "banks")),
    Topic("coalesced sectors", ("memory",), ("sectors", "sectors_per_request", "ideal_sectors", "cache_lines"),
          ("sector", "coalesc", "global-memory view")),
    Topic("barriers", ("barriers", "block", "shared"), ("threads_at_barrier", "waiting_warps"),
          ("syncthreads", "barrier")),
)

#: timing placeholder -> (recording file name, or "" for the first set that has the plot; plot kind)
TIMINGS_SHOWN = {
    "timings": ("", "host_flow"),
    "add_timings": ("gpu_timings.json", "cpu_vs_gpu"),
    "fusion_timings": ("fusion_timings_h200.json", "cpu_vs_gpu"),
}


def placeholders(text: str) -> list[str]:
    """The ``{name}`` placeholders of a lesson text, in order (``{kernel[K][m]}`` counts as ``m``)."""
    out = []
    try:
        parsed = list(string.Formatter().parse(text or ""))
    except ValueError:
        return out
    for _lit, f, _spec, _conv in parsed:
        if not f:
            continue
        if f.startswith("kernel[") and "][" in f:
            f = f.rsplit("[", 1)[1].rstrip("]")
        out.append(f)
    return out


def _words_in(text: str, words) -> list[str]:
    low = (text or "").lower()
    return [w for w in words if re.search(r"(?<![\w-])" + re.escape(w), low)]


def scene_text(scene) -> str:
    parts = [scene.title, scene.notes] + [q.ask for q in scene.questions] + [q.explain for q in scene.questions]
    return "\n".join(p for p in parts if p)


def missing_views(scene, words: bool = True) -> list[str]:
    """What the scene talks about that none of its views shows: ["recorded timings (no timings view)", ...].
    A scene with no views keeps the window's (nothing to check). ``words``: also the topics named in words, not
    only those quoted through placeholders."""
    if not scene.views:
        return []
    text = scene_text(scene)
    used = set(placeholders(text)) | {q.answer for q in scene.questions}  # an answer is a fact the view shows
    out = []
    for topic in TOPICS:
        why = [f"{{{p}}}" for p in topic.placeholders if p in used]
        if words:
            why += [repr(w) for w in _words_in(text, topic.words)]
        if why and not set(topic.views) & set(scene.views):
            shown = " or ".join(topic.views)
            out.append(f"{topic.name} ({', '.join(why[:3])}) with no {shown} view")
    return out


def timings_subject(scene) -> tuple[str, str] | None:
    """(recording file name or "", plot kind) of the timings a scene quotes first, or None."""
    for p in placeholders(scene_text(scene)):
        if p in TIMINGS_SHOWN:
            return TIMINGS_SHOWN[p]
    return None


def is_timings_scene(scene) -> bool:
    """A scene about recorded timings: its first (large) view is the timings view."""
    return bool(scene.views) and scene.views[0] == "timings"
