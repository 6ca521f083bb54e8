"""Profiler: which calls of a trace open hold the GIL long (the GUI thread shares it with the open job's thread).

    PYTHONPATH=$PWD .venv/bin/python bench/gil_gaps.py FILE.gpuviz [--no-index] [--gap-ms 20] [--window]

The open (``load_trace``, ``ensure_index``, ``Frames``: what :class:`gpuviz.ui.open_job.OpenJob` runs; with
``--window``, the whole window's background open) runs on a worker thread while a pure-Python heartbeat thread
sleeps 1 ms at a time. A beat that comes more than ``--gap-ms`` late means another thread held the GIL that long:
at the gap's end the heartbeat samples the worker's stack (``sys._current_frames()``), which then still stands
on the line whose C call held it. The worker also times its C calls (``sys.setprofile``): each gap is put down
to the C call that overlaps it most (its name, duration and line), which is exact where the stack sample is only
near (a long call's line, or the next one's). Prints the gaps, longest first, and the worker's CPU time.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def where(frame, depth: int = 4) -> str:
    stack = traceback.extract_stack(frame)
    ours = [f for f in stack if "gpuviz" in f.filename or "bench" in f.filename] or stack
    return " < ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}: {(f.line or '').strip()[:70]}"
                      for f in reversed(ours[-depth:]))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--gap-ms", type=float, default=20.0)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--window", action="store_true", help="open in the full window (offscreen), as the bench does")
    a = ap.parse_args()
    os.environ.setdefault("XDG_CACHE_HOME", tempfile.mkdtemp(prefix="gilgaps-cache-"))

    gaps: list[tuple[float, float, str]] = []  # (start, end, the worker's stack at the end)
    calls: list[tuple[float, float, str]] = []  # the worker's C calls over 2 ms: (start, end, what and where)
    by_cpu: list[tuple[float, str]] = []  # the same, by the CPU time the worker's thread spent in each
    done = threading.Event()
    worker: dict = {}

    def profiler():
        started: list = []

        def prof(frame, event, arg):
            if event == "c_call":
                started.append((time.perf_counter(), time.thread_time()))
            elif event in ("c_return", "c_exception") and started:
                t0, c0 = started.pop()
                t1 = time.perf_counter()
                if t1 - t0 > 0.002:
                    name = getattr(arg, "__qualname__", None) or getattr(arg, "__name__", repr(arg))
                    cpu = 1e3 * (time.thread_time() - c0)
                    calls.append((t0, t1, f"{name} at {Path(frame.f_code.co_filename).name}:{frame.f_lineno} "
                                          f"[{cpu:.0f} ms cpu]"))
                    by_cpu.append((cpu, calls[-1][2]))
        return prof

    collections: list[tuple[float, float, str]] = []  # garbage collections over 2 ms: they hold the GIL too
    gc_started: dict = {}

    def on_gc(phase, info):
        now = time.perf_counter()
        if phase == "start":
            gc_started["t"], gc_started["cpu"] = now, time.thread_time()
        elif "t" in gc_started and now - gc_started["t"] > 0.002:
            who = "worker" if threading.get_ident() == worker.get("ident") else threading.current_thread().name
            cpu = 1e3 * (time.thread_time() - gc_started["cpu"])
            collections.append((gc_started.pop("t"), now, f"garbage collection of generation {info['generation']} "
                                f"on the {who} thread [{cpu:.0f} ms cpu]"))

    gc.callbacks.append(on_gc)

    def culprit(g0: float, g1: float) -> str:
        best, what = 0.0, "no C call of the worker's"
        for c0, c1, name in calls + collections:
            ov = min(g1, c1) - max(g0, c0)
            if ov > best:
                best, what = ov, f"{name} ({1e3 * (c1 - c0):.0f} ms call)"
        return what

    main_samples: list[tuple[float, str]] = []  # the GUI thread's stack, sampled by the heartbeat (--window)
    main_ident = threading.main_thread().ident

    def heartbeat() -> None:
        last = time.perf_counter()
        while not done.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            frames = sys._current_frames()
            if now - last > a.gap_ms / 1e3 and "ident" in worker:
                frame = frames.get(worker["ident"])
                gaps.append((last, now, where(frame) if frame is not None else "(worker gone)"))
            if a.window and main_ident in frames:
                main_samples.append((now, where(frames[main_ident], depth=3)))
            last = now

    if a.window:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        from gpuviz.app import _application
        from gpuviz.ui.window import MainWindow

        app = _application()
        window = MainWindow()
        window.resize(1920, 1080)
        window.show()
        for _ in range(5):
            app.processEvents()
        from PySide6.QtCore import QTimer

        beats: list[float] = []
        timer = QTimer()
        timer.setInterval(5)
        timer.timeout.connect(lambda: beats.append(time.perf_counter()))
        timer.start()
        hb = threading.Thread(target=heartbeat, daemon=True)
        hb.start()
        from gpuviz.ui.open_job import OpenJob

        run = OpenJob.run

        def run_profiled(self):
            sys.setprofile(profiler())
            try:
                run(self)
            finally:
                sys.setprofile(None)

        OpenJob.run = run_profiled
        t0 = time.perf_counter()
        job = window.open_in_background(a.file)
        # the QThread's Python ident: sampled once it runs
        while "ident" not in worker and not job.isFinished():
            for ident, frame in sys._current_frames().items():
                if ident not in (threading.main_thread().ident, hb.ident):
                    worker["ident"] = ident
            app.processEvents()
            time.sleep(0.001)
        while window.opening or getattr(window.session, "settling", False):
            app.processEvents()
            time.sleep(0.001)
        window.grab()
        t1 = time.perf_counter()
        app.processEvents()
        timer.stop()
        wall = t1 - t0
        cpu = float("nan")
        b = [t0] + [t for t in beats if t0 <= t <= t1] + [t1]
        gui = sorted(((b[k + 1] - b[k], b[k], b[k + 1]) for k in range(len(b) - 1)), reverse=True)
        print("the GUI thread's 5 ms timer (as bench/open_trace.py has it): longest gaps, with what the GUI thread "
              "was seen doing and the GIL holds in them")
        for d, g0, g1 in gui[:8]:
            seen: dict = {}
            for t, w in main_samples:
                if g0 <= t <= g1:
                    seen[w] = seen.get(w, 0) + 1
            top = max(seen, key=seen.get) if seen else "(the GUI thread never seen: it held the GIL throughout)"
            holds = [(min(h1, g1) - max(h0, g0)) for h0, h1, _ in gaps if h1 > g0 and h0 < g1]
            print(f"{1e3 * d:7.1f} ms  GIL held by others {1e3 * sum(holds):.0f} ms; GUI thread: {top}")
    else:
        from gpuviz.model.indexcache import ensure_index
        from gpuviz.model.prepared import prepare
        from gpuviz.model.tracefile import load_trace

        out: dict = {}

        def job() -> None:
            worker["ident"] = threading.get_ident()
            sys.setprofile(profiler())
            c0 = time.thread_time()
            tr = load_trace(a.file)
            p = prepare(tr)
            out["source"] = ensure_index(p)
            p.frames  # noqa: B018 - built (or adopted) here, as the open job does
            out["cpu"] = time.thread_time() - c0
            sys.setprofile(None)

        hb = threading.Thread(target=heartbeat, daemon=True)
        hb.start()
        t0 = time.perf_counter()
        th = threading.Thread(target=job)
        th.start()
        th.join()
        wall = time.perf_counter() - t0
        cpu = out.get("cpu", float("nan"))
        print(f"index from {out.get('source')}")
    done.set()
    hb.join()
    with open("/proc/self/status") as fh:
        st = {ln.split(":")[0]: ln.split(":")[1].strip() for ln in fh}
    print(f"open: {wall:.2f} s wall, worker cpu {cpu:.2f} s; load {os.getloadavg()[0]:.2f}; VmHWM {st.get('VmHWM')}, "
          f"RssAnon {st.get('RssAnon')}, RssFile {st.get('RssFile')}")
    print("the worker's C calls that took the most CPU time (load-proof; a call that releases the GIL, os.preadv, "
          "zlib.crc32, most ufuncs, astype and take, does not stall the GUI thread however long):")
    for cpu, what in sorted(by_cpu, reverse=True)[:12]:
        print(f"  {cpu:7.1f} ms cpu  {what}")
    total = sum(g1 - g0 for g0, g1, _ in gaps)
    print(f"{len(collections)} garbage collections over 2 ms, {1e3 * sum(c1 - c0 for c0, c1, _ in collections):.0f} ms "
          f"together, longest {1e3 * max([c1 - c0 for c0, c1, _ in collections] or [0]):.0f} ms")
    print(f"{len(gaps)} gaps over {a.gap_ms:g} ms, total {1e3 * total:.0f} ms; longest first:")
    for g0, g1, w in sorted(gaps, key=lambda g: g[0] - g[1])[: a.top]:
        print(f"{1e3 * (g1 - g0):7.1f} ms  {culprit(g0, g1)}\n           stack at its end: {w}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
