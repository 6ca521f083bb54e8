"""The acceptance layer, layout: what a person sees at 1280x720, 1366x768 and 1920x1080, normal and presenter,
light and dark, on a 2-d and a 1-d kernel: no label's text wider than its rect, no sibling labels on top of
each other, no overlapping texts or tick labels in a plot, at least 60 columns of source (or wrapped lines),
the F1 overlay inside the window, and every text, the current source line included, at 4.5:1 contrast or
better as drawn (tests/acceptance_checks.py)."""

import pytest

from gpuviz.ui.presenter import enter_presenter
from gpuviz.catalog import get_kernel
from tests.acceptance_checks import layout_problems, overlay_problems, settle
from tests.test_acceptance import SIZES, kernel_trace

LAYOUT_KERNELS = ("matmul_tiled", "reduce_sum")
#: CI's slice of the 24 cases (the rest run with --all): each size normal and presenting, each kernel and each theme
#: in both modes
CI_LAYOUTS = {("matmul_tiled", SIZES[0], False, "light"), ("reduce_sum", SIZES[0], True, "dark"),
              ("reduce_sum", SIZES[1], False, "dark"), ("matmul_tiled", SIZES[1], True, "light"),
              ("matmul_tiled", SIZES[2], False, "dark"), ("reduce_sum", SIZES[2], True, "light")}


@pytest.mark.parametrize("name, size, present, theme", [
    pytest.param(name, size, present, theme, id=f"{name}-{size[0]}x{size[1]}-{'presenter' if present else 'normal'}-{theme}",
                 marks=() if (name, size, present, theme) in CI_LAYOUTS else pytest.mark.full)
    for name in LAYOUT_KERNELS for size in SIZES for present in (False, True) for theme in ("light", "dark")])
def test_layout_fits_and_reads(person, name, size, present, theme):
    spec = get_kernel(name)
    w = person(kernel_trace(name, spec.default_size if name != "matmul_tiled" else 32), size=size, theme=theme)
    if present:
        enter_presenter(w, theme=theme, size=size, fullscreen=False)
    settle()
    s = w.session
    problems = []
    # the top bar's two texts at their longest too: the frame that takes the most words to describe, and the one
    # with the longest narration (a barrier opening said in three lines at 1280x720 was cut to two)
    n = s.frames.n_frames
    wordiest = max(range(n), key=lambda f: len(s.frames.describe(f)))
    narrated = max(range(n), key=lambda f: len(w._caption(f)))
    for f in dict.fromkeys((0, n // 3, wordiest, narrated)):
        s.set_frame(f)
        settle()
        problems += [f"frame {f}: {p}" for p in layout_problems(w)]
    problems += overlay_problems(w)
    person.check(w, "layout")
    assert not problems, "\n".join(dict.fromkeys(problems))


#: the views that start behind a tab in the default layout: each brought to the front in turn
TABBED = ("lines", "occupancy", "launch", "barriers", "timings")


@pytest.mark.parametrize("size", [SIZES[0], SIZES[2]], ids=["1280x720", "1920x1080"])
def test_tabbed_views_fit_when_brought_forward(person, size):
    w = person(kernel_trace("matmul_tiled", 32), size=size)
    w.launch_panel.load_kernels()
    settle()
    problems = []
    for vid in TABBED:
        dock = w.docks[vid]
        dock.show()
        dock.raise_()
        settle()
        problems += [f"{vid} in front: {p}" for p in layout_problems(w) if f"dock_{vid}" in p]
    person.check(w, "tabbed views")
    assert not problems, "\n".join(dict.fromkeys(problems))
