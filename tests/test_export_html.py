"""The exported HTML page without a browser: one file, nothing fetched, the model's words inside, its size
limit, the command line, the package data, and File ▸ Export in the window."""

from __future__ import annotations

import base64
import fnmatch
import gzip
import json
import re
import tomllib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from gpuviz.export.html import (DEFAULT_MAX_BYTES, HERE, PageTooBig, export_html, kernel_notes, lesson_page_data,
                                page_html, trace_page_data)
from gpuviz.model.frames import Frames, LaneState
from gpuviz.model.narration import Narrator
from gpuviz.model.prepared import prepare
from gpuviz.model.tracefile import save_traces

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def mm():
    from gpuviz.app import default_trace

    return default_trace()


def _data_of(page_text: str) -> dict:
    m = re.search(r'<script id="gpuviz-data" type="application/octet-stream">([^<]*)</script>', page_text)
    assert m, "the page carries its data"
    return json.loads(gzip.decompress(base64.b64decode(m.group(1))))


class _Refs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs, self.tags = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for k, v in attrs:
            if k in ("src", "href", "action", "srcset", "poster", "data") and v:
                self.refs.append((tag, k, v))


def test_one_file_that_fetches_nothing(mm, tmp_path):
    out = export_html(mm, tmp_path / "mm.html")
    text = out.read_text(encoding="utf-8")
    p = _Refs()
    p.feed(text)
    assert p.refs == []  # no script, style sheet, image or link to load
    assert "link" not in p.tags and "iframe" not in p.tags
    assert "default-src 'none'" in text  # and the browser is told to refuse any request
    for lic in ("prismjs.LICENSE", "d3-scale-chromatic.LICENSE", "d3-color.LICENSE", "d3-interpolate.LICENSE"):
        first = (HERE / "vendor" / lic).read_text().strip().splitlines()[0]
        assert first in text, lic  # each vendored library travels with its licence


def test_the_pages_words_and_states_are_the_models(mm, tmp_path):
    frames = Frames(mm)
    narrator = Narrator.of_frames(frames, notes=kernel_notes(mm))
    data = _data_of(export_html(mm, tmp_path / "mm.html").read_text(encoding="utf-8"))
    assert data["kind"] == "trace" and len(data["scenes"]) == 1
    sc = data["scenes"][0]
    n = frames.n_frames
    assert (sc["first"], sc["last"], sc["n_frames_total"]) == (0, n - 1, n) and sc["left_out"] == ""
    F = sc["frames"]
    assert F["title"] == [frames.describe(f) for f in range(n)]
    assert F["caption"] == [narrator.text(f) for f in range(n)]
    assert any(". " in c for c in F["caption"]) or not kernel_notes(mm)  # the bundled kernel's notes, as in the window
    for f in (0, 47, 300, n - 1):
        want = frames.lane_states(int(frames.block[f]), f)
        assert [int(c) for c in F["lane_states"][f]] == want.tolist()
        assert [int(c) for c in F["block_states"][f]] == frames.block_states(f).tolist()
        assert F["lines"][f] == frames.lines_at(f).tolist()
        ev = sc["events"]
        lo, hi = ev["offsets"][f], ev["offsets"][f + 1]
        assert ev["thread"][lo:hi] == mm.thread[frames.events(f)].tolist()
        assert ev["index"][lo:hi] == mm.index[frames.events(f)].tolist()
    assert sc["barriers"] == frames.barrier_complete_frames.tolist()
    g = next(f for f in range(n) if "sectors" in narrator.facts(f))
    assert F["facts"][g]["sectors"] == narrator.facts(g)["sectors"]
    s = next(f for f in range(n) if "ways" in narrator.facts(f))
    assert F["facts"][s]["ways"] == narrator.facts(s)["ways"]
    assert LaneState.ACTIVE.label in sc["launch"]["lane_labels"]


def test_a_cut_page_holds_its_range_and_says_what_it_left_out(mm):
    frames = prepare(mm).frames
    data = trace_page_data(prepare(mm), "100:160")
    sc = data["scenes"][0]
    assert (sc["first"], sc["last"]) == (100, 159) and len(sc["frames"]["title"]) == 60
    assert sc["frames"]["title"][0] == frames.describe(100) and sc["frames"]["title"][-1] == frames.describe(159)
    # numbered as the window numbers frames: index 100 is frame 101
    assert "frames 101–160 of" in sc["left_out"]
    assert "frames 1–100 " in sc["left_out"] and f"frames 161–{frames.n_frames:,}" in sc["left_out"]
    assert f"{int(frames.offsets[100]):,} events" in sc["left_out"]
    assert sc["events"]["offsets"][-1] == int(frames.offsets[160] - frames.offsets[100])


def test_too_big_is_refused_with_a_range_that_fits(mm, tmp_path):
    # a limit some frames above the page's fixed part (its code and styles: 99.6 KB, then 103.3 KB once the page fit a
    # 1280x720 projector), under the whole trace's page
    limit = len(page_html(trace_page_data(prepare(mm), (0, 1))).encode("utf-8")) + 4_000
    with pytest.raises(PageTooBig, match=re.escape(f"over the {limit / 1e6:.2f} MB limit") + r".*--frames 1:\d+"):
        export_html(mm, tmp_path / "big.html", max_bytes=limit)
    assert not (tmp_path / "big.html").exists()
    msg = None
    try:
        export_html(mm, tmp_path / "big.html", max_bytes=limit)
    except PageTooBig as e:
        msg = str(e)
    fit = re.search(r"--frames 1:(\d+)", msg).group(1)  # frames 1..fit as the window numbers them
    assert 1 < int(fit) < Frames(mm).n_frames
    out = export_html(mm, tmp_path / "fit.html", frames=f"0:{fit}", max_bytes=limit)
    assert out.stat().st_size <= limit


def test_a_lesson_page_has_every_scene_and_beat_in_order(tmp_path):
    from gpuviz.lessons import LessonPlayer, load_lesson

    lesson = load_lesson("bank_conflicts")
    player = LessonPlayer(lesson)
    slides = player.play_all()
    data = lesson_page_data(lesson)
    assert data["kind"] == "lesson" and [s["title"] for s in data["scenes"]] == [s.title for s in lesson.scenes]
    assert [(b["scene"], b["frame"], b["question"], b["answer"]) for b in data["beats"]] == [
        (s.scene_index, s.frame, s.question, s.answer) for s in slides]
    asked = [b for b in data["beats"] if b["question"] and not b["revealed"]]
    assert asked and all(b["answer"] == "" and b["caption"] == "" for b in asked)
    for i, sc in enumerate(data["scenes"]):
        ls = player.load(i)
        assert (sc["first"], sc["last"]) == (ls.first, ls.last)
        assert sc["frames"]["title"] == [ls.frames.describe(f) for f in range(ls.first, ls.last + 1)]
    with pytest.raises(ValueError, match="--frames is for a trace"):
        export_html(lesson, tmp_path / "x.html", frames="0:10")


def test_every_shipped_lesson_fits_the_default_limit(tmp_path):
    from gpuviz.lessons import builtin_lessons, load_lesson

    sizes = {}
    for name in builtin_lessons():
        sizes[name] = export_html(load_lesson(name), tmp_path / f"{name}.html").stat().st_size
    assert all(0 < s <= DEFAULT_MAX_BYTES for s in sizes.values()), sizes


def test_command_line_exports_a_lesson_a_kernel_and_a_trace_file(mm, tmp_path, capsys):
    from gpuviz.cli import main

    assert main(["export", "shared_tiling", "--format", "html", "-o", str(tmp_path / "lesson.html")]) == 0
    said = capsys.readouterr().out  # the page's size and what it holds, said only once it reopened
    assert re.search(r"lesson\.html \([\d.]+ MB: a page of 2 scene\(s\), [\d,]+ frame\(s\)\)", said), said
    data = _data_of((tmp_path / "lesson.html").read_text(encoding="utf-8"))
    assert data["kind"] == "lesson" and data["title"].startswith("Shared-memory tiling")
    save_traces(tmp_path / "mm.gpuviz", [mm])
    assert main(["export", str(tmp_path / "mm.gpuviz"), "--format", "html", "--frames", "10:20", "--theme", "dark",
                 "-o", str(tmp_path / "mm.html")]) == 0
    text = (tmp_path / "mm.html").read_text(encoding="utf-8")
    sc = _data_of(text)["scenes"][0]  # frames 10..20 as the window numbers them: indices 9..19
    assert 'data-theme="dark"' in text and (sc["first"], sc["last"]) == (9, 19)
    assert main(["export", "vector_add", "--format", "html", "-o", str(tmp_path / "va.html")]) == 0
    assert _data_of((tmp_path / "va.html").read_text(encoding="utf-8"))["scenes"][0]["launch"]["kernel"] == "vector_add"
    capsys.readouterr()
    # a limit that the page's fixed part (its code, styles and libraries: ~120 KB) fits, but not all 2,528 frames
    assert main(["export", str(tmp_path / "mm.gpuviz"), "--format", "html", "--max-mb", "0.14",
                 "-o", str(tmp_path / "no.html")]) == 1
    assert "--frames" in capsys.readouterr().err and not (tmp_path / "no.html").exists()


def test_package_data_ships_the_pages_code(tmp_path):
    """Every file of gpuviz/export/html that the page needs is matched by pyproject's package-data."""
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = cfg["tool"]["setuptools"]["package-data"]["gpuviz"]
    pkg = ROOT / "gpuviz"
    needed = [p for p in HERE.rglob("*") if p.is_file() and p.suffix != ".py" and "__pycache__" not in p.parts]
    assert {p.name for p in needed} >= {"page.html", "page.js", "page.css", "prism-core.min.js", "prismjs.LICENSE"}
    for p in needed:
        rel = p.relative_to(pkg).as_posix()
        assert any(fnmatch.fnmatch(rel, pat) for pat in patterns), rel
    test_extra = cfg["project"]["optional-dependencies"]["test"]
    assert any(d.startswith("playwright") for d in test_extra)


def test_the_window_exports_its_launch(qtbot, tmp_path):
    import os

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from gpuviz.ui.window import MainWindow
    from tests.ui_traces import matmul_tiled_trace

    w = MainWindow(matmul_tiled_trace(16, 8))
    qtbot.addWidget(w)
    assert "file.export_html" in w.actions and w.actions["file.export_html"].group == "File"
    from gpuviz.ui.export_html import export_html_dialog

    job = export_html_dialog(w, str(tmp_path / "w.html"))
    qtbot.waitUntil(lambda: job.isFinished() and job.out is not None or job.error != "", timeout=20000)
    assert job.error == "" and job.out.exists()
    data = _data_of(job.out.read_text(encoding="utf-8"))
    assert data["scenes"][0]["frames"]["title"] == [w.session.frames.describe(f) for f in range(w.session.frames.n_frames)]
    qtbot.waitUntil(lambda: "saved" in w.statusBar().currentMessage(), timeout=5000)
    # too big for its limit: the job says so (the window then asks for a range)
    from gpuviz.ui.export_html import HtmlExportJob

    small = HtmlExportJob(w.session.prepared, None, str(tmp_path / "x.html"), None, "light", max_bytes=50_000)
    small.run()  # on this thread: the job's own work
    assert small.too_big and "over the 0.05 MB limit" in small.error
    assert not (tmp_path / "x.html").exists()
    w.close()
