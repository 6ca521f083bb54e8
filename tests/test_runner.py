"""Running unmodified Numba CUDA programs with every launch captured: `gpuviz run`, the worker process,
`gpuviz.recording()`, `gpuviz.show()`, the launch list in the window, and every way a program can go wrong.

The programs are in tests/user_scripts/: ordinary scripts, never edited for gpuviz. Each worker process
costs a second or two (it imports numba), so each program runs once and several tests share the result.
"""

import json
import os
import runpy
import subprocess
import sys
import time
import zipfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import pytest

import gpuviz
from gpuviz.capture.errors import DivergentBarrierError
from gpuviz.cli import split_run_argv
from gpuviz.model.trace import EventKind
from gpuviz.model.tracefile import TraceFileError, load_traces
from gpuviz.runner import run_script
from gpuviz.runner.notebook import show_command

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = Path(__file__).resolve().parent / "user_scripts"
SEVERAL = SCRIPTS / "several_kernels.py"
N = 70  # elements: 3 blocks of 32, the last one partly past the end
TIME_LIMIT = 3.0  # seconds, for the program that never ends
QUICK = 30.0  # every other program finishes in a few seconds; this only catches a hung test


def _env():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=str(ROOT))
    return env


@pytest.fixture(scope="module")
def plain_output():
    """The program's output run plainly under numba's simulator: what gpuviz must not change."""
    out = subprocess.run([sys.executable, str(SEVERAL), str(N)], capture_output=True, text=True, env=_env(),
                         timeout=120, check=True)
    return out.stdout


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    """`gpuviz run several_kernels.py 70 -o rec.gpuviz`, as a user types it."""
    out_file = tmp_path_factory.mktemp("cli") / "rec.gpuviz"
    proc = subprocess.run([sys.executable, "-m", "gpuviz", "run", str(SEVERAL), str(N), "-o", str(out_file)],
                          capture_output=True, text=True, env=_env(), timeout=120)
    return proc, out_file


# ---- every launch captured, results unchanged, traces exact ------------------------------------------------
def test_cli_run_prints_the_programs_output_unchanged_and_one_line_per_launch(cli_run, plain_output):
    proc, out_file = cli_run
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(plain_output)  # the program's own output first, byte for byte
    summary = proc.stdout[len(plain_output):].splitlines()
    launch_lines = [ln.strip() for ln in summary if ln.strip().startswith("launch")]
    assert [ln.split()[2] for ln in launch_lines] == ["vector_add", "block_sums", "transpose", "vector_add"]
    assert "grid 3 x block 32" in launch_lines[0] and "402 events" in launch_lines[0]
    assert "grid 1x2 x block 8x4" in launch_lines[2]
    assert any(f"recording -> {out_file}" in ln for ln in summary)


def test_recording_holds_every_launch_with_exact_traces(cli_run):
    _proc, out_file = cli_run
    traces = load_traces(out_file)
    assert [t.launch.kernel_name for t in traces] == ["vector_add", "block_sums", "transpose", "vector_add"]
    assert [t.launch.meta["recording"]["number"] for t in traces] == [1, 2, 3, 4]
    assert all(t.launch.meta["recording"]["status"] == "traced" for t in traces)
    assert traces[0].launch.source_file == str(SEVERAL)

    # vector_add: thread t of block b loads a[i], b[i] and stores out[i] with i = 32*b + t, only for i < N
    va = traces[0]
    gid = va.block.astype(np.int64) * 32 + va.thread
    a_id, b_id, out_id = (va.launch.array_id(n) for n in ("a", "b", "out"))
    for kind, aid in ((EventKind.GLOBAL_LOAD, a_id), (EventKind.GLOBAL_LOAD, b_id), (EventKind.GLOBAL_STORE, out_id)):
        sel = (va.kind == kind) & (va.array == aid)
        assert sorted(va.index[sel]) == list(range(N))
        assert (va.index[sel] == gid[sel]).all()
    assert (va.kind == EventKind.START).sum() == 96 and (va.kind == EventKind.END).sum() == 96
    assert len(va) == 96 * 2 + N * 3

    # block_sums: shared memory tile and barriers; each thread of a block passes the same 6 barriers
    bs = traces[1]
    barriers = bs.kind == EventKind.BARRIER
    per_thread = np.bincount(bs.block[barriers] * 32 + bs.thread[barriers], minlength=96)
    assert (per_thread == 6).all()
    assert bs.launch.arrays[bs.launch.array_id("tile")].space == "shared"

    # transpose: thread (x, y) stores dst[x, y] (flat x*6 + y) for the 6x5 source
    tr = traces[2]
    stores = tr.kind == EventKind.GLOBAL_STORE
    bx, by, _ = tr.launch.block_coords(tr.block[stores])
    tx, ty, _ = tr.launch.thread_coords(tr.thread[stores])
    x, y = bx * 8 + tx, by * 4 + ty
    assert (tr.index[stores] == x * 6 + y).all() and stores.sum() == 30


def test_choose_launches_by_kernel_and_number_the_others_still_run(plain_output):
    result = run_script(SEVERAL, [str(N)], kernel="vector_add", launches=[2], timeout=QUICK)
    assert result.ok, result.message
    assert result.stdout == plain_output
    assert [r.status for r in result.launches] == ["untraced", "untraced", "untraced", "traced"]
    assert "not chosen" in result.launches[0].reason
    assert [len(t) for t in result.traces] == [0, 0, 0, 402]


def test_the_simulator_backend_records_the_same_accesses(cli_run):
    result = run_script(SEVERAL, [str(N)], backend="sim", launches=[1], timeout=120)
    assert result.ok, result.message
    sim = result.traces[0]
    assert sim.launch.backend == "sim"
    cpu = load_traces(cli_run[1])[0]

    def accesses(t):
        mem = np.isin(t.kind, [EventKind.GLOBAL_LOAD, EventKind.GLOBAL_STORE])
        names = [t.launch.arrays[a].name for a in t.array[mem]]
        return sorted(zip(t.block[mem].tolist(), t.thread[mem].tolist(), t.kind[mem].tolist(), names,
                          t.index[mem].tolist()))

    assert accesses(sim) == accesses(cpu)


def test_gpu_backend_without_a_gpu_falls_back_with_a_notice():
    result = run_script(SCRIPTS / "unsupported_kernel.py", backend="gpu", timeout=QUICK)
    assert result.ok, result.message
    assert any("no usable NVIDIA GPU" in n for n in result.notices)
    assert result.launches[1].traced and result.launches[1].backend == "cpu"


# ---- launches gpuviz cannot instrument still run -----------------------------------------------------------
def test_unsupported_kernel_runs_plain_and_the_recording_says_why():
    result = run_script(SCRIPTS / "unsupported_kernel.py", timeout=QUICK)
    assert result.ok, result.message
    assert "result [2.0, 6.0, 10.0, 14.0, 18.0, 22.0, 26.0, 30.0]" in result.stdout  # (a[i] + a[i+1]) * 2
    first, second = result.launches
    assert first.status == "untraced" and first.backend == "plain"
    assert "Dict" in first.reason and "unsupported_kernel.py:9" in first.reason
    assert second.traced and len(result.traces[1]) == 8 * 2 + 8 * 2
    assert result.traces[0].launch.meta["recording"]["reason"] == first.reason


# ---- bad input: each a clear message, within the time limit ------------------------------------------------
def test_syntax_error_is_reported_with_file_and_line():
    result = run_script(SCRIPTS / "syntax_error.py", timeout=QUICK)
    assert result.status == "error" and result.error["kind"] == "SyntaxError"
    assert result.error["line"] == 7 and result.error["file"].endswith("syntax_error.py")
    assert "expected ':'" in result.message and "if i < out.size" in result.message
    assert result.launches == []


def test_exception_before_any_launch_is_the_programs_own_report():
    result = run_script(SCRIPTS / "raises_before_launch.py", timeout=QUICK)
    assert result.status == "error" and result.exit_code == 1
    assert result.stdout == "starting\n"
    assert result.error["kind"] == "FileNotFoundError" and result.error["line"] == 13
    assert "settings file settings.toml is missing" in result.message
    assert "Traceback" in result.stderr and "gpuviz" not in result.stderr.split("Traceback")[1].split("\n")[1]
    assert result.error["launch"] is None


def test_fault_inside_a_launch_names_the_thread_and_stops_the_program():
    result = run_script(SCRIPTS / "out_of_range.py", timeout=QUICK)
    assert result.status == "error" and result.error["kind"] == "KernelFault"
    assert result.stdout == "before the launch\n"  # its `except Exception` could not swallow the fault
    assert result.error["launch"] == 1 and result.error["kernel"] == "shift_left"
    assert result.error["block"] == [1, 0, 0] and result.error["thread"] == [31, 0, 0]
    assert result.error["line"] == 9 and "src[64]" in result.message
    assert result.launches[0].status == "failed"


def test_endless_loop_is_stopped_at_the_time_limit_with_where_it_was():
    t0 = time.perf_counter()
    result = run_script(SCRIPTS / "endless_kernel.py", timeout=TIME_LIMIT)
    assert time.perf_counter() - t0 < TIME_LIMIT + 10
    assert result.status == "timeout" and result.error["kind"] == "TimeLimit"
    assert result.stdout == "launching\n"
    assert "longer than the time limit of 3 s" in result.message
    assert "during launch 1 of wait_for_flag" in result.message
    assert result.error["launch"] == 1 and result.launches[0].status == "failed"
    assert result.error["file"].endswith("endless_kernel.py") and result.error["line"] == 15  # the launch line


def test_deadlock_at_a_divergent_barrier_names_block_and_threads():
    result = run_script(SCRIPTS / "divergent_barrier.py", timeout=QUICK)
    assert result.status == "error" and result.error["kind"] == "DivergentBarrierError"
    assert result.error["line"] == 11 and result.error["block"] == [0, 0, 0]
    assert "threads 0..15" in result.error["thread"] and "16..63" in result.error["thread"]
    assert "finished" not in result.stdout
    assert result.launches[0].status == "failed"


def test_a_billion_event_trace_is_refused_before_running_with_a_suggestion():
    result = run_script(SCRIPTS / "huge_trace.py", timeout=QUICK)
    # refused, not attempted: the launch never ran (the program stops at it) and no event was recorded
    assert result.status == "error" and result.error["kind"] == "TraceTooLarge"
    assert "done" not in result.stdout and sum(len(t) for t in result.traces) == 0
    assert "1,073,741,824 recorded threads" in result.message and "Refused before running" in result.message
    assert "record fewer blocks" in result.message and "smaller grid" in result.message
    assert "per-warp" in result.message


def test_event_limit_for_the_whole_recording_leaves_later_launches_untraced(plain_output):
    result = run_script(SEVERAL, [str(N)], max_events=1000, timeout=QUICK)
    assert result.ok and result.stdout == plain_output
    assert [r.status for r in result.launches] == ["traced", "untraced", "traced", "traced"]
    assert "event limit" in result.launches[1].reason and "record fewer blocks" in result.launches[1].reason
    assert sum(len(t) for t in result.traces) <= 1000


def test_damaged_and_forged_recordings_are_refused_without_running_anything(cli_run, tmp_path):
    good = cli_run[1].read_bytes()
    truncated = tmp_path / "truncated.gpuviz"
    truncated.write_bytes(good[: len(good) // 2])
    with pytest.raises(TraceFileError, match="truncated"):
        load_traces(truncated)

    # forged: a well-formed archive whose manifest claims a billion events and whose "field" is a pickle
    marker = tmp_path / "pwned"
    payload = b"cos\nsystem\n(S'touch " + str(marker).encode() + b"'\ntR."
    forged = tmp_path / "forged.gpuviz"
    with zipfile.ZipFile(forged, "w") as zf:
        zf.writestr("meta.json", '{"format": "gpuviz-trace", "schema_version": 1, "traces": [{"launch": '
                    '{"kernel_name": "k", "grid": [1], "block": [32]}, "n_events": 1000000000, '
                    '"fields": ["block", "thread", "seq", "kind"]}]}')
        zf.writestr("trace0/block.npy", payload)
    with pytest.raises(TraceFileError) as info:
        load_traces(forged)
    assert "forged.gpuviz" in str(info.value) and "damaged" in str(info.value)
    assert not marker.exists()

    for bad, words in ((truncated, "truncated"), (forged, "damaged")):
        proc = subprocess.run([sys.executable, "-m", "gpuviz", "info", str(bad)], capture_output=True, text=True,
                              env=_env(), timeout=60)
        assert proc.returncode == 1 and words in proc.stderr
    assert not marker.exists()


# ---- in-process recording (notebooks) and show() --------------------------------------------------------------
@pytest.fixture(scope="module")
def program():
    """The program's kernels, imported as a notebook would (its main() does not run)."""
    return runpy.run_path(str(SEVERAL))


def test_recording_captures_launches_in_process_and_restores_the_launcher(program, tmp_path):
    from numba import cuda

    vector_add = program["vector_add"]
    a = np.arange(40, dtype=np.float32)
    b = np.ones(40, dtype=np.float32)
    out = np.zeros(40, dtype=np.float32)
    with gpuviz.recording() as rec:
        vector_add[2, 32](a, b, out)
        d = cuda.to_device(a)
        vector_add[2, 32](d, d, d)
    assert np.array_equal(out, a + b) and np.array_equal(d.copy_to_host(), 2 * a)
    assert [len(t) for t in rec.traces] == [64 * 2 + 40 * 3] * 2
    assert [r.number for r in rec.launches] == [1, 2]
    vector_add[2, 32](a, b, out)  # after the block: numba's own launcher again
    assert len(rec.traces) == 2
    path = rec.save(tmp_path / "nb.gpuviz")
    assert [len(t) for t in load_traces(path)] == [len(t) for t in rec.traces]

    cmd = show_command(rec)
    assert cmd[:4] == [sys.executable, "-m", "gpuviz", "open"]
    assert [t.launch.kernel_name for t in load_traces(cmd[4])] == ["vector_add", "vector_add"]
    os.unlink(cmd[4])
    assert show_command(path)[4] == str(path)
    with pytest.raises(TypeError, match="gpuviz.show takes"):
        show_command(42)


def test_recording_raises_a_divergent_barrier_as_an_exception_in_process():
    from numba import cuda

    from gpuviz.runner.intercept import Interceptor

    # the script launches at its top level: take its kernel definition only, as a notebook cell would hold it
    path = SCRIPTS / "divergent_barrier.py"
    ns = {"__name__": "notebook_cell", "__file__": str(path)}
    exec(compile(path.read_text().split("\n\nout =")[0], str(path), "exec"), ns)
    out = np.zeros(128, dtype=np.float32)
    with pytest.raises(DivergentBarrierError, match="divergent barrier in block"):
        with gpuviz.recording() as rec:
            ns["half_sync"][2, 64](out)
    assert rec.launches[0].status == "failed"
    # the notebook goes on: the hooks are gone, and the next recording works
    assert Interceptor._active is None
    with gpuviz.recording() as again:
        d = cuda.to_device(np.arange(4.0))
    assert again.launches == [] and d.copy_to_host().tolist() == [0.0, 1.0, 2.0, 3.0]


def test_run_argument_splitting():
    assert split_run_argv(["prog.py", "100", "--backend", "sim", "--n", "5"]) == (
        ["prog.py", "--backend", "sim"], ["100", "--n", "5"])
    assert split_run_argv(["--launch=2", "prog.py", "--", "--backend", "x"]) == (
        ["--launch=2", "prog.py"], ["--backend", "x"])


# ---- the window: launch list, a program run from it, a failure that leaves it live ------------------------
def test_window_launch_list_runs_a_program_and_survives_its_failure(qtbot, cli_run, tmp_path):
    from gpuviz.ui.views.launches import load_recording, needs_launch_list, run_program
    from gpuviz.ui.window import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    w.resize(1400, 900)
    w.show()
    assert needs_launch_list(cli_run[1]) and needs_launch_list(SEVERAL)
    assert load_recording(w, cli_run[1])
    ll = w.launch_list_dock.launch_list
    assert ll.tree.topLevelItemCount() == 4
    assert w.session.trace.launch.kernel_name == "vector_add"
    ll.tree.setCurrentItem(ll.tree.topLevelItem(2))
    assert w.session.trace.launch.kernel_name == "transpose"

    bad = tmp_path / "bad.gpuviz"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n not a recording")
    assert not load_recording(w, bad)
    assert not ll.error.isHidden() and "PNG image" in ll.error.text()
    assert w.session.trace.launch.kernel_name == "transpose"  # the trace on screen stays

    run_program(w, SCRIPTS / "divergent_barrier.py", timeout=QUICK)
    qtbot.waitUntil(lambda: ll.last_result is not None, timeout=int(QUICK * 1000))
    assert ll.last_result.error["kind"] == "DivergentBarrierError"
    assert "divergent barrier in block (0, 0, 0)" in ll.error.text()
    assert ll.tree.topLevelItemCount() == 1 and "FAILED" in ll.tree.topLevelItem(0).text(5)
    w.session.set_frame(1)  # still live and usable
    assert w.session.frame == 1
    errors = {vid: v.errors for vid, v in w.views.items() if v.errors}
    assert errors == {}
    w.close()


def test_the_first_cause_is_reported_when_the_untraced_fallback_fails_too():
    """Finding 24: a kernel gpuviz cannot instrument fell back to numba's simulator, whose own error
    ('FakeCUDAModule' has no attribute 'shfl_down_sync') was all the report said."""
    result = run_script(SCRIPTS / "unsupported_with_shuffle.py", timeout=QUICK)
    assert not result.ok
    msg = result.message
    assert "Dict" in msg and "unsupported_with_shuffle.py:9" in msg, msg
    assert msg.index("Dict") < msg.index("shfl_down_sync"), msg  # the first cause first, the second after


# ---- finding 24 on every fallback path: the first cause leads what the user sees ---------------------------
def test_first_cause_leads_when_a_launch_too_large_to_trace_fails_untraced():
    """Too large to trace, so run untraced (--run-untraced: without it the program stops at the launch) on numba's
    simulator, which has no warp shuffles: the report says first why it was not traced (the event limit), then
    what the untraced run hit."""
    result = run_script(SCRIPTS / "shuffle_on_simulator.py", backend="sim", max_events=1, timeout=QUICK,
                        run_untraced=True)
    assert not result.ok and result.error["kind"] == "TraceTooLarge", result.error
    msg = result.message
    assert "over the limit of 1" in msg and "shfl_down_sync" in msg, msg
    assert msg.index("over the limit of 1") < msg.index("shfl_down_sync"), msg


def test_first_cause_leads_when_an_internal_error_falls_back_and_the_fallback_fails(monkeypatch):
    """gpuviz's own failure to trace (an internal error) sends the launch to numba's launcher (on the sim backend:
    on cpu the executor runs it untraced first, tests/test_never_break.py); when that fails too, the internal
    error is named first."""
    from gpuviz.capture.errors import CaptureError
    from gpuviz.runner.intercept import LaunchPolicy
    from tests.capture_kernels import warp_votes

    def broken_capture(*a, **k):
        raise RuntimeError("a bug in gpuviz's recorder")

    def simulator_launch():
        raise AttributeError("'FakeCUDAModule' object has no attribute 'shfl_down_sync'")

    monkeypatch.setattr(sys.modules["gpuviz.capture"], "capture", broken_capture)
    policy = LaunchPolicy(backend="sim", stop_program=False)
    x = np.arange(32, dtype=np.int32)
    args = (x, np.zeros(32, np.int32), np.zeros(32, np.int32), np.zeros(32, np.int32))
    with pytest.raises(CaptureError) as exc:
        policy.launch(warp_votes, 1, 32, args, simulator_launch)
    msg = str(exc.value)
    assert "internal error: RuntimeError: a bug in gpuviz's recorder" in msg, msg
    assert msg.index("a bug in gpuviz's recorder") < msg.index("shfl_down_sync"), msg
    assert isinstance(exc.value.__cause__, AttributeError)


def test_launch_untraced_by_choice_fails_with_the_programs_own_exception():
    """Not a fallback: a launch the selection leaves out runs as it would without gpuviz, and its failure is the
    program's own exception, of its own type."""
    from gpuviz.runner.intercept import LaunchPolicy, Selection
    from tests.capture_kernels import warp_votes

    def launch():
        raise ValueError("the program's own failure")

    policy = LaunchPolicy(backend="sim", selection=Selection(kernel="another_kernel"), stop_program=False)
    x = np.arange(32, dtype=np.int32)
    with pytest.raises(ValueError, match="the program's own failure"):
        policy.launch(warp_votes, 1, 32, (x, x.copy(), x.copy(), x.copy()), launch)


def test_first_cause_leads_when_the_window_falls_back_from_the_gpu_and_the_cpu_fails(monkeypatch, tmp_path):
    """The Launch panel's capture: no GPU here, so the CPU executor; when that fails as well, the error line the
    window shows says what failed and that it was the fallback for the GPU, whose absence is named."""
    import gpuviz
    from gpuviz.capture.errors import BackendUnavailable, KernelFault
    from gpuviz.runner import bundled
    from gpuviz.runner.protocol import EventLog, EventLogReader, error_text

    def capture(kernel, grid, block, *args, backend="cpu", **kw):
        if backend == "gpu":
            raise BackendUnavailable("no CUDA driver on this machine")
        raise KernelFault("kernels/vector_add.py:12: index 99 out of range for a (size 64)")

    monkeypatch.setattr(gpuviz, "capture", capture)
    request = {"kernel": "vector_add", "size": 64, "block": [32], "backend": "gpu"}
    key = "cd" * 32
    log = EventLog(tmp_path / "events.jsonl", bytes.fromhex(key))
    assert bundled.run({"bundled": request}, tmp_path, log) == bundled.EXIT_FAILED
    events = EventLogReader(tmp_path, key).poll()
    error = error_text(next(ev for ev in events if ev["event"] == "error"))
    assert error.startswith("KernelFault: kernels/vector_add.py:12: index 99 out of range"), error
    assert "no CUDA driver on this machine" in error and "CPU executor" in error, error
    assert any(ev["event"] == "notice" and "No GPU here" in ev["text"] for ev in events)


TOO_LARGE = SCRIPTS / "too_large_launch.py"  # launch 2: about 2.2 million events


@pytest.mark.parametrize("backend", ["cpu", "sim"])
def test_a_launch_too_large_to_trace_stops_the_program_there_with_the_estimate_and_the_options(backend):
    result = run_script(TOO_LARGE, backend=backend, max_events=200_000, timeout=QUICK)
    assert result.status == "error" and result.error["kind"] == "TraceTooLarge", result.message
    assert result.error["launch"] == 2 and result.error["kernel"] == "sweep"
    # stopped at the refused launch: the program did not go on (nor run the launch untraced)
    assert "first launch done" in result.stdout and "second launch done" not in result.stdout
    assert [r.status for r in result.launches] == ["traced", "failed"]
    message = result.message
    assert "would hold about" in message and "limit of the whole recording is 200,000 events" in message
    assert "--blocks" in message and "--max-events" in message and "--run-untraced" in message


def test_run_untraced_lets_the_program_go_on_past_a_launch_too_large_to_trace():
    result = run_script(TOO_LARGE, max_events=200_000, timeout=QUICK, run_untraced=True)
    assert result.ok, result.message
    assert "second launch done:" in result.stdout
    assert [r.status for r in result.launches] == ["traced", "untraced"]
    assert "would hold about" in result.launches[1].reason


def test_the_cli_takes_run_untraced_wherever_it_comes():
    ours, theirs = split_run_argv(["prog.py", "--n", "3", "--run-untraced"])
    assert ours == ["prog.py", "--run-untraced"] and theirs == ["--n", "3"]
    assert split_run_argv(["prog.py", "--", "--run-untraced"])[1] == ["--run-untraced"]


def test_the_window_launch_list_runs_too_large_launches_untraced_when_its_checkbox_is_ticked(qtbot, monkeypatch):
    # the launch list's "run too-large launches untraced" is `gpuviz run --run-untraced`: the request the worker
    # gets carries it, and the program goes on past the launch too large to trace instead of being stopped there
    from PySide6.QtCore import Qt

    from gpuviz.ui.views.launches import run_program
    from gpuviz.ui.window import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    w.resize(1280, 720)
    w.show()
    requests = []
    import gpuviz.runner.script as script_module

    prepare = script_module.prepare_run

    def spy(*args, **kw):  # the real request, read back from the file the worker reads
        folder, command, env = prepare(*args, **kw)
        requests.append(json.loads(Path(folder, "request.json").read_text()))
        return folder, command, env

    monkeypatch.setattr(script_module, "prepare_run", spy)
    try:
        dock = run_program(w, TOO_LARGE, max_events=200_000, timeout=QUICK)
        ll = dock.launch_list
        box = ll.untraced_box
        qtbot.waitUntil(box.isVisible, timeout=5000)  # the dock, raised, is laid out on the next events
        assert not box.isChecked()
        assert "goes on and gets its results" in box.toolTip() and "untraced" in box.toolTip()
        qtbot.waitUntil(lambda: ll.last_result is not None, timeout=int(QUICK * 1000))
        assert requests[-1]["run_untraced"] is False
        assert ll.last_result.error["kind"] == "TraceTooLarge" and "--run-untraced" in ll.last_result.message

        ll.last_result = None
        qtbot.mouseClick(box, Qt.MouseButton.LeftButton, pos=box.rect().center())
        assert box.isChecked()
        qtbot.mouseClick(ll.run_button, Qt.MouseButton.LeftButton)  # "Run again"
        qtbot.waitUntil(lambda: ll.last_result is not None, timeout=int(QUICK * 1000))
        assert requests[-1]["run_untraced"] is True and requests[-1]["max_events"] == 200_000
        result = ll.last_result
        assert result.ok, result.message
        assert "second launch done:" in result.stdout
        assert [r.status for r in result.launches] == ["traced", "untraced"]
        assert ll.tree.topLevelItemCount() == 2 and "not traced" in ll.tree.topLevelItem(1).text(5)
    finally:
        w.close()
