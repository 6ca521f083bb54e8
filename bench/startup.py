"""Benchmark: ``gpuviz`` (no argument: the embedded default) from process start to its first painted frame.

    .venv/bin/python bench/startup.py [--repeat 5] [--size 1920x1080] [--save bench/results/startup.txt]

Each launch is a fresh process, timed by this one from just before it is started until it says that its
first frame was painted: the window's first paint event has been handled, the whole paint pass with it.
Every measure runs ``--repeat`` times, interleaved, and the medians are printed:

    python          ``python -c pass``: the interpreter's own start
    empty window    a QApplication and an empty QMainWindow of the same size, to its first paint: the floor
                    any Qt window stands on (the baseline the ratios are against)
    gpuviz          ``gpuviz`` as the console script runs it (``gpuviz.cli.main``), on the embedded default's
                    shipped trace (``gpuviz/assets/default_trace.gpuviz``)
    gpuviz, capture the same, with the shipped trace hidden: the default is captured on the spot with the CPU
                    executor (what every start did before the trace shipped; imports numba)

For ``gpuviz`` it also records which of numba, the capture package and the bundled kernels were imported by
the first frame (none should be), and, with a 5 ms heartbeat timer on the GUI thread for the 2 s after the
first frame, the longest the window then stood still (work deferred until after the first frame still must
not freeze it). ``-X importtime`` of one more launch gives the slowest imports, listed at the end.

``--instructions`` also runs one ``gpuviz`` launch under valgrind's callgrind and prints the instructions it ran to
its first frame: a count that the machine's load does not change (the same launch twice: within 1%), for an A/B
of two checkouts on a busy machine (run the bench in each). It takes a minute or two.

Each launch's CPU time (user + system, the launched process's own, to its first frame) is printed beside the wall
time: on a loaded machine it grows much less than wall time does.

Targets (issue 13): gpuviz to its first frame <= 1.5 s. The machine's load average is printed before and after:
on a shared machine absolute times are inflated, the ratios much less so.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Runs in the launched process before gpuviz: wraps gpuviz.app._application (imports nothing heavy itself) so
# that the QApplication gpuviz makes gets an event filter that reports the first paint of the main window.
_PROBE = r"""
import os, sys, time, json
MODE, W, H = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def install(app):
    from PySide6.QtCore import QEvent, QObject, QTimer
    from PySide6.QtWidgets import QMainWindow

    class FirstPaint(QObject):
        seen = False
        def eventFilter(self, obj, ev):
            if not self.seen and ev.type() == QEvent.Type.Paint and hasattr(obj, "window") and isinstance(obj.window(), QMainWindow):
                self.seen = True
                QTimer.singleShot(0, painted)  # after the whole paint pass, not its first widget
            return False

    def painted():
        t = time.time()
        import resource
        ru = resource.getrusage(resource.RUSAGE_SELF)
        cpu = ru.ru_utime + ru.ru_stime
        mods = {m: (m in sys.modules) for m in ("numba", "gpuviz.capture", "gpuviz.kernels.matmul", "pyqtgraph")}
        beats = []
        timer = QTimer()
        timer.setInterval(5)
        timer.timeout.connect(lambda: beats.append(time.perf_counter()))
        start = time.perf_counter()
        beats.append(start)
        timer.start()
        def done():
            timer.stop()
            gaps = [b - a for a, b in zip(beats, beats[1:])] or [0.0]
            print("FIRST_FRAME " + json.dumps({"t": t, "cpu": cpu, "modules": mods, "stall_after_ms": max(gaps) * 1e3}),
                  flush=True)
            os._exit(0)
        QTimer.singleShot(0 if MODE in ("empty", "instructions") else 2000, done)
        app._gpuviz_bench = (timer, done)

    f = FirstPaint(app)
    app.installEventFilter(f)
    app._gpuviz_probe = f

if MODE == "empty":
    from PySide6.QtWidgets import QApplication, QMainWindow
    app = QApplication(sys.argv[:1])
    install(app)
    w = QMainWindow(); w.resize(W, H); w.show()
    app.exec()
else:
    import gpuviz.app as A
    made = A._application
    def _application(*a, **k):
        app = made(*a, **k)
        install(app)
        return app
    A._application = _application
    orig_fit = A.fit_to_screen
    A.fit_to_screen = lambda window, preferred=(W, H): orig_fit(window, (W, H))
    if MODE == "capture":
        A.load_default_trace = lambda: None
    sys.argv = ["gpuviz"]
    from gpuviz.cli import main
    sys.exit(main())
"""


def launch(mode: str, size: tuple[int, int], env: dict, extra: list[str] | None = None) -> dict:
    if mode == "python":
        import resource

        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.time()
        subprocess.run([sys.executable, "-c", "pass"], check=True, env=env)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return {"s": time.time() - t0,
                "cpu": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)}
    cmd = [sys.executable, *(extra or []), "-c", _PROBE, mode, str(size[0]), str(size[1])]
    t0 = time.time()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("FIRST_FRAME ")), None)
    if line is None:
        raise RuntimeError(f"{mode}: no first frame (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr[-3000:]}")
    info = json.loads(line.split(" ", 1)[1])
    info["s"] = info["t"] - t0
    info["stderr"] = proc.stderr
    return info


def count_instructions(size: tuple[int, int], env: dict) -> int:
    """The instructions one ``gpuviz`` launch runs to its first frame, counted by valgrind's callgrind."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-c", _PROBE,
               "instructions", str(size[0]), str(size[1])]
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
        for line in proc.stderr.splitlines():
            if "Collected :" in line:
                return int(line.rsplit(":", 1)[1].strip())
        raise RuntimeError(f"callgrind counted nothing (exit {proc.returncode}):\n{proc.stderr[-3000:]}")


def slowest_imports(stderr: str, n: int = 15) -> list[str]:
    rows = []
    for ln in stderr.splitlines():
        if not ln.startswith("import time:") or "|" not in ln:
            continue
        try:
            _self, cumulative, name = ln[len("import time:"):].split("|")
            rows.append((int(cumulative), name.rstrip()))
        except ValueError:
            continue
    rows.sort(reverse=True)
    return [f"{c / 1e3:9.1f} ms  {name}" for c, name in rows[:n]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--save", type=Path)
    ap.add_argument("--instructions", action="store_true",
                    help="also count the instructions of one launch to its first frame (valgrind callgrind)")
    args = ap.parse_args()
    size = tuple(int(x) for x in args.size.lower().split("x"))
    env = dict(os.environ)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    # a user's second start finds gpuviz's modules compiled in __pycache__ (the first start wrote them); a shell
    # with PYTHONDONTWRITEBYTECODE set (this project's development machines have it) would have every launch
    # compile gpuviz's ~50 modules again, ~0.15 s that no user pays
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    out: list[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        out.append(text)

    import PySide6

    say(f"# bench/startup.py, {_dt.datetime.now(_dt.timezone.utc).isoformat(timespec='seconds')}, "
        f"Qt platform {env['QT_QPA_PLATFORM']}, window {size[0]}x{size[1]}, {os.cpu_count()} cores")
    say(f"# python {platform.python_version()} PySide6 {PySide6.__version__}")
    say("# bytecode: gpuviz's modules compiled once by the untimed warm-up launch, then read from __pycache__")
    say(f"# load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    say("$ " + " ".join([Path(sys.executable).name, "bench/startup.py", *sys.argv[1:]]))
    if not (ROOT / "gpuviz" / "assets" / "default_trace.gpuviz").is_file():
        say("(no shipped default trace: 'gpuviz' captures the default on the spot, as 'gpuviz, capture' does)")
    launch("gpuviz", size, env)  # warm the page cache and __pycache__ once, untimed
    launch("capture", size, env)
    modes = [("python", "python -c pass"), ("empty", "empty window"), ("gpuviz", "gpuviz"),
             ("capture", "gpuviz, capture")]
    runs: dict[str, list[dict]] = {m: [] for m, _ in modes}
    for i in range(args.repeat):
        for mode, _label in modes:
            runs[mode].append(launch(mode, size, env))
        say(f"run {i + 1}: " + ", ".join(f"{label} {runs[m][-1]['s']:.2f} s" for m, label in modes))
    med = {m: statistics.median(r["s"] for r in runs[m]) for m, _ in modes}
    cpu = {m: statistics.median(r["cpu"] for r in runs[m]) for m, _ in modes}
    say("")
    say(f"medians of {args.repeat} launches, s (process start to first painted frame; 'cpu': the process's own CPU "
        "time by then, user + system, steadier than wall time on a shared machine)")
    say(f"{'measure':<34}{'median':>8}{'min':>8}{'max':>8}{'x empty':>9}{'cpu':>8}{'cpu x empty':>13}{'target':>9}")
    for mode, label in modes:
        s = [r["s"] for r in runs[mode]]
        target = "<= 1.5" if mode == "gpuviz" else ""
        say(f"{label:<34}{med[mode]:8.2f}{min(s):8.2f}{max(s):8.2f}{med[mode] / med['empty']:9.2f}{cpu[mode]:8.2f}"
            f"{cpu[mode] / cpu['empty']:13.2f}{target:>9}")
    say(f"{'gpuviz over gpuviz, capture':<34}{med['gpuviz'] / med['capture']:8.2f}{'':>25}{cpu['gpuviz'] / cpu['capture']:8.2f}")
    last = runs["gpuviz"][-1]["modules"]
    say("imported by gpuviz's first frame: " + ", ".join(f"{m} {'yes' if v else 'no'}" for m, v in last.items()))
    stalls = [r["stall_after_ms"] for r in runs["gpuviz"]]
    say(f"longest GUI stall in the 2 s after gpuviz's first frame, ms: median {statistics.median(stalls):.0f}, "
        f"max {max(stalls):.0f} (capture: median "
        f"{statistics.median(r['stall_after_ms'] for r in runs['capture']):.0f})")
    if args.instructions:
        say(f"instructions to gpuviz's first frame (callgrind, one launch): {count_instructions(size, env):,}")
    imp = launch("gpuviz", size, env, extra=["-X", "importtime"])
    say("")
    say("slowest imports of gpuviz to its first frame (-X importtime, cumulative):")
    for row in slowest_imports(imp["stderr"]):
        say("  " + row)
    say(f"# load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.save:
        args.save.parent.mkdir(parents=True, exist_ok=True)
        args.save.write_text("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
