"""The worker's watchdog for the launches the CPU executor's own watchdog does not see.

The CPU executor checks its progress from inside the launch (:mod:`gpuviz.capture.backends.cpu.watchdog`). Two other
ways a launch runs in ``gpuviz run`` cannot check themselves, so a thread of the worker watches them:

* **numba's CUDA simulator** (``--backend sim``, and launches gpuviz cannot instrument, which run on the
  original launcher): each thread of a block is a Python thread. About four times a second the watch
  reads every block thread's frame (``sys._current_frames()``): the line it is at, the outermost
  ``while`` loop around it, and what that loop's exit conditions read (its locals, and the arrays
  behind them). The launch progresses when a thread finishes, a block ends, a thread is outside any
  ``while`` loop (``for ... in range`` loops are bounded), or anything a looping thread's exit
  conditions read changed: the rules of the CPU executor's watchdog. With no progress for the
  watchdog's time, the program is stopped, naming the loop's line, the looping threads and, for a spin
  on memory, what they wait for.
* **a real GPU** (``--backend gpu``): the kernel runs on the device and the host thread waits in the
  CUDA driver (:mod:`gpuviz.capture.device_wait` marks where). Nothing on the host can see its progress
  nor interrupt it, so a wait longer than the watchdog's time stops the program (ending the process is
  what frees the GPU), naming the kernel, the launch, how long it ran and, read from the kernel's
  source, the ``while`` loops that cannot end while it runs (their conditions read memory no thread of
  the launch writes).

Stopping is :attr:`on_stall` (the worker logs the error and ends its process: a stuck launch cannot be
unwound). While a launch runs the watch reports progress (``on_progress``) once a second, and a
heartbeat (``on_heartbeat``) that tells the parent the worker is alive: a parent that hears nothing
for long during a launch stops the worker itself (the case of a call that holds the interpreter).
"""

from __future__ import annotations

import ast
import sys
import threading
import time
import zlib

import numpy as np

from . import device_wait
from .errors import KernelStalled
from .frontend.source import collect_device_functions, parse_function, python_function
from .backends.cpu.runtime.values import _ranges
from .backends.cpu.watchdog import loop_table, stalled_tail

CHECK_INTERVAL_S = 0.25
PROGRESS_INTERVAL_S = 1.0
_HASH_LIMIT = 64 << 20  # bytes of an array hashed per check; a bigger one counts as changing


class KernelCode:
    """What the watch reads from a kernel's source once: its functions' spans, loops and writers."""

    def __init__(self, kernel):
        fn = python_function(kernel)
        self.name = fn.__name__
        self.file = fn.__code__.co_filename
        self.first_line = fn.__code__.co_firstlineno
        self.root = None
        self.table = None
        self.spans: list[tuple[str, int, int]] = []  # (file, first, last) of the kernel and its device functions
        self.loops: list[tuple[int, int]] = []  # (first, last) line of every loop
        try:
            root = parse_function(fn)
            collect_device_functions(root)
            self.root = root
            self.file, self.first_line = root.file, root.first_line
            funcs = [root, *root.all_device_functions().values()]
            self.table = loop_table(root)
            for fs in funcs:
                self.spans.append((fs.file, fs.first_line, fs.last_line))
                for node in ast.walk(fs.tree):
                    if isinstance(node, (ast.For, ast.While)):
                        self.loops.append((node.lineno, getattr(node, "end_lineno", node.lineno) or node.lineno))
        except Exception:  # noqa: BLE001 - no source to read: the time limit alone applies
            self.table = None

    def line_text(self, line: int) -> str:
        if self.root is not None and line > 0:
            return self.root.line_text(line)
        return ""

    def in_kernel(self, frame) -> bool:
        """Whether ``frame`` runs the kernel or one of its device functions (the original or gpuviz's
        instrumented copy: both keep the file's name and lines)."""
        name, line = frame.f_code.co_filename, frame.f_lineno
        return any(name == f and a <= line <= b for f, a, b in self.spans)

    def outer_while(self, line: int) -> int | None:
        """The outermost ``while`` loop around ``line`` (None: no loop, or ``for`` loops only)."""
        if self.table is None:
            return None
        around = [a for a, b in self.loops if a <= line <= b]
        if not around:
            return None
        return self.table.outer.get(max(around))

    def endless_loops(self) -> list[tuple[int, list[str]]]:
        """(line, arrays) of the ``while`` loops whose conditions read arrays that no thread writes."""
        if self.table is None:
            return []
        out = []
        for line in sorted(self.table.whiles):
            _names, subs = self.table.watched.get(line, ([], []))
            unwritten = sorted({s.value.id for s in subs if s.value.id not in self.table.writes})
            if unwritten:
                out.append((line, unwritten))
        return out


_codes: dict = {}


def kernel_code(kernel) -> KernelCode:
    key = python_function(kernel).__code__
    hit = _codes.get(key)
    if hit is None:
        hit = _codes[key] = KernelCode(kernel)
    return hit


def _sim_threads() -> list:
    """The live threads of numba's CUDA simulator (one per CUDA thread of the block that runs)."""
    return [t for t in threading.enumerate()
            if type(t).__name__ == "BlockThread" and type(t).__module__.endswith("simulator.kernel") and t.is_alive()]


def _block_starting(frames) -> bool:
    """Whether numba's simulator is still starting the threads of the block it runs (its BlockManager.run
    has made fewer threads than the block holds)."""
    for frame in frames.values():
        f = frame
        while f is not None:
            if f.f_code.co_name == "run" and f.f_code.co_filename.endswith(("simulator/kernel.py", "simulator\\kernel.py")):
                local = f.f_locals
                made, dims = local.get("threads"), getattr(local.get("self"), "_block_dim", None)
                if isinstance(made, set) and dims is not None:
                    return len(made) < int(np.prod(dims))
            f = f.f_back
    return False


def sim_ndarray(obj):
    """The numpy array behind a simulator array object (FakeWithinKernelCUDAArray, FakeCUDAArray) or obj."""
    for _ in range(4):
        if isinstance(obj, np.ndarray):
            return obj
        inner = obj.__dict__.get("_item") if hasattr(obj, "__dict__") else None
        if inner is None:
            inner = getattr(obj, "_ary", None)
        if inner is None:
            return None
        obj = inner
    return obj if isinstance(obj, np.ndarray) else None


class LaunchWatch:
    """Watches the launch in flight (:meth:`begin` / :meth:`end`) from its own thread.

    ``timeout``: seconds without progress (simulator) or in one wait for the device (GPU) before
    ``on_stall(record, KernelStalled)`` is called (None or 0: never). ``on_progress(record, info)`` about
    once a second; ``on_heartbeat()`` every ``heartbeat_s`` while a launch is in flight."""

    def __init__(self, timeout: float | None, *, on_stall, on_progress=None, on_heartbeat=None,
                 heartbeat_s: float = 2.0, interval: float = CHECK_INTERVAL_S):
        self.timeout = float(timeout) if timeout else None
        self.on_stall = on_stall
        self.on_progress = on_progress
        self.on_heartbeat = on_heartbeat
        self.heartbeat_s = heartbeat_s
        self.interval = interval
        self._lock = threading.Lock()
        self._launch = None  # (record, KernelCode, started)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.stalled: KernelStalled | None = None

    # ---- the launch in flight ----------------------------------------------------------------------
    def begin(self, rec, kernel) -> None:
        code = kernel_code(kernel)
        with self._lock:
            self._launch = (rec, code, time.monotonic())
            self._reset()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="gpuviz-launch-watch", daemon=True)
            self._thread.start()

    def end(self) -> None:
        with self._lock:
            self._launch = None

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def _reset(self) -> None:
        now = time.monotonic()
        self._last_progress = now
        self._next_progress = now + PROGRESS_INTERVAL_S
        self._next_heartbeat = now + self.heartbeat_s
        self._state = None  # what the last simulator check saw
        self._mode = None

    # ---- the thread --------------------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                launch = self._launch
            if launch is None:
                continue
            try:
                self.check(*launch)
            except Exception:  # noqa: BLE001 - the watch must never take the program down
                continue

    def check(self, rec, code: KernelCode, started: float) -> None:
        """One look at the launch in flight (called by the thread; tests call it directly)."""
        now = time.monotonic()
        if self.on_heartbeat is not None and now >= self._next_heartbeat:
            self._next_heartbeat = now + self.heartbeat_s
            self.on_heartbeat()
        threads = _sim_threads()
        wait = device_wait.current()
        info = None
        if threads:
            if self._mode != "sim":
                self._mode, self._state, self._last_progress = "sim", None, now
            info = self._check_sim(rec, code, threads, now)
        elif wait is not None:
            if self._mode != ("gpu", wait[0]):
                self._mode, self._last_progress = ("gpu", wait[0]), wait[0]
            info = {"line": -1, "waiting": wait[1]}
            if self.timeout is not None and now - wait[0] >= self.timeout:
                self._stall(rec, self._gpu_stalled(rec, code, now - wait[0], wait[1]))
                return
        else:
            self._mode = None  # host code, or the CPU executor (it watches itself)
            return
        if info is not None and self.on_progress is not None and now >= self._next_progress:
            self._next_progress = now + PROGRESS_INTERVAL_S
            self.on_progress(rec, {"seconds": round(now - started, 2), "no_progress_s": round(now - self._last_progress, 2),
                                   "label": rec.kernel, **info})

    def _stall(self, rec, exc: KernelStalled) -> None:
        with self._lock:
            if self._launch is None or self._launch[0] is not rec:
                return  # the launch ended meanwhile
            self._launch = None
        self.stalled = exc
        self.on_stall(rec, exc)

    # ---- numba's simulator ---------------------------------------------------------------------------
    def _check_sim(self, rec, code: KernelCode, threads, now) -> dict:
        frames = sys._current_frames()
        block = None
        looping = []  # (thread, w0, frame)
        outside = 0
        for t in threads:
            block = tuple(t.blockIdx) if block is None else block
            frame = frames.get(t.ident)
            if frame is None or getattr(t, "syncthreads_blocked", False):
                continue  # waiting at a barrier (or not started): neither looping nor moving on
            chain = []
            f = frame
            while f is not None:
                if code.in_kernel(f):
                    chain.append(f)
                f = f.f_back
            w0 = None
            for f in reversed(chain):  # outermost kernel frame first: its while loop encloses the rest
                w0 = code.outer_while(f.f_lineno)
                if w0 is not None:
                    looping.append((t, w0, f))
                    break
            if w0 is None:
                outside += 1
        fingerprint = 0
        for t, w0, f in looping:
            fp = self._fingerprint(code, w0, f)
            if fp is None:
                fingerprint = None
                break
            fingerprint = zlib.crc32(f"{t.ident}:{w0}:{fp}".encode(), fingerprint)
        state = (block, len(threads), frozenset((t.ident, w0) for t, w0, _ in looping), fingerprint)
        prev = self._state
        # the simulator starts a block's threads one by one (slowly, while the first ones spin): still starting
        # is work toward the end
        starting = _block_starting(frames)
        progressed = (starting or outside > 0 or fingerprint is None or prev is None or state[0] != prev[0]
                      or state[1] != prev[1] or state[2] != prev[2] or state[3] != prev[3])
        self._state = state
        if progressed:
            self._last_progress = now
        line = looping[0][1] if looping else -1
        if self.timeout is not None and looping and now - self._last_progress >= self.timeout:
            self._stall(rec, self._sim_stalled(rec, code, looping, now - self._last_progress))
        return {"line": line, "looping": len(looping), "block": list(block or ())}

    def _fingerprint(self, code: KernelCode, w0: int, frame) -> int | None:
        names, _subs = code.table.watched.get(w0, ([], []))
        local = frame.f_locals
        crc = 0
        for name in names:
            if name not in local:
                continue
            v = local[name]
            arr = sim_ndarray(v)
            if arr is not None:
                if arr.nbytes > _HASH_LIMIT:
                    return None
                data = np.ascontiguousarray(arr).view(np.uint8).reshape(-1)
            elif isinstance(v, (bool, int, float, complex, np.generic)):
                data = repr(v).encode()
            else:
                continue
            crc = zlib.crc32(data, zlib.crc32(name.encode(), crc))
        return crc

    def _sim_stalled(self, rec, code: KernelCode, looping, seconds: float) -> KernelStalled:
        w0 = looping[0][1]
        text = code.line_text(w0)
        by_block: dict = {}
        for t, _w, _f in looping:
            by_block.setdefault(tuple(t.blockIdx), []).append(int(t.thread_id))
        who = "; ".join(f"block {b}: threads {_ranges(np.array(sorted(ids)))}" for b, ids in list(by_block.items())[:3])
        msg = (f"{code.file}:{w0}: the kernel made no progress toward its end for {seconds:.0f} s under numba's "
               f"simulator: {len(looping):,} thread(s) keep looping in `{text}` ({who}); none of them left the loop "
               "or finished, and nothing its conditions read changed.")
        waits = self._sim_waits(code, w0, looping[0][2])
        msg += stalled_tail(waits, text)
        first_block = next(iter(by_block))
        threads = [(0, tid) for tid in sorted(by_block[first_block])]
        return KernelStalled(msg, file=code.file, line=w0, block=first_block, threads=threads, loop_line=w0,
                             seconds=seconds)

    def _sim_waits(self, code: KernelCode, w0: int, frame) -> str:
        _names, subs = code.table.watched.get(w0, ([], []))
        parts, unwritten, seen = [], [], set()
        for node in subs:
            shown = ast.unparse(node)
            name = node.value.id
            if shown in seen or sim_ndarray(frame.f_locals.get(name)) is None:
                continue
            seen.add(shown)
            value = _read(node, frame)
            parts.append(shown + (f" (now {value})" if value is not None else ""))
            if name not in code.table.writes and name not in unwritten:
                unwritten.append(name)
        if not parts:
            return ""
        out = f"They spin on memory, waiting for {', '.join(parts)} to change"
        if unwritten:
            out += (f"; no thread of this launch ever writes {', '.join(unwritten)}, so it cannot change while the "
                    "kernel runs (on a GPU this loop spins forever)")
        return out + "."

    # ---- a real GPU ---------------------------------------------------------------------------------
    def _gpu_stalled(self, rec, code: KernelCode, seconds: float, what: str) -> KernelStalled:
        return gpu_stalled(rec, code, seconds, what)


def gpu_stalled(rec, code: KernelCode, seconds: float, what: str = "the kernel") -> KernelStalled:
    """The report for a launch that has run on the GPU for ``seconds`` without finishing."""
    dims = f"grid {_dims(rec.grid)} x block {_dims(rec.block)}"
    msg = (f"launch {rec.number} of {code.name} ({dims}) has run on the GPU for {seconds:.0f} s without finishing "
           f"(the host was waiting for {what}). A kernel on a GPU cannot be interrupted from the program that "
           "launched it, so gpuviz stopped the program; ending its process ends the kernel.")
    endless = code.endless_loops()
    line = code.first_line
    if endless:
        line, arrays = endless[0]
        msg = (f"{code.file}:{line}: " + msg + f" Its while loop at line {line} (`{code.line_text(line)}`) waits on "
               f"{', '.join(arrays)}, which no thread of the launch writes: it cannot end while the kernel runs.")
    elif code.table is not None and code.table.whiles:
        lines = sorted(code.table.whiles)
        line = lines[0]
        msg = (f"{code.file}:{line}: " + msg + " The kernel's while loop" + ("s" if len(lines) > 1 else "")
               + f" (line{'s' if len(lines) > 1 else ''} {', '.join(str(x) for x in lines[:5])}) may not end; "
               "--backend cpu runs it on gpuviz's executor, whose watchdog names the line and the threads that loop.")
    else:
        msg = f"{code.file}:{code.first_line}: " + msg
    msg += (" If the kernel only needs longer, raise the limit: --watchdog SECONDS (0 turns it off; the program's "
            "own --timeout still applies).")
    return KernelStalled(msg, file=code.file, line=line, loop_line=line if endless else -1, seconds=seconds)


def _read(node: ast.Subscript, frame):
    """The element a condition's subscript reads now, in the looping thread's locals (None: cannot tell)."""
    plain = (ast.Name, ast.Constant, ast.Tuple, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop, ast.Load)
    if not all(isinstance(n, plain) for n in ast.walk(node.slice)):
        return None  # only names, numbers and arithmetic: reading the value must not run anything of the program's
    try:
        arr = sim_ndarray(frame.f_locals[node.value.id])
        idx = eval(compile(ast.Expression(node.slice), "<index>", "eval"), {}, dict(frame.f_locals))  # noqa: S307
        value = arr[idx if not isinstance(idx, list) else tuple(idx)]
        return value.item() if hasattr(value, "item") else value
    except Exception:  # noqa: BLE001 - an index gpuviz cannot evaluate out of the loop: say nothing
        return None


def _dims(d) -> str:
    d = list(d)
    while len(d) > 1 and d[-1] == 1:
        d.pop()
    return "x".join(str(x) for x in d)
