"""The lesson player: where a lesson stands, as a Qt-free model that a window (or a test) observes.

A scene is played as a list of *beats*, one per click of a presenter's clicker:

* a beat shows one frame of the scene's launch, with its caption;
* at a frame that carries a "predict, then reveal" question, the first beat asks it (the caption, which
  would give the answer away, is held back) and the next beat reveals the answer, computed from the
  analyses, with the caption.

``next()`` and ``prev()`` walk the beats and cross scene boundaries; ``slide()`` says what to show.
Observers: ``player.observe(callback)``; ``callback(name)`` after ``"scene"`` (a new scene: load its trace
and arrange its views) or ``"beat"`` (same scene, another frame or the answer).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..catalog import get_kernel
from ..model.frames import Frames
from ..model.prepared import Prepared, prepare
from ..model.narration import Narrator, StopError
from ..model.tracefile import load_trace
from .format import (
    COURSE,
    MAX_SIZE_FACTOR,
    Lesson,
    LessonError,
    Question,
    Scene,
    builtin_lessons,
    load_lesson,
    next_lesson,
)
from .metrics import METRIC_NAMES, format_value, formatted, scene_metrics
from .rounds import round_caption
from .topics import is_timings_scene


@dataclass
class Beat:
    frame: int
    question: Question | None = None
    revealed: bool = True  # False: the question is asked, its answer (and the caption) held back


@dataclass
class LoadedScene:
    """A scene ready to play: its trace prepared here (the lesson player is where a scene's trace is opened)."""

    scene: Scene
    prepared: Prepared
    narrator: Narrator
    first: int
    last: int
    beats: list[Beat]
    metrics: dict
    spec: object = None  # the bundled KernelSpec, when the scene plays one
    label: str = ""

    @property
    def trace(self):
        return self.prepared.trace

    @property
    def frames(self) -> Frames:
        return self.prepared.frames


@dataclass
class Slide:
    """What the screen shows at one beat."""

    lesson: str
    scene_title: str
    scene_index: int
    n_scenes: int
    beat_index: int
    n_beats: int
    frame: int
    caption: str  # "" while a question waits for its answer
    kernel_note: str
    notes: str
    question: str = ""
    answer: str = ""
    views: list[str] = field(default_factory=list)
    layout: str = "columns"
    #: while the question waits: its answer as the reveal will show it ("256", "32-way"), for whatever draws the frame
    #: (its title, its views' figures) to blank with :func:`mask_answers`; "" otherwise
    hidden_answer: str = ""

    @property
    def progress(self) -> str:
        return f"scene {self.scene_index + 1} of {self.n_scenes} · step {self.beat_index + 1} of {self.n_beats}"


def capture_scene(scene: Scene):
    """The default loader: capture the scene's bundled kernel with its backend (or load its trace file).
    Returns (trace, spec or None)."""
    if scene.trace:
        return load_trace(scene.trace), None
    # the capture package (and numba), when a scene is first captured: not when a lesson is read, nor with the
    # window, which imports this module (tests/test_startup.py)
    from ..capture import capture

    spec = get_kernel(scene.kernel)
    size = scene.size if scene.size is not None else spec.small_size
    most = MAX_SIZE_FACTOR * max(spec.default_size, spec.small_size)
    if size > most:  # checked before the inputs are allocated
        raise LessonError(f"{scene.label}, field 'size': {size:,} is over the {most:,} a lesson may play "
                          f"{scene.kernel} at ({MAX_SIZE_FACTOR}x its default size {spec.default_size:,})")
    args = spec.make_args(size, np.random.default_rng(scene.seed))
    grid, block = spec.launch(size, tuple(scene.block) if scene.block else spec.default_block)
    trace = capture(spec.kernel, grid, block, *args, backend=scene.backend,
                    meta={"bundled_kernel": {"name": scene.kernel, "size": size, "size_label": spec.size_label}})
    return trace, spec


#: what stands for an answer not revealed yet: a blank to fill in, in text a label shows as it is (the caption bar,
#: the HTML page); the lesson panel draws it as a styled box (gpuviz.ui.lesson_player). It was "▢", which read as a
#: glyph the font lacked
HIDDEN = "[?]"


def _asked_nouns(ask: str) -> set[str]:
    """What a question counts: the noun after "how many" ("How many 32-byte sectors?" -> sectors, "how many ways
    now?" -> ways), as a stem without its plural s."""
    import re

    out = set()
    for m in re.finditer(r"how\s+many\s+(?:[\w-]*\d[\w-]*\s+)?([A-Za-z]+)", str(ask), flags=re.I):
        out.add(m.group(1).lower().rstrip("s"))
    return out


def mask_answers(text: str, answers: list) -> str:
    """``text`` with every answer still to be revealed blanked (:data:`HIDDEN`). ``answers``: (answer as shown,
    question) pairs. Blanked: the answer as shown ("32-way", "8 bytes", "12.0 KB", "1 (no conflict)" and its words
    "no conflict"), and its number where the answer's unit or what the question counts follows it ("4 blocks" for
    "how many blocks?", "8 lanes"), or a closing bracket ("worst: 32)"). Not any word of the question: "32 banks"
    stayed blanked under "how many ways is the bank conflict?", and "8 warps" under "how many lanes ...?"."""
    import re

    if not text or not answers:
        return text
    for ans, ask in answers:
        ans = str(ans).strip()
        if not ans:
            continue
        parts = [ans] + [m.strip() for m in re.findall(r"\(([^)]*)\)", ans)]  # "1 (no conflict)": also "no conflict"
        if re.fullmatch(r"[\d.,]+", ans):
            parts = []  # a bare number: blanked below, only where it counts what the question asks about
        for part in parts:
            text = re.sub(r"(?<![\w.,])" + re.escape(part) + r"(?![\w])", HIDDEN, text, flags=re.I)
        number = re.match(r"^\d[\d.,]*", ans)
        if number:
            n = number.group(0).rstrip(".,")
            unit = re.sub(r"[^\w].*$", "", ans[number.end():].strip(" -"))
            nouns = _asked_nouns(ask) | ({unit.lower().rstrip("s")} if unit else set())
            pattern = r"(?<![\w.,])" + re.escape(n) + r"(?![\w]|[.,]\d)(?=(\s*-?\s*(\w+))?)"

            def blank(m):
                follower = (m.group(2) or "").lower()
                after = m.string[m.end():m.end() + 1]
                known = follower and any(follower.startswith(x) for x in nouns if x)
                return HIDDEN if known or after == ")" else m.group(0)

            text = re.sub(pattern, blank, text)
    return text


class LessonPlayer:
    """Plays a :class:`Lesson` beat by beat. ``loader(scene) -> (trace, spec | None)``."""

    def __init__(self, lesson: Lesson, loader: Callable | None = None):
        self.lesson = lesson
        self.loader = loader or capture_scene
        self._loaded: dict[int, LoadedScene] = {}
        self.scene_index = 0
        self.beat_index = 0
        self.finished = False  # next() was pressed on the last beat of the last scene
        self._observers: list[Callable[[str], None]] = []

    # ---- observers ----------------------------------------------------------------------------------------
    def observe(self, callback: Callable[[str], None]) -> Callable[[], None]:
        self._observers.append(callback)
        return lambda: self._observers.remove(callback) if callback in self._observers else None

    def _notify(self, name: str) -> None:
        for cb in list(self._observers):
            cb(name)

    # ---- scenes ---------------------------------------------------------------------------------------------
    def load(self, i: int) -> LoadedScene:
        """Capture (or load) scene ``i`` and lay out its beats; cached."""
        hit = self._loaded.get(i)
        if hit is not None:
            return hit
        scene = self.lesson.scenes[i]
        where = self.lesson.where
        try:
            trace, spec = self.loader(scene)
        except LessonError:
            raise
        except KeyError as exc:
            raise LessonError(f"{where(scene, 'kernel')}: {exc.args[0] if exc.args else exc}") from exc
        except Exception as exc:  # a capture or file error: say which scene asked for it
            fld = "trace" if scene.trace else "kernel"
            raise LessonError(f"{where(scene, fld)}: could not load it: {type(exc).__name__}: {exc}") from exc
        prepared = prepare(trace)
        frames = prepared.frames
        notes = tuple(getattr(spec, "frame_notes", ()) or ()) if spec is not None else ()
        narrator = Narrator(prepared, notes=notes)
        if frames.n_frames == 0:
            raise LessonError(f"{where(scene)}: the launch recorded no events, there is nothing to show")

        def find(stop, fld):
            try:
                return narrator.find(stop)
            except StopError as exc:
                raise LessonError(f"{where(scene, fld)}: {exc}") from exc

        first, last = find(scene.frames[0], "frames"), find(scene.frames[1], "frames")
        if last < first:
            raise LessonError(f"{where(scene, 'frames')}: {scene.frames[1]!r} (frame {last}) comes before "
                              f"{scene.frames[0]!r} (frame {first})")
        q_at: dict[int, list[Question]] = {}
        for q in scene.questions:
            f = find(q.at, "questions")
            if not first <= f <= last:
                raise LessonError(f"{where(scene, 'questions')}: question {q.ask!r} is at {q.at!r} (frame {f}), "
                                  f"outside the scene's frames {first}..{last}")
            q_at.setdefault(f, []).append(q)
        steps = self._steps(scene, frames, narrator, first, last, find) | set(q_at)
        beats: list[Beat] = []
        for f in sorted(steps):
            beats.append(Beat(f))
            for q in q_at.get(f, []):
                if beats[-1].frame == f and beats[-1].question is None:
                    beats.pop()  # the question's frame is shown with it: the plain beat would give the answer
                beats.append(Beat(f, q, revealed=False))
                beats.append(Beat(f, q, revealed=True))
        label = scene.kernel or scene.trace
        loaded = LoadedScene(scene, prepared, narrator, first, last, beats, scene_metrics(prepared), spec, label)
        self._loaded[i] = loaded
        # check every answer can be computed now, so a broken question shows up when the scene opens
        for b in beats:
            if b.question is not None:
                self._answer(loaded, b)
        return loaded

    @staticmethod
    def _steps(scene: Scene, frames: Frames, narrator: Narrator, first: int, last: int, find) -> set[int]:
        mode = scene.step or ("stops" if scene.stops else ("barrier" if len(frames.barrier_complete_frames) else "frame"))
        inside = lambda arr: {int(f) for f in np.asarray(arr) if first <= f <= last}  # noqa: E731
        if mode == "stops":
            out = {first}
            for s in scene.stops:
                f = find(s, "stops")
                if not first <= f <= last:
                    raise LessonError(f"{narrator_where(scene)}, field 'stops': {s!r} is frame {f}, outside the "
                                      f"scene's frames {first}..{last}")
                out.add(f)
            return out
        if mode == "frame":
            return set(range(first, last + 1))
        if mode == "step":
            return {first, last} | inside(frames.step_starts)
        if mode == "barrier":
            return {first, last} | inside(frames.barrier_complete_frames)
        return {first, last} | inside(frames.block_starts)

    @property
    def current(self) -> LoadedScene:
        return self.load(self.scene_index)

    @property
    def beat(self) -> Beat:
        return self.current.beats[self.beat_index]

    def start(self, scene: int = 0) -> None:
        self.goto_scene(scene)

    def goto_scene(self, i: int, at_end: bool = False) -> None:
        if not 0 <= i < len(self.lesson.scenes):
            raise IndexError(f"scene {i + 1} out of range: the lesson has {len(self.lesson.scenes)} scenes")
        loaded = self.load(i)
        self.scene_index = i
        self.beat_index = len(loaded.beats) - 1 if at_end else 0
        self.finished = False
        self._notify("scene")

    # ---- the clicker ---------------------------------------------------------------------------------------
    def next(self) -> bool:
        """One click forward; False (and ``finished``) at the very end."""
        if self.beat_index + 1 < len(self.current.beats):
            self.beat_index += 1
            self._notify("beat")
            return True
        if self.scene_index + 1 < len(self.lesson.scenes):
            self.goto_scene(self.scene_index + 1)
            return True
        self.finished = True
        self._notify("finished")
        return False

    def prev(self) -> bool:
        """One click back; False at the very start."""
        self.finished = False
        if self.beat_index > 0:
            self.beat_index -= 1
            self._notify("beat")
            return True
        if self.scene_index > 0:
            self.goto_scene(self.scene_index - 1, at_end=True)
            return True
        return False

    # ---- what to show ----------------------------------------------------------------------------------------
    def slide(self) -> Slide:
        loaded = self.current
        b = self.beat
        scene = loaded.scene
        # at a barrier a reduction's round follows: its number, s and who adds, where the narration of the barrier
        # said the same words at every round
        caption = round_caption(loaded.prepared, b.frame) or loaded.narrator.caption(b.frame)
        kernel_note = loaded.narrator.note(b.frame) if b.revealed else ""
        about_timings = is_timings_scene(scene)
        if about_timings:
            # the plot is the subject: the narration of whichever warp the last frame shows is not
            kernel_note = ""
        question = answer = ""
        if b.question is not None:
            question = b.question.ask
            if b.revealed:
                answer = self._answer(loaded, b)
            else:
                caption = ""
        hide = self._open_answers(loaded)
        if about_timings and not (b.question is not None and not b.revealed):
            caption = mask_answers(scene.title, hide)
        notes = mask_answers(self._format(scene.notes, loaded, "notes"), hide)
        if self.scene_index + 1 == len(self.lesson.scenes) and self.beat_index + 1 == len(loaded.beats):
            notes = (notes + "\n\n" if notes else "") + self.ending()
        return Slide(
            lesson=self.lesson.title, scene_title=mask_answers(scene.title, hide), scene_index=self.scene_index,
            n_scenes=len(self.lesson.scenes), beat_index=self.beat_index, n_beats=len(loaded.beats),
            frame=b.frame, caption=caption, kernel_note=kernel_note,
            notes=notes, question=question, answer=answer,
            views=list(scene.views), layout=scene.layout, hidden_answer=self.open_answer() if question and not answer
            else "",
        )

    def ending(self) -> str:
        """What the last step says under its notes: the lesson ends here, and which shipped lesson comes next."""
        name = self.lesson.path.stem if self.lesson.path is not None else ""
        after = next_lesson(name)
        if after is None:
            return ("The end of this lesson." + (" It is the last of gpuviz's lessons." if name == COURSE[-1] else ""))
        try:
            title = load_lesson(builtin_lessons()[after]).title
        except (LessonError, KeyError, OSError):
            title = after
        return f"The end of this lesson. Next lesson: {title} (Lessons menu, or gpuviz lesson {after})."

    def open_answer(self) -> str:
        """The answer of the question open at this beat, as the reveal will show it ("32-way", "256"); "" when no
        question is open (or its answer cannot be computed)."""
        b = self.beat
        if b.question is None or b.revealed:
            return ""
        try:
            return format_value(b.question.answer, self.answer_value(self.current, b))
        except LessonError:
            return ""

    def _open_answers(self, loaded: LoadedScene) -> list[str]:
        """The answers of this scene's questions not revealed yet at the current beat (each as shown, e.g.
        "32-way" or "8 bytes"): the title and notes must not give them away before the reveal."""
        revealed = set()
        for i, beat in enumerate(loaded.beats[: self.beat_index + 1]):
            if beat.question is not None and beat.revealed:
                revealed.add(id(beat.question))
        out = []
        for beat in loaded.beats:
            if beat.question is not None and id(beat.question) not in revealed and beat.revealed:
                try:
                    out.append((format_value(beat.question.answer, self.answer_value(loaded, beat)), beat.question.ask))
                except LessonError:
                    continue
        return out

    def answer_value(self, loaded: LoadedScene, beat: Beat):
        """The computed answer of a beat's question (a number or text)."""
        q = beat.question
        name = q.answer
        if name in METRIC_NAMES:
            return loaded.metrics[name]
        facts = loaded.narrator.facts(beat.frame)
        if name not in facts:
            raise LessonError(
                f"{self.lesson.where(loaded.scene, 'questions')}: question {q.ask!r} asks for {name!r}, but frame "
                f"{beat.frame} ({loaded.narrator.caption(beat.frame)}) has no such number; it has "
                f"{', '.join(k for k in facts if k not in ('frame', 'kind', 'array'))}")
        return facts[name]

    def _answer(self, loaded: LoadedScene, beat: Beat) -> str:
        value = format_value(beat.question.answer, self.answer_value(loaded, beat))
        explain = self._format(beat.question.explain, loaded, "questions")
        return f"{value}. {explain}" if explain else value

    def _format(self, text: str, loaded: LoadedScene, fld: str) -> str:
        if not text or "{" not in text:
            return text
        ctx = formatted(loaded.metrics)
        kernels: dict[str, dict] = {}
        for _, f, _, _ in string.Formatter().parse(text):
            if f and f.startswith("kernel["):
                name = f[len("kernel["):].split("]", 1)[0]
                kernels[name] = formatted(self._metrics_of_kernel(name, loaded.scene))
        ctx["kernel"] = kernels
        text = _singular_after_one(text, loaded.metrics)
        try:
            return text.format(**ctx)
        except (KeyError, IndexError, ValueError) as exc:
            raise LessonError(f"{self.lesson.where(loaded.scene, fld)}: cannot fill in {exc}") from exc

    def _metrics_of_kernel(self, name: str, before: Scene) -> dict:
        for i, s in enumerate(self.lesson.scenes[: before.index]):
            if s.kernel == name:
                return self.load(i).metrics
        raise LessonError(f"{self.lesson.where(before)}: no earlier scene plays kernel {name!r}")

    # ---- all at once (headless) ----------------------------------------------------------------------------
    def play_all(self, on_slide: Callable[[Slide], None] | None = None) -> list[Slide]:
        """Click through the whole lesson; returns every slide shown (tests, `gpuviz lesson --print`)."""
        self.start()
        slides = [self.slide()]
        if on_slide:
            on_slide(slides[-1])
        while self.next():
            slides.append(self.slide())
            if on_slide:
                on_slide(slides[-1])
        return slides


def narrator_where(scene: Scene) -> str:
    return scene.label


#: nouns a count placeholder is written before in lessons, and their singular ("{n_blocks} blocks" with one block)
_SINGULAR = {"blocks": "block", "threads": "thread", "warps": "warp", "lanes": "lane", "elements": "element",
             "sectors": "sector", "launches": "launch", "arrays": "array", "barriers": "barrier", "requests": "request",
             "phases": "phase", "waves": "wave", "SMs": "SM", "steps": "step", "frames": "frame"}
_COUNT_THEN_NOUN = re.compile(r"\{([A-Za-z_]\w*)\}(\s+)(" + "|".join(_SINGULAR) + r")\b")


def _singular_after_one(text: str, metrics: dict) -> str:
    """"{n_blocks} blocks of {threads_per_block}" reads "1 block of 128" when the launch has one block, not
    "1 blocks": a lesson is written once for every size it may be played at."""
    def fix(m: re.Match) -> str:
        value = metrics.get(m.group(1))
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value == 1:
            return "{" + m.group(1) + "}" + m.group(2) + _SINGULAR[m.group(3)]
        return m.group(0)

    return _COUNT_THEN_NOUN.sub(fix, text)
