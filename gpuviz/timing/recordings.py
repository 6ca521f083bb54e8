"""Recordings made on a real GPU and shipped in ``assets/recordings``, for people without one.

``assets/recordings/index.json`` lists them: GPU traces (``.gpuviz`` files, gpuviz's trace format) and
timing sets (``.json``, :class:`gpuviz.model.timings.TimingSet`), each with the device, driver, date and
software versions it was recorded with. The app offers them beside the live CPU executor and shows
that label with them, so a recorded GPU time is never mistaken for a live CPU one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..model.timings import TimingSet
from ..model.tracefile import load_traces

INDEX_NAME = "index.json"
INDEX_FORMAT = "gpuviz-recordings"
#: the fusion timing set (``out = a * x + b * y``: libraries vs our fused kernel), recorded by
#: :mod:`gpuviz.timing.record_assets` and quoted by the fusion lesson (:mod:`gpuviz.lessons.metrics`)
FUSION_TIMINGS_FILE = "fusion_timings_h200.json"


def recordings_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "assets" / "recordings"


@dataclass(frozen=True)
class Recording:
    """One shipped recording: what it is and where and when it was made."""

    path: Path
    kind: str  # "trace" | "timings"
    title: str  # e.g. "matmul_tiled, 64 x 64"
    kernel: str  # bundled kernel name ("" for timing sets)
    device: str
    driver: str
    date: str
    versions: dict = field(default_factory=dict)
    details: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        """What the app shows next to it: the recording is from a GPU, which, when, with what."""
        return f"{self.title}: recorded on {self.device} (driver {self.driver}), {self.date}"

    def load(self):
        """The trace(s) (list of :class:`Trace`) or the :class:`TimingSet`."""
        if self.kind == "trace":
            return load_traces(self.path)
        return TimingSet.load(self.path)


def list_recordings(folder=None, kind: str | None = None) -> list[Recording]:
    """The recordings listed in ``folder``'s index (``assets/recordings`` by default); ``kind`` filters."""
    folder = Path(folder) if folder is not None else recordings_dir()
    index = folder / INDEX_NAME
    if not index.exists():
        return []
    try:
        data = json.loads(index.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{index}: cannot read the recordings index: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != INDEX_FORMAT:
        raise ValueError(f"{index}: not a gpuviz recordings index")
    out = []
    for e in data.get("recordings", []):
        if kind is not None and e.get("kind") != kind:
            continue
        path = folder / e["file"]
        if not path.exists():
            continue
        out.append(Recording(
            path=path, kind=e["kind"], title=e.get("title", e["file"]), kernel=e.get("kernel", ""),
            device=e.get("device", "?"), driver=e.get("driver", "?"), date=e.get("date", "?"),
            versions=dict(e.get("versions", {})), details=dict(e.get("details", {})),
        ))
    return out


def write_index(folder, entries: list[dict]) -> Path:
    """Write the index of ``folder`` (used by the recording script on the GPU machine)."""
    folder = Path(folder)
    path = folder / INDEX_NAME
    path.write_text(json.dumps({"format": INDEX_FORMAT, "recordings": entries}, indent=1), encoding="utf-8")
    return path
