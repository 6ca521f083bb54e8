"""``gpuviz lesson FILE|NAME``: a lesson played in the window, or checked (``--check``) or printed (``--print``)
step by step; ``--list`` lists the shipped lessons. Only the window needs Qt."""

from __future__ import annotations

import sys

from ..lessons import LessonError, LessonPlayer, builtin_lessons, load_lesson


def _list() -> int:
    for name, path in builtin_lessons().items():
        try:
            title = load_lesson(path).title
        except LessonError as exc:
            title = f"(broken: {exc})"
        print(f"{name:<20} {title}")
    return 0


def _play_through(lesson, args) -> None:
    """Every step of the lesson played without a window: printed (``--print``), checked (``--check``)."""
    player = LessonPlayer(lesson)

    def show(slide):
        if args.print:
            print(f"[{slide.progress}] frame {slide.frame + 1}")  # numbered as the window numbers them
            if slide.beat_index == 0 and slide.notes:
                print(f"  notes: {slide.notes}")
            if slide.question:
                print(f"  predict: {slide.question}" + (f"\n  answer: {slide.answer}" if slide.answer else ""))
            if slide.caption:
                print(f"  {slide.caption}")

    slides = player.play_all(show)
    if args.check:
        print(f"{lesson.name}: {len(lesson.scenes)} scenes, {len(slides)} steps, all stops and answers resolve")


def main(args) -> int:
    if args.list:
        return _list()
    if not args.lesson:
        print("gpuviz lesson: name a lesson file or a shipped lesson (gpuviz lesson --list)", file=sys.stderr)
        return 2
    try:
        lesson = load_lesson(args.lesson)
        if args.check or args.print:
            _play_through(lesson, args)
            return 0
    except LessonError as exc:
        print(f"gpuviz lesson: {exc}", file=sys.stderr)
        return 1
    # the window, and so Qt, only here: --list, --check and --print run where Qt cannot
    from .lesson_window import play_lesson_window

    return play_lesson_window(lesson, present=args.present, theme=args.theme)
