"""numba-cuda's own test modules run with gpuviz doing every launch: the tests' own assertions judge gpuviz.

    nice -n 10 .venv/bin/python bench/corpus_tests.py [--only test_atomics test_sm] [--jobs 2]
                                                      [--timeout 240] [--out results.json]

Each test module that ships with the installed numba-cuda (``numba/cuda/tests/cudapy`` and
``doc_examples``) runs twice under numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``), each run in its own
worker process under a time limit:

* baseline: the tests as they are (the simulator runs every launch);
* gpuviz: every ``kernel[grid, block](...)`` of the tests goes through gpuviz's launch interception
  (``gpuviz.runner.intercept``, the CPU executor, as ``gpuviz run`` does it): traced while the event budget
  lasts, then run by the executor without recording, the results written back into the tests' arrays;
  a kernel gpuviz refuses runs on the simulator's own launcher (counted as "plain").

It prints passed / failed / errors / skipped per module for both runs, the modules where they differ (with the
tests that pass on the baseline and not with gpuviz), and the totals, with how many launches gpuviz ran.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OUTCOMES = ("passed", "failed", "errors", "skipped")


def test_modules() -> list[str]:
    from bench.corpus_extract import test_modules as modules

    return modules()


# ---- one module, in a worker process ----------------------------------------------------------------------
def run_module(modname: str, mode: str, out_path: str) -> None:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    import unittest

    from tests.corpus_support import stub_filecheck

    stub_filecheck()
    from numba import cuda  # noqa: F401 - the simulator is chosen here

    outcome: dict[str, str] = {}

    class Result(unittest.TextTestResult):
        def addSuccess(self, test):
            super().addSuccess(test)
            outcome[test.id()] = "passed"

        def addFailure(self, test, err):
            super().addFailure(test, err)
            outcome[test.id()] = "failed"

        def addError(self, test, err):
            super().addError(test, err)
            outcome[getattr(test, "id", lambda: str(test))()] = "errors"

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            outcome[test.id()] = "skipped"

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            outcome[test.id()] = "passed"

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            outcome[test.id()] = "failed"

        def addSubTest(self, test, subtest, err):
            super().addSubTest(test, subtest, err)
            if err is not None:
                outcome[test.id()] = "failed" if issubclass(err[0], test.failureException) else "errors"

    try:
        suite = unittest.defaultTestLoader.loadTestsFromName(modname)
    except Exception as exc:  # noqa: BLE001 - the module itself does not import: one error for it
        Path(out_path).write_text(json.dumps({"tests": {modname: "errors"}, "launches": {}, "import_error": str(exc)}))
        return
    launches: collections.Counter = collections.Counter()
    plain_reasons: collections.Counter = collections.Counter()
    with open(os.devnull, "w") as devnull:
        runner = unittest.TextTestRunner(stream=devnull, resultclass=Result, verbosity=0)
        if mode == "gpuviz":
            from gpuviz.runner.intercept import Interceptor, LaunchPolicy

            # traces are not kept (the tests' results are what counts): the budget only bounds recording time
            policy = LaunchPolicy(backend="cpu", max_events=20_000_000, stop_program=False,
                                  on_trace=lambda rec, trace: None, on_notice=lambda text: None)
            with Interceptor(policy):
                runner.run(suite)
            for r in policy.records:
                # "running" at the end: the launch raised out of gpuviz (numba's own launcher failed too)
                launches["traced" if r.status == "traced" else "failed" if r.status == "failed" else
                         "raised" if r.status == "running" else f"untraced ({r.backend})"] += 1
                if r.backend == "plain":
                    plain_reasons[(r.reason or "").strip().splitlines()[0][:160] if r.reason else ""] += 1
        else:
            runner.run(suite)
    # subtests that passed and a test that failed in another subtest: the worst outcome stays
    Path(out_path).write_text(json.dumps({"tests": outcome, "launches": dict(launches),
                                          "plain_reasons": dict(plain_reasons)}))


# ---- the parent: every module twice -----------------------------------------------------------------------
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="test module stems (test_atomics ...)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds per module and run")
    ap.add_argument("--out", help="write every module's per-test outcomes to this JSON file")
    ap.add_argument("--module", help=argparse.SUPPRESS)
    ap.add_argument("--mode", help=argparse.SUPPRESS)
    ap.add_argument("--part", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.module:
        run_module(a.module, a.mode, a.part)
        return 0
    mods = test_modules()
    if a.only:
        mods = [m for m in mods if m.rsplit(".", 1)[1] in a.only]
    tmp = Path(tempfile.mkdtemp(prefix="gpuviz-corpus-tests-"))
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=str(ROOT))
    pending = [(m, mode) for m in mods for mode in ("baseline", "gpuviz")]
    running: list = []
    results: dict = {m: {} for m in mods}
    t_start = time.perf_counter()
    while pending or running:
        while pending and len(running) < a.jobs:
            m, mode = pending.pop(0)
            part = tmp / f"{m}.{mode}.json"
            p = subprocess.Popen([sys.executable, __file__, "--module", m, "--mode", mode, "--part", str(part)], env=env,
                                 stdout=subprocess.DEVNULL, stderr=open(tmp / f"{m}.{mode}.log", "w"))
            running.append((m, mode, part, p, time.perf_counter()))
        time.sleep(0.2)
        for item in list(running):
            m, mode, part, p, t0 = item
            if p.poll() is None and time.perf_counter() - t0 < a.timeout:
                continue
            if p.poll() is None:
                p.kill()
                p.wait()
                results[m][mode] = {"status": f"timed out after {a.timeout:.0f}s"}
            elif p.returncode == 0 and part.exists():
                results[m][mode] = json.loads(part.read_text()) | {"status": "ok"}
            else:
                results[m][mode] = {"status": f"worker exit {p.returncode}"}
            results[m][mode]["seconds"] = round(time.perf_counter() - t0, 1)
            running.remove(item)
    print(report(results))
    print(f"({time.perf_counter() - t_start:.0f}s, {a.jobs} workers, {a.timeout:.0f}s per module and run)")
    if a.out:
        Path(a.out).write_text(json.dumps(results, indent=1))
    return 0


def _counts(run: dict) -> collections.Counter:
    return collections.Counter(run.get("tests", {}).values())


def report(results: dict) -> str:
    out = [f"{'module':44s} {'baseline p/f/e/s':>18s}   {'with gpuviz p/f/e/s':>20s}   launches with gpuviz"]
    total = {"baseline": collections.Counter(), "gpuviz": collections.Counter()}
    launches: collections.Counter = collections.Counter()
    plain: collections.Counter = collections.Counter()
    differ = []
    for m, runs in results.items():
        cells = []
        for mode in ("baseline", "gpuviz"):
            run = runs.get(mode, {})
            if run.get("status") != "ok":
                cells.append(f"{run.get('status', 'not run'):>18s}")
                continue
            c = _counts(run)
            total[mode].update(c)
            cells.append("/".join(str(c[o]) for o in OUTCOMES).rjust(18))
        g = runs.get("gpuviz", {})
        launches.update(g.get("launches", {}))
        plain.update(g.get("plain_reasons", {}))
        shown = ", ".join(f"{n} {k}" for k, n in sorted(g.get("launches", {}).items()))
        out.append(f"{'/'.join(m.rsplit('.', 2)[-2:]):44s} {cells[0]}   {cells[1]:>20s}   {shown}")
        base, with_g = runs.get("baseline", {}).get("tests", {}), g.get("tests", {})
        lost = sorted(t for t, o in base.items() if o == "passed" and with_g.get(t, "not run") != "passed")
        if lost or (runs.get("baseline", {}).get("status") == "ok") != (g.get("status") == "ok"):
            differ.append((m, lost, g.get("status"), [with_g.get(t, "not run") for t in lost]))
    out.append("")
    for mode in ("baseline", "gpuviz"):
        c = total[mode]
        out.append(f"total {mode:9s} " + ", ".join(f"{c[o]} {o}" for o in OUTCOMES))
    out.append("launches with gpuviz: " + ", ".join(f"{n} {k}" for k, n in sorted(launches.items())))
    if plain:
        out.append("most common reasons a launch ran on the simulator's own launcher (plain):")
        for why, n in plain.most_common(10):
            out.append(f"  {n:5d}  {why}")
    if differ:
        out.append("")
        out.append("tests that pass on the baseline and not with gpuviz:")
        for m, lost, status, how in differ:
            if status != "ok":
                out.append(f"  {m}: the gpuviz run {status}")
            for t, o in zip(lost, how):
                out.append(f"  {t}: {o}")
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())
