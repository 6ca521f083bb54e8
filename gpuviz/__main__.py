"""``python -m gpuviz``: the command line (``gpuviz.cli``), or the window when that is not there."""

import sys


def _main() -> int:
    try:
        from gpuviz.cli import main
    except ModuleNotFoundError as e:
        if e.name != "gpuviz.cli":
            raise
        from gpuviz.app import run_app

        return run_app(sys.argv[1] if len(sys.argv) > 1 else None)
    return main()


if __name__ == "__main__":
    sys.exit(_main())
