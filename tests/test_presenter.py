"""Presenter mode: projector text sizes at 1920x1080, clicker keys, blank screen, scale, and leaving."""

import numpy as np
import pytest

import gpuviz
from gpuviz.model.narration import Narrator
from gpuviz.ui.presenter import (MIN_SMALLER_PX, MIN_TEXT_PX, PRESENT_DARK, PRESENT_LIGHT, enter_presenter, leave_presenter,
                                 presenter_of)
from gpuviz.ui.text_sizes import smallest_text, text_sizes
from gpuviz.catalog import get_kernel


def _transpose_shared():
    spec = get_kernel("transpose_shared")
    args = spec.make_args(40, np.random.default_rng(0))
    grid, block = spec.launch(40, spec.default_block)
    return gpuviz.capture(spec.kernel, grid, block, *args, backend="cpu")


# the conftest's window, on a shared-memory transpose, not shown on screen
pytestmark = pytest.mark.window(trace=_transpose_shared, on_screen=False)


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_no_text_below_18px_at_1920x1080(window, qapp, theme):
    enter_presenter(window, theme=theme, size=(1920, 1080))
    for f in (0, 80, 200):  # a start, a bank conflict, the second block
        window.session.set_frame(f)
        qapp.processEvents()
        sizes = list(text_sizes(window))
        kinds = {where.split(" ", 1)[-1] for _, where in sizes}
        assert {"QLabel#presenterCaptionText", "TextItem", "AxisItem ticks"} & kinds  # the walk sees the items
        assert any("TextItem" in w for _, w in sizes) and any("AxisItem" in w for _, w in sizes)
        px, where = smallest_text(window)
        assert px >= MIN_TEXT_PX, f"{where}: {px} px at frame {f}"
    assert window.width() == 1920 and window.height() == 1080
    assert window.session.theme.name == f"present-{theme}"
    assert not window.menuBar().isVisible() and not window.statusBar().isVisible()
    assert not window.transport.isVisible() and not window.docks["launch"].isVisible()
    grab = window.grab()
    assert (grab.width(), grab.height()) == (1920, 1080)


def test_clicker_keys_blank_and_scale(window, qapp):
    p = enter_presenter(window, theme="dark", size=(1920, 1080))
    s = window.session
    s.set_frame(79)
    p.keys.trigger("next")  # PageDown
    assert s.frame == 80
    narr = Narrator(s.prepared)
    assert p.caption_bar.caption.text() == narr.caption(80)
    assert "32-way bank conflict" in p.caption_bar.caption.text()
    p.keys.trigger("previous")  # PageUp
    assert s.frame == 79
    p.keys.trigger("blank")  # B
    assert p.blanked and p.blank.geometry() == window.rect()
    p.keys.trigger("next")  # any click first brings the picture back, without moving on
    assert not p.blanked and s.frame == 79
    auto = p.scale
    p.keys.trigger("bigger")
    assert p.scale == pytest.approx(auto * 1.12)
    p.keys.trigger("smaller")
    assert p.scale == pytest.approx(auto)
    p.keys.trigger("smaller")  # below the automatic scale too (a teacher may want more on screen), to a floor
    assert p.scale == pytest.approx(auto / 1.12)
    assert smallest_text(window)[0] >= MIN_SMALLER_PX
    p.keys.trigger("auto_scale")  # Ctrl+0: every text at 18 px or more again
    assert p.scale == pytest.approx(auto, rel=0.02) and smallest_text(window)[0] >= MIN_TEXT_PX
    p.keys.trigger("theme")
    assert s.theme.name == "present-light"
    # the window's own bindings of the clicker keys are set aside while presenting
    step = window.actions.qaction("playback.step_forward")
    assert not step.shortcuts()


def test_leaving_restores_the_desk(window, qapp):
    theme_before = window.session.theme
    shortcuts_before = [s.toString() for s in window.actions.qaction("playback.step_forward").shortcuts()]
    enter_presenter(window, theme="dark", size=(1920, 1080))
    assert presenter_of(window) is not None
    leave_presenter(window)
    qapp.processEvents()
    assert presenter_of(window) is None
    assert window.session.theme == theme_before
    assert window.menuBar().isVisible() and window.statusBar().isVisible() and window.transport.isVisible()
    assert [s.toString() for s in window.actions.qaction("playback.step_forward").shortcuts()] == shortcuts_before


def test_projector_themes_keep_pale_states_visible():
    """Idle lanes and waiting blocks must stand apart from the background on a washed-out projector."""
    from gpuviz.model.frames import BlockState, LaneState
    from gpuviz.style.theme import hex_to_rgba

    def lum(c):
        r, g, b, _ = hex_to_rgba(c)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    for t in (PRESENT_LIGHT, PRESENT_DARK):
        bg = lum(t.background)
        assert abs(lum(t.lane[LaneState.IDLE]) - bg) > 90
        assert abs(lum(t.block[BlockState.WAITING]) - bg) > 50
        assert abs(lum(t.foreground) - bg) == pytest.approx(255)
        assert t.heatmap in ("cividis", "viridis")


def test_a_frame_change_while_entering_presenter_mode_is_drawn_not_crashed_on(window, qapp, monkeypatch):
    """bench/drive_app.py, F5 in the real app: a frame change reached the presenter's _on_frame before its layout
    was arranged ('Presenter' object has no attribute '_memory_tabs'), and the app ended. Here the rescale that
    entering does emits one."""
    from gpuviz.ui import presenter as presenter_module

    errors = []
    real_fit = presenter_module.Presenter.fit_text

    def fit_text(self, *a, **k):
        self.session.set_frame(min(1, self.session.frames.n_frames - 1))  # what a resize or a timer may do
        return real_fit(self, *a, **k)

    monkeypatch.setattr(presenter_module.Presenter, "fit_text", fit_text)
    monkeypatch.setattr("sys.excepthook", lambda *exc: errors.append(exc[1]))
    p = presenter_module.enter_presenter(window, theme="dark", size=(1280, 720), fullscreen=False)
    qapp.processEvents()
    assert errors == [] and p is not None
    presenter_module.leave_presenter(window)


def test_the_caption_bar_is_as_tall_as_its_text_at_1280x720(window, qapp):
    """A toolbar sizes a word-wrapped label for Qt's guess of its width (about 700 px), not the bar's: at 1280x720
    the caption bar took 255 px for 150 px of text, height the lesson notes above it needed."""
    p = enter_presenter(window, theme="dark", size=(1280, 720), fullscreen=False)
    bar = p.caption_bar
    for f in (0, 80, 200):
        window.session.set_frame(f)
        qapp.processEvents()
        qapp.processEvents()
        m = bar.layout().contentsMargins()
        inner = bar.width() - m.left() - m.right()
        labels = [lb for lb in (bar.caption, bar.note) if lb.isVisible()]
        text = sum(lb.heightForWidth(inner) for lb in labels) + bar.layout().spacing() * (len(labels) - 1)
        assert bar.width() == 1280 and text > 0
        assert bar.height() <= text + m.top() + m.bottom() + 2, (f, bar.height(), text)
        assert all(lb.height() >= lb.heightForWidth(inner) for lb in labels)  # nothing of the caption cut off


def test_presenting_the_title_says_where_on_one_line_and_the_caption_says_what(window, qapp):
    """Issue 28 (one projector layout, a fixed header height): at 1280x720 the frame's title ran to three lines at
    a barrier ('… all 32 lanes reach syncthreads: all 256 threads of the block are there, the barrier opens (line
    57)'), one at a load, so the views jumped and lost ~60 px; the caption bar below says the same. Presenting,
    the title is where the frame is (block, warp, phase, step, line) on one line at every frame; the desk keeps
    the whole description."""
    s = window.session
    frames = s.frames
    barrier = int(np.flatnonzero([frames.barrier_opens_at(f) for f in range(frames.n_frames)])[0])
    s.set_frame(barrier)
    desk = window.frame_text.text()
    assert "the barrier opens" in desk
    enter_presenter(window, theme="dark", size=(1280, 720))
    qapp.processEvents()
    heights = set()
    for f in (0, 80, barrier, 200):
        s.set_frame(f)
        qapp.processEvents()
        title = window.frame_text.text()
        assert title == frames.describe_where(f) and ": " not in title and "line " in title, title
        assert title.startswith(frames.describe(f).split(": ", 1)[0])  # the desk title's own head, word for word
        heights.add(window.frame_text.height())
        # one line: the label is no taller than one line of its font (plus its margins)
        assert window.frame_text.height() < 2 * window.frame_text.fontMetrics().lineSpacing(), title
    assert len(heights) == 1  # the header's height does not change from frame to frame
    s.set_frame(barrier)
    leave_presenter(window)
    qapp.processEvents()
    assert window.frame_text.text() == desk


def test_one_ctrl_plus_up_a_2d_blocks_title_stays_on_one_line_beside_the_badge(window, qapp):
    """Issue 28: at 1280x720 one Ctrl++ up, 'block (0,0) · warp 0 · phase 2 of 2 · step 11 · line 45' took two lines
    beside the badge 'CPU executor · 2026-12-03 · no GPU', 34 px the crowded lesson scenes under it needed.
    Presenting, the badge says what made the trace and not when, and the title stays one line at every frame; the
    desk gets the date back."""
    desk_badge = window.origin_badge.text()
    date = desk_badge.split(" · ")[1]
    p = enter_presenter(window, theme="dark", size=(1280, 720), fullscreen=False)
    p.keys.trigger("bigger")
    qapp.processEvents()
    assert window.origin_badge.text() == "CPU executor · no GPU"
    for f in (0, 80, 200):
        window.session.set_frame(f)
        qapp.processEvents()
        title = window.frame_text
        assert title.text().startswith("block (") and title.height() < 2 * title.fontMetrics().lineSpacing(), f
    leave_presenter(window)
    qapp.processEvents()
    assert window.origin_badge.text() == desk_badge and date in desk_badge
