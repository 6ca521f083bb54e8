"""Regenerate the README screenshots of the app's own views: ``python bench/readme_screenshots.py [OUTDIR]``.

The grid, block, source and details views, at 1920x1080 and 1280x720, rendered headless through
:func:`gpuviz.app.snapshot` from kernels captured on the spot. The whole window (normal, presenter, dark) is
taken on a real X server with a window manager by ``bench/window_screenshots.sh``. A tool of the repository, not
of the package: it drives the app (:mod:`gpuviz.app`) from above, as the command line does.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout: gpuviz and kernels

SIZES = ((1920, 1080), (1280, 720))


def _capture(name: str, size: int):
    import numpy as np

    import gpuviz
    from gpuviz.catalog import get_kernel

    spec = get_kernel(name)
    grid, block = spec.launch(size, spec.default_block)
    return gpuviz.capture(spec.kernel, grid, block, *spec.make_args(size, np.random.default_rng(0)))


def main(out_dir: str = "assets/screenshots") -> list[Path]:
    from gpuviz.app import snapshot
    from gpuviz.model.frames import Frames
    from gpuviz.model.trace import EventKind

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    matmul = _capture("matmul_tiled", 32)
    F = Frames(matmul)
    # phase 2 of block (1,0): warps read the shared tiles, some have reached the barrier already
    b1 = F.next_block(0)
    f_mm = next(f for f in range(b1, F.n_frames) if F.phase[f] == 1 and F.kind[f] == EventKind.BARRIER) - 2
    reduce = _capture("reduce_interleaved", 1000)
    R = Frames(reduce)
    # the tree reduction with lanes dropping out: a frame where a warp is partly masked off
    f_red = next(f for f in range(R.n_frames) if 0 < R.n_lanes[f] < R.lanes_in_warp(int(R.warp[f])) and R.phase[f] >= 2)
    written = []
    for w, h in SIZES:
        tag = f"{w}x{h}"
        sel = {"block": 1, "thread": 37}
        written.append(snapshot(matmul, f_mm, "grid", (w, h), out / f"grid_{tag}.png"))
        written.append(snapshot(reduce, f_red, "block", (w, h), out / f"block_{tag}.png"))
        written.append(snapshot(matmul, f_mm, "source", (w, h), out / f"source_{tag}.png"))
        written.append(snapshot(matmul, f_mm, "details", (w, h), out / f"details_{tag}.png", selection=sel))
    return written


if __name__ == "__main__":
    for p in main(*sys.argv[1:]):
        print(p, f"{p.stat().st_size / 1024:.0f} KB")
