"""The block view keeps the issuing warp's own colours in sight however small its rows are on screen."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np

from tests.acceptance_checks import image_array, view_alone


def test_the_issuing_warps_lanes_show_inside_its_outline_at_presenter_size(qapp):
    """At 1280x720 in presenter mode the block view is ~290 x 270 px and a warp ~8 px tall: the 5 px outline
    (6.5 px scaled) centred on the warp's edge covered all but one line of its lanes: 15 % of the warp's box
    showed its green (31 % with the outline held to a third of the warp's height, the rest being the outline
    and the gaps between lanes)."""
    from gpuviz.model.frames import LaneState
    from gpuviz.ui.presenter import PRESENT_DARK
    from gpuviz.style.theme import hex_to_rgba
    from tests.ui_traces import matmul_tiled_trace

    theme = PRESENT_DARK.scaled(1.3)

    def issuing_warp_2(frames):
        return next(f for f in range(frames.n_frames) if frames.n_lanes[f] == 32 and frames.warp[f] == 2)

    # blocks of 8 warps, 2 rows of 16 lanes each
    with view_alone("block", theme, matmul_tiled_trace(n=32, tile=16), (290, 270), frame=issuing_warp_2) as view:
        assert view._warp_height_px() < 16  # the case at hand: a warp only a few pixels tall
        vb = view.plot.getPlotItem().getViewBox()
        warp = vb.mapViewToScene(view._warp_paths[2].boundingRect()).boundingRect().toAlignedRect()
        pixels = image_array(view.plot.grab().toImage())[..., :3].astype(int)
        inside = pixels[warp.top():warp.bottom() + 1, warp.left():warp.right() + 1].reshape(-1, 3)
        active = np.array(hex_to_rgba(theme.lane[LaneState.ACTIVE])[:3])
        shown = float((np.abs(inside - active).sum(axis=1) < 12).mean())
        assert shown >= 0.25, shown

def test_every_warp_label_shown_is_whole_inside_the_plot(qapp):
    """At presenter size warp 0's label, centred on its first row a few pixels tall, had its upper half cut off
    by the view's caption above the plot."""
    from gpuviz.ui.presenter import PRESENT_DARK
    from gpuviz.style.theme import LIGHT
    from tests.ui_traces import matmul_tiled_trace

    for theme, size in ((PRESENT_DARK.scaled(1.3), (290, 270)), (PRESENT_DARK.scaled(1.3), (290, 420)),
                        (LIGHT, (640, 420)), (LIGHT, (300, 160))):
        with view_alone("block", theme, matmul_tiled_trace(n=32, tile=16), size) as view:
            vb = view.plot.getPlotItem().getViewBox()
            box = vb.sceneBoundingRect()
            shown = [t for t in view._labels if t.isVisible()]
            assert shown
            for t in shown:
                r = t.sceneBoundingRect()
                assert r.top() >= box.top() - 0.5 and r.bottom() <= box.bottom() + 0.5, (size, t.textItem.toPlainText(),
                                                                                          r, box)
