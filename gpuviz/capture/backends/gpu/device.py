"""The GPU the ``gpu`` back end runs on, or why there is none: numba-cuda, the driver, the device's properties and
versions, CUDA-event and host-hidden kernel timers, a compiled kernel's resources and PTX."""

from __future__ import annotations

import os
import platform
import sys
import time

import numpy as np

# numba-cuda 0.30.4 registers an overload of np.row_stack the first time it compiles anything; numpy 2.5
# removed np.row_stack, so that first compile dies with AttributeError. numba-cuda 0.30 is in maintenance
# and will not change; np.vstack is what row_stack always was, so alias it before numba.cuda compiles.
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack

from ... import device_wait  # noqa: E402
from ...assemble import versions  # noqa: E402
from ...errors import BackendUnavailable, CaptureError  # noqa: E402


# ---- the GPU, or why there is none ---------------------------------------------------------------------
def gpu_cuda():
    """``numba.cuda`` bound to a real GPU, or :class:`BackendUnavailable` saying why there is none."""
    mod = sys.modules.get("numba.cuda")
    if mod is None:
        if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
            raise BackendUnavailable(
                "backend='gpu' is unavailable: NUMBA_ENABLE_CUDASIM is set, so numba.cuda would be the CPU "
                "simulator in this process. Unset it (or set it to 0) before numba is imported to use the GPU"
            )
        try:
            from numba import cuda as mod
        except Exception as exc:  # numba or numba-cuda missing or broken
            raise BackendUnavailable(f"backend='gpu' is unavailable: numba.cuda cannot be imported ({type(exc).__name__}: {exc})") from exc
    from numba import config

    if config.ENABLE_CUDASIM or getattr(mod, "simulator_enabled", False):
        raise BackendUnavailable(
            "backend='gpu' is unavailable: this process imported numba.cuda as the CPU simulator "
            "(NUMBA_ENABLE_CUDASIM=1). Run GPU captures in a process started without it"
        )
    try:
        ok = mod.is_available()
    except Exception as exc:
        raise BackendUnavailable(f"backend='gpu' is unavailable: the CUDA driver failed to start ({type(exc).__name__}: {exc})") from exc
    if not ok:
        reason = ""
        try:
            mod.detect()  # prints; the driver error below is what we report
        except Exception as exc:  # noqa: BLE001 - detect() fails as its driver binding does; the reason is reported
            reason = f" ({type(exc).__name__}: {exc})"
        try:
            from numba.cuda.cudadrv.driver import driver

            driver.cuInit  # noqa: B018 - touching the driver raises the real reason when it is broken
        except Exception as exc:  # noqa: BLE001 - a broken driver raises what its binding raises: that is the reason
            words = " ".join(str(exc).split()).replace(": :", ":").rstrip(": ")
            reason = f": {words or type(exc).__name__}"
        raise BackendUnavailable(
            "backend='gpu' is unavailable: no usable NVIDIA GPU was found" + (reason or " (no CUDA driver or no device)")
            + ". Use backend='cpu' (gpuviz's CPU executor) or open a GPU recording"
        )
    return mod


def driver_version() -> str:
    """The NVIDIA driver version (e.g. "580.159.04"), or the CUDA driver API version when that is all we can read."""
    try:
        import pynvml

        pynvml.nvmlInit()
        v = pynvml.nvmlSystemGetDriverVersion()
        return v.decode() if isinstance(v, bytes) else str(v)
    except Exception:  # noqa: BLE001 - pynvml missing or broken (ImportError, NVMLError ...): try the next source
        pass
    try:
        with open("/proc/driver/nvidia/version") as f:
            for word in f.readline().split():
                if word[:1].isdigit() and "." in word:
                    return word
    except OSError:
        pass
    try:
        from numba.cuda.cudadrv.driver import driver

        major, minor = driver.get_version()
        return f"CUDA driver API {major}.{minor}"
    except Exception:  # noqa: BLE001 - no driver, or one that fails: the version is only reported
        return "unknown"


def device_info(cuda=None) -> dict:
    """Name, compute capability, SM count and versions of the current GPU."""
    cuda = cuda or gpu_cuda()
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    info = {
        "name": name,
        "compute_capability": list(dev.compute_capability),
        "sm_count": int(dev.MULTIPROCESSOR_COUNT),
        "driver": driver_version(),
    }
    for key, attr in (("max_threads_per_sm", "MAX_THREADS_PER_MULTIPROCESSOR"),
                      ("max_shared_per_sm", "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"),
                      ("max_registers_per_sm", "MAX_REGISTERS_PER_MULTIPROCESSOR")):
        try:
            info[key] = int(getattr(dev, attr))
        except Exception:  # noqa: BLE001 - an attribute this binding does not name, or this driver lacks: leave it out
            pass
    try:
        from numba.cuda.cudadrv.driver import driver

        info["cuda_driver_api"] = ".".join(str(x) for x in driver.get_version())
    except Exception:  # noqa: BLE001 - the driver API version is only reported
        pass
    return info


def gpu_versions() -> dict[str, str]:
    out = versions()
    for mod in ("numba", "numba_cuda", "llvmlite"):
        try:
            m = __import__(mod)
            out[mod] = str(getattr(m, "__version__", "?"))
        except Exception:  # noqa: BLE001 - a version is only reported: a package that fails to import has none
            pass
    return out


# ---- CUDA events ------------------------------------------------------------------------------------------
class EventTimer:
    """Times device work between two CUDA events (seconds)."""

    def __init__(self, cuda):
        self.cuda = cuda
        self.start = cuda.event(timing=True)
        self.end = cuda.event(timing=True)

    def __enter__(self):
        self.start.record()
        return self

    def __exit__(self, *exc):
        self.end.record()
        if exc[0] is None:
            with device_wait.waiting("the kernel"):
                self.end.synchronize()
        return False

    @property
    def seconds(self) -> float:
        return self.cuda.event_elapsed_time(self.start, self.end) / 1e3


_hold_kernel = None  # the one-thread hold kernel, loaded or compiled once per process


def _hold(cuda):
    """A one-thread kernel that keeps the GPU busy for ``ns`` (a uint64) nanoseconds of ``%globaltimer``.

    Its compiled code is kept in the variants' disk cache: compiling it was ~0.9 s of every process's first capture
    on an H200 (a warm capture of a kernel is ~0.06 s)."""
    global _hold_kernel
    if _hold_kernel is None:
        from numba import types

        from . import disk_cache
        from .intrinsics import globaltimer

        def gpuviz_hold(ns):
            start = globaltimer()
            while globaltimer() - start < ns:
                pass

        kernel = cuda.jit(gpuviz_hold)
        cache = disk_cache.own_kernel_cache("hold kernel")
        if cache is not None:
            kernel._cache = cache
        kernel.compile((types.uint64,))
        _hold_kernel = kernel
    return _hold_kernel


class DeviceTimer:
    """Device seconds of work that the host enqueues, without the host's enqueue time in them.

    CUDA events time the GPU's timeline. Recorded on an idle GPU, the start event completes at once and
    the timed kernel starts only once the host has finished enqueuing it, so the host's dispatch (numba
    checks and packs every argument: tens of microseconds for a few arrays, more than a hundred for a
    recording kernel's dozen extra buffers) is counted as kernel time. That made short kernels, and
    kernels with many parameters, look slower than they run. So a one-thread kernel holds the GPU for
    longer than the host needs to enqueue the start event, the work and the end event (the "blocking
    kernel" of NVIDIA's nvbench): the work then starts right after the start event, back to back.

    ``seconds`` is the device time of the last :meth:`time` call, ``host_seconds`` the host's enqueue time
    of the work alone. When the host took longer than the hold (a first launch that loads its module, a
    busy host), ``hidden`` is False: with ``retry`` the hold grows and the work runs again (only for work
    that may run twice); without, the time is kept and flagged.
    """

    def __init__(self, cuda, hold_s: float = 5e-4):
        self.cuda = cuda
        self.hold_s = hold_s
        self.seconds = 0.0
        self.host_seconds = 0.0
        self.hidden = True
        self._kernel = _hold(cuda)
        self._kernel[1, 1](np.uint64(0))  # compile and load now, not inside a timed region
        cuda.synchronize()

    def time(self, enqueue, *, retry: bool = True, attempts: int = 6) -> float:
        cuda = self.cuda
        for _ in range(attempts):
            start, end = cuda.event(timing=True), cuda.event(timing=True)
            t0 = time.perf_counter()
            self._kernel[1, 1](np.uint64(self.hold_s * 1e9))
            start.record()
            t1 = time.perf_counter()
            enqueue()
            t2 = time.perf_counter()
            end.record()
            t3 = time.perf_counter()
            with device_wait.waiting("the kernel"):
                end.synchronize()
            self.seconds = cuda.event_elapsed_time(start, end) / 1e3
            self.host_seconds = t2 - t1
            # the hold began no earlier than t0 and the work's last enqueue ended by t3: hidden if t3 - t0 < hold
            self.hidden = (t3 - t0) < 0.9 * self.hold_s
            if self.hidden or not retry:
                break
            self.hold_s = max(2 * self.hold_s, 2 * (t3 - t0))
        return self.seconds


def kernel_resources(cuda, dispatcher, launch_args, block) -> dict:
    """Registers per thread, shared/local memory and resident blocks per SM of a compiled kernel."""
    argtypes = tuple(dispatcher.typeof_pyval(a) for a in launch_args)
    kern = dispatcher.overloads.get(argtypes)
    if kern is None:
        kern = dispatcher.compile(argtypes)
    tpb = int(np.prod(block))
    out = {
        "registers_per_thread": int(kern.regs_per_thread),
        "shared_bytes_per_block": int(kern.shared_mem_per_block),
        "local_bytes_per_thread": int(kern.local_mem_per_thread),
        "max_threads_per_block": int(kern.max_threads_per_block),
    }
    try:
        ctx = cuda.current_context()
        out["resident_blocks_per_sm"] = int(ctx.get_active_blocks_per_multiprocessor(kern._codelibrary.get_cufunc(), tpb, 0))
    except Exception as exc:  # noqa: BLE001 - older numba-cuda: say so rather than guess
        out["resident_blocks_per_sm"] = -1
        out["resident_blocks_error"] = f"{type(exc).__name__}: {exc}"
    return out


def occupancy_register_cap(cuda, plain, args, block) -> int:
    """The most registers per thread that keep the plain kernel's resident blocks per SM (a multiple of 8,
    the allocation step), for ``max_registers="occupancy"``: recording then costs no occupancy."""
    res = kernel_resources(cuda, plain, args, block)
    blocks = res["resident_blocks_per_sm"]
    if blocks <= 0:
        raise CaptureError(f"max_registers='occupancy' needs the plain kernel's resident blocks per SM: "
                           f"{res.get('resident_blocks_error', 'the driver did not say')}")
    regs_per_sm = int(cuda.get_current_device().MAX_REGISTERS_PER_MULTIPROCESSOR)
    warps = -(-int(np.prod(block)) // 32)
    per_thread = regs_per_sm // (blocks * warps * 32) // 8 * 8
    return int(max(res["registers_per_thread"], min(255, per_thread)))


def _load_module(dispatcher, launch_args) -> None:
    """Load the compiled kernel's module now, so that a timed first launch does not include it."""
    argtypes = tuple(dispatcher.typeof_pyval(a) for a in launch_args)
    kern = dispatcher.overloads.get(argtypes)
    if kern is not None:
        kern._codelibrary.get_cufunc()


def kernel_ptx(dispatcher, launch_args) -> str:
    argtypes = tuple(dispatcher.typeof_pyval(a) for a in launch_args)
    if argtypes not in dispatcher.overloads:
        dispatcher.compile(argtypes)
    return dispatcher.inspect_asm(argtypes)


def host_platform() -> str:
    return f"{platform.system()} {platform.machine()}"
