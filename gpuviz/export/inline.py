"""The HTML page, inline in a notebook (Jupyter, JupyterLab, VS Code, Colab): ``gpuviz.show(trace)`` in a kernel, and
a trace's rich display (``trace`` as a cell's last line).

    page = InlinePage(trace)              # or a Lesson, or a .gpuviz / lesson file's path
    page._repr_html_()                    # <iframe srcdoc="…the exported page…">: what the notebook draws

The page is :func:`gpuviz.export.html.page_html`'s, whole and self-contained, in an ``<iframe srcdoc>`` sandboxed
to its scripts: it needs no server, no extension and no widget library, and a notebook saved with its outputs
replays it offline (nbviewer, GitHub's preview and Colab show it as they show any HTML output). A trace with
more frames than one page takes shows its first :data:`INLINE_FRAMES` (the page says how many it leaves out,
and ``frames="A:B"`` picks others). Qt-free.
"""

from __future__ import annotations

import html as _html
import sys
from pathlib import Path

from ..lessons.format import Lesson, builtin_lessons, load_lesson
from ..model.prepared import prepare
from ..model.recording import load
from ..model.trace import Trace
from .html import MAX_FRAMES_WITHOUT_RANGE, lesson_page_data, page_html, trace_page_data

__all__ = ["INLINE_FRAMES", "InlinePage", "in_notebook", "inline_html"]

#: a trace with more frames than one page takes (MAX_FRAMES_WITHOUT_RANGE) shows this many inline
INLINE_FRAMES = 5000
#: the iframe's height in pixels (the reader can drag it taller)
HEIGHT_PX = 760


def in_notebook() -> bool:
    """True inside a Jupyter kernel (Jupyter, JupyterLab, VS Code, Colab), where output is drawn as HTML; False in
    a terminal's IPython, a script or a test."""
    if "IPython" not in sys.modules:
        return False
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def _source(obj):
    """``obj`` as a Trace or a Lesson: a Trace, a Lesson, a recording's first traced launch, or a file's path (a
    ``.gpuviz`` trace or recording, a lesson file, a shipped lesson's name)."""
    if isinstance(obj, (Trace, Lesson)):
        return obj
    traces = getattr(obj, "traces", None)
    if traces is not None and not callable(traces):
        traces = list(traces)
        if not traces:
            raise ValueError("gpuviz.show: the recording holds no traced launch")
        return traces[0]
    if isinstance(obj, (list, tuple)) and obj and all(isinstance(t, Trace) for t in obj):
        return obj[0]
    if isinstance(obj, (str, Path)):
        path = Path(obj)
        if path.suffix.lower() in (".toml", ".json") or (not path.exists() and str(obj) in builtin_lessons()):
            return load_lesson(obj)
        loaded = load(path)
        return loaded if isinstance(loaded, Trace) else _source(loaded)
    raise TypeError(f"gpuviz.show takes a Trace, a Lesson, a recording or a file path, not {type(obj).__name__}")


def _page(source, frames=None, theme: str = "light") -> str:
    if isinstance(source, Lesson):
        return page_html(lesson_page_data(source), theme=theme)
    prepared = prepare(source)  # the notebook's entry point: what is below takes the prepared trace
    if frames in (None, ""):
        n = prepared.frames.n_frames
        rng = (0, min(n, INLINE_FRAMES)) if n > MAX_FRAMES_WITHOUT_RANGE else None
        return page_html(trace_page_data(prepared, rng), theme=theme)
    return page_html(trace_page_data(prepared, frames), theme=theme)


def inline_html(obj, frames=None, theme: str = "light", height: int = HEIGHT_PX) -> str:
    """The HTML a notebook draws for ``obj``: the exported page in an ``<iframe srcdoc>``, ``height`` pixels tall
    (resizable), its scripts allowed and nothing else (no access to the notebook, its cookies or its storage)."""
    page = _page(_source(obj), frames, theme)
    return (f'<iframe class="gpuviz-page" title="gpuviz" sandbox="allow-scripts" srcdoc="{_html.escape(page)}" '
            f'style="width:100%;height:{int(height)}px;border:1px solid #8888;border-radius:4px;resize:vertical">'
            f'</iframe>')


class InlinePage:
    """What ``gpuviz.show`` displays in a notebook: ``obj``'s page, drawn by the notebook's HTML output. The page
    is built when displayed (``_repr_html_``), once."""

    def __init__(self, obj, frames=None, theme: str = "light", height: int = HEIGHT_PX):
        self.source = _source(obj)
        self.frames, self.theme, self.height = frames, theme, height
        self._html: str | None = None

    def _repr_html_(self) -> str:
        if self._html is None:
            self._html = inline_html(self.source, self.frames, self.theme, self.height)
        return self._html

    def __repr__(self) -> str:
        what = (f"lesson {self.source.name!r}" if isinstance(self.source, Lesson)
                else f"{self.source.launch.kernel_name} ({len(self.source):,} events)")
        return f"<gpuviz page of {what}>"
