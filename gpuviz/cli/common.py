"""What several commands share: an output path checked before the work, a running launch's progress on stderr,
and the trace of a file that a command shows (a launch of a recording, or its first with events)."""

from __future__ import annotations

import argparse
import sys
import time

from .. import cliargs as ca
from ..model.recording import load_recording
from ..runner.script import progress_text


def output_problem(path) -> str:
    """Why ``path`` cannot take an output file ('' when it can): asked before the work, not after
    (:func:`gpuviz.model.safewrite.check_output_path`: a regular file or a new one, in a folder where a
    file can be created)."""
    try:
        ca.output_file("" if path is None else str(path))
    except argparse.ArgumentTypeError as exc:
        return str(exc)
    return ""


def progress_printer(prefix: str):
    """Prints a running launch's progress on stderr: in place on a terminal, else every few seconds."""
    tty = sys.stderr.isatty()
    state = {"last": 0.0, "shown": False}

    def show(info: dict) -> None:
        if float(info.get("seconds", 0)) < 2:
            return
        now = time.monotonic()
        if not tty and now - state["last"] < 5:
            return
        state["last"] = now
        info = {"number": info.get("number", 1), "kernel": info.get("kernel", info.get("label", "")), **info}
        text = f"{prefix}: {progress_text(info)}"
        if tty:
            sys.stderr.write("\r\033[K" + text)
            state["shown"] = True
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def done() -> None:
        if state["shown"]:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            state["shown"] = False

    show.done = done
    return show


def load_for_launch(path, number: int | None, what: str):
    """(recording, trace to show) of a file; ``number``: that launch's trace (from 1, as ``gpuviz run`` and
    ``gpuviz info`` number them), else the first launch with events. A launch the file does not hold, or one
    without a trace to show, is a ValueError that says why (and how many launches the file holds)."""
    rec = load_recording(path)
    if number is not None:
        try:
            return rec, rec.trace_of(number)
        except ValueError as exc:
            raise ValueError(f"{path}: --launch {number}: {exc}") from None
    shown = next((tr for tr in rec if len(tr)), None)
    return rec, shown if shown is not None else rec[0]
