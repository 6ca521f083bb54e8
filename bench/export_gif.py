"""A whole-window GIF export: drawing the frames, and encoding them the old way and the new way, in one run.

    nice -n 10 python bench/export_gif.py --frames 60 --size 1280x720

Baseline (what `gpuviz export --format gif` did before): every frame drawn and kept, then one
``imageio.v3.imwrite(..., plugin="pillow")`` of the stack, which quantizes each frame on its own and encodes them
all after the last one was drawn (the progress bar stood at 100% meanwhile). New: ``gpuviz.export.gif.GifWriter``,
one palette from three sample frames, each frame mapped and encoded as it arrives (only what changed).

The same frames feed both encoders. Printed: seconds for drawing, for each encoder, the ratio baseline/new, the
file sizes, the mean colour error of each against the drawn frames, and for the whole ``export_film`` (drawing +
encoding, as the CLI runs it) the time from the bar's last frame step to its end (what a person waits on with
the bar full).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402


def mean_error(path, frames) -> float:
    import imageio.v3 as iio

    back = iio.imread(path, index=None)[..., :3].astype(np.int16)
    return float(np.mean([np.abs(b - f).mean() for b, f in zip(back, frames)]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--size", default="1280x720")
    ap.add_argument("--fps", type=float, default=8.0)
    args = ap.parse_args(argv)
    w, h = (int(v) for v in args.size.split("x"))

    import imageio.v3 as iio
    import tqdm as tqdm_module

    from gpuviz.app import default_trace
    from gpuviz.export import gif as gif_module
    from gpuviz.export.gif import GifWriter
    from gpuviz.ui.film import Stage, export_film

    trace = default_trace()
    tmp = Path(tempfile.mkdtemp(prefix="gpuviz_gif_bench_"))
    t_stage = time.perf_counter()
    with Stage(trace, None, size=(w, h), caption=True) as stage:
        t0 = time.perf_counter()
        stage_s = t0 - t_stage
        frames = [stage.array(f) for f in range(args.frames)]
        draw_s = time.perf_counter() - t0

    base = tmp / "baseline.gif"
    t0 = time.perf_counter()
    marked = [f.copy() for f in frames]
    for i, im in enumerate(marked):  # as the old code did: keep identical frames apart
        im[-1, -1, 2] = (int(im[-1, -1, 2]) & 0xFE) | (i & 1)
    iio.imwrite(str(base), np.stack(marked), extension=".gif", plugin="pillow",
                duration=int(round(1000.0 / args.fps)), loop=0)
    base_s = time.perf_counter() - t0

    new = tmp / "new.gif"
    t0 = time.perf_counter()
    picks = sorted({0, (args.frames - 1) // 2, args.frames - 1})
    with GifWriter(new, args.fps, palette_from=[frames[i] for i in picks]) as writer:
        for f in frames:
            writer.append(f)
    new_s = time.perf_counter() - t0

    # the whole export as the CLI runs it, and how long the bar stands full-but-one before the file is done
    steps = []
    real = tqdm_module.tqdm

    class Bar(real):
        def update(self, n=1):
            steps.append((time.perf_counter(), self.n + n, self.total))
            return super().update(n)

    tqdm_module.tqdm = Bar
    try:
        t0 = time.perf_counter()
        film = export_film(trace, tmp / "film.gif", frames=f"0:{args.frames}", size=(w, h), fps=args.fps, progress=True)
        film_s = time.perf_counter() - t0
    finally:
        tqdm_module.tqdm = real
    last_frame_step = next(t for t, n, total in steps if n == total - 1)
    tail_s = steps[-1][0] - last_frame_step
    assert gif_module.GifWriter is GifWriter

    print(f"# bench/export_gif.py --frames {args.frames} --size {args.size} --fps {args.fps:g}")
    print(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, python {platform.python_version()}, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    print(f"opening the stage (an offscreen window): {stage_s:.2f} s; drawing {args.frames} frames of the window at "
          f"{w}x{h}: {draw_s:.2f} s")
    print(f"baseline encode (imageio/Pillow save_all, after the last frame): {base_s:.2f} s, "
          f"{base.stat().st_size / 1e6:.2f} MB, mean colour error {mean_error(base, frames):.2f}")
    print(f"new encode (GifWriter, frame by frame): {new_s:.2f} s, {new.stat().st_size / 1e6:.2f} MB, "
          f"mean colour error {mean_error(new, frames):.2f}")
    print(f"ratio baseline/new encode: {base_s / new_s:.1f}x")
    print(f"export_film, {args.frames} frames (drawing + encoding, as `gpuviz export` runs it): {film_s:.2f} s; "
          f"the bar's last step came {tail_s:.2f} s after its last frame step "
          f"(the baseline's bar stood there for its whole encode, {base_s:.2f} s)")
    old_s = stage_s + draw_s + base_s
    print(f"old export (stage + drawing + baseline encode, the same steps export_film took before): {old_s:.2f} s")
    print(f"ratio old export / new export: {old_s / film_s:.1f}x")
    _ = film
    return 0


if __name__ == "__main__":
    sys.exit(main())
