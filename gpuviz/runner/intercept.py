"""Launch interception: every ``kernel[grid, block](*args)`` of an unmodified program goes through gpuviz.

Two launchers are patched, at class level, while a :class:`Interceptor` is installed:

* numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``): ``FakeCUDAKernel.__call__`` (``__getitem__`` only
  stores the configuration on the kernel object, so ``__call__`` sees grid and block);
* numba-cuda on a real GPU: ``_LaunchConfiguration.__call__`` (what ``CUDADispatcher.__getitem__`` returns).

For each launch a :class:`LaunchPolicy` decides: trace it (gpuviz's CPU executor, numba's simulator or
the GPU backend), run it untraced (not chosen, or over the event budget), run it plain through the
original launcher (the instrumentation does not support the kernel: the program still completes), or
stop the program (a fault a GPU would hang or corrupt memory on). Either way the arguments end up as a
real launch leaves them, so the program goes on with correct results.
"""

from __future__ import annotations

import ast
import contextlib
import re
import sys
import threading
import time
import traceback
from dataclasses import asdict, dataclass, field

import numpy as np

from ..capture.errors import (
    BackendUnavailable,
    CaptureError,
    DivergentBarrierError,
    KernelRaised,
    KernelStalled,
    TraceTooLarge,
    UnsupportedConstruct,
)
from ..capture import device_wait
from ..capture.backends.cpu.executor import compile_for_cpu, make_runtime, run_cpu
from ..capture.backends.cpu.watchdog import Watchdog
from ..capture.limits import check_launch, normalize_dims
from ..capture.frontend.source import parse_function, python_function, source_span
from ..model.trace import EVENT_FIELDS, REQUIRED_FIELDS, Launch, Trace

#: the CPU executor holds a few numpy arrays of one entry per thread: past this many threads in one
#: launch it would need gigabytes, so such a launch is refused before running
MAX_EXECUTOR_THREADS = 1 << 24

SUGGESTION = (
    "record fewer blocks (--blocks / record_blocks=[...]: the other blocks still run), launch a smaller grid, "
    "trace only some launches (--kernel NAME, --launch K), use per-warp recording on a GPU "
    "(--backend gpu, mode='warp'), or raise --max-events"
)

#: what a refusal of a launch too large to trace adds: the program stops there unless told otherwise
STOPPED_TOO_LARGE = (
    "The program was stopped at this launch, before running it, so that the answer comes in seconds rather "
    "than after minutes of untraced work; to let the program go on and run such launches untraced (its "
    "results stay right, the recording lists them as not traced), run with --run-untraced "
    "(run_untraced=True)."
)


class StopRun(BaseException):
    """Unwinds the user's program after a fault a GPU would not survive (a BaseException, so that the
    program's own ``except Exception:`` cannot swallow it and go on as if the launch had worked)."""

    def __init__(self, error: "CaptureError"):
        super().__init__(str(error))
        self.error = error


@dataclass
class LaunchRecord:
    """One intercepted launch: what ran, and whether (and why not) it was traced."""

    number: int  # 1-based, over every launch of the program
    kernel: str
    grid: tuple
    block: tuple
    kernel_call: int = 1  # 1-based, over the launches of this kernel
    status: str = "running"  # "traced" | "untraced" (ran, not recorded) | "failed" (stopped the program)
    events: int = 0
    reason: str = ""  # why not traced, or the failure
    backend: str = ""  # who ran it: "cpu", "sim", "gpu", or "plain" (the original launcher)
    file: str = ""
    line: int = -1
    seconds: float = 0.0
    dynamic_shared_bytes: int = 0  # kernel[grid, block, stream, nbytes]: what cuda.shared.array(0, dtype) gets

    @property
    def traced(self) -> bool:
        return self.status == "traced"

    def to_json(self) -> dict:
        d = asdict(self)
        d["grid"], d["block"] = list(self.grid), list(self.block)
        return d

    @classmethod
    def from_json(cls, d: dict) -> "LaunchRecord":
        known = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        known["grid"], known["block"] = tuple(known.get("grid", ())), tuple(known.get("block", ()))
        return cls(**known)

    def summary(self) -> str:
        """One line for a terminal: number, kernel, grid, block, events, traced or why not."""
        dims = f"grid {_dims(self.grid)} x block {_dims(self.block)}"
        head = f"launch {self.number:>3}  {self.kernel}  {dims}"
        if self.status == "traced":
            return f"{head}  {self.events:,} events ({self.backend})"
        if self.status == "failed":
            return f"{head}  FAILED: {_first_line(self.reason)}"
        return f"{head}  not traced: {_first_line(self.reason)}"


def _dims(d) -> str:
    d = tuple(d)
    while len(d) > 1 and d[-1] == 1:
        d = d[:-1]
    return "x".join(str(x) for x in d)


def _first_line(text: str) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


# ---- the launch policy --------------------------------------------------------------------------------
@dataclass
class Selection:
    """Which launches to trace: kernel name (``None``: all) and launch numbers (``None``: all).

    With a kernel name, launch numbers count that kernel's own launches (``--kernel matmul --launch 2``
    is the second launch of matmul); without one, they count every launch of the program."""

    kernel: str | None = None
    launches: tuple[int, ...] | None = None

    def chooses(self, kernel_name: str, number: int, kernel_call: int) -> bool:
        if self.kernel is not None and kernel_name != self.kernel:
            return False
        if self.launches is None:
            return True
        return (kernel_call if self.kernel is not None else number) in self.launches

    def describe(self) -> str:
        parts = []
        if self.kernel is not None:
            parts.append(f"kernel {self.kernel}")
        if self.launches is not None:
            parts.append(("call" if self.kernel else "launch") + " " + ",".join(str(k) for k in self.launches))
        return " ".join(parts) or "every launch"


@dataclass
class LaunchPolicy:
    """What to do with each launch; results go to ``on_trace(record, trace)`` and ``on_begin(record)``."""

    backend: str = "cpu"
    selection: Selection = field(default_factory=Selection)
    max_events: int = 50_000_000  # for the whole recording, not per launch
    record_blocks: list | None = None
    max_loop_iterations: int = 5_000_000
    watchdog: float | None = 10.0  # seconds a launch on the CPU executor (or in-process on the simulator) may go
    # without progress (None/0: no limit)
    # a launch whose trace alone would pass max_events stops the program at it (the classroom hears why in
    # seconds); True runs such launches untraced instead, so that the program gets its results
    run_untraced: bool = False
    # a fatal capture error leaves a worker's program as StopRun (nothing may catch it), an in-process
    # recording's code as the CaptureError itself (a notebook cell shows it and the kernel lives on)
    stop_program: bool = True
    on_begin: object = None
    on_trace: object = None
    on_notice: object = None
    on_progress: object = None  # on_progress(record, info): a CPU-executor launch's progress, about once a second
    # a gpuviz.capture.launch_watch.LaunchWatch: watches launches on numba's simulator and on a GPU
    watch: object = None

    def __post_init__(self):
        self.count = 0
        self.calls: dict[str, int] = {}
        self.used_events = 0
        self.records: list[LaunchRecord] = []
        self.in_flight: LaunchRecord | None = None
        self._t0 = 0.0
        self._lock = threading.Lock()

    def notice(self, text: str) -> None:
        if self.on_notice:
            self.on_notice(text)

    def _progress_for(self, rec):
        if self.on_progress is None:
            return None
        return lambda info: self.on_progress(rec, info)

    # ---- one launch ---------------------------------------------------------------------------------
    def launch(self, kernel, grid, block, args, run_original, dynamic_shared_bytes: int = 0):
        """Handle ``kernel[grid, block, stream, dynamic_shared_bytes](*args)``; ``run_original()`` runs it
        through the real launcher."""
        fn = python_function(kernel)
        name = fn.__name__
        with self._lock:
            self.count += 1
            self.calls[name] = self.calls.get(name, 0) + 1
            rec = LaunchRecord(self.count, name, (), (), kernel_call=self.calls[name],
                               file=fn.__code__.co_filename, line=fn.__code__.co_firstlineno,
                               dynamic_shared_bytes=int(dynamic_shared_bytes or 0))
        self.records.append(rec)
        t0 = self._t0 = time.perf_counter()
        try:
            rec.grid, rec.block = normalize_dims(grid, "grid"), normalize_dims(block, "block")
        except CaptureError:
            self.records.remove(rec)
            return run_original()  # a configuration numba itself rejects: the program sees numba's own error
        if self.on_begin:
            self.on_begin(rec)
        self.in_flight = rec  # stays set when the launch raises: the error happened inside it
        if self.watch is not None:
            self.watch.begin(rec, kernel)
        try:
            if 0 in rec.grid:
                # a grid of no blocks runs nothing (numba's simulator) or is refused by the driver (a GPU): what
                # numba itself does with it is what the program sees; there is nothing to trace
                self._run_plain(rec, kernel, run_original, "a grid of no blocks: no thread runs")
            elif not self.selection.chooses(name, rec.number, rec.kernel_call):
                self._run_untraced(rec, kernel, args, run_original, f"not chosen (tracing {self.selection.describe()})")
            else:
                self._trace(rec, kernel, args, run_original)
        finally:
            if self.watch is not None:
                self.watch.end()
            rec.seconds = time.perf_counter() - t0
        self.in_flight = None
        return None

    def _trace(self, rec, kernel, args, run_original):
        try:
            check_launch(rec.grid, rec.block, where=f"{rec.file}:{rec.line}", kernel=rec.kernel)
            self._check_size(rec, kernel)
        except TraceTooLarge as exc:
            if not self._can_run_untraced(rec):  # more threads than the executor holds: it cannot run at all
                return self._fail(rec, kernel, exc, None)
            if self.run_untraced or not self._alone_too_large(exc, self.max_events - self.used_events):
                self._run_untraced(rec, kernel, args, run_original, str(exc), first=exc)
                return None
            return self._fail(rec, kernel, self._stopped_too_large(exc), None)
        except CaptureError as exc:
            return self._fail(rec, kernel, exc, None)
        budget = self.max_events - self.used_events
        saved = _snapshot(args, devices=self.backend != "gpu")
        backend = self.backend
        try:
            # looked up at each launch, not bound at import: gpuviz.capture.capture is what a test replaces to
            # inject a recorder's failure (tests/test_never_break.py, test_runner.py)
            from ..capture import capture

            trace = capture(kernel, rec.grid, rec.block, *args, backend=backend, record_blocks=self.record_blocks,
                            max_events=budget, max_loop_iterations=self.max_loop_iterations,
                            dynamic_shared_bytes=rec.dynamic_shared_bytes,
                            **_watch_options(self, backend, rec))
        except (BackendUnavailable, ModuleNotFoundError) as exc:
            if backend == "cpu":
                raise
            self.notice(f"the {backend} backend is unavailable ({_first_line(str(exc))}); tracing with gpuviz's "
                        "CPU executor instead")
            self.backend = "cpu"
            _restore(args, saved)
            return self._trace(rec, kernel, args, run_original)
        except UnsupportedConstruct as exc:
            _restore(args, saved)
            self._run_plain(rec, kernel, run_original, f"gpuviz cannot instrument this kernel: {exc}", first=exc)
            return None
        except TraceTooLarge as exc:
            return self._outgrew(rec, kernel, args, run_original, exc, budget, saved, backend)
        except KernelRaised as exc:
            self._raised(rec, kernel, exc, backend)
        except CaptureError as exc:
            return self._fail(rec, kernel, exc, exc.trace)
        except Exception as exc:  # noqa: BLE001 - a gpuviz bug must not break the user's program
            # the one fallback for every backend and every stage of a traced launch (plan, instrumented run, event
            # collection, trace assembly; saving is _emit's): the arguments as they were, then the plain launch
            # (the executor untraced on the CPU, else numba's own launcher), listed untraced with the first cause
            _restore(args, saved)
            reason = f"gpuviz failed to trace this launch (internal error: {_one_line(exc)})"
            self._run_untraced(rec, kernel, args, run_original, reason,
                               first=CaptureError(f"{rec.file}:{rec.line}: {reason}", file=rec.file, line=rec.line))
            return None
        _echo_kernel_prints(trace.launch.meta.get("printed"))
        rec.status, rec.events, rec.backend = "traced", len(trace), backend
        self.used_events += len(trace)
        self._emit(rec, trace)
        return None

    def _outgrew(self, rec, kernel, args, run_original, exc: TraceTooLarge, budget: int, saved, backend: str):
        """A traced launch whose trace is too large (refused by the size estimate, or grown past the event limit
        while it ran): stopped here, or run untraced (the program goes on), or failed with its partial trace."""
        if not self.run_untraced and getattr(exc, "estimate", None) is not None and self._alone_too_large(exc, budget):
            # the size estimate found it too large to trace at this limit whatever came before, before it ran:
            # stop here, on every backend alike. A trace that outgrew the limit while the launch ran (an
            # endless loop, data-dependent work the sample blocks did not show) runs on untraced below, under
            # the watchdog, which stops it if it never ends
            return self._fail(rec, kernel, self._stopped_too_large(exc), None)
        if backend == "sim":  # the simulator checks after the launch: the arguments are already right
            self._untraced(rec, kernel, "sim", f"{exc}. To trace it: {SUGGESTION}")
            return None
        _restore(args, saved)
        if self._can_run_untraced(rec):
            left = f"{budget:,} of {self.max_events:,}" if self.used_events else f"{self.max_events:,}"
            if getattr(exc, "estimate", None) is not None:  # refused by the size estimate, before running
                reason = (f"its trace would pass the event limit ({left} events left): {exc}")
                self.notice(f"launch {rec.number} of {rec.kernel} is not traced: {_first_line(str(exc))} "
                            "(it runs untraced, so the program goes on)")
            else:
                reason = f"its trace outgrew the event limit ({left} events left): {exc}. To trace it: {SUGGESTION}"
            self._run_untraced(rec, kernel, args, run_original, reason, first=exc)
            return None
        return self._fail(rec, kernel, exc, exc.trace)

    def _raised(self, rec, kernel, exc: KernelRaised, backend: str):
        """The kernel raised: the launch is listed failed, and the program gets the exception, as from numba."""
        # numba passes the kernel's exception to the launching program: it sees it, and may catch it
        rec.status, rec.reason, rec.backend = "failed", str(exc), backend
        trace = exc.trace if exc.trace is not None else empty_trace(kernel, rec)
        rec.events = len(trace)
        trace = trace.with_launch(warnings=(f"the launch raised {type(exc.exception).__name__}",
                                            *trace.launch.warnings))
        self._emit(rec, trace)
        raise exc.exception from exc

    def _check_size(self, rec, kernel) -> None:
        """Refuse, before running, a launch whose trace must exceed what is left of the event budget."""
        tpb = rec.block[0] * rec.block[1] * rec.block[2]
        n_blocks = rec.grid[0] * rec.grid[1] * rec.grid[2]
        recorded_blocks = n_blocks if self.record_blocks is None else len(set(self.record_blocks))
        per_thread = min_events_per_thread(kernel)
        least = recorded_blocks * tpb * per_thread
        left = self.max_events - self.used_events
        where = f"{rec.file}:{rec.line}"
        if least > left:
            spent = f" ({self.used_events:,} already recorded by earlier launches)" if self.used_events else ""
            raise _with_events(least, TraceTooLarge(
                f"{where}: launch {rec.number} of {rec.kernel} with grid {_dims(rec.grid)} x block {_dims(rec.block)} = "
                f"{recorded_blocks * tpb:,} recorded threads would record at least {least:,} events "
                f"({per_thread} per thread), over the limit of {left:,}{spent}. Refused before running: {SUGGESTION}",
                file=rec.file, line=rec.line))
        if self.backend != "gpu" and n_blocks * tpb > MAX_EXECUTOR_THREADS:
            raise TraceTooLarge(
                f"{where}: launch {rec.number} of {rec.kernel} has grid {_dims(rec.grid)} x block {_dims(rec.block)} = "
                f"{n_blocks * tpb:,} threads, more than gpuviz's CPU executor runs at once ({MAX_EXECUTOR_THREADS:,}): "
                "launch a smaller grid, or capture on a real GPU (--backend gpu)", file=rec.file, line=rec.line)

    def _alone_too_large(self, exc: TraceTooLarge, budget: int) -> bool:
        """Whether the launch's trace would pass the limit of the whole recording, not only what earlier
        launches left of it (then the recording is full: the launch runs untraced and the program goes on)."""
        events = getattr(exc, "events", None)
        estimate = getattr(exc, "estimate", None)
        if events is None and estimate is not None:
            events = estimate.events
        if events is not None:
            return int(events) > self.max_events
        return budget >= self.max_events  # it outgrew a budget nothing else had used

    def _stopped_too_large(self, exc: TraceTooLarge) -> TraceTooLarge:
        spent = (f" (the limit of the whole recording is {self.max_events:,} events, of which earlier launches "
                 f"recorded {self.used_events:,})") if self.used_events else ""
        out = TraceTooLarge(f"{exc}{spent}\n{STOPPED_TOO_LARGE}", file=exc.file, line=exc.line)
        for name in ("estimate", "limit", "events"):
            if hasattr(exc, name):
                setattr(out, name, getattr(exc, name))
        return out

    def _can_run_untraced(self, rec) -> bool:
        n = rec.grid[0] * rec.grid[1] * rec.grid[2] * rec.block[0] * rec.block[1] * rec.block[2]
        return self.backend == "gpu" or n <= MAX_EXECUTOR_THREADS

    # ---- running without a trace -----------------------------------------------------------------------
    def _run_untraced(self, rec, kernel, args, run_original, reason: str, first: CaptureError | None = None) -> None:
        """Run a launch that is not recorded: the CPU executor with recording off (fast, exact) when the
        program runs on numba's simulator and gpuviz can compile the kernel, else the original launcher.
        ``first``: why gpuviz could not trace it, when that is why it runs untraced (see :meth:`_run_plain`)."""
        try:
            ran = self.backend == "cpu" and _run_on_executor(kernel, rec, args, self.max_loop_iterations, self.watchdog,
                                                             self._progress_for(rec))
        except CaptureError as exc:  # a fault or an endless loop: as fatal untraced as traced
            return self._fail(rec, kernel, exc, None)
        if ran:
            self._untraced(rec, kernel, "cpu", reason)
            return
        self._run_plain(rec, kernel, run_original, reason, first=first)

    def _run_plain(self, rec, kernel, run_original, reason: str, first: CaptureError | None = None) -> None:
        """The launch on numba's own launcher (the simulator, or a GPU), untraced because of ``reason``.

        When gpuviz fell back to it because it could not trace the launch (``first``: an unsupported
        construct, a trace too large, an internal error) and the fallback fails too, the first cause leads the
        report and the fallback's error follows: alone, the second ('FakeCUDAModule' object has no attribute
        'shfl_down_sync') hid why the launch was not traced. A launch untraced by choice (``first`` None)
        fails with the program's own exception, as it would without gpuviz."""
        if self.backend == "gpu":
            # numba's own launch of a kernel compiled with debug=True copies its exception flag back before it
            # returns: a kernel that never ends holds the program inside the launch, where the watchdog must see it
            waiting = device_wait.waiting("the kernel")
        else:
            waiting = contextlib.nullcontext()
        with waiting:
            if first is None:
                run_original()
            else:
                try:
                    run_original()
                except Exception as plain_exc:  # noqa: BLE001 - the fallback's error is the second cause, not the first
                    raise first_cause_leads(first, plain_exc) from plain_exc
        if self.backend == "gpu":
            # a launch returns before its kernel ends: wait for it here, so that a kernel that never ends is
            # caught (and named) in its own launch, not at the program's next copy back
            with device_wait.waiting("the kernel"):
                _synchronize()
        self._untraced(rec, kernel, "plain", reason)

    def _untraced(self, rec, kernel, backend: str, reason: str) -> None:
        rec.status, rec.backend, rec.reason = "untraced", backend, reason
        self._emit(rec, empty_trace(kernel, rec))

    def _fail(self, rec, kernel, exc: CaptureError, partial):
        rec.status, rec.reason, rec.backend = "failed", str(exc), self.backend
        trace = partial if partial is not None else empty_trace(kernel, rec)
        rec.events = len(trace)
        trace = trace.with_launch(warnings=(f"the program stopped here: {type(exc).__name__}", *trace.launch.warnings))
        self._emit(rec, trace)
        if self.stop_program:
            raise StopRun(exc)
        raise exc

    def _emit(self, rec: LaunchRecord, trace: Trace) -> None:
        rec.seconds = time.perf_counter() - self._t0
        trace = trace.with_launch(meta={**trace.launch.meta, "recording": rec.to_json()})
        if not self.on_trace:
            return
        try:
            self.on_trace(rec, trace)
        except Exception as exc:  # noqa: BLE001 - a trace gpuviz cannot save must not break the user's program
            if rec.status != "traced":
                raise
            # the launch ran and the program has its results: its trace is what failed, so it is listed untraced
            # with the cause, and an empty trace stands for it (what an untraced launch leaves)
            self.used_events -= rec.events
            rec.status, rec.events = "untraced", 0
            rec.reason = f"gpuviz could not save this launch's trace (internal error: {_one_line(exc)})"
            launch = trace.launch
            empty = Trace(Launch(kernel_name=rec.kernel, grid=rec.grid, block=rec.block, source=launch.source,
                                 source_file=launch.source_file, first_line=launch.first_line, backend=rec.backend,
                                 device="not traced", meta={"recording": rec.to_json()}),
                          {name: np.empty(0, EVENT_FIELDS[name][0]) for name in REQUIRED_FIELDS})
            self.on_trace(rec, empty)


def _one_line(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()


def first_cause_leads(first: CaptureError, fallback_exc: BaseException) -> CaptureError:
    """The error to report when a fallback failed after ``first``: of ``first``'s kind, where it was, its message
    first and the fallback's after."""
    message = (f"{first}\nBecause of that the launch ran untraced on numba's original launcher, which failed too: "
               f"{type(fallback_exc).__name__}: {fallback_exc}")
    try:
        out = type(first)(message, file=first.file, line=first.line)
    except TypeError:  # a kind with more required fields: the base kind carries the same message
        out = CaptureError(message, file=first.file, line=first.line)
    out.trace = getattr(first, "trace", None)
    return out


def _synchronize() -> None:
    from numba import cuda

    cuda.synchronize()


def _with_events(events: int, exc: TraceTooLarge) -> TraceTooLarge:
    exc.events = int(events)  # what the launch alone would record (at least): compared with the whole limit
    return exc


def _snapshot(args, devices: bool = False) -> list:
    """Copies of the numpy arguments a failed capture may have half-written (the executor copies device arrays
    to the host and writes them back only after a complete launch, so for it they need none). ``devices``: copy
    device arrays too (numba's simulator's, host memory: its instrumented run writes them in place, and a
    failure after it must not leave the plain launch that follows to run on its results)."""
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            out.append(a.copy())
        elif devices and hasattr(a, "copy_to_host") and hasattr(a, "copy_to_device"):
            out.append(("device", np.array(a.copy_to_host(), copy=True)))
        else:
            out.append(None)
    return out


def _restore(args, saved) -> None:
    for a, s in zip(args, saved):
        if isinstance(s, tuple):
            a.copy_to_device(s[1])
        elif s is not None:
            a[...] = s


def _watch_options(policy, backend: str, rec) -> dict:
    """The watchdog a traced launch runs under: the CPU executor watches itself; on numba's simulator the
    capture's own watch (in-process: ``gpuviz.recording()``) unless ``gpuviz run``'s worker watches the launch
    (its LaunchWatch, which ends the worker's process); on a GPU only the worker's watch can act."""
    if backend == "cpu":
        return {"watchdog": policy.watchdog, "progress": policy._progress_for(rec)}
    if backend == "sim":
        return {"watchdog": None if policy.watch is not None else policy.watchdog}
    return {}


def _run_on_executor(kernel, rec, args, max_loop_iterations, watchdog=None, progress=None) -> bool:
    """Run the launch on the CPU executor without recording; False when gpuviz cannot compile the kernel."""
    try:
        ck = compile_for_cpu(kernel)
    except UnsupportedConstruct:
        return False
    except Exception:  # noqa: BLE001 - a bug of the compiler's: numba's own launcher runs the launch instead
        return False
    saved = _snapshot(args)
    rt = make_runtime(ck, rec.grid, rec.block, record=False, max_loop_iterations=max_loop_iterations,
                      dynamic_shared_bytes=rec.dynamic_shared_bytes,
                      watchdog=Watchdog(watchdog, progress) if watchdog or progress else None)
    try:
        run_cpu(ck, rt, args)
    except UnsupportedConstruct:
        _restore(args, saved)
        return False
    except KernelRaised as exc:  # the program sees the exception numba would raise from the launch
        raise exc.exception from exc
    except CaptureError:
        raise  # a fault or an endless loop: the caller reports it
    except Exception:  # noqa: BLE001 - a bug of the executor's: numba's own launcher runs the launch instead
        _restore(args, saved)
        return False
    _echo_kernel_prints(rt.printed)
    return True


def _echo_kernel_prints(lines) -> None:
    """What the kernel's print() calls said: the executor collects them (up to 200 lines), a real launch
    writes them to the program's stdout."""
    for line in lines or ():
        print(line)


def empty_trace(kernel, rec: LaunchRecord) -> Trace:
    """A trace of no events standing for a launch that ran but was not recorded (the launch list shows it)."""
    fn = python_function(kernel)
    try:
        root = parse_function(fn)
        text, first, _ = source_span(root)
        file = root.file
    except Exception:  # noqa: BLE001 - no source (a lambda, a REPL): the launch is listed all the same
        text, first, file = "", fn.__code__.co_firstlineno, fn.__code__.co_filename
    launch = Launch(kernel_name=rec.kernel, grid=rec.grid, block=rec.block, source=text, source_file=file,
                    first_line=first, backend=rec.backend or "plain", device="not traced")
    return Trace(launch, {name: np.empty(0, EVENT_FIELDS[name][0]) for name in REQUIRED_FIELDS})


# ---- the size estimate ------------------------------------------------------------------------------------
_min_events_cache: dict = {}


def min_events_per_thread(kernel) -> int:
    """A lower bound on the events every recorded thread records: START and END, plus the accesses to
    array parameters and the barriers in the kernel's straight-line top level (before any branch that
    could return)."""
    fn = python_function(kernel)
    hit = _min_events_cache.get(fn.__code__)
    if hit is not None:
        return hit
    count = 2
    try:
        tree = parse_function(fn).tree
        params = {a.arg for a in tree.args.args}
        for stmt in tree.body:
            if isinstance(stmt, (ast.If, ast.For, ast.While, ast.Try, ast.With, ast.Return, ast.Raise)):
                break  # what follows may not run for every thread
            for node in ast.walk(stmt):
                if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in params:
                    count += 1
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "syncthreads":
                    count += 1
            if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Subscript):
                count += 1  # a[i] += x loads and stores
    except Exception:  # noqa: BLE001 - the estimate is a lower bound: START and END always hold
        count = 2
    _min_events_cache[fn.__code__] = count
    return count


# ---- patching the launchers -------------------------------------------------------------------------------
class Interceptor:
    """Installs the launch hooks (``with Interceptor(policy): ...``); restores the launchers on exit."""

    _active: "Interceptor | None" = None

    def __init__(self, policy: LaunchPolicy):
        self.policy = policy
        self._undo: list = []
        self._local = threading.local()  # re-entrancy: launches made by gpuviz itself pass straight through

    def __enter__(self):
        if Interceptor._active is not None:
            raise RuntimeError("a gpuviz recording is already active in this process: nest no recordings")
        self._patch_simulator()
        self._patch_numba_cuda()
        if not self._undo:
            raise RuntimeError("numba.cuda is not imported: import it before recording launches")
        Interceptor._active = self
        return self

    def __exit__(self, *exc):
        for undo in reversed(self._undo):
            undo()
        self._undo = []
        Interceptor._active = None
        return False

    def _inside(self) -> bool:
        return getattr(self._local, "depth", 0) > 0

    def _dispatch(self, kernel, grid, block, args, run_original, dynamic_shared_bytes=0):
        self._local.depth = getattr(self._local, "depth", 0) + 1
        try:
            return self.policy.launch(kernel, grid, block, args, run_original, dynamic_shared_bytes=dynamic_shared_bytes)
        finally:
            self._local.depth -= 1

    def _patch_simulator(self) -> None:
        mod = sys.modules.get("numba.cuda.simulator.kernel")
        if mod is None:
            return
        cls = mod.FakeCUDAKernel
        original = cls.__call__
        interceptor = self

        def __call__(kernel, *args):
            # device-function calls and launches made inside a kernel or by gpuviz itself pass through
            if kernel._device or mod._kernel_context or interceptor._inside():
                return original(kernel, *args)
            grid, block = kernel.grid_dim, kernel.block_dim
            return interceptor._dispatch(kernel, grid, block, args, lambda: original(kernel, *args),
                                         dynamic_shared_bytes=getattr(kernel, "dynshared_size", 0))

        cls.__call__ = __call__
        self._undo.append(lambda: setattr(cls, "__call__", original))

    def _patch_numba_cuda(self) -> None:
        mod = sys.modules.get("numba.cuda.dispatcher")
        cls = getattr(mod, "_LaunchConfiguration", None) if mod is not None else None
        if cls is None:
            return
        original = cls.__call__
        interceptor = self

        def __call__(config, *args):
            if interceptor._inside():
                return original(config, *args)
            return interceptor._dispatch(config.dispatcher, config.griddim, config.blockdim, args,
                                         lambda: original(config, *args),
                                         dynamic_shared_bytes=getattr(config, "sharedmem", 0))

        cls.__call__ = __call__
        self._undo.append(lambda: setattr(cls, "__call__", original))


# ---- error reports ------------------------------------------------------------------------------------------
_THREAD_RE = re.compile(r"thread \((\d+), (\d+), (\d+)\) of block \((\d+), (\d+), (\d+)\)")


def error_report(exc: BaseException, launch: LaunchRecord | None = None) -> dict:
    """What went wrong and where, as JSON: kind, message, file, line, block, thread, launch."""
    report = {"kind": type(exc).__name__, "message": str(exc).strip() or type(exc).__name__,
              "file": getattr(exc, "file", "") or "", "line": int(getattr(exc, "line", -1) or -1),
              "block": None, "thread": None, "launch": launch.number if launch else None,
              "kernel": launch.kernel if launch else None}
    if isinstance(exc, DivergentBarrierError):
        report["block"] = list(exc.block) if exc.block is not None else None
        report["thread"] = f"arrived: {_short(exc.arrived)}; never arrive: {_short(exc.missing)}"
    elif isinstance(exc, KernelStalled):
        report["block"] = list(exc.block) if exc.block is not None else None
        in_first = [t for b, t in exc.threads if exc.threads and b == exc.threads[0][0]]
        report["thread"] = f"looping: {len(exc.threads):,} thread(s), in the first block {_short(in_first)}"
        report["looping"] = [list(t) for t in exc.threads[:1024]]
    else:
        m = _THREAD_RE.search(str(exc))
        if m:
            report["thread"] = [int(m.group(i)) for i in (1, 2, 3)]
            report["block"] = [int(m.group(i)) for i in (4, 5, 6)]
    return report


def _short(ids) -> str:
    ids = [int(i) for i in ids]
    if not ids:
        return "none"
    if ids == list(range(ids[0], ids[0] + len(ids))) and len(ids) > 2:
        return f"threads {ids[0]}..{ids[-1]}"
    shown = ", ".join(str(i) for i in ids[:8])
    return f"threads {shown}" + (f" and {len(ids) - 8} more" if len(ids) > 8 else "")
