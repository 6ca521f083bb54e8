"""Lessons: the file format's checks, the Qt-free player, and a shipped lesson played in the window."""

import pytest

from gpuviz.lessons import LessonError, LessonPlayer, builtin_lessons, load_lesson, parse_lesson

SHIPPED = ["simt_hierarchy", "shared_tiling", "bank_conflicts", "reduction_ladder", "host_device_flow",
           "fused_attention"]


def test_the_six_lessons_ship():
    assert set(SHIPPED) <= set(builtin_lessons())


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_lesson_plays_first_to_last_headless(name):
    lesson = load_lesson(name)
    player = LessonPlayer(lesson)
    slides = player.play_all()
    assert player.finished
    assert [s.scene_index for s in slides] == sorted(s.scene_index for s in slides)
    assert {s.scene_index for s in slides} == set(range(len(lesson.scenes)))
    for s in slides:
        assert "{" not in s.notes, s.notes  # every placeholder filled in
        if s.question and not s.answer:
            assert s.caption == ""  # predict first: the caption would give the answer away
        elif not s.question:
            assert s.caption
    # every question is asked, then answered
    asked = [s for s in slides if s.question]
    assert len(asked) == 2 * sum(len(sc.questions) for sc in lesson.scenes)


def test_answers_come_from_the_analyses():
    player = LessonPlayer(load_lesson("bank_conflicts"))
    answers = [s.answer for s in player.play_all() if s.answer]
    assert answers[0].startswith("32.")  # naive transpose: 32 sectors for a column write
    assert answers[1].startswith("32-way")
    assert answers[2].startswith("1 (no conflict)")
    loaded = player.load(1)
    assert loaded.metrics["bank_conflicts"] > 0 and player.load(2).metrics["bank_conflicts"] == 0


def test_fused_attention_compares_bytes_moved():
    player = LessonPlayer(load_lesson("fused_attention"))
    player.play_all()
    naive, fused = player.load(0).metrics, player.load(1).metrics
    assert fused["global_bytes"] < naive["global_bytes"] / 10
    notes = player.slide().notes
    from gpuviz.lessons.metrics import format_value
    assert format_value("global_bytes", naive["global_bytes"]) in notes


def _lesson(**scene):
    base = {"title": "T", "scenes": [{"title": "S", "kernel": "vector_add", "size": 100, **scene}]}
    return base


@pytest.mark.parametrize("scene, fragment", [
    ({"views": "grid"}, "scene 1 ('S'), field 'views'"),
    ({"layout": "spiral"}, "field 'layout': one of columns, rows, grid, focus"),
    ({"frames": ["start"]}, "field 'frames': two stops"),
    ({"size": -3}, "field 'size'"),
    ({"colour": "red"}, "unknown field(s) colour"),
    ({"notes": "moved {global_bites}"}, "unknown placeholder {global_bites}"),
    ({"questions": [{"at": "start", "ask": "?", "answer": "vibes"}]}, "question 1, field 'answer'"),
    ({"questions": [{"ask": "?", "answer": "sectors"}]}, "question 1: field 'at' is missing"),
])
def test_invalid_lessons_name_file_scene_and_field(tmp_path, scene, fragment):
    with pytest.raises(LessonError) as exc:
        parse_lesson(_lesson(**scene), path=tmp_path / "bad.toml")
    assert "bad.toml" in str(exc.value) and fragment in str(exc.value)


def test_unknown_view_and_bad_stop_are_reported(tmp_path):
    with pytest.raises(LessonError, match=r"field 'views': no view named 'heatmap'"):
        parse_lesson(_lesson(views=["heatmap"]), path=tmp_path / "v.toml", known_views=["grid", "memory"])
    lesson = parse_lesson(_lesson(stops=["first barrier"]), path=tmp_path / "s.toml")
    with pytest.raises(LessonError, match=r"s.toml, scene 1 \('S'\), field 'stops': .*no syncthreads"):
        LessonPlayer(lesson).start()
    bad = tmp_path / "broken.toml"
    bad.write_text("title = 'x'\n[[scenes]\n")
    with pytest.raises(LessonError, match="broken.toml: not valid TOML"):
        load_lesson(bad)
    with pytest.raises(LessonError, match="no shipped lesson of that name"):
        load_lesson("no_such_lesson")


def test_json_lesson_and_prev_crosses_scenes(tmp_path):
    import json

    p = tmp_path / "two.json"
    p.write_text(json.dumps({"title": "Two", "scenes": [
        {"title": "A", "kernel": "vector_add", "size": 64, "stops": ["first global load"]},
        {"title": "B", "kernel": "vector_add", "size": 64, "step": "block"}]}))
    player = LessonPlayer(load_lesson(p))
    player.start()
    assert [b.frame for b in player.current.beats] == [0, player.current.narrator.find("first global load")]
    player.next()
    player.next()
    assert player.scene_index == 1 and player.beat_index == 0
    player.prev()
    assert (player.scene_index, player.beat_index) == (0, 1)


def test_lesson_plays_in_the_window_with_presenter(qapp):
    from PySide6.QtCore import Qt

    from gpuviz.ui.lesson_player import play_lesson
    from gpuviz.ui.presenter import leave_presenter, presenter_of
    from gpuviz.ui.window import MainWindow

    window = MainWindow()
    window.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
    window.resize(1600, 900)
    window.show()
    try:
        lesson = load_lesson("bank_conflicts")
        ctl = play_lesson(window, lesson, present=True, theme="dark", size=(1920, 1080))
        p = presenter_of(window)
        seen = []
        while True:
            qapp.processEvents()
            scene = lesson.scenes[ctl.player.scene_index]
            assert window.session.trace.launch.kernel_name == scene.kernel
            assert window.session.frame == ctl.player.beat.frame
            visible = {v for v, d in window.docks.items() if d.isVisible()}
            assert visible == set(scene.views)
            slide = ctl.player.slide()
            if slide.question and not slide.answer:
                assert p.caption_bar.caption.text() == f"Predict: {slide.question}"
            else:
                assert p.caption_bar.caption.text() == slide.caption
            seen.append(ctl.player.scene_index)
            p.keys.trigger("next")  # what a clicker's PageDown does
            if ctl.player.finished:
                break
        assert sorted(set(seen)) == [0, 1, 2]
        p.keys.trigger("previous")
        assert ctl.player.scene_index == 2
        leave_presenter(window)
        assert presenter_of(window) is None and window.menuBar().isVisible()
        ctl.stop()
    finally:
        window.close()
        window.deleteLater()
        qapp.processEvents()


def test_a_predict_step_hides_its_answer_everywhere_until_revealed():
    """Finding 11: bank_conflicts' scene title said "32-way" before the question; custom_kernel's notes gave
    the byte counts before each question."""
    import re

    from gpuviz.lessons import LessonPlayer, builtin_lessons, load_lesson
    from gpuviz.lessons.player import HIDDEN

    checked = 0
    for name in ("bank_conflicts", "custom_kernel", "host_device_flow", "fused_attention"):
        slides = LessonPlayer(load_lesson(builtin_lessons()[name])).play_all(lambda s: None)
        for i, sl in enumerate(slides):
            if not sl.question or sl.answer:
                continue
            reveal = next(s for s in slides[i:] if s.question == sl.question and s.answer)
            shown = reveal.answer.split(". ")[0]  # "32-way", "8 bytes", "12.0 KB"
            if re.fullmatch(r"[\d.,]+", shown):
                continue  # a bare count: "32" may well stand in the notes for something else
            for text in (sl.scene_title, sl.notes, sl.caption):
                assert not re.search(r"(?<![\w.,])" + re.escape(shown) + r"(?!\w)", text), (name, shown, text)
            # before the question too: from the scene's first beat on
            before = [s for s in slides[:i] if s.scene_index == sl.scene_index]
            for s in before:
                assert shown not in s.scene_title and not re.search(r"(?<![\w.,])" + re.escape(shown) + r"(?!\w)", s.notes)
            # and after the reveal the title is whole again
            after = [s for s in slides[i:] if s.scene_index == sl.scene_index and s.answer]
            assert HIDDEN not in after[-1].scene_title or any(HIDDEN in s.scene_title for s in after[:-1])
            checked += 1
    assert checked >= 6
    bc = LessonPlayer(load_lesson(builtin_lessons()["bank_conflicts"])).play_all(lambda s: None)
    scene2 = [s for s in bc if s.scene_index == 1]
    assert "32-way" not in scene2[0].scene_title and "32-way" in scene2[-1].scene_title


def test_a_count_of_one_reads_in_the_singular():
    """Finding 23 (small): "1 blocks of 128 threads". A lesson written as "{n_blocks} blocks" reads "1 block" when
    the scene's launch has a single block, and keeps the plural otherwise."""
    text = "{n_threads} threads in {n_blocks} blocks of {threads_per_block}, {warps_per_block} warps each"
    one = parse_lesson(_lesson(size=100, notes=text))  # vector_add: one block of 256 threads
    notes = LessonPlayer(one).play_all()[0].notes
    assert notes == "256 threads in 1 block of 256, 8 warps each", notes
    many = parse_lesson(_lesson(size=1000, notes=text))
    assert "in 4 blocks of 256" in LessonPlayer(many).play_all()[0].notes


def test_occupancy_header_counts_one_block_in_the_singular(qapp):
    import os

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import numpy as np

    import gpuviz
    from gpuviz.ui.window import MainWindow
    from gpuviz.catalog import get_kernel

    spec = get_kernel("vector_add")
    args = spec.make_args(2048, np.random.default_rng(0))
    trace = gpuviz.capture(spec.kernel, (2, 1, 1), (1024, 1, 1), *args, backend="cpu")
    w = MainWindow(trace)
    try:
        view = w.views["occupancy"]
        view.device_box.setCurrentIndex(view.device_box.findData("T4"))  # 1,024 threads per SM: one such block
        header = view.header.text()
        assert "1 block × 32 warps = 32 of 32 warps" in header, header
    finally:
        w.close()
        w.deleteLater()


# ---- finding 12: a scene shows the views its text talks about -----------------------------------------------
@pytest.mark.parametrize("name", sorted(builtin_lessons()))
def test_every_shipped_scene_shows_the_views_its_text_talks_about(name):
    """Timings quoted with no timings view, sectors with no memory view, bank conflicts with no shared view: each a
    scene that tells a student to look at something that is not on screen."""
    from gpuviz.lessons.topics import missing_views

    lesson = load_lesson(name)
    problems = [f"scene {sc.index + 1}: {m}" for sc in lesson.scenes for m in missing_views(sc)]
    assert problems == []


def test_a_scene_quoting_timings_without_a_timings_view_is_refused(tmp_path):
    with pytest.raises(LessonError, match=r"field 'views': the scene talks about recorded timings \(\{timings\}\) "
                                          r"with no timings view"):
        parse_lesson(_lesson(views=["memory", "source"], notes="It took {timings}."), path=tmp_path / "t.toml")
    with pytest.raises(LessonError, match="bank conflicts"):
        parse_lesson(_lesson(views=["memory"], questions=[{"at": "start", "ask": "How many ways?",
                                                           "answer": "ways"}]), path=tmp_path / "w.toml")
    parse_lesson(_lesson(views=["timings", "source"], notes="It took {timings}."), path=tmp_path / "ok.toml")
    parse_lesson(_lesson(views=[], notes="It took {timings}."), path=tmp_path / "keep.toml")  # the window's own views


def test_a_timings_scene_captions_its_subject_not_a_warp():
    """custom_kernel's timing scenes end on the launch's last frame: the caption bar narrated 'Warp 7 finishes,
    the last of its block' beside a plot of H200 timings. A scene whose main view is the timings view captions
    its own title."""
    player = LessonPlayer(load_lesson("custom_kernel"))
    for slide in player.play_all():
        scene = player.lesson.scenes[slide.scene_index]
        if scene.views[0] == "timings":
            assert slide.caption == slide.scene_title and "Warp" not in slide.caption, slide.caption
            assert slide.kernel_note == ""
        elif not slide.question:
            assert slide.caption  # the other scenes still narrate their frames


def test_timings_subject_follows_the_quoted_set():
    from gpuviz.lessons.topics import timings_subject

    lesson = load_lesson("custom_kernel")
    assert timings_subject(lesson.scenes[4]) == ("gpu_timings.json", "cpu_vs_gpu")
    assert timings_subject(lesson.scenes[5]) == ("fusion_timings_h200.json", "cpu_vs_gpu")
    assert timings_subject(load_lesson("host_device_flow").scenes[0]) == ("", "host_flow")
    assert timings_subject(lesson.scenes[0]) is None
