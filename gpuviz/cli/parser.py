"""The ``gpuviz`` command's argument parser: one ``add_*`` function per command, and ``gpuviz run``'s split of its
own options from the script's arguments. Imports no command (building the parser costs no Qt and no numba)."""

from __future__ import annotations

import argparse

from .. import cliargs as ca
from ..version import __version__

#: the options of `gpuviz run` that take a value; every other token after the script is the script's
RUN_VALUE_OPTIONS = ("--backend", "--kernel", "--launch", "-o", "--output", "--timeout", "--max-events", "--blocks",
                     "--watchdog")
RUN_FLAG_OPTIONS = ("-h", "--help")
RUN_SWITCHES = ("--run-untraced",)  # gpuviz's own wherever they come, like the options that take a value


def split_run_argv(tokens: list[str]) -> tuple[list[str], list[str]]:
    """Tokens after ``run`` -> (gpuviz's options plus the script path, the script's own arguments).

    gpuviz's options may come before or after the script and its arguments; everything after ``--``
    goes to the script untouched (for a script whose own options share a name with gpuviz's)."""
    ours, theirs = [], []
    script_seen = False
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        name = tok.split("=", 1)[0]
        if tok == "--":
            theirs.extend(tokens[i + 1:])
            break
        if name in RUN_VALUE_OPTIONS:
            ours.append(tok)
            if "=" not in tok and i + 1 < len(tokens):
                ours.append(tokens[i + 1])
                i += 1
        elif tok in RUN_SWITCHES:
            ours.append(tok)
        elif tok in RUN_FLAG_OPTIONS and not script_seen:
            ours.append(tok)
        elif not script_seen:
            ours.append(tok)
            script_seen = True
        else:
            theirs.append(tok)
        i += 1
    return ours, theirs


def _watchdog_seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds (0: no watchdog), not {text!r}") from None
    if not 0 <= v <= 86400:
        raise argparse.ArgumentTypeError(f"the watchdog takes 0 (off) to 86400 seconds, not {text}")
    return v


def _add_watchdog(s) -> None:
    s.add_argument("--watchdog", type=_watchdog_seconds, default=10.0, metavar="SECONDS",
                   help="stop a launch that makes no progress toward its end for this long (10; 0: never)")


def _add_launch_number(s) -> None:
    s.add_argument("--launch", type=ca.int_range(1, ca.MAX_INT, "--launch"), default=None, metavar="N",
                   help="launch N of a recording (numbered from 1, as gpuviz run and gpuviz info number them)")


def _add_open(sub) -> None:
    s = sub.add_parser("open", help="open a saved trace or recording in the app, or run a program (.py) from it")
    s.add_argument("file", type=ca.input_file)


def _add_run(sub) -> None:
    s = sub.add_parser("run", help="run a Numba CUDA program with its kernel launches captured",
                       description="Run an unmodified Python program that launches @cuda.jit kernels, in a worker "
                       "process; capture its launches and save them as one recording. Arguments after the script "
                       "are the script's own (put them after -- if they share a name with an option below).")
    s.add_argument("script", type=ca.input_file, help="the program (a .py file)")
    s.add_argument("--backend", choices=("cpu", "sim", "gpu"), default="cpu",
                   help="cpu: gpuviz's CPU executor (default); sim: numba's simulator; gpu: a real NVIDIA GPU")
    s.add_argument("--kernel", default=None, help="trace only the launches of this kernel (the others still run)")
    s.add_argument("--launch", type=ca.launch_numbers, default=None,
                   help="trace only launch K (or K1,K2); counted per kernel with --kernel, else over the program")
    s.add_argument("--blocks", type=ca.block_ids, default=None,
                   help="record only these linear block ids (comma-separated); the others still run")
    s.add_argument("-o", "--output", type=ca.output_file, default=None,
                   help="recording to write (default: SCRIPT.gpuviz here)")
    s.add_argument("--timeout", type=ca.seconds, default=300.0, help="stop the program after this many seconds (300)")
    s.add_argument("--max-events", type=ca.int_range(1, 1 << 40, "--max-events"), default=50_000_000,
                   help="most events the whole recording may hold (50,000,000)")
    _add_watchdog(s)
    s.add_argument("--run-untraced", action="store_true",
                   help="run a launch too large to trace untraced and let the program go on (default: the program "
                        "stops at it, saying the estimate, the limit and the options)")
    s.set_defaults(script_args=[])


def _add_capture(sub) -> None:
    s = sub.add_parser("capture", help="capture a bundled kernel to a trace file")
    s.add_argument("kernel", help="a bundled kernel (see `gpuviz kernels`)")
    s.add_argument("--size", type=ca.int_range(1, ca.MAX_INT, "the size"), default=None,
                   help="problem size: elements, or the side of a square matrix/image")
    s.add_argument("--block", type=ca.block_shape, default=None, help="block shape, e.g. 256 or 16x16")
    s.add_argument("--backend", choices=("cpu", "sim", "gpu"), default="cpu")
    s.add_argument("--blocks", type=ca.block_ids, default=None,
                   help="record only these linear block ids (comma-separated); the others still run")
    s.add_argument("-o", "--output", type=ca.output_file, required=True, help="trace file to write (.gpuviz)")
    _add_watchdog(s)


def _add_info(sub) -> None:
    s = sub.add_parser("info", help="summarise a trace file or a recording (every launch)")
    s.add_argument("file", type=ca.input_file)
    s.add_argument("--json", action="store_true", help="one JSON object (its 'launches' list: one entry per launch)")
    s.add_argument("--launch", type=ca.int_range(1, ca.MAX_INT, "--launch"), default=None, metavar="N",
                   help="describe launch N only (numbered from 1, as gpuviz run numbers them)")


def _add_snapshot(sub) -> None:
    s = sub.add_parser("snapshot", help="render a view or the whole window to PNG, headless")
    s.add_argument("file", type=ca.file_or_name, help="a trace file, or a bundled kernel name")
    s.add_argument("--frame", type=ca.frame_number, default=None,
                   help="frame number as the window shows it (1 = first, -1 = last)")
    s.add_argument("--view", default=None, help="view id (default: the whole window)")
    s.add_argument("--size", type=ca.image_size, default=(1920, 1080), help="WIDTHxHEIGHT, 64..8192 px each")
    _add_launch_number(s)
    s.add_argument("-o", "--output", type=ca.output_file, required=True)


def _add_lesson(sub) -> None:
    s = sub.add_parser("lesson", help="play a lesson: a lesson file, or a shipped lesson by name")
    s.add_argument("lesson", nargs="?", type=ca.file_or_name, help="a .toml/.json lesson file or a shipped lesson's name")
    s.add_argument("--list", action="store_true", help="list the shipped lessons")
    s.add_argument("--check", action="store_true", help="check the lesson (captures every scene), print a summary")
    s.add_argument("--print", action="store_true", help="print every step (notes, questions, answers, captions)")
    s.add_argument("--present", action="store_true", help="presenter mode: full screen, projector sizes, clicker")
    s.add_argument("--theme", choices=("light", "dark"), default="dark")


def _add_export(sub) -> None:
    s = sub.add_parser("export", help="export a view or the window (PNG, SVG), a frame range (GIF, MP4), the "
                                      "timeline (Perfetto / Chrome trace JSON)")
    s.add_argument("file", type=ca.file_or_name, help="a trace file, or a bundled kernel name (captured now at its "
                   "small size); for html also a lesson (a shipped lesson's name or a lesson file)")
    s.add_argument("--format", required=True, choices=("png", "svg", "gif", "mp4", "perfetto", "html"))
    s.add_argument("--frames", default=None, help="frames A:B as the window numbers them, both included (1:120, "
                                                  ":50, -30:), for gif, mp4, perfetto and html")
    s.add_argument("--max-mb", type=ca.float_range(0.01, 1000.0, "--max-mb"), default=3.0,
                   help="html: refuse a page over this many MB (3)")
    s.add_argument("--frame", type=ca.frame_number, default=1, help="the frame for png and svg, as the window numbers "
                                                                  "it (1 = first, -1 = last)")
    s.add_argument("--view", default=None, help="view id (default: the whole window)")
    s.add_argument("--size", type=ca.image_size, default=(1280, 720), help="WIDTHxHEIGHT, 64..8192 px each")
    s.add_argument("--theme", choices=("light", "dark"), default="light")
    s.add_argument("--scale", type=ca.float_range(0.25, 8.0, "the text scale"), default=1.0, help="text scale (0.25..8)")
    s.add_argument("--fps", type=ca.float_range(0.1, 120.0, "frames per second"), default=8.0,
                   help="frames per second of a gif or mp4 (0.1..120)")
    s.add_argument("--no-caption", action="store_true", help="no narration band on gif/mp4 frames")
    s.add_argument("--timings", action="append", type=ca.input_file, help="a timings JSON file to add to a perfetto export")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_launch_number(s)
    s.add_argument("-o", "--output", type=ca.output_file, required=True)


def build_parser() -> ca.Parser:
    """The parser of every command, in the order ``gpuviz --help`` lists them; ``args.command`` names the command
    (None: the window)."""
    p = ca.Parser(prog="gpuviz", description="See what a GPU really does when it runs a kernel.")
    p.add_argument("--present", action="store_true", help="presenter mode: full screen, scaled for a projector")
    p.add_argument("--share", action="store_true", help="share with the class: students' browsers follow the window "
                   "(a link and a QR code; this machine only unless --lan)")
    p.add_argument("--lan", action="store_true", help="with --share: students join over the LAN")
    p.add_argument("--version", action="version", version=f"gpuviz {__version__}")
    sub = p.add_subparsers(dest="command")
    _add_open(sub)
    _add_run(sub)
    sub.add_parser("kernels", help="list the bundled kernels")
    sub.add_parser("doctor", help="check what gpuviz needs here (Qt, display, fonts, numba, GPU, folders)")
    _add_capture(sub)
    _add_info(sub)
    _add_snapshot(sub)
    _add_lesson(sub)
    _add_export(sub)
    return p
