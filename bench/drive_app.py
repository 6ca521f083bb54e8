"""Drive the real app as a person would, under a real X server, and fail on any traceback in its log.

    nice -n 10 python bench/drive_app.py --minutes 10 --out bench/results/drive_app.txt

What it does: starts Xvfb (1920x1080) and openbox, clones this repository's HEAD into a temporary folder (the
committed code, nothing else of the working tree), starts the app from that clone the way ``bash dev app``
does (``--dev`` runs ``bash dev app`` itself, which needs the clone's own venv and so a package index) with
``GPUVIZ_STRICT=1`` (an exception in a Qt callback is logged with its traceback and ends the app, see
``gpuviz.app.report_uncaught``), and then, round after round until the time is up, drives it with xdotool:

- every entry of every menu, opened with its mnemonic (Alt+F, Alt+P ...) and walked with the arrow keys: every
  action, every view's show/hide toggle, every lesson (clicked through with → to its end, then left), the
  GPU recordings dialog (the first recording opened), file dialogs (cancelled with Esc);
- every key of the registry that has no menu-only effect: stepping, play/pause, barriers, blocks, speed, loop,
  worst line, presenter mode F5 (with B to blank and → while blank), theme Ctrl+T, bigger/smaller text, F1,
  F11, Esc;
- window sizes 1280x720 and 1920x1080 (alternating each round);
- a grid of clicks over the whole window (blocks, lanes, memory cells, source lines, table rows, buttons).

Between actions it checks that the app is alive. At the end it quits the app through File > Quit and fails
(status 1) if the app died, did not quit, exited non-zero, or its log has a traceback, a CRITICAL or ERROR
record or a Python fatal error. The menus are read from the app's own registry (offscreen, before the run), so
the walk follows the menus as built. Screenshots of each round's first few steps go to ``--shots`` if given.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: what a failing log looks like
BAD_LOG = re.compile(r"Traceback \(most recent call last\)|Fatal Python error|\bCRITICAL\b|\bERROR\b|Segmentation fault"
                     r"|core dumped|Aborted")

#: menu entries the walk does not trigger: Quit ends the run (it is triggered last, on purpose)
SKIP_ENTRIES = {"Quit"}

#: keys a person presses (xdotool names), with a pause after each
KEYS = ["Right", "Right", "Left", "shift+Right", "shift+Left", "Down", "Up", "ctrl+Right", "ctrl+Left",
        "shift+Down", "shift+Up", "ctrl+Next", "ctrl+Prior", "End", "Home", "w", "plus", "minus", "l", "l",
        "space", "space", "ctrl+Down", "Escape", "ctrl+shift+Down", "Escape", "space",
        "F1", "Escape", "ctrl+t", "Right", "ctrl+t", "ctrl+plus", "ctrl+minus",
        "F5", "Right", "b", "Right", "b", "Left", "F1", "Escape", "ctrl+t", "ctrl+t", "F5",
        "F11", "Right", "F11"]

DUMP_MENUS = r"""
import json, os, sys
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from PySide6.QtWidgets import QApplication
app = QApplication(sys.argv[:1])
from gpuviz.ui.window import MainWindow
w = MainWindow()
menus = []
for top in w.menuBar().actions():
    m = top.menu()
    if m is None:
        continue
    items = [{"text": a.text().replace("&", ""), "enabled": a.isEnabled(), "menu": a.menu() is not None,
              "group": getattr(a, "data", lambda: None)() or ""}
             for a in m.actions() if not a.isSeparator() and a.isVisible()]
    menus.append({"title": top.text(), "items": items})
print(json.dumps(menus))
"""


class Driver:
    def __init__(self, display: str, log_path: Path, shots: Path | None):
        self.env = {**os.environ, "DISPLAY": display}
        self.log_path = log_path
        self.shots = shots
        self.proc: subprocess.Popen | None = None
        self.wid = ""
        self.steps = 0
        self.counts: dict[str, int] = {}
        self.shot_n = 0

    # ---- xdotool ---------------------------------------------------------------------------------------
    def xdo(self, *args, check=False) -> str:
        r = subprocess.run(["xdotool", *args], env=self.env, capture_output=True, text=True, timeout=30)
        if check and r.returncode:
            raise RuntimeError(f"xdotool {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout.strip()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ensure_alive(self, what: str) -> None:
        if not self.alive():
            raise AppDied(f"the app is gone (status {self.proc.returncode}) after: {what}")

    def focus(self) -> None:
        if self.wid:
            self.xdo("windowactivate", "--sync", self.wid)

    def key(self, name: str, pause: float = 0.35) -> None:
        self.focus()
        self.xdo("key", "--clearmodifiers", name)
        self.steps += 1
        self.counts["keys"] = self.counts.get("keys", 0) + 1
        time.sleep(pause)
        self.ensure_alive(f"key {name}")

    def click(self, x: int, y: int, pause: float = 0.25) -> None:
        self.xdo("mousemove", "--window", self.wid, str(x), str(y), "click", "1")
        self.steps += 1
        self.counts["clicks"] = self.counts.get("clicks", 0) + 1
        time.sleep(pause)
        self.ensure_alive(f"click at {x},{y}")

    def size(self) -> tuple[int, int]:
        out = self.xdo("getwindowgeometry", self.wid)
        m = re.search(r"Geometry: (\d+)x(\d+)", out)
        return (int(m.group(1)), int(m.group(2))) if m else (1280, 720)

    def resize(self, w: int, h: int) -> None:
        self.xdo("windowsize", "--sync", self.wid, str(w), str(h))
        self.xdo("windowmove", self.wid, "0", "0")
        self.counts["resizes"] = self.counts.get("resizes", 0) + 1
        time.sleep(1.0)
        self.ensure_alive(f"resize to {w}x{h}")

    def shot(self, label: str) -> None:
        if self.shots is None:
            return
        self.shot_n += 1
        name = self.shots / f"{self.shot_n:03d}_{re.sub(r'[^A-Za-z0-9]+', '_', label)[:50]}.png"
        subprocess.run(["import", "-window", "root", str(name)], env=self.env, capture_output=True, timeout=60)

    # ---- the app -----------------------------------------------------------------------------------------
    def start(self, cmd: list[str], cwd: Path, env: dict) -> None:
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, cwd=cwd, env={**self.env, **env}, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.time() + 600  # bash dev app may set up its venv first
        while time.time() < deadline:
            self.ensure_alive("start")
            out = self.xdo("search", "--onlyvisible", "--pid", str(self.proc.pid), "--name", "gpuviz")
            if not out:  # bash dev app execs gpuviz: the same pid; python -m gpuviz: also the same
                out = self.xdo("search", "--onlyvisible", "--name", "^gpuviz")
            if out:
                self.wid = out.splitlines()[-1]
                break
            time.sleep(1)
        if not self.wid:
            raise AppDied("no gpuviz window appeared within 10 minutes")
        time.sleep(3)
        self.resize(1280, 720)

    def quit(self) -> int | None:
        """File > Quit, as a person would; the exit status, or None if it did not quit."""
        if not self.alive():
            return self.proc.returncode
        self.focus()
        self.xdo("key", "--clearmodifiers", "ctrl+q")
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        if self.alive():
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    # ---- what a person does --------------------------------------------------------------------------------
    def menu_entry(self, menu_index: int, menu: dict, item_index: int) -> None:
        """Open menu ``menu`` with its mnemonic and trigger its ``item_index``-th entry (enabled entries only:
        the arrow keys skip disabled ones and separators)."""
        letter = menu["title"].split("&", 1)[1][0].lower() if "&" in menu["title"] else menu["title"][0].lower()
        self.focus()
        self.xdo("key", "--clearmodifiers", "Escape")  # no popup left open from a click
        time.sleep(0.2)
        self.xdo("key", "--clearmodifiers", f"alt+{letter}")
        time.sleep(0.5)
        for _ in range(item_index):
            self.xdo("key", "Down")
            time.sleep(0.05)
        self.xdo("key", "Return")
        self.steps += 1
        self.counts["menu entries"] = self.counts.get("menu entries", 0) + 1
        time.sleep(1.2)
        self.ensure_alive(f"menu {menu['title']} entry {item_index}")

    def after_entry(self, menu: dict, item: dict) -> None:
        """What a person does next: click through a lesson, take a recording, close a dialog."""
        title = menu["title"].replace("&", "")
        if title == "Lessons" and not item["text"].startswith("Leave"):
            self.counts["lessons"] = self.counts.get("lessons", 0) + 1
            time.sleep(3)  # the first scene is captured
            for _ in range(30):
                self.key("Right", pause=0.6)
            self.shot(f"lesson {item['text']}")
            return
        if item["text"].startswith("Open a GPU recording"):
            self.xdo("key", "Return")  # the first recording
            time.sleep(4)
            self.counts["recordings opened"] = self.counts.get("recordings opened", 0) + 1
            return
        if item["text"].endswith("…") or item["text"].endswith("..."):
            time.sleep(0.5)
            self.xdo("key", "Escape")  # a file dialog: cancelled
            time.sleep(0.5)
        if item["text"].startswith("Run capture"):
            time.sleep(6)  # a capture in the worker process
        if item["text"].startswith("Presenter") or item["text"].startswith("Full screen"):
            time.sleep(1)

    def walk_menus(self, menus: list[dict], deadline: float = float("inf")) -> None:
        for mi, menu in enumerate(menus):
            enabled = [it for it in menu["items"] if it["enabled"]]
            for ii, item in enumerate(enabled):
                if item["text"] in SKIP_ENTRIES:
                    continue
                if time.time() >= deadline:  # the run's time is up: stop at an entry, not after the whole walk
                    return
                self.menu_entry(mi, menu, ii)
                self.after_entry(menu, item)
            self.xdo("key", "Escape")
            self.shot(f"after menu {menu['title']}")

    def press_keys(self) -> None:
        for k in KEYS:
            self.key(k)
        self.xdo("key", "Escape")

    def click_grid(self, cols: int = 9, rows: int = 7) -> None:
        w, h = self.size()
        for r in range(rows):
            for c in range(cols):
                x = int((c + 0.5) * w / cols)
                y = int((r + 0.5) * h / rows)
                self.click(x, y)
                if (r * cols + c) % 8 == 7:
                    self.xdo("key", "Escape")  # a popup a click opened (a combo box, a menu)


class AppDied(RuntimeError):
    pass


def free_display() -> str:
    for n in range(90, 140):
        if not Path(f"/tmp/.X11-unix/X{n}").exists() and not Path(f"/tmp/.X{n}-lock").exists():
            return f":{n}"
    raise RuntimeError("no free X display number in :90..:139")


def read_menus(repo: Path, python: str) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(repo), "QT_QPA_PLATFORM": "offscreen"}
    r = subprocess.run([python, "-c", DUMP_MENUS], cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    if r.returncode:
        raise RuntimeError(f"could not read the menus: {r.stderr[-2000:]}")
    menus = json.loads(r.stdout.strip().splitlines()[-1])
    for m in menus:  # keep the mnemonic: it opens the menu
        m["title"] = m["title"]
    return menus


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="how long to drive the app (default 10)")
    ap.add_argument("--python", default=sys.executable, help="the Python that runs the app (default: this one)")
    ap.add_argument("--dev", action="store_true", help="start the clone with `bash dev app` (its own venv: needs pip)")
    ap.add_argument("--out", type=Path, help="write the summary here as well (the command first)")
    ap.add_argument("--shots", type=Path, help="folder for screenshots taken along the way")
    ap.add_argument("--keep-log", type=Path, help="copy the app's log here")
    args = ap.parse_args(argv)

    command = "nice -n 10 python bench/drive_app.py " + " ".join(argv if argv is not None else sys.argv[1:])
    for tool in ("Xvfb", "openbox", "xdotool", "git"):
        if shutil.which(tool) is None:
            print(f"drive_app: {tool} is not installed", file=sys.stderr)
            return 2
    if args.shots:
        args.shots.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="gpuviz_drive_"))
    clone = work / "gpuviz"
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "checkout", "--quiet", head], cwd=clone, check=True)
    display = free_display()
    xvfb = subprocess.Popen(["Xvfb", display, "-screen", "0", "1920x1080x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    time.sleep(2)
    wm = subprocess.Popen(["openbox"], env={**os.environ, "DISPLAY": display}, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, start_new_session=True)
    time.sleep(1)
    log_path = work / "app.log"
    driver = Driver(display, log_path, args.shots)
    problems: list[str] = []
    rounds = 0
    status = None
    t0 = time.time()
    try:
        menus = read_menus(clone, args.python)
        if args.dev:
            cmd, env = ["bash", "dev", "app"], {"GPUVIZ_STRICT": "1"}
        else:  # what bash dev app runs (`gpuviz` in the venv), from the clone's code
            cmd = [args.python, "-m", "gpuviz"]
            env = {"GPUVIZ_STRICT": "1", "PYTHONPATH": str(clone)}
        driver.start(cmd, clone, env)
        driver.shot("started")
        deadline = t0 + args.minutes * 60
        sizes = [(1280, 720), (1920, 1080)]
        while time.time() < deadline:
            w, h = sizes[rounds % 2]
            driver.resize(w, h)
            driver.shot(f"round {rounds + 1} at {w}x{h}")
            for part in (driver.press_keys, driver.click_grid, lambda: driver.walk_menus(menus, deadline)):
                if time.time() >= deadline:
                    break
                part()
            rounds += 1
        driver.shot("before quitting")
        status = driver.quit()
        if status is None:
            problems.append("File > Quit (Ctrl+Q) did not end the app within 30 s")
        elif status != 0:
            problems.append(f"the app exited with status {status}")
    except AppDied as exc:
        problems.append(str(exc))
    finally:
        driver.kill()
        for p in (wm, xvfb):
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        if getattr(driver, "log", None) is not None:
            driver.log.close()
    log = log_path.read_text(errors="replace") if log_path.exists() else ""
    bad = [ln for ln in log.splitlines() if BAD_LOG.search(ln)]
    if bad:
        problems.append(f"{len(bad)} bad line(s) in the app's log, the first: {bad[0]!r}")
    if args.keep_log:
        args.keep_log.write_text(log)
    elapsed = time.time() - t0
    lines = [
        f"# {command}",
        f"# {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, commit {head[:10]}, display {display} (Xvfb 1920x1080, openbox)",
        f"app command: {'bash dev app' if args.dev else args.python + ' -m gpuviz'} in a clone of HEAD, GPUVIZ_STRICT=1",
        f"driven for {elapsed / 60:.1f} minutes: {rounds} rounds (the last one cut at the time limit) of every menu entry ({sum(len(m['items']) for m in menus)} "
        f"entries in {len(menus)} menus), {len(KEYS)} keys and a 9x7 click grid, at 1280x720 and 1920x1080",
        "counts: " + ", ".join(f"{k} {v:,}" for k, v in sorted(driver.counts.items())),
        f"app exit status: {status}",
        f"log: {len(log.splitlines()):,} lines, {len(bad)} with a traceback, CRITICAL, ERROR or a fatal error",
    ]
    if bad:
        lines.append("first bad lines:")
        lines += ["  " + ln for ln in bad[:20]]
        idx = log.find("Traceback")
        if idx >= 0:
            lines.append("first traceback:")
            lines += ["  " + ln for ln in log[idx:idx + 4000].splitlines()[:60]]
    lines.append("RESULT: " + ("PASS" if not problems else "FAIL: " + "; ".join(problems)))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    shutil.rmtree(work, ignore_errors=True)
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
