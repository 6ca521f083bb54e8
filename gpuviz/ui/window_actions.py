"""The main window's actions, all in one registry (:class:`~gpuviz.ui.actions.ActionRegistry`), and its menus built
from it: the menus, toolbar buttons, key bindings and the shortcuts overlay come from the same actions (a mixin of
:class:`~gpuviz.ui.window.MainWindow`).
"""

from __future__ import annotations

import time

from ..model import playback as pb
from .actions import Action
from .export_html import export_html_dialog
from .share import export_polls_dialog, share_with_class


class ActionsMixin:
    """The actions and menus of :class:`~gpuviz.ui.window.MainWindow`."""

    def _build_actions(self) -> None:
        s = self.session
        P = s.playback
        add = self.actions.add
        g = "Playback"
        add(Action("playback.play", "&Play", lambda: pb.toggle_play(P, time.perf_counter()), ("Space",), g,
                   "Play or pause", icon_text="▶ Play", in_toolbar=True))
        add(Action("playback.first", "&First frame", lambda: pb.first(P), ("Home",), g, icon_text="|◀ first", in_toolbar=True))
        add(Action("playback.prev_block", "Previous &block", lambda: pb.prev_block(P), ("Ctrl+PgUp", "Shift+Up"), g,
                   "Start of this block, or of the previous one", icon_text="◀ block", in_toolbar=True))
        add(Action("playback.prev_barrier", "Previous ba&rrier", lambda: pb.prev_barrier(P), ("Up",), g,
                   "Back to the previous barrier that opened", icon_text="◀ sync", in_toolbar=True))
        add(Action("playback.prev_step", "Previous lockstep step", lambda: pb.prev_step(P), ("Shift+Left",), g,
                   "Back to the start of the previous step of all warps", icon_text="◀ step", in_toolbar=True))
        add(Action("playback.step_back", "Step &back", lambda: pb.step_back(P), ("Left", "PgUp"), g,
                   "One warp instruction back", icon_text="◀", in_toolbar=True))
        add(Action("playback.step_forward", "Step &forward", lambda: pb.step_forward(P), ("Right", "PgDown"), g,
                   "One warp instruction forward", icon_text="▶", in_toolbar=True))
        add(Action("playback.next_step", "Next lockstep step", lambda: pb.next_step(P), ("Shift+Right",), g,
                   "Every warp of the block does its next instruction", icon_text="step ▶", in_toolbar=True))
        add(Action("playback.next_barrier", "Next ba&rrier", lambda: pb.next_barrier(P), ("Down",), g,
                   "Forward to where the next barrier opens", icon_text="sync ▶", in_toolbar=True))
        add(Action("playback.next_block", "Next b&lock", lambda: pb.next_block(P), ("Ctrl+PgDown", "Shift+Down"), g,
                   "First frame of the next block", icon_text="block ▶", in_toolbar=True))
        add(Action("playback.last", "&Last frame", lambda: pb.last(P), ("End",), g, icon_text="last ▶|", in_toolbar=True))
        add(Action("playback.prev_warp_step", "This warp's previous instruction", lambda: pb.prev_warp_step(P),
                   ("Ctrl+Left",), g))
        add(Action("playback.next_warp_step", "This warp's next instruction", lambda: pb.next_warp_step(P),
                   ("Ctrl+Right",), g))
        add(Action("playback.play_to_barrier", "Play to the next barrier", lambda: pb.play_to_next_barrier(
            P, time.perf_counter()), ("Ctrl+Down",), g, "Play, and pause where the next barrier opens"))
        add(Action("playback.play_to_block", "Play to the next block", lambda: pb.play_to_next_block(
            P, time.perf_counter()), ("Ctrl+Shift+Down",), g, "Play, and pause at the first frame of the next block"))
        add(Action("playback.worst_line", "Jump to the &worst line", self.jump_to_worst_line, ("W",), g,
                   "First frame of the line with the most bank conflicts, else the most sectors per request, else "
                   "the most divergence (the Per line table's sorted column, if one is)"))
        add(Action("playback.faster", "Fas&ter", lambda: pb.speed_up(P), ("+", "="), g, icon_text="+"))
        add(Action("playback.slower", "Slo&wer", lambda: pb.speed_down(P), ("-",), g, icon_text="−"))
        add(Action("playback.loop", "L&oop", lambda: pb.toggle_loop(P), ("L",), g, checkable=True,
                   checked=lambda: P.loop))
        g = "View"
        add(Action("selection.clear", "Close help / clear selection (follow playback)", self.escape, ("Esc",), g))
        add(Action("view.theme", "Light/dark &theme", self.toggle_theme, ("Ctrl+T",), g))
        add(Action("view.bigger", "&Bigger text", lambda: s.set_scale(s.theme.scale * 1.15), ("Ctrl++", "Ctrl+="), g))
        add(Action("view.smaller", "&Smaller text", lambda: s.set_scale(s.theme.scale / 1.15), ("Ctrl+-",), g))
        add(Action("view.present", "&Presenter mode", self.toggle_present, ("F5",), g, checkable=True,
                   checked=lambda: self._presenting))
        add(Action("view.fullscreen", "&Full screen", self.toggle_fullscreen, ("F11",), g))
        g = "File"
        add(Action("file.open", "&Open trace…", self.open_dialog, ("Ctrl+O",), g))
        add(Action("file.open_recording", "Open a &GPU recording…", self.open_recording_dialog, ("Ctrl+Shift+O",), g,
                   "Traces recorded on an NVIDIA H200, shipped with gpuviz: no GPU needed to watch them"))
        add(Action("file.save", "&Save trace…", self.save_dialog, ("Ctrl+S",), g))
        add(Action("file.snapshot", "Save a &picture of the window…", self.snapshot_dialog, ("Ctrl+Shift+S",), g))
        add(Action("file.export_html", "&Export an HTML page…", lambda: export_html_dialog(self), ("Ctrl+E",), g,
                   "One file that replays this launch offline in any browser: for students without gpuviz"))
        add(Action("file.share", "S&hare with the class…", lambda: share_with_class(self), ("Ctrl+Shift+C",), g,
                   "Students' browsers follow this window live and answer the lesson's questions (a link and a QR code)",
                   icon_text="Share"))
        add(Action("file.share_answers", "Export the class's &answers (CSV)…", lambda: export_polls_dialog(self), (), g,
                   "The answers to each predict question, counted, without names"))
        add(Action("file.run", "&Run capture", lambda: self.launch_panel.run(), ("Ctrl+R",), g,
                   "Capture the kernel chosen in the launch panel"))
        add(Action("file.quit", "&Quit", self.close, ("Ctrl+Q",), g))
        g = "Lessons"
        for name, title in self._lesson_titles().items():
            add(Action(f"lesson.{name}", title, lambda name=name: self.start_lesson(name), (), g,
                       f"Play the lesson {name!r}: its scenes, notes and predict-then-reveal questions (→ / PageDown)"))
        add(Action("lesson.stop", "Leave the &lesson", self.stop_lesson, (), g, "Back to the trace and layout as before",
                   enabled=lambda: self.lesson is not None))
        g = "Help"
        add(Action("help.shortcuts", "&Keyboard shortcuts", self.show_shortcuts, ("F1", "?"), g))

    def _build_menus(self) -> None:
        mb = self.menuBar()
        groups = self.actions.groups()
        order = ["File", "Playback", "View", "Lessons", "Help"]
        for group in sorted(groups, key=lambda g: order.index(g) if g in order else 9):
            actions = groups[group]
            menu = mb.addMenu(f"&{group}")
            # 'Leave the lesson' greyed out with no lesson playing, and each check mark as it is, when it opens
            menu.aboutToShow.connect(self.actions.sync_checked)
            for a in actions:
                menu.addAction(self.actions.qaction(a.id))
            if group == "View":
                menu.addSeparator()
                for vid, dock in self.docks.items():
                    menu.addAction(dock.toggleViewAction())
