"""The time watchdog of an in-process capture on numba's CUDA simulator (``capture(..., backend="sim")``).

``gpuviz run --backend sim`` watches its launches from the worker (:class:`gpuviz.capture.launch_watch.LaunchWatch`)
and ends the worker's process when one makes no progress: a simulated block's threads are Python threads,
which nothing can kill. In the caller's own process ending it is not an option, so here the same watch
(the same rules of progress, the same report naming the loop's line) *releases* the block's threads instead:
every live simulator thread gets an exception raised inside it (``PyThreadState_SetAsyncExc``, delivered at
its next Python instruction, so a spin in kernel code ends at once) and the simulator's abort flag (which
wakes the threads parked at a barrier and makes them raise). numba's block manager, which the caller's thread
runs, sees the first thread fail and returns; the caller gets :class:`KernelStalled`. A thread that does not
end within :data:`RELEASE_WAIT_S` (stuck in a long call outside Python) stays behind as a parked daemon thread,
and the error's message says how many.
"""

from __future__ import annotations

import ctypes
import threading
import time

from ...errors import KernelStalled
from ...launch_watch import LaunchWatch, _sim_threads

RELEASE_WAIT_S = 2.0  # how long the released block threads get to end before the caller hears of the stall


class SimulatorReleased(Exception):
    """Raised inside a simulated CUDA thread by the watchdog: the launch was stopped (never reaches the caller)."""


class _Launch:
    """What :class:`LaunchWatch` reads of a launch record."""

    def __init__(self, kernel_name: str, grid, block):
        self.number = 1
        self.kernel = kernel_name
        self.grid = tuple(grid)
        self.block = tuple(block)


def _raise_in(thread: threading.Thread) -> None:
    if thread.ident is not None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(SimulatorReleased))


class SimWatch:
    """``with SimWatch(kernel, grid, block, timeout) as watch: jitted[grid, block](*args)``; then
    :meth:`raise_if_stalled` (also after the launch raised: the stall is why)."""

    def __init__(self, kernel, grid, block, timeout: float | None, name: str = ""):
        self.timeout = float(timeout) if timeout else None
        self.kernel = kernel
        self.record = _Launch(name or getattr(kernel, "__name__", "kernel"), grid, block)
        self.released: list[threading.Thread] = []
        self._watch = None

    def __enter__(self) -> "SimWatch":
        if self.timeout is not None:
            self._watch = LaunchWatch(self.timeout, on_stall=self._release)
            self._watch.begin(self.record, self.kernel)
        return self

    def __exit__(self, *exc) -> bool:
        if self._watch is not None:
            self._watch.end()
            self._watch.close()
        return False

    @property
    def stalled(self) -> KernelStalled | None:
        return self._watch.stalled if self._watch is not None else None

    def _release(self, _rec, _exc) -> None:
        """In the watch's thread: make every thread of the simulated block end (see the module's docstring)."""
        threads = _sim_threads()
        self.released = threads
        for t in threads:
            t.abort = True  # a thread at (or reaching) a barrier raises there
            _raise_in(t)  # a thread in kernel code raises at its next instruction
        for t in threads:
            t.syncthreads_blocked = False
            t.syncthreads_event.set()

    def raise_if_stalled(self) -> None:
        """Raise the watchdog's :class:`KernelStalled` if it stopped the launch (after the threads ended)."""
        exc = self.stalled
        if exc is None:
            return
        deadline = time.monotonic() + RELEASE_WAIT_S
        for t in self.released:
            t.join(max(0.0, deadline - time.monotonic()))
        parked = sum(1 for t in self.released if t.is_alive())
        message = str(exc).replace("--watchdog SECONDS sets how long a launch may go without progress; 0 turns it off",
                                   "watchdog=SECONDS sets how long a launch may go without progress; None or 0 turns "
                                   "it off")
        head, sep, tail = message.partition("\n")
        if parked:
            head += (f" {parked:,} of the block's {len(self.released):,} simulator threads could not be stopped and "
                     "stay parked as daemon threads of this process.")
        else:
            head += (f" The block's {len(self.released):,} simulator threads were released (each was made to raise "
                     "inside the kernel): none is left running.")
        raise KernelStalled(head + sep + tail, file=exc.file, line=exc.line, block=exc.block, threads=exc.threads,
                            loop_line=exc.loop_line, seconds=exc.seconds) from None
