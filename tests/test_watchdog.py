"""Runaway launches (issue 16): the CPU executor's watchdog stops a kernel that makes no progress, naming
the loop, the threads in it and what a spin on memory waits for; a launch whose trace would pass the
event limit is refused from a sample of its blocks before the work; a sample runs exactly the events the
whole launch runs for those blocks."""

import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import numpy as np
import pytest
from numba import cuda

import gpuviz
from gpuviz.capture.errors import KernelStalled, TraceTooLarge
from gpuviz.capture.backends.cpu.estimate import estimate_trace
from gpuviz.capture.backends.cpu.executor import compile_for_cpu, make_runtime, run_cpu
from gpuviz.runner import run_script

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = Path(__file__).resolve().parent / "user_scripts"


@cuda.jit
def wait_for_flag(flag, out):
    i = cuda.grid(1)
    while flag[0] == 0:  # WAIT_LINE
        out[i] += 1


@cuda.jit
def wait_for_a_late_writer(flag, out):
    i = cuda.grid(1)
    while flag[0] == 0:  # LATE_LINE
        out[i] += 1
    if i == 0:
        flag[0] = 1  # only after the loop: no thread ever gets here


@cuda.jit
def counts_up(out, n):
    i = cuda.grid(1)
    k = 0
    while k < n:  # k changes every iteration: progress, however long it takes
        k += 1
    out[i] = k


@cuda.jit
def long_for(out, n):
    i = cuda.grid(1)
    acc = 0
    for k in range(n):
        acc += 1
    out[i] = acc


@cuda.jit
def two_accesses(a, out, n):
    i = cuda.grid(1)
    acc = 0.0
    for k in range(64):
        acc += a[(i + k) % n]
        out[(i + k) % n] = acc


@cuda.jit
def tiled(a, out):
    tile = cuda.shared.array(64, dtype=np.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    tile[t] = a[i]
    cuda.syncthreads()
    s = 0.0
    for k in range(0, 64, 8):
        s += tile[(t + k) % 64]
    v = cuda.shfl_down_sync(0xFFFFFFFF, s, 1)
    if cuda.blockIdx.x % 2 == 0:
        cuda.atomic.add(out, i % 16, v)
    else:
        out[i % 16 + 16] = v


def _line(fn, marker: str) -> int:
    import inspect

    lines, first = inspect.getsourcelines(fn.py_func)
    return first + next(k for k, text in enumerate(lines) if marker in text)


# ---- the watchdog -----------------------------------------------------------------------------------------
def test_a_spin_on_memory_is_stopped_with_its_line_threads_and_what_it_waits_for():
    flag, out = np.zeros(1, np.int32), np.zeros(32, np.int64)
    seen = []
    with pytest.raises(KernelStalled) as info:
        gpuviz.capture(wait_for_flag, 1, 32, flag, out, watchdog=0.6, progress=seen.append)
    err = info.value
    line = _line(wait_for_flag, "WAIT_LINE")
    assert err.line == line and err.loop_line == line and err.file.endswith("test_watchdog.py")
    assert err.block == (0, 0, 0) and sorted(t for _, t in err.threads) == list(range(32))
    msg = str(err)
    assert f"test_watchdog.py:{line}:" in msg and "32 thread(s) keep looping in `while flag[0] == 0:" in msg
    assert "block (0, 0, 0): threads 0-31" in msg
    assert "waiting for flag[0] (now 0) to change" in msg and "no thread of this launch ever writes flag" in msg
    assert "--watchdog" in msg
    assert err.trace is not None and len(err.trace) > 0  # the partial trace shows the spin
    assert not seen or {"seconds", "events", "threads", "threads_done", "line"} <= set(seen[0])


def test_a_spin_on_memory_written_only_after_the_loop_says_where_it_is_written():
    with pytest.raises(KernelStalled) as info:
        gpuviz.capture(wait_for_a_late_writer, 1, 64, np.zeros(1, np.int32), np.zeros(64, np.int64), watchdog=0.5)
    msg = str(info.value)
    assert info.value.line == _line(wait_for_a_late_writer, "LATE_LINE")
    assert "64 thread(s)" in msg and "block (0, 0, 0): threads 0-63" in msg
    write_line = _line(wait_for_a_late_writer, "flag[0] = 1")
    assert f"flag (line {write_line}) is written" in msg


def test_loops_that_progress_are_not_stopped_however_long_they_run():
    # each runs for well over the watchdog's 0.3 s, changing what its condition reads / counting a range
    out = np.zeros(32, np.int64)
    trace = gpuviz.capture(counts_up, 1, 32, out, 30_000, watchdog=0.3)
    assert (out == 30_000).all() and len(trace) > 0
    out[:] = 0
    gpuviz.capture(long_for, 1, 32, out, 30_000, watchdog=0.3)
    assert (out == 30_000).all()


def test_the_watchdog_can_be_turned_off_and_progress_is_reported_without_it():
    seen = []
    out = np.zeros(32, np.int64)
    gpuviz.capture(counts_up, 1, 32, out, 300_000, watchdog=0, progress=seen.append)  # a few seconds
    assert (out == 300_000).all()
    assert seen and seen[-1]["threads"] == 32 and seen[-1]["events"] > 0


def test_gpuviz_run_stops_an_endless_kernel_with_its_line_at_a_short_watchdog():
    result = run_script(SCRIPTS / "endless_kernel.py", watchdog=1.0, timeout=120)
    assert result.status == "error" and result.error["kind"] == "KernelStalled"
    assert result.error["line"] == 8 and result.error["file"].endswith("endless_kernel.py")
    assert "endless_kernel.py:8: the kernel made no progress" in result.message
    assert "waiting for flag[0] (now 0)" in result.message
    assert result.error["block"] == [0, 0, 0] and "32 thread(s)" in result.error["thread"]
    assert result.stdout == "launching\n" and result.launches[0].status == "failed"


def test_gpuviz_run_stops_an_endless_kernel_over_many_blocks_at_a_short_watchdog():
    # 8,192 threads in 64 blocks: every block spins, the report names the first three
    result = run_script(SCRIPTS / "endless_many_blocks.py", watchdog=1.0, timeout=120)
    assert result.error["kind"] == "KernelStalled" and result.error["line"] == 10
    assert "8,192 thread(s) keep looping" in result.message and "and 61 more block(s)" in result.message


def test_gpuviz_run_of_an_endless_kernel_ends_at_the_default_watchdog_with_its_line(tmp_path):
    out = tmp_path / "endless.gpuviz"
    proc = subprocess.run([sys.executable, "-m", "gpuviz", "run", str(SCRIPTS / "endless_kernel.py"), "-o", str(out)],
                          capture_output=True, text=True, timeout=240, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 1, proc.stderr
    assert "endless_kernel.py:8: the kernel made no progress toward its end for 10 s" in proc.stderr
    assert "waiting for flag[0] (now 0) to change" in proc.stderr
    assert "launch   1  wait_for_flag  grid 1 x block 32  FAILED" in proc.stdout
    assert "gpuviz run: launch 1 (wait_for_flag):" in proc.stderr  # progress while it ran
    (trace,) = gpuviz.model.tracefile.load_traces(out)
    assert trace.launch.meta["recording"]["status"] == "failed" and len(trace) > 0


# ---- the size estimate --------------------------------------------------------------------------------------
def test_a_two_billion_event_launch_is_refused_before_running_with_the_estimate():
    a, out = np.ones(1024, np.float32), np.zeros(1024, np.float32)
    with pytest.raises(TraceTooLarge) as info:
        gpuviz.capture(two_accesses, 65536, 256, a, out, 1024)  # 16,777,216 threads x 64 x 2 accesses
    err = info.value
    assert err.estimate.complete and err.estimate.sampled_blocks == 8 and err.limit == 50_000_000
    assert 2_000_000_000 < err.estimate.events < 2_300_000_000
    msg = str(err)
    assert f"about {err.estimate.events:,} events" in msg and "over the event limit of 50,000,000" in msg
    assert "Refused before running" in msg and "--blocks" in msg and "smaller problem" in msg and "per warp" in msg
    assert not out.any()  # the sample ran on copies


def test_the_cli_refuses_a_two_billion_event_capture_of_a_bundled_kernel(tmp_path):
    out = tmp_path / "mm.gpuviz"
    proc = subprocess.run([sys.executable, "-m", "gpuviz", "capture", "matmul_naive", "--size", "1024", "-o", str(out)],
                          capture_output=True, text=True, timeout=240, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 1 and not out.exists()
    assert "its trace would hold about 2," in proc.stderr and "over the event limit of 50,000,000" in proc.stderr
    assert "Refused before running" in proc.stderr


def test_the_estimate_of_a_uniform_launch_is_its_trace_and_record_blocks_count():
    a = np.arange(64 * 64, dtype=np.float32)
    out = np.zeros(32, np.float32)
    ck = compile_for_cpu(tiled)
    est = estimate_trace(ck, (64, 1, 1), (64, 1, 1), [a, out], min_threads=0)
    trace = gpuviz.capture(tiled, 64, 64, a.copy(), np.zeros(32, np.float32))
    assert est.complete and est.events == len(trace)
    est = estimate_trace(ck, (64, 1, 1), (64, 1, 1), [a, out], record_blocks=list(range(0, 64, 2)), min_threads=0)
    assert est.recorded_blocks == 32 and est.events == len(trace) // 2
    assert estimate_trace(ck, (8, 1, 1), (64, 1, 1), [a, out], min_threads=0) is None  # its own sample
    assert estimate_trace(ck, (64, 1, 1), (64, 1, 1), [a, out]) is None  # 4,096 threads: the run is as quick


def test_a_sample_of_blocks_records_what_the_whole_launch_records_for_them():
    a = np.random.default_rng(1).random(64 * 20).astype(np.float32)
    ck = compile_for_cpu(tiled)
    full = gpuviz.capture(tiled, 20, 64, a.copy(), np.zeros(32, np.float32))
    rt = make_runtime(ck, (20, 1, 1), (64, 1, 1), blocks=[3, 8, 19])
    run_cpu(ck, rt, [a.copy(), np.zeros(32, np.float32)])
    ev = rt.events()
    keep = np.isin(full.block, [3, 8, 19])
    for name in ("block", "thread", "seq", "kind", "array", "index", "line"):
        np.testing.assert_array_equal(np.sort(ev[name]), np.sort(full.field(name)[keep]), err_msg=name)
    order = lambda b, t, s: np.lexsort((s, t, b))  # noqa: E731
    mine, theirs = order(ev["block"], ev["thread"], ev["seq"]), order(full.block[keep], full.thread[keep], full.seq[keep])
    np.testing.assert_array_equal(ev["index"][mine], full.index[keep][theirs])
    np.testing.assert_array_equal(ev["value"][mine], full.field("value")[keep][theirs])
