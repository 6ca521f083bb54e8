"""``gpuviz`` with no command: the window on the embedded default (``--present``, ``--share [--lan]``)."""

from __future__ import annotations

from .. import app


def main(args) -> int:
    return app.run_app(trace_path=None, present=args.present, share="lan" if args.lan else args.share)
