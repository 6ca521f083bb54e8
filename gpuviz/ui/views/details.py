"""Details of the linked selection (the block, warp, thread or array cell picked, and what it does now)
and of the launch on screen: where the trace came from (device, driver, date, versions), which schedule
the animation shows, and, for a GPU recording, what recording cost: registers, shared memory and resident
blocks per SM of the plain kernel beside the instrumented one.

The module-level helpers (:func:`trace_origin`, :func:`trace_origin_short`, :func:`schedule_text`,
:func:`recording_cost_rows`) are what the window's title, badge and status line say too, so every place
names the source of a trace the same way.
"""

from __future__ import annotations

import html

import numpy as np
from PySide6.QtWidgets import QScrollArea, QVBoxLayout, QWidget

from ...model.frames import BlockState, LaneState, format_block, format_thread
from ...model.trace import EventKind
from .base import TraceView, register_view
from .labels import WrappedLabel


# ---- where a trace came from ---------------------------------------------------------------------------
_BACKEND_WORDS = {
    "cpu": "CPU executor",
    "sim": "numba CUDA simulator",
    "gpu": "GPU",
}
_VERSION_ORDER = ("gpuviz", "numba_cuda", "numba", "llvmlite", "numpy", "python", "cupy", "torch")


def _launch_date(launch) -> str:
    meta = launch.meta or {}
    return str(meta.get("recorded_on") or (launch.created or "")[:10] or "an unknown date")


def _driver(launch) -> str:
    meta = launch.meta or {}
    dev = meta.get("device") if isinstance(meta.get("device"), dict) else {}
    return str((launch.versions or {}).get("driver") or dev.get("driver") or "")


def gpu_name(launch) -> str:
    meta = launch.meta or {}
    dev = meta.get("device") if isinstance(meta.get("device"), dict) else {}
    return str(launch.device or dev.get("name") or "an NVIDIA GPU")


def versions_text(versions: dict) -> str:
    """``gpuviz 0.1.0, numba-cuda 0.30.4, numba 0.68.0, ...`` (the driver is named elsewhere)."""
    v = {k: str(x) for k, x in (versions or {}).items() if k != "driver"}
    keys = [k for k in _VERSION_ORDER if k in v] + sorted(k for k in v if k not in _VERSION_ORDER)
    names = {"numba_cuda": "numba-cuda", "python": "Python"}
    return ", ".join(f"{names.get(k, k)} {v[k]}" for k in keys)


def fallback_reason(launch) -> str:
    """Why a capture that asked for the GPU ran on the CPU executor ("" when it did not fall back)."""
    fb = (launch.meta or {}).get("fallback")
    return str(fb.get("reason", "")) if isinstance(fb, dict) else ""


def trace_origin(launch, live: bool = False) -> str:
    """One line that says where a trace came from, never leaving GPU or CPU unsaid.

    ``live``: the trace was captured in this session on this machine (the launch panel, the default).
    """
    backend = launch.backend
    date = _launch_date(launch)
    if backend == "gpu":
        driver = _driver(launch)
        return f"recorded on {gpu_name(launch)} on {date}" + (f" (driver {driver})" if driver else "")
    where = "on this machine" if live else f"captured {date}"
    if backend == "cpu":
        text = f"CPU executor {where}, no GPU"
        if fallback_reason(launch):
            text += " (GPU asked for, unavailable here)"
        return text
    if backend == "sim":
        return f"numba CUDA simulator {where}, no GPU"
    return f"backend {backend!r} ({launch.device or 'unknown device'}), {where}"


def trace_origin_short(launch, live: bool = False, when: bool = True) -> str:
    """The same, short enough for a badge: "GPU recording · NVIDIA H200 · 2026-11-29"; ``when`` False: without
    the date or "this machine" ("CPU executor · no GPU")."""
    if launch.backend == "gpu":
        return f"GPU recording · {gpu_name(launch)}" + (f" · {_launch_date(launch)}" if when else "")
    what = "CPU executor" if launch.backend == "cpu" else _BACKEND_WORDS.get(launch.backend, launch.backend)
    where = ("this machine" if live else _launch_date(launch)) if when else ""
    return " · ".join(filter(None, (what, where, "no GPU"))) + (" (GPU unavailable)" if fallback_reason(launch) else "")


def schedule_text(launch) -> str:
    """Which schedule the animation shows, in words."""
    frames = ("Frames step block by block, each block's warps in lockstep (gpuviz's order for teaching)")
    if launch.backend == "gpu":
        recorded = (launch.meta or {}).get("schedule") or "SM ids and times are those of the instrumented run"
        return (f"{recorded}. {frames}; what {gpu_name(launch)} did when is in Timings > blocks on SMs.")
    if launch.backend == "sim":
        return f"numba simulator's order, not a GPU's: no SM ids or times. {frames}."
    return f"the CPU executor's lockstep order, not a GPU's: no SM ids or times were recorded. {frames}."


def _bytes(n) -> str:
    n = int(n)
    return f"{n:,} B" if n < 1024 else f"{n / 1024:.1f} KB"


def recording_cost_rows(launch) -> list[tuple[str, str, str]]:
    """(what, plain kernel, instrumented kernel) rows from a GPU trace's ``launch.meta``; [] for other traces."""
    meta = launch.meta or {}
    plain, inst = meta.get("plain"), meta.get("instrumented")
    if not isinstance(plain, dict) or not isinstance(inst, dict):
        return []
    dev = meta.get("device") if isinstance(meta.get("device"), dict) else {}
    max_warps = max(1, int(dev.get("max_threads_per_sm", 2048)) // int(launch.warp_size or 32))
    warps_per_block = -(-int(launch.threads_per_block) // int(launch.warp_size or 32))

    def blocks(v: dict) -> str:
        b = int(v.get("resident_blocks_per_sm", -1))
        return str(b) if b >= 0 else "unknown"

    def occupancy(v: dict) -> str:
        b = int(v.get("resident_blocks_per_sm", -1))
        if b < 0:
            return "unknown"
        warps = min(b * warps_per_block, max_warps)
        return f"{warps} of {max_warps} warps ({warps / max_warps:.0%})"

    rows = [
        ("registers / thread", str(plain.get("registers_per_thread", "?")), str(inst.get("registers_per_thread", "?"))),
        ("shared memory / block", _bytes(plain.get("shared_bytes_per_block", 0)), _bytes(inst.get("shared_bytes_per_block", 0))),
        ("local memory / thread", _bytes(plain.get("local_bytes_per_thread", 0)), _bytes(inst.get("local_bytes_per_thread", 0))),
        ("resident blocks / SM", blocks(plain), blocks(inst)),
        ("occupancy", occupancy(plain), occupancy(inst)),
    ]
    return rows


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
        self.label = WrappedLabel(inner)
        self.label.setWordWrap(True)
        self.label.setTextFormat(self.label.textFormat().RichText)
        v.addWidget(self.label)
        # the launch on screen: where it came from, its schedule, what recording cost (once per trace)
        self.launch_label = WrappedLabel(inner)
        self.launch_label.setObjectName("launchDetails")
        self.launch_label.setWordWrap(True)
        self.launch_label.setTextFormat(self.launch_label.textFormat().RichText)
        v.addSpacing(8)
        v.addWidget(self.launch_label)
        v.addStretch(1)
        scroll.setWidget(inner)
        layout.addWidget(scroll)
        self._thread_events: np.ndarray | None = None
        self._thread_key = None
        self._cache: dict = {}
        self.warnings: list = []  # the trace's warnings (races, uninitialised reads...), set by the window
        self.text = ""  # plain text of what is shown: tests read it
        self.launch_text = ""  # plain text of the launch section

    def on_trace_changed(self) -> None:
        self._thread_events = None
        self._thread_key = None
        self._cache = {}
        self.warnings = []  # the window hands this trace's warnings over once it has them
        self._render_launch()
        if self._live():
            self._render()  # nothing of the previous trace stays on screen, whatever is selected next

    def on_theme_changed(self) -> None:
        if self.trace is not None:
            self._render_launch()

    def set_warnings(self, warnings: list) -> None:
        """The trace's warnings (gpuviz.model.analysis.TraceWarning), listed in the launch section."""
        self.warnings = list(warnings)
        if self.trace is not None:
            self._render_launch()

    def _render_launch(self) -> None:
        """The launch section: origin, versions, schedule and (GPU) plain vs instrumented resources."""
        L = self.trace.launch
        t = self.theme
        esc = html.escape
        # the window knows whether this trace was captured here, in this session (duck-typed: a view may
        # also live in a bare widget, e.g. a snapshot of one view)
        is_live = getattr(self.window(), "is_live_trace", None)
        live = bool(is_live(self.trace)) if callable(is_live) else False
        rows: list[tuple[str, str]] = [("from", trace_origin(L, live))]
        if L.backend == "gpu":
            driver = _driver(L)
            dev = (L.meta or {}).get("device") if isinstance((L.meta or {}).get("device"), dict) else {}
            cc = dev.get("compute_capability")
            rows.append(("device", gpu_name(L) + (f", compute capability {'.'.join(str(c) for c in cc)}" if cc else "")
                         + (f", {dev['sm_count']} SMs" if dev.get("sm_count") else "")
                         + (f", driver {driver}" if driver else "")))
        reason = fallback_reason(L)
        if reason:
            rows.append(("fallback", f"asked for the GPU: {reason}"))
        rows += [("warning", w.text) for w in self.warnings]
        # what recording cost comes right after where it ran: it is what a reader of a GPU trace needs first
        later: list[tuple[str, str]] = [("schedule", schedule_text(L))]
        if L.versions:
            later.append(("versions", versions_text(L.versions)))
        cost = recording_cost_rows(L)

        def table(pairs):
            return "<table cellspacing='4'>" + "".join(
                f"<tr><td style='color:{t.muted}; padding-right:12px; vertical-align:top'>{esc(k)}</td>"
                f"<td>{esc(v)}</td></tr>" for k, v in pairs) + "</table>"

        lines = [f"{k}: {v}" for k, v in rows]
        cost_html = ""
        if cost:
            lines.append("recording changes registers and occupancy (plain | instrumented):")
            cells = []
            for what, plain, inst in cost:
                lines.append(f"  {what}: {plain} | {inst}")
                changed = plain != inst
                mark = f" style='color:{t.alert}; font-weight:bold'" if changed else ""
                cells.append(f"<tr><td style='color:{t.muted}; padding-right:12px'>{esc(what)}</td>"
                             f"<td style='padding-right:16px'>{esc(plain)}</td><td{mark}>{esc(inst)}</td></tr>")
            cost_html = (
                f"<p style='margin-top:6px'><b>Recording changes registers and occupancy</b></p>"
                f"<table cellspacing='3'><tr><td></td><td style='color:{t.muted}; padding-right:16px'>plain kernel</td>"
                f"<td style='color:{t.muted}'>instrumented (recorded)</td></tr>{''.join(cells)}</table>"
            )
        lines += [f"{k}: {v}" for k, v in later]
        self.launch_text = "\n".join(lines)
        self.launch_label.setText(
            f"<p><b>This launch</b>: {esc(L.kernel_name)}, grid {esc(str(L.grid))} × block {esc(str(L.block))}</p>"
            f"{table(rows)}{cost_html}{table(later)}"
        )

    def _cached(self, key, compute):
        """A per-trace lookup (a cell's accesses, a block's SM): computed once, dropped with the trace."""
        if key not in self._cache:
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
            self._thread_events = self.prepared.events_of_thread(sel.block, sel.thread)
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
            if first >= 0:  # numbered as the window's frame counter numbers them, from 1
                rows.append(("runs", f"frames {first + 1:,} to {last + 1:,}"))
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
                rows.append(("last did", self._event_text(int(before[-1])) + f" at frame {int(fr[fr < f][-1]) + 1:,}"))
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
