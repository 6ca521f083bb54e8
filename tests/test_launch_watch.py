"""The watchdog of launches the CPU executor does not run: numba's simulator and a real GPU (faked here).

A kernel spinning under the simulator is found by its threads' frames and stopped with its line and the
threads in the loop; one that progresses is left alone however long it takes. On a GPU the host can only
wait: a wait longer than the watchdog stops the program, naming the kernel and the loop that cannot end.
A launch that keeps the interpreter itself (nothing in the worker can run) is stopped by the parent.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
from numba import cuda

from gpuviz.capture import device_wait
from gpuviz.runner import intercept, script
from gpuviz.runner.intercept import LaunchPolicy, LaunchRecord, Selection
from gpuviz.capture.launch_watch import LaunchWatch, _sim_threads
from gpuviz.runner import run_script

SCRIPTS = Path(__file__).resolve().parent / "user_scripts"


@cuda.jit
def spin_on_flag(flag, out):
    i = cuda.grid(1)
    while flag[0] == 0:
        out[i] += 1


@cuda.jit
def count_up(out, n):
    i = cuda.grid(1)
    k = 0
    while k < n:
        k += 1
    out[i] = k


def _watch(timeout):
    stalls = []
    released = threading.Event()

    def on_stall(rec, exc):
        stalls.append((rec, exc))
        released.set()

    return LaunchWatch(timeout, on_stall=on_stall, interval=0.05), stalls, released


def _rec(name, grid=(1, 1, 1), block=(32, 1, 1)):
    return LaunchRecord(1, name, grid, block)


def test_a_kernel_spinning_under_the_simulator_is_named_by_its_line_threads_and_what_it_waits_for():
    watch, stalls, _released = _watch(0.5)
    flag, out = np.zeros(1, np.int32), np.zeros(32, np.int64)

    def release_on_stall(rec, exc):
        stalls.append((rec, exc))
        # the simulator runs on copies of the arguments: set the flag the looping threads read, and the spin ends
        frame = sys._current_frames()[_sim_threads()[0].ident]
        while frame.f_code.co_name != "spin_on_flag":
            frame = frame.f_back
        frame.f_locals["flag"][0] = 1

    watch.on_stall = release_on_stall
    watch.begin(_rec("spin_on_flag"), spin_on_flag)
    try:
        spin_on_flag[1, 32](flag, out)
    finally:
        watch.end()
        watch.close()
    assert len(stalls) == 1
    exc = stalls[0][1]
    line = spin_on_flag.py_func.__code__.co_firstlineno + 3  # the while line
    assert exc.line == line and exc.loop_line == line
    text = str(exc)
    assert f"test_launch_watch.py:{line}:" in text and "while flag[0] == 0:" in text
    assert "32 thread(s) keep looping" in text and "threads 0-31" in text, text
    assert "flag[0] (now 0)" in text and "no thread of this launch ever writes flag" in text
    assert len(exc.threads) == 32


def test_a_simulator_loop_that_progresses_is_not_stopped_however_long_it_runs():
    watch, stalls, _ = _watch(0.2)
    out = np.zeros(2, np.int64)
    seen = []
    watch.on_progress = lambda rec, info: seen.append(info)
    watch.begin(_rec("count_up", block=(2, 1, 1)), count_up)
    try:
        count_up[1, 2](out, 20_000_000)  # seconds under the simulator, far past the 0.2 s watchdog
    finally:
        watch.end()
        watch.close()
    assert stalls == [] and (out == 20_000_000).all()
    assert seen and all(info["no_progress_s"] < 0.2 + 0.3 for info in seen)


def test_a_gpu_wait_past_the_watchdog_stops_with_the_kernel_and_the_loop_that_cannot_end():
    watch, stalls, released = _watch(0.3)
    rec = LaunchRecord(3, "spin_on_flag", (2, 1, 1), (32, 1, 1))
    watch.begin(rec, spin_on_flag)
    try:
        with device_wait.waiting("the kernel"):
            released.wait(30)  # the host in the driver, waiting for a kernel that never ends
    finally:
        watch.end()
        watch.close()
    assert len(stalls) == 1 and stalls[0][0] is rec
    text = str(stalls[0][1])
    line = spin_on_flag.py_func.__code__.co_firstlineno + 3
    assert text.startswith(f"{Path(__file__).resolve()}:{line}:") or f"test_launch_watch.py:{line}:" in text
    assert "launch 3 of spin_on_flag (grid 2 x block 32) has run on the GPU" in text
    assert "waits on flag, which no thread of the launch writes" in text and "--watchdog SECONDS" in text
    assert stalls[0][1].line == line


def test_an_untraced_gpu_launch_is_waited_for_in_its_own_launch(monkeypatch):
    # numba-cuda returns from a launch before the kernel ends: the policy waits for it, watched, so that a
    # kernel that never ends is caught (and named) at its launch rather than at the program's next copy
    watch, stalls, released = _watch(0.3)
    monkeypatch.setattr(intercept, "_synchronize", lambda: released.wait(30))
    launched = []
    policy = LaunchPolicy(backend="gpu", selection=Selection(kernel="another_kernel"), watch=watch)
    try:
        policy.launch(spin_on_flag, (1,), (32,), (np.zeros(1, np.int32), np.zeros(32)), lambda: launched.append(1))
    finally:
        watch.close()
    assert launched == [1] and len(stalls) == 1
    assert "has run on the GPU" in str(stalls[0][1]) and stalls[0][0].number == 1


def test_gpuviz_run_on_the_simulator_stops_an_endless_kernel_with_its_line():
    result = run_script(SCRIPTS / "endless_kernel.py", backend="sim", watchdog=2, timeout=120)
    assert result.status == "error" and result.error["kind"] == "KernelStalled", result.message
    assert result.error["line"] == 8 and result.error["launch"] == 1, result.message
    assert "endless_kernel.py:8:" in result.message and "no thread of this launch ever writes flag" in result.message
    assert "never printed" not in result.stdout and [r.status for r in result.launches] == ["failed"]


def test_a_launch_that_keeps_the_interpreter_is_stopped_by_the_parent(monkeypatch):
    monkeypatch.setattr(script, "SILENCE_GRACE_S", 3.0)
    result = run_script(SCRIPTS / "holds_interpreter.py", watchdog=1, timeout=120)
    assert result.status == "error" and result.error["kind"] == "KernelStalled", result.message
    assert "launch 1 of hold" in result.message and "gave no sign of life for 4 s" in result.message
    assert "never printed" not in result.stdout


# a worker that reports its stalled launch, then is slow to end (on a busy machine, ending the program's processes
# beside a simulated block's spinning threads took longer than the parent's silence limit; CI saw the parent's
# "gave no sign of life" replace the worker's own report, naming the kernel's first line instead of its loop)
_SLOW_TO_END_WORKER = """
import sys, time
from pathlib import Path
from gpuviz.runner.worker import EventLog, Parent, _take_stdin
folder = Path(sys.argv[1])
log = EventLog(folder / "events.jsonl", Parent(_take_stdin()).key())
log.write("started", backend="sim")
log.write("launch_begin", number=1, kernel="wait_for_flag", grid=[1, 1, 1], block=[32, 1, 1], file="k.py", line=5)
log.write("error", kind="KernelStalled", message="k.py:8: the kernel made no progress", file="k.py", line=8,
          block=[0, 0, 0], thread=None, launch=1, kernel="wait_for_flag")
time.sleep(120)
"""


def test_a_worker_slow_to_end_after_its_report_keeps_its_report(monkeypatch, tmp_path):
    fake = tmp_path / "slow_worker.py"
    fake.write_text(_SLOW_TO_END_WORKER)
    real = script.prepare_run

    def prepare(*args, **kwargs):
        folder, _command, env = real(*args, **kwargs)
        return folder, [sys.executable, str(fake), str(folder)], env

    monkeypatch.setattr(script, "prepare_run", prepare)
    monkeypatch.setattr(script, "SILENCE_GRACE_S", 2.0)
    result = run_script(SCRIPTS / "endless_kernel.py", backend="sim", watchdog=1, timeout=60)
    assert result.status == "error" and result.error["kind"] == "KernelStalled", result.message
    assert result.error["line"] == 8 and "no sign of life" not in result.message, result.message
    assert [r.status for r in result.launches] == ["failed"]


def test_ending_the_tree_of_a_process_without_children_reads_no_proc_entry():
    # reading /proc gives up the GIL once per file: beside spinning simulator threads that is slow. A process
    # with no child has no descendant, so ending its tree must not read /proc at all; with a child, it ends it
    import subprocess

    code = """
import os, subprocess, sys
from gpuviz.runner import procs
def boom():
    raise AssertionError("read /proc")
real = procs._parents
procs._parents = boom
assert procs.end_tree(os.getpid(), include_self=False) == []
procs._parents = real
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
assert procs.has_children()
assert procs.end_tree(os.getpid(), include_self=False) == [child.pid]
assert child.wait(timeout=10) < 0
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr
