"""Pictures and films of a trace: a view or the whole window to PNG or SVG, a frame range to GIF or MP4.

Everything renders offscreen (no window appears), through the same views the app shows. Films are
encoded by imageio (Pillow for GIF, imageio-ffmpeg's libx264 for MP4), never by hand; a tqdm progress
bar runs on stderr for long exports. Each film frame can carry the frame's narration caption in a band
along the bottom, so a film stands on its own in a slide deck.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

from ..model.frames import Frames
from ..model.narration import Narrator


def _application():
    if not os.environ.get("QT_QPA_PLATFORM") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or sys.platform in ("win32", "darwin")
    ):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6.QtWidgets import QApplication

    return QApplication.instance() or QApplication(sys.argv[:1])


def parse_frames(text, n_frames: int) -> tuple[int, int]:
    """``"A:B"`` (B exclusive, either may be empty or negative, as a Python slice) -> (start, stop)."""
    if text is None or text == "":
        return 0, n_frames
    if isinstance(text, tuple):
        a, b = text
    else:
        parts = str(text).split(":")
        if len(parts) != 2:
            raise ValueError(f"frames {text!r}: write A:B (B exclusive), e.g. 0:120, :50 or -30:")
        try:
            a = int(parts[0]) if parts[0].strip() else None
            b = int(parts[1]) if parts[1].strip() else None
        except ValueError:
            raise ValueError(f"frames {text!r}: A and B must be whole numbers") from None
    start, stop, _ = slice(a, b).indices(n_frames)
    if stop <= start:
        raise ValueError(f"frames {text!r} select nothing: this trace has {n_frames} frames (0..{n_frames - 1})")
    return start, stop


class Stage:
    """An offscreen window (or one view) showing a trace, to be photographed frame by frame.

    ``view``: a view id (``grid``, ``memory`` ...) or None/"window" for the whole window.
    """

    def __init__(self, trace, view: str | None = None, size=(1280, 720), theme: str = "light", scale: float = 1.0,
                 caption: bool = False, narrator: Narrator | None = None, frames: Frames | None = None):
        self.app = _application()
        from PySide6.QtCore import Qt

        from ..ui.session import Session
        from ..ui.theme import get_theme
        from ..ui.views.base import available_views
        from ..ui.window import MainWindow

        self.width, self.height = (int(v) for v in size)
        if self.width < 64 or self.height < 64:
            raise ValueError(f"size {self.width}x{self.height} is too small: at least 64x64")
        views = available_views()
        if view not in (None, "window") and view not in views:
            raise ValueError(f"no view named {view!r}; views: window, {', '.join(views)}")
        self.session = Session(theme=get_theme(theme, scale))
        self.frames = frames or Frames(trace)
        self.session.set_trace(trace, "", frames=self.frames)
        self.narrator = narrator or Narrator(self.frames)
        self.caption = caption
        self.is_window = view in (None, "window")
        if self.is_window:
            self.widget = MainWindow(session=self.session)
        else:
            self.widget = views[view](self.session)
        self.widget.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
        self.widget.resize(self.width, self.height)
        self.widget.show()
        self.app.processEvents()
        if self.is_window:
            self.widget.arrange_default()
        else:
            self.widget.refresh()
        for _ in range(3):  # dock layouts settle over a few passes
            self.app.processEvents()
        if self.is_window and hasattr(self.widget, "_hide_stale_tab_bars"):
            self.widget._hide_stale_tab_bars()

    @property
    def n_frames(self) -> int:
        return self.frames.n_frames

    def goto(self, f: int) -> None:
        self.session.set_frame(int(f))
        if not self.is_window:
            self.widget.refresh()
        self.app.processEvents()

    def image(self, f: int | None = None):
        """A QImage of the stage (at frame ``f`` when given), exactly ``width`` x ``height``."""
        from PySide6.QtCore import Qt
        from PySide6.QtGui import QImage

        if f is not None:
            self.goto(f)
        img = self.widget.grab().toImage().convertToFormat(QImage.Format.Format_RGB888)
        if img.width() != self.width or img.height() != self.height:
            img = img.scaled(self.width, self.height, Qt.AspectRatioMode.IgnoreAspectRatio,
                             Qt.TransformationMode.SmoothTransformation)
        if self.caption and self.n_frames:
            self._draw_caption(img, self.session.frame)
        return img

    def array(self, f: int | None = None) -> np.ndarray:
        """The stage as an (height, width, 3) uint8 array."""
        img = self.image(f)
        ptr = img.constBits()
        arr = np.frombuffer(ptr, dtype=np.uint8, count=img.sizeInBytes()).reshape(img.height(), img.bytesPerLine())
        return arr[:, : img.width() * 3].reshape(img.height(), img.width(), 3).copy()

    def _draw_caption(self, img, f: int) -> None:
        """The frame's caption in a band along the bottom, in the theme's colours, at least 18 px."""
        from PySide6.QtCore import QRect, Qt
        from PySide6.QtGui import QColor, QFont, QPainter

        theme = self.session.theme
        text = f"frame {f + 1:,}/{self.n_frames:,} · {self.narrator.text(f)}"
        px = max(18, int(round(self.height * 0.028)))
        band = int(px * 3.4)
        painter = QPainter(img)
        try:
            painter.fillRect(0, img.height() - band, img.width(), band, QColor(theme.background))
            painter.setPen(QColor(theme.grid))
            painter.drawLine(0, img.height() - band, img.width(), img.height() - band)
            font = QFont()
            font.setPixelSize(px)
            painter.setFont(font)
            painter.setPen(QColor(theme.foreground))
            rect = QRect(px // 2, img.height() - band + px // 4, img.width() - px, band - px // 2)
            painter.drawText(rect, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter | Qt.TextFlag.TextWordWrap), text)
        finally:
            painter.end()

    def save_png(self, path, f: int | None = None) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not self.image(f).save(str(path), "PNG"):
            raise OSError(f"could not write {path}")
        return path

    def save_svg(self, path, f: int | None = None) -> Path:
        """Vector drawing of the stage (text and lines as vectors; pixel views as embedded images)."""
        from PySide6.QtCore import QPoint, QRect, QSize
        from PySide6.QtGui import QPainter
        from PySide6.QtSvg import QSvgGenerator

        if f is not None:
            self.goto(f)
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        gen = QSvgGenerator()
        gen.setFileName(str(path))
        gen.setSize(QSize(self.width, self.height))
        gen.setViewBox(QRect(0, 0, self.width, self.height))
        gen.setTitle(f"gpuviz: {self.session.trace.launch.kernel_name}")
        gen.setDescription(self.narrator.text(self.session.frame) if self.n_frames else "")
        painter = QPainter(gen)
        try:
            self.widget.render(painter, QPoint(0, 0))
        finally:
            painter.end()
        if not path.exists() or path.stat().st_size == 0:
            raise OSError(f"could not write {path}")
        return path

    def close(self) -> None:
        self.widget.close()
        self.widget.deleteLater()
        self.session.shutdown()
        self.app.processEvents()

    def __enter__(self) -> "Stage":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def export_image(trace, out, fmt: str | None = None, frame: int = 0, **stage_options) -> Path:
    """One frame of a view (or the window) to PNG or SVG (by ``fmt`` or the file's extension)."""
    fmt = (fmt or Path(out).suffix.lstrip(".")).lower()
    if fmt not in ("png", "svg"):
        raise ValueError(f"an image export is png or svg, not {fmt!r}")
    with Stage(trace, **stage_options) as stage:
        f = None
        if stage.n_frames:
            f = int(frame) + (stage.n_frames if int(frame) < 0 else 0)
            if not 0 <= f < stage.n_frames:
                raise ValueError(f"frame {frame} out of range: this trace has {stage.n_frames} frames")
        return stage.save_png(out, f) if fmt == "png" else stage.save_svg(out, f)


def export_film(trace, out, fmt: str | None = None, frames=None, fps: float = 8.0, progress: bool = True,
                caption: bool = True, **stage_options) -> Path:
    """Frames ``A:B`` (B exclusive) of a view (or the window) to an animated GIF or an MP4 (H.264).

    The film has exactly B - A frames of exactly the stage's size. MP4 needs an even width and height
    (H.264 in yuv420p, what every slide program plays).
    """
    import imageio.v2 as imageio
    from tqdm import tqdm

    out = Path(out)
    fmt = (fmt or out.suffix.lstrip(".")).lower()
    if fmt not in ("gif", "mp4"):
        raise ValueError(f"a film export is gif or mp4, not {fmt!r}")
    size = stage_options.get("size", (1280, 720))
    if fmt == "mp4" and (int(size[0]) % 2 or int(size[1]) % 2):
        raise ValueError(f"MP4 (H.264, yuv420p) needs an even width and height, not {size[0]}x{size[1]}")
    if fps <= 0:
        raise ValueError(f"fps must be positive, not {fps}")
    out.parent.mkdir(parents=True, exist_ok=True)
    with Stage(trace, caption=caption, **stage_options) as stage:
        start, stop = parse_frames(frames, stage.n_frames)
        # one more step than frames: the encoding, which for a GIF takes longer than drawing the frames did, so
        # the bar reaches its end when the file is written, not when the last frame is drawn
        bar = tqdm(total=stop - start + 1, desc=f"{out.name}", unit="step", disable=not progress, file=sys.stderr)
        try:
            if fmt == "mp4":
                writer = imageio.get_writer(str(out), format="FFMPEG", mode="I", fps=fps, codec="libx264",
                                            pixelformat="yuv420p", macro_block_size=1, quality=8)
                try:
                    for f in range(start, stop):
                        writer.append_data(stage.array(f))
                        bar.update(1)
                finally:
                    bar.set_description(f"{out.name}: finishing the MP4")
                    writer.close()
                    bar.update(1)
            else:
                import imageio.v3 as iio

                images = []
                for f in range(start, stop):
                    images.append(stage.array(f))
                    bar.update(1)
                # Pillow merges a frame identical to the one before into it (adding up the durations);
                # a film of N frames must have N frames, so each frame is told apart by the lowest bit of one
                # corner pixel, invisible to the eye
                for i, im in enumerate(images):
                    im[-1, -1, 2] = (int(im[-1, -1, 2]) & 0xFE) | (i & 1)
                bar.set_description(f"{out.name}: encoding the GIF")
                bar.refresh()
                iio.imwrite(str(out), np.stack(images), extension=".gif", plugin="pillow",
                            duration=int(round(1000.0 / fps)), loop=0)
                bar.update(1)
        finally:
            bar.close()
    return out
