"""The ``gpuviz`` command.

    gpuviz                         open the app on its embedded default (no GPU, no file needed)
    gpuviz open FILE               open a saved trace or recording, or run a program (FILE.py) and open it
    gpuviz run SCRIPT.py [ARGS]    run a Numba CUDA program with every launch captured, save a recording
    gpuviz kernels                 list the bundled kernels
    gpuviz doctor                  check what gpuviz needs here, in plain words, with the fix for each problem
    gpuviz capture KERNEL ...      capture a bundled kernel to a trace file
    gpuviz info FILE [--json]      what a trace holds
    gpuviz snapshot FILE ...       render a view (or the window) to PNG, headless
    gpuviz lesson FILE|NAME        play a lesson (a file, or a shipped one by name; --list shows them)
    gpuviz export FILE ...         PNG / SVG of a view, GIF / MP4 of a frame range, Perfetto JSON timeline, HTML page

One module of this package per command (``gpuviz/cli/info.py`` ...; ``window.py``: no command), each with
``main(args) -> int`` and its imports at its top; ``parser.py`` builds the arguments of all of them without
importing any. :func:`main` imports the module of the command asked for, by name (:data:`COMMANDS`): the one lazy
import of the command line, so that a command pays only for what it uses (``gpuviz info`` loads neither Qt nor
numba, ``gpuviz capture --backend sim`` picks numba's simulator before numba loads, the window loads no capture).
"""

from __future__ import annotations

import importlib
import os
import sys

from ..qt_platform import EXIT_STATUS, PlatformUnavailable
from .parser import build_parser, split_run_argv

#: command -> its module in this package (None: no command, the window)
COMMANDS = {None: "window", "open": "open", "run": "run", "kernels": "kernels", "doctor": "doctor",
            "capture": "capture", "info": "info", "snapshot": "snapshot", "lesson": "lesson", "export": "export"}


def _parse(argv: list[str]):
    """The parsed arguments; ``gpuviz run``'s tokens after the script are the script's own (``args.script_args``)."""
    parser = build_parser()
    first = next((i for i, t in enumerate(argv) if t not in ("--present", "--share", "--lan")), None)
    if first is not None and argv[first] == "run":
        ours, script_args = split_run_argv(argv[first + 1:])
        args = parser.parse_args(argv[: first + 1] + ours)
        args.script_args = script_args
        return args
    return parser.parse_args(argv)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:  # a bad argument is one line and status 2 (argparse exits; the status is returned instead)
        args = _parse(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    try:
        command = importlib.import_module(f"{__name__}.{COMMANDS[args.command]}")
        if args.command is None:
            return command.main(args)
        status = int(command.main(args) or 0)
        sys.stdout.flush()  # here, where a reader gone away is caught, rather than at the interpreter's exit
        return status
    except PlatformUnavailable as exc:  # the window cannot open here: why, and what to run (gpuviz/qt_platform.py)
        print(exc, file=sys.stderr)
        return EXIT_STATUS
    except BrokenPipeError:
        # the reader went away (gpuviz info REC | head): nothing more to say, and no traceback. stdout goes to
        # /dev/null so that the interpreter's own flush at exit does not raise again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports a command cut off by its pipe
