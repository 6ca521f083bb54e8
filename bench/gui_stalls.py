"""Profile of the GUI thread's stalls while stepping, scrubbing and resizing a big trace in the full window.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/gui_stalls.py [--file T.gpuviz] [--size 1920x1080]
        [--phases step,scrub,resize] [--cprofile] [--save bench/results/gui_stalls.txt]

The trace and the drive are bench/open_trace.py's (reduce_sum over 1<<20 elements, 16.8M events; 200 frames
stepped with the step action, the slider set to 200 sorted random positions, 20 window sizes and back, then the
turns until the plots laid out once the resizes pause are done, counted as one more input), each one event at a
time with the events processed between. While it runs, a 5 ms heartbeat timer on the GUI thread records
when it fires, and a sampler thread looks at the GUI thread's stack every millisecond: the samples taken while
the heartbeat is more than ``--gap`` ms late are the stalls, counted per function (innermost gpuviz, pyqtgraph
or Qt-facing frame, and the whole gpuviz call chain). Per phase it prints the longest gap, the wall and CPU
time of each drive step (median, max), and the functions the stall samples were in. ``--cprofile`` also runs
each phase again under cProfile and prints its top functions by cumulative time.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import io
import os
import pstats
import shutil
import statistics
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from report import Report  # noqa: E402 - bench/report.py, beside this script


class Sampler(threading.Thread):
    """Samples the main thread's stack every ``period`` s while the heartbeat is late by more than ``gap`` s."""

    def __init__(self, beats: list, gap: float, period: float = 0.001):
        super().__init__(daemon=True)
        self.beats, self.gap, self.period = beats, gap, period
        self.main = threading.main_thread().ident
        self.on = False
        self.stop = False
        self.leaf = collections.Counter()
        self.chain = collections.Counter()
        self.n = 0

    def run(self) -> None:
        while not self.stop:
            time.sleep(self.period)
            if not self.on or not self.beats or time.perf_counter() - self.beats[-1] < self.gap:
                continue
            frame = sys._current_frames().get(self.main)
            names = []
            while frame is not None:
                code = frame.f_code
                names.append(f"{Path(code.co_filename).name}:{code.co_name}:{frame.f_lineno}")
                frame = frame.f_back
            self.n += 1
            ours = [n for n in names if not n.startswith(("gui_stalls.py", "threading.py"))]
            if ours:
                self.leaf[ours[0]] += 1
            chain = [n.rsplit(":", 1)[0] for n in names if not n.startswith(("gui_stalls.py", "threading.py"))]
            self.chain[" < ".join(chain[:6])] += 1


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--file", help="a saved trace (default: capture reduce_sum 1<<20 into --cache-file)")
    ap.add_argument("--cache-file", default="/tmp/gpuviz_reduce_1m.gpuviz")
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--phases", default="step,scrub,resize")
    ap.add_argument("--gap", type=float, default=20.0, help="ms late before the stack is sampled")
    ap.add_argument("--cprofile", action="store_true")
    ap.add_argument("--save")
    a = ap.parse_args()
    report = Report("bench/gui_stalls.py", a.size)
    say = report.say

    import numpy as np
    from PySide6.QtCore import QTimer

    path = Path(a.file or a.cache_file)
    if not path.exists():
        sys.path.insert(0, str(ROOT / "bench"))
        import tempfile

        from open_trace import make_traces

        folder = Path(tempfile.mkdtemp(prefix="gpuviz-stalls-"))
        full, _ = make_traces(folder)
        full.replace(path)
        shutil.rmtree(folder, ignore_errors=True)  # the copy without an index, not needed here

    from gpuviz.app import _application
    from gpuviz.ui.window import MainWindow

    app = _application()
    w, h = (int(x) for x in a.size.split("x"))
    window = MainWindow()
    window.resize(w, h)
    window.show()
    for _ in range(5):
        app.processEvents()
    beats: list[float] = []
    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(lambda: beats.append(time.perf_counter()))
    timer.start()
    sampler = Sampler(beats, a.gap / 1e3)
    sampler.start()

    def wait(cond, limit=600.0):
        end = time.perf_counter() + limit
        while not cond():
            app.processEvents()
            time.sleep(0.001)
            if time.perf_counter() > end:
                raise TimeoutError("the window did not finish in time")

    window.open_in_background(str(path))
    wait(lambda: not window.opening and not getattr(window.session, "settling", False))
    for _ in range(20):
        app.processEvents()
    n = window.session.frames.n_frames
    rng = np.random.default_rng(0)
    scrub_to = [int(v) for v in np.sort(rng.integers(0, n, 200))]

    def step():
        for _ in range(200):
            window.actions.trigger("playback.step_forward")
            yield

    def scrub():
        for v in scrub_to:
            window.slider.setValue(v)
            yield

    def resize():
        for i in range(20):
            window.resize(w - 40 * (i % 5), h - 30 * (i % 4))
            yield
        window.resize(w, h)
        yield
        yield "settle"  # the user lets go: the plots, laid out once the resizes pause (PlotRelayout), are part of it

    drives = {"step": step, "scrub": scrub, "resize": resize}

    def run(name, profile=None):
        window.session.set_frame(0)
        window.resize(w, h)
        for _ in range(10):
            app.processEvents()
        walls, cpus = [], []
        sampler.leaf.clear()
        sampler.chain.clear()
        sampler.n = 0
        t0 = time.perf_counter()
        sampler.on = True
        if profile:
            profile.enable()
        inputs = drives[name]()
        while True:
            tw, tc = time.perf_counter(), time.thread_time()
            step = next(inputs, StopIteration)
            if step is StopIteration:
                break
            if step == "settle":
                # events handled until nothing waits for the window's resizes to pause, and once more for the paint
                # that asks for: the CPU of all of it, the wall time of the event handling alone (not the pause between)
                relayout = getattr(window, "plot_relayout", None)
                busy = 0.0
                while True:
                    waiting = relayout is not None and relayout.pending
                    tp = time.perf_counter()
                    app.processEvents()
                    busy += time.perf_counter() - tp
                    if not waiting:
                        break
                    time.sleep(0.001)
                walls.append(1e3 * busy)
                cpus.append(1e3 * (time.thread_time() - tc))
                continue
            app.processEvents()
            walls.append(1e3 * (time.perf_counter() - tw))
            cpus.append(1e3 * (time.thread_time() - tc))
        if profile:
            profile.disable()
        sampler.on = False
        t1 = time.perf_counter()
        b = [t0] + [t for t in beats if t0 <= t <= t1] + [t1]
        return 1e3 * float(np.max(np.diff(b))), walls, cpus

    for name in a.phases.split(","):
        gap, walls, cpus = run(name)
        say()
        say(f"== {name}: longest heartbeat gap {gap:.1f} ms; per input (the input + processEvents): wall median "
            f"{statistics.median(walls):.1f} max {max(walls):.1f} ms, cpu median {statistics.median(cpus):.1f} "
            f"max {max(cpus):.1f} ms; {sampler.n} stall samples (heartbeat > {a.gap:.0f} ms late)")
        for fn, k in sampler.leaf.most_common(12):
            say(f"  {k:5d}  {fn}")
        say("  call chains (innermost first):")
        for fn, k in sampler.chain.most_common(8):
            say(f"  {k:5d}  {fn}")
        if a.cprofile:
            prof = cProfile.Profile()
            run(name, prof)
            s = io.StringIO()
            pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(30)
            say(f"-- cProfile of {name}, by cumulative time --")
            for ln in s.getvalue().splitlines():
                if ln.strip():
                    say("  " + ln)
    sampler.stop = True
    timer.stop()
    window.close()
    report.finish(a.save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
