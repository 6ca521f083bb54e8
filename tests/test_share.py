"""The class share (gpuviz/share, gpuviz/ui/share.py): its server and protocol with real websocket clients, and
the app offscreen with three headless Chromium pages following the presenter and answering a predict question."""

from __future__ import annotations

import base64
import contextlib
import gzip
import http.client
import json
import re
import statistics
import time
from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from gpuviz.share import Polls, ShareServer, parse_client_message
from gpuviz.share.protocol import MAX_MESSAGE_BYTES, ProtocolError

QUESTION = "How many 32-byte sectors does this warp read?"
EXPLAIN = "Eight floats of a row, in four sectors, one per lane pair."


def _page(ws_origin):
    return f"<html><body>page for {ws_origin}</body></html>", {}


@pytest.fixture
def server():
    s = ShareServer().start(_page)
    yield s
    s.stop()


@pytest.fixture
def ws_open():
    """``ws_open(url)``: a websocket client, closed after the test."""
    with contextlib.ExitStack() as stack:
        yield lambda url, **kw: stack.enter_context(connect(url, open_timeout=5, **kw))


def _ws_url(s: ShareServer, token: str | None = None) -> str:
    return f"ws://{s.host}:{s.port}/ws" + ("" if token == "" else f"?join={token or s.token}")


def _get(s: ShareServer, path: str, host: str | None = None):
    c = http.client.HTTPConnection(s.host, s.port, timeout=5)
    c.request("GET", path, headers={"Host": host or f"{s.host}:{s.port}"})
    r = c.getresponse()
    return r.status, r.read()


def _recv_state(ws, timeout=5.0) -> dict:
    msg = json.loads(ws.recv(timeout=timeout))
    assert msg["type"] == "state"
    return msg


def _closed(ws, timeout=5.0) -> bool:
    end = time.monotonic() + timeout
    try:
        while time.monotonic() < end:
            ws.recv(timeout=timeout)
    except ConnectionClosed:
        return True
    except TimeoutError:
        return False
    return False


# ---- the protocol ---------------------------------------------------------------------------------------------
def test_a_page_may_send_an_answer_and_nothing_else():
    assert parse_client_message('{"type":"answer","question":"q1","value":4}') == {
        "type": "answer", "question": "q1", "value": 4.0}
    for bad in ("nope{", "[1,2]", '"answer"', '{"type":"hello"}', '{"type":"state","frame":3}',
                '{"type":"answer","question":"q1","value":4,"presenter":true}', '{"type":"frame","frame":9}',
                '{"type":"answer","question":"q1","value":"4"}', '{"type":"answer","question":"q1","value":1e300}',
                '{"type":"answer","question":"q1","value":true}', '{"type":"answer","value":3}',
                '{"type":"answer","question":"q1","value":NaN}', "x" * (MAX_MESSAGE_BYTES + 1), b"\x00binary",
                "[" * 100_000):
        with pytest.raises(ProtocolError):
            parse_client_message(bad)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=300), st.binary(max_size=300),
                 st.recursive(st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=20),
                              lambda kids: st.lists(kids, max_size=4) | st.dictionaries(
                                  st.sampled_from(["type", "question", "value", "frame", "role", "x"]), kids,
                                  max_size=4)).map(lambda v: json.dumps(v, allow_nan=True))))
def test_any_message_is_an_answer_or_a_protocol_error(text):
    """The fuzz of the messages: whatever a page sends, the server gets an answer or a ProtocolError, nothing else."""
    try:
        msg = parse_client_message(text)
    except ProtocolError:
        return
    assert set(msg) == {"type", "question", "value"} and msg["type"] == "answer"


def test_polls_count_one_answer_per_client_without_names():
    p = Polls()
    assert not p.record("a", "q1", 3)  # no question open
    p.open("q1", "how many?")
    for client, v in (("a", 3), ("b", 4), ("c", 4), ("a", 4.0), ("d", 0.5)):
        assert p.record(client, "q1", v)
    assert not p.record("e", "q2", 4)  # not the open question
    c = p.counts()
    assert c["n"] == 4 and c["distribution"] == {"4": 3, "0.5": 1}
    p.close("4 sectors")
    assert p.open_question is None and p.counts("q1")["n"] == 4
    text = p.to_csv()
    assert text.splitlines()[0] == "question_id,question,answer,count,share,revealed_answer"
    assert "q1,how many?,4,3,0.750,4 sectors" in text and "a" not in text.split("\n", 1)[1].split(",")[0]


# ---- the server ---------------------------------------------------------------------------------------------
def test_the_page_and_the_socket_need_the_join_token(server, ws_open):
    s = server
    assert s.host == "127.0.0.1" and len(s.token) >= 20
    status, body = _get(s, f"/?join={s.token}")
    assert status == 200 and f"ws://127.0.0.1:{s.port}".encode() in body
    assert _get(s, "/")[0] == 403
    assert _get(s, "/?join=wrong")[0] == 403
    assert _get(s, f"/etc/passwd?join={s.token}")[0] == 404  # nothing from the disk
    assert _get(s, f"/../pyproject.toml?join={s.token}")[0] == 404
    assert _get(s, f"/?join={s.token}", host=f"evil.example:{s.port}")[0] == 421  # DNS rebinding
    for url in (_ws_url(s, ""), _ws_url(s, "wrong")):
        with pytest.raises(InvalidStatus):
            connect(url, open_timeout=5)
    with pytest.raises(InvalidStatus):
        connect(_ws_url(s), open_timeout=5, origin="http://evil.example")
    ws = ws_open(_ws_url(s))
    s.publish(frame=7, theme="dark")
    st = _recv_state(ws)
    assert (st["frame"], st["theme"], st["question"]) == (7, "dark", None)


def test_bad_pages_are_dropped_and_the_others_go_on(server, ws_open):
    s = server
    s.publish(frame=5, theme="light")
    good = ws_open(_ws_url(s))
    assert _recv_state(good)["frame"] == 5
    bad = {name: ws_open(_ws_url(s)) for name in ("big", "junk", "presenter", "unknown", "flood")}
    for ws in bad.values():
        assert _recv_state(ws)["frame"] == 5
    bad["big"].send(json.dumps({"type": "answer", "question": "q", "value": 1, "pad": "x" * 5000}))
    bad["junk"].send("{not json")
    bad["presenter"].send(json.dumps({"type": "state", "frame": 999, "theme": "dark", "role": "presenter"}))
    bad["unknown"].send(json.dumps({"type": "subscribe"}))
    try:
        for _ in range(200):
            bad["flood"].send(json.dumps({"type": "answer", "question": "q", "value": 1}))
    except ConnectionClosed:
        pass
    for name, ws in bad.items():
        assert _closed(ws), f"the {name} page was not dropped"
    # a page's socket closes before the server's handler has noted why (its thread runs on): wait for the notes
    end = time.monotonic() + 5
    while len(s.dropped) < 5 and time.monotonic() < end:
        time.sleep(0.02)
    assert len(s.dropped) == 5, s.dropped
    assert any("flood" in d for d in s.dropped) and any(str(MAX_MESSAGE_BYTES) in d for d in s.dropped)
    # the presenter's frame is the app's alone: the good page still follows it
    s.publish(frame=6, theme="light")
    st = _recv_state(good)
    assert (st["frame"], st["theme"]) == (6, "light")
    assert s.n_clients == 1
    good.close()


def test_a_slow_page_skips_states_and_the_presenter_never_waits(server, ws_open):
    s = server
    slow = ws_open(_ws_url(s))
    t0 = time.perf_counter()
    for f in range(3000):
        s.publish(frame=f, theme="light")
    spent = time.perf_counter() - t0
    got = []
    while True:
        st = _recv_state(slow)
        got.append(st["frame"])
        if st["frame"] == 2999:
            break
    assert len(got) < 3000 and got == sorted(got)  # latest wins: states it had no time for are skipped
    print(f"3000 publishes in {spent * 1e3:.1f} ms; the slow page received {len(got)}")
    slow.close()


def test_answers_are_counted_and_never_sent_before_the_reveal(ws_open):
    reveals = {2: {"answer": f"4. {EXPLAIN}", "caption": "Warp 0 reads A: 4 sectors, fully coalesced"}}
    s = ShareServer().start(lambda origin: ("<html></html>", reveals))
    assert _get(s, f"/?join={s.token}")[0] == 200  # the page is built: the server holds the answers
    pages = [ws_open(_ws_url(s)) for _ in range(3)]
    s.polls.open("scene1-q1", QUESTION)
    s.publish(frame=2, theme="light", scene=0, beat=1, question={"id": "scene1-q1", "ask": QUESTION, "answer": 4})
    seen = []
    for ws in pages:
        st = _recv_state(ws)
        seen.append(json.dumps(st))
        assert st["question"] == {"id": "scene1-q1", "ask": QUESTION, "kind": "number"} and st["revealed"] == {}
    for ws, v in zip(pages, (4, 4, 8)):
        ws.send(json.dumps({"type": "answer", "question": "scene1-q1", "value": v}))
    pages[2].send(json.dumps({"type": "answer", "question": "scene1-q1", "value": 16}))  # the latest wins
    pages[0].send(json.dumps({"type": "answer", "question": "scene9-q9", "value": 1}))  # not open: not counted
    end = time.monotonic() + 5
    while s.polls.counts()["n"] < 3 or "16" not in s.polls.counts()["distribution"]:
        assert time.monotonic() < end, s.polls.counts()
        time.sleep(0.02)
    assert s.polls.counts()["distribution"] == {"4": 2, "16": 1}
    assert all("sectors, fully" not in m and EXPLAIN not in m for m in seen)
    s.polls.close("4")
    s.publish(frame=2, theme="light", scene=0, beat=2, reveal_beats=(2,))
    for ws in pages:
        st = _recv_state(ws)
        assert st["question"] is None and st["revealed"]["2"]["answer"] == f"4. {EXPLAIN}"
        ws.close()
    s.stop()


def test_a_seat_answers_once_across_reloads_rejoins_and_tabs(server, ws_open):
    """A page that reloads (the presenter opened another trace, a student pressed F5) or whose socket drops and
    rejoins comes back on a new socket: it answers for the seat its browser keeps, so its answer replaces its
    earlier one instead of counting twice; a socket without a valid seat answers for itself."""
    s = server
    s.polls.open("q", QUESTION)
    seat = "0123456789abcdef01234567"

    def answer(url, value):
        ws = ws_open(url)
        ws.send(json.dumps({"type": "answer", "question": "q", "value": value}))
        return ws

    def counted(n, distribution):
        end = time.monotonic() + 5
        while (s.polls.counts()["n"], s.polls.counts()["distribution"]) != (n, distribution):
            assert time.monotonic() < end, s.polls.counts()
            time.sleep(0.02)

    first = answer(_ws_url(s) + f"&seat={seat}", 4)
    counted(1, {"4": 1})
    first.close()  # the page reloads: its socket closes, a new one opens with the same seat
    answer(_ws_url(s) + f"&seat={seat}", 8)
    counted(1, {"8": 1})
    answer(_ws_url(s) + f"&seat={seat}", 16)  # a second tab of the same browser, open at the same time
    counted(1, {"16": 1})
    for bad in ("", "&seat=../../etc", "&seat=" + "A" * 24, "&seat=" + seat + "0"):  # no valid seat: one per socket
        answer(_ws_url(s) + bad, 2)
    counted(5, {"2": 4, "16": 1})


def test_the_served_lesson_page_holds_no_answer(tmp_path):
    from gpuviz.export.html import lesson_page_data
    from gpuviz.lessons import LessonPlayer
    from gpuviz.share.page import served_page, strip_answers

    lesson, trace = _lesson()
    data = lesson_page_data(lesson, LessonPlayer(lesson, loader=lambda sc: (trace, None)))
    assert EXPLAIN in json.dumps(data)  # the offline export keeps them
    served, reveals = strip_answers(data, lesson)
    assert list(reveals) == [2] and reveals[2]["answer"] == f"4. {EXPLAIN}"
    html = served_page(served, "light", "ws://127.0.0.1:1")
    inside = _page_data(html)
    for secret in (EXPLAIN, "4 sectors", "4. Eight"):
        assert secret not in html and secret not in json.dumps(inside)
    assert "connect-src data: ws://127.0.0.1:1" in html and "gpuvizShare" in html
    from gpuviz.export.html import page_html

    offline = page_html(data)  # the offline export: no socket, no follow script
    assert "gpuvizShare" not in offline and "ws://" not in offline
    assert inside["beats"][1]["question"] == QUESTION


def test_gpuviz_present_share_starts_the_app_sharing(monkeypatch):
    import gpuviz.app
    from gpuviz.cli import main

    calls = []
    monkeypatch.setattr(gpuviz.app, "run_app", lambda **kw: calls.append(kw) or 0)
    assert main(["--present", "--share"]) == 0
    assert main(["--share", "--lan"]) == 0
    assert calls == [{"trace_path": None, "present": True, "share": True},
                     {"trace_path": None, "present": False, "share": "lan"}]


def test_a_key_shares_with_the_class_while_presenting(make_window, qtbot):
    """Presenter mode hides the menus and the transport bar, and with them File ▸ Share and the Share button: a
    teacher who pressed F5 first had no way to show the class the link. Ctrl+Shift+C shares from anywhere (the
    dialog with the link and its QR code over the presenter's screen), and the keys overlay lists it."""
    from PySide6.QtCore import Qt

    from gpuviz.ui.presenter import enter_presenter, leave_presenter

    w = make_window()
    enter_presenter(w, theme="dark", size=(1280, 720))
    qtbot.wait(50)
    assert not w.menuBar().isVisible() and not w.transport.isVisible()
    qtbot.keyClick(w, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    qtbot.waitUntil(lambda: getattr(w, "_gpuviz_share", None) is not None)
    ctl = w._gpuviz_share
    dlg = w._gpuviz_share_dialog
    qtbot.waitUntil(dlg.isVisible)
    assert dlg.url.text() == ctl.url and ctl.server.running
    assert "Ctrl+Shift+C" in w.actions.qaction("file.share").shortcut().toString()
    rows = [(text, keys) for _g, text, keys in w.actions.help_rows()]
    assert any("Share with the class" in text.replace("&", "") and "Ctrl+Shift+C" in str(keys) for text, keys in rows), rows
    leave_presenter(w)
    w.close()
    assert not ctl.server.running


def _page_data(html: str) -> dict:
    text = re.search(r'<script id="gpuviz-data" type="application/octet-stream">([^<]*)</script>', html).group(1)
    return json.loads(gzip.decompress(base64.b64decode(text.strip())))


def _lesson():
    from gpuviz.lessons import parse_lesson
    from tests.ui_traces import matmul_tiled_trace

    lesson = parse_lesson({"title": "Share test", "scenes": [{
        "title": "Tiles", "trace": "mm.gpuviz", "views": ["memory", "source"],
        "stops": ["first global load", "first barrier"],
        "questions": [{"at": "first global load", "ask": QUESTION, "answer": "sectors", "explain": EXPLAIN}]}]})
    return lesson, matmul_tiled_trace(16, 8)


# ---- the app and three browsers ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_three_browsers_follow_the_presenter_and_answer(make_window, qtbot, tmp_path):
    from tests.test_export_html_browser import chromium_and_playwright

    exe, sync_playwright = chromium_and_playwright()
    if exe is None or sync_playwright is None:
        pytest.skip("no chromium or playwright here")
    from gpuviz.lessons import LessonPlayer
    from gpuviz.ui.lesson_player import play_lesson
    from gpuviz.ui.share import export_polls_dialog, share_with_class

    w = make_window()
    ctl = share_with_class(w)
    assert ctl is not None and ctl.url.startswith("http://127.0.0.1:")
    dlg = w._gpuviz_share_dialog
    assert dlg.isVisible() and dlg.url.text() == ctl.url and dlg.qr.pixmap().width() >= 400
    s = w.session
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
        pages, received, errors = [], [], []
        for _ in range(3):
            pg = browser.new_page(viewport={"width": 1000, "height": 800})
            pg.on("pageerror", lambda e: errors.append(str(e)))
            pg.on("websocket", lambda ws: ws.on("framereceived", lambda payload: received.append(str(payload))))
            pg.goto(ctl.url)
            pg.wait_for_function("() => document.body.dataset.ready === '1' && document.body.dataset.share === 'following'")
            pages.append(pg)
        qtbot.waitUntil(lambda: ctl.server.n_clients == 3)

        def at(pg, f, timeout=10000):
            pg.wait_for_function("(f) => document.body.dataset.frame === String(f)", arg=f, timeout=timeout)

        # 50 steps of the presenter: each page reaches each frame
        lags = []
        step = w.actions.qaction("playback.step_forward")
        for _ in range(50):
            t0 = time.perf_counter()
            step.trigger()
            f = s.frame
            for pg in pages:
                at(pg, f)
                lags.append(time.perf_counter() - t0)
        assert s.frame == 50
        lags.sort()
        print(f"lag per step and page: median {statistics.median(lags) * 1e3:.1f} ms, "
              f"p95 {lags[int(len(lags) * 0.95)] * 1e3:.1f} ms, max {lags[-1] * 1e3:.1f} ms")
        # one page goes free, steps alone, and comes back with F
        free = pages[0]
        free.keyboard.press("ArrowRight")
        free.keyboard.press("ArrowRight")
        assert free.evaluate("() => document.body.dataset.share") == "free"
        at(free, 52)
        assert "free" in free.inner_text("#share-badge")
        for _ in range(3):
            step.trigger()
        for pg in pages[1:]:
            at(pg, 53)
        assert free.evaluate("() => document.body.dataset.frame") == "52"  # its own frame, not the presenter's
        free.keyboard.press("f")
        assert free.evaluate("() => document.body.dataset.share") == "following"
        at(free, 53)
        assert "following" in free.inner_text("#share-badge")
        # the theme follows the presenter's (Ctrl+T)
        want = "light" if s.theme.dark else "dark"
        w.toggle_theme()
        for pg in pages:
            pg.wait_for_function("(t) => document.documentElement.dataset.theme === t", arg=want)

        # a lesson: the pages reload on its page and follow its steps; all three answer its question
        lesson, trace = _lesson()
        lc = play_lesson(w, lesson, player=LessonPlayer(lesson, loader=lambda sc: (trace, None)))
        for pg in pages:
            pg.wait_for_function("() => window.gpuvizPage && window.gpuvizPage.state.data.kind === 'lesson' && "
                                 "document.body.dataset.ready === '1'", timeout=20000)
        qtbot.waitUntil(lambda: ctl._offsets is not None, timeout=10000)
        assert lc.player.slide().question == ""
        lc.next()  # the question
        assert lc.player.slide().question == QUESTION
        for pg in pages:
            pg.wait_for_selector("#share-answer:not([hidden])")
            assert pg.inner_text("#share-ask") == f"Predict: {QUESTION}"
            assert pg.inner_text("#question") == QUESTION
        for pg, v in zip(pages, ("4", "4", "8")):
            pg.fill("#share-value", v)
            pg.press("#share-value", "Enter")
            assert "your answer" in pg.inner_text("#share-status")
        qtbot.waitUntil(lambda: ctl.polls.counts()["n"] == 3, timeout=10000)
        assert ctl.polls.counts()["distribution"] == {"4": 2, "8": 1}
        assert all(pg.evaluate("() => document.body.dataset.frame") == str(s.frame) for pg in pages)  # typing stepped nothing
        # a student reloads the page (F5) and answers again: the answer replaces theirs, it is not a fourth
        pages[2].reload()
        pages[2].wait_for_selector("#share-answer:not([hidden])")
        pages[2].fill("#share-value", "16")
        pages[2].press("#share-value", "Enter")
        qtbot.waitUntil(lambda: ctl.polls.counts()["distribution"] == {"4": 2, "16": 1}, timeout=10000)
        assert ctl.polls.counts()["n"] == 3
        pages[2].fill("#share-value", "8")  # and changes their mind back, as before
        pages[2].press("#share-value", "Enter")
        qtbot.waitUntil(lambda: ctl.polls.counts()["distribution"] == {"4": 2, "8": 1}, timeout=10000)
        dlg.refresh()
        assert "3 answers" in dlg.room.text() and "4: 2" in dlg.room.text() and "8: 1" in dlg.room.text()
        # nothing any page holds or received gives the answer away before the reveal
        for pg in pages:
            held = pg.content() + pg.evaluate("() => JSON.stringify(window.gpuvizPage.state.data)")
            assert EXPLAIN not in held and "4 sectors" not in held
        assert received and all(EXPLAIN not in m and "4 sectors" not in m for m in received)
        answer = None
        lc.next()  # the reveal
        answer = lc.player.slide().answer
        assert answer == f"4. {EXPLAIN}"
        for pg in pages:
            pg.wait_for_function("() => document.getElementById('answer-text').textContent.length > 0")
            assert pg.inner_text("#answer-text") == answer and pg.is_hidden("#share-answer")
        assert ctl.polls.open_question is None
        out = export_polls_dialog(w, str(tmp_path / "answers.csv"))
        rows = (tmp_path / "answers.csv").read_text().splitlines()
        assert out and rows[1:] == [f"scene1-q1,{QUESTION},4,2,0.667,4", f"scene1-q1,{QUESTION},8,1,0.333,4"]
        assert errors == []
        browser.close()
    server = ctl.server
    w.close()
    assert not server.running  # the server stops with the window
    host, port = urlsplit(ctl.url).hostname, urlsplit(ctl.url).port
    with pytest.raises(OSError):
        http.client.HTTPConnection(host, port, timeout=2).request("GET", "/")


def test_a_new_page_reloads_every_page_even_when_a_state_follows_at_once(server, ws_open):
    s = server
    s.publish(frame=1, theme="light")
    ws = ws_open(_ws_url(s))
    assert _recv_state(ws)["frame"] == 1
    s.set_page(lambda origin: ("<html>another</html>", {}))
    s.publish(frame=0, theme="light")  # latest-state-wins must not swallow the reload
    assert json.loads(ws.recv(timeout=5)) == {"type": "reload"}
    assert b"another" in _get(s, f"/?join={s.token}")[1]
