"""The capture back ends behind one interface, and the registry that names them.

A back end runs one launch of a kernel whose capture plan (:mod:`gpuviz.capture.frontend.plan`) the front end
has read, and hands back what it recorded (:class:`gpuviz.capture.assemble.Recorded`); ``gpuviz.capture``
turns that into the trace (:mod:`gpuviz.capture.assemble`), the same way for all:

    cpu   gpuviz's own lockstep executor (numpy; no GPU; the default)        backends/cpu/
    sim   numba's CUDA simulator running a per-thread instrumented copy     backends/sim/
    gpu   numba-cuda on a real NVIDIA GPU, recording into device arrays     backends/gpu/

What a back end keeps per kernel (the CPU executor's compiled code, the GPU's compiled variants) it keeps in
its own :class:`PlanCache`, not on the plan. To add a back end: a module with a class that has the
:class:`Backend` attributes, and one line in :data:`BACKENDS`.
"""

from __future__ import annotations

from .base import Backend, LaunchSpec, PlanCache
from .cpu.backend import CpuBackend
from .gpu.backend import GpuBackend
from .sim.backend import SimBackend

__all__ = ["BACKENDS", "Backend", "LaunchSpec", "PlanCache", "backend_named"]

#: the back ends by name, in the order gpuviz lists them
BACKENDS: dict[str, Backend] = {b.name: b for b in (CpuBackend(), SimBackend(), GpuBackend())}


def backend_named(name: str) -> Backend:
    """The back end called ``name`` (ValueError naming the known ones for another)."""
    try:
        return BACKENDS[name]
    except KeyError:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {name!r}") from None
