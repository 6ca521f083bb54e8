"""Fuzz the class share's server with thousands of hostile and broken pages (tests/share_fuzzing.py), with a good
page following the presenter's states all the while; print what happened to each kind.

    PYTHONPATH=$PWD .venv/bin/python bench/share_fuzz.py [--pages 20000] [--seed 1] [--threads 16]

The window-level version (the app offscreen, the presenter stepping) is tests/test_share_fuzz.py; CI runs it with
140 pages (GPUVIZ_SHARE_FUZZ_PAGES sets more). A run passes when every hostile page was dropped or refused, nothing
logged a traceback or an error, and the good page received the last state.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from websockets.sync.client import connect  # noqa: E402

from gpuviz.share import ShareServer  # noqa: E402
from tests.share_fuzzing import KINDS, misbehave  # noqa: E402


class _Errors(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.bad: list[str] = []

    def emit(self, record):
        if record.levelno >= logging.ERROR or record.exc_info:
            self.bad.append(f"{record.name}: {record.getMessage()}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=16)
    a = ap.parse_args()
    errors = _Errors()
    logging.getLogger().addHandler(errors)
    logging.getLogger().setLevel(logging.INFO)
    crashed = []
    threading.excepthook = crashed.append
    server = ShareServer().start(lambda origin: ("<html>fuzz</html>", {}))
    server.publish(frame=1, theme="light")
    seen = []
    with connect(f"ws://{server.host}:{server.port}/ws?join={server.token}", open_timeout=5) as good:
        def follow():
            for text in good:
                seen.append(json.loads(text)["frame"])

        reader = threading.Thread(target=follow, daemon=True)
        reader.start()
        t0 = time.perf_counter()
        with ThreadPoolExecutor(a.threads) as pool:
            futures = [pool.submit(misbehave, server, n, a.seed) for n in range(a.pages)]
            frame = 1
            while not all(f.done() for f in futures):
                frame += 1
                server.publish(frame=frame, theme="light")
                time.sleep(0.05)
            outcomes = [f.result() for f in futures]
        spent = time.perf_counter() - t0
        server.publish(frame=frame + 1, theme="light")
        end = time.monotonic() + 10
        while (not seen or seen[-1] != frame + 1) and time.monotonic() < end:
            time.sleep(0.02)
        left = server.n_clients
    server.stop()
    by_kind = Counter(o.kind for o in outcomes)
    dropped = Counter(o.kind for o in outcomes if o.dropped and not o.refused)
    refused = Counter(o.kind for o in outcomes if o.refused)
    kept = [o for o in outcomes if not o.dropped]
    print(f"# bench/share_fuzz.py --pages {a.pages} --seed {a.seed} --threads {a.threads}: {spent:.1f} s, "
          f"{frame} presenter states published meanwhile")
    print(f"{'kind':<14}{'pages':>7}{'dropped':>9}{'refused':>9}")
    for k in KINDS:
        print(f"{k:<14}{by_kind[k]:>7}{dropped[k]:>9}{refused[k]:>9}")
    good_ok = bool(seen) and seen[-1] == frame + 1 and seen == sorted(seen)
    print(f"kept (not dropped): {len(kept)}; errors or tracebacks logged: {len(errors.bad)}; thread crashes: "
          f"{len(crashed)}; the good page followed to the last state: {good_ok} ({len(seen)} states, "
          f"{left} page(s) connected at the end)")
    for line in errors.bad[:10]:
        print("  ", line)
    return 0 if not kept and not errors.bad and not crashed and good_ok and left == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
