"""Read back what an export wrote before anyone is told it is there.

    check_export(path, "gif", size=(1280, 720), n_frames=120)

Pictures and films are decoded with imageio (PNG and GIF through Pillow, MP4 through imageio-ffmpeg) and their
frames counted and measured; an SVG is parsed as XML; a Perfetto timeline as JSON; an HTML page as HTML, with
its embedded data decoded. A file that does not read back as what was meant is a :class:`WrittenFileError`
that names the file and says what is wrong. Qt-free (imageio and the standard library).
"""

from __future__ import annotations

import base64
import gzip
import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path


class WrittenFileError(OSError):
    """A file gpuviz wrote does not read back as what it meant to write."""


def check_export(path, fmt: str, size=None, n_frames: int | None = None, name=None) -> str:
    """Check the export at ``path`` (``fmt``: png, svg, gif, mp4, perfetto, html); ``size`` (width, height)
    and ``n_frames``, when given, must be what the file holds; ``name``: the file to name in messages (the
    output a temporary file will be moved to). Returns a short description of what it holds ('120 frame(s)
    of 1280x720'); raises :class:`WrittenFileError` otherwise."""
    checks = {"png": _png, "svg": _svg, "gif": _film, "mp4": _film, "perfetto": _perfetto, "html": _html}
    if fmt not in checks:
        raise ValueError(f"no read-back check for {fmt!r}; formats: {', '.join(checks)}")
    path = Path(path)
    try:
        if path.stat().st_size == 0:
            raise WrittenFileError(f"{name or path}: the {fmt} file is empty (0 bytes)")
    except FileNotFoundError:
        raise WrittenFileError(f"{name or path}: the {fmt} file was not written") from None
    try:
        return checks[fmt](path, fmt, size, n_frames)
    except WrittenFileError as exc:
        if name is None:
            raise
        raise WrittenFileError(str(exc).replace(str(path), str(name), 1)) from None


def _fail(path: Path, fmt: str, what: str):
    raise WrittenFileError(f"{path}: the {fmt} file written does not read back: {what}")


def _size_text(w: int, h: int) -> str:
    return f"{w}x{h}"


def _png(path: Path, fmt: str, size, _n_frames) -> str:
    import imageio.v3 as iio

    try:
        img = iio.imread(path)
    except Exception as exc:  # noqa: BLE001 - any decoder failure is a file that does not read back
        _fail(path, fmt, f"{type(exc).__name__}: {exc}")
    h, w = img.shape[:2]
    if size is not None and (w, h) != (int(size[0]), int(size[1])):
        _fail(path, fmt, f"it is {_size_text(w, h)}, not {_size_text(*size)}")
    return f"a picture of {_size_text(w, h)}"


def _svg(path: Path, fmt: str, size, _n_frames) -> str:
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as exc:
        _fail(path, fmt, f"not well-formed XML ({exc})")
    if not root.tag.endswith("svg"):
        _fail(path, fmt, f"its root element is <{root.tag}>, not <svg>")
    if len(root) == 0:
        _fail(path, fmt, "the drawing is empty")
    box = root.get("viewBox")
    if size is not None and box is not None:
        try:
            _x, _y, w, h = (float(v) for v in box.replace(",", " ").split())
        except ValueError:
            _fail(path, fmt, f"its viewBox {box!r} is not four numbers")
        if (round(w), round(h)) != (int(size[0]), int(size[1])):
            _fail(path, fmt, f"its viewBox is {w:g}x{h:g}, not {_size_text(*size)}")
    return f"a drawing of {box or 'unknown size'}"


def _film(path: Path, fmt: str, size, n_frames) -> str:
    import imageio.v2 as imageio

    count, shapes = 0, set()
    try:
        reader = imageio.get_reader(str(path), format="FFMPEG" if fmt == "mp4" else "GIF", mode="I")
        try:
            for frame in reader:  # every frame decoded: a cut or damaged film fails here
                count += 1
                shapes.add((frame.shape[1], frame.shape[0]))
        finally:
            reader.close()
    except Exception as exc:  # noqa: BLE001 - any decoder failure is a file that does not read back
        _fail(path, fmt, f"{type(exc).__name__}: {exc} (after {count} frame(s))")
    if count == 0:
        _fail(path, fmt, "it holds no frame")
    if n_frames is not None and count != int(n_frames):
        _fail(path, fmt, f"it holds {count} frame(s), not {n_frames}")
    if size is not None and shapes != {(int(size[0]), int(size[1]))}:
        _fail(path, fmt, f"its frames are {', '.join(_size_text(*s) for s in sorted(shapes))}, not {_size_text(*size)}")
    return f"{count} frame(s) of {', '.join(_size_text(*s) for s in sorted(shapes))}"


def _perfetto(path: Path, fmt: str, _size, _n_frames) -> str:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError) as exc:
        _fail(path, fmt, f"not valid JSON ({exc})")
    events = data.get("traceEvents") if isinstance(data, dict) else None
    if not isinstance(events, list) or not events:
        _fail(path, fmt, "it has no 'traceEvents' list of events")
    if not all(isinstance(e, dict) and "ph" in e for e in events):
        _fail(path, fmt, "an entry of 'traceEvents' is not a trace event (an object with 'ph')")
    return f"{len(events):,} timeline events"


class _PageReader(HTMLParser):
    """The page's element names and the text of its embedded data script."""

    def __init__(self):
        super().__init__()
        self.tags: set[str] = set()
        self.in_data = False
        self.data_parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.in_data = tag == "script" and dict(attrs).get("id") == "gpuviz-data"

    def handle_endtag(self, tag):
        if tag == "script":
            self.in_data = False

    def handle_data(self, data):
        if self.in_data:
            self.data_parts.append(data)


def _html(path: Path, fmt: str, _size, _n_frames) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        _fail(path, fmt, f"not UTF-8 text ({exc})")
    page = _PageReader()
    try:
        page.feed(text)
        page.close()
    except Exception as exc:  # noqa: BLE001 - the parser's own failures
        _fail(path, fmt, f"not HTML ({exc})")
    missing = [t for t in ("html", "body", "script") if t not in page.tags]
    if missing:
        _fail(path, fmt, f"it lacks <{'>, <'.join(missing)}>")
    blob = "".join(page.data_parts).strip()
    if not blob:
        _fail(path, fmt, "it has no embedded trace data (script#gpuviz-data)")
    try:
        data = json.loads(gzip.decompress(base64.b64decode(blob, validate=True)))
    except (ValueError, OSError, EOFError) as exc:
        _fail(path, fmt, f"its embedded data does not decode ({type(exc).__name__}: {exc})")
    scenes = data.get("scenes") if isinstance(data, dict) else None
    if not isinstance(scenes, list) or not scenes:
        _fail(path, fmt, "its embedded data holds no scene")
    n = sum(int(sc.get("last", 0)) - int(sc.get("first", 0)) + 1 for sc in scenes if isinstance(sc, dict))
    return f"a page of {len(scenes)} scene(s), {n:,} frame(s)"
