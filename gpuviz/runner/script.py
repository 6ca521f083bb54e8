"""Run a user's program in a worker process and collect its recording: the parent side of the protocol.

    result = run_script("my_saxpy.py", ["--n", "1000"], backend="cpu", timeout=60)
    result.ok, result.launches, result.traces, result.error, result.stdout
    result.save("saxpy.gpuviz")

:func:`prepare_run` and :func:`collect_run` are the two halves the window's QProcess job uses too
(:mod:`gpuviz.ui.views.launches`): the worker is started the same way and read back the same way.
Nothing the program wrote is executed or unpickled here: the events are JSON, the traces are read by
:func:`gpuviz.model.tracefile.load_traces`. Only the worker's own events count: each line of its log
carries an HMAC under a key this process hands the worker on its stdin, and a sequence number (the one
worker protocol, :mod:`gpuviz.runner.protocol`); trace files are loaded only from the run folder, under the names the
worker writes, with the SHA-256 it logged.

With ``output``, :func:`run_script` writes the recording as launches finish (the worker waits for each
launch to be saved before the program goes on), so a run that ends badly, even by a kill of this
process, leaves every finished launch in the file. SIGTERM, SIGHUP and SIGINT (Ctrl+C) of this process
stop the worker and everything the program started (:mod:`gpuviz.runner.procs`) and raise
:class:`RunInterrupted` (KeyboardInterrupt for SIGINT).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..model.prepared import relaunched
from ..model.recording import RecordedLaunch, Recording
from ..model.trace import Trace
from ..model import tracefile  # its load_traces looked up at each read: the tests replace it
from ..model.validate import TraceFileError
from . import procs
from .intercept import LaunchRecord
from .protocol import EventLogReader, forget_run, new_run, run_key, trace_file_problem

DEFAULT_TIMEOUT_S = 300.0
DEFAULT_MAX_EVENTS = 50_000_000
DEFAULT_WATCHDOG_S = 10.0  # a CPU-executor launch with no progress this long is stopped (gpuviz.capture.backends.cpu.watchdog)
_STACK_GRACE_S = 0.4  # how long a timed-out worker gets to write where it was before it is killed
#: a launch in flight from which the worker says nothing (no progress, no heartbeat) for the watchdog's time
#: and this much more is stopped from here: the worker's own watch cannot run (a call holds the interpreter)
SILENCE_GRACE_S = 15.0


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
    #: launch number -> position in ``traces`` of its trace (a launch not in it left none, or lost it)
    trace_positions: dict[int, int] = field(default_factory=dict)
    #: launch number -> why its trace is not in the recording (could not be saved or read back)
    save_failures: dict[int, str] = field(default_factory=dict)
    #: what the output file holds, as read back after the last save (None: nothing was written)
    saved: "Recording | None" = None

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
        """One line per launch; a launch whose trace is not in the recording says so, and why."""
        lines = []
        for rec in self.launches:
            problem = self.save_failures.get(rec.number)
            if problem:
                lines.append(f"launch {rec.number:>3}  {rec.kernel}  grid {_d(rec.grid)} x block {_d(rec.block)}  "
                             f"NOT SAVED: {problem}")
            else:
                lines.append(rec.summary())
        return lines

    def recording(self) -> Recording:
        """The run as a :class:`~gpuviz.model.recording.Recording`: its traces and every launch it made."""
        return Recording(self.traces, recorded_launches(self.launches, self.trace_positions, self.save_failures),
                         script=self.script, argv=self.argv, status=self.status, backend=self.backend,
                         error=self.message, seconds=self.seconds)

    def save(self, path) -> Path:
        """Write the recording (every launch, traced or not, in order, and the run's metadata) to ``path``; it
        is read back before it is put in place, and a launch that would not load back is an error naming it."""
        return self.recording().save(path)


def recorded_launches(records, positions: dict[int, int], failures: dict[int, str]) -> list[RecordedLaunch]:
    """The recording's launch list from the runner's launch records, where their traces are, and which failed."""
    out = []
    for rec in records:
        d = rec.to_json()
        d.pop("dynamic_shared_bytes", None)
        out.append(RecordedLaunch.from_json({**d, "trace": positions.get(rec.number),
                                             "save_error": failures.get(rec.number, "")}, "launch record"))
    return out


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
                watchdog: float | None = DEFAULT_WATCHDOG_S, ack: bool = False,
                folder: str | None = None, run_untraced: bool = False) -> tuple[str, list[str], dict]:
    """Write the request; returns (run folder, worker command line, environment). The worker reads
    :func:`run_key` of the folder as the first line of its stdin: whoever starts it writes that line.
    ``ack``: the worker waits after each launch until the parent writes back its number (it saved it).
    ``run_untraced``: a launch whose trace alone would pass ``max_events`` runs untraced and the program
    goes on (by default the program is stopped at it, with the estimate, the limit and the options)."""
    if backend not in ("cpu", "sim", "gpu"):
        raise ValueError(f"backend must be cpu, sim or gpu, not {backend!r}")
    if max_events is not None and int(max_events) < 1:
        raise ValueError(f"max_events must be at least 1, not {max_events}")
    request = {
        "script": str(Path(script).resolve()), "argv": [str(a) for a in argv], "backend": backend,
        "kernel": kernel, "launches": [int(k) for k in launches] if launches else None,
        "record_blocks": [int(b) for b in record_blocks] if record_blocks else None,
        "max_events": int(max_events or DEFAULT_MAX_EVENTS), "max_loop_iterations": int(max_loop_iterations),
        "watchdog": float(watchdog) if watchdog else 0.0, "ack": bool(ack),
        "run_untraced": bool(run_untraced),
    }
    if watchdog is not None and not float(watchdog) >= 0:
        raise ValueError(f"watchdog must be a number of seconds (0: off), not {watchdog}")
    return new_run(request, folder)


def progress_text(ev: dict) -> str:
    """'launch 1 (wait_for_flag): 4 s, 1,234,567 events, 0 of 32 threads done, 3 s without progress'."""
    parts = [f"{float(ev.get('seconds', 0)):.0f} s"]
    if ev.get("events"):
        parts.append(f"{int(ev['events']):,} events")
    if ev.get("threads"):
        parts.append(f"{int(ev.get('threads_done', 0)):,} of {int(ev['threads']):,} threads done")
    stalled = float(ev.get("no_progress_s", 0) or 0)
    if stalled >= 2:
        parts.append(f"{stalled:.0f} s without progress (line {ev.get('line')})")
    return f"launch {ev.get('number')} ({ev.get('kernel')}): " + ", ".join(parts)


class RunInterrupted(BaseException):
    """SIGTERM or SIGHUP reached the process waiting for a run: the worker was stopped."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum
        self.saved = 0  # launches in the output file when it was stopped
        self.output = None


def _interrupt_handlers():
    """SIGTERM and SIGHUP raise RunInterrupted (SIGINT raises KeyboardInterrupt already): the same clean-up
    for all three. Returns what to restore; nothing outside the main thread (signals go there)."""
    if threading.current_thread() is not threading.main_thread():
        return {}

    def handler(signum, _frame):
        raise RunInterrupted(signum)

    old = {}
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        try:
            old[sig] = signal.signal(sig, handler)
        except (ValueError, OSError):
            pass
    return old


class _Output:
    """The recording file, rewritten (atomically) as launches finish. Each save is read back before it replaces
    the file (:meth:`Recording.save`); a launch whose trace would not load back is left out of the file and
    marked, with the reason, in the recording's launch list: never dropped without a word."""

    def __init__(self, path):
        self.path = Path(path)
        self.count = 0  # launches (traced or not) in the file
        self.seen = 0  # launches of the last recording asked to be saved
        self.held: Recording | None = None  # what the file holds, as last written and read back
        self.error: str | None = None
        self.last_duration = 0.0
        self.last_save = 0.0

    @property
    def slow(self) -> bool:
        """Saves take long (a big recording): save less often and do not hold the program up for them."""
        return self.last_duration > 1.0

    def due(self) -> bool:
        return not self.slow or time.monotonic() - self.last_save > 2 * self.last_duration

    def save(self, recording: Recording, final: bool = False) -> Recording | None:
        """Write ``recording``; returns what the file holds now (None: nothing could be written)."""
        if not recording.launches or (not final and len(recording.launches) == self.seen):
            return self.held
        self.seen = len(recording.launches)
        t0 = time.monotonic()
        # each trace says how the run stood when it was saved (a new trace each: a launch does not change once made)
        recording.traces = [relaunched(tr, meta={**tr.launch.meta, "run": {**tr.launch.meta.get("run", {}),
                                                                             "status": recording.status}})
                            for tr in recording.traces]
        rec = recording
        self.error = None
        while True:
            if not rec.traces:
                self.error = (f"could not save the recording to {self.path}: no launch left a trace that can be "
                              f"saved ({rec.summary_line()})")
                break
            try:
                rec.save(self.path)
            except TraceFileError as exc:
                culprit = rec.launch_in_error(exc)
                if culprit is None:
                    self.error = f"could not save the recording to {self.path}: {exc}"
                    break
                # the others are saved without it; it stays listed, with why its trace is not there
                rec = rec.without_trace(culprit.number, f"its trace would not load back ({exc})")
                continue
            except (OSError, ValueError) as exc:
                self.error = f"could not save the recording to {self.path}: {exc}"
                break
            self.held, self.count = rec, len(rec.launches)
            break
        self.last_save = time.monotonic()
        self.last_duration = self.last_save - t0
        return self.held


def run_script(script, argv=(), *, backend: str = "cpu", kernel: str | None = None, launches=None,
               record_blocks=None, max_events: int = DEFAULT_MAX_EVENTS, max_loop_iterations: int = 5_000_000,
               timeout: float = DEFAULT_TIMEOUT_S, watchdog: float | None = DEFAULT_WATCHDOG_S,
               capture_output: bool = True, cancel=None, cwd=None, output=None, on_progress=None,
               run_untraced: bool = False) -> RunResult:
    """Run ``python SCRIPT argv...`` in a worker process with every launch intercepted; wait for it.

    ``timeout`` (seconds) stops a program that runs too long; ``watchdog`` (seconds; 0 or None: off) stops
    a CPU-executor launch that makes no progress that long; ``cancel`` (a ``threading.Event``) stops it on
    request. With ``capture_output`` the program's stdout/stderr land in the result, otherwise they go
    straight to this process's terminal. ``output``: write the recording there, as launches finish.
    ``on_progress(event)``: the worker's progress reports (launch number, kernel, seconds, events,
    threads done, seconds without progress), about once a second while a launch runs. ``run_untraced``: run
    launches too large to trace untraced so the program goes on (default: the program stops at the first).
    """
    ack = output is not None and os.name == "posix"
    folder, command, env = prepare_run(script, argv, backend=backend, kernel=kernel, launches=launches,
                                       record_blocks=record_blocks, max_events=max_events,
                                       max_loop_iterations=max_loop_iterations, watchdog=watchdog, ack=ack,
                                       run_untraced=run_untraced)
    reader = RunReader(folder)
    writer = _Output(output) if output is not None else None
    proc = None
    try:
        out = open(Path(folder, "stdout.txt"), "wb") if capture_output else None  # noqa: SIM115
        err = open(Path(folder, "stderr.txt"), "wb") if capture_output else None  # noqa: SIM115
        t0 = time.perf_counter()
        restore = _interrupt_handlers()
        ended = "exited"
        try:
            proc = subprocess.Popen(command, stdout=out, stderr=err, stdin=subprocess.PIPE, env=env, cwd=cwd,
                                    start_new_session=(os.name == "posix"))
            _tell(proc, run_key(folder))
            silence = float(watchdog) + SILENCE_GRACE_S if watchdog else None
            ended = _supervise(proc, reader, writer, t0=t0, ack=ack, cancel=cancel, timeout=timeout,
                               silence=silence, on_progress=on_progress)
        except BaseException as exc:  # Ctrl-C, SIGTERM, SIGHUP: the worker and its children must not outlive us
            if proc is not None:
                stop_worker(proc, ask_where=False)
            if writer is not None:
                _follow(reader, writer, None, None)
                writer.save(reader.recording("cancelled"), final=True)
            if isinstance(exc, RunInterrupted) and writer is not None:
                exc.saved, exc.output = writer.count, writer.path
            raise
        finally:
            for sig, old in restore.items():
                try:
                    signal.signal(sig, old)
                except (ValueError, OSError):
                    pass
            for fh in (out, err, proc.stdin if proc is not None else None):
                if fh is not None:
                    try:
                        fh.close()
                    except OSError:
                        pass
        if os.name == "posix":  # what the program left in the worker's process group
            procs.kill_group(proc.pid)
        result = collect_run(folder, proc.returncode, ended=ended, timeout=timeout,
                             seconds=time.perf_counter() - t0, reader=reader, silence=silence or 0.0)
        if writer is not None and result.launches:
            _save_final(writer, result)
        return result
    finally:
        forget_run(folder)
        shutil.rmtree(folder, ignore_errors=True)


def _supervise(proc, reader: "RunReader", writer: "_Output | None", *, t0: float, ack: bool, cancel, timeout: float,
               silence: float | None, on_progress) -> str:
    """Follow the worker until it ends, or end it: cancelled, past ``timeout``, silent in a launch longer than
    ``silence``, or still there after it said why it stops. Returns how the run ended (``collect_run``'s
    ``ended``)."""
    ended = "exited"
    heard, in_flight = time.perf_counter(), set()
    reported = None  # when the worker logged its error: it is ending, and says why itself
    while True:
        try:
            proc.wait(timeout=0.02 if ack else 0.05)
            break
        except subprocess.TimeoutExpired:
            pass
        new = _follow(reader, writer, proc, on_progress)
        now = time.perf_counter()
        if new:
            heard = now
            for ev in new:
                if ev["event"] == "launch_begin":
                    in_flight.add(int(ev["number"]))
                elif ev["event"] == "launch":
                    in_flight.discard(int(ev["number"]))
                elif ev["event"] == "error":
                    # its last words: what it still does (ending the program's processes) can be slow
                    # beside a simulated block's spinning threads, and is not a silent launch
                    reported = now
                    in_flight.clear()
        if cancel is not None and cancel.is_set():
            ended = "cancelled"
        elif now - t0 > timeout:
            ended = "timeout"
        elif silence is not None and in_flight and now - heard > silence:
            ended = "silent"
        elif reported is not None and now - reported > SILENCE_GRACE_S:
            ended = "exited"  # it said why it stops, then did not stop: end it, keeping what it said
        else:
            continue
        stop_worker(proc, ask_where=(ended not in ("cancelled", "exited")))
        break
    return ended


def _save_final(writer: "_Output", result: RunResult) -> None:
    """The recording written whole at the end; what the writer could not save becomes the run's failures."""
    writer.save(result.recording(), final=True)
    if writer.error:
        result.notices.append(writer.error)
    else:  # launches the writer had to leave out of the file are failures of this run, named
        for la in writer.held.unsaved():
            result.save_failures.setdefault(la.number, la.save_error)
            result.trace_positions.pop(la.number, None)
    result.saved = writer.held


def _tell(proc, line: str) -> None:
    """One line to the worker's stdin (its key, or the number of the last launch saved)."""
    try:
        proc.stdin.write((line + "\n").encode("ascii"))
        proc.stdin.flush()
    except (OSError, ValueError, AttributeError):
        pass


def _follow(reader: "RunReader", writer: _Output | None, proc, on_progress) -> list[dict]:
    """Read what the worker logged since the last call: save finished launches, acknowledge them, report
    progress. Returns the new events."""
    new = reader.poll()
    finished = [int(ev["number"]) for ev in new if ev["event"] == "launch"]
    if on_progress is not None:
        for ev in new:
            if ev["event"] == "progress":
                on_progress(ev)
    if not finished:
        return new
    if writer is not None and (writer.due() or not writer.slow):
        writer.save(reader.recording("running"))
    if proc is not None and proc.stdin is not None:
        _tell(proc, str(max(finished)))
    return new


def stop_worker(proc: subprocess.Popen, ask_where: bool) -> None:
    """Stop a worker and every process below it (what the program forked or started, setsid or not: the
    worker is their subreaper) and its process group; with ``ask_where`` it first writes its stack to
    stack.txt, so the report can say where the program was."""
    if proc.poll() is None and ask_where and hasattr(signal, "SIGUSR1"):
        try:
            proc.send_signal(signal.SIGUSR1)
            proc.wait(timeout=_STACK_GRACE_S)
        except (subprocess.TimeoutExpired, OSError):
            pass
    if os.name == "posix":
        # while we have not collected its status the worker's pid cannot be reused, so its tree is its own
        if proc.poll() is None:
            procs.end_tree(proc.pid, group=proc.pid)
        else:
            procs.kill_group(proc.pid)
    if proc.poll() is None:
        try:
            proc.kill()
        except OSError:
            pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


# ---- reading what the worker left -------------------------------------------------------------------------
class RunReader:
    """What a run left, read as it comes: the worker's events and the traces of finished launches."""

    def __init__(self, folder, key: str | None = None, load: bool = True):
        self.folder = Path(folder)
        self.log = EventLogReader(folder, key)
        self.load = load
        self.loaded: dict[int, list[Trace]] = {}  # launch number -> its traces
        self.problems: dict[int, str] = {}  # launch number -> why its trace was not loaded

    def poll(self) -> list[dict]:
        new = self.log.poll()
        for ev in new:
            if ev["event"] != "launch" or not self.load:
                continue
            number = int(ev["number"])
            if ev.get("save_error"):  # the worker could not write its trace (or it would not load back)
                self.problems[number] = f"its trace could not be saved ({ev['save_error']})"
                continue
            if not ev.get("trace_file"):
                continue
            problem = trace_file_problem(self.folder, ev)
            if problem:
                self.problems[number] = problem
                continue
            try:
                self.loaded[number] = tracefile.load_traces(self.folder / ev["trace_file"])
            except TraceFileError as exc:  # a kill while saving: the launch is listed, its trace lost
                self.problems[number] = f"its trace could not be read back ({exc})"
        return new

    def traces(self) -> list[Trace]:
        """The traces loaded so far, in launch order."""
        return [tr for k in sorted(self.loaded) for tr in self.loaded[k]]

    def recording(self, status: str) -> Recording:
        """Every launch finished so far, with its trace or why it has none, as a recording with ``status``."""
        try:
            request = json.loads(Path(self.folder, "request.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            request = {}
        backend = next((str(ev.get("backend", "")) for ev in self.log.events if ev["event"] == "started"),
                       str(request.get("backend", "")))
        records = [LaunchRecord.from_json(ev) for ev in self.log.events if ev["event"] == "launch"]
        traces, positions = launch_traces(records, self.loaded)
        return Recording(traces, recorded_launches(records, positions, self.problems),
                         script=str(request.get("script", "")), argv=request.get("argv", []), status=status,
                         backend=backend)


def launch_traces(records, loaded: dict[int, list[Trace]]) -> tuple[list[Trace], dict[int, int]]:
    """The traces of ``records`` in launch order, and where each launch's trace is (one trace per launch file)."""
    traces, positions = [], {}
    for rec in records:
        got = loaded.get(rec.number)
        if got:
            positions[rec.number] = len(traces)
            traces.append(got[0])
    return traces, positions


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
                seconds: float = 0.0, load: bool = True, reader: RunReader | None = None,
                silence: float = 0.0) -> RunResult:
    """Build the :class:`RunResult` from the run folder (also after a crash, a kill or a time-out).
    ``reader``: the :class:`RunReader` that followed the run (what it loaded is not loaded again).
    ``ended="silent"``: stopped because a launch in flight said nothing for ``silence`` seconds."""
    folder = Path(folder)
    request = json.loads(Path(folder, "request.json").read_text(encoding="utf-8"))
    script = request["script"]
    if reader is None:
        reader = RunReader(folder, load=load)
    reader.poll()
    events = reader.log.events
    result = RunResult(script=script, argv=request.get("argv", []), status="ok", exit_code=returncode,
                       backend=request.get("backend", ""), seconds=seconds)
    for name in ("stdout", "stderr"):
        p = folder / f"{name}.txt"
        if p.exists():
            setattr(result, name, p.read_text(encoding="utf-8", errors="replace"))
    begun, exit_event = _take_events(result, events, reader)
    if reader.log.forged:
        result.notices.append(f"the program wrote {reader.log.forged} line(s) into gpuviz's event log of this run; "
                              "they were ignored (only the worker's own, signed events count)")
    # a launch that began and never finished: the program died, hung or raised inside it
    in_flight = [begun[k] for k in sorted(begun)]
    stuck = in_flight[-1] if in_flight else None

    if ended == "silent":
        _silent(result, folder, script, stuck, silence)
    elif ended in ("timeout", "cancelled"):
        _stopped(result, folder, script, stuck, ended, timeout)
    elif result.error is not None:
        result.status = "error"
    elif exit_event is None:
        _crashed(result, folder, script, stuck, returncode)
    elif exit_event.get("code", 0):
        result.status = "exited"
        result.exit_code = int(exit_event["code"])

    if stuck is not None:
        rec = LaunchRecord.from_json({**stuck, "status": "failed"})
        rec.reason = result.error["message"] if result.error else "the launch did not finish"
        result.launches.append(rec)
    run_info = {"script": script, "argv": result.argv, "status": result.status}
    result.traces = [relaunched(tr, meta={**tr.launch.meta, "run": run_info}) for tr in result.traces]
    return result


def _take_events(result: RunResult, events: list[dict], reader: RunReader) -> tuple[dict[int, dict], dict | None]:
    """The worker's events into ``result`` (backend, notices, launches and their traces, the error); returns the
    launches begun and never finished (by number) and the exit event (None: the worker never said it ended)."""
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
            number = int(ev["number"])
            begun.pop(number, None)
            rec = LaunchRecord.from_json(ev)
            result.launches.append(rec)
            if reader.loaded.get(number):
                result.trace_positions[number] = len(result.traces)
                result.traces.append(reader.loaded[number][0])
            elif number in reader.problems:  # listed, and counted as failed to save: never dropped silently
                result.save_failures[number] = reader.problems[number]
        elif kind == "error":
            result.error = {k: v for k, v in ev.items() if k != "event"}
        elif kind == "exit":
            exit_event = ev
    return begun, exit_event


def _silent(result: RunResult, folder: Path, script: str, stuck: dict | None, silence: float) -> None:
    """The run stopped because a launch in flight said nothing for ``silence`` seconds."""
    result.status = "error"
    place = where_it_was(folder, script)
    what = (f"launch {stuck['number']} of {stuck['kernel']} (grid {_d(stuck['grid'])} x block {_d(stuck['block'])}, "
            f"kernel at {stuck['file']}:{stuck['line']})") if stuck is not None else "a launch"
    message = (f"{script}: {what} gave no sign of life for {silence:.0f} s: the worker neither finished it nor "
               "reported progress (a kernel that never ends on a GPU, or a call that holds the interpreter), so "
               "gpuviz stopped the program")
    if place is not None:
        message += f"; it was at {place[0]}:{place[1]} in {place[2]}"
    message += ". If it only needs longer, raise the limit: --watchdog SECONDS (0 turns it off)"
    result.error = {"kind": "KernelStalled", "message": message,
                    "file": (stuck or {}).get("file", script), "line": (stuck or {}).get("line", -1),
                    "block": None, "thread": None, "launch": stuck["number"] if stuck else None,
                    "kernel": stuck["kernel"] if stuck else None}


def _stopped(result: RunResult, folder: Path, script: str, stuck: dict | None, ended: str, timeout: float) -> None:
    """The run stopped past its time limit (``ended="timeout"``) or cancelled."""
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


def _crashed(result: RunResult, folder: Path, script: str, stuck: dict | None, returncode) -> None:
    """The worker's process died without saying it ended."""
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


def _d(dims) -> str:
    dims = list(dims)
    while len(dims) > 1 and dims[-1] == 1:
        dims.pop()
    return "x".join(str(x) for x in dims)
