"""``python -m gpuviz``: the command line (``gpuviz.cli``)."""

import sys

from gpuviz.cli import main

if __name__ == "__main__":
    sys.exit(main())
