"""``gpuviz snapshot FILE``: a view or the whole window rendered to PNG, headless (a trace file, a launch of a
recording, or a bundled kernel captured now)."""

from __future__ import annotations

import os
import sys

from .. import app
from ..catalog import all_kernels
from ..export.framerange import window_frame
from ..export.verify import check_export
from ..model.safewrite import replace_atomically
from ..model.tracefile import TraceFileError
from .bundled import capture_bundled
from .common import load_for_launch


def _source(args):
    """(trace or kernel's trace to show, None) or (None, exit status) after saying why there is none."""
    source = args.file
    if not os.path.exists(source):
        if source not in all_kernels():
            print(f"gpuviz snapshot: {source!r} is neither a trace file nor a bundled kernel (see `gpuviz kernels`)",
                  file=sys.stderr)
            return None, 2
        if args.launch is not None:
            print(f"gpuviz snapshot: --launch picks a launch of a recording file; {source!r} is a bundled kernel",
                  file=sys.stderr)
            return None, 2
        source, _spec, _ = capture_bundled(source, None, None, "cpu")
        return source, None
    try:
        _rec, trace = load_for_launch(source, args.launch, "snapshot")
    except ValueError as exc:  # TraceFileError too: a damaged file, or a launch it does not hold
        print(f"gpuviz snapshot: {exc}", file=sys.stderr)
        return None, 2 if args.launch is not None and not isinstance(exc, TraceFileError) else 1
    except OSError as exc:
        print(f"gpuviz snapshot: {exc}", file=sys.stderr)
        return None, 1
    return trace, None


def main(args) -> int:
    source, status = _source(args)
    if source is None:
        return status
    try:
        with replace_atomically(args.output, "snapshot") as tmp:
            app.snapshot(source, frame=window_frame(args.frame), view=args.view, size=args.size, out_png=tmp)
            # read back before it is moved into place (its size is reported: a window has a least size of its own)
            held = check_export(tmp, "png", name=args.output)
    except (TraceFileError, ValueError, KeyError, OSError) as exc:
        print(f"gpuviz snapshot: {exc.args[0] if isinstance(exc, KeyError) and exc.args else exc}", file=sys.stderr)
        return 1
    print(f"{args.output} ({held})")
    return 0
