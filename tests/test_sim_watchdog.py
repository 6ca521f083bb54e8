"""The watchdog of an in-process capture on numba's simulator (``gpuviz.capture(..., backend="sim")``).

``gpuviz run --backend sim`` stops an endless kernel from its worker (tests/test_launch_watch.py); in the caller's
own process the same watch releases the simulated block's threads and the call raises KernelStalled.
"""

from __future__ import annotations

import ast
import inspect
import threading
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

import gpuviz
from gpuviz.capture.errors import KernelStalled
from gpuviz.capture.launch_watch import _sim_threads

ENDLESS = Path(__file__).resolve().parent / "user_scripts" / "endless_kernel.py"


def _endless_kernel():
    """tests/user_scripts/endless_kernel.py's kernel, without running the program's launch (its file and line
    numbers kept: the watchdog names line 8)."""
    tree = ast.parse(ENDLESS.read_text(encoding="utf-8"))
    tree.body = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom, ast.FunctionDef))]
    ns: dict = {}
    exec(compile(tree, str(ENDLESS), "exec"), ns)  # noqa: S102 - the suite's own test program
    return ns["wait_for_flag"]


HANG_S = 300  # a run past this is the hang the watchdog exists to prevent (not a timing target)


def _in_thread(call):
    """``call()`` in a thread of its own: returns what it returned or raised; a hang fails the test instead of
    stopping the suite (without the watchdog the launch never ends)."""
    done: dict = {}

    def run():
        try:
            done["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            done["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(HANG_S)
    assert not t.is_alive(), "the endless kernel hung the caller: no watchdog stopped it"
    if "error" in done:
        raise done["error"]
    return done["value"]


def test_an_endless_kernel_captured_in_process_on_the_simulator_stops_with_its_line():
    kernel = _endless_kernel()
    flag, out = np.zeros(1, dtype=np.int32), np.zeros(32, dtype=np.int64)
    with pytest.raises(KernelStalled) as info:
        _in_thread(lambda: gpuviz.capture(kernel, 1, 32, flag, out, backend="sim", watchdog=1.0, lockstep=False))
    exc = info.value
    assert exc.file.endswith("endless_kernel.py") and exc.line == 8 and exc.loop_line == 8
    message = str(exc)
    assert "endless_kernel.py:8: the kernel made no progress" in message
    assert "no thread of this launch ever writes flag" in message
    assert "watchdog=SECONDS" in message and "--watchdog" not in message  # the parameter the caller has
    assert "32 simulator threads were released" in message
    assert not _sim_threads()  # none of the block's 32 threads is left spinning in this process
    assert sorted(t for _b, t in exc.threads) == list(range(32))


def test_the_process_captures_again_after_a_stalled_launch():
    # the released threads are gone and the simulator's state is clean: the next launch runs and is traced
    kernel = _endless_kernel()
    with pytest.raises(KernelStalled):
        _in_thread(lambda: gpuviz.capture(kernel, 1, 32, np.zeros(1, np.int32), np.zeros(32, np.int64),
                                          backend="sim", watchdog=1.0, lockstep=False))
    flag, out = np.ones(1, dtype=np.int32), np.zeros(32, dtype=np.int64)  # the flag set: the loop never runs
    trace = gpuviz.capture(kernel, 1, 32, flag, out, backend="sim", watchdog=1.0, lockstep=False)
    assert trace.launch.backend == "sim" and len(trace) > 0
    assert not _sim_threads()


def test_a_recording_in_process_on_the_simulator_stops_an_endless_kernel():
    # gpuviz.recording() runs launches in this process (no worker to end): its simulator launches get the watch too
    kernel = _endless_kernel()
    def record():
        with gpuviz.recording(backend="sim", watchdog=1.0):
            kernel[1, 32](np.zeros(1, np.int32), np.zeros(32, np.int64))

    with pytest.raises(KernelStalled, match="endless_kernel.py:8"):
        _in_thread(record)
    assert not _sim_threads()


def test_gpuviz_run_leaves_the_simulator_launch_to_its_worker_watch():
    # in `gpuviz run` the worker's LaunchWatch watches a simulated launch (and ends the worker's process): the
    # capture must not watch it a second time with its own limit (--watchdog 0 would not turn that one off)
    from gpuviz.runner.intercept import LaunchPolicy, _watch_options

    in_worker = LaunchPolicy(backend="sim", watchdog=0, watch=object())
    in_process = LaunchPolicy(backend="sim", watchdog=3.0)
    assert _watch_options(in_worker, "sim", None) == {"watchdog": None}
    assert _watch_options(in_process, "sim", None) == {"watchdog": 3.0}
    assert _watch_options(in_process, "gpu", None) == {}


@cuda.jit
def counts_until_told(a):
    # every trip writes memory, so the watchdog sees progress: only the event limit ends it
    while a[1] == 0:
        a[0] += 1


def test_a_kernel_that_loops_on_with_progress_stops_at_the_event_limit_while_it_runs():
    """The simulator's events were counted against max_events only after the launch: a loop that keeps writing
    memory filled the memory first (each event a tuple of Python ints)."""
    from gpuviz.capture.errors import TraceTooLarge

    a = np.zeros(2)
    with pytest.raises(TraceTooLarge) as info:
        _in_thread(lambda: gpuviz.capture(counts_until_told, 1, 1, a, backend="sim", max_events=20_000,
                                          lockstep=False))
    exc = info.value
    lines, first = inspect.getsourcelines(counts_until_told.py_func)
    loop = {first + k for k, text in enumerate(lines) if "a[1] == 0" in text or "a[0] += 1" in text}
    assert exc.file == __file__ and exc.line in loop
    assert str(exc).startswith(f"{__file__}:{exc.line}: the trace passed max_events=20,000 events while the kernel ran")
    assert not _sim_threads()  # the block's threads all ended
