"""An animated GIF written frame by frame as the frames are drawn, so that a progress bar covers the encoding.

    writer = GifWriter("film.gif", fps=8, palette_from=[first, middle, last])   # (H, W, 3) uint8 arrays
    for rgb in frames:
        writer.append(rgb)      # maps the frame to the palette, encodes what changed, writes it
    writer.close()

Why not Pillow's ``save(save_all=True)``: it keeps every frame, quantizes each one anew (median cut over a
1280x720 frame is most of a second) and encodes them all at the end, after the last frame was drawn, so a 60-frame
export spent most of its time after its progress bar had reached 100%. A window's pictures hold few colours
(the theme's, the state colours, anti-aliased text between them), so one palette made from a few sample frames
serves the whole film: each frame is mapped to it exactly through a lookup table over 24-bit colours, and only
the rectangle that changed since the previous frame is encoded, with its unchanged pixels transparent (GIF
disposal 1 keeps the previous frame under them). The LZW encoding and the file format are Pillow's
(``GifImagePlugin.getheader`` / ``getdata``, its interface for writing a GIF piece by piece).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: palette slots for colours; the last one of the 256 is the transparent index of delta frames
N_COLOURS = 255
TRANSPARENT = 255
UNSEEN = 0xFFFF


def _pack(rgb: np.ndarray) -> np.ndarray:
    """(..., 3) uint8 -> (...) uint32 0xRRGGBB."""
    out = rgb[..., 0].astype(np.uint32)
    out <<= 8
    out |= rgb[..., 1]
    out <<= 8
    out |= rgb[..., 2]
    return out


def make_palette(samples) -> np.ndarray:
    """(N_COLOURS, 3) uint8: the most frequent colours of the sample frames (a window's flat colours and most of
    its text), the rest of the slots filled by a median cut of the remaining colours (rarer shades)."""
    from PIL import Image

    packed = np.concatenate([_pack(np.asarray(s)).ravel() for s in samples])
    colours, counts = np.unique(packed, return_counts=True)
    order = np.argsort(-counts, kind="stable")
    if len(colours) <= N_COLOURS:
        chosen = colours[order]
    else:
        n_frequent = N_COLOURS * 3 // 4
        chosen = colours[order[:n_frequent]]
        rest = colours[order[n_frequent:]]
        rest_rgb = np.stack([(rest >> 16) & 255, (rest >> 8) & 255, rest & 255], axis=1).astype(np.uint8)
        cut = Image.fromarray(rest_rgb[None, :, :]).quantize(colors=N_COLOURS - n_frequent,
                                                             method=Image.Quantize.MEDIANCUT)
        extra = np.frombuffer(bytes(cut.getpalette()[: 3 * (N_COLOURS - n_frequent)]), np.uint8).reshape(-1, 3)
        chosen = np.concatenate([chosen, _pack(extra)])
    rgb = np.stack([(chosen >> 16) & 255, (chosen >> 8) & 255, chosen & 255], axis=1).astype(np.uint8)
    out = np.zeros((N_COLOURS, 3), np.uint8)
    out[: len(rgb)] = rgb[:N_COLOURS]
    return out


class GifWriter:
    """Writes an animated GIF (looping) one frame at a time; see the module's docstring."""

    def __init__(self, path, fps: float, palette_from, loop: int = 0):
        if fps <= 0:
            raise ValueError(f"fps must be positive, not {fps}")
        self.path = Path(path)
        self.fps = float(fps)
        self.loop = loop
        self.palette = make_palette(palette_from)
        self._pal_int = self.palette.astype(np.int32)
        # colour (0xRRGGBB) -> palette index (UNSEEN until the colour first appears): exact, one gather a frame
        self._lut = np.full(1 << 24, UNSEEN, np.uint16)
        self._previous: np.ndarray | None = None
        self._fh = open(self.path, "wb")
        self.frames = 0

    def _indices(self, rgb: np.ndarray) -> np.ndarray:
        packed = _pack(rgb)
        idx = self._lut[packed]
        unseen = idx == UNSEEN
        if unseen.any():
            new = np.unique(packed[unseen])
            new_rgb = np.stack([(new >> 16) & 255, (new >> 8) & 255, new & 255], axis=1).astype(np.int32)
            for lo in range(0, len(new), 4096):  # nearest palette colour, in chunks (memory)
                d = ((new_rgb[lo:lo + 4096, None, :] - self._pal_int[None, :, :]) ** 2).sum(axis=2)
                self._lut[new[lo:lo + 4096]] = d.argmin(axis=1)
            idx = self._lut[packed]
        return idx.astype(np.uint8)

    def _image(self, indices: np.ndarray):
        from PIL import Image

        im = Image.fromarray(np.ascontiguousarray(indices), mode="P")
        flat = self.palette.ravel().tolist() + [0, 0, 0] * (256 - N_COLOURS)
        im.putpalette(flat)
        return im

    def _duration(self) -> int:
        """This frame's duration in ms, a multiple of 10 (GIF counts hundredths of a second), chosen so that the
        film's running time stays true to ``fps`` (8 fps: 120, 130, 120, 130 ... ms, not 120 throughout)."""
        k = self.frames
        at = lambda n: int(round(n * 100.0 / self.fps)) * 10  # noqa: E731 - ms at frame n, in hundredths
        return max(10, at(k + 1) - at(k))

    def append(self, rgb: np.ndarray) -> None:
        """One frame, (H, W, 3) uint8, the same size as the first."""
        from PIL import GifImagePlugin

        rgb = np.asarray(rgb)
        if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
            raise ValueError(f"a frame is an (height, width, 3) uint8 array, not {rgb.dtype} {rgb.shape}")
        idx = self._indices(rgb)
        fh = self._fh
        if self._previous is None:
            im = self._image(idx)
            header, _ = GifImagePlugin.getheader(im, info={"loop": self.loop, "duration": self._duration()})
            for part in header:
                fh.write(part)
            for part in GifImagePlugin.getdata(im, (0, 0), duration=self._duration(), disposal=1):
                fh.write(part)
        else:
            if idx.shape != self._previous.shape:
                raise ValueError(f"frame {self.frames + 1} is {idx.shape[1]}x{idx.shape[0]}, the film "
                                 f"{self._previous.shape[1]}x{self._previous.shape[0]}")
            changed = idx != self._previous
            rows, cols = np.flatnonzero(changed.any(axis=1)), np.flatnonzero(changed.any(axis=0))
            if len(rows):
                y0, y1, x0, x1 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
                crop = idx[y0:y1, x0:x1].copy()
                crop[~changed[y0:y1, x0:x1]] = TRANSPARENT
            else:  # an unchanged frame is still a frame (the film keeps its length): one transparent pixel
                y0 = x0 = 0
                crop = np.full((1, 1), TRANSPARENT, np.uint8)
            im = self._image(crop)
            for part in GifImagePlugin.getdata(im, (int(x0), int(y0)), duration=self._duration(), disposal=1,
                                               transparency=TRANSPARENT):
                fh.write(part)
        self._previous = idx
        self.frames += 1

    def close(self) -> Path:
        if not self._fh.closed:
            self._fh.write(b";")  # the GIF trailer
            self._fh.close()
        return self.path

    def abort(self) -> None:
        """Close and remove a film that will not be finished."""
        if not self._fh.closed:
            self._fh.close()
        self.path.unlink(missing_ok=True)

    def __enter__(self) -> "GifWriter":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
