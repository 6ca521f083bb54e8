"""The acceptance layer: the window used as a student and a teacher use it.

For every bundled kernel (captured small, with the CPU executor) and every GPU recording shipped in
``assets/recordings``: the real MainWindow, offscreen, every action of the registry triggered, a grid of
real mouse clicks in every view (blocks, lanes, memory and bank cells, source lines, table rows), stepping,
theme and presenter mode. Any exception raised in a Qt callback fails the test (pytest-qt captures them),
and so does any entry in a view's error list or any error the app logs.

Every kernel runs at 1280x720 and every recording at 1366x768; on most of them the sweep triggers only the
actions whose effect depends on the trace (the others run on a few kernels of every kind). The layout checks at
all three sizes are in test_acceptance_layout.py.
"""

from __future__ import annotations

import functools
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import pytest
from PySide6.QtCore import Qt

import gpuviz
from gpuviz.timing.recordings import list_recordings
from gpuviz.lessons.topics import is_timings_scene
from gpuviz.ui.presenter import leave_presenter, presenter_of
from gpuviz.ui.window import MainWindow
from gpuviz.catalog import all_kernels, get_kernel
from tests.acceptance_checks import click_grid, click_targets, settle

SIZES = [(1280, 720), (1366, 768), (1920, 1080)]
KERNELS = list(all_kernels())
RECORDINGS = {r.path.stem: r for r in list_recordings(kind="trace")}
#: kernels (1-d, 2-d, shared memory, races, divergence, attention) on which the sweep triggers every action;
#: on the others it triggers the actions whose effect depends on the trace (playback, theme, presenter, help)
EVERY_ACTION_ON = {"vector_add", "mandelbrot", "race_missing_sync", "matmul_tiled", "transpose_shared",
                   "attention_fused"}
#: CI's slice (the rest run with --all, marked full): the kernels above, three GPU recordings (2-d shared tiles, warp
#: shuffles, SM waves), three lessons from the menu (the default lesson, bank conflicts, the custom kernel's
#: timings) and every lesson's notes at a projector's 1280x720 (at 1920x1080 the custom kernel's, finding 12)
CI_RECORDINGS = {"matmul_tiled", "reduce_warp_shuffle", "mandelbrot_waves"}
CI_LESSONS = {"shared_tiling", "bank_conflicts", "custom_kernel"}


def beyond_ci(values, keep, ids=None):
    """``values`` as parameters, those not in ``keep`` marked ``full`` (run with ``--all``)."""
    return [pytest.param(v, marks=() if v in keep else pytest.mark.full, id=ids(v) if ids else None) for v in values]


#: actions a sweep does not trigger: run starts a worker process (its own test), quit closes the window (last)
NOT_SWEPT = {"file.run", "file.quit"}


@functools.lru_cache(maxsize=None)
def kernel_trace(name: str, size: int | None = None):
    spec = get_kernel(name)
    n = size or spec.small_size
    grid, block = spec.launch(n, spec.default_block)
    args = spec.make_args(n, np.random.default_rng(0))
    return gpuviz.capture(spec.kernel, grid, block, *args, backend="cpu")


def _front(w: MainWindow, vid: str) -> None:
    dock = w.docks[vid]
    dock.show()
    dock.raise_()
    settle(2)


def click_every_view(w: MainWindow, where: str, n: int = 3) -> int:
    clicks = 0
    for vid in list(w.views):
        _front(w, vid)
        for target in click_targets(w.views[vid]):
            clicks += click_grid(target, n)
            w.person_check(w, f"{where}, clicking {vid}")
    return clicks


#: what a short sweep triggers: the actions whose effect depends on the trace on screen
TRACE_ACTIONS = ("Playback",)
TRACE_ACTION_IDS = {"view.theme", "view.present", "help.shortcuts", "selection.clear"}


def sweep_actions(w: MainWindow, where: str, every: bool = True) -> list[str]:
    done = []
    for a in list(w.actions):
        if a.id in NOT_SWEPT or a.group == "Lessons":  # lessons: test_every_lesson_from_the_menu
            continue
        if not every and a.group not in TRACE_ACTIONS and a.id not in TRACE_ACTION_IDS:
            continue
        w.actions.trigger(a.id)
        settle(1)
        done.append(a.id)
        w.person_check(w, f"{where}, after {a.id}")
    if w.overlay.isVisible():
        w.overlay.hide()
    return done


def act_as_a_person(person, trace, label, size, every_action: bool = True):
    w = person(trace, size=size, label=label)
    w.person_check = person.check
    s = w.session
    where = f"{trace.launch.kernel_name} at {size[0]}x{size[1]}"
    person.check(w, f"{where}, opening")
    assert s.frames.n_frames > 0
    # step through: frames, steps, barriers, blocks, back again
    for aid in ("playback.step_forward",) * 5 + ("playback.next_step", "playback.next_barrier",
                                                  "playback.next_block", "playback.step_back",
                                                  "playback.prev_barrier", "playback.last", "playback.first"):
        w.actions.trigger(aid)
        settle(1)
    person.check(w, f"{where}, stepping")
    s.set_frame(s.frames.n_frames // 2)
    settle()
    assert click_every_view(w, where) > 0
    done = sweep_actions(w, where, every_action)
    assert "view.present" in done and "view.theme" in done
    # the sweep toggled presenter mode on (F5) and the theme; go round the views again from there
    if presenter_of(w) is None:
        w.actions.trigger("view.present")
        settle()
    assert presenter_of(w) is not None
    for key in (Qt.Key.Key_Right, Qt.Key.Key_Right, Qt.Key.Key_B, Qt.Key.Key_Right, Qt.Key.Key_Left):
        from PySide6.QtTest import QTest

        QTest.keyClick(w, key)
        settle(1)
    if every_action:  # the click rounds in presenter mode and at the last frame: on the full sweeps
        click_every_view(w, f"{where}, presenting", n=2)
    w.actions.trigger("view.present")
    settle()
    assert presenter_of(w) is None
    s.set_frame(s.frames.n_frames - 1)
    settle()
    if every_action:
        click_every_view(w, f"{where}, last frame", n=2)
    w.actions.trigger("file.quit")
    settle()
    assert not w.isVisible()
    person.check(w, f"{where}, quitting")


@pytest.mark.parametrize("name", beyond_ci(KERNELS, EVERY_ACTION_ON))
def test_every_bundled_kernel_survives_a_person(person, name):
    act_as_a_person(person, kernel_trace(name), f"bundled {name}", SIZES[0], every_action=name in EVERY_ACTION_ON)


@pytest.mark.parametrize("name", beyond_ci(sorted(RECORDINGS), CI_RECORDINGS))
def test_every_gpu_recording_survives_a_person(person, name):
    rec = RECORDINGS[name]
    traces = rec.load()
    assert traces
    act_as_a_person(person, traces[0], rec.label, SIZES[1], every_action=False)


def test_recordings_are_all_there():
    shipped = {p.stem for p in (RECORDINGS and next(iter(RECORDINGS.values())).path.parent or ".").glob("*.gpuviz")}
    assert shipped and shipped == set(RECORDINGS)


# ---- lessons from the Lessons menu --------------------------------------------------------------------------
LESSONS = sorted(MainWindow._lesson_titles())


@pytest.mark.parametrize("name", beyond_ci(LESSONS, CI_LESSONS))
def test_every_lesson_from_the_menu(person, name):
    """Each shipped lesson started from the Lessons menu, clicked through to its end with the clicker key,
    in presenter mode at 1280x720: no error anywhere, every scene shows the views it names."""
    from PySide6.QtTest import QTest

    from gpuviz.ui.presenter import enter_presenter

    w = person(kernel_trace("vector_add"), size=SIZES[0])
    w.person_check = person.check
    enter_presenter(w, theme="dark", size=SIZES[0], fullscreen=False)
    menus = {a.text().replace("&", ""): a.menu() for a in w.menuBar().actions() if a.menu() is not None}
    assert w.actions.qaction(f"lesson.{name}") in menus["Lessons"].actions()
    w.actions.trigger(f"lesson.{name}")
    settle()
    ctl = w.lesson
    assert ctl is not None and ctl.errors == []
    seen_scenes = set()
    for _ in range(200):
        settle(1)
        scene = ctl.player.scene_index
        if scene not in seen_scenes:
            seen_scenes.add(scene)
            views = ctl.player.current.scene.views
            hidden = [v for v in views if not w.docks[v].isVisible()]
            assert not hidden, f"{name} scene {scene + 1}: views {hidden} not shown"
            check_scene_shows_what_it_talks_about(w, ctl, f"{name} scene {scene + 1}")
        if is_timings_scene(ctl.player.current.scene):  # the caption bar: the scene's subject, not some warp
            caption = presenter_of(w).caption_bar.caption.text()
            slide = ctl.player.slide()
            assert caption in (ctl.player.current.scene.title, f"Predict: {slide.question}"), caption
        person.check(w, f"lesson {name}, scene {scene + 1}")
        if ctl.player.finished:
            break
        QTest.keyClick(w, Qt.Key.Key_Right)
    assert ctl.player.finished and len(seen_scenes) == len(ctl.lesson.scenes)
    w.actions.trigger("lesson.stop")
    settle()
    assert w.lesson is None
    person.check(w, f"lesson {name}, leaving")


def check_scene_shows_what_it_talks_about(w: MainWindow, ctl, where: str) -> None:
    """Finding 12, for every scene of every shipped lesson: the views its text talks about are on screen, and a
    timings view shows the timings the notes quote (that set and plot, with its series drawn, of the operation
    on screen)."""
    from gpuviz.lessons.topics import missing_views, timings_subject

    from PySide6.QtWidgets import QDockWidget, QTabBar

    scene = ctl.player.current.scene
    assert missing_views(scene) == [], f"{where}: {missing_views(scene)}"
    docks = [d.geometry() for d in w.findChildren(QDockWidget) if d.isVisible() and not d.isFloating()]
    floating_tabs = [bar.tabText(0) for bar in w.findChildren(QTabBar) if bar.parent() is w and bar.isVisible()
                     and any(d.intersected(bar.geometry()).height() > 4 and d.intersected(bar.geometry()).width() > 4
                             for d in docks)]
    assert not floating_tabs, f"{where}: tab bars of hidden docks over the views: {floating_tabs}"
    subject = timings_subject(scene)
    if subject is not None and "timings" in scene.views:
        view = w.views["timings"]
        file_name, kind = view.showing()
        assert kind == subject[1] and (file_name == subject[0] or not subject[0]), (where, view.showing(), subject)
        assert view.current, f"{where}: the timings view draws nothing"
        assert ", not of " not in view.label.text() and "not of " not in view.label.text(), view.label.text()


def lesson_panel_overflow(ctl) -> int:
    """How many pixels of the lesson panel's text lie below its visible area (0: it all shows)."""
    from PySide6.QtWidgets import QScrollArea

    area = ctl.panel.findChild(QScrollArea)
    return max(0, ctl.panel.label.height() - area.viewport().height())


def step_through_fitting(ctl, label: str = "") -> None:
    """Step the lesson to its end, asserting at every step that its whole text shows without scrolling."""
    for _ in range(200):
        settle(1)
        over = lesson_panel_overflow(ctl)
        assert over == 0, (f"{label}scene {ctl.player.scene_index + 1} step {ctl.player.beat_index + 1}: "
                           f"{over} px of the note below the panel")
        if not ctl.next():
            break
    assert ctl.player.finished


@pytest.mark.parametrize("name, size", [
    pytest.param(name, size, id=f"{name}-{size[0]}x{size[1]}",
                 marks=() if size == SIZES[0] or name == "custom_kernel" else pytest.mark.full)
    for name in LESSONS for size in (SIZES[0], SIZES[2])])
def test_every_lesson_note_fits_its_panel_presenting(person, name, size):
    """Finding 12: custom_kernel's timing scene had a note several screens long. In presenter mode at 1920x1080
    and at a projector's 1280x720 every step of every shipped lesson shows its whole text (title, notes, question,
    answer) without scrolling. At 1280x720 the notes of 17 of the 20 scenes scrolled: the panel had 23% of the
    width (292 px) at the text size of 1920x1080, and the caption bar below took 255 px for 150 px of text."""
    from gpuviz.ui.presenter import enter_presenter

    w = person(kernel_trace("vector_add"), size=size)
    enter_presenter(w, theme="dark", size=size, fullscreen=False)
    w.actions.trigger(f"lesson.{name}")
    settle()
    ctl = w.lesson
    step_through_fitting(ctl, f"{name} ")


def test_a_lesson_started_at_the_desk_fits_its_panel_after_f5(person):
    """F5 while a lesson plays at 1280x720: the lesson panel kept its desk width (292 px) and custom_kernel's notes
    scrolled by 500 px; it gets the presenter's width as presenter mode starts."""
    from gpuviz.ui.presenter import enter_presenter

    w = person(kernel_trace("vector_add"), size=SIZES[0])
    w.actions.trigger("lesson.custom_kernel")
    settle()
    ctl = w.lesson
    enter_presenter(w, theme="dark", size=SIZES[0], fullscreen=False)
    step_through_fitting(ctl)
    leave_presenter(w)
    settle()
    assert ctl.dock.titleBarWidget() is None  # the desk's "Lesson" title bar back
    person.check(w, "lesson, then F5")


def test_a_lesson_outlives_leaving_presenter_mode(person):
    """A lesson started while presenting, presenter mode left (Esc / F5), then the next lesson from the menu:
    the first lesson's keys are released without touching the presenter's deleted actions (bench/drive_app.py
    found 'Internal C++ object (QAction) already deleted' here), and → still steps the lesson in between."""
    from PySide6.QtTest import QTest

    from gpuviz.ui.presenter import enter_presenter

    w = person(kernel_trace("vector_add"), size=SIZES[0])
    enter_presenter(w, theme="dark", size=SIZES[0], fullscreen=False)
    w.actions.trigger("lesson.simt_hierarchy")
    settle()
    first = w.lesson
    leave_presenter(w)
    settle()
    before = (first.player.scene_index, first.player.beat_index)
    QTest.keyClick(w, Qt.Key.Key_Right)
    settle()
    assert (first.player.scene_index, first.player.beat_index) != before, "→ no longer steps the lesson once presenter mode is left"
    w.actions.trigger("lesson.host_device_flow")
    settle()
    assert w.lesson is not None and w.lesson is not first and w.lesson.lesson.name == "host_device_flow"
    w.actions.trigger("lesson.stop")
    settle()
    assert w.lesson is None
    person.check(w, "lessons around presenter mode")


def test_a_timings_scene_at_the_desk_captions_its_subject_not_the_last_warp(person):
    """Finding 12 without presenter mode: the window's own caption line narrated 'Warp 7 finishes, the last of its
    block' under custom_kernel's H200 timings plot."""
    w = person(kernel_trace("vector_add"), size=SIZES[2])
    w.actions.trigger("lesson.custom_kernel")
    settle()
    ctl = w.lesson
    ctl.player.goto_scene(5)
    settle()
    scene = ctl.player.current.scene
    assert scene.views[0] == "timings"
    assert w.caption_text.text() == ctl.player.slide().caption == scene.title, w.caption_text.text()
    ctl.player.goto_scene(0)
    settle()
    assert "Warp" in w.caption_text.text() or w.caption_text.text() == "", w.caption_text.text()
    w.actions.trigger("lesson.stop")
    settle()
    person.check(w, "timings scene at the desk")
