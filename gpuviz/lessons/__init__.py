"""Lessons: sequences of scenes (a kernel or saved trace, views, a frame range, notes, questions) that a
teacher clicks through. The file format and its checks live in :mod:`.format`, the Qt-free player in
:mod:`.player`, the numbers lessons show in :mod:`.metrics`; the lessons shipped with gpuviz are in
``builtin/`` (``gpuviz lesson NAME``)."""

from .format import Lesson, LessonError, Question, Scene, builtin_lessons, find_lesson, load_lesson, parse_lesson
from .player import Beat, LessonPlayer, Slide

__all__ = [
    "Beat", "Lesson", "LessonError", "LessonPlayer", "Question", "Scene", "Slide", "builtin_lessons", "find_lesson",
    "load_lesson", "parse_lesson",
]
