"""Screenshots of exported pages in a headless browser, for the README and for looking at them.

    python -m gpuviz.export.html.screenshots [--out assets/screenshots] [--chromium /usr/bin/chromium]

Exports the default lesson (``shared_tiling``: the app's embedded default kernel, tiled matmul, is its
second scene) and photographs it at 1920x1080 and on a phone (390x844 upright, 844x390 sideways), light
and dark, at a beat that asks a question and at one that reveals it. Needs Playwright for Python and a
system chromium (the test extra and ``bash dev test`` bring both; no browser is downloaded).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from ...lessons import load_lesson
from . import export_html

SHOTS = (  # name, viewport, theme, lesson beats to click forward
    ("html_lesson_1920x1080", (1920, 1080), "light", 9),
    ("html_lesson_dark_1920x1080", (1920, 1080), "dark", 10),
    ("html_lesson_390x844", (390, 844), "light", 1),
    ("html_lesson_dark_390x844", (390, 844), "dark", 2),
    ("html_lesson_844x390", (844, 390), "light", 6),
)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="assets/screenshots")
    ap.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser"))
    ap.add_argument("--lesson", default="shared_tiling")
    args = ap.parse_args(argv)
    if not args.chromium:
        raise SystemExit("no chromium found: install it (apt-get install chromium) or pass --chromium PATH")
    from playwright.sync_api import sync_playwright

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        page_path = export_html(load_lesson(args.lesson), Path(tmp) / "lesson.html")
        print(f"{page_path.name}: {page_path.stat().st_size:,} bytes")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, args=["--no-sandbox", "--disable-gpu"])
            for name, (w, h), theme, clicks in SHOTS:
                page = browser.new_page(viewport={"width": w, "height": h})
                page.goto(page_path.resolve().as_uri())
                page.wait_for_function("() => document.body.dataset.ready === '1'", timeout=15000)
                if theme == "dark":
                    page.keyboard.press("t")
                for _ in range(clicks):
                    page.keyboard.press("ArrowRight")
                page.wait_for_timeout(150)
                page.screenshot(path=str(out / f"{name}.png"))
                print(out / f"{name}.png")
                page.close()
            browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
