"""A bundled kernel captured for a command (``gpuviz capture``, and ``snapshot`` / ``export`` of a kernel's name):
what its launch shape and its inputs' size can refuse is refused before the inputs are allocated.

Importing this module imports no kernel and no numba (the capture package imports numba when a capture runs, the
catalog a kernel when one is asked for): ``gpuviz capture --backend sim`` picks numba's simulator first
(:func:`select_backend_before_numba`)."""

from __future__ import annotations

import os

import numpy as np

import gpuviz

from .. import cliargs as ca
from ..capture.errors import TraceTooLarge
from ..capture.limits import available_memory, check_before_inputs
from ..capture.backends.cpu.watchdog import DEFAULT_STALL_S
from ..catalog import all_kernels, get_kernel
from .common import load_for_launch


def select_backend_before_numba(backend: str) -> None:
    """numba picks its simulator when numba.cuda is first imported: decide before any kernel module loads."""
    if backend == "sim":
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    elif backend == "gpu":
        os.environ.pop("NUMBA_ENABLE_CUDASIM", None)


def input_bytes(spec, size: int) -> int:
    """The bytes a bundled kernel's inputs take at ``size``, from two small sizes (never allocating them)."""
    def nbytes(s):
        return sum(int(getattr(a, "nbytes", 0)) for a in spec.make_args(s, np.random.default_rng(0)))

    s1 = max(2, min(int(spec.small_size), 64))
    b1, b2 = nbytes(s1), nbytes(2 * s1)
    if size <= 2 * s1 or b1 <= 0 or b2 <= b1:
        return max(b1, b2)
    k = np.log2(b2 / b1)  # 1 for vectors, 2 for square matrices
    return int(b1 * (size / s1) ** k)


def capture_bundled(name: str, size: int | None, block, backend: str, record_blocks=None, seed: int = 0,
                    watchdog=None, progress=None, max_events: int = 50_000_000):
    """Capture a bundled kernel; returns (trace, spec, args after the launch). What the launch shape and the
    inputs' size can refuse is refused before the inputs are allocated."""
    spec = get_kernel(name)
    size = spec.default_size if size is None else size
    grid, block = spec.launch(size, tuple(block) if block else spec.default_block)
    if record_blocks:
        n_blocks = int(np.prod(grid))
        outside = [b for b in record_blocks if b >= n_blocks]
        if outside:
            raise ca.ArgumentRangeError(f"argument --blocks: block {outside[0]} is not in the launch: it has "
                                        f"{n_blocks:,} block(s), ids 0..{n_blocks - 1}")
    check_before_inputs(grid, block, backend=backend, max_events=max_events, record_blocks=record_blocks,
                        kernel=spec.name)
    need, have = input_bytes(spec, size), available_memory()
    if have is not None and need > have // 2:
        raise TraceTooLarge(f"{spec.name} at size {size:,}: its inputs would take {need / 2**30:.1f} GiB, more than half "
                            f"of the memory available here ({have / 2**30:.1f} GiB). Capture a smaller problem (--size).")
    args = spec.make_args(size, np.random.default_rng(seed))
    trace = gpuviz.capture(spec.kernel, grid, block, *args, backend=backend, record_blocks=record_blocks,
                           max_events=max_events,
                           meta={"bundled_kernel": {"name": name, "size": size, "size_label": spec.size_label}}, **({"watchdog": DEFAULT_STALL_S if watchdog is None else watchdog,
                                                      "progress": progress} if backend == "cpu" else
                                                     {"watchdog": DEFAULT_STALL_S if watchdog is None else watchdog}
                                                     if backend == "sim" else {}))
    return trace, spec, args


def trace_or_kernel(source: str, what: str, launch: int | None = None):
    """A trace file (``launch``: that launch of a recording, else its first with events), or a bundled kernel
    captured now on the CPU executor (its small size)."""
    if os.path.exists(source):
        return load_for_launch(source, launch, what)[1]
    specs = all_kernels()
    if source not in specs:
        raise FileNotFoundError(f"{source!r} is neither a trace file nor a bundled kernel (see `gpuviz kernels`)")
    if launch is not None:
        raise ValueError(f"--launch picks a launch of a recording file; {source!r} is a bundled kernel")
    trace, _spec, _ = capture_bundled(source, specs[source].small_size, None, "cpu")
    return trace
