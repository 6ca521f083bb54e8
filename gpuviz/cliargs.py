"""Argument types of the ``gpuviz`` command: every value range-checked when it is parsed, before any work.

Each function takes the text of one argument and returns its value or raises
``argparse.ArgumentTypeError`` with a message that says what was expected; :class:`Parser` prints that
message on one line (no usage block, no traceback) and exits with status 2. Paths are checked here too:
an input must be a regular, readable file (a FIFO or a device would block or never end), an output
must be a regular file or a new one in a folder that can be written (:mod:`gpuviz.model.safewrite`).
"""

from __future__ import annotations

import argparse
import math
import os
import stat
import sys

from gpuviz.model.safewrite import OutputPathError, check_output_path
from gpuviz.model.safewrite import _kind  # one wording for what a path is, reading and writing

#: CUDA's limits on one block
MAX_BLOCK = (1024, 1024, 64)
MAX_THREADS_PER_BLOCK = 1024
#: rendered images (snapshot, export): each side and the area (a 30000x30000 image crashed Qt)
MIN_SIDE, MAX_SIDE = 64, 8192
MAX_PIXELS = 8192 * 4608
MAX_INT = (1 << 31) - 1


class ArgumentRangeError(ValueError):
    """An argument out of range that is only known once the work is set up (a block id beyond the launch)."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line: ``gpuviz capture: argument --scale: ...`` (status 2)."""

    def error(self, message: str):  # noqa: D401 - argparse's hook
        message = message.replace("argument -o/--output: ", "-o: ")  # the form `gpuviz run: -o: ...` others print
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def whole_number(text: str, lo: int = 0, hi: int = MAX_INT, what: str = "a whole number") -> int:
    """An integer written as ``12``, ``1_000`` or ``1e6`` (when that is a whole number), within lo..hi."""
    t = text.strip().replace("_", "")
    try:
        v = int(t)
    except ValueError:
        try:
            f = float(t)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, not {text!r}") from None
        if not math.isfinite(f) or f != int(f):
            raise argparse.ArgumentTypeError(f"expected {what}, not {text!r}") from None
        v = int(f)
    if not lo <= v <= hi:
        raise argparse.ArgumentTypeError(f"{what} must be {lo:,}..{hi:,}, not {text.strip()}")
    return v


def int_range(lo: int, hi: int, what: str = "a whole number"):
    def parse(text: str) -> int:
        return whole_number(text, lo, hi, what)

    parse.__name__ = "whole number"
    return parse


def float_range(lo: float, hi: float, what: str = "a number"):
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, not {text!r}") from None
        if not math.isfinite(v) or not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{what} must be a number {lo:g}..{hi:g}, not {text.strip()}")
        return v

    parse.__name__ = "number"
    return parse


def frame_number(text: str) -> int:
    """A frame (negative: counted from the end)."""
    return whole_number(text, -MAX_INT, MAX_INT, "a frame number")


def block_shape(text: str) -> tuple[int, ...]:
    """``256``, ``16x16`` or ``8x8x4``: within CUDA's limits (1,024 threads in all)."""
    parts = [p for p in text.lower().replace(",", "x").split("x")]
    if not 1 <= len(parts) <= 3 or not all(p.strip() for p in parts):
        raise argparse.ArgumentTypeError(f"expected BX or BXxBY or BXxBYxBZ (e.g. 256 or 16x16), not {text!r}")
    dims = []
    for p, hi, axis in zip(parts, MAX_BLOCK, "xyz"):
        try:
            dims.append(whole_number(p, 1, hi, f"block {axis}"))
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentTypeError(f"{exc} (CUDA's limit per block: {'x'.join(map(str, MAX_BLOCK))})") from None
    if math.prod(dims) > MAX_THREADS_PER_BLOCK:
        raise argparse.ArgumentTypeError(f"a block of {'x'.join(map(str, dims))} is {math.prod(dims):,} threads, over "
                                         f"CUDA's {MAX_THREADS_PER_BLOCK:,}")
    return tuple(dims)


def image_size(text: str) -> tuple[int, int]:
    """``WIDTHxHEIGHT``, each side 64..8192 px."""
    parts = text.lower().split("x")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT (e.g. 1920x1080), not {text!r}")
    w, h = (whole_number(p, MIN_SIDE, MAX_SIDE, "each side (pixels)") for p in parts)
    if w * h > MAX_PIXELS:
        raise argparse.ArgumentTypeError(f"{w}x{h} is {w * h:,} pixels, over the {MAX_PIXELS:,} an image may have")
    return w, h


def block_ids(text: str) -> list[int]:
    """Linear block ids ``0,3,7`` (checked against the launch once it is known)."""
    parts = [p.strip() for p in text.split(",")]
    if not parts or not all(parts):
        raise argparse.ArgumentTypeError(f"expected block ids like 0 or 0,3,7, not {text!r}")
    if len(parts) > 1_000_000:
        raise argparse.ArgumentTypeError(f"{len(parts):,} block ids; name at most 1,000,000")
    return [whole_number(p, 0, MAX_INT, "a block id") for p in parts]


def launch_numbers(text: str) -> list[int]:
    parts = [p.strip() for p in text.split(",")]
    if not parts or not all(parts):
        raise argparse.ArgumentTypeError(f"expected launch numbers like 3 or 1,4, not {text!r}")
    return [whole_number(p, 1, MAX_INT, "a launch number (from 1)") for p in parts]


def seconds(text: str) -> float:
    return float_range(0.001, 7 * 24 * 3600.0, "a time limit in seconds")(text)


def input_file(text: str) -> str:
    """An existing regular file that can be read (a FIFO, a device or a folder is refused, never opened)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the file name is empty")
    try:
        st = os.stat(text)
    except FileNotFoundError:
        raise argparse.ArgumentTypeError(f"{text}: no such file") from None
    except (OSError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"{text}: {getattr(exc, 'strerror', None) or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise argparse.ArgumentTypeError(f"{text}: is {_kind(st.st_mode)}, not a file")
    if not os.access(text, os.R_OK):
        raise argparse.ArgumentTypeError(f"{text}: cannot be read (permission denied)")
    return text


def file_or_name(text: str) -> str:
    """A path that exists (then :func:`input_file`'s checks) or a name (a bundled kernel, a shipped lesson)."""
    if os.path.lexists(text):
        return input_file(text)
    if not text.strip():
        raise argparse.ArgumentTypeError("the file or name is empty")
    return text


def output_file(text: str) -> str:
    """A path gpuviz may write: a regular file or a new one, in a folder where a file can be created."""
    try:
        check_output_path(text)
    except OutputPathError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if os.path.exists(text) and not os.access(text, os.W_OK):
        raise argparse.ArgumentTypeError(f"{text}: exists and is read-only")
    return text


def fail(prog: str, message: str, status: int = 2) -> int:
    """Print one line to stderr; the exit status (for checks made after parsing)."""
    print(f"{prog}: {message}", file=sys.stderr)
    return status
