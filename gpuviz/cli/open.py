"""``gpuviz open FILE``: the window on a saved trace, or with its launch list on a recording of several launches
or on a program (``.py``) it runs."""

from __future__ import annotations

from .. import app
from ..ui.views.launches import needs_launch_list


def main(args) -> int:
    if needs_launch_list(args.file):  # a program to run, or a recording of several launches
        return app.open_window(args.file, present=args.present)
    return app.run_app(trace_path=args.file, present=args.present)
