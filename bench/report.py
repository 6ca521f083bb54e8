"""The record a GUI bench writes: its lines printed as they come, opened by the bench's name, the time, the Qt
platform, the window size, the cores, the load average and the command that ran it, closed by the load average
after, and saved (``--save``) as one file in bench/results/."""

from __future__ import annotations

import datetime as _dt
import os
import sys
from pathlib import Path


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


class Report:
    def __init__(self, bench: str, size: str, *extra: str):
        """``bench``: its path from the repository root (bench/x.py); ``extra``: more header lines (without '# ')."""
        self.lines: list[str] = []
        now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.say(f"# {bench}, {now}, Qt platform {os.environ.get('QT_QPA_PLATFORM')}, window {size}, "
                 f"{os.cpu_count()} cores")
        for line in extra:
            self.say(f"# {line}")
        self.say(f"# load average before: {_load()}")
        self.say("$ " + " ".join(["python", bench] + sys.argv[1:]))

    def say(self, text: str = "") -> None:
        print(text, flush=True)
        self.lines.append(text)

    def finish(self, save: str | None) -> None:
        """The load average after; the whole record written to ``save`` if given."""
        self.say(f"# load average after: {_load()}")
        if save:
            Path(save).write_text("\n".join(self.lines) + "\n")
