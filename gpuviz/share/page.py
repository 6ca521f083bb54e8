"""The page the class share serves: the HTML export's page of the trace or lesson on screen, with the answers of
its predict questions taken out and a small script added that follows the presenter.

The offline export (:mod:`gpuviz.export.html`) keeps its answers (a student replays alone and reveals them);
the served page must not: a student could read them in the page's data before the presenter reveals. Here
every beat that reveals an answer loses its answer and its caption (they come over the socket at the reveal,
:func:`strip_answers`' ``reveals``), the frames' captions and titles have the answers blanked as the lesson
panel blanks them (:func:`gpuviz.lessons.player.mask_answers`), and the figure a question asks for is dropped
from its frame's facts. Qt-free.
"""

from __future__ import annotations

import copy
from pathlib import Path

from ..export.html import page_html
from ..lessons.player import mask_answers

__all__ = ["served_page", "strip_answers"]

HERE = Path(__file__).resolve().parent


def _shown_value(answer: str) -> str:
    """The answer's value as shown ("32-way", "8 bytes") without its explanation (``"value. explain"``)."""
    return answer.partition(". ")[0].strip()


def strip_answers(data: dict, lesson=None) -> tuple[dict, dict]:
    """``(page data without answers, reveals)``: ``reveals[beat]`` = ``{"answer", "caption"}`` of each beat of
    the page's lesson that reveals an answer, for the server to send once the presenter reveals it. A trace's
    page data comes back as it is (it asks nothing)."""
    if data.get("kind") != "lesson":
        return data, {}
    out = copy.deepcopy(data)
    reveals: dict[int, dict] = {}
    hide_by_scene: dict[int, list] = {}
    for k, b in enumerate(out["beats"]):
        if not b.get("question"):
            continue
        if b.get("answer"):
            reveals[k] = {"answer": b["answer"], "caption": b["caption"]}
            hide_by_scene.setdefault(b["scene"], []).append((_shown_value(b["answer"]), b["question"]))
            # the question whose fact the answer is: its figure leaves the frame's facts
            if lesson is not None:
                sc = out["scenes"][b["scene"]]
                name = next((q.answer for q in lesson.scenes[b["scene"]].questions if q.ask == b["question"]), None)
                i = b["frame"] - sc["first"]
                if name and 0 <= i < len(sc["frames"]["facts"]):
                    sc["frames"]["facts"][i].pop(name, None)
        b["answer"], b["caption"], b["revealed"] = "", "", False
    for si, hide in hide_by_scene.items():
        sc = out["scenes"][si]
        fr = sc["frames"]
        fr["caption"] = [mask_answers(t, hide) for t in fr["caption"]]
        fr["title"] = [mask_answers(t, hide) for t in fr["title"]]
        sc["notes"] = mask_answers(sc.get("notes", ""), hide)
        sc["title"] = mask_answers(sc.get("title", ""), hide)
    for b in out["beats"]:  # every caption of the scene, not only the revealing beat's
        hide = hide_by_scene.get(b["scene"])
        if hide and b["caption"]:
            b["caption"] = mask_answers(b["caption"], hide)
    return out, reveals


def served_page(data: dict, theme: str, ws_origin: str) -> str:
    """The page to serve: :func:`gpuviz.export.html.page_html` of ``data`` (already without answers), allowed
    to open a websocket to ``ws_origin`` (``ws://host:port``) and nothing else, with the follow script."""
    text = page_html(data, theme=theme)
    csp = "connect-src data:"
    if text.count(csp) != 1:
        raise ValueError("the HTML export's page has no connect-src to extend: the share script could not connect")
    text = text.replace(csp, f"connect-src data: {ws_origin}", 1)
    css = (HERE / "share.css").read_text(encoding="utf-8")
    js = (HERE / "share.js").read_text(encoding="utf-8").replace("</script", "<\\/script")
    tail = f"<style>\n{css}</style>\n<script>\n{js}</script>\n</body>"
    head, sep, rest = text.rpartition("</body>")
    if not sep:
        raise ValueError("the HTML export's page has no </body>")
    return head + tail + rest
