"""The ``gpu`` back end's adapter: one launch on a real NVIDIA GPU through numba-cuda, recorded into device arrays
(:mod:`.launch`: plain and instrumented variants, counting pass, copy-back; :mod:`.rewrite`: the recorders)."""

from __future__ import annotations

import warnings as _warnings

from ... import faults
from ...assemble import Recorded
from ..base import LaunchSpec
from .launch import record_launch

#: the options of ``gpuviz.capture`` the GPU recorder reads, and their defaults
OPTIONS = {"mode": "thread", "timestamps": "sync", "record": "all", "time_plain": True, "repeats": 5,
           "layout": "auto", "max_registers": None}


class GpuBackend:
    """numba-cuda on a real NVIDIA GPU."""

    name = "gpu"
    per_thread = True
    estimated = False

    def run(self, plan, launch: LaunchSpec, args, options: dict) -> Recorded:
        """Record the launch. The arguments end up as after a normal launch (the instrumented run's results).
        Options: ``mode``, ``timestamps``, ``record``, ``repeats``, ``layout`` ("auto", "uniform" or "table":
        the trace is the same either way; tests and benchmarks force one), ``max_registers``. The plain kernel
        is always timed (``time_plain`` of ``gpuviz.capture`` is the CPU executor's)."""
        chosen = {k: options.get(k, default) for k, default in OPTIONS.items() if k != "time_plain"}
        rec = record_gpu(launch, args, **chosen)
        for stage in ("run", "events", "assemble"):  # the GPU recorder's stages end inside record_gpu
            faults.check(stage, "gpu")
        return rec


def record_gpu(launch: LaunchSpec, args, **options) -> Recorded:
    """The launch recorded on the GPU (see :mod:`.launch`), ``options`` as :data:`OPTIONS`."""
    opts = dict(OPTIONS, **options)
    with _warnings.catch_warnings():
        # numba warns about small grids ("under-utilization"): teaching launches are small on purpose
        _warnings.filterwarnings("ignore", message=".*under-utilization.*")
        return record_launch(launch.kernel, launch.grid, launch.block, args, record_blocks=launch.record_blocks,
                            max_events=launch.max_events, dynamic_shared_bytes=launch.dynamic_shared_bytes, **opts)
