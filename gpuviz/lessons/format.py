"""The lesson file: a sequence of scenes, read from TOML (``tomllib``) or JSON, checked field by field.

    title = "Shared-memory tiling"
    summary = "Why a tile in shared memory makes matrix multiply faster."

    [[scenes]]
    title = "Every thread reads a whole row and column"
    kernel = "matmul_naive"          # a bundled kernel (see `gpuviz kernels`) ...
    # trace = "naive.gpuviz"         # ... or a saved trace (relative to the lesson file)
    size = 32                        # problem size (default: the kernel's small size)
    block = [16, 16]                 # block shape (default: the kernel's default block)
    views = ["grid", "memory", "source"]
    layout = "columns"               # columns | rows | grid | focus (the first view large)
    frames = ["start", "end"]        # the scene's frame range: two stops
    stops = ["first global load", "first barrier", "end"]   # where each click goes
    notes = "This kernel moves {global_bytes} to and from global memory."

    [[scenes.questions]]
    at = "first global load"         # a stop
    ask = "How many 32-byte sectors will this warp touch?"
    answer = "sectors"               # a fact of that frame or a metric of the scene (computed, never typed)
    explain = "32 neighbouring floats are 128 bytes: 4 sectors."

Stops (``frames``, ``stops``, ``at``) are the names :meth:`gpuviz.model.narration.Narrator.find` knows,
so a lesson survives a change of problem size. ``notes`` and ``explain`` may hold ``{metric}``
placeholders (see :mod:`gpuviz.lessons.metrics`), and ``{kernel[NAME][metric]}`` for a kernel of an
earlier scene.

Every problem is reported with the file, the scene and the field: :class:`LessonError`.
"""

from __future__ import annotations

import json
import os
import stat
import string
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .metrics import FACT_NAMES, METRIC_NAMES
from .topics import missing_views

LAYOUTS = ("columns", "rows", "grid", "focus")
STEP_MODES = ("stops", "frame", "step", "barrier", "block")
BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"

_LESSON_KEYS = {"title", "summary", "scenes", "theme"}
_SCENE_KEYS = {"title", "kernel", "trace", "size", "block", "backend", "views", "layout", "frames", "stops", "step",
               "notes", "questions", "seed"}
_QUESTION_KEYS = {"at", "ask", "answer", "explain"}

# bounds on what a lesson file may ask for (a lesson is a few scenes of notes; every bound is far above
# what the shipped lessons use, and keeps a stranger's file from taking the memory or the afternoon)
MAX_FILE_BYTES = 1 << 20
MAX_SCENES = 200
MAX_QUESTIONS = 50  # per scene
MAX_LIST = 1000  # stops, views
MAX_TEXT = 20_000  # characters of one title, note, question or explanation
MAX_SIZE = 1 << 24  # a scene's problem size (the player also bounds it per kernel: MAX_SIZE_FACTOR)
MAX_SIZE_FACTOR = 8  # a scene plays a bundled kernel at most this many times its default size
MAX_SEED = (1 << 63) - 1
MAX_BLOCK = (1024, 1024, 64)  # CUDA's limits on a block's dimensions; 1,024 threads in all


class LessonError(ValueError):
    """A lesson file that cannot be played; the message names the file, the scene and the field."""


@dataclass
class Question:
    at: str | int
    ask: str
    answer: str  # a fact or metric name
    explain: str = ""


@dataclass
class Scene:
    title: str
    kernel: str = ""
    trace: str = ""  # path (absolute, or resolved against the lesson file's folder)
    size: int | None = None
    block: tuple | None = None
    backend: str = "cpu"
    seed: int = 0
    views: list[str] = field(default_factory=list)
    layout: str = "columns"
    frames: tuple = ("start", "end")
    stops: list = field(default_factory=list)
    step: str = ""  # "" = stops when given, else barrier when the launch has barriers, else frame
    notes: str = ""
    questions: list[Question] = field(default_factory=list)
    index: int = 0  # position in the lesson (0-based)

    @property
    def label(self) -> str:
        return f"scene {self.index + 1} ({self.title!r})"


@dataclass
class Lesson:
    title: str
    scenes: list[Scene]
    summary: str = ""
    path: Path | None = None
    theme: str = ""

    @property
    def name(self) -> str:
        return self.path.stem if self.path else self.title

    def where(self, scene: Scene | None = None, fld: str | None = None) -> str:
        parts = [str(self.path) if self.path else f"lesson {self.title!r}"]
        if scene is not None:
            parts.append(scene.label)
        if fld is not None:
            parts.append(f"field {fld!r}")
        return ", ".join(parts)


# ---- reading -------------------------------------------------------------------------------------------
#: the shipped lessons in the order a course takes them: each one's last step names the next
COURSE = ("simt_hierarchy", "host_device_flow", "shared_tiling", "bank_conflicts", "reduction_ladder",
          "fused_attention", "custom_kernel")


def next_lesson(name: str) -> str | None:
    """The shipped lesson that follows ``name`` in :data:`COURSE` (None after the last, or for another lesson)."""
    if name not in COURSE:
        return None
    k = COURSE.index(name) + 1
    return COURSE[k] if k < len(COURSE) else None


def builtin_lessons() -> dict[str, Path]:
    """The lessons shipped with gpuviz, by name."""
    return {p.stem: p for p in sorted(BUILTIN_DIR.glob("*.toml"))}


def find_lesson(name_or_path) -> Path:
    """A lesson file by path, or a shipped lesson by name."""
    p = Path(name_or_path)
    if p.exists():
        return p
    shipped = builtin_lessons()
    key = str(name_or_path)
    if key.endswith(".toml"):
        key = key[:-5]
    if key in shipped:
        return shipped[key]
    raise LessonError(f"no lesson file {name_or_path!r} and no shipped lesson of that name; "
                      f"shipped lessons: {', '.join(shipped) or 'none'}")


def load_lesson(name_or_path, known_views=None) -> Lesson:
    """Read and check a lesson (a path, or the name of a shipped one). ``known_views``: view ids the
    app has (checked when given)."""
    path = find_lesson(name_or_path)
    text = _read_text(path)
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError, RecursionError) as exc:  # ValueError: JSON, huge ints
        raise LessonError(f"{path}: not valid {'JSON' if path.suffix.lower() == '.json' else 'TOML'}: {exc}") from exc
    return parse_lesson(data, path=path, known_views=known_views)


def _read_text(path: Path) -> str:
    """The file's text, at most MAX_FILE_BYTES, never blocking on a FIFO or a device."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise LessonError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise LessonError(f"{path}: is not a regular file (a folder, a FIFO or a device); a lesson is a file")
        os.set_blocking(fd, True)
        if st.st_size > MAX_FILE_BYTES:
            raise LessonError(f"{path}: {st.st_size:,} bytes, over the {MAX_FILE_BYTES:,} a lesson file may have")
        try:
            raw = fh.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise LessonError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if len(raw) > MAX_FILE_BYTES:
        raise LessonError(f"{path}: over the {MAX_FILE_BYTES:,} bytes a lesson file may have")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LessonError(f"{path}: not UTF-8 text ({exc})") from exc


def parse_lesson(data, path: Path | None = None, known_views=None) -> Lesson:
    where = str(path) if path else "lesson"
    if not isinstance(data, dict):
        raise LessonError(f"{where}: a lesson is a table of fields (title, scenes)")
    unknown = set(data) - _LESSON_KEYS
    if unknown:
        raise LessonError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}; a lesson has "
                          f"{', '.join(sorted(_LESSON_KEYS))}")
    title = data.get("title")
    if not isinstance(title, str) or not title.strip():
        raise LessonError(f"{where}, field 'title': a lesson needs a title (text)")
    raw_scenes = data.get("scenes")
    if not isinstance(raw_scenes, list) or not raw_scenes:
        raise LessonError(f"{where}, field 'scenes': a lesson needs at least one [[scenes]] table")
    if len(raw_scenes) > MAX_SCENES:
        raise LessonError(f"{where}, field 'scenes': {len(raw_scenes):,} scenes, over the {MAX_SCENES} a lesson may have")
    lesson = Lesson(title=title.strip(), scenes=[], summary=_text(data.get("summary", ""), where, "summary"),
                    path=path, theme=_text(data.get("theme", ""), where, "theme"))
    if lesson.theme and lesson.theme not in ("light", "dark"):
        raise LessonError(f"{where}, field 'theme': 'light' or 'dark', not {lesson.theme!r}")
    seen_kernels: set[str] = set()
    for i, raw in enumerate(raw_scenes):
        scene = _parse_scene(raw, i, lesson, known_views, seen_kernels)
        lesson.scenes.append(scene)
        if scene.kernel:
            seen_kernels.add(scene.kernel)
    return lesson


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


def _text(v, where: str, fld: str) -> str:
    if not isinstance(v, str):
        raise LessonError(f"{where}, field {fld!r}: expected text, got {type(v).__name__} {_short(v)}")
    if len(v) > MAX_TEXT:
        raise LessonError(f"{where}, field {fld!r}: {len(v):,} characters, over the {MAX_TEXT:,} one field may have")
    return v.strip()


def _list(v, where: str, fld: str, limit: int = MAX_LIST) -> None:
    if isinstance(v, list) and len(v) > limit:
        raise LessonError(f"{where}, field {fld!r}: {len(v):,} items, over the {limit:,} it may have")


def _stop(v, where: str, fld: str):
    if isinstance(v, bool) or not isinstance(v, (str, int)) or (isinstance(v, str) and not v.strip()):
        raise LessonError(f"{where}, field {fld!r}: a stop is a frame number or a name such as 'first barrier' "
                          f"or 'end', not {_short(v)}")
    if isinstance(v, str):
        _text(v, where, fld)
    elif not -(1 << 31) <= v < (1 << 31):
        raise LessonError(f"{where}, field {fld!r}: frame {_short(v)} is out of range")
    return v


def _parse_scene(raw, i: int, lesson: Lesson, known_views, seen_kernels: set) -> Scene:
    base = lesson.where()
    if not isinstance(raw, dict):
        raise LessonError(f"{base}, scene {i + 1}: a scene is a table of fields")
    title = raw.get("title", f"Scene {i + 1}")
    scene = Scene(title=title[:200] if isinstance(title, str) else f"Scene {i + 1}", index=i)
    where = lambda fld: lesson.where(scene, fld)  # noqa: E731
    unknown = set(raw) - _SCENE_KEYS
    if unknown:
        raise LessonError(f"{lesson.where(scene)}: unknown field(s) {', '.join(sorted(unknown))}; a scene has "
                          f"{', '.join(sorted(_SCENE_KEYS))}")
    scene.title = _text(title, lesson.where(scene), "title")
    kernel, trace = raw.get("kernel", ""), raw.get("trace", "")
    if bool(kernel) == bool(trace):
        raise LessonError(f"{lesson.where(scene)}: give exactly one of 'kernel' (a bundled kernel) or 'trace' "
                          f"(a saved trace file)")
    if kernel:
        scene.kernel = _text(kernel, lesson.where(scene), "kernel")
    if trace:
        t = Path(_text(trace, lesson.where(scene), "trace"))
        if not t.is_absolute() and lesson.path is not None:
            t = lesson.path.parent / t
        scene.trace = str(t)
    _parse_launch(raw, scene, lesson)
    _parse_views(raw, scene, lesson, known_views)
    _parse_steps(raw, scene, lesson)
    scene.notes = _text(raw.get("notes", ""), lesson.where(scene), "notes")
    _check_placeholders(scene.notes, where("notes"), seen_kernels)
    qs = raw.get("questions", [])
    _list(qs, lesson.where(scene), "questions", MAX_QUESTIONS)
    if not isinstance(qs, list):
        raise LessonError(f"{where('questions')}: a list of [[scenes.questions]] tables")
    for k, q in enumerate(qs):
        scene.questions.append(_parse_question(q, k, scene, lesson, seen_kernels))
    # a scene that quotes timings, bank conflicts or sectors shows the view that shows them (words are checked
    # on the shipped lessons only: tests/test_lessons.py)
    missing = missing_views(scene, words=False)
    if missing:
        raise LessonError(f"{where('views')}: the scene talks about {'; '.join(missing)}: add that view to "
                          f"'views'")
    return scene


def _parse_launch(raw, scene: Scene, lesson: Lesson) -> None:
    """A scene's launch: ``size``, ``seed``, ``block``, ``backend``."""
    where = lambda fld: lesson.where(scene, fld)  # noqa: E731
    if "size" in raw:
        if isinstance(raw["size"], bool) or not isinstance(raw["size"], int) or not 1 <= raw["size"] <= MAX_SIZE:
            raise LessonError(f"{where('size')}: a whole number 1..{MAX_SIZE:,}, not {_short(raw['size'])}")
        scene.size = raw["size"]
    if "seed" in raw:
        if isinstance(raw["seed"], bool) or not isinstance(raw["seed"], int) or not 0 <= raw["seed"] <= MAX_SEED:
            raise LessonError(f"{where('seed')}: a whole number 0..2**63-1, not {_short(raw['seed'])}")
        scene.seed = raw["seed"]
    if "block" in raw:
        b = raw["block"]
        if isinstance(b, int) and not isinstance(b, bool):
            b = [b]
        if not (isinstance(b, list) and 1 <= len(b) <= 3 and all(isinstance(x, int) and not isinstance(x, bool)
                                                                  and 0 < x <= hi for x, hi in zip(b, MAX_BLOCK))):
            raise LessonError(f"{where('block')}: 1 to 3 positive whole numbers such as [256] or [16, 16] (at most "
                              f"1024 x 1024 x 64), not {_short(b)}")
        if b[0] * (b[1] if len(b) > 1 else 1) * (b[2] if len(b) > 2 else 1) > 1024:
            raise LessonError(f"{where('block')}: {_short(b)} is more than the 1,024 threads a block may have")
        scene.block = tuple(b)
    if "backend" in raw:
        scene.backend = _text(raw["backend"], lesson.where(scene), "backend")
        if scene.backend not in ("cpu", "sim", "gpu"):
            raise LessonError(f"{where('backend')}: 'cpu', 'sim' or 'gpu', not {scene.backend!r}")


def _parse_views(raw, scene: Scene, lesson: Lesson, known_views) -> None:
    """A scene's ``views`` (known ones, when ``known_views`` is given) and their ``layout``."""
    where = lambda fld: lesson.where(scene, fld)  # noqa: E731
    views = raw.get("views", [])
    _list(views, lesson.where(scene), "views")
    if not isinstance(views, list) or not all(isinstance(v, str) and v for v in views):
        raise LessonError(f"{where('views')}: a list of view ids such as [\"grid\", \"memory\"], not {views!r}")
    if known_views is not None:
        bad = [v for v in views if v not in known_views]
        if bad:
            raise LessonError(f"{where('views')}: no view named {', '.join(map(repr, bad))}; views: "
                              f"{', '.join(known_views)}")
    scene.views = list(views)
    scene.layout = _text(raw.get("layout", "columns"), lesson.where(scene), "layout")
    if scene.layout not in LAYOUTS:
        raise LessonError(f"{where('layout')}: one of {', '.join(LAYOUTS)}, not {scene.layout!r}")


def _parse_steps(raw, scene: Scene, lesson: Lesson) -> None:
    """A scene's frame range (``frames``), its ``stops`` and how it is stepped (``step``)."""
    where = lambda fld: lesson.where(scene, fld)  # noqa: E731
    frames = raw.get("frames", ["start", "end"])
    if not isinstance(frames, list) or len(frames) != 2:
        raise LessonError(f"{where('frames')}: two stops [from, to] such as [\"start\", \"first barrier\"], not {frames!r}")
    scene.frames = tuple(_stop(v, lesson.where(scene), "frames") for v in frames)
    stops = raw.get("stops", [])
    _list(stops, lesson.where(scene), "stops")
    if not isinstance(stops, list):
        raise LessonError(f"{where('stops')}: a list of stops, not {stops!r}")
    scene.stops = [_stop(v, lesson.where(scene), "stops") for v in stops]
    scene.step = _text(raw.get("step", ""), lesson.where(scene), "step")
    if scene.step and scene.step not in STEP_MODES:
        raise LessonError(f"{where('step')}: one of {', '.join(STEP_MODES)}, not {scene.step!r}")
    if scene.step == "stops" and not scene.stops:
        raise LessonError(f"{where('step')}: 'stops' needs a 'stops' list")


def _parse_question(q, k: int, scene: Scene, lesson: Lesson, seen_kernels: set) -> Question:
    """Question ``k`` of a scene: where it stops (``at``), what it asks, the fact or metric it answers."""
    qwhere = f"{lesson.where(scene)}, question {k + 1}"
    if not isinstance(q, dict):
        raise LessonError(f"{qwhere}: a question is a table with at, ask, answer")
    unknown = set(q) - _QUESTION_KEYS
    if unknown:
        raise LessonError(f"{qwhere}: unknown field(s) {', '.join(sorted(unknown))}; a question has "
                          f"{', '.join(sorted(_QUESTION_KEYS))}")
    for req in ("at", "ask", "answer"):
        if req not in q:
            raise LessonError(f"{qwhere}: field {req!r} is missing")
    answer = _text(q["answer"], qwhere, "answer")
    if answer not in FACT_NAMES and answer not in METRIC_NAMES:
        raise LessonError(f"{qwhere}, field 'answer': {answer!r} is not something gpuviz computes; answers are "
                          f"facts of the frame ({', '.join(FACT_NAMES)}) or metrics of the scene "
                          f"({', '.join(METRIC_NAMES)})")
    explain = _text(q.get("explain", ""), qwhere, "explain")
    _check_placeholders(explain, f"{qwhere}, field 'explain'", seen_kernels)
    return Question(at=_stop(q["at"], qwhere, "at"), ask=_text(q["ask"], qwhere, "ask"), answer=answer,
                    explain=explain)


def _check_placeholders(text: str, where: str, seen_kernels: set) -> None:
    """``{metric}`` and ``{kernel[NAME][metric]}`` only, naming metrics gpuviz computes and earlier kernels;
    no format specs or conversions (``{global_bytes:>1000000000}`` would pad to a billion characters)."""
    try:
        parts = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(text) if f is not None]
    except ValueError as exc:
        raise LessonError(f"{where}: broken placeholder ({exc}); write {{{{ and }}}} for literal braces") from exc
    for f, spec, conv in parts:
        if spec or conv:
            shown = f + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "")
            raise LessonError(f"{where}: placeholder {{{shown[:80]}}} has a format "
                              f"{'spec' if spec else 'conversion'}; write plain {{{f[:60]}}}: gpuviz formats the value")
    for f, _spec, _conv in parts:
        if f in METRIC_NAMES:
            continue
        if f.startswith("kernel[") and f.endswith("]") and "][" in f:
            name, metric = f[len("kernel["):-1].split("][", 1)
            if metric not in METRIC_NAMES:
                raise LessonError(f"{where}: {{{f}}}: no metric {metric!r}; metrics: {', '.join(METRIC_NAMES)}")
            if name not in seen_kernels:
                raise LessonError(f"{where}: {{{f}}}: kernel {name!r} is not played by an earlier scene")
            continue
        raise LessonError(f"{where}: unknown placeholder {{{f}}}; use {{metric}} (one of {', '.join(METRIC_NAMES)}) "
                          f"or {{kernel[NAME][metric]}}")
