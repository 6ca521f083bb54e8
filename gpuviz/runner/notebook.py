"""In-process recording (notebooks, scripts) and ``show()`` (the window, in its own process).

    with gpuviz.recording(backend="cpu") as rec:
        vadd[4, 256](a, b, out)          # ordinary code: every launch is captured here
    rec.traces, rec.launches, rec.save("run.gpuviz")
    gpuviz.show(rec)                    # opens the window in a separate process

Unlike ``gpuviz run``, a recording runs the launches in *this* process: convenient in a notebook,
where the arrays live, but a kernel that hangs or crashes the interpreter takes the notebook kernel
with it (the CPU executor still reports endless loops and divergent barriers as exceptions). For
untrusted or unfinished code, use ``gpuviz run script.py``, which isolates the program in a worker.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ..model.recording import Recording as ModelRecording
from ..model.trace import Trace
from ..model.tracefile import save_traces
from .intercept import Interceptor, LaunchPolicy, LaunchRecord, Selection
from .protocol import PACKAGE_ROOT
from .script import recorded_launches


class Recording:
    """The launches captured inside a ``with gpuviz.recording():`` block."""

    def __init__(self, backend: str = "cpu", kernel: str | None = None, launches=None, record_blocks=None,
                 max_events: int = 50_000_000, max_loop_iterations: int = 5_000_000, watchdog: float | None = 10.0,
                 run_untraced: bool = False):
        if backend not in ("cpu", "sim", "gpu"):
            raise ValueError(f"backend must be cpu, sim or gpu, not {backend!r}")
        self.traces: list[Trace] = []
        self.notices: list[str] = []
        self._policy = LaunchPolicy(
            backend=backend, selection=Selection(kernel, tuple(launches) if launches else None),
            max_events=max_events, record_blocks=record_blocks, max_loop_iterations=max_loop_iterations,
            watchdog=watchdog, run_untraced=run_untraced, stop_program=False, on_trace=self._on_trace,
            on_notice=self._on_notice,
        )
        self._interceptor: Interceptor | None = None
        self.status = "recording"  # then "ok", or "error" when the code inside raised
        self.error = ""

    @property
    def launches(self) -> list[LaunchRecord]:
        return list(self._policy.records)

    @property
    def traced(self) -> list[Trace]:
        """The traces of the launches that were recorded (``traces`` also lists the untraced ones, empty)."""
        return [t for t in self.traces if t.launch.meta.get("recording", {}).get("status") == "traced"]

    def _on_trace(self, rec, trace) -> None:
        self.traces.append(trace)

    def _on_notice(self, text: str) -> None:
        self.notices.append(text)
        print(f"gpuviz: {text}", file=sys.stderr)

    def __enter__(self) -> "Recording":
        if "numba.cuda" not in sys.modules:
            # numba chooses simulator or GPU at this import: honour NUMBA_ENABLE_CUDASIM as the user set it
            from numba import cuda  # noqa: F401
        self._interceptor = Interceptor(self._policy)
        self._interceptor.__enter__()
        return self

    def __exit__(self, *exc) -> bool:
        if self._interceptor is not None:
            self._interceptor.__exit__(*exc)
            self._interceptor = None
        self.status = "ok" if exc[0] is None else "error"
        self.error = "" if exc[0] is None else f"{exc[0].__name__}: {exc[1]}"
        return False

    def recording(self) -> ModelRecording:
        """What was captured as a :class:`~gpuviz.model.recording.Recording` (the traces, every launch, this
        process's script and argv, the backend, how the code inside ended)."""
        positions = {}
        for i, tr in enumerate(self.traces):
            number = (tr.launch.meta.get("recording") or {}).get("number")
            if isinstance(number, int):
                positions[number] = i
        return ModelRecording(self.traces, recorded_launches(self.launches, positions, {}),
                              script=sys.argv[0] if sys.argv and sys.argv[0] else "", argv=sys.argv[1:],
                              status=self.status, backend=self._policy.backend, error=self.error)

    def save(self, path) -> Path:
        """Save every launch (traced or not, in order) and the run's metadata to one recording file; it is read
        back before it is put in place, and a launch that would not load back is an error naming it."""
        if not self.traces:
            raise ValueError("no kernel launch was recorded, so there is nothing to save")
        return self.recording().save(path)

    def summary(self) -> str:
        return "\n".join(r.summary() for r in self.launches)

    def __repr__(self) -> str:
        return f"<gpuviz Recording: {len(self.launches)} launch(es), {len(self.traced)} traced>"


def recording(backend: str = "cpu", **options) -> Recording:
    """Capture every kernel launch of the code inside ``with`` (see :class:`Recording`; options: kernel,
    launches, record_blocks, max_events, max_loop_iterations)."""
    return Recording(backend=backend, **options)


def _path_for(obj) -> tuple[Path, bool]:
    """A file the window can open for ``obj``; (path, whether it is a temporary file of ours)."""
    if isinstance(obj, (str, os.PathLike)):
        path = Path(obj)
        if not path.exists():
            raise FileNotFoundError(f"gpuviz.show: no such file {path}")
        return path, False
    if isinstance(obj, (Recording, ModelRecording)) or callable(getattr(obj, "recording", None)):
        rec = obj if isinstance(obj, ModelRecording) else obj.recording()
        if not len(rec):
            raise ValueError("gpuviz.show: the recording holds no launches")
        fd, name = tempfile.mkstemp(prefix="gpuviz-show-", suffix=".gpuviz")
        os.close(fd)
        rec.save(name)
        return Path(name), True
    if isinstance(obj, Trace):
        traces = [obj]
    elif hasattr(obj, "traces"):
        traces = list(obj.traces)
    elif isinstance(obj, (list, tuple)) and all(isinstance(t, Trace) for t in obj):
        traces = list(obj)
    else:
        raise TypeError(f"gpuviz.show takes a Trace, a recording, a list of traces or a file path, not {type(obj).__name__}")
    if not traces:
        raise ValueError("gpuviz.show: the recording holds no launches")
    fd, name = tempfile.mkstemp(prefix="gpuviz-show-", suffix=".gpuviz")
    os.close(fd)
    save_traces(name, traces)
    return Path(name), True


def show_command(obj) -> list[str]:
    """The command line :func:`show` starts (the window on a file)."""
    path, _ = _path_for(obj)
    return [sys.executable, "-m", "gpuviz", "open", str(path)]


def show(obj) -> subprocess.Popen:
    """Open the window on a trace, a recording, a run result or a file, in a separate process (a notebook
    kernel is not blocked and a window crash cannot take it down). Returns the process."""
    command = show_command(obj)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p)
    return subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL)
