"""Benchmark: what one frame costs in the app, with the real views, on traces from 4 thousand to a million threads.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/gui_frame.py [--frames 150] [--size 1920x1080]
        [--quick] [--only LABEL-TEXT] [--save bench/results/gui_frame.txt]

For each trace a :class:`~gpuviz.ui.window.MainWindow` is built (offscreen, default layout, every view
docked as the app docks it), and the loop a user scrubbing or playing drives is timed frame by frame:

    session.set_frame(f)        every visible view's on_frame_changed, the top bar, the caption, the counter
    app.processEvents()         what Qt does with that (layout, dirty-region painting to the backing store)
    window.grab()               the whole window painted once more into a pixmap, so painting is always counted

over ``--frames`` sequential frames (from a third of the way in: playing) and as many random frames
(scrubbing), after a warm-up. Printed per trace: median and p95 ms per frame of the whole loop, of the update
(set_frame + processEvents) and of the grab, frames per second at the median, and the ratio to the baseline.

processEvents paints what the frame changed (the paint events it delivers are counted): the second table is
that update + paint alone, in wall and in CPU time of this process (on a shared machine the CPU time is the
steadier figure), against the same baseline. grab() repaints the whole window, unchanged views included, which
the window on screen never does per frame: the first table keeps it as an upper bound.

The baseline is measured in the same run, on the same trace and window: the same loop with every view dock
closed except the kernel source (the source view, top bar, caption and counter still update every frame);
below it, an empty QMainWindow of the same size gives the floor of grab() alone. So the ratios hold on
whatever machine runs this, loaded or not.

The second table is each view's own ``on_frame_changed`` called directly (visible or not, so background tabs
such as barriers and per-line count too) on the random frames, with the session's signal held back so each
view meets the frame first (entering a new block included): which view costs what at each size.

Traces: the hand-made traces of ``tests/ui_traces.py`` (tiled matmul 64x64; vector-add shaped launches of
65,536, 262,144 and 1,048,576 threads) and two real captures with the CPU executor (``gpuviz.capture``):
``matmul_tiled`` size 64 and ``reduce_sum`` over 1<<20 elements (4,096 blocks, 16.8M events).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpuviz.app import _application  # noqa: E402


def p95(xs) -> float:
    return float(np.percentile(xs, 95)) if len(xs) else float("nan")


def med(xs) -> float:
    return statistics.median(xs) if len(xs) else float("nan")


def captured(name: str, size: int):
    """A real capture of a bundled kernel with the CPU executor, labelled as the app labels it."""
    import gpuviz
    from gpuviz.catalog import get_kernel

    spec = get_kernel(name)
    grid, block = spec.launch(size, spec.default_block)
    # labelled with its bundled_kernel entry: the window narrates with its notes
    return gpuviz.capture(spec.kernel, grid, block, *spec.make_args(size, np.random.default_rng(0)), backend="cpu",
                          meta={"bundled_kernel": {"name": name, "size": size}})


def trace_builders(quick: bool):
    from tests.ui_traces import large_trace, matmul_tiled_trace

    out = [
        ("hand-made matmul_tiled 64x64", lambda: matmul_tiled_trace(64, 16)),
        ("captured matmul_tiled size 64", lambda: captured("matmul_tiled", 64)),
        ("hand-made vector_add 65,536 thr", lambda: large_trace(1 << 16)),
    ]
    if not quick:
        out += [
            ("hand-made vector_add 262,144 thr", lambda: large_trace(1 << 18)),
            ("hand-made vector_add 1,048,576 thr", lambda: large_trace(1 << 20)),
            ("captured reduce_sum 1<<20", lambda: captured("reduce_sum", 1 << 20)),
        ]
    return out


def open_window(app, trace, size):
    from gpuviz.ui.window import MainWindow

    t0 = time.perf_counter()
    w = MainWindow(trace, source_label="bench")
    w.resize(*size)
    w.show()
    app.processEvents()
    w.arrange_default()
    for _ in range(3):  # dock layouts settle over a few passes (as gpuviz snapshot does)
        app.processEvents()
    w._hide_stale_tab_bars()
    return w, time.perf_counter() - t0


class PaintCounter:
    """Counts the paint events Qt delivers (installed on the application): that processEvents paints."""

    def __init__(self, app):
        from PySide6.QtCore import QEvent, QObject

        paint = QEvent.Type.Paint

        class _Filter(QObject):
            n = 0

            def eventFilter(self, obj, ev):  # noqa: N802 (Qt's name)
                if ev.type() == paint:
                    _Filter.n += 1
                return False

        self._filter = _Filter(app)
        self._cls = _Filter
        app.installEventFilter(self._filter)

    @property
    def n(self) -> int:
        return self._cls.n


PAINTS: PaintCounter | None = None
CPU: dict = {}  # (id(window), tuple(frames)) -> [update CPU ms per frame], [paint events per frame]


def frame_loop(app, window, frames) -> tuple[list[float], list[float]]:
    """(update ms, grab ms) per frame: set_frame + processEvents, then grab(). The update's CPU time (this
    process's, all threads) and the paint events it caused go to ``CPU`` under the same frames."""
    session = window.session
    upd, grab, cpu, paints = [], [], [], []
    for f in frames:
        n0 = PAINTS.n if PAINTS is not None else 0
        c0 = time.process_time()
        t0 = time.perf_counter()
        session.set_frame(int(f))
        app.processEvents()
        t1 = time.perf_counter()
        c1 = time.process_time()
        n1 = PAINTS.n if PAINTS is not None else 0
        window.grab()
        t2 = time.perf_counter()
        upd.append(1e3 * (t1 - t0))
        grab.append(1e3 * (t2 - t1))
        cpu.append(1e3 * (c1 - c0))
        paints.append(n1 - n0)
    CPU[id(upd)] = (cpu, paints)
    return upd, grab


def frame_sets(n_frames: int, count: int, rng) -> dict[str, np.ndarray]:
    start = n_frames // 3
    seq = (start + np.arange(count)) % n_frames
    rnd = rng.integers(0, n_frames, count)
    return {"sequential": seq, "random": rnd}


def view_hook_times(app, window, frames) -> dict[str, list[float]]:
    """Each view's on_frame_changed, called directly, ms per frame (visible or not)."""
    out = {vid: [] for vid in window.views}
    session = window.session
    for f in frames:
        # the views read the frame from the session; its signal is held back so that no view draws the frame
        # before it is timed (a view entering a new block rebuilds its layout: that must be counted)
        session.blockSignals(True)
        try:
            session.playback.frame = int(f)
        finally:
            session.blockSignals(False)
        app.processEvents()
        for vid, view in window.views.items():
            t0 = time.perf_counter()
            view.on_frame_changed()
            out[vid].append(1e3 * (time.perf_counter() - t0))
    return out


def only_source(window) -> None:
    """The baseline layout: every view dock closed but the kernel source."""
    for vid, dock in window.docks.items():
        if vid != "source":
            dock.hide()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=150, help="sequential frames and as many random ones per trace")
    ap.add_argument("--size", default="1920x1080", help="window size (default 1920x1080)")
    ap.add_argument("--quick", action="store_true", help="only the three small traces")
    ap.add_argument("--only", default="", help="only the traces whose label contains this text, or one of several split by | "
                    "(e.g. '1,048,576|1<<20': the two traces of a million threads)")
    ap.add_argument("--save", type=Path, help="also write the printed tables to this file")
    args = ap.parse_args(argv)
    size = tuple(int(x) for x in args.size.lower().split("x"))
    lines: list[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    app = _application(headless=True)
    from PySide6.QtWidgets import QMainWindow

    global PAINTS
    PAINTS = PaintCounter(app)

    import numba
    import PySide6
    import pyqtgraph

    load_before = os.getloadavg()
    say(f"# bench/gui_frame.py, {_dt.datetime.now(_dt.timezone.utc):%Y-%m-%dT%H:%M:%SZ}, "
        f"Qt platform {app.platformName()}, window {size[0]}x{size[1]}, {os.cpu_count()} cores")
    say(f"# python {platform.python_version()} numpy {np.__version__} numba {numba.__version__} "
        f"PySide6 {PySide6.__version__} pyqtgraph {pyqtgraph.__version__}")
    say(f"# load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}")
    say(f"$ .venv/bin/python bench/gui_frame.py {' '.join(argv if argv is not None else sys.argv[1:])}".rstrip())

    # the floor: grab() of an empty main window of the same size
    empty = QMainWindow()
    empty.resize(*size)
    empty.show()
    app.processEvents()
    floor = []
    for _ in range(60):
        t0 = time.perf_counter()
        app.processEvents()
        empty.grab()
        floor.append(1e3 * (time.perf_counter() - t0))
    empty.close()
    say(f"empty QMainWindow {size[0]}x{size[1]}, processEvents + grab: median {med(floor):.2f} ms, p95 {p95(floor):.2f} ms")
    say("")

    rng = np.random.default_rng(7)
    rows, hooks = [], []
    for label, build in [(lab, b) for lab, b in trace_builders(args.quick)
                         if any(part in lab for part in args.only.split("|"))]:
        t0 = time.perf_counter()
        trace = build()
        build_s = time.perf_counter() - t0
        w, open_s = open_window(app, trace, size)
        s = w.session
        n = s.frames.n_frames
        sets = frame_sets(n, args.frames, rng)
        frame_loop(app, w, sets["random"][:10])  # warm-up: caches, first paints
        res = {}
        for mode, frames in sets.items():
            res[mode] = frame_loop(app, w, frames)
        hooks.append((label, view_hook_times(app, w, sets["random"][: max(20, args.frames // 2)])))
        errors = {vid: v.errors for vid, v in w.views.items() if v.errors}
        only_source(w)
        for _ in range(3):
            app.processEvents()
        frame_loop(app, w, sets["random"][:10])
        base = {mode: frame_loop(app, w, frames) for mode, frames in sets.items()}
        w.close()
        w.deleteLater()
        app.processEvents()
        rows.append((label, trace.launch.n_threads, len(trace), n, build_s, open_s, res, base, errors))
        print(f"  ({label}: done)", flush=True)
        del trace, w, s

    say("per frame, ms (default layout, every visible view drawing; 'update' = set_frame + processEvents, "
        "'grab' = window.grab())")
    head = (f"{'trace':<36}{'threads':>11}{'events':>12}{'frames':>9}  {'mode':<11}{'median':>8}{'p95':>8}"
            f"{'upd med':>9}{'upd p95':>9}{'grab med':>9}{'fps':>7}{'base med':>10}{'base p95':>10}{'x base':>8}")
    say(head)
    say("-" * len(head))
    worst = (0.0, "")
    for label, threads, events, n, build_s, open_s, res, base, errors in rows:
        for mode in ("sequential", "random"):
            upd, grab = res[mode]
            tot = [a + b for a, b in zip(upd, grab)]
            bupd, bgrab = base[mode]
            btot = [a + b for a, b in zip(bupd, bgrab)]
            say(f"{label:<36}{threads:>11,}{events:>12,}{n:>9,}  {mode:<11}{med(tot):>8.1f}{p95(tot):>8.1f}"
                f"{med(upd):>9.1f}{p95(upd):>9.1f}{med(grab):>9.1f}{1e3 / med(tot):>7.0f}{med(btot):>10.1f}"
                f"{p95(btot):>10.1f}{med(tot) / med(btot):>8.2f}")
            worst = max(worst, (p95(upd), f"{label} ({mode})"))
        if errors:
            say(f"    view errors: {errors}")
    say("")
    say("update + paint, ms: set_frame + processEvents, which runs every visible view's hook and has Qt paint what "
        "changed (offscreen: into the window's backing store); 'cpu' is this process's CPU time over the same")
    say("interval (less inflated than wall time on a shared machine); the target is <= 16 ms median at 1M threads")
    head = (f"{'trace':<36}{'threads':>11}  {'mode':<11}{'wall med':>9}{'wall p95':>9}{'cpu med':>9}{'cpu p95':>9}"
            f"{'paints':>8}{'base cpu':>9}{'x base':>8}")
    say(head)
    say("-" * len(head))
    for label, threads, events, n, build_s, open_s, res, base, errors in rows:
        for mode in ("sequential", "random"):
            cpu, paints = CPU[id(res[mode][0])]
            bcpu, _bp = CPU[id(base[mode][0])]
            say(f"{label:<36}{threads:>11,}  {mode:<11}{med(res[mode][0]):>9.1f}{p95(res[mode][0]):>9.1f}"
                f"{med(cpu):>9.1f}{p95(cpu):>9.1f}{med(paints):>8.0f}{med(bcpu):>9.1f}{med(cpu) / max(med(bcpu), 1e-3):>8.2f}")
    say("")
    say("trace build and window open, s: " + "; ".join(f"{r[0]}: {r[4]:.2f} + {r[5]:.2f}" for r in rows))
    say("")
    vids = list(hooks[0][1])
    say("each view's on_frame_changed, called directly on random frames: median / p95 ms")
    head = f"{'trace':<36}" + "".join(f"{v:>14}" for v in vids)
    say(head)
    say("-" * len(head))
    slow = []
    for label, per_view in hooks:
        say(f"{label:<36}" + "".join(f"{med(per_view[v]):>6.2f} /{p95(per_view[v]):>6.2f}" for v in vids))
        slow += [(p95(per_view[v]), v, label) for v in vids if p95(per_view[v]) > 16.0]
    say("")
    say(f"slowest update (set_frame + processEvents) p95: {worst[0]:.1f} ms, {worst[1]}; "
        f"views over 16 ms p95: {', '.join(f'{v} {t:.1f} ms on {lab}' for t, v, lab in sorted(slow, reverse=True)) or 'none'}")
    load_after = os.getloadavg()
    say(f"# load average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    if args.save:
        args.save.parent.mkdir(parents=True, exist_ok=True)
        args.save.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"saved {args.save}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
