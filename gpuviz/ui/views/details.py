"""Details of the linked selection: the block, warp, thread or array cell picked, and what it does now."""

from __future__ import annotations

import html

import numpy as np
from PySide6.QtWidgets import QLabel, QScrollArea, QVBoxLayout, QWidget

from ...model.frames import BlockState, LaneState, format_block, format_thread
from ...model.trace import EventKind
from .base import TraceView, register_view


def _kind_counts(kinds: np.ndarray) -> str:
    c = np.bincount(kinds, minlength=len(EventKind))
    parts = [f"{int(c[k])} {k.label.replace('_', ' ')}" for k in EventKind if c[k] and k not in (EventKind.START, EventKind.END)]
    return ", ".join(parts) or "no memory events"


@register_view
class DetailsView(TraceView):
    view_id = "details"
    title = "Details"
    default_area = "right"
    order = 30

    def __init__(self, session, parent=None):
        super().__init__(session, parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        inner = QWidget()
        v = QVBoxLayout(inner)
        self.label = QLabel(inner)
        self.label.setWordWrap(True)
        self.label.setTextFormat(self.label.textFormat().RichText)
        v.addWidget(self.label)
        v.addStretch(1)
        scroll.setWidget(inner)
        layout.addWidget(scroll)
        self._thread_events: np.ndarray | None = None
        self._thread_key = None
        self._cache: dict = {}
        self.text = ""  # plain text of what is shown: tests read it

    def on_trace_changed(self) -> None:
        self._thread_events = None
        self._thread_key = None
        self._cache = {}

    def _cached(self, key, compute):
        # per-selection lookups scan the whole trace: do it once per selection, not once per frame
        if key not in self._cache:
            if len(self._cache) > 16:
                self._cache.clear()
            self._cache[key] = compute()
        return self._cache[key]

    def on_frame_changed(self) -> None:
        self._render()

    def on_selection_changed(self) -> None:
        self._render()

    def _events_of_selected_thread(self) -> np.ndarray | None:
        sel = self.session.selection
        if sel.thread is None:
            return None
        key = (sel.block, sel.thread)
        if key != self._thread_key:
            self._thread_key = key
            self._thread_events = self.trace.events_of_thread(sel.block, sel.thread)
        return self._thread_events

    def _render(self) -> None:
        tr, F, f = self.trace, self.frames, self.frame
        L = tr.launch
        sel = self.session.selection
        rows: list[tuple[str, str]] = []
        if sel.block is not None:
            b = sel.block
            first, last = int(F.block_first[b]), int(F.block_last[b])
            state = F.block_states(f)[b]
            rows.append(("block", f"{format_block(L, b)} (linear {b}) · {BlockState(int(state)).label}"))
            if first >= 0:
                rows.append(("runs", f"frames {first:,} to {last:,}"))
            if tr.has("sm"):
                sm = self._cached(("sm", b), lambda: tr.sm[tr.block == b][:1])
                if len(sm):
                    rows.append(("SM", str(int(sm[0]))))
        if sel.warp is not None and sel.block is not None:
            frames_w = F.frames_of_warp(sel.block, sel.warp)
            rows.append(("warp", f"{sel.warp} · {F.lanes_in_warp(sel.warp)} lanes · {len(frames_w):,} instructions"))
        ev = self._events_of_selected_thread()
        if ev is not None:
            t = sel.thread
            gid = sel.block * L.threads_per_block + t
            rows.append(("thread", f"{format_thread(L, t)} (linear {t}) · global {gid:,} · lane {t % L.warp_size}"))
            rows.append(("events", f"{len(ev):,}: {_kind_counts(tr.kind[ev])}"))
            fr = F.frame_of_event[ev]
            now = ev[fr == f]
            before = ev[fr < f]
            if len(now):
                rows.append(("now", self._event_text(int(now[0]))))
            elif len(before):
                rows.append(("last did", self._event_text(int(before[-1])) + f" at frame {int(fr[fr < f][-1]):,}"))
            else:
                rows.append(("now", "not started yet"))
            lanes = F.lane_states(sel.block, f)
            rows.append(("state", LaneState(int(lanes[t])).label))
        if sel.array is not None and sel.index is not None and 0 <= sel.array < len(L.arrays):
            info = L.arrays[sel.array]
            coords = np.unravel_index(sel.index, info.shape) if info.shape else (sel.index,)
            rows.append(("cell", f"{info.name}[{', '.join(str(int(c)) for c in coords)}] ({info.space}, {info.dtype})"))
            hits = self._cached(("cell", sel.array, sel.index),
                                lambda: np.flatnonzero((tr.array == sel.array) & (tr.index == sel.index)))
            if len(hits):
                k = tr.kind[hits]
                writes = int(np.isin(k, [EventKind.GLOBAL_STORE, EventKind.SHARED_STORE, EventKind.ATOMIC]).sum())
                done = int((F.frame_of_event[hits] <= f).sum())
                rows.append(("accesses", f"{len(hits) - writes:,} reads, {writes:,} writes ({done:,} so far)"))
                who = hits[:4]
                rows.append(("by", ", ".join(f"block {format_block(L, tr.block[i])} thread {format_thread(L, tr.thread[i])}" for i in who)
                             + (" ..." if len(hits) > 4 else "")))
        if not rows:
            rows.append(("", "Click a block, a thread or a memory cell to see its details here. Esc clears the selection."))
        self.text = "\n".join(f"{k}: {v}" if k else v for k, v in rows)
        t = self.theme
        body = "".join(
            f"<tr><td style='color:{t.muted}; padding-right:12px; vertical-align:top'>{html.escape(k)}</td>"
            f"<td>{html.escape(v)}</td></tr>"
            for k, v in rows
        )
        self.label.setText(f"<table cellspacing='4'>{body}</table>")

    def _event_text(self, i: int) -> str:
        tr = self.trace
        L = tr.launch
        kind = EventKind(int(tr.kind[i]))
        text = kind.label.replace("_", " ")
        a = int(tr.array[i])
        if a >= 0 and a < len(L.arrays):
            info = L.arrays[a]
            idx = int(tr.index[i])
            if info.shape and 0 <= idx < info.size:
                coords = np.unravel_index(idx, info.shape)
                text += f" {info.name}[{', '.join(str(int(c)) for c in coords)}]"
            else:
                text += f" {info.name}[{idx}]"
        v = float(tr.value[i])
        if not np.isnan(v):
            text += f" = {v:g}"
        if tr.line[i] > 0:
            text += f" (line {int(tr.line[i])})"
        return text
