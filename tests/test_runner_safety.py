"""`gpuviz run` against programs that misbehave (issue 16): nothing is left running after the run, whatever
ends it (SIGTERM, SIGHUP, Ctrl+C, a normal return); the worker's event log believes only the worker; a
program that kills its runner leaves its finished launches saved; the numpy shim is in place before the
program; outputs and sizes are checked before the work."""

import hashlib
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from gpuviz.model.tracefile import load_traces
from gpuviz.runner import run_script
from gpuviz.runner.script import trace_file_problem

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = Path(__file__).resolve().parent / "user_scripts"
QUICK = 60.0

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _env(**extra):
    return {**os.environ, "PYTHONPATH": str(ROOT), **extra}


def _alive(pid: int) -> bool:
    """Is ``pid`` a running process (a zombie waiting to be collected counts as ended)?"""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:][:1] not in (b"Z", b"X")


def _wait_gone(pids, seconds=15.0) -> list[int]:
    deadline = time.monotonic() + seconds
    left = [p for p in pids if _alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = [p for p in left if _alive(p)]
    return left


def _wait_file(path: Path, proc, seconds=QUICK) -> list[int]:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the program never wrote its process ids"
        time.sleep(0.05)
    return [int(p) for p in path.read_text().split()]


# ---- nothing left running ---------------------------------------------------------------------------------
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_to_gpuviz_run_ends_the_worker_and_every_process_the_program_started(tmp_path, sig):
    pidfile = tmp_path / "pids"
    proc = subprocess.Popen([sys.executable, "-m", "gpuviz", "run", str(SCRIPTS / "spawns_children.py"), str(pidfile),
                             "wait", "-o", str(tmp_path / "run.gpuviz")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(), cwd=tmp_path)
    try:
        pids = _wait_file(pidfile, proc)  # worker, forked child, setsid child, double-forked daemon
        assert len(pids) == 4 and all(_alive(p) for p in pids)
        proc.send_signal(getattr(signal, sig))
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == (130 if sig == "SIGINT" else 128 + getattr(signal, sig))
    assert "every process it started were stopped" in err
    assert _wait_gone(pids) == []
    # the launch that finished before the signal is in the recording
    (trace,) = load_traces(tmp_path / "run.gpuviz")
    assert trace.launch.kernel_name == "fill" and trace.launch.meta["recording"]["status"] == "traced"


def test_processes_the_program_started_end_when_it_returns(tmp_path):
    pidfile = tmp_path / "pids"
    result = run_script(SCRIPTS / "spawns_children.py", [str(pidfile)], timeout=QUICK)
    assert result.ok, result.message
    pids = [int(p) for p in pidfile.read_text().split()]
    assert len(pids) == 4 and _wait_gone(pids, seconds=5) == []


# ---- the event log believes only the worker -----------------------------------------------------------------
def test_lines_a_program_writes_into_the_event_log_are_ignored(tmp_path):
    outside = tmp_path / "outside.gpuviz"
    outside.write_bytes(b"not even a trace")
    result = run_script(SCRIPTS / "forges_events.py", [outside.name], timeout=QUICK)
    assert result.ok and result.error is None, result.message
    assert result.stdout == "done\n"
    assert [(r.number, r.kernel, r.status) for r in result.launches] == [(1, "fill", "traced"), (2, "fill", "traced")]
    assert len(result.traces) == 2 and not any(r.reason for r in result.launches)
    assert any("wrote 4 line(s) into gpuviz's event log" in n and "ignored" in n for n in result.notices)


def test_only_trace_files_the_worker_wrote_in_its_own_folder_are_loaded(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    good = run / "launch_0001.gpuviz"
    good.write_bytes(b"trace bytes")
    digest = hashlib.sha256(b"trace bytes").hexdigest()
    assert trace_file_problem(run, {"trace_file": good.name, "sha256": digest}) == ""
    (tmp_path / "outside.gpuviz").write_bytes(b"trace bytes")
    for name in ("../outside.gpuviz", str(tmp_path / "outside.gpuviz"), "launch_0001.gpuviz/..", "x.gpuviz", 7, None):
        assert "not one gpuviz writes" in trace_file_problem(run, {"trace_file": name, "sha256": digest})
    os.symlink(tmp_path / "outside.gpuviz", run / "launch_0002.gpuviz")
    assert "not a regular file" in trace_file_problem(run, {"trace_file": "launch_0002.gpuviz", "sha256": digest})
    good.write_bytes(b"other bytes")
    assert "changed after gpuviz wrote it" in trace_file_problem(run, {"trace_file": good.name, "sha256": digest})


def test_a_program_that_kills_its_runner_leaves_its_finished_launches_saved_and_dies_with_it(tmp_path):
    out, pidfile = tmp_path / "run.gpuviz", tmp_path / "pids"
    proc = subprocess.run([sys.executable, "-m", "gpuviz", "run", str(SCRIPTS / "kills_runner.py"), str(pidfile),
                           "-o", str(out)], capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=QUICK)
    assert proc.returncode == -signal.SIGKILL and "killing my runner" in proc.stdout
    pids = [int(p) for p in pidfile.read_text().split()]  # the worker and a child it forked: both would wait 600 s
    assert len(pids) == 2 and _wait_gone(pids) == []
    traces = load_traces(out)
    assert [t.launch.meta["recording"]["number"] for t in traces] == [1, 2]
    assert all(t.launch.meta["recording"]["status"] == "traced" and len(t) > 0 for t in traces)


# ---- the numpy shim ----------------------------------------------------------------------------------------
def test_numpy_without_row_stack_is_shimmed_before_the_program_imports_numba(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import numpy\ndel numpy.row_stack  # as numpy 2.5 has it\n")
    check = subprocess.run([sys.executable, "-c", "import numpy; print(hasattr(numpy, 'row_stack'))"],
                           capture_output=True, text=True, env=_env(PYTHONPATH=f"{site}"))
    assert check.stdout.strip() == "False"  # the stand-in for numpy 2.5 works
    monkeypatch.setenv("PYTHONPATH", f"{site}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    for backend in ("cpu", "sim"):
        result = run_script(SCRIPTS / "imports_numba_first.py", backend=backend, timeout=QUICK)
        assert result.ok, result.message
        assert result.stdout == "row_stack: [[1, 2], [3, 4]]\n"


# ---- checked before the work ------------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["missing/run.gpuviz", "", "folder"])
def test_gpuviz_run_refuses_an_output_it_cannot_write_before_running_the_program(tmp_path, where):
    (tmp_path / "folder").mkdir()
    marker = tmp_path / "marker"
    proc = subprocess.run([sys.executable, "-m", "gpuviz", "run", str(SCRIPTS / "writes_marker.py"), str(marker),
                           "-o", where], capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=QUICK)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("gpuviz run: -o: ")
    assert {"missing/run.gpuviz": "does not exist", "": "empty", "folder": "is a folder"}[where] in proc.stderr
    assert not marker.exists()  # the program never ran


@pytest.mark.parametrize("where", ["missing/mm.gpuviz", "", "folder", "/dev/null"])
def test_gpuviz_capture_refuses_an_output_it_cannot_write_before_capturing(tmp_path, where):
    (tmp_path / "folder").mkdir()
    proc = subprocess.run([sys.executable, "-m", "gpuviz", "capture", "vector_add", "-o", where], capture_output=True,
                          text=True, env=_env(), cwd=tmp_path, timeout=QUICK)
    assert proc.returncode == 2 and proc.stderr.startswith("gpuviz capture: -o: ") and "Traceback" not in proc.stderr


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))


def test_a_capture_too_large_to_run_is_refused_before_its_inputs_are_allocated(tmp_path):
    # under a 6 GiB address-space limit: allocating vector_add's inputs at 1e9 elements (12 GB) would fail
    for size, says in (("1000000000", "more than gpuviz's CPU executor runs at once"),):
        proc = subprocess.run([sys.executable, "-m", "gpuviz", "capture", "vector_add", "--size", size, "-o",
                               str(tmp_path / "va.gpuviz")], capture_output=True, text=True, env=_env(),
                              timeout=QUICK, preexec_fn=_limit_memory)
        assert proc.returncode == 1 and says in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    proc = subprocess.run([sys.executable, "-m", "gpuviz", "capture", "vector_add", "--size", "1000000000", "--backend",
                           "gpu", "--blocks", "0", "-o", str(tmp_path / "va.gpuviz")], capture_output=True, text=True,
                          env=_env(), timeout=QUICK, preexec_fn=_limit_memory)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "its inputs would take" in proc.stderr or "no usable NVIDIA GPU" in proc.stderr or "GPU" in proc.stderr
    assert not (tmp_path / "va.gpuviz").exists()
    assert np.dtype(np.float32).itemsize == 4


# ---- progress in the window ----------------------------------------------------------------------------------
def test_the_windows_program_run_reports_progress_and_the_watchdogs_stop(qtbot):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from gpuviz.ui.views.launches import ScriptRunJob

    job = ScriptRunJob(time_limit_s=QUICK)
    seen, results = [], []
    job.progress.connect(seen.append)
    job.finished.connect(results.append)
    job.start(SCRIPTS / "endless_kernel.py", watchdog=3.0)
    qtbot.waitUntil(lambda: bool(results), timeout=int(QUICK * 1000))
    (result,) = results
    assert result.error["kind"] == "KernelStalled" and result.error["line"] == 8
    assert seen and seen[-1]["number"] == 1 and seen[-1]["kernel"] == "wait_for_flag" and seen[-1]["threads"] == 32
    assert not job.busy


def test_cancelling_a_program_in_the_window_ends_every_process_it_started(qtbot, tmp_path):
    from gpuviz.ui.views.launches import ScriptRunJob

    pidfile = tmp_path / "pids"
    job = ScriptRunJob(time_limit_s=QUICK)
    results = []
    job.finished.connect(results.append)
    job.start(SCRIPTS / "spawns_children.py", [str(pidfile), "wait"])
    qtbot.waitUntil(pidfile.exists, timeout=int(QUICK * 1000))
    pids = [int(p) for p in pidfile.read_text().split()]
    assert len(pids) == 4 and all(_alive(p) for p in pids)
    job.cancel()
    qtbot.waitUntil(lambda: bool(results), timeout=int(QUICK * 1000))
    assert results[0].status == "cancelled"
    assert _wait_gone(pids) == []
