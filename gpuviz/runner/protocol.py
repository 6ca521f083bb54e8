"""The one protocol between gpuviz and a worker process that captures: users' programs under ``gpuviz run`` (and
the window's Run program) and the window's capture of a bundled kernel (its launch panel) alike.

A run is a folder. The parent writes ``request.json`` there (:func:`new_run`) and starts
``python -m gpuviz.runner.worker FOLDER``; what the request asks decides the job (``"script"``: a user's program,
:mod:`gpuviz.runner.worker`; ``"bundled"``: a bundled kernel, :mod:`gpuviz.runner.bundled`).

* **Framing.** The first line of the worker's stdin is the run's key (hex, never on disk); the rest of stdin
  is the parent's acknowledgements (launch numbers it has saved, when the request asks for ``ack``). The
  worker's messages are lines of ``events.jsonl`` in the folder, each ``MAC JSON``: HMAC-SHA256 of the JSON
  under the key, the JSON carrying a sequence number ``n`` (1, 2, 3, ...). The parent believes only lines
  with a valid MAC and the next number (:class:`EventLogReader`): a program that writes into the file cannot
  add, reorder or replay messages. Stdout and stderr are the program's own (a bundled job writes nothing
  there but what Python or numba print; the parent keeps stderr's tail for a crash report).
* **Messages** (``{"event": KIND, "n": N, ...}``):

      started       {"backend", "numba": "simulator" | "gpu", "pid"}: the job began (after any fallback)
      notice        {"text"}: something the user must see though the job goes on (no GPU here, ...)
      stage         {"text"}: what the job does now (a line under a progress bar)
      percent       {"value"}: how far a job of known length is, 0..100
      launch_begin  {"number", "kernel", "grid", "block", ...}: a launch starts
      progress      {"number", "kernel", "seconds", "events", "threads_done", "threads", "no_progress_s", "line"}:
                    a running launch, about once a second (the watchdog's report)
      heartbeat     {}: a launch the worker watches from its own thread is still alive
      launch        {"number", ..., "status", "trace_file", "sha256"} or {..., "save_error"}: a launch ended;
                    its trace is ``launch_NNNN.gpuviz`` in the folder, with that SHA-256
      error         {"kind", "message", "file", "line", "block", "thread", "launch", "kernel", "traceback"}:
                    why the job stopped (the exception's kind and readable message)
      exit          {"code"}: the worker's last word; without it the worker crashed or was killed

* **Progress, cancellation and the watchdog.** A CPU-executor launch watches itself
  (:mod:`gpuviz.capture.backends.cpu.watchdog`: ``progress`` messages, and a launch without progress for the
  request's ``watchdog`` seconds ends in an ``error``); a launch on numba's simulator or a GPU is watched by the
  worker's LaunchWatch (``heartbeat``). The parent cancels by ending the worker and everything below it
  (:mod:`gpuviz.runner.procs`), and ends a worker silent in a launch, or past its time limit, the same way;
  the worker dies with its parent (``parent_pid``). A worker that dies or hangs always ends in a report: the
  parent reads the messages written so far and says how the job ended.

Qt-free and light: the window imports this module (and not the capture package) to follow a job.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import select
import stat
import sys
import tempfile
import threading
from pathlib import Path

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding gpuviz/ (and kernels/)
EVENTS_FILE = "events.jsonl"


def new_run(request: dict, folder: str | None = None) -> tuple[str, list[str], dict]:
    """Write ``request`` to a run folder (``folder``, or a new temporary one) with this process as the
    worker's parent, and make the run's key; returns (run folder, worker command line, environment). Whoever
    starts the worker writes :func:`run_key` of the folder as the first line of its stdin."""
    folder = folder or tempfile.mkdtemp(prefix="gpuviz-run-")
    request = {**request, "parent_pid": os.getpid()}
    _RUN_KEYS[str(Path(folder))] = secrets.token_hex(32)
    Path(folder, "request.json").write_text(json.dumps(request), encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"  # the program's prints and gpuviz's notes arrive in order
    command = [sys.executable, "-m", "gpuviz.runner.worker", folder]
    return folder, command, env


_RUN_KEYS: dict[str, str] = {}  # run folder -> the key its worker signs its events with (never on disk)


def run_key(folder) -> str:
    """The key (hex) :func:`prepare_run` made for ``folder``: the first line of the worker's stdin."""
    return _RUN_KEYS.get(str(Path(folder)), "")


def forget_run(folder) -> None:
    """Drop the key of a run that is over."""
    _RUN_KEYS.pop(str(Path(folder)), None)


# ---- the worker's side ---------------------------------------------------------------------------------------
class EventLog:
    """The worker's half of the event log: each event one ``MAC JSON`` line, numbered."""

    def __init__(self, path: Path, key: bytes):
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._key = key
        self._n = 0
        self._lock = threading.Lock()  # the launch watch writes from its own thread: numbers stay in order

    def write(self, event: str, **fields) -> None:
        with self._lock:
            self._n += 1
            payload = json.dumps({"event": event, "n": self._n, **fields}, default=str)
            mac = hmac.new(self._key, payload.encode("utf-8"), hashlib.sha256).hexdigest()
            # one write per line, a newline before it: bytes another writer left without one cannot join it
            os.write(self._fd, f"\n{mac} {payload}\n".encode("utf-8"))


class Parent:
    """The channel from the parent: the key, then its acknowledgements of saved launches."""

    def __init__(self, fd: int):
        self._fd = fd
        self._buf = b""
        self._open = True

    def _line(self, timeout: float | None) -> bytes | None:
        while b"\n" not in self._buf:
            if not self._open:
                return None
            if timeout is not None:
                ready, _, _ = select.select([self._fd], [], [], timeout)
                if not ready:
                    return None
            chunk = os.read(self._fd, 4096)
            if not chunk:
                self._open = False
                return None
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def key(self) -> bytes:
        line = self._line(timeout=30.0)
        try:
            return bytes.fromhex((line or b"").decode("ascii").strip())
        except ValueError:
            return b""

    def wait_saved(self, number: int, timeout: float = 60.0) -> None:
        """Block until the parent says it saved launch ``number`` (or it stops answering)."""
        while self._open:
            line = self._line(timeout)
            if line is None:
                return
            try:
                if int(line) >= number:
                    return
            except ValueError:
                continue


# ---- the parent's side ---------------------------------------------------------------------------------------
_MAX_LOG_LINE = 1 << 20  # bytes: the worker's own lines are far shorter
_MAX_LOG_READ = 64 << 20  # bytes read per poll


class EventLogReader:
    """The worker's events, read as they come: only lines with a valid MAC under the run's key and the
    next sequence number count (anything else the program wrote into the file is counted, not believed);
    a line cut short by a kill is ignored."""

    def __init__(self, folder, key: str | None = None):
        self.path = Path(folder, EVENTS_FILE)
        key = run_key(folder) if key is None else key
        try:
            self._key = bytes.fromhex(key)
        except ValueError:
            self._key = b""
        self._offset = 0
        self._buf = b""
        self._n = 0
        self.events: list[dict] = []
        self.forged = 0  # lines the worker did not write

    def poll(self) -> list[dict]:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self._offset)
                data = fh.read(_MAX_LOG_READ)
        except OSError:
            return []
        self._offset += len(data)
        self._buf += data
        *lines, self._buf = self._buf.split(b"\n")
        if len(self._buf) > _MAX_LOG_LINE:
            self._buf = b""
            self.forged += 1
        new = [ev for ev in (self._verify(line) for line in lines) if ev is not None]
        self.events.extend(new)
        return new

    def _verify(self, line: bytes) -> dict | None:
        line = line.strip()
        if not line:
            return None
        mac, _, payload = line.partition(b" ")
        if not self._key or len(mac) != 64 or len(line) > _MAX_LOG_LINE:
            self.forged += 1
            return None
        want = hmac.new(self._key, payload, hashlib.sha256).hexdigest().encode("ascii")
        if not hmac.compare_digest(want, mac):
            self.forged += 1
            return None
        try:
            ev = json.loads(payload)
        except ValueError:
            self.forged += 1
            return None
        if not isinstance(ev, dict) or not isinstance(ev.get("event"), str) or ev.get("n") != self._n + 1:
            self.forged += 1  # a genuine line replayed or moved
            return None
        self._n += 1
        return ev


_TRACE_NAME = re.compile(r"launch_[0-9]{4,9}\.gpuviz")


def trace_name(number: int) -> str:
    """The name of launch ``number``'s trace file in the run folder (the only names the parent loads)."""
    return f"launch_{number:04d}.gpuviz"


def error_text(ev: dict) -> str:
    """An ``error`` message as one readable line: ``Kind: message`` (what the window shows)."""
    return f"{ev.get('kind', 'Error')}: {ev.get('message', '')}"


def trace_path(folder, ev: dict) -> Path | None:
    """The trace file a ``launch`` message names, in the run folder, when its name is one the worker writes
    (else None). The parent of a bundled kernel's job reads it so; a program's run checks its content too
    (:func:`trace_file_problem`)."""
    name = ev.get("trace_file")
    if not isinstance(name, str) or not _TRACE_NAME.fullmatch(name):
        return None
    return Path(folder, name)


def sha256_of(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def trace_file_problem(folder, ev: dict) -> str:
    """Why the trace file a launch event names must not be loaded ('' when it may): a name the worker does
    not write, a path out of the run folder, not a regular file, or content other than what was logged."""
    name = ev.get("trace_file")
    if not isinstance(name, str) or not _TRACE_NAME.fullmatch(name):
        return f"its trace file name {name!r} is not one gpuviz writes: ignored"
    path = Path(folder, name)
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"its trace file is missing ({exc.strerror or exc})"
    if not stat.S_ISREG(st.st_mode):
        return "its trace file is not a regular file: ignored"
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except OSError as exc:
        return f"its trace file cannot be read ({exc.strerror or exc})"
    if not hmac.compare_digest(h.hexdigest(), str(ev.get("sha256", ""))):
        return "its trace file was changed after gpuviz wrote it: ignored"
    return ""
