"""The ``sim`` back end's adapter: one launch on numba's CUDA simulator, the kernel rewritten per thread
(:mod:`.perthread`) and its recording calls resolved by :class:`~.perthread.SimRecorder` (see
:class:`gpuviz.capture.backends.base.Backend`).

numba's simulator runs every CUDA thread of a block as a Python thread; a launch that makes no progress is
stopped by :class:`~.watch.SimWatch`.
"""

from __future__ import annotations

import ast
import gc
import os
import sys
import time

import numpy as np

from ... import faults
from ...assemble import Recorded, uninitialised_shared_reads, versions
from ...errors import BackendUnavailable, CaptureError, TraceTooLarge
from ...args import _hint
from ...frontend.plan import kernel_debug, plan_for
from ...limits import check_launch
from ..base import LaunchSpec
from ..rewrite import PREFIX, device_alias
from .perthread import PerThreadRewriter, SimRecorder, as_sim_records
from .watch import SimWatch

DEVICE = "numba CUDA simulator"


class SimBackend:
    """numba's CUDA simulator running a per-thread instrumented copy of the kernel (the reference)."""

    name = "sim"
    per_thread = True
    estimated = True

    def run(self, plan, launch: LaunchSpec, args, options: dict) -> Recorded:
        """Record the launch. Option: ``watchdog``, seconds it may go without progress before it is stopped with
        KernelStalled (None or 0: never; see :mod:`.watch`)."""
        return record_sim(launch, args, watchdog=options.get("watchdog"))


def simulator_cuda():
    """numba.cuda in simulator mode, importing it so if numba.cuda is not imported yet."""
    mod = sys.modules.get("numba.cuda")
    if mod is None:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        from numba import config

        config.reload_config()
        from numba import cuda as mod
    if not getattr(mod, "simulator_enabled", False) and "simulator" not in type(getattr(mod, "jit", None)).__module__:
        from numba import config

        if not config.ENABLE_CUDASIM:
            raise BackendUnavailable(
                "backend='sim' needs numba's CUDA simulator, which numba chooses when numba.cuda is first imported: "
                "set NUMBA_ENABLE_CUDASIM=1 before importing numba (the gpuviz CLI and app do this in their worker)"
            )
    return mod


def build_sim_kernel(kernel, recorder: SimRecorder):
    """The per-thread instrumented copy of ``kernel`` jitted with the simulator's cuda.jit."""
    cuda = simulator_cuda()
    plan = plan_for(kernel)
    plan.raise_if_unsupported()
    recorder_fns = recorder.functions()
    built: dict[int, object] = {}

    def build(fp):
        fs, is_kernel = fp.fs, fp.is_kernel
        key = id(fs.fn)
        if key in built:
            return built[key]
        ns = dict(fs.names())
        ns.update(recorder_fns)
        ns[PREFIX + "cuda"] = cuda  # the simulator swaps it for its per-thread module during the launch
        tree = PerThreadRewriter(fs, is_kernel=is_kernel, plan=plan).rewrite()
        module = ast.Module(body=[tree], type_ignores=[])
        exec(compile(module, fs.file, "exec"), ns)  # noqa: S102 - the user's kernel, instrumented
        fn = ns[fs.name]
        jitted = cuda.jit(device=not is_kernel, debug=kernel_debug(kernel))(fn)
        if is_kernel:  # the dispatcher's extensions (input-only arguments, ...) apply to the copy's launches too
            jitted.extensions = list(getattr(kernel, "extensions", None) or ())
        built[key] = jitted
        # the device functions it calls, after it is known: a recursive one (fib calling fib) finds itself
        # (the names are looked up in ns when the function runs, not when it is defined)
        for call_name, index in fp.device_functions.items():  # the plan's table of the device functions it calls
            ns[device_alias(call_name)] = build(plan.functions[index])
        return jitted

    return plan, build(plan.kernel)


def _array_params(root, args) -> list[str]:
    """The parameters bound to arrays (numpy scalars have a shape and a dtype too, but they are numbers)."""
    return [p for p, a in zip(root.params, (_hint(a)[1] for a in args))
            if hasattr(a, "shape") and hasattr(a, "dtype") and not isinstance(a, np.generic)]


def record_sim(launch: LaunchSpec, args, *, watchdog: float | None = None) -> Recorded:
    """The launch on numba's simulator, instrumented: what it recorded."""
    kernel, grid, block, max_events = launch.kernel, launch.grid, launch.block, launch.max_events
    root = plan_for(kernel).root  # the kernel as its plan read it (once, for every backend)
    check_launch(grid, block, where=f"{root.file}:{root.first_line}", kernel=root.name)
    recorder = SimRecorder(grid, block, _array_params(root, args), launch.record_blocks, max_events=max_events,
                           file=root.file)
    recorder.tuple_params = [p for p, a in zip(root.params, args) if isinstance(a, tuple)]
    if root.vararg:  # def k(a, *rest): the further arguments, a tuple, their arrays named rest[0], ...
        recorder.tuple_params.append(root.vararg)
    plan, jitted = build_sim_kernel(kernel, recorder)
    root = plan.root
    args = [as_sim_records(a) for a in args]
    t0 = time.perf_counter()
    _run(jitted, kernel, launch, args, recorder, root, watchdog)
    elapsed = time.perf_counter() - t0
    faults.check("run", "sim")
    faults.check("events", "sim")
    events = recorder.trace_events()
    if len(events["kind"]) > max_events:
        raise TraceTooLarge(f"the trace has {len(events['kind']):,} events, over max_events={max_events:,}")
    # a shared element a thread reads that no thread of its block writes holds whatever the simulator's fresh
    # shared memory held (on a GPU: garbage): warned as the GPU backend warns it
    warnings = uninitialised_shared_reads(events, recorder.arrays, grid, block, root.file)
    faults.check("assemble", "sim")
    return Recorded(grid, block, events, recorder.arrays, DEVICE, versions(), timings={"instrumented_s": elapsed},
                    warnings=warnings)


def _run(jitted, kernel, launch: LaunchSpec, args, recorder: SimRecorder, root, watchdog) -> None:
    # numba's simulator runs every CUDA thread of a block as a Python thread, parked at barriers: a garbage
    # collection that starts in one of them runs the finalizers of whatever was garbage then (the Qt objects of
    # a closed window, in the app or the suite), in that thread, holding the GIL, and a finalizer that waits for
    # another thread leaves the whole block parked for good (seen once in CI: 255 threads at a barrier, one
    # inside a collection). So collect here, in the caller's thread, and start none during the launch.
    gc.collect()
    collecting = gc.isenabled()
    gc.disable()
    watch = SimWatch(kernel, launch.grid, launch.block, watchdog, name=root.name)
    try:
        with watch:
            jitted[launch.grid, launch.block, 0, int(launch.dynamic_shared_bytes)](*args)
        watch.raise_if_stalled()
    except CaptureError:
        if recorder.stopped_at is not None:  # the simulator re-raised it as "tid=[..] ctaid=[..]: ...", line lost
            raise recorder.too_large_error() from None
        raise
    except Exception as exc:  # the simulator raises plain Python errors (IndexError, ...) from the kernel
        watch.raise_if_stalled()  # the watchdog's release of the block's threads is why
        raise CaptureError(f"{root.file}: {root.name} failed under numba's simulator: {type(exc).__name__}: {exc}",
                           file=root.file) from exc
    finally:
        if collecting:
            gc.enable()
