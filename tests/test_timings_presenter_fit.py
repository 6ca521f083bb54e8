"""Issue 28, host_device_flow: presenting at 1280x720, at the presenter's text size and one Ctrl++ above it, the
Timings view's host-flow chart cut its title ('... n = 16,777,'), ran its bar values into each other ('492.4 µs'
over '2.86 ms') and out of the plot ('1.30 m'), cut its category labels at the bottom and its legend at the right;
the Global memory view below drew each stacked array's 'element' axis title over the next one's.
"""

from __future__ import annotations

import pyqtgraph as pg
import pytest
from PySide6.QtCore import QRectF
from PySide6.QtGui import QImage, QPainter

from tests.acceptance_checks import settle
from tests.test_acceptance_review28 import _presenting_lesson


def _in_view(item, plot) -> QRectF:
    """Where ``item`` (a graphics item of ``plot``'s scene) is drawn, in the plot widget's viewport."""
    return plot.mapFromScene(item.mapRectToScene(item.boundingRect())).boundingRect()


def _tick_rects(axis: pg.AxisItem, plot) -> list[tuple[str, QRectF]]:
    """Each tick text of ``axis`` and where it is drawn in ``plot``'s viewport."""
    img = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(img)
    try:
        if axis.style.get("tickFont"):
            painter.setFont(axis.style["tickFont"])
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    if not specs:
        return []
    return [(str(t), plot.mapFromScene(axis.mapRectToScene(QRectF(r))).boundingRect())
            for r, _flags, t in specs[2] if str(t).strip()]


def timings_text_problems(view) -> list[str]:
    """Text of the Timings view's chart (title, value labels, category ticks, legend) outside the plot widget, and
    value labels that overlap each other."""
    plot, pi = view.plot, view.plot.getPlotItem()
    room = QRectF(plot.viewport().rect()).adjusted(-1, -1, 1, 1)
    texts = []
    if pi.titleLabel.isVisible() and pi.titleLabel.text:
        texts.append(("title", pi.titleLabel.item.toPlainText(), _in_view(pi.titleLabel.item, plot)))
    values = [(it.toPlainText(), _in_view(it, plot)) for it in pi.items if isinstance(it, pg.TextItem) and it.isVisible()]
    texts += [("value", t, r) for t, r in values]
    axis = pi.getAxis("bottom")
    ticks = _tick_rects(axis, plot)
    texts += [("tick", t, r) for t, r in ticks]
    if pi.legend is not None and pi.legend.isVisible():
        texts += [("legend", label.item.toPlainText(), _in_view(label.item, plot)) for _sample, label in pi.legend.items]
    out = [f"{kind} {text!r} at {r.left():.0f}..{r.right():.0f} x {r.top():.0f}..{r.bottom():.0f} is outside the "
           f"{room.width():.0f}x{room.height():.0f} plot" for kind, text, r in texts if not room.contains(r)]
    # every category named (none left out for want of room): a bar chart's (a sweep's ticks are numbers)
    stages = list(dict.fromkeys(stage for _group, stage, _text in view.bar_labels))
    if stages and [" ".join(t.split()) for t, _r in ticks] != stages:
        out.append(f"the categories {stages} are named {[t for t, _r in ticks]}")
    # the category names inside their axis (taller text ran under the legend below it)
    axis_rect = plot.mapFromScene(axis.sceneBoundingRect()).boundingRect().adjusted(-1, -1, 1, 1)
    out += [f"tick {t!r} ({r.top():.0f}..{r.bottom():.0f}) runs out of its axis ({axis_rect.top():.0f}.."
            f"{axis_rect.bottom():.0f})" for t, r in ticks if r.bottom() > axis_rect.bottom()]
    legend_rect = (_in_view(pi.legend, plot) if pi.legend is not None and pi.legend.isVisible() and pi.legend.items
                   else QRectF())
    out += [f"the legend covers tick {t!r}" for t, r in ticks if legend_rect.intersected(r).height() > 1]
    # value labels: inside the data area too (not over the axes), and apart from each other
    box = view.plot.mapFromScene(pi.getViewBox().sceneBoundingRect()).boundingRect().adjusted(-1, -1, 1, 1)
    out += [f"value {t!r} leaves the data area" for t, r in values if not box.contains(r)]
    for i, (ta, ra) in enumerate(values):
        for tb, rb in values[i + 1:]:
            inter = ra.intersected(rb)
            if inter.width() > 1 and inter.height() > 1:
                out.append(f"values {ta!r} and {tb!r} overlap")
    return out


def stacked_axis_title_problems(view) -> list[str]:
    """Left-axis titles of the Global memory view's arrays drawn over each other or taller than their plot."""
    shown = []
    for panel in view._panels:
        axis = panel.plot.getAxis("left")
        if not axis.isVisible() or not axis.label.isVisible() or not axis.labelText:
            continue
        r = axis.label.mapRectToScene(axis.label.boundingRect())
        shown.append((panel.info.name, axis.labelText, r, axis.sceneBoundingRect()))
    out = [f"{name}: its axis title {text!r} is {r.height():.0f} px tall on a {ax.height():.0f} px axis"
           for name, text, r, ax in shown if r.height() > ax.height() + 1]
    for i, (na, ta, ra, _a) in enumerate(shown):
        for nb, tb, rb, _b in shown[i + 1:]:
            inter = ra.intersected(rb)
            if inter.width() > 1 and inter.height() > 1:
                out.append(f"the axis titles of {na} and {nb} overlap")
    return out


@pytest.mark.parametrize("bigger", [0, 1], ids=["default", "one_ctrl_plus"])
def test_host_device_flow_timings_and_memory_text_reads_whole_when_presenting_at_1280x720(person, bigger):
    w, ctl = _presenting_lesson(person, "host_device_flow", bigger)
    problems, checked = [], set()
    while ctl.player.scene_index == 0:  # 'Copy in, run, copy out': the Timings view over the Global memory view
        settle(4)
        step = f"step {ctl.player.beat_index + 1}"
        for vid, check in (("timings", timings_text_problems), ("memory", stacked_axis_title_problems)):
            if w.views[vid].on_screen():
                checked.add(vid)
                problems += [f"{step} {vid}: {p}" for p in check(w.views[vid])]
        if not ctl.next():
            break
    assert checked == {"timings", "memory"}, checked
    assert w.views["timings"].showing()[1] == "host_flow"
    assert not problems, "\n".join(dict.fromkeys(problems))
    person.check(w, "host_device_flow scene 1 presenting")


def test_a_legend_of_cpu_and_gpu_lines_keeps_each_processor_and_drops_its_device():
    from gpuviz.ui.views.timings import shared_suffix_dropped

    assert shared_suffix_dropped(["pageable host memory · GPU: NVIDIA H200", "pinned host memory · GPU: NVIDIA H200"]) \
        == ["pageable host memory", "pinned host memory"]
    assert shared_suffix_dropped(["numpy a + b · CPU: Intel Xeon Processor (Icelake)", "cupy a + b · GPU: NVIDIA H200"]) \
        == ["numpy a + b · CPU", "cupy a + b · GPU"]
    assert shared_suffix_dropped(["numpy a + b · CPU: Xeon", "cupy a + b"]) == []
    assert shared_suffix_dropped(["a · x", "b · y"]) == []


@pytest.mark.parametrize("bigger", [0, 1], ids=["default", "one_ctrl_plus"])
def test_custom_kernel_sweeps_read_whole_when_presenting_at_1280x720(person, bigger):
    """Issue 28, custom_kernel's last two scenes (recorded sweeps, a log-log chart over the source): presenting at
    1280x720 the chart's title ran past the view ('... CPU (dashed, squares) vs G'), the x axis stopped at 10^7 (the
    plot wider than its dock) and the CPU line's legend entry was cut at the right."""
    w, ctl = _presenting_lesson(person, "custom_kernel", bigger)
    while ctl.player.scene_index < 4:
        ctl.next()
        settle()
    problems, scenes = [], set()
    while ctl.player.scene_index >= 4:
        settle(4)
        step = f"scene {ctl.player.scene_index + 1} step {ctl.player.beat_index + 1}"
        view = w.views["timings"]
        assert view.on_screen(), step
        scenes.add(ctl.player.scene_index)
        problems += [f"{step}: {p}" for p in timings_text_problems(view)]
        if not ctl.next():
            break
    assert scenes == {4, 5}, scenes
    assert not problems, "\n".join(dict.fromkeys(problems))
