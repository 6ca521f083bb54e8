"""The CPU executor's watchdog: a launch that makes no progress toward its end is stopped, with the loop,
the threads in it and, for a spin on memory, what they wait for.

The executor runs every thread of a launch in lockstep, so a loop iteration is one step of all its
threads. Every loop calls :meth:`~gpuviz.capture.backends.cpu.runtime.SimtRuntime.loop_tick` at the top of each iteration; every
``CHECK_INTERVAL_S`` the tick asks :meth:`Watchdog.check` whether the launch moved toward its end since the
last check. It did when

* a thread finished the kernel, or a barrier was passed;
* it is inside ``for ... in range(...)`` loops only (they are bounded: each iteration is a step to the end);
* in the outermost ``while`` loop around the current point, threads left the loop, or anything its exit
  conditions read changed (the names and memory in the ``while`` test and in the ``if`` tests of its
  body: ``while i < n: ... i += 1`` changes ``i`` every iteration).

A launch with no progress for ``timeout`` seconds raises :class:`~gpuviz.capture.errors.KernelStalled`
naming the loop's line, the threads still in it and, when the loop's conditions read memory, its current
values and whether any thread of the launch ever writes it (``while flag[0] == 0`` with no writer of
``flag`` can never end: on a GPU it spins forever).

``progress(info)`` is called about once a second while a launch runs (seconds, events, threads done):
the worker and the capture job show it.
"""

from __future__ import annotations

import ast
import time
import zlib

import numpy as np

from ...errors import KernelStalled
from .runtime.values import _ranges

DEFAULT_STALL_S = 10.0  # what `gpuviz run` / `gpuviz capture` / capture() use unless told
CHECK_INTERVAL_S = 0.25
PROGRESS_INTERVAL_S = 1.0
_HASH_LIMIT = 64 << 20  # bytes of an array the progress check hashes; bigger arrays count as changing



def stalled_tail(waits: str, text: str) -> str:
    """The end of a stalled-loop report, the executor's and the simulator's alike: who waits for what, how to
    change the watchdog, and the loop's line."""
    tail = (" " + waits) if waits else ""
    tail += (" Stopped by gpuviz's watchdog (--watchdog SECONDS sets how long a launch may go without progress; "
             "0 turns it off).")
    return tail + (f"\n    {text}" if text else "")

class OverBudget(Exception):
    """Raised at a check after ``Watchdog.deadline``: a sample run for the size estimate ran out of time."""


class LoopTable:
    """The loops of a kernel and its device functions, read from their source once.

    ``outer[line]``: for each loop's line, the line of the outermost ``while`` loop around it in its
    function (itself when it is one), or None when only ``for`` loops enclose it. ``whiles[line]``: the
    ``ast.While`` node. ``writes[name]``: the lines that store into or atomically update array ``name``."""

    def __init__(self, funcs):
        self.outer: dict[int, int | None] = {}
        self.whiles: dict[int, ast.While] = {}
        self.writes: dict[str, list[int]] = {}
        self.watched: dict[int, tuple[list[str], list[ast.Subscript]]] = {}
        for fs in funcs:
            self._walk(fs.tree.body, None)
            self._writers(fs.tree)
        for line, node in self.whiles.items():
            self.watched[line] = _exit_inputs(node)

    def _walk(self, body, outer_while):
        for stmt in body:
            for node in ast.walk(stmt) if not isinstance(stmt, (ast.While, ast.For)) else [stmt]:
                if node is not stmt and isinstance(node, (ast.While, ast.For)):
                    self._loop(node, outer_while)
            if isinstance(stmt, (ast.While, ast.For)):
                self._loop(stmt, outer_while)

    def _loop(self, node, outer_while):
        if node.lineno in self.outer:
            return
        here = outer_while if outer_while is not None else (node.lineno if isinstance(node, ast.While) else None)
        self.outer[node.lineno] = here
        if isinstance(node, ast.While):
            self.whiles[node.lineno] = node
        self._walk(node.body, here)
        self._walk(getattr(node, "orelse", []), outer_while)

    def _writers(self, tree):
        for node in ast.walk(tree):
            name = None
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name):
                name = node.value.id
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "atomic"
                  and node.args and isinstance(node.args[0], ast.Name)):
                name = node.args[0].id
            if name is not None:
                self.writes.setdefault(name, []).append(node.lineno)


def _exit_inputs(node: ast.While) -> tuple[list[str], list[ast.Subscript]]:
    """Names and subscripts the loop's exit conditions read: its test and the tests of ifs in its body."""
    tests = [node.test]
    for sub in node.body:
        for n in ast.walk(sub):
            if isinstance(n, (ast.If, ast.While)):
                tests.append(n.test)
    names, subs = [], []
    for t in tests:
        for n in ast.walk(t):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in names:
                names.append(n.id)
            elif isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name):
                subs.append(n)
    return names, subs


_tables: dict = {}


def loop_table(root) -> LoopTable:
    """The :class:`LoopTable` of a kernel (a :class:`~gpuviz.capture.frontend.source.FunctionSource`), cached."""
    key = root.fn.__code__
    hit = _tables.get(key)
    if hit is None:
        funcs, seen, stack = [root], {id(root.fn)}, [root]
        while stack:
            for sub in stack.pop().all_device_functions().values():
                if id(sub.fn) not in seen:
                    seen.add(id(sub.fn))
                    funcs.append(sub)
                    stack.append(sub)
        hit = _tables[key] = LoopTable(funcs)
    return hit


class Watchdog:
    """Stops a CPU-executor launch with no progress for ``timeout`` seconds (None or 0: never).

    ``progress``: called with a dict about every ``progress_interval`` seconds while the launch runs.
    ``deadline`` (a ``time.monotonic()`` value): past it a check raises :class:`OverBudget` (sample runs)."""

    def __init__(self, timeout: float | None = DEFAULT_STALL_S, progress=None, *, deadline: float | None = None,
                 progress_interval: float = PROGRESS_INTERVAL_S, label: str = ""):
        self.timeout = float(timeout) if timeout else None
        self.progress = progress
        self.deadline = deadline
        self.progress_interval = progress_interval
        self.label = label
        self.next_check = float("inf")
        self.loops: LoopTable | None = None

    def attach(self, rt, loops: LoopTable) -> None:
        now = time.monotonic()
        self.loops = loops
        self.t0 = self.last_progress = now
        self.next_check = now + CHECK_INTERVAL_S
        self._next_report = now + self.progress_interval
        self._alive = rt.N
        self._barriers = rt.barriers_passed
        self._w0 = self._w0_count = self._fp = None

    # ---- the check ---------------------------------------------------------------------------------
    def check(self, rt, line: int, frame) -> None:
        now = time.monotonic()
        self.next_check = now + CHECK_INTERVAL_S
        if self.deadline is not None and now > self.deadline:
            raise OverBudget
        alive = int(np.count_nonzero(rt.alive))
        progressed = alive < self._alive or rt.barriers_passed != self._barriers
        self._alive, self._barriers = alive, rt.barriers_passed
        w0 = self.loops.outer.get(line) if self.loops is not None else None
        if w0 is None:
            progressed = True  # bounded `for` loops only: every iteration is a step toward the end
            self._w0 = None
        else:
            lanes = self._lanes_in(rt, w0)
            count = int(np.count_nonzero(lanes))
            fp = self._fingerprint(rt, w0, frame, lanes)
            if w0 != self._w0 or self._w0_count is None or count < self._w0_count or fp is None or fp != self._fp:
                progressed = True
            self._w0, self._w0_count, self._fp = w0, count, fp
        if progressed:
            self.last_progress = now
        if self.progress is not None and now >= self._next_report:
            self._next_report = now + self.progress_interval
            self.progress({"seconds": round(now - self.t0, 2), "events": int(rt.n_events), "threads": int(rt.N),
                           "threads_done": int(rt.N - alive), "line": int(line),
                           "no_progress_s": round(now - self.last_progress, 2), "label": self.label})
        if self.timeout is not None and now - self.last_progress >= self.timeout:
            raise self._stalled(rt, w0, frame)

    @staticmethod
    def _lanes_in(rt, w0) -> np.ndarray:
        m = rt._loop_masks.get(w0)
        if not isinstance(m, np.ndarray) or m.shape != rt.alive.shape:
            return rt.alive
        return m & rt.alive

    def _fingerprint(self, rt, w0, frame, lanes):
        """A checksum of what the loop's exit conditions read, for the lanes in it (None: cannot tell)."""
        names, _subs = self.loops.watched.get(w0, ([], []))
        V = frame.f_locals.get("V") if frame is not None else None
        if not isinstance(V, dict):
            return None
        crc = 0
        for name in names:
            v = V.get(name)
            if v is None:
                continue
            data = getattr(v, "data", None) if not isinstance(v, np.ndarray) else None
            if isinstance(data, np.ndarray):  # an array the kernel reads: its contents
                if data.nbytes > _HASH_LIMIT:
                    return None
                arr = data
            elif isinstance(v, np.ndarray):
                arr = v[lanes] if v.shape[:1] == lanes.shape else v
            elif isinstance(v, (int, float, complex, bool, np.generic)):
                arr = np.asarray(v)
            else:
                continue
            crc = zlib.crc32(np.ascontiguousarray(arr).view(np.uint8).reshape(-1), zlib.crc32(name.encode(), crc))
        return crc

    # ---- the report -----------------------------------------------------------------------------------
    def _stalled(self, rt, w0, frame) -> KernelStalled:
        seconds = time.monotonic() - self.last_progress
        lanes = self._lanes_in(rt, w0) if w0 is not None else rt.alive
        act = np.flatnonzero(lanes)
        line = w0 if w0 is not None else -1
        text = rt.line_text(line) if line > 0 else ""
        threads = [(int(rt.block_lin[k]), int(rt.thread_lin[k])) for k in act[:4096]]
        who = _who(rt, act)
        head = f"{rt.where(line)}: " if line > 0 else (f"{rt.file}: " if rt.file else "")
        msg = (f"{head}the kernel made no progress toward its end for {seconds:.0f} s: {len(act):,} thread(s) keep "
               f"looping in `{text}` ({who}); none of them left the loop or finished, and nothing its conditions "
               "read changed.")
        waits = self._waits(rt, w0, frame, act) if w0 is not None else ""
        msg += stalled_tail(waits, text)
        first = act[0] if len(act) else None
        block = None
        if first is not None:
            block = (int(rt.bid[0][first]), int(rt.bid[1][first]), int(rt.bid[2][first]))
        return KernelStalled(msg, file=rt.file, line=line, block=block, threads=threads, loop_line=line,
                             seconds=seconds)

    def _waits(self, rt, w0, frame, act) -> str:
        """What a spin on memory waits for: 'flag[0] (now 0); no thread of this launch writes flag'."""
        _names, subs = self.loops.watched.get(w0, ([], []))
        V = frame.f_locals.get("V") if frame is not None else {}
        parts, unwritten, written = [], [], []
        seen = set()
        for node in subs:
            name = node.value.id
            handle = V.get(name) if isinstance(V, dict) else None
            if not hasattr(handle, "data") or getattr(handle, "space", "") == "local":
                continue
            shown = ast.unparse(node)
            if shown in seen:
                continue
            seen.add(shown)
            value = _value_at(handle, node.slice, V, act[0] if len(act) else None)
            parts.append(f"{shown}" + (f" (now {value})" if value is not None else ""))
            lines = sorted(set(self.loops.writes.get(name, [])))
            if lines:
                written.append(f"{name} (line{'s' if len(lines) > 1 else ''} {', '.join(str(x) for x in lines[:5])})")
            else:
                unwritten.append(name)
        if not parts:
            return ""
        out = f"They spin on memory, waiting for {', '.join(parts)} to change"
        if unwritten:
            out += (f"; no thread of this launch ever writes {', '.join(unwritten)}, so it cannot change while the "
                    "kernel runs (the host does not write memory during a launch; on a GPU this loop spins forever)")
        if written:
            out += f"; {', '.join(written)} is written, but not by a thread that could still get there"
        return out + "."


def _value_at(handle, index_node, V, lane):
    """The element ``handle[index]`` holds now, for constant indices or the first looping thread's."""
    try:
        idx_nodes = index_node.elts if isinstance(index_node, ast.Tuple) else [index_node]
        idx = []
        for n in idx_nodes:
            if isinstance(n, ast.Constant) and isinstance(n.value, int):
                idx.append(n.value)
            elif isinstance(n, ast.Name) and isinstance(V, dict) and n.id in V:
                v = V[n.id]
                idx.append(int(v[lane]) if isinstance(v, np.ndarray) and v.ndim and lane is not None else int(v))
            else:
                return None
        data = handle.data
        if handle.space == "shared":
            return None  # one copy per block: which block's is meant is not clear here
        value = data[tuple(idx)]
        return value.item() if hasattr(value, "item") else value
    except (IndexError, TypeError, ValueError, KeyError):
        return None


def _who(rt, act) -> str:
    """'block (0, 0, 0): threads 0-31' for the first blocks of the looping lanes."""
    if len(act) == 0:
        return "no thread"
    blocks = rt.block_lin[act]
    order = np.unique(blocks)
    parts = []
    for b in order[:3]:
        first = act[np.flatnonzero(blocks == b)[0]]
        coords = (int(rt.bid[0][first]), int(rt.bid[1][first]), int(rt.bid[2][first]))
        parts.append(f"block {coords}: threads {_ranges(rt.thread_lin[act[blocks == b]])}")
    if len(order) > 3:
        parts.append(f"and {len(order) - 3:,} more block(s)")
    return "; ".join(parts)
