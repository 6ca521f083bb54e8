"""The GUI thread's turns while a big trace is opened in the full window: how much CPU each one took, and what in.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/open_turns.py FILE.gpuviz [--size 1920x1080] [--opens 2]
        [--top 10] [--save bench/results/open_turns.txt]

The window opens FILE (``open_in_background``, as bench/open_trace.py drives it) ``--opens`` times, each time under
another name (a hard link: the same pages, read again, a new trace adopted, as a second file would be). A 5 ms
heartbeat timer on the GUI thread records when it fires and the GUI thread's CPU time then
(``time.thread_time``): a gap between two beats is a stretch the window stood still, and the CPU the GUI thread
spent in it tells its own work (load-proof) from waiting (for the GIL, for a core). A sampler thread looks at the
GUI thread's stack every millisecond while the heartbeat is late. Also timed: each call the session runs a turn
(``Session.later``: the views' warm-up steps and adoptions), the window's ``_open_finished`` and its
UpdateRequest turns. Prints, per open, the longest gaps with their CPU and stacks, and the longest timed calls.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import io
import os
import pstats
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from report import Report  # noqa: E402 - bench/report.py, beside this script


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--opens", type=int, default=2)
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--gap", type=float, default=15.0, help="ms late before the stack is sampled")
    ap.add_argument("--profile", type=float, default=0.0, metavar="MS",
                    help="also profile the timed calls (cProfile) and print the top functions of those over MS cpu")
    ap.add_argument("--save")
    a = ap.parse_args()
    os.environ.setdefault("XDG_CACHE_HOME", tempfile.mkdtemp(prefix="openturns-cache-"))
    report = Report("bench/open_turns.py", a.size)
    say = report.say

    from PySide6.QtCore import QEvent, QTimer

    from gpuviz.app import _application
    from gpuviz.ui import session as session_mod
    from gpuviz.ui import window as window_mod

    timed: list[tuple[float, float, float, str]] = []  # (start, wall ms, cpu ms, what)
    profiles: list = []  # (cpu ms, what, cProfile.Profile) of the calls over --profile ms
    profiling: list = []

    def timing(what_of):
        def wrap(fn):
            def inner(*args, **kw):
                what = what_of(*args, **kw)
                prof = cProfile.Profile() if what and a.profile and not profiling else None
                if prof is not None:
                    profiling.append(prof)
                    prof.enable()
                t0, c0 = time.perf_counter(), time.thread_time()
                try:
                    return fn(*args, **kw)
                finally:
                    cpu = 1e3 * (time.thread_time() - c0)
                    if prof is not None:
                        prof.disable()
                        profiling.pop()
                        if cpu > a.profile:
                            profiles.append((cpu, what, prof))
                    if what:
                        timed.append((t0, 1e3 * (time.perf_counter() - t0), cpu, what))
            return inner
        return wrap

    def later_name(self):
        if not self._later:
            return None
        key = next(iter(self._later))
        if isinstance(key, tuple):
            return f"later: {getattr(key[0], 'view_id', key[0])} {' '.join(map(str, key[1:]))}"
        return f"later: {getattr(key, 'view_id', key)} adopt"

    session_mod.Session._run_one_later = timing(later_name)(session_mod.Session._run_one_later)
    window_mod.MainWindow._open_finished = timing(lambda self, job: "window _open_finished")(
        window_mod.MainWindow._open_finished)
    event = window_mod.MainWindow.event
    window_mod.MainWindow.event = timing(
        lambda self, ev: "window UpdateRequest" if ev.type() == QEvent.Type.UpdateRequest else None)(event)

    app = _application()
    w, h = (int(x) for x in a.size.split("x"))
    window = window_mod.MainWindow()
    window.resize(w, h)
    window.show()
    for _ in range(5):
        app.processEvents()

    beats: list[tuple[float, float]] = []
    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(lambda: beats.append((time.perf_counter(), time.thread_time())))
    timer.start()
    samples: list[tuple[float, str]] = []
    main_ident = threading.main_thread().ident
    stop = threading.Event()

    def sampler():
        while not stop.is_set():
            time.sleep(0.001)
            if not beats or time.perf_counter() - beats[-1][0] < a.gap / 1e3:
                continue
            frame = sys._current_frames().get(main_ident)
            names = []
            while frame is not None and len(names) < 5:
                code = frame.f_code
                if not code.co_filename.endswith(("open_turns.py", "threading.py")):
                    names.append(f"{Path(code.co_filename).name}:{code.co_name}:{frame.f_lineno}")
                frame = frame.f_back
            samples.append((time.perf_counter(), " < ".join(names)))

    th = threading.Thread(target=sampler, daemon=True)
    th.start()

    def wait(cond, limit=600.0):
        end = time.perf_counter() + limit
        while not cond():
            app.processEvents()
            time.sleep(0.001)
            if time.perf_counter() > end:
                raise TimeoutError("the window did not finish in time")

    folder = Path(tempfile.mkdtemp(prefix="openturns-", dir=Path(a.file).resolve().parent))
    try:
        for k in range(a.opens):
            name = folder / f"copy{k}.gpuviz"
            os.link(a.file, name)
            for _ in range(10):
                app.processEvents()
            del timed[:]
            t0, c0 = time.perf_counter(), time.thread_time()
            window.open_in_background(str(name))
            wait(lambda: not window.opening and not getattr(window.session, "settling", False))
            app.processEvents()
            window.grab()
            t1, c1 = time.perf_counter(), time.thread_time()
            b = [(t0, c0)] + [x for x in beats if t0 <= x[0] <= t1] + [(t1, c1)]
            gaps = sorted(((b[i + 1][0] - b[i][0], b[i + 1][1] - b[i][1], b[i][0], b[i + 1][0])
                           for i in range(len(b) - 1)), reverse=True)
            cpus = sorted((g[1] for g in gaps), reverse=True)
            say()
            say(f"== open {k + 1} ({'first' if k == 0 else 'another trace on screen'}): {t1 - t0:.2f} s to the first "
                f"frame, GUI thread cpu {c1 - c0:.2f} s; longest gap {1e3 * gaps[0][0]:.1f} ms; the gaps' GUI-thread "
                f"cpu, most first: {', '.join(f'{1e3 * c:.0f}' for c in cpus[:8])} ms; load {os.getloadavg()[0]:.2f}")
            for d, c, g0, g1 in gaps[: a.top]:
                seen = collections.Counter(s for t, s in samples if g0 <= t <= g1)
                calls = [f"{what} {cpu:.0f}" for s, wall, cpu, what in timed if s < g1 and s + wall / 1e3 > g0]
                say(f"  gap {1e3 * d:6.1f} ms, gui cpu {1e3 * c:5.1f} ms; timed calls in it (cpu ms): "
                    f"{'; '.join(calls) or '-'}")
                for s, n in seen.most_common(3):
                    say(f"      {n:4d}  {s}")
            say("  timed calls, most cpu first (wall/cpu ms):")
            for s, wall, cpu, what in sorted(timed, key=lambda x: -x[2])[: a.top]:
                say(f"    {wall:6.1f} / {cpu:6.1f}  {what}")
            for cpu, what, prof in sorted(profiles, key=lambda x: -x[0]):
                out = io.StringIO()
                pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(25)
                say(f"  -- cProfile of {what} ({cpu:.0f} ms cpu, profiled), by cumulative time --")
                for ln in out.getvalue().splitlines():
                    if ln.strip() and "{method 'disable'" not in ln:
                        say("    " + ln.replace(str(ROOT) + "/", "").replace(sys.prefix, "<venv>"))
            del profiles[:]
    finally:
        stop.set()
        timer.stop()
        window.close()
        for p in folder.iterdir():
            p.unlink()
        folder.rmdir()
    report.finish(a.save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
