"""Benchmark: the class share under load. N websocket clients on this machine follow the presenter stepping a
1,048,576-thread trace at 10 steps a second in the real window (offscreen), through the real share.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/class_share.py [--clients 200] [--seconds 20] [--rate 10]
        [--threads 1048576] [--size 1920x1080] [--pin] [--save bench/results/class_share.txt]

The trace is ``vector_add`` over 1<<20 elements (4,096 blocks of 256 threads) captured on the CPU executor
(``gpuviz.capture``, about a second), shown in a :class:`~gpuviz.ui.window.MainWindow` with its default layout,
shared as File ▸ Share with the class shares it (:func:`gpuviz.ui.share.share_with_class`, 127.0.0.1 only).
The clients are plain websocket clients (the ``websockets`` library, asyncio) in one child process, each holding
one socket to ``/ws?join=TOKEN`` as a page does; they take the states and answer nothing.

Two phases in the same run, on the same window and share: a baseline with 1 client, then ``--clients``. In each
the presenter steps forward ``--rate`` times a second for ``--seconds`` (the window's own Step forward action,
then ``processEvents``: what a key press costs the GUI thread, painting included). Printed per phase:

- the presenter's step (action + processEvents), p50/p95 ms of wall time and of the GUI thread's CPU time (the
  steadier figure on a shared machine), and within it the share's own part
  (``ShareController.push``: reading the state, handing it to the server's loop), p50/p95 ms;
- the share server's thread (its event loop): its CPU time per step (ms), the sockets' work, which holds the GIL
  the window's thread needs;
- every client's lag from push (the start of ``push`` for that state) to receipt (the client's socket read),
  p50/p95/max over every state every client received, the worst client's p95, and how many states the clients
  received of those pushed (a slow page skips states: latest-state-wins);
- memory per client: the RSS of the app's process (the share server's thread is in it) after the clients
  connected minus before, divided by N;

and the ratio of each figure to the baseline's. ``--pin`` puts the window's thread on CPU 0 and the clients and
the share server's thread on CPU 1, as on a presenter's laptop with a core to spare (the clients are students'
devices there): on 2 shared cores without it the clients' process and the server compete with the window for the
CPU, and the step's wall time shows that as much as the share's own cost (the GUI thread's CPU time does not). Bounded: at most 500 clients (the server's own cap) and 120 s a
phase; loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MAX_CLIENTS = 500
MAX_SECONDS = 120


# ---- the clients (a child process) -------------------------------------------------------------------------------
async def _clients(url: str, n: int, out: str) -> None:
    from websockets.asyncio.client import connect

    ws_url = url.replace("http://", "ws://").replace("/?join=", "/ws?join=")
    got: list[list] = [[] for _ in range(n)]
    socks = []
    gate = asyncio.Semaphore(50)

    async def one(i: int):
        async with gate:
            ws = await connect(ws_url, open_timeout=30, max_size=1 << 20)
        socks.append(ws)
        rec = got[i]
        try:
            async for text in ws:
                t = time.monotonic_ns()
                msg = json.loads(text)
                if msg.get("type") == "state":
                    rec.append((msg["seq"], t))
        except Exception:  # noqa: BLE001 - a closed socket ends this client; the record says how many it got
            pass

    tasks = [asyncio.ensure_future(one(i)) for i in range(n)]
    while len(socks) < n:
        await asyncio.sleep(0.05)
        for t in tasks:
            if t.done() and t.exception() is not None:
                raise t.exception()
    print(f"ready {n}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    for ws in socks:
        await ws.close()
    await asyncio.gather(*tasks, return_exceptions=True)
    Path(out).write_text(json.dumps({"received": got}))


# ---- the presenter -----------------------------------------------------------------------------------------------
def rss_bytes(pids=("self",)) -> int:
    """Resident memory of these processes, summed (the app's, and the share server's process)."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/statm") as f:
            total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return total


def cpu_seconds(stat_path) -> float:
    """User + system CPU time a process or thread has used (its /proc stat file)."""
    if stat_path is None:
        return float("nan")
    with open(stat_path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_pid(ctl):
    """The share server's process, or None when it serves from a thread of this one (gpuviz.share.server now)."""
    proc = getattr(ctl.server, "_proc", None)
    return proc.pid if proc is not None else None


def server_tid() -> int | None:
    """The share server's thread (its event loop), when it serves from this process."""
    return next((t.native_id for t in threading.enumerate() if t.name == "gpuviz-share"), None)


def server_stat(ctl) -> str | None:
    pid = server_pid(ctl)
    if pid is not None:
        return f"/proc/{pid}/stat"
    tid = server_tid()
    return f"/proc/self/task/{tid}/stat" if tid is not None else None


def pin(ctl, clients_pid) -> None:
    """--pin: the window's thread on CPU 0; the clients and the share server (its thread or process) on CPU 1."""
    os.sched_setaffinity(0, {0})  # Linux: the calling thread
    for pid in (clients_pid, server_pid(ctl) or server_tid()):
        if pid is not None:
            os.sched_setaffinity(pid, {1})


def pct(xs, q) -> float:
    return float(np.percentile(xs, q)) if len(xs) else float("nan")


def commit() -> str:
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "gpuviz", "bench/class_share.py"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        files = [line[3:] for line in dirty.splitlines()]
        return sha + (f" (the working tree also had uncommitted changes in {', '.join(files)})" if files else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


class Timed:
    """Wraps ShareController.push: its duration, and the time each state it published was pushed (by seq)."""

    def __init__(self):
        self.push_ns: list[int] = []
        self.pushed_at: dict[int, int] = {}
        self.on = False

    def install(self):
        from gpuviz.ui.share import ShareController

        original = ShareController.push
        timed = self

        def push(ctl, *a):
            t0 = time.monotonic_ns()
            before = ctl.server._seq
            original(ctl, *a)
            t1 = time.monotonic_ns()
            if timed.on:
                timed.push_ns.append(t1 - t0)
                if ctl.server._seq != before:
                    timed.pushed_at[ctl.server._seq] = t0
        ShareController.push = push


def run_phase(app, w, ctl, timed: Timed, n: int, seconds: float, rate: float, say, pinned=False) -> dict:
    step = w.actions.qaction("playback.step_forward")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "clients.json")
        gc.collect()
        idle(app, 0.5)
        pids = ("self",) + ((server_pid(ctl),) if server_pid(ctl) else ())  # the app's, the share server's
        rss0 = rss_bytes(pids)
        proc = subprocess.Popen([sys.executable, __file__, "--client-of", ctl.url, "--n", str(n), "--out", out],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        ready = []
        reader = threading.Thread(target=lambda: ready.append(proc.stdout.readline()), daemon=True)
        reader.start()
        end = time.monotonic() + 60
        while reader.is_alive() and time.monotonic() < end:
            idle(app, 0.02)
        if not ready or not ready[0].startswith("ready"):
            proc.kill()
            raise SystemExit(f"the {n} clients did not connect within 60 s ({ready!r}, {ctl.server.dropped})")
        idle(app, 1.0)
        gc.collect()
        rss1 = rss_bytes(pids)
        connected = ctl.server.n_clients
        timed.push_ns.clear()
        timed.pushed_at.clear()
        timed.on = True
        steps_ns, cpu_ns = [], []
        if pinned:
            pin(ctl, proc.pid)
        server_cpu0 = cpu_seconds(server_stat(ctl))
        t0 = time.monotonic()
        for k in range(int(seconds * rate)):
            target = t0 + k / rate
            while time.monotonic() < target:
                idle(app, min(0.005, max(0.0, target - time.monotonic())))
            a, c = time.monotonic_ns(), time.thread_time_ns()
            step.trigger()
            app.processEvents()
            steps_ns.append(time.monotonic_ns() - a)
            cpu_ns.append(time.thread_time_ns() - c)
        timed.on = False
        server_cpu = cpu_seconds(server_stat(ctl)) - server_cpu0
        idle(app, 1.5)  # the last states arrive
        proc.stdin.write("stop\n")
        proc.stdin.flush()
        proc.wait(60)
        received = json.loads(Path(out).read_text())["received"]
    lags, worst, counts = [], [], []
    for rec in received:
        mine = [(t - timed.pushed_at[s]) / 1e6 for s, t in rec if s in timed.pushed_at]
        counts.append(len(mine))
        lags += mine
        if mine:
            worst.append(pct(mine, 95))
    pushed = len(timed.pushed_at)
    r = {"n": n, "connected": connected, "steps": len(steps_ns),
         "step_p50": pct(steps_ns, 50) / 1e6, "step_p95": pct(steps_ns, 95) / 1e6,
         "cpu_p50": pct(cpu_ns, 50) / 1e6, "cpu_p95": pct(cpu_ns, 95) / 1e6,
         "server_ms": server_cpu * 1e3 / max(1, len(steps_ns)),
         "push_p50": pct(timed.push_ns, 50) / 1e6, "push_p95": pct(timed.push_ns, 95) / 1e6,
         "lag_p50": pct(lags, 50), "lag_p95": pct(lags, 95), "lag_max": max(lags) if lags else float("nan"),
         "worst_client_p95": max(worst) if worst else float("nan"),
         "received_min": min(counts) if counts else 0, "received_mean": float(np.mean(counts)) if counts else 0,
         "pushed": pushed, "rss_per_client_kb": (rss1 - rss0) / n / 1024, "rss_delta_mb": (rss1 - rss0) / 2 ** 20}
    say(f"{n:>5} {connected:>5} {r['steps']:>5}  {r['step_p50']:7.2f} {r['step_p95']:7.2f}  {r['cpu_p50']:6.2f} "
        f"{r['cpu_p95']:6.2f}  {r['server_ms']:6.2f}  {r['push_p50']:6.3f} "
        f"{r['push_p95']:6.3f}  {r['lag_p50']:7.2f} {r['lag_p95']:7.2f} {r['lag_max']:7.1f} "
        f"{r['worst_client_p95']:8.2f}  {r['received_min']:>4}/{r['received_mean']:6.1f}/{pushed:<4} "
        f"{r['rss_delta_mb']:8.2f} {r['rss_per_client_kb']:9.1f}")
    return r


def idle(app, seconds: float) -> None:
    end = time.monotonic() + seconds
    while True:
        app.processEvents()
        left = end - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(0.002, left))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--rate", type=float, default=10.0, help="presenter steps per second")
    ap.add_argument("--threads", type=int, default=1 << 20, help="threads of the vector_add launch")
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--save")
    ap.add_argument("--pin", action="store_true", help="the window's thread on CPU 0, the clients and the share "
                    "server on CPU 1 (as on a laptop with cores to spare; the machine's other work still runs)")
    ap.add_argument("--client-of", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.client_of:
        if not a.client_of.startswith("http://127.0.0.1:"):
            raise SystemExit("the bench's clients connect to 127.0.0.1 only")
        asyncio.run(_clients(a.client_of, min(a.n, MAX_CLIENTS), a.out))
        return 0
    if not 1 <= a.clients <= MAX_CLIENTS or not 0 < a.seconds <= MAX_SECONDS or not 0 < a.rate <= 60:
        raise SystemExit(f"--clients 1..{MAX_CLIENTS}, --seconds up to {MAX_SECONDS}, --rate up to 60")
    size = tuple(int(x) for x in a.size.split("x"))

    from gui_frame import open_window  # bench/gui_frame.py, beside this script
    from report import Report
    from gpuviz.app import _application

    import websockets

    rep = Report("bench/class_share.py", a.size, f"commit {commit()}",
                 f"websockets {websockets.__version__}, clients in one child process, 127.0.0.1")
    say = rep.say
    app = _application(headless=True)

    import gpuviz
    from gpuviz.catalog import get_kernel

    vector_add = get_kernel("vector_add").kernel

    n = a.threads
    rng = np.random.default_rng(0)
    x, y, z = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32), np.zeros(n, np.float32)
    t = time.perf_counter()
    trace = gpuviz.capture(vector_add, (n + 255) // 256, 256, x, y, z, n, backend="cpu")
    say(f"trace: vector_add, {trace.launch.n_threads:,} threads ({trace.launch.n_blocks:,} blocks of 256), "
        f"{len(trace):,} events, captured on the CPU executor in {time.perf_counter() - t:.1f} s")
    t = time.perf_counter()
    w, _ = open_window(app, trace, size)
    say(f"window {a.size} open with it in {time.perf_counter() - t:.1f} s, {w.session.frames.n_frames:,} frames")

    timed = Timed()
    timed.install()
    from gpuviz.ui.share import share_with_class

    ctl = share_with_class(w, dialog=False)
    import urllib.request

    t = time.perf_counter()
    page = urllib.request.urlopen(ctl.url, timeout=120).read()  # waits for the page to be built
    say(f"shared at {ctl.url.split('?')[0]}; the served page: {len(page) / 1e6:.2f} MB, built and fetched in "
        f"{time.perf_counter() - t:.1f} s")
    say(f"{a.rate:g} steps/s for {a.seconds:g} s per phase; lag in ms from push to the client's read; "
        f"memory: the RSS of the app's and the share server's processes")
    say("")
    say("    N  conn steps  step p50    p95  cpu p50   p95  server  push p50   p95  lag p50     p95     max  worst-p95  received "
        "min/mean/pushed  RSS +MB  KB/client")
    base = run_phase(app, w, ctl, timed, 1, a.seconds, a.rate, say, a.pin)
    big = run_phase(app, w, ctl, timed, a.clients, a.seconds, a.rate, say, a.pin)
    say("")
    say(f"ratio {a.clients} clients / 1 client: step p50 {big['step_p50'] / base['step_p50']:.2f}, "
        f"p95 {big['step_p95'] / base['step_p95']:.2f}; step's CPU p50 {big['cpu_p50'] / base['cpu_p50']:.2f}, "
        f"p95 {big['cpu_p95'] / base['cpu_p95']:.2f}; push p50 {big['push_p50'] / base['push_p50']:.2f}, "
        f"p95 {big['push_p95'] / base['push_p95']:.2f}; lag p50 {big['lag_p50'] / base['lag_p50']:.2f}, "
        f"p95 {big['lag_p95'] / base['lag_p95']:.2f}, max {big['lag_max'] / base['lag_max']:.2f}")
    say(f"memory per client: {big['rss_per_client_kb']:.1f} KB ({big['rss_delta_mb']:.1f} MB for {a.clients} "
        f"clients; the 1-client phase moved RSS by {base['rss_delta_mb']:+.2f} MB)")
    say(f"targets (issue 26): presenter's step within 16 ms and every client's lag within 250 ms at p95: step p95 "
        f"{big['step_p95']:.1f} ms, share's push p95 {big['push_p95']:.2f} ms, lag p95 {big['lag_p95']:.1f} ms, "
        f"worst client's p95 {big['worst_client_p95']:.1f} ms")
    from gpuviz.ui.share import stop_share

    stop_share(w)
    w.close()
    rep.finish(a.save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
