"""Exports for slides and trace viewers.

* :mod:`.perfetto`  the timeline as Chrome / Perfetto trace JSON (Qt-free)
* :mod:`.html`      one self-contained page that replays a trace or a lesson offline in a browser (Qt-free)

Pictures and films (PNG / SVG, GIF / MP4) are drawn by the window's own views, offscreen: they are
:mod:`gpuviz.ui.film`, beside the window, whose ``export`` takes every format. This package imports no Qt and
nothing from :mod:`gpuviz.ui`. ``gpuviz export FILE --format png|svg|gif|mp4|perfetto|html ...`` is the
command-line front end.
"""

from .framerange import parse_frames
from .perfetto import trace_events, write_perfetto

FORMATS = ("png", "svg", "gif", "mp4", "perfetto", "html")


__all__ = ["FORMATS", "parse_frames", "trace_events", "write_perfetto"]
