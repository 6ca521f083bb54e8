"""Errors a capture can end in. Each says what is wrong and where (file, line, block, thread)."""

from __future__ import annotations


class CaptureError(Exception):
    """Base class: a kernel could not be captured. ``str()`` is a message for a person."""

    def __init__(self, message: str, *, file: str = "", line: int = -1, trace=None):
        super().__init__(message)
        self.file = file
        self.line = line
        #: the partial trace recorded up to the failure, when there is one (the app can still show it)
        self.trace = trace


class UnsupportedConstruct(CaptureError):
    """The kernel uses Python that gpuviz cannot instrument (slicing, arrays in tuples, ...)."""


class LaunchConfigError(CaptureError):
    """The launch configuration is impossible on a GPU (too many threads per block, too much shared memory...)."""


class KernelFault(CaptureError):
    """The kernel did something a GPU would fault on or silently corrupt: an out-of-range index, a bad type."""


class KernelRaised(KernelFault):
    """The kernel raised a Python exception that numba-cuda passes to the launching program: a ``raise`` in
    the kernel, or a division by zero under ``debug=True``. ``exception`` is that exception; a program whose
    launches gpuviz intercepts sees it raised from its launch, as it would from numba's."""

    def __init__(self, message: str, *, exception: BaseException, **kw):
        super().__init__(message, **kw)
        self.exception = exception


class KernelStalled(KernelFault):
    """The kernel made no progress toward its end for the watchdog's time (an endless loop, a spin on memory
    nothing writes). ``threads``: (block, thread) pairs still looping; ``loop_line``: the loop they are in."""

    def __init__(self, message: str, *, block=None, threads=(), loop_line: int = -1, seconds: float = 0.0, **kw):
        super().__init__(message, **kw)
        self.block = block
        self.threads = list(threads)
        self.loop_line = loop_line
        self.seconds = seconds


class DivergentBarrierError(CaptureError):
    """A ``cuda.syncthreads()`` that not every live thread of a block reached (a deadlock or UB on a GPU)."""

    def __init__(self, message: str, *, block=None, arrived=(), missing=(), **kw):
        super().__init__(message, **kw)
        self.block = block
        self.arrived = list(arrived)
        self.missing = list(missing)


class TraceTooLarge(CaptureError):
    """The trace would exceed the event limit: record fewer blocks or a smaller problem."""


class BackendUnavailable(CaptureError):
    """The backend asked for cannot run here (no GPU, or numba's simulator not selected at import)."""
