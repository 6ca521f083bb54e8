"""CPU timings: numpy and gpuviz's CPU executor. They run on any machine and are labelled "cpu".

Times are host-clock medians of repeats after a warm-up. The CPU executor's time is that of the whole
recorded launch (it is an interpreter of the kernel, not a compiler): compare it with numpy to see what
teaching at thread granularity costs, never with a GPU kernel as if it were one.
"""

from __future__ import annotations

import datetime as _dt
import platform
import time

import numpy as np

from ..catalog import kernel_module
from ..model.timings import Series, TimingSet


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def numpy_add_seconds(a: np.ndarray, b: np.ndarray, repeats: int = 5) -> float:
    """Median seconds of ``a + b`` on the CPU; small sizes run as a batch so the clock can see them."""
    out = np.empty_like(a)
    np.add(a, b, out=out)  # warm-up: page in the output
    batch = int(max(1, min(10_000, 2e6 / max(a.size, 1))))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(batch):
            np.add(a, b, out=out)
        times.append((time.perf_counter() - t0) / batch)
    return float(np.median(times))


def numpy_series(sizes=(10**3, 10**4, 10**5, 10**6, 10**7), repeats: int = 5) -> Series:
    rng = np.random.default_rng(4)
    rows = {"size": [], "implementation": [], "processor": [], "seconds": []}
    for n in sizes:
        a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        rows["size"].append(int(n))
        rows["implementation"].append("numpy a + b")
        rows["processor"].append("cpu")
        rows["seconds"].append(numpy_add_seconds(a, b, repeats))
    return Series("cpu_vs_gpu", "c = a + b on the CPU (numpy)", "cpu", rows, {"seconds": "s"},
                  notes="host clock, median of repeats, small sizes batched")


def executor_series(sizes=(10**3, 10**4, 10**5), repeats: int = 3) -> Series:
    """vector_add through gpuviz's CPU executor (recording every event), over sizes."""
    # the capture package when the executor is timed, not before: the window's Timings view imports this module
    # and the window opens without gpuviz.capture (tests/test_startup.py)
    from ..capture import capture

    vector_add = kernel_module("vector_add").vector_add

    rng = np.random.default_rng(5)
    rows = {"size": [], "implementation": [], "processor": [], "seconds": []}
    for n in sizes:
        a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        c = np.zeros(n, np.float32)
        grid = ((n + 255) // 256,)
        capture(vector_add, grid, (256,), a, b, c, n, backend="cpu")  # warm-up: the kernel's compile
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            capture(vector_add, grid, (256,), a, b, c, n, backend="cpu")
            times.append(time.perf_counter() - t0)
        rows["size"].append(int(n))
        rows["implementation"].append("gpuviz CPU executor (recorded)")
        rows["processor"].append("cpu")
        rows["seconds"].append(float(np.median(times)))
    return Series("cpu_vs_gpu", "vector_add in gpuviz's CPU executor", "cpu", rows, {"seconds": "s"},
                  notes="host clock around a whole recorded capture, median of repeats after a warm-up")


def cpu_timing_set(label: str = "", *, numpy_sizes=(10**3, 10**4, 10**5, 10**6, 10**7),
                   executor_sizes=(10**3, 10**4, 10**5), repeats: int = 3) -> TimingSet:
    """numpy and CPU-executor timings of this machine, labelled as CPU measurements."""
    from ..capture import versions  # as in executor_series: loaded with the measurement, not with the window

    name = cpu_name()
    ts = TimingSet(label=label or f"CPU timings: {name}", processor="cpu", device=name,
                   date=_dt.date.today().isoformat(), host=f"{name} ({platform.system()} {platform.machine()})",
                   versions=versions())
    ts.add(numpy_series(numpy_sizes, repeats))
    if executor_sizes:
        ts.add(executor_series(executor_sizes, repeats))
    return ts
