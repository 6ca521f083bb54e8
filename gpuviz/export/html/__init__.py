"""One self-contained HTML page that replays a trace, or a whole lesson, offline in any current browser.

    gpuviz export mm.gpuviz --format html -o mm.html               # a trace, or a bundled kernel's name
    gpuviz export shared_tiling --format html -o lesson.html       # a lesson: a shipped one's name or a file
    gpuviz export big.gpuviz --format html --frames 0:4000 -o b.html   # a trace too big: a frame range

The page carries everything: its data (JSON, gzip, base64; read back with the browser's own
``DecompressionStream``), its code (``views.js``, ``page.js``), its styles (``page.css``) and the vendored libraries
(``vendor/``: Prism for the kernel's source, d3-scale-chromatic for the cividis heat maps). It makes no
network request.

Every word and every state the page shows is computed here, by the model, never re-derived in
JavaScript: frame titles are :meth:`Frames.describe`, captions :meth:`Narrator.text` (the window's
words, with the bundled kernel's notes), lane and block states :meth:`Frames.lane_states` and
:meth:`Frames.block_states`, the figures beside the memory views (sectors, n-way conflicts)
:meth:`Narrator.facts`, a lesson's beats, notes, questions and answers the :class:`LessonPlayer`'s
slides. The page only draws them and steps through them. Colours are the app's themes
(:mod:`gpuviz.style.theme`, Okabe-Ito and cividis). numpy only: no Qt.
"""

from __future__ import annotations

import base64
import gzip
import html as _html
import json
from pathlib import Path

import numpy as np

from ...catalog import get_kernel
from ...lessons.format import Lesson
from ...lessons.player import LessonPlayer, mask_answers
from ...model.frames import BlockState, Frames, LaneState, format_block
from ...model.narration import Narrator
from ...model.prepared import Prepared, prepare
from ...model.trace import EventKind, Trace
from ...style.render import array_layout, bank_layout
from ...style.theme import DARK, LIGHT, OKABE_ITO
from ..framerange import parse_frames

__all__ = ["DEFAULT_MAX_BYTES", "PageTooBig", "export_html", "lesson_page_data", "page_html", "trace_page_data"]

HERE = Path(__file__).resolve().parent
#: the default ceiling of one page's size: a lesson must stay easy to mail, to put on a course page
DEFAULT_MAX_BYTES = 3_000_000
#: a trace with more frames than this is not even built without a frame range (it could not fit)
MAX_FRAMES_WITHOUT_RANGE = 20_000
#: the page's own code, in the order it runs: views.js (which views a scene shows, and how large) before page.js
PAGE_JS = ("views.js", "page.js")
VENDOR_JS = ("d3-color.min.js", "d3-interpolate.min.js", "d3-scale-chromatic.min.js",
             "prism-core.min.js", "prism-python.min.js")
_LICENSES = {"d3-color.min.js": "d3-color.LICENSE", "d3-interpolate.min.js": "d3-interpolate.LICENSE",
             "d3-scale-chromatic.min.js": "d3-scale-chromatic.LICENSE", "prism-core.min.js": "prismjs.LICENSE",
             "prism-python.min.js": "prismjs.LICENSE"}
_FACT_KEYS = ("lanes", "width", "sectors", "ideal_sectors", "ways", "waiting_warps", "warps_per_block",
              "threads_at_barrier")


class PageTooBig(ValueError):
    """The page would exceed its size limit: the message says how big, and which frame range would fit."""


# ---- the model's words and states, frame by frame -------------------------------------------------
def kernel_notes(trace) -> tuple:
    """A bundled kernel's own notes at chosen frames (``KernelSpec.frame_notes``), as the window shows them."""
    bundled = (trace.launch.meta or {}).get("bundled_kernel") or {}
    if not bundled.get("name"):
        return ()
    try:
        return tuple(get_kernel(bundled["name"]).frame_notes or ())
    except (ImportError, KeyError):
        return ()


def _palettes() -> dict:
    out = {}
    for t in (LIGHT, DARK):
        out[t.name] = {
            "background": t.background, "panel": t.panel, "foreground": t.foreground, "muted": t.muted,
            "grid": t.grid, "current": t.current, "selected": t.selected, "line": t.highlight_line,
            "lane": [t.lane[s] for s in sorted(t.lane)], "block": [t.block[s] for s in sorted(t.block)],
            "read": t.load, "write": t.store, "atomic": OKABE_ITO["reddish_purple"],
            "conflict": t.conflict,
            "untouched": "#222226" if t.dark else "#ECECEC", "heat_toward": 0.45 if t.dark else 0.15,
        }
    return out


def _layout(info) -> dict:
    if info.space == "shared":
        g = bank_layout(info.nbytes)
    else:
        g = array_layout(tuple(info.shape) if info.shape else (info.size,))
    return {"rows": int(g.rows), "cols": int(g.cols), "size": int(g.size)}


def _launch_data(trace) -> dict:
    L = trace.launch
    return {
        "kernel": L.kernel_name, "grid": list(L.grid), "block": list(L.block), "warp_size": int(L.warp_size),
        "threads_per_block": int(L.threads_per_block), "warps_per_block": int(L.warps_per_block),
        "n_blocks": int(L.n_blocks), "n_threads": int(L.n_threads), "backend": L.backend,
        "device": L.device or {"cpu": "gpuviz CPU executor", "sim": "numba's CUDA simulator"}.get(L.backend, L.backend),
        "created": L.created, "dropped": int(L.dropped),
        "source_file": L.source_file, "first_line": int(L.first_line or 1), "source": L.source_lines(),
        "arrays": [{"name": a.name, "shape": list(a.shape), "dtype": a.dtype, "itemsize": int(a.itemsize),
                    "space": a.space, "layout": _layout(a)} for a in L.arrays],
        "lane_labels": [s.label for s in LaneState], "block_labels": [s.label for s in BlockState],
    }


def scene_data(prepared: Prepared, narrator: Narrator, first: int, last: int, *, title: str = "",
               notes: str = "", scene_range: bool = False) -> dict:
    """Everything the page needs for frames ``first`` .. ``last`` (inclusive) of one launch (``prepared``: its
    trace's :class:`~gpuviz.model.prepared.Prepared`)."""
    trace, frames = prepared.trace, prepared.frames
    n_total = frames.n_frames
    if n_total == 0:
        raise ValueError(f"{trace.launch.kernel_name}: the launch recorded no events, there is nothing to show")
    first, last = int(first), int(last)
    sel = np.arange(first, last + 1)
    lo, hi = int(frames.offsets[first]), int(frames.offsets[last + 1])
    ev = frames.perm[lo:hi]
    states_lane = [bytes(frames.lane_states(int(frames.block[f]), int(f)) + 48).decode("ascii") for f in sel]
    states_block = [bytes(frames.block_states(int(f)) + 48).decode("ascii") for f in sel]
    facts = []
    for f in sel:
        d = narrator.facts(int(f))
        facts.append({k: d[k] for k in _FACT_KEYS if k in d and d[k] is not None})
    out = {
        "title": title, "notes": notes, "launch": _launch_data(trace),
        "first": first, "last": last, "n_frames_total": int(n_total),
        "frames": {
            "block": frames.block[sel].tolist(), "warp": frames.warp[sel].tolist(),
            "line": frames.line[sel].tolist(), "kind": frames.kind[sel].tolist(),
            "lines": [frames.lines_at(int(f)).tolist() for f in sel],
            "title": [frames.describe(int(f)) for f in sel],
            "caption": [narrator.text(int(f)) for f in sel],
            "lane_states": states_lane, "block_states": states_block, "facts": facts,
        },
        "events": {
            "offsets": (frames.offsets[first:last + 2] - lo).tolist(),
            "thread": trace.thread[ev].tolist(), "kind": trace.kind[ev].tolist(),
            "array": trace.array[ev].tolist(), "index": trace.index[ev].tolist(),
        },
        "barriers": [int(f) for f in frames.barrier_complete_frames if first <= f <= last],
        "block_names": [format_block(trace.launch, b) for b in range(trace.launch.n_blocks)],
        "left_out": "" if scene_range else _left_out(frames, first, last),
        "kinds": {int(k): k.label for k in EventKind},
    }
    return out


def _left_out(frames: Frames, first: int, last: int) -> str:
    """What a cut page leaves out, in words ("" when it holds every frame); frames numbered as the window
    numbers them (from 1)."""
    n = frames.n_frames
    if first == 0 and last == n - 1:
        return ""
    parts = []
    if first > 0:
        parts.append(f"frames 1–{first:,} ({int(frames.offsets[first]):,} events)")
    if last < n - 1:
        parts.append(f"frames {last + 2:,}–{n:,} ({int(frames.offsets[n] - frames.offsets[last + 1]):,} events)")
    kept = np.unique(frames.block[first:last + 1])
    missing = frames.launch.n_blocks - len(kept)
    text = (f"This page holds frames {first + 1:,}–{last + 1:,} of the launch's {n:,}. Left out: "
            + " and ".join(parts) + ".")
    if missing > 0:
        text += f" {missing:,} of the {frames.launch.n_blocks:,} blocks have no frame here."
    return text + " Export another range with gpuviz export … --format html --frames A:B."


# ---- whole pages ------------------------------------------------------------------------------------
def trace_page_data(prepared: Prepared, frames_range=None, narrator: Narrator | None = None, title: str = "") -> dict:
    """The page data of one prepared trace; ``frames_range``: frame indices ``"A:B"`` (from 0, B exclusive, as a
    Python slice) or ``(A, B)``, default all. (The command line takes frames as the window numbers them.)"""
    trace, frames = prepared.trace, prepared.frames
    if frames.n_frames == 0:
        raise ValueError(f"{trace.launch.kernel_name}: the launch recorded no events, there is nothing to show")
    if frames_range in (None, "") and frames.n_frames > MAX_FRAMES_WITHOUT_RANGE:
        raise PageTooBig(
            f"{trace.launch.kernel_name} has {frames.n_frames:,} frames ({len(trace):,} events): too many for one "
            f"page. Choose a frame range with --frames A:B (frames A to B, numbered from 1 as in the window), e.g. "
            f"--frames 1:{MAX_FRAMES_WITHOUT_RANGE // 4}")
    start, stop = parse_frames(frames_range, frames.n_frames)
    narrator = narrator if narrator is not None else Narrator(prepared, notes=kernel_notes(trace))
    L = trace.launch
    scene = scene_data(prepared, narrator, start, stop - 1, title=title or L.kernel_name)
    return {"kind": "trace", "title": title or f"{L.kernel_name} · grid {tuple(L.grid)} × block {tuple(L.block)}",
            "summary": "", "scenes": [scene], "beats": []}


def lesson_page_data(lesson, player=None) -> dict:
    """The page data of a lesson: every scene (its frame range), and every beat in the order they are clicked."""
    player = player or LessonPlayer(lesson)
    slides = player.play_all()
    scenes = []
    for i, sc in enumerate(lesson.scenes):
        ls = player.load(i)
        notes = next((s.notes for s in slides if s.scene_index == i), "")
        scenes.append(scene_data(ls.prepared, ls.narrator, ls.first, ls.last, title=sc.title,
                                 notes=notes, scene_range=True))
        # the window's views the scene brings forward (page.js shows its own of them, laid out large)
        scenes[-1]["views"] = list(sc.views)
    # a beat's caption as the window shows it: the narration and, once revealed, the kernel's own note
    beats = [{"scene": s.scene_index, "frame": s.frame,
              "caption": s.caption + (f". {s.kernel_note}" if s.caption and s.kernel_note else ""),
              "question": s.question, "answer": s.answer, "progress": s.progress,
              "revealed": bool(s.answer) or not s.question} for s in slides]
    for beat, s in zip(beats, slides):
        if s.notes != scenes[s.scene_index]["notes"]:  # the last beat's: the lesson ends, which one comes next
            beat["notes"] = s.notes
        if s.hidden_answer:  # a question waits: the frame's title as the window shows it then, its answer blanked
            frames = player.load(s.scene_index).frames
            beat["title"] = mask_answers(frames.describe(s.frame), [(s.hidden_answer, s.question)])
    return {"kind": "lesson", "title": lesson.title, "summary": getattr(lesson, "summary", "") or "",
            "scenes": scenes, "beats": beats}


def _encoded(data: dict) -> str:
    raw = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=9, mtime=0)).decode("ascii")


def _vendor_scripts() -> str:
    parts = []
    for name in VENDOR_JS:
        lic = (HERE / "vendor" / _LICENSES[name]).read_text(encoding="utf-8").strip().replace("*/", "* /")
        code = (HERE / "vendor" / name).read_text(encoding="utf-8").replace("</script", "<\\/script")
        parts.append(f"<script>/*! {name}\n{lic}\n*/\n{code}</script>")
    return "\n".join(parts)


def page_html(data: dict, theme: str = "light") -> str:
    """The page: ``page.html`` with its styles, code, vendored libraries and ``data`` put in."""
    if theme not in ("light", "dark"):
        raise ValueError(f"unknown theme {theme!r}; themes: light, dark")
    data = dict(data, palettes=_palettes())
    template = (HERE / "page.html").read_text(encoding="utf-8")
    js = "\n".join((HERE / name).read_text(encoding="utf-8") for name in PAGE_JS).replace("</script", "<\\/script")
    css = (HERE / "page.css").read_text(encoding="utf-8")
    out = template
    for key, value in (("{{TITLE}}", _html.escape(data.get("title", "gpuviz"))), ("{{THEME}}", theme),
                       ("{{CSS}}", css), ("{{VENDOR}}", _vendor_scripts()), ("{{DATA}}", _encoded(data)),
                       ("{{JS}}", js)):
        out = out.replace(key, value, 1)
    return out


def _frames_that_fit(prepared: Prepared, first: int, n: int, size: int, max_bytes: int, theme: str) -> int:
    """How many frames from ``first`` make a page under ``max_bytes``: an estimate from the page's
    fixed part and its bytes per frame, checked by building that page (and shrunk until it fits)."""
    narrator = Narrator(prepared, notes=kernel_notes(prepared.trace))
    fixed = len(page_html(trace_page_data(prepared, (first, first + 1), narrator=narrator),
                          theme=theme).encode("utf-8"))
    if fixed > max_bytes:
        return 0
    fit = n
    for _ in range(6):
        fit = max(1, min(fit - 1, int((max_bytes - fixed) / max(1.0, (size - fixed) / fit) * 0.95)))
        page = page_html(trace_page_data(prepared, (first, first + fit), narrator=narrator), theme=theme)
        size = len(page.encode("utf-8"))
        if size <= max_bytes:
            return fit
    return 0


def export_html(source, out, frames=None, theme: str = "light", max_bytes: int = DEFAULT_MAX_BYTES,
                narrator: Narrator | None = None) -> Path:
    """Write the page of ``source`` (a :class:`Trace`, its :class:`Prepared`, or a :class:`Lesson`) to ``out``;
    returns the path. A trace is prepared here (an entry point: what is below takes the prepared trace).

    A page over ``max_bytes`` is refused with :class:`PageTooBig`, which says which frame range fits."""
    if isinstance(source, Trace):
        source = prepare(source)
    if isinstance(source, Lesson):
        if frames not in (None, ""):
            raise ValueError("a lesson's page holds its scenes' own frame ranges: --frames is for a trace")
        data = lesson_page_data(source)
        what = f"lesson {source.name}"
    else:
        data = trace_page_data(source, frames, narrator=narrator)
        what = source.launch.kernel_name
    text = page_html(data, theme=theme)
    size = len(text.encode("utf-8"))
    if max_bytes and size > max_bytes:
        n = sum(sc["last"] - sc["first"] + 1 for sc in data["scenes"])
        hint = ""
        if data["kind"] == "trace":
            first = data["scenes"][0]["first"]
            fit = _frames_that_fit(source, first, n, size, max_bytes, theme)
            hint = (f" Choose fewer frames with --frames A:B (frames A to B, numbered from 1 as in the window): "
                    f"{fit:,} frames fit, e.g. --frames {first + 1}:{first + fit}") if fit else (
                " Even one frame does not fit: raise the limit (--max-mb).")
        raise PageTooBig(f"the page of {what} would be {size / 1e6:.2f} MB, over the {max_bytes / 1e6:.2f} MB "
                         f"limit ({n:,} frames).{hint}")
    out = Path(out)
    out.write_text(text, encoding="utf-8")
    return out
