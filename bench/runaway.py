"""Runaway programs (issue 16): how long gpuviz takes to stop an endless kernel and to refuse a launch
whose trace is too large, and how many processes a SIGTERM of `gpuviz run` leaves behind.

    .venv/bin/python bench/runaway.py [--repeat 1]

Every figure is a wall-clock time of a command run here, next to a baseline measured in the same run
(endless kernels on the cpu and sim backends; a GPU's is `STEPS=runaway bash bench/gpu_session.sh`):
`gpuviz run` / `gpuviz capture` of a program or kernel that does almost nothing (what starting Python,
numba and gpuviz costs). Before issue 16 (from the issue): the endless kernel ran ~250 s, the 2G-event
launch 73 s before its refusal, and a SIGTERM left the worker running.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "tests" / "user_scripts"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

HUGE_2G = '''
import numpy as np
from numba import cuda

@cuda.jit
def two_accesses(a, out, n):
    i = cuda.grid(1)
    acc = 0.0
    for k in range(64):
        acc += a[(i + k) % n]
        out[(i + k) % n] = acc

a = np.ones(1024, np.float32)
out = np.zeros(1024, np.float32)
print("launching 65536 x 256 threads, 64 iterations", flush=True)
two_accesses[65536, 256](a, out, 1024)
'''

TRIVIAL = '''
import numpy as np
from numba import cuda

@cuda.jit
def fill(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = i

out = np.zeros(32, np.int64)
fill[1, 32](out)
'''


def timed(command, env=ENV, **kw) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900, **kw)
    return time.perf_counter() - t0, proc


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:][:1] not in (b"Z", b"X")


def left_after_signal(sig: int, tmp: Path) -> tuple[int, int]:
    """(processes the program started, how many of them are alive 5 s after ``sig`` reached gpuviz run)."""
    pidfile = tmp / f"pids-{sig}"
    proc = subprocess.Popen([sys.executable, "-m", "gpuviz", "run", str(SCRIPTS / "spawns_children.py"), str(pidfile),
                             "wait", "-o", str(tmp / "spawn.gpuviz")], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=ENV, cwd=tmp)
    deadline = time.monotonic() + 120
    while not pidfile.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    pids = [int(p) for p in pidfile.read_text().split()]
    proc.send_signal(sig)
    proc.wait(timeout=60)
    time.sleep(5)
    return len(pids), sum(_alive(p) for p in pids)


BASELINE = HUGE_2G.replace('two_accesses[65536, 256](a, out, 1024)', """
import time, gpuviz
from gpuviz.capture.errors import TraceTooLarge
for estimate in (True, False):
    t0 = time.perf_counter()
    try:
        gpuviz.capture(two_accesses, 65536, 256, a, out.copy(), 1024, estimate=estimate)
    except TraceTooLarge as exc:
        print(f"estimate={estimate}: TraceTooLarge after {time.perf_counter() - t0:.1f} s: {str(exc)[:150]}")
""")


COST = '''
import os, time, numpy as np
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
import gpuviz
from gpuviz.catalog import get_kernel
spec = get_kernel("matmul_tiled")
res = {}
for r in range(15):
    for label, kw in (("watchdog 10 s", {}), ("no watchdog", {"watchdog": None}),
                      ("no watchdog, no estimate", {"watchdog": None, "estimate": False})):
        args = spec.make_args(128, np.random.default_rng(0))
        grid, block = spec.launch(128, spec.default_block)
        t = time.perf_counter()
        gpuviz.capture(spec.kernel, grid, block, *args, **kw)
        res.setdefault(label, []).append(time.perf_counter() - t)
base = min(res["no watchdog, no estimate"])
for label, v in res.items():
    print(f"gpuviz.capture matmul_tiled N=128, {label}: min {min(v):.3f} s, median {sorted(v)[7]:.3f} s "
          f"(15 runs interleaved), {min(v) / base:.2f}x")
'''


def cost() -> str:
    """What the watchdog and the estimate cost a launch that needs neither (interleaved, same process)."""
    _, proc = timed([sys.executable, "-c", COST], cwd=ROOT)
    return (proc.stdout.strip() + "\n" + proc.stderr.strip()[-500:]).strip()


def baseline_2g() -> str:
    """gpuviz.capture() of the 2G-event launch with and without the estimate, in one process."""
    with tempfile.TemporaryDirectory(prefix="gpuviz-bench-baseline-") as d:
        script = Path(d, "baseline_2g.py")
        script.write_text(BASELINE)  # kernels need a source file
        _, proc = timed([sys.executable, str(script)], env={**ENV, "NUMBA_ENABLE_CUDASIM": "1"})
    return (proc.stdout.strip() + "\n" + proc.stderr.strip()[-500:]).strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--baseline", action="store_true",
                    help="also time the 2G-event launch without the estimate (how it went before: a minute or more)")
    ap.add_argument("--cost", action="store_true", help="also time a launch that needs no watchdog nor estimate")
    opts = ap.parse_args()
    if opts.cost:
        print(cost())
    if opts.baseline:
        print(baseline_2g())
    gpuviz = [sys.executable, "-m", "gpuviz"]
    with tempfile.TemporaryDirectory(prefix="gpuviz-bench-runaway-") as d:
        tmp = Path(d)
        (tmp / "trivial.py").write_text(TRIVIAL)
        (tmp / "huge_2g.py").write_text(HUGE_2G)
        for rep in range(opts.repeat):
            base_run, p = timed(gpuviz + ["run", str(tmp / "trivial.py"), "-o", str(tmp / "t.gpuviz")], cwd=tmp)
            assert p.returncode == 0, p.stderr
            for backend in ("cpu", "sim"):
                endless, p = timed(gpuviz + ["run", str(SCRIPTS / "endless_kernel.py"), "--backend", backend,
                                             "-o", str(tmp / "e.gpuviz")], cwd=tmp)
                stopped = "endless_kernel.py:8: the kernel made no progress toward its end for 1" in p.stderr
                print(f"[{rep}] gpuviz run --backend {backend} of an endless kernel (32 threads spinning on flag[0], "
                      f"default 10 s watchdog): ended in {endless:.1f} s (exit {p.returncode}, stopped with its line: "
                      f"{stopped}); a trivial program: {base_run:.1f} s; endless - trivial = {endless - base_run:.1f} s")

            base_cap, p = timed(gpuviz + ["capture", "matmul_naive", "--size", "64", "-o", str(tmp / "m.gpuviz")])
            assert p.returncode == 0, p.stderr
            refused, p = timed(gpuviz + ["capture", "matmul_naive", "--size", "1024", "-o", str(tmp / "m2.gpuviz")])
            said = next((ln for ln in p.stderr.splitlines() if "would hold" in ln), p.stderr.strip())
            print(f"[{rep}] gpuviz capture matmul_naive --size 1024 (2.15G events): refused in {refused:.1f} s "
                  f"(exit {p.returncode}); --size 64 captured in {base_cap:.1f} s; ratio {refused / base_cap:.2f}x\n"
                  f"      {said[:220]}")

            huge, p = timed(gpuviz + ["run", str(tmp / "huge_2g.py"), "-o", str(tmp / "h.gpuviz")], cwd=tmp)
            said = "would hold about 2,181,038,080 events" in p.stderr and "--run-untraced" in p.stderr
            print(f"[{rep}] gpuviz run of a 16,777,216-thread launch x 64 iterations x 2 accesses (2.18G events): "
                  f"the program ended in {huge:.1f} s (exit {p.returncode}; stopped at the launch with the estimate "
                  f"and the options: {said}); trivial program {base_run:.1f} s; ratio {huge / base_run:.2f}x")

            for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                started, alive = left_after_signal(sig, tmp)
                print(f"[{rep}] {signal.Signals(sig).name} to gpuviz run of a program with a worker, a forked child, a "
                      f"setsid child and a double-forked daemon: {alive} of {started} processes alive 5 s later")
    return 0


if __name__ == "__main__":
    sys.exit(main())
