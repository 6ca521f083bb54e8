"""Screenshots of the class share's page on a phone (390x844 CSS pixels, 2 device pixels each) following the
presenter, in light and dark: the app offscreen shares its window, headless Chromium (Debian's, driven by
Playwright) opens the join link, and the presenter steps, selects a thread and opens a lesson's predict question.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/share_screenshots.py [--out /tmp/gpuviz-share-phone] [--scale 2]

Writes DIR/phone_{trace,question}_{light,dark}.png (the first screen) and DIR/phone_trace_light_full.png (the
whole page, scrolled). For looking at, not for comparing pixels: the tests check what they show
(tests/test_share_follow.py).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="/tmp/gpuviz-share-phone")
    ap.add_argument("--scale", type=float, default=2.0, help="device pixels per CSS pixel")
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    exe = os.environ.get("GPUVIZ_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        raise SystemExit("no chromium on this machine (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    from gpuviz.app import _application, default_trace
    from gpuviz.ui.lesson_player import play_lesson
    from gpuviz.ui.share import share_with_class, stop_share
    from gpuviz.ui.window import MainWindow

    app = _application(headless=True)
    w = MainWindow(default_trace(), source_label="screenshots")
    w.resize(1600, 900)
    w.show()
    for _ in range(3):
        app.processEvents()
    s = w.session
    ctl = share_with_class(w, dialog=False)

    def pump(seconds=0.3):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.01)

    def theme(pg, name):
        if ("dark" if s.theme.dark else "light") != name:
            w.toggle_theme()
        pump()
        pg.wait_for_function("(t) => document.documentElement.dataset.theme === t", arg=name)

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
        pg = b.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=a.scale, is_mobile=True,
                        has_touch=True)
        pg.goto(ctl.url)
        pg.wait_for_function("() => document.body.dataset.ready === '1' && document.body.dataset.share === 'following'")
        step = w.actions.qaction("playback.step_forward")
        for _ in range(40):
            step.trigger()
        block = int(s.frames.block[s.frame])
        s.selection.select_thread(block, 5)
        pump(0.5)
        pg.wait_for_function("(f) => document.body.dataset.frame === String(f)", arg=s.frame)
        for name in ("light", "dark"):
            theme(pg, name)
            pg.screenshot(path=str(out / f"phone_trace_{name}.png"))
            print(out / f"phone_trace_{name}.png")
        theme(pg, "light")
        pg.screenshot(path=str(out / "phone_trace_light_full.png"), full_page=True)

        # a lesson's predict question, as a phone answers it
        from gpuviz.lessons import builtin_lessons, load_lesson

        lc = play_lesson(w, load_lesson(builtin_lessons()["shared_tiling"]))
        pump(1.0)
        pg.wait_for_function("() => window.gpuvizPage && window.gpuvizPage.state.data.kind === 'lesson' && "
                             "document.body.dataset.ready === '1'", timeout=120000)
        end = time.monotonic() + 60
        while ctl._offsets is None and time.monotonic() < end:
            pump(0.1)
        while not lc.player.slide().question and time.monotonic() < end:
            lc.next()
            pump(0.1)
        pg.wait_for_selector("#share-answer:not([hidden])")
        pg.fill("#share-value", "2")
        pg.press("#share-value", "Enter")
        for name in ("light", "dark"):
            theme(pg, name)
            pg.screenshot(path=str(out / f"phone_question_{name}.png"))
            print(out / f"phone_question_{name}.png")
        b.close()
    stop_share(w)
    w.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
