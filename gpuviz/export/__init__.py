"""Exports for slides and trace viewers.

* :mod:`.perfetto`  the timeline as Chrome / Perfetto trace JSON (Qt-free)
* :mod:`.render`    a view or the window to PNG / SVG, a frame range to GIF / MP4 (offscreen Qt, imageio)
* :mod:`.html`      one self-contained page that replays a trace or a lesson offline in a browser (Qt-free)

``gpuviz export FILE --format png|svg|gif|mp4|perfetto|html ...`` is the command-line front end.
"""

from .perfetto import trace_events, write_perfetto

FORMATS = ("png", "svg", "gif", "mp4", "perfetto", "html")


def export(trace, out, fmt: str, frames=None, frame: int = 0, view: str | None = None, size=(1280, 720),
           theme: str = "light", scale: float = 1.0, fps: float = 8.0, caption: bool | None = None,
           progress: bool = True, timing_sets=()):
    """Export ``trace`` to ``out`` in ``fmt`` (one of :data:`FORMATS`); returns the path written."""
    fmt = fmt.lower()
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; formats: {', '.join(FORMATS)}")
    if fmt == "html":
        from .html import export_html

        return export_html(trace, out, frames=frames, theme=theme)
    if fmt == "perfetto":
        from ..model.frames import Frames
        from .render import parse_frames

        fr = Frames(trace)
        rng = parse_frames(frames, fr.n_frames) if fr.n_frames else (0, 0)
        return write_perfetto(out, trace, frames=fr, frame_range=rng, timing_sets=timing_sets)
    from .render import export_film, export_image

    stage = dict(view=view, size=size, theme=theme, scale=scale)
    if fmt in ("png", "svg"):
        return export_image(trace, out, fmt, frame=frame, caption=bool(caption), **stage)
    return export_film(trace, out, fmt, frames=frames, fps=fps, progress=progress,
                       caption=True if caption is None else caption, **stage)


__all__ = ["FORMATS", "export", "trace_events", "write_perfetto"]
