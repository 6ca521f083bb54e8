"""The worker process: runs the user's program with every kernel launch intercepted, or captures a bundled kernel.

    python -m gpuviz.runner.worker RUN_FOLDER

``RUN_FOLDER`` holds ``request.json`` (written by :func:`gpuviz.runner.protocol.new_run`: for a program by
:func:`gpuviz.runner.script.prepare_run`, for a bundled kernel by the window's capture job,
:mod:`gpuviz.ui.capture_job`). The worker speaks the one protocol of :mod:`gpuviz.runner.protocol`: its key
and the parent's acknowledgements on stdin, its messages signed and numbered in ``events.jsonl``, each
launch's trace a file of the folder, ``exit`` its last word. The program's own stdout and stderr pass through
untouched; what gpuviz has to say goes to files in the folder, so a crash at any point leaves everything
written so far readable (``stack.txt``: where the program was when the parent asked, SIGUSR1, before a
time-limit kill).

numba chooses its CUDA simulator when numba.cuda is first imported, so the choice is made here before
the program runs: the simulator (``cuda.to_device``, ``copy_to_host``, streams... all work as fakes and
gpuviz runs each launch) unless ``--backend gpu`` finds an NVIDIA GPU. A bundled kernel's job
(:mod:`gpuviz.runner.bundled`) makes the same choice from its backend.
"""

from __future__ import annotations

import ctypes
import faulthandler
import json
import os
import runpy
import signal
import sys
import traceback
from pathlib import Path

import numpy as np

from ..capture import faults
from ..capture.backends.cpu.watchdog import DEFAULT_STALL_S
from ..capture.launch_watch import LaunchWatch
from ..model.tracefile import save_traces
from ..model.validate import TraceFileError
from . import bundled, procs
from .protocol import EVENTS_FILE, EventLog, Parent, sha256_of, trace_name
from .intercept import Interceptor, LaunchPolicy, Selection, StopRun, error_report

EXIT_STOPPED = 3  # the program was stopped by a fault in a launch (DivergentBarrierError, KernelFault, ...)
EXIT_NOT_STARTED = 4  # the program could not start (syntax error, missing file)
DEFAULT_WATCHDOG_S = DEFAULT_STALL_S  # seconds a launch may go without progress unless the request says


def shim_numpy() -> None:
    """numba-cuda 0.30.x calls ``np.row_stack``, removed in numpy 2.5: alias it (np.vstack is what it always
    was) before the program, which may import numba-cuda itself, runs. On every backend."""
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack


def _take_stdin() -> int:
    """Keep the parent's pipe on a private descriptor; the program's stdin becomes empty (/dev/null)."""
    try:
        fd = os.dup(0)
    except OSError:  # no stdin at all: no key, no acknowledgements (the parent believes no event then)
        fd = os.open(os.devnull, os.O_RDONLY)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
    except OSError:
        pass
    return fd


def gpu_present() -> bool:
    """Is there a usable NVIDIA GPU? Asked of the CUDA driver directly, before numba is imported (once
    numba.cuda is imported the simulator can no longer be chosen)."""
    names = ["nvcuda.dll"] if sys.platform == "win32" else ["libcuda.so.1", "libcuda.so"]
    for name in names:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        try:
            if lib.cuInit(0) != 0:
                return False
            count = ctypes.c_int(0)
            return lib.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0
        except (AttributeError, OSError):
            return False
    return False


def _user_frame(tb, script: str):
    """The innermost traceback frame in the user's own code (not numba's, not gpuviz's, not the stdlib's)."""
    here = str(Path(__file__).resolve().parents[1])
    best = None
    for frame in traceback.extract_tb(tb):
        f = frame.filename
        if f.startswith(here) or "site-packages" in f or f.startswith(sys.prefix) or f.startswith(sys.base_prefix):
            continue
        if f.startswith("<"):
            continue
        best = frame
    return best


def _program_traceback(exc: BaseException) -> str:
    """The traceback as the user would see it from ``python script.py``: without gpuviz's own frames."""
    here = str(Path(__file__).resolve().parents[1])
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(here)
              and "runpy" not in f.filename]
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames)]
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m gpuviz.runner.worker RUN_FOLDER", file=sys.stderr)
        return 2
    folder = Path(argv[1])
    request = json.loads((folder / "request.json").read_text(encoding="utf-8"))
    procs.die_with_parent(request.get("parent_pid"))
    procs.become_subreaper()  # what the program starts and orphans stays ours to end
    if hasattr(os, "register_at_fork"):  # a child the program forks dies with the worker, even a killed one
        worker = os.getpid()
        forked_by = [0]  # the process that called fork(), as the child's copy of memory has it

        def _note_who_forks():
            forked_by[0] = os.getpid()

        def _child_dies_with_worker():
            # not a grandchild: a daemon's double fork must outlive its middle process. Asked of the forking
            # process, not of getppid(): a worker killed before this child first ran (a program that forks, then
            # kills the runner, on a busy machine) has left it to the subreaper, and it must exit now, not sleep on
            if forked_by[0] == worker:
                procs.die_with_parent(worker)

        os.register_at_fork(before=_note_who_forks, after_in_child=_child_dies_with_worker)
    parent = Parent(_take_stdin())
    log = EventLog(folder / EVENTS_FILE, parent.key())
    try:
        stack_file = open(folder / "stack.txt", "w", encoding="utf-8")  # noqa: SIM115 - kept for faulthandler
        faulthandler.enable(stack_file)  # a hard crash (segfault in a native library) says where
        if hasattr(signal, "SIGUSR1"):
            faulthandler.register(signal.SIGUSR1, file=stack_file, all_threads=True)
    except (ImportError, OSError, ValueError, AttributeError):
        pass
    try:
        if "bundled" in request:  # a bundled kernel's capture (the window's launch panel)
            bundled.choose_numba(str(request["bundled"].get("backend") or "cpu"))
            code = bundled.run(request, folder, log)
        else:
            code = run(request, folder, log, parent)
    finally:
        # the program's children end with it: forked, double-forked or setsid, they are ours (subreaper)
        procs.end_tree(os.getpid(), include_self=False)
        procs.reap_children()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    log.write("exit", code=code)
    return code


def run(request: dict, folder: Path, log: EventLog, parent: Parent | None = None) -> int:
    script = str(Path(request["script"]).resolve())
    # 1. read and compile the program first: a syntax error is reported before numba is even imported
    if not _compiles(script, log):
        return EXIT_NOT_STARTED
    # 2. the simulator, or a real GPU
    backend = _choose_backend(request, log)
    shim_numpy()
    from numba import cuda  # noqa: F401 - chooses simulator or GPU now

    log.write("started", backend=backend, numba="gpu" if backend == "gpu" else "simulator", pid=os.getpid())
    policy = _policy(request, backend, folder, log, parent)
    # 3. the program, as `python script.py args...` would run it
    return _run_program(script, request, policy, log)


def _compiles(script: str, log: EventLog) -> bool:
    """Whether the program reads and compiles; when not, the error is logged (and its traceback printed)."""
    try:
        source = Path(script).read_bytes()
    except OSError as exc:
        log.write("error", kind="FileNotFoundError" if isinstance(exc, FileNotFoundError) else type(exc).__name__,
                  message=f"cannot read the program {script}: {exc.strerror or exc}", file=script, line=-1)
        return False
    try:
        compile(source, script, "exec")
    except SyntaxError as exc:
        text = (exc.text or "").rstrip("\n")
        where = f"{exc.filename}:{exc.lineno}" + (f":{exc.offset}" if exc.offset else "")
        log.write("error", kind=type(exc).__name__, message=f"{where}: {exc.msg}" + (f"\n    {text.strip()}" if text else ""),
                  file=exc.filename or script, line=int(exc.lineno or -1), block=None, thread=None, launch=None)
        traceback.print_exception(type(exc), exc, None)
        return False
    return True


def _choose_backend(request: dict, log: EventLog) -> str:
    """The run's backend, and numba's choice of simulator or GPU set for its import: ``gpu`` only where an
    NVIDIA GPU answers (else the CPU executor on the simulator, with a notice)."""
    backend = request.get("backend", "cpu")
    if backend == "gpu" and not gpu_present():
        log.write("notice", text="--backend gpu: no usable NVIDIA GPU here; running the program on numba's "
                                 "CUDA simulator and tracing with gpuviz's CPU executor")
        backend = "cpu"
    if backend == "gpu":
        os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
    else:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    return backend


def _policy(request: dict, backend: str, folder: Path, log: EventLog, parent: Parent | None) -> LaunchPolicy:
    """The launch policy of the run: what is traced, its limits, and what each launch's begin, trace, progress,
    notice and stall write to the event log."""

    def on_begin(rec):
        log.write("launch_begin", **rec.to_json())

    ack = bool(request.get("ack")) and parent is not None

    def on_trace(rec, trace):
        name = trace_name(rec.number)
        if rec.traced:
            faults.check("save", rec.backend)  # the test hook (gpuviz.capture.faults); the policy falls back
        try:
            save_traces(folder / name, [trace])  # read back before it is put in place
        except (TraceFileError, OSError) as exc:
            # the launch ran (the program has its results and goes on); its trace is lost, and the recording
            # says so with the reason: a failure of gpuviz's own, never the program's, never silent
            log.write("launch", save_error=str(exc), **rec.to_json())
            print(f"gpuviz: launch {rec.number} ({rec.kernel}): its trace could not be saved: {exc}",
                  file=sys.stderr, flush=True)
        else:
            log.write("launch", trace_file=name, sha256=sha256_of(folder / name), **rec.to_json())
        if ack:  # the parent writes the recording as launches finish: wait until this one is in it
            parent.wait_saved(rec.number)

    def on_progress(rec, info):
        log.write("progress", number=rec.number, kernel=rec.kernel, **info)

    def on_notice(text):
        log.write("notice", text=text)
        print(f"gpuviz: {text}", file=sys.stderr, flush=True)

    def on_stall(rec, exc):
        # a launch stuck on numba's simulator or on a GPU cannot be unwound: say why, then end this process
        report = error_report(exc, rec)
        log.write("error", **report)
        text = f"gpuviz: the program was stopped in launch {report['launch']} ({report['kernel']}):\n{report['message']}\n"
        try:
            os.write(2, text.encode("utf-8", "replace"))
        except OSError:
            pass
        procs.end_tree(os.getpid(), include_self=False)
        log.write("exit", code=EXIT_STOPPED)
        os._exit(EXIT_STOPPED)

    watchdog = request.get("watchdog", DEFAULT_WATCHDOG_S)
    watch = LaunchWatch(watchdog, on_stall=on_stall, on_progress=on_progress,
                        on_heartbeat=lambda: log.write("heartbeat"))

    launches = request.get("launches")
    return LaunchPolicy(
        backend=backend,
        selection=Selection(request.get("kernel"), tuple(launches) if launches else None),
        max_events=int(request.get("max_events") or 50_000_000),
        record_blocks=request.get("record_blocks"),
        max_loop_iterations=int(request.get("max_loop_iterations") or 5_000_000),
        watchdog=watchdog,
        run_untraced=bool(request.get("run_untraced")),
        on_begin=on_begin, on_trace=on_trace, on_notice=on_notice, on_progress=on_progress, watch=watch,
    )


def _run_program(script: str, request: dict, policy: LaunchPolicy, log: EventLog) -> int:
    """Run the program under the policy's interceptor; its exit code (a stopped launch or an uncaught exception
    logged as the run's error)."""
    sys.argv = [script, *request.get("argv", [])]
    sys.path.insert(0, str(Path(script).parent))
    try:
        with Interceptor(policy):
            runpy.run_path(script, run_name="__main__")
    except StopRun as stop:
        current = policy.in_flight
        report = error_report(stop.error, current)
        log.write("error", **report)
        print(f"gpuviz: the program was stopped in launch {report['launch']} ({report['kernel']}):\n{report['message']}",
              file=sys.stderr, flush=True)
        return EXIT_STOPPED
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return int(exc.code or 0)
        print(exc.code, file=sys.stderr)
        return 1
    except BaseException as exc:  # noqa: BLE001 - the program's own uncaught exception
        frame = _user_frame(exc.__traceback__, script)
        text = _program_traceback(exc)
        sys.stderr.write(text)
        current = policy.in_flight  # set when the exception came out of a launch
        where = f"{frame.filename}:{frame.lineno}: " if frame else ""
        log.write("error", kind=type(exc).__name__, message=f"{where}{type(exc).__name__}: {exc}",
                  file=frame.filename if frame else script, line=frame.lineno if frame else -1,
                  block=None, thread=None, launch=current.number if current else None,
                  kernel=current.kernel if current else None, traceback=text)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
