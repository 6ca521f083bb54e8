"""File ▸ Export an HTML page: the window's launch as one page that replays it offline in a browser.

The page is built on a worker thread (numpy only, :mod:`gpuviz.export.html`): the window keeps playing.
It uses the window's own frames and narrator, so the page's words are the ones on screen. A launch too
big for one page asks for a frame range (around the current frame) and tries again.
"""

from __future__ import annotations

from PySide6.QtCore import QThread
from PySide6.QtWidgets import QFileDialog, QInputDialog

from ..export.html import DEFAULT_MAX_BYTES, PageTooBig, export_html
from ..export.framerange import window_frames  # a range as the window numbers frames (from 1, both ends included)


class HtmlExportJob(QThread):
    """Writes one page off the GUI thread; ``error`` holds what went wrong ("" when it worked)."""

    def __init__(self, prepared, narrator, path: str, frame_range, theme: str, parent=None,
                 max_bytes: int | None = None):
        super().__init__(parent)
        self.max_bytes = max_bytes
        self.prepared, self.narrator = prepared, narrator
        self.path, self.frame_range, self.theme = path, frame_range, theme
        self.error, self.too_big, self.out = "", False, None

    def run(self) -> None:
        try:
            self.out = export_html(self.prepared, self.path, frames=self.frame_range, theme=self.theme,
                                   max_bytes=self.max_bytes or DEFAULT_MAX_BYTES, narrator=self.narrator)
        except PageTooBig as e:
            self.error, self.too_big = str(e), True
        except Exception as e:  # noqa: BLE001 - reported in the window, never a crashed thread
            self.error = f"{type(e).__name__}: {e}"


def export_html_dialog(window, path: str | None = None, frame_range=None):
    """Ask where (unless ``path``), then write the page on a thread; returns the job (None when cancelled)."""
    s = window.session
    if s.trace is None or s.frames is None or not s.frames.n_frames:
        window.launch_panel.show_error("There is no launch to export: open or capture one first.")
        return None
    if path is None:
        path, _ = QFileDialog.getSaveFileName(window, "Export a page that replays this launch in a browser",
                                              f"{s.trace.launch.kernel_name}.html", "HTML page (*.html)")
        if not path:
            return None
    narrator = getattr(window, "_narrator", None)
    if getattr(window, "_narrator_frames", None) is not s.frames:
        narrator = None  # the page narrates the launch itself
    theme = "dark" if s.theme.dark else "light"
    job = HtmlExportJob(s.prepared, narrator, path, window_frames(frame_range), theme, window)
    job.finished.connect(lambda: _done(window, job))
    window.statusBar().showMessage(f"writing {path} …")
    window._html_jobs = [*getattr(window, "_html_jobs", []), job]
    job.start()
    return job


def _done(window, job: HtmlExportJob) -> None:
    window._html_jobs = [j for j in getattr(window, "_html_jobs", []) if j is not job]
    if job.out is not None:
        window.statusBar().showMessage(f"saved {job.out} ({job.out.stat().st_size / 1e6:.2f} MB): open it in any browser", 15000)
        return
    if job.too_big and window.isVisible():
        n = window.session.frames.n_frames
        f = window.session.frame
        start = max(1, f + 1 - 1000)
        text, ok = QInputDialog.getText(window, "Too big for one page",
                                        f"{job.error}\n\nFrames to put in the page, A:B (as numbered here, of {n:,}):",
                                        text=f"{start}:{min(n, start + 1999)}")
        if ok and text.strip():
            export_html_dialog(window, job.path, text.strip())
            return
    window.launch_panel.show_error(f"Could not export {job.path}: {job.error}")
