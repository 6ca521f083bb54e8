"""``backend="gpu"``: run the kernel instrumented on a real NVIDIA GPU through numba-cuda.

How one capture runs (see gpu_rewrite.py for the rewrite itself):

1. the **plain** variant, the user's own ``@cuda.jit`` kernel untouched, runs on fresh copies of the
   inputs: its registers, shared memory and resident blocks per SM, and its kernel time (CUDA events,
   warm-up excluded, median of repeats) are the ones shown as "real";
2. the **count** variant runs on other fresh copies and writes how many events (and timed events) each
   recorded thread produces; an exclusive prefix sum of those counts gives each thread its offset, so
   the buffers are sized exactly and each thread's events land contiguously;
3. the **record** variant runs on the inputs themselves (so the arrays the caller passed end up as
   after a normal launch) and writes the events, field-major, at those offsets. A thread that produces
   more events than counted (only possible when the kernel's control flow depends on a data race)
   drops the excess and counts it: ``launch.dropped``, and a warning, never a silent truncation;
4. the buffers come back through pinned host memory and are decoded into a :class:`Trace`.

Recording modes (``mode=``):

* ``"thread"`` (default): every event of every thread of the recorded blocks.
* ``"warp"``: lane 0 of each warp records its own events (memory indices included) and, with each event,
  the 32-bit mask of lanes converged with it at that instruction (``cuda.activemask()``), stored in the
  trace's ``value`` field (``launch.meta["value_field"] == "active_mask"``). Other lanes record nothing:
  their indices are not in the trace. About 1/32 of the data of ``"thread"``.

Timestamps (``timestamps=``): ``"sync"`` (default) stamps START, BARRIER, WARP_OP and END events with
``%globaltimer`` (ns, comparable across SMs) and ``%smid``; memory events carry time -1. ``"all"``
stamps every event. Every event carries the SM of its block (a block never moves between SMs).

``record_blocks`` records only the listed blocks (linear ids); the others run the same instrumented
code with recording off, so the schedule is that of the instrumented kernel either way.

The schedule a GPU trace shows is the *instrumented* run's: recording costs registers, which can lower
the blocks resident per SM. ``launch.meta`` reports both variants (``"plain"`` and ``"instrumented"``:
registers per thread, shared and local memory, resident blocks per SM) and ``"schedule"`` says which one
the animation shows.
"""

from __future__ import annotations

import datetime as _dt
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

from ..model.trace import EVENT_FIELDS, ArrayInfo, EventKind, Launch, Trace  # noqa: E402
from .errors import BackendUnavailable, CaptureError, KernelFault, LaunchConfigError, TraceTooLarge  # noqa: E402
from .limits import check_launch, normalize_dims  # noqa: E402
from .source import collect_device_functions, parse_function, python_function, source_span  # noqa: E402

MODES = ("thread", "warp")
TIMESTAMPS = ("sync", "all")
_TIMED_KINDS = np.array([EventKind.START, EventKind.END, EventKind.BARRIER, EventKind.WARP_OP], dtype=np.uint8)


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
        except Exception as exc:
            reason = f" ({type(exc).__name__}: {exc})"
        try:
            from numba.cuda.cudadrv.driver import driver

            driver.cuInit  # noqa: B018 - touching the driver raises the real reason when it is broken
        except Exception as exc:
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
    except Exception:
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
    except Exception:
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
        except Exception:  # an attribute this driver binding does not name: leave it out
            pass
    try:
        from numba.cuda.cudadrv.driver import driver

        info["cuda_driver_api"] = ".".join(str(x) for x in driver.get_version())
    except Exception:
        pass
    return info


def gpu_versions() -> dict[str, str]:
    from . import versions

    out = versions()
    for mod in ("numba", "numba_cuda", "llvmlite"):
        try:
            m = __import__(mod)
            out[mod] = str(getattr(m, "__version__", "?"))
        except Exception:
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
            self.end.synchronize()
        return False

    @property
    def seconds(self) -> float:
        return self.cuda.event_elapsed_time(self.start, self.end) / 1e3


def _fault(exc, root, grid, block, what) -> KernelFault:
    text = str(exc)
    hint = ""
    if "ILLEGAL_ADDRESS" in text or "700" in text or "LAUNCH_FAILED" in text or "719" in text:
        hint = (" (an out-of-range index or a bad pointer). The CUDA context of this process is now unusable: "
                "the capture worker must be restarted before the next GPU launch")
    return KernelFault(
        f"{root.file}:{root.first_line}: {root.name}[{grid}, {block}] faulted on the GPU during the {what} launch: "
        f"{type(exc).__name__}: {text.strip()}{hint}",
        file=root.file, line=root.first_line,
    )


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
    except Exception as exc:  # older numba-cuda: say so rather than guess
        out["resident_blocks_per_sm"] = -1
        out["resident_blocks_error"] = f"{type(exc).__name__}: {exc}"
    return out


def kernel_ptx(dispatcher, launch_args) -> str:
    argtypes = tuple(dispatcher.typeof_pyval(a) for a in launch_args)
    if argtypes not in dispatcher.overloads:
        dispatcher.compile(argtypes)
    return dispatcher.inspect_asm(argtypes)


# ---- one instrumented launch, stage by stage --------------------------------------------------------------
_variant_cache: dict = {}


class GpuRecording:
    """The stages of one GPU capture, separately callable so that benchmarks can time each.

    ``capture_gpu`` is the usual entry; bench/gpu_overhead.py drives the stages itself.
    """

    def __init__(self, kernel, grid, block, args, *, mode: str = "thread", timestamps: str = "sync",
                 record_blocks=None):
        from .gpu_rewrite import build_variant

        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        if timestamps not in TIMESTAMPS:
            raise ValueError(f"timestamps must be one of {', '.join(TIMESTAMPS)}, not {timestamps!r}")
        self.cuda = cuda = gpu_cuda()
        self.kernel = kernel
        self.grid, self.block = normalize_dims(grid, "grid"), normalize_dims(block, "block")
        self.mode, self.timestamps = mode, timestamps
        fn = python_function(kernel)
        self.root = root = parse_function(fn)
        collect_device_functions(root)
        if len(args) != len(root.params):
            raise CaptureError(f"{root.file}:{root.first_line}: {root.name} takes {len(root.params)} argument(s) "
                               f"({', '.join(root.params)}) but the launch passes {len(args)}", file=root.file, line=root.first_line)
        check_launch(self.grid, self.block, where=f"{root.file}:{root.first_line}", kernel=root.name)
        self.args = list(args)
        self.array_args: dict[str, ArrayInfo] = {}
        for p, a in zip(root.params, args):
            if hasattr(a, "shape") and hasattr(a, "dtype"):
                self.array_args[p] = ArrayInfo(p, tuple(int(s) for s in a.shape), str(np.dtype(a.dtype)), "global")
            elif not isinstance(a, (bool, int, float, complex, np.generic)):
                raise CaptureError(f"{root.file}:{root.first_line}: argument {p!r} of {root.name} is a {type(a).__name__}; "
                                   "gpuviz records kernels whose arguments are arrays and numbers", file=root.file, line=root.first_line)
        # the plain kernel: the user's dispatcher as it is (numba's), or the function jitted as written
        self.plain = kernel if hasattr(kernel, "overloads") and hasattr(kernel, "py_func") else cuda.jit(fn)
        key = (fn.__code__, tuple((p, a.shape, a.dtype) for p, a in self.array_args.items()), mode, timestamps == "all")
        variants = _variant_cache.get(key)
        if variants is None:
            t0 = time.perf_counter()
            variants = tuple(build_variant(cuda, root, self.array_args, count=c, mode=mode, time_all=timestamps == "all")
                             for c in (True, False))
            _variant_cache[key] = variants
            self.rewrite_s = time.perf_counter() - t0
        else:
            self.rewrite_s = 0.0
        self.count_variant, self.record_variant = variants
        self.info = self.record_variant.info
        # recorded blocks and their slots (one per thread, or one per warp in warp mode)
        n_blocks = self.grid[0] * self.grid[1] * self.grid[2]
        tpb = self.block[0] * self.block[1] * self.block[2]
        if record_blocks is None:
            blocks = np.arange(n_blocks, dtype=np.int64)
        else:
            blocks = np.unique(np.asarray(list(record_blocks), dtype=np.int64))
            bad = blocks[(blocks < 0) | (blocks >= n_blocks)]
            if len(bad):
                raise LaunchConfigError(f"record_blocks holds block {int(bad[0])}, but the launch has blocks 0..{n_blocks - 1}")
        self.blocks = blocks
        per_block = -(-tpb // 32) if mode == "warp" else tpb
        self.slot_of_block = np.full(n_blocks, -1, dtype=np.int64)
        self.slot_of_block[blocks] = np.arange(len(blocks), dtype=np.int64) * per_block
        self.per_block = per_block
        self.slot_block = np.repeat(blocks, per_block).astype(np.int32)
        step = 32 if mode == "warp" else 1
        self.slot_thread = np.tile(np.arange(per_block, dtype=np.int32) * step, len(blocks))
        self.n_slots = len(blocks) * per_block
        self.timings: dict[str, float] = {}

    # -- inputs ----------------------------------------------------------------------------------------------
    def device_args(self, fresh: bool):
        """Kernel arguments on the device: fresh copies (``fresh``), or the caller's arrays uploaded in place."""
        cuda = self.cuda
        out = []
        for a in self.args:
            if isinstance(a, np.ndarray):
                out.append(cuda.to_device(a))
            elif hasattr(a, "copy_to_host") and hasattr(a, "shape"):
                if fresh:
                    d = cuda.device_array(a.shape, dtype=a.dtype)
                    d.copy_to_device(a)
                    out.append(d)
                else:
                    out.append(a)
            elif hasattr(a, "__cuda_array_interface__"):
                d = cuda.as_cuda_array(a)
                if fresh:
                    c = cuda.device_array(d.shape, dtype=d.dtype)
                    c.copy_to_device(d)
                    d = c
                out.append(d)
            else:
                out.append(a)
        return out

    def _launch(self, dispatcher, launch_args, what):
        try:
            dispatcher[self.grid, self.block](*launch_args)
        except CaptureError:
            raise
        except Exception as exc:
            if _is_typing_error(exc):
                raise CaptureError(f"{self.root.file}:{self.root.first_line}: numba could not compile the {what} variant of "
                                   f"{self.root.name}: {exc}", file=self.root.file, line=self.root.first_line) from exc
            raise _fault(exc, self.root, self.grid, self.block, what) from exc

    def _sync(self, what):
        try:
            self.cuda.synchronize()
        except Exception as exc:
            raise _fault(exc, self.root, self.grid, self.block, what) from exc

    def _compile(self, dispatcher, launch_args, what) -> float | None:
        """Compile ahead of the timed launch; seconds, or None when it was compiled already."""
        try:
            argtypes = tuple(dispatcher.typeof_pyval(a) for a in launch_args)
            if argtypes in dispatcher.overloads:
                return None
            t0 = time.perf_counter()
            dispatcher.compile(argtypes)
            return time.perf_counter() - t0
        except Exception as exc:
            raise CaptureError(f"{self.root.file}:{self.root.first_line}: numba could not compile the {what} variant of "
                               f"{self.root.name}: {type(exc).__name__}: {exc}", file=self.root.file, line=self.root.first_line) from exc

    def time_launch(self, dispatcher, launch_args, what, repeats: int = 1) -> float:
        """Median seconds of ``repeats`` launches (CUDA events), after compiling and one warm-up launch."""
        self._launch(dispatcher, launch_args, what)  # warm-up: module load, first-touch
        self._sync(what)
        times = []
        for _ in range(max(1, repeats)):
            t = EventTimer(self.cuda)
            try:
                with t:
                    self._launch(dispatcher, launch_args, what)
            except CaptureError:
                raise
            except Exception as exc:
                raise _fault(exc, self.root, self.grid, self.block, what) from exc
            times.append(t.seconds)
        return float(np.median(times))

    # -- buffers -----------------------------------------------------------------------------------------------
    def index_dtype(self):
        biggest = max([a.size for a in self.info.arrays] or [0])
        return np.int32 if biggest < 2**31 else np.int64

    def dummy_buffers(self, cnt):
        cuda = self.cuda
        return [
            cuda.device_array(1, np.int32), cuda.device_array(1, self.index_dtype()), cuda.device_array(1, np.uint32),
            cuda.device_array(1, np.int64), cuda.device_array(1, np.int16), cuda.to_device(self.slot_of_block),
            cuda.device_array((1, 2), np.int64), cuda.device_array((1, 2), np.int32), cnt, cuda.to_device(np.zeros(2, np.int64)),
        ]

    def count(self, dargs, repeats: int = 0) -> np.ndarray:
        """Run the counting variant; (n_slots, 2) int64 counts of events and timed events per slot."""
        cuda = self.cuda
        cnt = cuda.to_device(np.zeros((max(self.n_slots, 1), 2), np.int32))
        bufs = self.dummy_buffers(cnt)
        launch_args = list(dargs) + bufs
        compiled = self._compile(self.count_variant.dispatcher, launch_args, "counting")
        if compiled is not None:
            self.timings["count_compile_s"] = compiled
        t = EventTimer(cuda)
        with t:
            self._launch(self.count_variant.dispatcher, launch_args, "counting")
        self._sync("counting")
        self.timings["count_kernel_s"] = t.seconds
        self.count_args = launch_args
        return cnt.copy_to_host()[: self.n_slots].astype(np.int64)

    def allocate(self, counts: np.ndarray, max_events: int | None = None):
        """Device buffers sized from the counts, with each slot's offsets (exclusive prefix sums)."""
        cuda = self.cuda
        total, total_timed = int(counts[:, 0].sum()), int(counts[:, 1].sum())
        if max_events is not None and total > max_events:
            raise TraceTooLarge(
                f"{self.root.name}[{self.grid}, {self.block}] would record {total:,} events, over max_events={max_events:,}. "
                f"Record fewer blocks (record_blocks=[...]), a smaller problem, or mode='warp' (lane 0 of each warp only)"
            )
        # thread mode: a warp's lanes interleave (stride 32), each lane given the warp's largest count;
        # warp mode: one slot per warp, contiguous (stride 1). See make_recorders.
        n = self.n_slots
        if self.mode == "warp":
            group, lane, stride = np.arange(n, dtype=np.int64), np.zeros(n, np.int64), 1
        else:
            wpb = -(-(self.block[0] * self.block[1] * self.block[2]) // 32)
            k = np.arange(n, dtype=np.int64) // max(self.per_block, 1)
            group = k * wpb + self.slot_thread.astype(np.int64) // 32
            lane, stride = self.slot_thread.astype(np.int64) % 32, 32
        n_groups = int(group.max()) + 1 if n else 0
        off = np.zeros((max(n, 1), 2), np.int64)
        cap = np.zeros((max(n, 1), 2), np.int32)
        sizes = []
        for col in (0, 1):
            gmax = np.zeros(n_groups, np.int64)
            np.maximum.at(gmax, group, counts[:, col])
            gsize = gmax * stride
            goff = np.cumsum(gsize) - gsize
            off[:n, col] = goff[group] + lane
            cap[:n, col] = gmax[group]
            sizes.append(int(gsize.sum()))
        self.offsets, self.capacity, self.stride = off[:n], counts, stride
        total, total_timed = sizes
        bufs = [
            cuda.device_array(max(total, 1), np.int32),
            cuda.device_array(max(total, 1), self.index_dtype()),
            cuda.device_array(max(total, 1) if self.mode == "warp" else 1, np.uint32),
            cuda.device_array(max(total_timed, 1), np.int64),
            cuda.device_array(max(total_timed, 1), np.int16),
            cuda.to_device(self.slot_of_block),
            cuda.to_device(off),
            cuda.to_device(cap),
            cuda.to_device(np.zeros((max(self.n_slots, 1), 2), np.int32)),
            cuda.to_device(np.zeros(2, np.int64)),
        ]
        self.totals = (int(counts[:, 0].sum()), int(counts[:, 1].sum()))
        self.buffer_lengths = (total, total_timed)
        return bufs

    def trace_bytes(self) -> int:
        total, total_timed = self.buffer_lengths  # with the padding of lanes that had fewer events than their warp
        per_event = 4 + np.dtype(self.index_dtype()).itemsize + (4 if self.mode == "warp" else 0)
        return int(total * per_event + total_timed * (8 + 2) + self.n_slots * 2 * 4)

    def record(self, dargs, bufs, repeats: int = 1) -> float:
        """Run the recording variant once (timed with CUDA events); the events land in ``bufs``."""
        launch_args = list(dargs) + list(bufs)
        compiled = self._compile(self.record_variant.dispatcher, launch_args, "instrumented")
        if compiled is not None:
            self.timings["instrumented_compile_s"] = compiled
        t = EventTimer(self.cuda)
        with t:
            self._launch(self.record_variant.dispatcher, launch_args, "instrumented")
        self._sync("instrumented")
        self.timings["instrumented_kernel_s"] = t.seconds
        self.record_args = launch_args
        return t.seconds

    def fetch(self, bufs) -> dict[str, np.ndarray]:
        """Copy the buffers back through pinned host memory (timed); host arrays by buffer name."""
        cuda = self.cuda
        names = ("code", "idx", "mask", "time", "sm", "cnt", "drop")
        picks = (bufs[0], bufs[1], bufs[2], bufs[3], bufs[4], bufs[8], bufs[9])
        pinned = {n: cuda.pinned_array(d.shape, dtype=d.dtype) for n, d in zip(names, picks)}
        t = EventTimer(cuda)
        with t:
            for n, d in zip(names, picks):
                d.copy_to_host(pinned[n])
        self.timings["copy_back_s"] = t.seconds
        # own the data in pageable memory: pinned memory is scarce and the trace outlives the capture
        return {n: np.array(pinned[n]) for n in names}

    # -- decoding ------------------------------------------------------------------------------------------------
    def decode(self, host: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], int, int]:
        """(event fields, events dropped, timed events dropped) from the fetched buffers."""
        from .gpu_rewrite import decode_kinds

        n = self.n_slots
        wrote = host["cnt"][:n].astype(np.int64)
        counts, counts_t = wrote[:, 0], wrote[:, 1]
        starts = np.cumsum(counts) - counts
        seq = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(starts, counts)
        take = np.repeat(self.offsets[:, 0], counts) + self.stride * seq
        starts_t = np.cumsum(counts_t) - counts_t
        seq_t = np.arange(int(counts_t.sum()), dtype=np.int64) - np.repeat(starts_t, counts_t)
        take_t = np.repeat(self.offsets[:, 1], counts_t) + self.stride * seq_t
        code = host["code"][take]
        slot = np.repeat(np.arange(n, dtype=np.int64), counts)
        kind, aid, line = decode_kinds(self.info, code)
        mem = aid >= 0
        index = np.full(len(code), -1, np.int64)
        index[mem] = host["idx"][take][mem]
        ev = {
            "block": self.slot_block[slot], "thread": self.slot_thread[slot], "seq": seq.astype(np.int32),
            "kind": kind, "array": aid, "index": index, "line": line,
        }
        # the timed stream: each slot's timed events, in order, are its events of the timed kinds
        timed = np.ones(len(code), bool) if self.timestamps == "all" else np.isin(kind, _TIMED_KINDS)
        times = host["time"][take_t].astype(np.int64)
        sms = host["sm"][take_t].astype(np.int16)
        time_col = np.full(len(code), -1, np.int64)
        sm_col = np.full(len(code), -1, np.int16)
        if int(timed.sum()) == len(times):
            time_col[timed] = times
            # every event carries its block's SM: the SM of the slot's first timed event (its START)
            first_t = np.cumsum(counts_t) - counts_t
            has = counts_t > 0
            slot_sm = np.full(n, -1, np.int16)
            slot_sm[has] = sms[first_t[has]]
            sm_col = slot_sm[slot]
        ev["time"], ev["sm"] = time_col, sm_col
        if self.mode == "warp":
            ev["value"] = host["mask"][take].astype(np.float64)
        return ev, int(host["drop"][0]), int(host["drop"][1])


def _is_typing_error(exc) -> bool:
    return type(exc).__name__ in ("TypingError", "UnsupportedError", "NumbaError", "LoweringError", "NumbaNotImplementedError")


def _write_back(args, dargs):
    for a, d in zip(args, dargs):
        if isinstance(a, np.ndarray) and hasattr(d, "copy_to_host"):
            host = d.copy_to_host()
            a[...] = host


def capture_gpu(kernel, grid, block, args, *, record_blocks=None, max_events: int = 50_000_000, mode: str = "thread",
                timestamps: str = "sync", time_plain: bool = True, repeats: int = 5, **_ignored) -> Trace:
    """Capture ``kernel[grid, block](*args)`` on the GPU (see the module docstring). The arguments end up as
    after a normal launch (the instrumented run's results)."""
    import warnings as _warnings

    with _warnings.catch_warnings():
        # numba warns about small grids ("under-utilization"): teaching launches are small on purpose
        _warnings.filterwarnings("ignore", message=".*under-utilization.*")
        return _capture_gpu(kernel, grid, block, args, record_blocks=record_blocks, max_events=max_events, mode=mode,
                            timestamps=timestamps, time_plain=time_plain, repeats=repeats)


def _capture_gpu(kernel, grid, block, args, *, record_blocks, max_events, mode, timestamps, time_plain, repeats) -> Trace:
    rec = GpuRecording(kernel, grid, block, args, mode=mode, timestamps=timestamps, record_blocks=record_blocks)
    cuda, root = rec.cuda, rec.root
    timings: dict[str, float] = {}
    if rec.rewrite_s:
        timings["rewrite_s"] = rec.rewrite_s
    warnings: list[str] = []
    meta: dict = {"kernel_lines": [root.first_line, root.last_line]}

    # 1. plain: the user's kernel untouched, on fresh copies (it may write into its inputs)
    plain_args = rec.device_args(fresh=True)
    compiled = rec._compile(rec.plain, plain_args, "plain")
    if compiled is not None:
        timings["plain_compile_s"] = compiled
    meta["plain"] = kernel_resources(cuda, rec.plain, plain_args, rec.block)
    if time_plain:
        timings["plain_kernel_s"] = rec.time_launch(rec.plain, plain_args, "plain", repeats=repeats)
    else:
        rec._launch(rec.plain, plain_args, "plain")
        rec._sync("plain")
    # 2. count, on fresh copies; 3. record, on the caller's data
    count_args = rec.device_args(fresh=True)
    counts = rec.count(count_args)
    bufs = rec.allocate(counts, max_events=max_events)
    dargs = rec.device_args(fresh=False)
    rec.record(dargs, bufs)
    meta["instrumented"] = kernel_resources(cuda, rec.record_variant.dispatcher, rec.record_args, rec.block)
    # does the instrumented run compute what one plain run does? (the timed plain copies ran several times;
    # this one starts from the inputs as they were, before the write-back below)
    check_args = rec.device_args(fresh=True)
    rec._launch(rec.plain, check_args, "plain")
    rec._sync("plain")
    # 4. back to the host
    host = rec.fetch(bufs)
    _write_back(rec.args, dargs)
    timings.update(rec.timings)
    events, dropped, dropped_timed = rec.decode(host)
    if dropped:
        warnings.append(f"{dropped:,} events did not fit the sizes the counting pass measured and were dropped: the kernel's "
                        "control flow differs between runs (a data race?)")
    if dropped_timed:
        warnings.append(f"{dropped_timed:,} timestamps did not fit and were dropped")
    same = _compare_outputs(rec, check_args, dargs)
    meta["outputs_match_plain"] = same
    if same is False:
        warnings.append("the instrumented run's outputs differ from the plain run's (expected only for kernels with a data race)")

    dev = device_info(cuda)
    p, i = meta["plain"], meta["instrumented"]
    meta.update({
        "registers_per_thread": i["registers_per_thread"],
        "shared_bytes_per_block": i["shared_bytes_per_block"],
        "device": dev,
        "mode": mode,
        "timestamps": timestamps,
        "threads_recorded": "all" if record_blocks is None else "chosen blocks",
        "recorded_blocks": len(rec.blocks),
        "trace_bytes": rec.trace_bytes(),
        "events_counted": rec.totals[0],
        "time_unit": "ns (%globaltimer)",
        "schedule": (
            "SM ids and times are those of the instrumented run: "
            f"{i['registers_per_thread']} registers/thread and {i['resident_blocks_per_sm']} resident blocks/SM, "
            f"against {p['registers_per_thread']} registers/thread and {p['resident_blocks_per_sm']} blocks/SM for the plain kernel"
        ),
    })
    if mode == "warp":
        meta["value_field"] = "active_mask"
        warnings.append("per-warp recording: only lane 0 of each warp recorded its events; 'value' holds the mask of lanes "
                        "converged with lane 0 at each event")
    if p["resident_blocks_per_sm"] != i["resident_blocks_per_sm"] and min(p["resident_blocks_per_sm"], i["resident_blocks_per_sm"]) > 0:
        warnings.append(f"recording changes occupancy: {i['resident_blocks_per_sm']} resident blocks/SM instrumented vs "
                        f"{p['resident_blocks_per_sm']} plain, so the recorded schedule (waves, SMs) is not the plain kernel's")
    text, first, _last = source_span(root)
    launch = Launch(
        kernel_name=root.name, grid=rec.grid, block=rec.block, arrays=list(rec.info.arrays), source=text,
        source_file=root.file, first_line=first, backend="gpu", device=dev["name"], versions=gpu_versions() | {"driver": dev["driver"]},
        timings=timings, dropped=dropped, warnings=warnings, meta=meta,
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    )
    fields = {k: v for k, v in events.items() if k in EVENT_FIELDS}
    return Trace(launch, fields)


def _compare_outputs(rec: GpuRecording, plain_args, dargs) -> bool | None:
    """True if every array argument ends equal after the plain and the instrumented runs (None: too large to check)."""
    same = True
    for a, p, d in zip(rec.args, plain_args, dargs):
        if not hasattr(p, "copy_to_host") or p is d:
            continue
        if p.size * p.dtype.itemsize > (256 << 20):
            return None
        x, y = p.copy_to_host(), d.copy_to_host()
        if not np.array_equal(x, y, equal_nan=np.issubdtype(x.dtype, np.inexact)):
            same = False
    return same


def host_platform() -> str:
    return f"{platform.system()} {platform.machine()}"
