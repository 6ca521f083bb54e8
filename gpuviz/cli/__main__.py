"""``python -m gpuviz.cli``: the ``gpuviz`` command."""

import sys

from . import main

sys.exit(main())
