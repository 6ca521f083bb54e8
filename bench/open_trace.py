"""Benchmark: opening a big trace in the window, against numpy's raw read of the same file's arrays.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/open_trace.py [--file T.gpuviz] [--repeat 3]
        [--size 1920x1080] [--save bench/results/open_trace.txt]

The trace: ``reduce_sum`` over 1<<20 elements captured with the CPU executor (4,096 blocks, 16.8M events), saved
by ``Trace.save`` (schema 2: stored, aligned members and the index), unless ``--file`` names one. A copy
without the index is saved too (an older file's situation: the window builds the index in the background).

Each measurement runs in a fresh process (so its peak memory is its own), ``--repeat`` times; medians are
printed, with every run's figures:

    raw read     numpy reads every event field of the file (``np.load`` of the archive, each array in full):
                 the baseline the ratios are against
    first open   the window (shown, empty) opens the file (File > Open's path: a background job) until the
                 first frame is drawn (the new trace on screen, events processed, the window painted)
    second open  the same file opened again in the same window (unchanged: the window sees that it is the file
                 on screen and reads nothing, going back to its first frame; the index source says "on screen")
    no index     the copy without an index opened (index built on the job's thread, then cached), and
                 opened again (read from the cache folder)

While the window runs, a 5 ms heartbeat timer on the GUI thread records when it fires; the longest gap between
two beats is the longest the window stood still. It is reported over opening, and over stepping (200 frames
forward), scrubbing (the slider dragged across 200 positions) and resizing (20 sizes), each one event at a time
as a user's input would come. Peak memory is the process's high-water resident set (``VmHWM``: memory-mapped
file pages it touched count, and a file mapped twice, while a second open replaces the first, counts twice)
over the trace's event arrays; beside it, the peak of its anonymous memory (``RssAnon``, sampled on the
heartbeat): what the process allocated itself. (``getrusage``'s ru_maxrss is not used: Linux carries it over
from the parent process across fork and exec, so a child would report the capture's peak.)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from report import Report  # noqa: E402 - bench/report.py, beside this script


def make_traces(folder: Path) -> tuple[Path, Path]:
    import numpy as np

    import gpuviz
    from gpuviz.model.tracefile import save_traces
    from gpuviz.catalog import get_kernel

    spec = get_kernel("reduce_sum")
    size = 1 << 20
    grid, block = spec.launch(size, spec.default_block)
    trace = gpuviz.capture(spec.kernel, grid, block, *spec.make_args(size, np.random.default_rng(0)), backend="cpu",
                           meta={"bundled_kernel": {"name": "reduce_sum", "size": size}})
    full, bare = folder / "reduce_1m.gpuviz", folder / "reduce_1m_noindex.gpuviz"
    save_traces(full, [trace])
    save_traces(bare, [trace], index=False)
    return full, bare


# ---- the measurements, each in its own process ----------------------------------------------------------
def status_mb(key: str) -> float:
    """A figure of /proc/self/status in bytes (VmHWM, VmRSS, RssAnon, ...)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return float(line.split()[1]) * 1024
    return float("nan")


def child_raw(path: str) -> dict:
    import numpy as np

    t0 = time.perf_counter()
    with np.load(path) as z:
        names = [n for n in z.files if n.startswith("trace0/") and "/index/" not in n]
        arrays = {n: z[n] for n in names}
    dt = time.perf_counter() - t0
    return {"s": dt, "bytes": sum(a.nbytes for a in arrays.values()), "maxrss": status_mb("VmHWM")}


def child_window(path: str, size: str, bare: str | None) -> dict:
    import numpy as np
    from PySide6.QtCore import QTimer

    from gpuviz.app import _application
    from gpuviz.ui.window import MainWindow

    app = _application()
    w, h = (int(x) for x in size.split("x"))
    window = MainWindow()
    window.resize(w, h)
    window.show()
    for _ in range(5):
        app.processEvents()
    beats: list[float] = []
    anon = [status_mb("RssAnon")]

    def beat() -> None:
        beats.append(time.perf_counter())
        if len(beats) % 10 == 0:
            anon.append(status_mb("RssAnon"))

    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(beat)
    timer.start()
    rss0 = status_mb("VmHWM")

    def longest_gap(t0: float, t1: float) -> float:
        b = [t for t in beats if t0 <= t <= t1]
        b = [t0] + b + [t1]
        return 1e3 * float(np.max(np.diff(b))) if len(b) > 1 else float("nan")

    def wait(cond, limit=600.0):
        end = time.perf_counter() + limit
        while not cond():
            app.processEvents()
            time.sleep(0.001)
            if time.perf_counter() > end:
                raise TimeoutError("the window did not finish in time")

    def open_once(p: str) -> tuple[float, float, str]:
        t0 = time.perf_counter()
        job = window.open_in_background(p)
        source = {}
        job.finished.connect(lambda: source.setdefault("s", job.index_source))
        # the views on screen adopt a big trace one per event-loop turn: the first frame is there once all did
        wait(lambda: not window.opening and not getattr(window.session, "settling", False))
        app.processEvents()
        window.grab()  # the first frame, painted
        t1 = time.perf_counter()
        if window.session.trace is None or window.launch_panel.error.isVisible():
            raise RuntimeError(f"opening {p} failed: {window.launch_panel.error.text()}")
        return t1 - t0, longest_gap(t0, t1), source.get("s", "")

    out = {}
    out["first_s"], out["first_stall_ms"], out["first_index"] = open_once(path)
    out["n_events"] = len(window.session.trace)
    out["array_bytes"] = sum(window.session.trace.field(n).nbytes for n in window.session.trace.recorded_fields)
    out["maxrss_after_first"] = status_mb("VmHWM")
    out["anon_after_first"] = max(anon)
    out["maxrss_before"] = rss0
    out["second_s"], out["second_stall_ms"], out["second_index"] = open_once(path)
    n = window.session.frames.n_frames
    # stepping: one key press at a time, events processed between (as a held arrow key would come)
    t0 = time.perf_counter()
    for _ in range(200):
        window.actions.trigger("playback.step_forward")
        app.processEvents()
    t1 = time.perf_counter()
    out["step_ms_per_frame"] = 1e3 * (t1 - t0) / 200
    out["step_stall_ms"] = longest_gap(t0, t1)
    # scrubbing: the slider dragged across the trace
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    for v in np.sort(rng.integers(0, n, 200)):
        window.slider.setValue(int(v))
        app.processEvents()
    t1 = time.perf_counter()
    out["scrub_ms_per_frame"] = 1e3 * (t1 - t0) / 200
    out["scrub_stall_ms"] = longest_gap(t0, t1)
    # resizing
    t0 = time.perf_counter()
    for i in range(20):
        window.resize(w - 40 * (i % 5), h - 30 * (i % 4))
        app.processEvents()
    window.resize(w, h)
    app.processEvents()
    # the user lets go: the plots, laid out once the resizes pause (PlotRelayout), are part of the resize
    wait(lambda: not getattr(getattr(window, "plot_relayout", None), "pending", False))
    app.processEvents()  # the paint that asks for
    t1 = time.perf_counter()
    out["resize_stall_ms"] = longest_gap(t0, t1)
    out["maxrss"] = status_mb("VmHWM")
    out["anon"] = max(anon)
    if bare:
        out["bare_first_s"], out["bare_first_stall_ms"], out["bare_first_index"] = open_once(bare)
        # the full file again with another one on screen: read again (warm page cache); and so the next open reads
        # the bare file again too (its index from the cache folder)
        out["reread_s"], out["reread_stall_ms"], out["reread_index"] = open_once(path)
        out["bare_second_s"], out["bare_second_stall_ms"], out["bare_second_index"] = open_once(bare)
    timer.stop()
    window.close()
    return out


def run_child(args: list[str], env: dict) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(args)], capture_output=True, text=True,
                          env=env, timeout=1800)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"child {args[0]} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][7:])


def run_all(a, full: Path, bare: Path, cache: Path, env: dict, say) -> list:
    """Every run's (raw read, window) figures, each said as it comes."""
    runs = []
    for r in range(a.repeat):
        for f in cache.glob("*/*/*"):
            f.unlink()  # the no-index copy is indexed afresh in every run
        raw = run_child(["raw", str(full)], env)
        win = run_child(["window", str(full), a.size, str(bare)], env)
        runs.append((raw, win))
        say(f"run {r + 1}: raw read {raw['s']:.2f} s; first open {win['first_s']:.2f} s "
            f"({win['first_s'] / raw['s']:.2f}x, index from {win['first_index']}), second {win['second_s']:.2f} s "
            f"({win['second_s'] / raw['s']:.2f}x, {win['second_index']}); stalls ms: open {win['first_stall_ms']:.0f}/{win['second_stall_ms']:.0f}, "
            f"step {win['step_stall_ms']:.0f}, scrub {win['scrub_stall_ms']:.0f}, resize {win['resize_stall_ms']:.0f}; "
            f"no index: {win['bare_first_s']:.2f} s ({win['bare_first_index']}, stall {win['bare_first_stall_ms']:.0f} ms), "
            f"again {win['bare_second_s']:.2f} s ({win['bare_second_index']}); peak RSS {win['maxrss'] / 1e6:,.0f} MB")
    return runs


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--file", help="a saved trace to open (default: capture reduce_sum 1<<20 now)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--save")
    ap.add_argument("--child")
    a = ap.parse_args()
    if a.child:
        kind, *rest = json.loads(a.child)
        res = child_raw(*rest) if kind == "raw" else child_window(*rest)
        print("RESULT " + json.dumps(res), flush=True)
        return 0

    import numpy as np
    import PySide6

    folder = Path(tempfile.mkdtemp(prefix="gpuviz-open-"))
    cache = folder / "cache"
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), PYTHONPATH=str(ROOT))
    report = Report("bench/open_trace.py", a.size,
                    f"python {platform.python_version()} numpy {np.__version__} PySide6 {PySide6.__version__}")
    say = report.say
    say("# peak RSS: the window process's VmHWM, its high-water resident set: anonymous memory plus the pages of the "
        "memory-mapped trace file it had mapped in at that moment (pages it let go of, madvise DONTNEED, no longer "
        "count; the kernel's page cache never does); peak anonymous: RssAnon sampled on the heartbeat")
    if a.file:
        full = Path(a.file)
        from gpuviz.model.tracefile import load_trace, save_traces

        bare = folder / "noindex.gpuviz"
        save_traces(bare, [load_trace(full, with_index=False)], index=False)
    else:
        t0 = time.perf_counter()
        full, bare = make_traces(folder)
        say(f"captured and saved reduce_sum 1<<20 in {time.perf_counter() - t0:.1f} s: {full.stat().st_size / 1e6:,.0f} MB "
            f"with the index, {bare.stat().st_size / 1e6:,.0f} MB without")
    try:
        runs = run_all(a, full, bare, cache, env, say)
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # 1.8 GB of traces and their cache a run: none left behind

    def m(key, side=1):
        return statistics.median(r[side][key] for r in runs)

    raw_s = statistics.median(r[0]["s"] for r in runs)
    arrays = runs[0][1]["array_bytes"]
    say()
    say(f"trace: {runs[0][1]['n_events']:,} events, event arrays {arrays / 1e6:,.0f} MB; medians of {len(runs)} runs")
    say(f"{'measure':52s} {'median':>10s} {'target':>10s}")
    rows = [
        ("numpy raw read of the event arrays, s", raw_s, ""),
        ("first open to first frame, x raw read", statistics.median(r[1]["first_s"] / r[0]["s"] for r in runs), "<= 3"),
        ("second open, x raw read", statistics.median(r[1]["second_s"] / r[0]["s"] for r in runs), "<= 1.5"),
        ("peak RSS / event arrays", m("maxrss") / arrays, "<= 2"),
        ("peak RSS after first open / event arrays", m("maxrss_after_first") / arrays, ""),
        ("peak anonymous memory / event arrays", m("anon") / arrays, ""),
        ("peak anonymous, first open / event arrays", m("anon_after_first") / arrays, ""),
        ("longest GUI stall opening, ms", max(m("first_stall_ms"), m("second_stall_ms")), "<= 50"),
        ("longest GUI stall stepping, ms", m("step_stall_ms"), "<= 50"),
        ("longest GUI stall scrubbing, ms", m("scrub_stall_ms"), "<= 50"),
        ("longest GUI stall resizing, ms", m("resize_stall_ms"), "<= 50"),
        ("step, ms per frame", m("step_ms_per_frame"), ""),
        ("scrub, ms per frame", m("scrub_ms_per_frame"), ""),
        ("no index: first open (index built), s", m("bare_first_s"), ""),
        ("no index: longest GUI stall, ms", m("bare_first_stall_ms"), ""),
        ("open again after another trace (read again), x raw", statistics.median(r[1]["reread_s"] / r[0]["s"] for r in runs), ""),
        ("no index: second open (cached index), x raw", statistics.median(r[1]["bare_second_s"] / r[0]["s"] for r in runs), ""),
    ]
    for name, v, target in rows:
        say(f"{name:52s} {v:10.2f} {target:>10s}")
    report.finish(a.save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
