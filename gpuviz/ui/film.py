"""Pictures and films of a trace: a view or the whole window to PNG or SVG, a frame range to GIF or MP4.

The whole window or one of its views, offscreen, photographed frame by frame (:class:`Stage`); it lives beside
the window because it drives a :class:`~gpuviz.ui.window.MainWindow`. Qt is imported when a stage is made, so
:func:`export` of a Qt-free format (Perfetto JSON, HTML) does not load it.

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

from ..export import FORMATS
from ..export.framerange import parse_frames
from ..export.gif import GifWriter
from ..export.html import export_html
from ..export.perfetto import write_perfetto
from ..model.narration import Narrator
from ..model.prepared import Prepared, prepare
from ..qt_platform import ensure_platform
from ..style.theme import get_theme


def _application():
    if not os.environ.get("QT_QPA_PLATFORM") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or sys.platform in ("win32", "darwin")
    ):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6.QtWidgets import QApplication

    if QApplication.instance() is None:
        ensure_platform()  # a platform plugin that cannot load is a plain message with its fix, not Qt's abort
    return QApplication.instance() or QApplication(sys.argv[:1])


#: the smallest size the whole window is laid out at in a picture or film (the app opens at it on a large screen)
LAYOUT_SIZE = (1600, 900)


class Stage:
    """An offscreen window (or one view) showing a trace (a :class:`Trace`, or its :class:`Prepared` from whoever
    opened it), to be photographed frame by frame.

    ``view``: a view id (``grid``, ``memory`` ...) or None/"window" for the whole window.
    """

    def __init__(self, trace, view: str | None = None, size=(1280, 720), theme: str = "light", scale: float = 1.0,
                 caption: bool = False, narrator: Narrator | None = None):
        self.app = _application()
        # Qt (and the window code over it) loads when a stage is made: export() of a Qt-free format does not load it
        from PySide6.QtCore import Qt

        from .session import Session
        from .views.base import available_views
        from .window import MainWindow

        self.width, self.height = (int(v) for v in size)
        if self.width < 64 or self.height < 64:
            raise ValueError(f"size {self.width}x{self.height} is too small: at least 64x64")
        views = available_views()
        if view not in (None, "window") and view not in views:
            raise ValueError(f"no view named {view!r}; views: window, {', '.join(views)}")
        self.session = Session(theme=get_theme(theme, scale))
        self.session.set_trace(trace, "")  # a trace is prepared there, as in the window; a Prepared is taken as it is
        self.frames = self.session.frames
        self.narrator = narrator or Narrator(self.session.prepared)
        self.caption = caption
        self.is_window = view in (None, "window")
        # the narration band along the bottom has a height of its own: it is added below the picture, not drawn
        # over the window's lowest rows (the transport and the status line)
        self.band = self._band_height() if caption else 0
        # the whole window is laid out at no less than the app's own window size (1600x900) and the picture
        # scaled to the size asked for: at 1280x720 the window's default layout is cramped (source wrapped after
        # a dozen characters, memory plots a few pixels tall), and a film is watched, not clicked
        self.layout_factor = max(1.0, LAYOUT_SIZE[0] / self.width,
                                 LAYOUT_SIZE[1] / max(1, self.height - self.band)) if self.is_window else 1.0
        if self.is_window:
            self.widget = MainWindow(session=self.session)
            self.widget.menuBar().hide()  # menus in a picture only take room
        else:
            self.widget = views[view](self.session)
        self.widget.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
        self.widget.resize(*self.layout_size)
        self.widget.show()
        self.app.processEvents()
        if self.is_window:
            self.widget.arrange_default()
        else:
            self.widget.refresh()
        for _ in range(3):  # dock layouts settle over a few passes
            self.app.processEvents()
        if (self.widget.width(), self.widget.height()) != self.layout_size:
            # the window grew to the minimum of its docks as they stood before arrange_default (all in one column:
            # 1767x1217 for a 1767x900 film); arranged, they fit the size the film is laid out at again
            self.widget.resize(*self.layout_size)
            for _ in range(3):
                self.app.processEvents()
        if self.is_window and hasattr(self.widget, "_hide_stale_tab_bars"):
            self.widget._hide_stale_tab_bars()

    @property
    def n_frames(self) -> int:
        return self.frames.n_frames

    @property
    def layout_size(self) -> tuple[int, int]:
        """The size the widget is laid out at (the picture above the band is scaled from it)."""
        f = self.layout_factor
        return int(round(self.width * f)), int(round((self.height - self.band) * f))

    def _band_height(self) -> int:
        return int(self._caption_px() * 3.4)

    def _caption_px(self) -> int:
        return max(18, int(round(self.height * 0.028)))

    def goto(self, f: int) -> None:
        self.session.set_frame(int(f))
        if not self.is_window:
            self.widget.refresh()
        self.app.processEvents()

    def image(self, f: int | None = None):
        """A QImage (RGB32) of the stage (at frame ``f`` when given), exactly ``width`` x ``height``.

        The widget is painted straight into the picture at its size (a painter scaled by 1 / layout_factor), not
        grabbed at its layout size and then scaled: text and lines are drawn at the film's resolution, and a
        frame costs one paint instead of a paint, a conversion and a smooth rescale."""
        from PySide6.QtCore import QPoint
        from PySide6.QtGui import QColor, QImage, QPainter

        if f is not None:
            self.goto(f)
        img = QImage(self.width, self.height, QImage.Format.Format_RGB32)
        img.fill(QColor(self.session.theme.background))
        painter = QPainter(img)
        try:
            painter.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing
                                   | QPainter.RenderHint.SmoothPixmapTransform)
            painter.save()
            painter.scale(1.0 / self.layout_factor, 1.0 / self.layout_factor)
            self.widget.render(painter, QPoint(0, 0))
            painter.restore()
            if self.band and self.n_frames:
                self._draw_caption(painter, self.session.frame)
        finally:
            painter.end()
        return img

    def array(self, f: int | None = None) -> np.ndarray:
        """The stage as an (height, width, 3) uint8 array."""
        img = self.image(f)
        ptr = img.constBits()
        arr = np.frombuffer(ptr, dtype=np.uint8, count=img.sizeInBytes()).reshape(img.height(), img.bytesPerLine())
        # RGB32 is 0xffRRGGBB per pixel: B, G, R, 255 in memory on a little-endian machine
        bgra = arr[:, : img.width() * 4].reshape(img.height(), img.width(), 4)
        order = [2, 1, 0] if sys.byteorder == "little" else [1, 2, 3]
        return np.ascontiguousarray(bgra[:, :, order])

    def _draw_caption(self, painter, f: int) -> None:
        """The frame's caption in the band along the bottom, in the theme's colours, at least 18 px."""
        from PySide6.QtCore import QRect, Qt
        from PySide6.QtGui import QColor, QFont

        theme = self.session.theme
        text = f"frame {f + 1:,}/{self.n_frames:,} · {self.narrator.text(f)}"
        px = self._caption_px()
        top = self.height - self.band
        painter.fillRect(0, top, self.width, self.band, QColor(theme.background))
        painter.setPen(QColor(theme.grid))
        painter.drawLine(0, top, self.width, top)
        font = QFont()
        font.setPixelSize(px)
        painter.setFont(font)
        painter.setPen(QColor(theme.foreground))
        rect = QRect(px // 2, top + px // 4, self.width - px, self.band - px // 2)
        painter.drawText(rect, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter | Qt.TextFlag.TextWordWrap), text)

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
            painter.scale(1.0 / self.layout_factor, 1.0 / self.layout_factor)  # the layout drawn at the size asked for
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
                caption: bool = True, name: str | None = None, **stage_options) -> Path:
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
        # one more step than frames: finishing the file (the MP4 encoder's flush; the GIF's trailer), so that the
        # bar reaches its end when the file is written, not when the last frame is drawn
        # ``name``: the file as the person named it (the CLI writes a temporary file and moves it into place: the
        # bar said '.film.gif.export-k2j3.tmp')
        shown = Path(name).name if name else out.name
        bar = tqdm(total=stop - start + 1, desc=shown, unit="step", disable=not progress, file=sys.stderr)
        try:
            if fmt == "mp4":
                writer = imageio.get_writer(str(out), format="FFMPEG", mode="I", fps=fps, codec="libx264",
                                            pixelformat="yuv420p", macro_block_size=1, quality=8)
                try:
                    for f in range(start, stop):
                        writer.append_data(stage.array(f))
                        bar.update(1)
                finally:
                    bar.set_description(f"{shown}: finishing the MP4")
                    writer.close()
                    bar.update(1)
            else:
                # the palette from a few frames across the range (a window's colours barely change over a film),
                # then each frame is encoded as it is drawn: the bar covers the encoding, and ends with the file
                picks = sorted({start, (start + stop - 1) // 2, stop - 1})
                with GifWriter(out, fps, palette_from=[stage.array(f) for f in picks]) as writer:
                    for f in range(start, stop):
                        writer.append(stage.array(f))
                        bar.update(1)
                bar.update(1)
        finally:
            bar.close()
    return out


def export(trace, out, fmt: str, frames=None, frame: int = 0, view: str | None = None, size=(1280, 720),
           theme: str = "light", scale: float = 1.0, fps: float = 8.0, caption: bool | None = None,
           progress: bool = True, timing_sets=(), name: str | None = None):
    """Export ``trace`` to ``out`` in ``fmt`` (one of :data:`gpuviz.export.FORMATS`); returns the path written.
    ``name``: what a film's progress bar calls the file (``out`` may be a temporary file)."""
    fmt = fmt.lower()
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; formats: {', '.join(FORMATS)}")
    prepared = trace if isinstance(trace, Prepared) else prepare(trace)  # the exports' entry: prepared once, here
    if fmt == "html":
        return export_html(prepared, out, frames=frames, theme=theme)
    if fmt == "perfetto":
        n = prepared.frames.n_frames
        rng = parse_frames(frames, n) if n else (0, 0)
        return write_perfetto(out, prepared, frame_range=rng, timing_sets=timing_sets)
    stage = dict(view=view, size=size, theme=theme, scale=scale)
    if fmt in ("png", "svg"):
        return export_image(prepared, out, fmt, frame=frame, caption=bool(caption), **stage)
    return export_film(prepared, out, fmt, frames=frames, fps=fps, progress=progress,
                       caption=True if caption is None else caption, name=name, **stage)
