"""Every theme's colours stand out from the ground they are drawn on, by WCAG's contrast ratio: text at least
4.5:1, graphics (state cells, legend chips, outlines) at least 3:1. The dark theme's "not started" lane was
#1E1E1E on black (1.26:1) and its legend chip #1E1E1E on the #1A1A1A panel (1.04:1): invisible on a projector."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import pytest

from tests.acceptance_checks import image_array, settle, view_alone

TEXT = 4.5
GRAPHICS = 3.0
#: two greys told apart by lightness alone (not started, idle): at least this ratio between them
GREYS = 1.5


def contrast(a: str, b: str) -> float:
    from gpuviz.style.theme import contrast_ratio

    return contrast_ratio(a, b)


def all_themes():
    from gpuviz.ui.presenter import PRESENT_THEMES
    from gpuviz.style.theme import THEMES

    return [*THEMES.values(), *PRESENT_THEMES.values()]


def theme_ids():
    return [t.name for t in all_themes()]


def test_the_contrast_ratio_is_wcags():
    """Known values: black on white 21:1, #767676 the lightest grey that reads as text on white (4.54:1)."""
    assert contrast("#FFFFFF", "#000000") == pytest.approx(21.0)
    assert contrast("#767676", "#FFFFFF") == pytest.approx(4.54, abs=0.01)
    assert contrast("#FFFFFF", "#767676") == contrast("#767676", "#FFFFFF")
    assert contrast("#123456", "#123456") == 1.0


@pytest.mark.parametrize("theme", all_themes(), ids=theme_ids())
def test_plotted_series_take_colours_that_stand_3_to_1_on_the_background(theme):
    """The timings view's series: Okabe-Ito's black was its eighth colour on the dark themes' black (1:1), its
    yellow, orange and sky blue stood 1.3, 2.2 and 2.3:1 on white."""
    from gpuviz.style.theme import series_colours

    colours = series_colours(theme)
    assert len(colours) >= 5 and len(set(colours)) == len(colours), (theme.name, colours)
    assert all(contrast(c, theme.background) >= GRAPHICS for c in colours), (theme.name, colours)


@pytest.mark.parametrize("theme", all_themes(), ids=theme_ids())
def test_every_state_colour_stands_3_to_1_against_the_background(theme):
    low = {f"{kind}.{state.name}": round(contrast(colour, theme.background), 2)
           for kind in ("lane", "block") for state, colour in getattr(theme, kind).items()
           if contrast(colour, theme.background) < GRAPHICS}
    assert not low, (theme.name, theme.background, low)


@pytest.mark.parametrize("theme", all_themes(), ids=theme_ids())
def test_the_greys_of_work_not_begun_and_of_idle_lanes_are_told_apart(theme):
    from gpuviz.model.frames import LaneState

    assert contrast(theme.lane[LaneState.NOT_STARTED], theme.lane[LaneState.IDLE]) >= GREYS, theme.name


@pytest.mark.parametrize("theme", all_themes(), ids=theme_ids())
def test_text_and_outlines_stand_out(theme):
    for ground in (theme.background, theme.panel):
        for name in ("foreground", "muted"):
            assert contrast(getattr(theme, name), ground) >= TEXT, (theme.name, name, ground)
    assert contrast(theme.foreground, theme.highlight_line) >= TEXT, theme.name  # the source line executing
    for name in ("current", "selected", "load", "store"):
        assert contrast(getattr(theme, name), theme.background) >= GRAPHICS, (theme.name, name)
    for ground in (theme.background, theme.panel):  # the grid colour draws the edges of fields, buttons, the slider
        assert contrast(theme.grid, ground) >= GRAPHICS, (theme.name, theme.grid, ground)


def test_a_state_keeps_its_hue_in_every_theme():
    """Darker or lighter to stand out, never another colour: green active, orange diverged, purple at a
    barrier, blue done, in every theme."""
    import colorsys

    from gpuviz.model.frames import BlockState, LaneState
    from gpuviz.style.theme import hex_to_rgba

    def hue(colour):
        r, g, b, _ = hex_to_rgba(colour)
        return round(colorsys.rgb_to_hsv(r / 255, g / 255, b / 255)[0] * 360)

    for kind, states in (("lane", (LaneState.ACTIVE, LaneState.DIVERGED, LaneState.BARRIER, LaneState.EXITED)),
                         ("block", (BlockState.RESIDENT, BlockState.BARRIER, BlockState.DONE))):
        for state in states:
            hues = {t.name: hue(getattr(t, kind)[state]) for t in all_themes()}
            assert max(hues.values()) - min(hues.values()) <= 20, (kind, state.name, hues)


@pytest.mark.parametrize("theme", all_themes(), ids=theme_ids())
@pytest.mark.parametrize("view_id", ["grid", "block"])
def test_the_legend_chips_stand_3_to_1_against_the_legend_as_drawn(qapp, view_id, theme):
    """The legend as Qt paints it (the window's style sheet decides its ground, not the theme's fields): each
    state's chip is there, and stands out from the most common colour of the legend, its ground."""
    from tests.ui_traces import matmul_tiled_trace

    with view_alone(view_id, theme, matmul_tiled_trace()) as view:
        pixels = image_array(view.legend.grab().toImage())[..., :3].reshape(-1, 3)
        colours, counts = np.unique(pixels, axis=0, return_counts=True)
        ground = "#%02X%02X%02X" % tuple(colours[np.argmax(counts)])
        painted = {"#%02X%02X%02X" % tuple(c) for c in colours}
        chips = theme.block if view_id == "grid" else theme.lane
        for state, colour in chips.items():
            assert colour.upper() in painted, (theme.name, view_id, state.name, colour)
            assert contrast(colour, ground) >= GRAPHICS, (theme.name, view_id, state.name, colour, ground)


@pytest.mark.parametrize("theme", all_themes(), ids=theme_ids())
def test_the_barrier_swimlanes_and_the_sms_warp_slots_stand_3_to_1_against_the_background(qapp, theme):
    """Every colour the barriers view paints its swimlanes in (running phases, waiting at syncthreads) and the
    occupancy view its SM's warp slots in (blocks, free slots): the waits were a grey of their own (2.0:1 on
    white), the free slots too (1.6:1 on white, 1.9:1 on black)."""
    from gpuviz.ui.session import Session
    from gpuviz.style.theme import stylesheet
    from gpuviz.ui.views.base import available_views
    from tests.ui_traces import reduction_trace

    session = Session(theme=theme)
    # blocks of 3 warps: the warps reach each barrier apart (waits), and 21 blocks leave one of 64 warp slots free
    session.set_trace(reduction_trace(2, 96), "block_sum")
    views = {name: available_views()[name](session) for name in ("barriers", "occupancy")}
    try:
        for view in views.values():
            view.setStyleSheet(stylesheet(theme))
            view.resize(640, 420)
            view.show()
        settle(3)
        for view in views.values():
            view.refresh()
        settle(3)
        painted = {"barriers": views["barriers"]._base, "occupancy": views["occupancy"].sm_image.image}
        for name, image in painted.items():
            rgba = np.asarray(image).reshape(-1, 4)
            colours = {"#%02X%02X%02X" % tuple(c[:3]) for c in np.unique(rgba[rgba[:, 3] > 0], axis=0)}
            assert len(colours) == 3, (name, colours)  # two running phases and the waits; two blocks and the free slots
            low = {c: round(contrast(c, theme.background), 2) for c in colours
                   if contrast(c, theme.background) < GRAPHICS}
            assert not low, (theme.name, name, theme.background, low)
    finally:
        for view in views.values():
            view.close()
            view.deleteLater()
        session.shutdown()


@pytest.mark.parametrize("theme", all_themes(), ids=theme_ids())
def test_the_memory_views_marks_stand_3_to_1_against_the_background(theme):
    """What the global and shared memory views light and outline, and their legends show (■ read, ■ write,
    ▮ bank conflict ...): Okabe-Ito orange was the light themes' bank conflict, 2.25:1 on white."""
    from gpuviz.ui.views.panels import colour_css, memory_style

    style = memory_style(theme)
    marks = ("read", "write", "atomic", "conflict", "race", "current", "selected")
    low = {name: round(contrast(colour_css(getattr(style, name)), style.background), 2) for name in marks
           if contrast(colour_css(getattr(style, name)), style.background) < GRAPHICS}
    assert not low, (theme.name, style.background, low)


@pytest.mark.parametrize("first, count, cols", [(0, 48 * 48, 48), (0, 1000, 32), (5, 20, 32), (30, 70, 32), (3, 2, 32)])
def test_an_arrays_edge_goes_round_its_cells_and_no_others(first, count, cols):
    """The memory views outline each array's cells: a 1-d array wraps (its last row partial), a shared array
    may start mid-row (its first cells another array's)."""
    from PySide6.QtCore import QPointF

    from gpuviz.style.theme import DARK
    from gpuviz.ui.views.panels import cells_edge_item, memory_style

    path = cells_edge_item(first, count, cols, memory_style(DARK)).path()
    rows = -(-(first + count) // cols)
    inside = {r * cols + c for r in range(rows) for c in range(cols) if path.contains(QPointF(c + 0.5, r + 0.5))}
    assert inside == set(range(first, first + count))


@pytest.mark.parametrize("theme", all_themes(), ids=theme_ids())
@pytest.mark.parametrize("view_id", ["memory", "shared"])
def test_every_array_is_outlined_in_the_grid_colour(qapp, view_id, theme):
    """An array no one has touched yet is its 'untouched' colour, 1.2:1 to 1.3:1 on the background (a pale
    yellow hot array on white, 1.2:1): its outline in the grid colour (3:1 or more) shows where it is."""
    from tests.ui_traces import matmul_tiled_trace

    with view_alone(view_id, theme, matmul_tiled_trace(), styled=False) as view:
        assert view._panels
        for panel in view._panels:
            assert panel.edge.pen().color().name().upper() == theme.grid.upper()
            assert panel.edge.parentItem() is not None  # in the plot
        other = next(t for t in all_themes() if t.grid != theme.grid)
        view.session.set_theme(other)
        settle(2)
        assert {p.edge.pen().color().name().upper() for p in view._panels} == {other.grid.upper()}


# ---- text the views colour themselves, and selected rows: 4.5:1 in every theme, and after a theme change ------
def ground_of(widget) -> str:
    """The most common colour of ``widget`` as Qt paints it: the ground its text stands on."""
    pixels = image_array(widget.grab().toImage())[..., :3].reshape(-1, 3)
    colours, counts = np.unique(pixels, axis=0, return_counts=True)
    return "#%02X%02X%02X" % tuple(colours[np.argmax(counts)])


def other_theme(theme):
    """A theme of the other kind (dark for a light one): every colour a view picks changes."""
    return next(t for t in all_themes() if t.dark != theme.dark)


def themed_window(theme):
    from gpuviz.ui.window import MainWindow
    from tests.ui_traces import matmul_tiled_trace

    window = MainWindow(matmul_tiled_trace(), theme=theme)
    window.resize(1280, 720)
    window.show()
    settle(3)
    return window


def close_window(window) -> None:
    window.close()
    window.deleteLater()
    settle(1)


def launch_record(kernel: str, status: str, reason: str = ""):
    """An empty trace, as a recording holds for a launch it did not trace or that failed."""
    from gpuviz.model.trace import EVENT_FIELDS, REQUIRED_FIELDS, Launch, Trace

    record = {"number": None, "kernel": kernel, "grid": [4], "block": [32], "status": status, "events": 0,
              "reason": reason}
    launch = Launch(kernel_name=kernel, grid=(4, 1, 1), block=(32, 1, 1), backend="none", device="not traced",
                    meta={"recording": record})
    return Trace(launch, {f: np.empty(0, EVENT_FIELDS[f][0]) for f in REQUIRED_FIELDS})


@pytest.mark.parametrize("theme", all_themes(), ids=theme_ids())
def test_the_launch_lists_dimmed_and_failed_rows_stand_4_5_to_1_and_follow_the_theme(qapp, theme):
    """A launch not traced was #8A8A8A (3.45:1 on white), a failed one's status #C0392B (3.86:1 on black), set
    when the row was added and kept through a theme change: a dark theme showed the light theme's colours."""
    from gpuviz.ui.views.launches import show_recording
    from tests.ui_traces import vector_add_trace

    window = themed_window(theme)
    try:
        traces = [vector_add_trace(), launch_record("too_big", "untraced", "over the event limit"),
                  launch_record("bad_barrier", "failed", "DivergentBarrierError")]
        tree = show_recording(window, traces, "three launches").launch_list.tree
        tree.clearSelection()
        tree.setCurrentItem(None)
        settle(3)
        for current in (theme, other_theme(theme)):
            if current is not theme:
                window.session.set_theme(current)
                settle(3)
            ground = ground_of(tree.viewport())
            assert ground == current.background.upper(), (current.name, ground)
            untraced, failed = tree.topLevelItem(1), tree.topLevelItem(2)
            for item in (untraced, failed):
                for column in range(tree.columnCount() - 1):
                    colour = item.foreground(column).color().name().upper()
                    assert contrast(colour, ground) >= TEXT, (current.name, item.text(1), column, colour, ground)
                    assert colour == current.dimmed.upper(), (current.name, item.text(1), column, colour)
            status = failed.foreground(tree.columnCount() - 1).color().name().upper()
            assert contrast(status, ground) >= TEXT and status == current.alert.upper(), (current.name, status, ground)
    finally:
        close_window(window)


def test_the_themes_text_roles_stand_4_5_to_1_and_keep_vermillions_hue():
    """Dimmed text (a launch not traced) and alert text (a failed launch, a value recording changed), on the
    background and on the panel."""
    import colorsys

    from gpuviz.style.theme import OKABE_ITO, hex_to_rgba

    def hue(colour):
        r, g, b, _ = hex_to_rgba(colour)
        return colorsys.rgb_to_hsv(r / 255, g / 255, b / 255)[0] * 360

    for theme in all_themes():
        for name in ("dimmed", "alert"):
            for ground in (theme.background, theme.panel):
                assert contrast(getattr(theme, name), ground) >= TEXT, (theme.name, name, ground)
        assert abs(hue(theme.alert) - hue(OKABE_ITO["vermillion"])) <= 2, theme.name
        assert contrast(theme.dimmed, theme.foreground) >= GREYS, theme.name  # dimmed text is told from the rest


@pytest.mark.parametrize("theme", all_themes(), ids=theme_ids())
def test_the_details_views_changed_values_stand_4_5_to_1_on_the_details_as_drawn(qapp, theme):
    """What recording changed (registers, occupancy: plain | instrumented) was in vermillion, 3.87:1 on white
    and 3.39:1 on the light panel."""
    import re

    from tests.ui_traces import matmul_tiled_trace

    trace = matmul_tiled_trace()
    trace = trace.with_launch(meta={**trace.launch.meta,
                                    "plain": {"registers_per_thread": 32, "resident_blocks_per_sm": 8},
                                    "instrumented": {"registers_per_thread": 40, "resident_blocks_per_sm": 6}})
    window = themed_window(theme)
    try:
        window.set_trace(trace, "a GPU recording")
        dock = window.docks["details"]
        dock.show()
        dock.raise_()
        settle(3)
        label = window.views["details"].launch_label
        for current in (theme, other_theme(theme)):
            if current is not theme:
                window.session.set_theme(current)
                settle(3)
            marks = re.findall(r"<td style='color:(#[0-9A-Fa-f]{6}); font-weight:bold'>", label.text())
            assert len(marks) >= 2, label.text()  # the registers and the resident blocks changed
            ground = ground_of(label)
            assert ground == current.panel.upper(), (current.name, ground)
            assert all(contrast(m, ground) >= TEXT for m in marks), (current.name, marks, ground)
            assert {m.upper() for m in marks} == {current.alert.upper()}, (current.name, marks)
    finally:
        close_window(window)


@pytest.mark.parametrize("theme", all_themes(), ids=theme_ids())
def test_the_per_line_tables_selected_row_stands_4_5_to_1(qapp, theme):
    """The row of the line executing was Qt's highlight blue under white text (#308CC6, 3.69:1), focused or
    not; the theme's selection colours now, and a theme switch changes them."""
    from PySide6.QtGui import QPalette

    window = themed_window(theme)
    try:
        dock = window.docks["lines"]
        dock.show()
        dock.raise_()
        table = window.views["lines"].table
        table.selectRow(0)
        settle(3)
        for current in (theme, other_theme(theme)):
            if current is not theme:
                window.session.set_theme(current)
                settle(3)
            palette = table.palette()
            for group in (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive):
                ground = palette.color(group, QPalette.ColorRole.Highlight).name().upper()
                text = palette.color(group, QPalette.ColorRole.HighlightedText).name().upper()
                assert contrast(text, ground) >= TEXT, (current.name, group, text, ground)
                assert (ground, text) == (current.selection.upper(), current.selection_text.upper()), (current.name, group)
            assert contrast(current.selection, current.background) >= GRAPHICS, current.name  # a selected row shows
            row = table.visualItemRect(table.item(0, 0))
            pixels = image_array(table.viewport().grab(row).toImage())[..., :3].reshape(-1, 3)
            painted = {"#%02X%02X%02X" % tuple(c) for c in np.unique(pixels, axis=0)}
            assert current.selection.upper() in painted, (current.name, sorted(painted)[:8])
    finally:
        close_window(window)


@pytest.mark.parametrize("theme", all_themes(), ids=theme_ids())
def test_the_barriers_header_names_the_last_warps_4_5_to_1_on_the_header_as_drawn(qapp, theme):
    """'warps 0, 2 wait for warp 1': the last arrivals were named in vermillion, 3.87:1 on the white header."""
    import re

    from gpuviz.ui.session import Session
    from gpuviz.ui.views.base import available_views
    from tests.ui_traces import reduction_trace

    session = Session(theme=theme)
    session.set_trace(reduction_trace(2, 96), "block_sum")  # blocks of 3 warps: they reach each barrier apart
    view = available_views()["barriers"](session)
    try:
        view.resize(640, 420)
        view.show()
        settle(3)
        marked = re.compile(r"<span style='color:(#[0-9A-Fa-f]{6})'>warp")
        for frame in range(session.frames.n_frames):  # the first frame at a barrier some warps wait at
            session.set_frame(frame)
            if marked.search(view.header.text()):
                break
        else:
            pytest.fail("no frame where warps wait for others")
        for current in (theme, other_theme(theme)):
            if current is not theme:
                session.set_theme(current)
                settle(3)
            assert session.frame == frame
            colour = marked.search(view.header.text()).group(1)
            ground = ground_of(view.header)
            assert contrast(colour, ground) >= TEXT, (current.name, colour, ground)
            assert colour.upper() == current.alert.upper(), (current.name, colour)
    finally:
        view.close()
        view.deleteLater()
        session.shutdown()


@pytest.mark.parametrize("theme", all_themes(), ids=theme_ids())
def test_error_messages_stand_4_5_to_1_on_their_vermillion_as_drawn(qapp, theme):
    """A capture or a program that failed: its message was the theme's background on vermillion, white on it in
    the light themes (3.87:1)."""
    from PySide6.QtGui import QPalette

    window = themed_window(theme)
    try:
        window.launch_panel.runner.failed.emit("Capture failed: KernelFault", {"kernel": "vector_add"})
        dock = window.docks["launch"]
        dock.show()
        dock.raise_()
        label = window.launch_panel.error
        settle(3)
        for current in (theme, other_theme(theme)):
            if current is not theme:
                window.session.set_theme(current)
                settle(3)
            assert label.isVisible(), current.name
            text = label.palette().color(QPalette.ColorRole.WindowText).name().upper()
            ground = ground_of(label)
            assert contrast(text, ground) >= TEXT, (current.name, text, ground)
    finally:
        close_window(window)
