"""The command line's table of bad arguments: each is refused with one line and status 2, before any work.

Every invocation runs in one worker process (under a time limit, so a hang fails the test and a crash
names the invocation it died on); the table asserts no traceback, no hang, no crash and no absurd input
accepted. Output paths are then checked to be untouched: a device stays a device, a folder a folder.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gpuviz.model.safewrite import OutputPathError, check_output_path, current_umask, replace_atomically
from gpuviz.model.tracefile import save_traces

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import contextlib, io, json, sys, traceback
from gpuviz.cli import main
cases = json.load(open(sys.argv[1]))
for i, argv in enumerate(cases):
    print(json.dumps({"start": i}), flush=True)
    out, err = io.StringIO(), io.StringIO()
    rec = {"i": i}
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rec["rc"] = main(argv)
        except SystemExit as exc:
            rec["rc"] = exc.code
        except BaseException:
            rec["rc"] = "traceback"
            rec["traceback"] = traceback.format_exc()[-2000:]
    rec["err"] = err.getvalue()
    print(json.dumps(rec), flush=True)
"""


def _run_table(cases: list[list[str]], tmp_path: Path, timeout: float = 300) -> list[dict]:
    table = tmp_path / "cases.json"
    table.write_text(json.dumps(cases))
    env = dict(os.environ, PYTHONPATH=str(ROOT), QT_QPA_PLATFORM="offscreen", NUMBA_ENABLE_CUDASIM="1")
    try:
        proc = subprocess.run([sys.executable, "-c", _CHILD, str(table)], capture_output=True, text=True,
                              timeout=timeout, env=env, cwd=str(tmp_path))
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        started = [json.loads(x)["start"] for x in out.splitlines() if x.startswith('{"start"')]
        pytest.fail(f"hang: {cases[started[-1]] if started else '?'} did not end in {timeout} s")
    recs = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith('{"i"')]
    if len(recs) != len(cases):
        started = [json.loads(x)["start"] for x in proc.stdout.splitlines() if x.startswith('{"start"')]
        pytest.fail(f"crash (exit {proc.returncode}) on {cases[started[-1]] if started else '?'}:\n{proc.stderr[-2000:]}")
    return recs


@pytest.fixture
def places(tmp_path):
    """A trace file, a folder, a FIFO, a lesson, a program and outputs to aim at."""
    from tests.fuzzing import _synthetic  # noqa: F401 - the same small trace the fuzzers start from

    p = {"dir": tmp_path / "folder", "fifo": tmp_path / "pipe", "trace": tmp_path / "t.gpuviz",
         "out": tmp_path / "out.png", "missing": tmp_path / "no" / "such" / "x.gpuviz", "prog": tmp_path / "prog.py"}
    p["dir"].mkdir()
    os.mkfifo(p["fifo"])
    save_traces(p["trace"], [_synthetic(n_blocks=1, tpb=32)])
    p["prog"].write_text("print('hi')\n")
    return {k: str(v) for k, v in p.items()}


def _bad_cases(p: dict) -> list[list[str]]:
    t, d, fifo, out = p["trace"], p["dir"], p["fifo"], p["out"]
    cap = ["capture", "vector_add"]
    o = ["-o", str(Path(d) / "x.gpuviz")]
    cases = [
        # capture: sizes, blocks, block ids, outputs
        cap + ["--size", "nan"] + o, cap + ["--size", "-3"] + o, cap + ["--size", "0"] + o,
        cap + ["--size", "1e400"] + o, cap + ["--size", "99999999999"] + o, cap + ["--size", "1.5"] + o,
        cap + ["--block", "0"] + o, cap + ["--block", "2048"] + o, cap + ["--block", "16x16x16x2"] + o,
        cap + ["--block", "33x33"] + o, cap + ["--block", "x"] + o, cap + ["--block", "1x1x65"] + o,
        cap + ["--blocks", "-1"] + o, cap + ["--blocks", "a,b"] + o, cap + ["--blocks", ""] + o,
        cap + ["--blocks", "1,,2"] + o, cap + ["--blocks", "99999"] + o, cap + ["--backend", "tpu"] + o,
        cap + ["-o", d], cap + ["-o", ""], cap + ["-o", "/proc/version"], cap + ["-o", p["missing"]],
        cap + ["-o", fifo], cap + ["-o", d + "/"],
        # snapshot: image sizes, frames, outputs, inputs
        ["snapshot", t, "--size", "30000x30000", "-o", out], ["snapshot", t, "--size", "100000x100000", "-o", out],
        ["snapshot", t, "--size", "10x10", "-o", out], ["snapshot", t, "--size", "axb", "-o", out],
        ["snapshot", t, "--size", "1920", "-o", out], ["snapshot", t, "--size", "8192x8192", "-o", out],
        ["snapshot", t, "--size", "-1920x1080", "-o", out], ["snapshot", t, "--frame", "nan", "-o", out],
        ["snapshot", t, "--frame", "1e400", "-o", out], ["snapshot", t, "-o", d], ["snapshot", t, "-o", ""],
        ["snapshot", t, "-o", fifo], ["snapshot", fifo, "-o", out], ["snapshot", d, "-o", out],
        ["snapshot", t, "-o", p["missing"]],
        # export: scale, fps, sizes, formats, timing files
        ["export", t, "--format", "png", "--scale", "nan", "-o", out],
        ["export", t, "--format", "png", "--scale", "-3", "-o", out],
        ["export", t, "--format", "png", "--scale", "inf", "-o", out],
        ["export", t, "--format", "png", "--scale", "0", "-o", out],
        ["export", t, "--format", "png", "--scale", "1000", "-o", out],
        ["export", t, "--format", "gif", "--fps", "0", "-o", out],
        ["export", t, "--format", "gif", "--fps", "nan", "-o", out],
        ["export", t, "--format", "gif", "--fps", "-1", "-o", out],
        ["export", t, "--format", "gif", "--fps", "1e9", "-o", out],
        ["export", t, "--format", "png", "--size", "30000x30000", "-o", out],
        ["export", t, "--format", "bmp", "-o", out], ["export", t, "--format", "png", "-o", d],
        ["export", t, "--format", "html", "--max-mb", "nan", "-o", out],
        ["export", t, "--format", "html", "--max-mb", "-1", "-o", out], ["export", t, "--format", "html", "-o", d],
        ["export", t, "--format", "html", "-o", fifo],
        ["export", t, "--format", "perfetto", "--timings", fifo, "-o", out],
        ["export", t, "--format", "png", "--frame", "1e400", "-o", out], ["export", fifo, "--format", "png", "-o", out],
        # run: limits, launches, block ids, programs, outputs
        ["run", p["prog"], "--max-events", "1e400"], ["run", p["prog"], "--max-events", "0"],
        ["run", p["prog"], "--max-events", "-5"], ["run", p["prog"], "--max-events", "nan"],
        ["run", p["prog"], "--timeout", "nan"], ["run", p["prog"], "--timeout", "-1"],
        ["run", p["prog"], "--timeout", "inf"], ["run", p["prog"], "--timeout", "0"],
        ["run", p["prog"], "--launch", "0"], ["run", p["prog"], "--launch", "x"],
        ["run", p["prog"], "--blocks", "-1"], ["run", p["prog"], "-o", d], ["run", p["prog"], "-o", ""],
        ["run", p["prog"], "-o", "/proc/version"], ["run", fifo], ["run", d], ["run", p["missing"]],
        # info / open / lesson on what is not a readable regular file
        ["info", fifo], ["info", d], ["info", p["missing"]], ["info", ""], ["open", fifo], ["open", d],
        ["open", p["missing"]], ["lesson", fifo], ["lesson", d],
        ["--present", "bogus"], ["capture"], ["snapshot", t],
    ]
    if os.path.exists("/dev/full"):
        cases += [cap + ["-o", "/dev/full"], ["snapshot", t, "-o", "/dev/full"], ["run", p["prog"], "-o", "/dev/full"],
                  ["export", t, "--format", "png", "-o", "/dev/full"]]
    if os.path.exists("/dev/zero"):
        cases += [["info", "/dev/zero"], ["open", "/dev/zero"], ["lesson", "/dev/zero"]]
    return cases


def test_bad_arguments_are_one_line_and_status_2(places, tmp_path):
    cases = _bad_cases(places)
    recs = _run_table(cases, tmp_path)
    problems = []
    for argv, rec in zip(cases, recs):
        err = rec["err"].strip()
        if rec["rc"] == "traceback" or "Traceback" in rec["err"]:
            problems.append(f"traceback: {argv}\n{rec.get('traceback', rec['err'])[-600:]}")
        elif rec["rc"] != 2:
            problems.append(f"accepted or wrong status {rec['rc']}: {argv}: {err[:200]}")
        elif not err or "\n" in err:
            problems.append(f"not one line: {argv}: {err[:400]!r}")
    assert not problems, f"{len(problems)} of {len(cases)}:\n" + "\n".join(problems)
    # nothing aimed at was replaced or created
    assert stat.S_ISDIR(os.stat(places["dir"]).st_mode) and os.listdir(places["dir"]) == []
    assert stat.S_ISFIFO(os.stat(places["fifo"]).st_mode)
    assert not Path(places["out"]).exists() and not Path(places["missing"]).parent.exists()
    if os.path.exists("/dev/full"):
        assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
    assert stat.S_ISREG(os.stat("/proc/version").st_mode) and Path("/proc/version").read_text().strip()


def test_good_arguments_still_work_and_outputs_respect_the_umask(places, tmp_path):
    out = tmp_path / "shot.png"
    trace_out = tmp_path / "again.gpuviz"
    recs = _run_table([["snapshot", places["trace"], "--size", "320x240", "-o", str(out)],
                       ["capture", "vector_add", "--size", "1e3", "--block", "128", "-o", str(trace_out)],
                       ["info", places["trace"]]], tmp_path)
    assert [r["rc"] for r in recs] == [0, 0, 0], recs
    want = 0o666 & ~current_umask()
    for p in (out, trace_out):
        assert stat.S_IMODE(os.stat(p).st_mode) == want, (p, oct(os.stat(p).st_mode))
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert [x.name for x in tmp_path.iterdir() if x.name.startswith(".")] == []  # no temporary file left


def test_safe_write_refuses_what_is_not_a_regular_file(places, tmp_path):
    for bad in (places["dir"], places["fifo"], "", places["missing"], "/proc/version"):
        with pytest.raises(OutputPathError):
            check_output_path(bad)
    with pytest.raises(OutputPathError):
        with replace_atomically(places["fifo"]) as tmp:
            tmp.write_text("never")
    # an existing file keeps its mode; a failed write leaves the old content and no temporary file
    target = tmp_path / "kept.txt"
    target.write_text("old")
    os.chmod(target, 0o640)
    with pytest.raises(RuntimeError):
        with replace_atomically(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("the writer failed")
    assert target.read_text() == "old"
    with replace_atomically(target) as tmp:
        tmp.write_text("new")
    assert target.read_text() == "new" and stat.S_IMODE(os.stat(target).st_mode) == 0o640
    assert sorted(x.name for x in tmp_path.iterdir() if x.name.startswith(".")) == []
    # a symlink to a regular file: the file is replaced, the link kept
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    with replace_atomically(link) as tmp:
        tmp.write_text("via link")
    assert link.is_symlink() and target.read_text() == "via link"


def test_save_traces_never_replaces_a_fifo_or_a_device(places):
    from gpuviz.model.tracefile import TraceFileError, load_trace, save_traces

    tr = load_trace(places["trace"])
    with pytest.raises(TraceFileError, match="FIFO"):
        save_traces(places["fifo"], [tr])
    assert stat.S_ISFIFO(os.stat(places["fifo"]).st_mode)
    if os.path.exists("/dev/full"):
        with pytest.raises(TraceFileError, match="device"):
            save_traces("/dev/full", [tr])
        assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
