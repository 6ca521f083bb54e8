"""The class share, continued (issue 26): pages follow the presenter's selection (the block or thread selected in
the window) as well as the frame, the window's toolbar has a Share button (File ▸ Share with the class…), and a
phone-sized page (390x844) following the presenter fits its screen, in light and dark: nothing sticks out
sideways (the kernel source wraps), and a predict question is asked once."""

from __future__ import annotations

import contextlib
import json
import time

import pytest
from websockets.sync.client import connect

from gpuviz.share import ShareServer


def _page(ws_origin):
    return f"<html><body>page for {ws_origin}</body></html>", {}


def test_the_state_carries_the_presenters_selection():
    s = ShareServer().start(_page)
    try:
        with connect(f"ws://{s.host}:{s.port}/ws?join={s.token}", open_timeout=5) as ws:
            got = []
            for sel in ((3, 17), (2, None), None):
                s.publish(frame=4, theme="light", selection=sel)
                msg = json.loads(ws.recv(timeout=5))
                while msg["seq"] < s._seq:  # latest-state-wins may skip one; the last is always sent
                    msg = json.loads(ws.recv(timeout=5))
                got.append(msg["selection"])
        assert got == [{"block": 3, "thread": 17}, {"block": 2, "thread": None}, None]
    finally:
        s.stop()


def test_fifty_pages_get_each_step_in_order_and_the_last_of_a_burst():
    """States go straight into the sockets of pages that take them at once (encoded once for all): each page still
    gets every step of a presenter stepping, in order, and of a burst the latest, in order."""
    s = ShareServer().start(_page)
    try:
        with contextlib.ExitStack() as stack:
            pages = [stack.enter_context(connect(f"ws://{s.host}:{s.port}/ws?join={s.token}", open_timeout=10))
                     for _ in range(50)]
            end = time.monotonic() + 10
            while s.n_clients < 50:
                time.sleep(0.01)
                assert time.monotonic() < end
            for f in range(20):
                s.publish(frame=f, theme="light")
                assert [json.loads(ws.recv(timeout=5))["frame"] for ws in pages] == [f] * 50
            for f in range(20, 520):
                s.publish(frame=f, theme="dark")
            for ws in pages:
                got = []
                while not got or got[-1] != 519:
                    got.append(json.loads(ws.recv(timeout=5))["frame"])
                assert got == sorted(set(got)) and got[0] >= 20
    finally:
        s.stop()


@pytest.fixture(scope="module")
def chromium():
    from tests.test_export_html_browser import chromium_and_playwright

    exe, sync_playwright = chromium_and_playwright()
    if exe is None or sync_playwright is None:
        pytest.skip("no chromium or playwright here")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def _fits_its_screen(pg) -> list[str]:
    """What of the page sticks out past its viewport's width (a phone scrolls down, never sideways)."""
    return pg.evaluate("""() => {
        const W = document.documentElement.clientWidth, out = [];
        if (document.scrollingElement.scrollWidth > W + 1) out.push(`the page is ${document.scrollingElement.scrollWidth} px wide`);
        for (const id of ["share-badge", "frame-title", "caption", "transport", "follow"]) {
            const el = document.getElementById(id);
            if (!el || el.hidden) continue;
            const r = el.getBoundingClientRect();
            if (r.width && (r.left < -1 || r.right > W + 1)) out.push(`#${id} spans ${r.left}..${r.right} of ${W}`);
        }
        const src = document.getElementById("source");
        if (src && src.scrollWidth > src.clientWidth + 1) out.push("the kernel source scrolls sideways");
        return out;
    }""")


@pytest.mark.slow
def test_a_phone_page_follows_the_presenters_selection_from_the_toolbars_share(make_window, qtbot, chromium):
    from PySide6.QtWidgets import QToolButton

    w = make_window()
    s = w.session
    # the toolbar's Share button is File ▸ Share with the class… (one action)
    share = w.actions.qaction("file.share")
    assert share in w.transport.actions() and share.iconText() == "Share"
    button = next(b for b in w.transport.findChildren(QToolButton) if b.defaultAction() is share)
    assert button.isVisible() and button.text() == "Share"
    button.click()
    ctl = w._gpuviz_share
    assert ctl is not None and ctl.server.running and w._gpuviz_share_dialog.isVisible()

    errors = []
    pg = chromium.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True,
                           has_touch=True)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    try:
        pg.goto(ctl.url)
        pg.wait_for_function("() => document.body.dataset.ready === '1' && document.body.dataset.share === 'following'")
        qtbot.waitUntil(lambda: ctl.server.n_clients == 1)
        for _ in range(5):
            w.actions.qaction("playback.step_forward").trigger()
        pg.wait_for_function("(f) => document.body.dataset.frame === String(f)", arg=s.frame)

        def page_selection():
            return pg.evaluate("() => { const S = window.gpuvizPage.state; return [S.followed, S.picked]; }")

        # a thread selected in the window: the page follows it too (its lane marked, the follow line shown)
        block = int(pg.evaluate(
            "() => { const S = window.gpuvizPage.state; return S.scene.frames.block[S.frame - S.scene.first]; }"))
        s.selection.select_thread(block, 5)
        pg.wait_for_function("() => window.gpuvizPage.state.followed !== null")
        assert page_selection() == [{"block": block, "thread": 5}, None]
        assert pg.is_visible("#follow") and "Following thread" in pg.inner_text("#follow")
        assert pg.eval_on_selector_all(".lane.followed", "els => els.length") == 1
        # another block alone: outlined, no thread followed
        other = (block + 1) % s.trace.launch.n_blocks
        s.selection.select_block(other)
        pg.wait_for_function("(b) => window.gpuvizPage.state.picked === b", arg=other)
        assert page_selection() == [None, other] and pg.is_hidden("#follow")
        # stepping on keeps the selection; clearing it (Esc in the window) clears the page's
        w.actions.qaction("playback.step_forward").trigger()
        pg.wait_for_function("(f) => document.body.dataset.frame === String(f)", arg=s.frame)
        assert page_selection() == [None, other]
        s.selection.clear()
        pg.wait_for_function("() => window.gpuvizPage.state.picked === null")
        assert page_selection() == [None, None]
        # a page that went free keeps its own selection; back with F it takes the presenter's again
        s.selection.select_thread(block, 7)
        pg.wait_for_function("() => window.gpuvizPage.state.followed && window.gpuvizPage.state.followed.thread === 7")
        pg.keyboard.press("f")
        assert pg.evaluate("() => document.body.dataset.share") == "free"
        pg.keyboard.press("Escape")  # the page stops following the thread on its own
        s.selection.select_thread(block, 9)
        qtbot.wait(300)
        assert page_selection() == [None, None]
        pg.keyboard.press("f")
        pg.wait_for_function("() => window.gpuvizPage.state.followed && window.gpuvizPage.state.followed.thread === 9")

        # the phone's screen, light and dark: nothing sticks out sideways
        for _ in ("light", "dark"):
            assert _fits_its_screen(pg) == [], pg.evaluate("() => document.documentElement.dataset.theme")
            want = "light" if s.theme.dark else "dark"
            w.toggle_theme()
            pg.wait_for_function("(t) => document.documentElement.dataset.theme === t", arg=want)

        # a lesson's predict question on the phone: asked once, in the answer box at the top (not again below)
        from gpuviz.lessons import LessonPlayer
        from gpuviz.ui.lesson_player import play_lesson
        from tests.test_share import QUESTION, _lesson

        lesson, trace = _lesson()
        lc = play_lesson(w, lesson, player=LessonPlayer(lesson, loader=lambda sc: (trace, None)))
        pg.wait_for_function("() => window.gpuvizPage && window.gpuvizPage.state.data.kind === 'lesson' && "
                             "document.body.dataset.ready === '1'", timeout=20000)
        qtbot.waitUntil(lambda: ctl._offsets is not None, timeout=10000)
        lc.next()
        assert lc.player.slide().question == QUESTION
        pg.wait_for_selector("#share-answer:not([hidden])")
        assert pg.is_visible("#share-ask") and pg.is_hidden("#question-box")
        assert _fits_its_screen(pg) == []
        lc.next()  # the reveal: the lesson panel gives the answer
        pg.wait_for_function("() => document.getElementById('answer-text').textContent.length > 0")
        assert pg.is_visible("#answer-text") and pg.is_hidden("#share-answer")
        assert errors == []
    finally:
        pg.close()
        from gpuviz.ui.share import stop_share

        stop_share(w)
