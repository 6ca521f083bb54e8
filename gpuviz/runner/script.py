"""Run a user's program in a worker process and collect its recording: the parent side of the protocol.

    result = run_script("my_saxpy.py", ["--n", "1000"], backend="cpu", timeout=60)
    result.ok, result.launches, result.traces, result.error, result.stdout
    result.save("saxpy.gpuviz")

:func:`prepare_run` and :func:`collect_run` are the two halves the window's QProcess job uses too
(:mod:`gpuviz.ui.views.launches`): the worker is started the same way and read back the same way.
Nothing the program wrote is executed or unpickled here: the events are JSON, the traces are read by
:func:`gpuviz.model.tracefile.load_traces`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..model.trace import Trace
from .intercept import LaunchRecord

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding gpuviz/
DEFAULT_TIMEOUT_S = 300.0
DEFAULT_MAX_EVENTS = 50_000_000
_STACK_GRACE_S = 0.4  # how long a timed-out worker gets to write where it was before it is killed


@dataclass
class RunResult:
    """What one run of a program did: its launches, their traces, and how it ended."""

    script: str
    argv: list[str]
    status: str  # "ok" | "exited" (non-zero exit) | "error" | "timeout" | "cancelled" | "crashed"
    exit_code: int | None
    backend: str = ""  # what traced the launches (after any fallback)
    launches: list[LaunchRecord] = field(default_factory=list)
    traces: list[Trace] = field(default_factory=list)
    error: dict | None = None  # kind, message, file, line, block, thread, launch, kernel, traceback
    notices: list[str] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def message(self) -> str:
        """A readable account of how the run ended (empty when it went well)."""
        if self.status == "ok":
            return ""
        if self.error:
            return format_error(self.error)
        if self.status == "exited":
            return f"{self.script}: the program exited with status {self.exit_code}"
        return f"{self.script}: the run ended ({self.status})"

    def summary_lines(self) -> list[str]:
        return [rec.summary() for rec in self.launches]

    def save(self, path) -> Path:
        """Write the recording (every launch, traced or not, in order) to ``path``."""
        from ..model.tracefile import save_traces

        if not self.traces:
            raise ValueError(f"{self.script}: no kernel launch was recorded, so there is nothing to save")
        save_traces(path, self.traces)
        return Path(path)


def format_error(err: dict) -> str:
    lines = [err.get("message") or err.get("kind") or "error"]
    where = []
    if err.get("launch") is not None:
        where.append(f"launch {err['launch']}" + (f" ({err['kernel']})" if err.get("kernel") else ""))
    if err.get("file") and err.get("line", -1) not in (None, -1) and f"{err['file']}:{err['line']}" not in lines[0]:
        where.append(f"{err['file']}:{err['line']}")
    if err.get("block") is not None:
        where.append(f"block {tuple(err['block'])}")
    if err.get("thread") is not None:
        t = err["thread"]
        where.append(f"thread {tuple(t)}" if isinstance(t, list) else str(t))
    if where:
        lines.append("where: " + ", ".join(where))
    return "\n".join(lines)


# ---- starting the worker ------------------------------------------------------------------------------
def prepare_run(script, argv=(), *, backend: str = "cpu", kernel: str | None = None, launches=None,
                record_blocks=None, max_events: int = DEFAULT_MAX_EVENTS, max_loop_iterations: int = 5_000_000,
                folder: str | None = None) -> tuple[str, list[str], dict]:
    """Write the request; returns (run folder, worker command line, environment)."""
    if backend not in ("cpu", "sim", "gpu"):
        raise ValueError(f"backend must be cpu, sim or gpu, not {backend!r}")
    if max_events is not None and int(max_events) < 1:
        raise ValueError(f"max_events must be at least 1, not {max_events}")
    folder = folder or tempfile.mkdtemp(prefix="gpuviz-run-")
    request = {
        "script": str(Path(script).resolve()), "argv": [str(a) for a in argv], "backend": backend,
        "kernel": kernel, "launches": [int(k) for k in launches] if launches else None,
        "record_blocks": [int(b) for b in record_blocks] if record_blocks else None,
        "max_events": int(max_events or DEFAULT_MAX_EVENTS), "max_loop_iterations": int(max_loop_iterations),
    }
    Path(folder, "request.json").write_text(json.dumps(request), encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"  # the program's prints and gpuviz's notes arrive in order
    command = [sys.executable, "-m", "gpuviz.runner.worker", folder]
    return folder, command, env


def run_script(script, argv=(), *, backend: str = "cpu", kernel: str | None = None, launches=None,
               record_blocks=None, max_events: int = DEFAULT_MAX_EVENTS, max_loop_iterations: int = 5_000_000,
               timeout: float = DEFAULT_TIMEOUT_S, capture_output: bool = True, cancel=None, cwd=None,
               output=None) -> RunResult:
    """Run ``python SCRIPT argv...`` in a worker process with every launch intercepted; wait for it.

    ``timeout`` (seconds) stops a program that runs too long; ``cancel`` (a ``threading.Event``) stops
    it on request. With ``capture_output`` the program's stdout/stderr land in the result, otherwise
    they go straight to this process's terminal. ``output``: also save the recording there.
    """
    folder, command, env = prepare_run(script, argv, backend=backend, kernel=kernel, launches=launches,
                                       record_blocks=record_blocks, max_events=max_events,
                                       max_loop_iterations=max_loop_iterations)
    try:
        out = open(Path(folder, "stdout.txt"), "wb") if capture_output else None  # noqa: SIM115
        err = open(Path(folder, "stderr.txt"), "wb") if capture_output else None  # noqa: SIM115
        t0 = time.perf_counter()
        proc = subprocess.Popen(command, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env, cwd=cwd,
                                start_new_session=(os.name == "posix"))
        ended = "exited"
        try:
            while True:
                try:
                    proc.wait(timeout=0.05)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if cancel is not None and cancel.is_set():
                    ended = "cancelled"
                elif time.perf_counter() - t0 > timeout:
                    ended = "timeout"
                else:
                    continue
                stop_worker(proc, ask_where=(ended == "timeout"))
                break
        except BaseException:  # Ctrl-C in the parent: the worker must not outlive it
            stop_worker(proc, ask_where=False)
            raise
        finally:
            for fh in (out, err):
                if fh is not None:
                    fh.close()
        result = collect_run(folder, proc.returncode, ended=ended, timeout=timeout,
                             seconds=time.perf_counter() - t0)
        if output is not None and result.traces:
            result.save(output)
        return result
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def stop_worker(proc: subprocess.Popen, ask_where: bool) -> None:
    """Stop a worker (and whatever the program started in its process group); with ``ask_where`` it first
    writes its stack to stack.txt, so the report can say where the program was."""
    if proc.poll() is not None:
        return
    if ask_where and hasattr(signal, "SIGUSR1"):
        try:
            proc.send_signal(signal.SIGUSR1)
            proc.wait(timeout=_STACK_GRACE_S)
        except (subprocess.TimeoutExpired, OSError):
            pass
    if proc.poll() is None:
        try:
            if os.name == "posix":
                os.killpg(proc.pid, signal.SIGKILL)  # the group this worker leads (start_new_session)
            else:
                proc.kill()
        except (ProcessLookupError, PermissionError, OSError):
            proc.kill()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


# ---- reading what the worker left -------------------------------------------------------------------------
def read_events(folder) -> list[dict]:
    """The worker's events; a line cut short by a kill is ignored."""
    path = Path(folder, "events.jsonl")
    events = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return events
    for line in text.splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if isinstance(ev, dict) and "event" in ev:
            events.append(ev)
    return events


_STACK_LINE = re.compile(r'^\s*File "(.+)", line (\d+) in (\S+)')


def where_it_was(folder, script: str) -> tuple[str, int, str] | None:
    """(file, line, function) of the innermost frame of the user's code in the stack the worker dumped."""
    try:
        text = Path(folder, "stack.txt").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    # faulthandler lists the current (main) thread last, innermost frame first
    blocks = re.split(r"\n(?=(?:Current thread|Thread) 0x)", text)
    main = next((b for b in reversed(blocks) if b.lstrip().startswith("Current thread")), blocks[-1] if blocks else "")
    skip = (str(Path(__file__).resolve().parents[1]), sys.prefix, sys.base_prefix)
    for line in main.splitlines():
        m = _STACK_LINE.match(line)
        if not m:
            continue
        f = m.group(1)
        if f.startswith("<") or "site-packages" in f or any(f.startswith(s) for s in skip):
            continue
        return f, int(m.group(2)), m.group(3)
    return None


def collect_run(folder, returncode, *, ended: str = "exited", timeout: float = DEFAULT_TIMEOUT_S,
                seconds: float = 0.0, load: bool = True) -> RunResult:
    """Build the :class:`RunResult` from the run folder (also after a crash, a kill or a time-out)."""
    from ..model.tracefile import TraceFileError, load_traces

    folder = Path(folder)
    request = json.loads(Path(folder, "request.json").read_text(encoding="utf-8"))
    script = request["script"]
    events = read_events(folder)
    result = RunResult(script=script, argv=request.get("argv", []), status="ok", exit_code=returncode,
                       backend=request.get("backend", ""), seconds=seconds)
    for name in ("stdout", "stderr"):
        p = folder / f"{name}.txt"
        if p.exists():
            setattr(result, name, p.read_text(encoding="utf-8", errors="replace"))
    begun: dict[int, dict] = {}
    exit_event = None
    for ev in events:
        kind = ev["event"]
        if kind == "started":
            result.backend = ev.get("backend", result.backend)
        elif kind == "notice":
            result.notices.append(str(ev.get("text", "")))
        elif kind == "launch_begin":
            begun[int(ev["number"])] = ev
        elif kind == "launch":
            begun.pop(int(ev["number"]), None)
            rec = LaunchRecord.from_json(ev)
            result.launches.append(rec)
            if load and ev.get("trace_file"):
                try:
                    result.traces.extend(load_traces(folder / ev["trace_file"]))
                except TraceFileError as exc:  # a kill while saving: the launch is listed, its trace lost
                    rec.reason = (rec.reason + "; " if rec.reason else "") + f"its trace could not be read back ({exc})"
        elif kind == "error":
            result.error = {k: v for k, v in ev.items() if k != "event"}
        elif kind == "exit":
            exit_event = ev
    # a launch that began and never finished: the program died, hung or raised inside it
    in_flight = [begun[k] for k in sorted(begun)]
    stuck = in_flight[-1] if in_flight else None

    if ended in ("timeout", "cancelled"):
        result.status = ended
        place = where_it_was(folder, script)
        if ended == "timeout":
            message = f"{script}: the program ran longer than the time limit of {timeout:g} s and was stopped"
        else:
            message = f"{script}: the run was cancelled"
        if stuck is not None:
            message += (f", during launch {stuck['number']} of {stuck['kernel']} (grid {_d(stuck['grid'])} x block "
                        f"{_d(stuck['block'])}, kernel at {stuck['file']}:{stuck['line']})")
        if place is not None:
            message += f"; it was at {place[0]}:{place[1]} in {place[2]}"
        if ended == "timeout":
            message += (". An endless loop in the kernel or in the program? Raise the limit with --timeout if it "
                        "just needs longer")
        result.error = {"kind": "TimeLimit" if ended == "timeout" else "Cancelled", "message": message,
                        "file": place[0] if place else (stuck or {}).get("file", script),
                        "line": place[1] if place else (stuck or {}).get("line", -1), "block": None, "thread": None,
                        "launch": stuck["number"] if stuck else None, "kernel": stuck["kernel"] if stuck else None}
    elif result.error is not None:
        result.status = "error"
    elif exit_event is None:
        result.status = "crashed"
        place = where_it_was(folder, script)
        how = (f"killed by signal {-returncode}" if isinstance(returncode, int) and returncode < 0
               else f"exit status {returncode}")
        message = f"{script}: the program's process died ({how})"
        if stuck is not None:
            message += f" during launch {stuck['number']} of {stuck['kernel']}"
        if place is not None:
            message += f"; it was at {place[0]}:{place[1]} in {place[2]}"
        result.error = {"kind": "Crash", "message": message, "file": place[0] if place else script,
                        "line": place[1] if place else -1, "block": None, "thread": None,
                        "launch": stuck["number"] if stuck else None, "kernel": stuck["kernel"] if stuck else None}
    elif exit_event.get("code", 0):
        result.status = "exited"
        result.exit_code = int(exit_event["code"])

    if stuck is not None:
        rec = LaunchRecord.from_json({**stuck, "status": "failed"})
        rec.reason = result.error["message"] if result.error else "the launch did not finish"
        result.launches.append(rec)
    run_info = {"script": script, "argv": result.argv, "status": result.status}
    for tr in result.traces:
        tr.launch.meta["run"] = run_info
    return result


def _d(dims) -> str:
    dims = list(dims)
    while len(dims) > 1 and dims[-1] == 1:
        dims.pop()
    return "x".join(str(x) for x in dims)
