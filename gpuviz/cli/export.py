"""``gpuviz export FILE --format ...``: PNG / SVG of a view or the window, GIF / MP4 of a frame range (drawn by the
window code, :mod:`gpuviz.ui.film`), the Perfetto timeline, or one self-contained HTML page of a trace, a bundled
kernel or a lesson. What is reported written is read back first."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..export.framerange import parse_frames, window_frame, window_frames
from ..export.html import export_html
from ..export.verify import check_export
from ..lessons import LessonError, builtin_lessons, load_lesson
from ..model.prepared import prepare
from ..model.safewrite import replace_atomically
from ..model.timings import TimingSet
from ..model.tracefile import TraceFileError
from ..ui import film
from .bundled import trace_or_kernel


def _export_html(args) -> int:
    """``--format html``: one self-contained page of a trace, a bundled kernel or a lesson."""
    src = args.file
    try:
        is_lesson = src.endswith((".toml", ".json")) or (not os.path.exists(src) and src in builtin_lessons())
        if is_lesson and args.launch is not None:
            raise ValueError("--launch picks a launch of a recording file; a lesson has scenes of its own")
        # a trace is prepared here, once: the page's code takes the prepared trace
        source = load_lesson(src) if is_lesson else prepare(trace_or_kernel(src, "export", args.launch))
        with replace_atomically(args.output, "page") as tmp:  # a regular file or a new one, complete or not at all
            export_html(source, tmp, frames=window_frames(args.frames), theme=args.theme,
                        max_bytes=int(args.max_mb * 1e6))
            held = check_export(tmp, "html", name=args.output)  # read back before it is moved into place
        out = Path(args.output)
    except (FileNotFoundError, TraceFileError, LessonError, ValueError, KeyError, OSError) as exc:
        print(f"gpuviz export: {exc.args[0] if isinstance(exc, KeyError) and exc.args else exc}", file=sys.stderr)
        return 1
    print(f"{out} ({out.stat().st_size / 1e6:.2f} MB: {held})")
    return 0


def _film_frames(prepared, frames_text) -> int:
    """How many frames a film of ``--frames`` holds (what export_film draws: frames A..B of the trace)."""
    start, stop = parse_frames(window_frames(frames_text), prepared.frames.n_frames)
    return stop - start


def main(args) -> int:
    if args.format == "html":
        return _export_html(args)
    try:
        prepared = prepare(trace_or_kernel(args.file, "export", args.launch))  # once, for the export and its check
        timing_sets = [TimingSet.load(path) for path in args.timings or []]
        with replace_atomically(args.output, "export") as tmp:
            film.export(prepared, tmp, args.format, frames=window_frames(args.frames), frame=window_frame(args.frame),
                        view=args.view, size=args.size, theme=args.theme, scale=args.scale, fps=args.fps,
                        caption=False if args.no_caption else None, progress=not args.quiet, timing_sets=timing_sets,
                        name=str(args.output))
            # read back before it is moved into place: what is reported written is there, whole
            held = check_export(tmp, args.format, size=None if args.format == "perfetto" else args.size,
                                n_frames=_film_frames(prepared, args.frames) if args.format in ("gif", "mp4") else None,
                                name=args.output)
        out = args.output
    except (FileNotFoundError, TraceFileError, ValueError, KeyError, OSError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"gpuviz export: {msg}", file=sys.stderr)
        return 1
    print(f"{out} ({held})")
    return 0
