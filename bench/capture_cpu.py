"""Capture speed without a GPU: gpuviz's CPU executor against numba's CUDA simulator, measured in one run.

    .venv/bin/python bench/capture_cpu.py [--repeats 3]

For tiled matmul (N=64, 16x16 tiles: 4,096 threads) and vector add (65,536 threads) it prints:
the simulator running the plain kernel and the per-thread instrumented kernel (one run each: it is
slow), gpuviz's executor plain (recording off) and instrumented (best of repeats, as timeit does: this
2-core machine is shared and noisy, and the minimum is the least disturbed run), and the ratios.
Targets: executor >= 30x faster than the simulator (instrumented vs instrumented), and
instrumented/plain <= 2x on the executor.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # the simulator is chosen when numba.cuda is first imported
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import gpuviz  # noqa: E402
from gpuviz.capture.backends.cpu.executor import compile_for_cpu, make_runtime, run_cpu  # noqa: E402
from gpuviz.catalog import get_kernel  # noqa: E402


def fresh_args(spec, size):
    return spec.make_args(size, np.random.default_rng(0))


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def bench_case(label, name, size, repeats):
    spec = get_kernel(name)
    grid, block = spec.launch(size, spec.default_block)
    n_threads = int(np.prod(grid)) * int(np.prod(block))

    sim_plain, _ = timed(lambda: spec.kernel[grid, block](*fresh_args(spec, size)))
    sim_traced, sim_trace = timed(lambda: gpuviz.capture(spec.kernel, grid, block, *fresh_args(spec, size), backend="sim"))

    ck = compile_for_cpu(spec.kernel)
    plain_times, traced_times = [], []
    for _ in range(repeats):
        args = fresh_args(spec, size)
        plain_times.append(timed(lambda a=args: run_cpu(ck, make_runtime(ck, grid, block, record=False), a))[0])
        args = fresh_args(spec, size)
        t, trace = timed(lambda a=args: gpuviz.capture(spec.kernel, grid, block, *a))
        traced_times.append(t)
    cpu_plain = min(plain_times)
    cpu_traced = min(traced_times)
    same = trace.per_thread_sequences() == sim_trace.per_thread_sequences() if len(trace) < 2_000_000 else None
    return {
        "case": label,
        "threads": n_threads,
        "events": len(trace),
        "sim_plain_s": sim_plain,
        "sim_traced_s": sim_traced,
        "cpu_plain_s": cpu_plain,
        "cpu_traced_s": cpu_traced,
        "speedup_traced": sim_traced / cpu_traced,
        "speedup_plain": sim_plain / cpu_plain,
        "cpu_traced_over_plain": cpu_traced / cpu_plain,
        "traces_equal": same,
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=9)
    a = p.parse_args(argv)
    rows = [
        bench_case("matmul_tiled N=64", "matmul_tiled", 64, a.repeats),
        bench_case("vector_add 65,536", "vector_add", 65_536, a.repeats),
    ]
    print(f"{'case':<20} {'threads':>8} {'events':>10} {'sim plain':>10} {'sim traced':>11} {'cpu plain':>10} "
          f"{'cpu traced':>11} {'sim/cpu traced':>15} {'sim/cpu plain':>14} {'cpu traced/plain':>17} {'same trace':>11}")
    for r in rows:
        print(f"{r['case']:<20} {r['threads']:>8,} {r['events']:>10,} {r['sim_plain_s']:>9.2f}s {r['sim_traced_s']:>10.2f}s "
              f"{r['cpu_plain_s']:>9.3f}s {r['cpu_traced_s']:>10.3f}s {r['speedup_traced']:>14.0f}x "
              f"{r['speedup_plain']:>13.0f}x {r['cpu_traced_over_plain']:>16.2f}x {str(r['traces_equal']):>11}")
    ok = all(r["speedup_traced"] >= 30 and r["cpu_traced_over_plain"] <= 2 for r in rows)
    print("targets (>= 30x faster than the simulator, instrumented/plain <= 2x):", "met" if ok else "NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
