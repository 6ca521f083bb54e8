"""A fuzz of the class share's server at a sharing window (issue 26): hostile and broken pages
(tests/share_fuzzing.py) join while the presenter steps and a well-behaved page follows. Every one is dropped or
refused with a log line; no traceback anywhere (the window, the server's thread, its event loop); no page steers the
presenter; the good page gets every step. CI sends GPUVIZ_SHARE_FUZZ_PAGES pages (default 140, ten of each kind);
bench/share_fuzz.py sends thousands at a bare server."""

from __future__ import annotations

import json
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from websockets.sync.client import connect

from tests.share_fuzzing import KINDS, misbehave

PAGES = int(os.environ.get("GPUVIZ_SHARE_FUZZ_PAGES", "140"))


@pytest.mark.slow
def test_hostile_pages_are_dropped_and_the_class_goes_on(make_window, qtbot, caplog, monkeypatch):
    from gpuviz.ui.share import share_with_class

    crashed = []
    monkeypatch.setattr(threading, "excepthook", lambda args: crashed.append(args))
    caplog.set_level(logging.INFO)
    w = make_window()
    ctl = share_with_class(w, dialog=False)
    assert ctl is not None
    server, s = ctl.server, w.session
    frame0, theme0 = s.frame, s.theme.dark
    qtbot.waitUntil(lambda: server._state is not None)
    good = connect(f"ws://{server.host}:{server.port}/ws?join={server.token}", open_timeout=5)
    seen = []
    good.__enter__()  # (websockets' sync client wants its context entered before it is iterated)

    def follow():
        try:
            for text in good:
                seen.append(json.loads(text)["frame"])
        except Exception as e:  # noqa: BLE001 - the test's own reader: any failure is reported below
            seen.append(e)

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    step = w.actions.qaction("playback.step_forward")
    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(misbehave, server, n, 7) for n in range(PAGES)]
        steps = 0
        while not all(f.done() for f in futures):
            if steps < 40:
                step.trigger()
                steps += 1
            qtbot.wait(25)
        outcomes = [f.result() for f in futures]
    while steps < 40:
        step.trigger()
        steps += 1
    qtbot.waitUntil(lambda: seen and seen[-1] == s.frame, timeout=10000)

    kinds = {o.kind for o in outcomes}
    assert kinds == set(KINDS) or PAGES < 5 * len(KINDS), kinds
    kept = [o for o in outcomes if not o.dropped]
    assert kept == [], kept[:5]  # every hostile page dropped or refused
    # no page steered the presenter: its frame moved by its own 40 steps only, its theme did not change
    assert s.frame == frame0 + 40 and s.theme.dark == theme0
    # the good page followed every step, in order, and is still there
    assert not any(isinstance(f, Exception) for f in seen), seen[-3:]
    assert seen == sorted(seen) and seen[-1] == s.frame
    assert server.n_clients == 1 and server.polls.open_question is None
    # a log line for each page dropped after joining, and no traceback anywhere
    joined = [o for o in outcomes if not o.refused]
    assert len(server.dropped) == len(joined)
    assert crashed == [], crashed[:3]
    bad = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert bad == [], [f"{r.name}: {r.getMessage()}" for r in bad[:5]]
    assert any("dropped page" in r.getMessage() for r in caplog.records)
    good.__exit__(None, None, None)
    reader.join(5)
