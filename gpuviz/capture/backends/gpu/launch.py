"""``backend="gpu"``: run the kernel instrumented on a real NVIDIA GPU through numba-cuda.

How one capture runs (see gpu_rewrite.py for the rewrite itself):

1. the **plain** variant, the user's own ``@cuda.jit`` kernel untouched, runs on fresh copies of the
   inputs: its registers, shared memory and resident blocks per SM, and its kernel time (CUDA events,
   warm-up excluded, median of repeats, the GPU held while the host enqueues so that numba's dispatch is
   not counted: :class:`DeviceTimer`) are the ones shown as "real";
2. the buffers are sized. Per-thread recording of at most ``SPECULATE_EVENTS // SPECULATE_MIN_PER_THREAD`` threads
   first **records at once** into buffers with room for a guessed number of events per thread (up to
   ``SPECULATE_PER_THREAD``): every thread writes at END how many events it produced, whether they fit or not, so
   when one did not fit the inputs are put back as they were and the recording runs again, sized by those counts.
   Otherwise (per-warp mode, or many threads) the **count** variant runs first, on other fresh copies, and writes
   how many events (and timed events) each recorded thread (or warp) produces. Either way, the sizes come from
   counts of a real run: each warp gets its largest lane's count. When every warp needs about as many as the
   largest (within ``UNIFORM_SLACK``), the device computes each position from the warp number (nothing to load
   at entry); otherwise an exclusive prefix sum gives each slot its offset in a table. A first capture compiles
   the kernel twice when it records at once (plain and recording variants), three times when it counts first:
   compiling is most of a capture that was never made before (bench/gpu_capture_profile.py);
3. the **record** variant runs on the inputs themselves (so the arrays the caller passed end up as
   after a normal launch) and writes the events, field-major, at those offsets. A thread that produces
   more events than counted (only possible when the kernel's control flow depends on a data race)
   drops the excess and counts it: ``launch.dropped``, and a warning, never a silent truncation;
4. the buffers come back through pinned host memory and are decoded into a :class:`Trace`.

Recording modes (``mode=``):

* ``"thread"`` (default): every event of every thread of the recorded blocks.
* ``"warp"``: one record per instruction that lane 0 of each warp executes (lane 0's program order): the
  event's kind, line and array, the 32-bit mask of lanes converged with lane 0 there (``cuda.activemask()``,
  in the trace's ``value`` field: ``launch.meta["value_field"] == "active_mask"``) and the exact index of
  *every* lane in that mask. Indices that are ``base + lane * stride`` (checked by a warp vote) are stored
  as (base, stride); others as a 32-wide row the lanes write together (one coalesced 128-byte store).
  The trace shows each record as one event per lane in its mask, so for a kernel whose lanes never run
  ahead of or behind lane 0 it equals the ``"thread"`` trace. Instructions that lanes run while diverged
  from lane 0 are not recorded; how many is counted and reported
  (``launch.meta["warp_lane_events_not_recorded"]`` and a warning), never silently lost.

What is recorded (``record=``): ``"all"`` (default) every global and shared access; ``"global"`` leaves
shared-memory loads, stores and atomics out (barriers, warp operations and every global access stay).
Big tiled kernels make most of their events in shared memory (tiled matmul: 32 shared loads per 2 global
loads per tile step), so this is the explicit choice for large launches; a trace says which it is in
``launch.meta["record"]`` and ``["records"]`` and a warning, never silently.

Timestamps (``timestamps=``): ``"sync"`` (default) stamps START, BARRIER, WARP_OP and END events with
``%globaltimer`` (ns, comparable across SMs) and ``%smid``; memory events carry time -1. ``"all"``
stamps every event. Every event carries the SM of its block (a block never moves between SMs).

``record_blocks`` records only the listed blocks (linear ids) with one kernel that branches once per
thread at entry: ``if <this block is recorded>: <instrumented body> else: <the user's own body>``. The
other blocks run the plain code (no recording call, no per-event check), with the registers of the
combined kernel (the larger of the two bodies'), which can lower the blocks resident per SM. When the
listed blocks are ``range(first, end, step)`` (one block, the first k, every k-th) the test reads only scalar
kernel parameters, so no block waits on a memory load before its own first loads; other sets read a table.
The uniform layout's capacities are scalar parameters too: a recorded thread loads nothing to find its slot.

``max_registers`` caps the instrumented kernel's registers per thread: a number, or ``"occupancy"`` for the
most that keep the plain kernel's resident blocks per SM (see :func:`occupancy_register_cap`).

The schedule a GPU trace shows is the *instrumented* run's: recording costs registers, which can lower
the blocks resident per SM. ``launch.meta`` reports both variants (``"plain"`` and ``"instrumented"``:
registers per thread, shared and local memory, resident blocks per SM) and ``"schedule"`` says which one
the animation shows.
"""

from __future__ import annotations

import datetime as _dt
import time

import numpy as np

from ....model.trace import EVENT_FIELDS, EventKind
from ... import device_wait
from ...assemble import Recorded, uninitialised_shared_reads
from ...errors import CaptureError, KernelFault, LaunchConfigError, TraceTooLarge
from ...frontend.plan import plan_for
from ...frontend.source import python_function
from ...limits import check_launch, normalize_dims
from ..base import PlanCache
from .arguments import _copy_tuple, _put_back, _write_back, array_arguments, c_contiguous_arguments, launch_arguments
from .device import (DeviceTimer, EventTimer, _load_module, gpu_cuda, gpu_versions, kernel_resources,
                     occupancy_register_cap)
from . import cooperative, recorder_cache
from .disk_cache import VariantDiskCache, cached_plain
from .disk_cache import enabled as disk_cache_enabled
from .report import report
from .variant import build_variant, decode_kinds
from .layout import BUFFERS, CNT_COLUMNS, OFF_COLUMNS, SLAB_MARK

MODES = ("thread", "warp")
TIMESTAMPS = ("sync", "all")
RECORDS = ("all", "global")
#: buffer layouts: "auto" picks "uniform" when it wastes little (UNIFORM_SLACK), else "table"
LAYOUTS = ("auto", "uniform", "table")
#: a layout where every warp gets the largest warp's count is used when it wastes at most this fraction
UNIFORM_SLACK = 0.25
#: fields of one per-warp record, in this order, in the ``idx`` buffer: code, active mask, base index, stride
WARP_RECORD_FIELDS = 4
#: recording at once, before any count (per-thread mode): room for at most this many events in all, at most
#: SPECULATE_PER_THREAD per recorded thread, and never fewer than SPECULATE_MIN_PER_THREAD (more threads than that
#: allows are counted first). 2**19 events are about 11 MB of buffers, copied back whole
SPECULATE_EVENTS = 1 << 19
SPECULATE_PER_THREAD = 64
SPECULATE_MIN_PER_THREAD = 8
_TIMED_KINDS = np.array([EventKind.START, EventKind.END, EventKind.BARRIER, EventKind.WARP_OP], dtype=np.uint8)


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


# ---- one instrumented launch, stage by stage --------------------------------------------------------------
#: the compiled variants of one kernel, per capture plan, as long as the plan lives. The plan is read once per kernel
#: object (:func:`gpuviz.capture.frontend.plan.plan_for`), so two kernels of one factory (closures over one code
#: object: a shared-array shape, an ``op``) never share a variant, as numba never shares their compiles.
_VARIANTS = PlanCache()


class GpuRecording:
    """The stages of one GPU capture, separately callable so that benchmarks can time each.

    ``record_gpu`` (:mod:`.backend`) is the usual entry; bench/gpu_overhead.py drives the stages itself.
    """

    def __init__(self, kernel, grid, block, args, *, mode: str = "thread", timestamps: str = "sync",
                 record_blocks=None, record: str = "all", max_registers: int | str | None = None, layout: str = "auto",
                 lane_linear: bool = True, dynamic_shared_bytes: int = 0):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        if timestamps not in TIMESTAMPS:
            raise ValueError(f"timestamps must be one of {', '.join(TIMESTAMPS)}, not {timestamps!r}")
        if record not in RECORDS:
            raise ValueError(f"record must be one of {', '.join(repr(r) for r in RECORDS)}, not {record!r}")
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
        self.layout = layout
        # per-warp records of a[i] with i = cuda.grid(1) take their lanes' indices from i without a warp vote
        # (gpu_rewrite.GpuRewriter.lane_linear_names); False keeps the vote, to measure what it costs
        self.lane_linear = bool(lane_linear)
        self.cuda = cuda = gpu_cuda()
        self.kernel = kernel
        self.grid, self.block = normalize_dims(grid, "grid"), normalize_dims(block, "block")
        self.mode, self.timestamps, self.record_what = mode, timestamps, record
        self.dynamic_shared_bytes = int(dynamic_shared_bytes)  # every launch, plain and instrumented, gets as much
        self.max_registers = max_registers
        fn = python_function(kernel)
        self.fn = fn
        # the kernel's capture plan: its device functions, shared declarations, host arrays and site ids
        self.plan = plan_for(kernel)
        self.plan.raise_if_unsupported()
        self.root = root = self.plan.root
        if len(args) != len(root.params):
            raise CaptureError(f"{root.file}:{root.first_line}: {root.name} takes {len(root.params)} argument(s) "
                               f"({', '.join(root.params)}) but the launch passes {len(args)}", file=root.file, line=root.first_line)
        check_launch(self.grid, self.block, where=f"{root.file}:{root.first_line}", kernel=root.name)
        self.args, self.input_only = launch_arguments(kernel, root, args)
        self.array_args = array_arguments(root, self.args)
        self.c_contiguous = c_contiguous_arguments(root, self.args)
        # the plain kernel: the user's dispatcher as it is (numba's), or the function jitted as written
        self.plain = kernel if hasattr(kernel, "overloads") and hasattr(kernel, "py_func") else cuda.jit(fn)
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
        # every block recorded: no block table, no branch. Chosen blocks: one kernel that branches once per
        # thread between the instrumented body and the user's own (see gpu_rewrite.split_kernel)
        self.all_blocks = len(blocks) == n_blocks
        self.split = not self.all_blocks
        # chosen blocks that are range(first, end, step) (one block, the first 1%, every k-th) are tested
        # against scalar kernel parameters: no load before the branch. Any other set reads the slot table
        steps = np.diff(blocks)
        self.block_range = self.split and (len(steps) == 0 or bool(np.all(steps == steps[0])))
        first = int(blocks[0]) if len(blocks) else 0
        step = int(steps[0]) if len(steps) else 1
        self.range_params = (first, int(blocks[-1]) + 1 if len(blocks) else 0, step)
        self.wpb = -(-tpb // 32)
        per_block = self.wpb if mode == "warp" else tpb
        self.slot_of_block = np.full(n_blocks, -1, dtype=np.int64)  # the recorded block's ordinal, -1 if not recorded
        self.slot_of_block[blocks] = np.arange(len(blocks), dtype=np.int64)
        self.per_block = per_block
        self.slot_block = np.repeat(blocks, per_block).astype(np.int32)
        step = 32 if mode == "warp" else 1
        self.slot_thread = np.tile(np.arange(per_block, dtype=np.int32) * step, len(blocks))
        self.n_slots = len(blocks) * per_block
        self.timings: dict[str, float] = {}
        self.kernel_time_includes_enqueue = False
        self.rewrite_s = 0.0
        self.variant_origins: dict[str, str] = {}  # {"plain" | "counting" | "instrumented": where its code came from}
        # grid.sync(): every launch is cooperative, so every variant must fit the GPU at once as the plain kernel does:
        # unless the caller chose, its registers are capped to keep the plain kernel's resident blocks per SM
        self.cooperative = self.plan.grid_sync
        if max_registers == "occupancy" or (max_registers is None and self.cooperative):
            self.max_registers = occupancy_register_cap(cuda, self.plain, self.args, self.block)
        elif max_registers is not None:
            self.max_registers = int(max_registers)
        self.launch_caps = (0,) * CNT_COLUMNS  # the uniform layout's per-warp capacities, scalar kernel parameters
        self.positions_fit32 = False  # set by allocate(), which knows the buffer sizes
        self.count_variant = self.variant(count=True, uniform=False)
        self.record_variant = None  # chosen by allocate(), which knows the layout
        self.info = self.count_variant.info

    def variant(self, *, count: bool, uniform: bool):
        """The compiled count or record variant (cached per kernel, argument shapes and options)."""
        # the count variant is built before the arrays (shared, module-level) are known: 64-bit index arithmetic
        # there (the same regular/irregular decisions as 32-bit, which is exact for arrays under 2**31 elements)
        # the record variant also keeps buffer positions in 32 bits: allocate() checked that they fit
        index32 = not count and self.index_dtype() == np.int32 and self.positions_fit32
        key = (tuple((p, a.shape, a.dtype) for p, a in self.array_args.items()), self.mode,
               self.timestamps == "all", self.record_what, self.split, self.all_blocks, self.block_range, count, uniform,
               self.max_registers, index32, self.grid, self.block, self.lane_linear, self.dynamic_shared_bytes,
               self.c_contiguous)
        v = _VARIANTS.of(self.plan).get(key)
        if v is None:
            t0 = time.perf_counter()
            v = build_variant(self.cuda, self.root, self.array_args, plan=self.plan, count=count, mode=self.mode,
                              time_all=self.timestamps == "all", split=self.split, uniform=uniform,
                              all_blocks=self.all_blocks, record=self.record_what, max_registers=self.max_registers,
                              block_range=self.block_range, index32=index32, grid=self.grid, block=self.block,
                              lane_linear=self.lane_linear, dynamic_shared_bytes=self.dynamic_shared_bytes,
                              c_contiguous=self.c_contiguous)
            _VARIANTS.of(self.plan)[key] = v
            self.rewrite_s += time.perf_counter() - t0
        return v

    # -- inputs ----------------------------------------------------------------------------------------------
    def device_args(self, fresh: bool):
        """Kernel arguments on the device: fresh copies (``fresh``), or the caller's arrays uploaded in place.
        A tuple goes to numba as a tuple (numba passes its members on), with copies of its arrays if ``fresh``."""
        cuda = self.cuda
        out = []
        for a in self.args:
            if isinstance(a, tuple):
                # the recording's own run gets device copies of a tuple's host arrays too, written back once after
                # it (_write_back), as for an array argument
                out.append(_copy_tuple(cuda, a, fresh))
            elif isinstance(a, np.ndarray):
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
        if self.cooperative:
            cooperative.check_fits(dispatcher, launch_args, self.grid, self.block, self.dynamic_shared_bytes,
                                   f"{self.root.file}:{self.root.first_line}: {self.root.name}[{self.grid}, {self.block}]",
                                   what)
        try:
            # marked as a wait for the device: a kernel compiled with debug=True is followed, inside numba's own
            # launch, by a blocking copy of its exception flag; a kernel that never ends held the program there,
            # unseen by the watchdog, until it was killed (issue 25: 280 s)
            with device_wait.waiting(f"the {what} launch"):
                dispatcher[self.grid, self.block, 0, self.dynamic_shared_bytes](*launch_args)
        except CaptureError:
            raise
        except Exception as exc:
            if _is_typing_error(exc):
                raise CaptureError(f"{self.root.file}:{self.root.first_line}: numba could not compile the {what} variant of "
                                   f"{self.root.name}: {exc}", file=self.root.file, line=self.root.first_line) from exc
            raise _fault(exc, self.root, self.grid, self.block, what) from exc

    def _sync(self, what):
        try:
            with device_wait.waiting(f"the {what} launch"):
                self.cuda.synchronize()
        except Exception as exc:
            raise _fault(exc, self.root, self.grid, self.block, what) from exc

    def plain_from_disk(self, launch_args) -> None:
        """When numba has not compiled the user's kernel for these arguments yet: run a copy of it whose compiled
        code is kept on disk (:func:`.disk_cache.cached_plain`), so that a kernel captured before, in any process,
        is not compiled again for its plain run either."""
        try:
            argtypes = tuple(self.plain.typeof_pyval(a) for a in launch_args)
        except Exception:  # noqa: BLE001 - not a dispatcher that types its arguments: kept as it is
            return
        if argtypes in getattr(self.plain, "overloads", {argtypes: None}):
            return  # compiled already (the program launched it before): nothing to gain
        copy = cached_plain(self.plain, self.root)
        if copy is not None:
            self.plain = copy

    def _compile(self, dispatcher, launch_args, what) -> float | None:
        """Compile ahead of the timed launch; seconds, or None when it was compiled already."""
        try:
            argtypes = tuple(dispatcher.typeof_pyval(a) for a in launch_args)
            if argtypes in dispatcher.overloads:
                return None
            disk = getattr(dispatcher, "_cache", None)
            hits = getattr(disk, "hits", 0) if isinstance(disk, VariantDiskCache) else None
            t0 = time.perf_counter()
            dispatcher.compile(argtypes)
            seconds = time.perf_counter() - t0
            # where each kernel's code came from: compiled now, or its cubin read from the disk cache (the plain run's
            # only when it is gpuviz's copy with a disk cache: the user's own dispatcher compiles as numba does)
            if what != "plain" or isinstance(disk, VariantDiskCache):
                self.variant_origins[what] = _origin(disk, hits)
            return seconds
        except Exception as exc:
            raise CaptureError(f"{self.root.file}:{self.root.first_line}: numba could not compile the {what} variant of "
                               f"{self.root.name}: {type(exc).__name__}: {exc}", file=self.root.file, line=self.root.first_line) from exc

    def time_launch(self, dispatcher, launch_args, what, repeats: int = 1) -> float:
        """Median seconds of ``repeats`` launches (CUDA events), after compiling and one warm-up launch."""
        self._launch(dispatcher, launch_args, what)  # warm-up: module load, first-touch
        self._sync(what)
        timer = DeviceTimer(self.cuda)
        times = []
        for _ in range(max(1, repeats)):
            try:
                times.append(timer.time(lambda: self._launch(dispatcher, launch_args, what)))
            except CaptureError:
                raise
            except Exception as exc:
                raise _fault(exc, self.root, self.grid, self.block, what) from exc
        return float(np.median(times))

    # -- buffers -----------------------------------------------------------------------------------------------
    def index_dtype(self):
        biggest = max([a.size for a in self.info.arrays] or [0])
        return np.int32 if biggest < 2**31 else np.int64

    def _buffers(self, code_n, timed_n, slab_rows, diverged_n, off, cap, cnt):
        """Device buffers in gpu_rewrite.BUFFERS order."""
        cuda, idt, warp = self.cuda, self.index_dtype(), self.mode == "warp"
        # per-warp mode: each record is a row of WARP_RECORD_FIELDS in ``idx`` (code, mask, base, stride) and
        # ``code`` holds the order of the diverged records; ``stride`` and ``mask`` are unused
        return [
            cuda.device_array(max(diverged_n if warp else code_n, 1), np.int32),  # code
            cuda.device_array(max(code_n, 1) * (WARP_RECORD_FIELDS if warp else 1), idt),  # idx
            cuda.device_array(1, idt),  # stride
            cuda.device_array(1, np.uint32),  # mask
            cuda.device_array(max(slab_rows * 32, 1) if warp else 1, idt),  # slab
            cuda.device_array(max(timed_n, 1), np.int64),  # time
            cuda.device_array(max(timed_n, 1), np.int16),  # sm
            cuda.to_device(self.slot_of_block),  # slot
            cuda.to_device(off),  # off
            cuda.to_device(cap),  # cap
            cnt,  # cnt
            cuda.to_device(np.zeros(4, np.int64)),  # drop
        ]

    def count(self, dargs, repeats: int = 0) -> np.ndarray:
        """Run the counting variant; (n_slots, 4) int64 counts per slot of events (per-warp mode: converged
        records), timed events, slab rows and diverged records (per-warp mode)."""
        cuda = self.cuda
        cnt = cuda.to_device(np.zeros((max(self.n_slots, 1), CNT_COLUMNS), np.int32))
        bufs = self._buffers(1, 1, 1, 1, np.zeros((1, OFF_COLUMNS), np.int64), np.zeros((1, OFF_COLUMNS), np.int32), cnt)
        launch_args = list(dargs) + bufs + self.scalar_params()
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

    def allocate(self, counts: np.ndarray, max_events: int | None = None, worst_case: bool = False):
        """Device buffers sized from the counts, each slot's offsets, and the record variant for that layout.

        Per-warp mode gives each warp's slot room for its converged records, then its diverged ones, as the
        counting pass found them; ``worst_case`` gives it room for all of its records in either part (for a
        second run when a kernel converged differently from the counting pass and records were dropped)."""
        counts = np.asarray(counts, dtype=np.int64)
        warp = self.mode == "warp"
        records = counts[:, 0] + (counts[:, 3] if warp else 0)
        total, total_timed = int(records.sum()), int(counts[:, 1].sum())
        if max_events is not None and total > max_events:
            err = TraceTooLarge(
                f"{self.root.name}[{self.grid}, {self.block}] would record {total:,} events, over max_events={max_events:,}. "
                f"Record fewer blocks (record_blocks=[...]), a smaller problem, or mode='warp' (one record per warp instruction)"
            )
            err.events = total  # counted on the device: the runner compares it with the whole recording's limit
            raise err
        if warp and worst_case:
            counts = counts.copy()
            counts[:, 0] = counts[:, 3] = records
        # thread mode: a warp's lanes interleave (stride 32), each lane given the warp's largest count;
        # warp mode: one slot per warp, contiguous (stride 1). See make_recorders.
        n = self.n_slots
        if warp:
            group, lane, stride = np.arange(n, dtype=np.int64), np.zeros(n, np.int64), 1
        else:
            k = np.arange(n, dtype=np.int64) // max(self.per_block, 1)
            group = k * self.wpb + self.slot_thread.astype(np.int64) // 32
            lane, stride = self.slot_thread.astype(np.int64) % 32, 32
        n_groups = int(group.max()) + 1 if n else 0
        cols = CNT_COLUMNS if warp else 2
        gmax = np.zeros((CNT_COLUMNS, n_groups), np.int64)
        for col in range(cols):
            np.maximum.at(gmax[col], group, counts[:, col])
        biggest = gmax.max(axis=1) if n_groups else np.zeros(CNT_COLUMNS, np.int64)
        exact = gmax.sum(axis=1)
        # uniform: nothing to look up on the device, at the price of padding every warp to the largest
        if self.layout == "auto":
            uniform = bool(np.all(biggest * n_groups <= exact * (1 + UNIFORM_SLACK) + 1024))
        else:
            uniform = self.layout == "uniform"
        off = np.zeros((max(n, 1), OFF_COLUMNS), np.int64)
        cap = np.zeros((max(n, 1), OFF_COLUMNS), np.int32)
        per_group = biggest[:, None] * np.ones((1, n_groups), np.int64) if uniform else gmax
        # rows of idx: per warp its converged rows, then its diverged rows (thread mode: events, interleaved)
        rows = per_group[0] * stride + (per_group[3] if warp else 0)
        row0 = np.cumsum(rows) - rows
        off[:n, 0] = row0[group] + lane
        cap[:n, 0] = per_group[0][group]
        for col in (1, 2):
            width = 1 if col == 2 else stride  # slab rows: one per record, the 32 lanes inside the row
            size = per_group[col] * width
            off[:n, col] = (np.cumsum(size) - size)[group] + (lane if col < 2 else 0)
            cap[:n, col] = per_group[col][group]
        if warp:
            off[:n, 3] = row0[group] + per_group[0][group]
            cap[:n, 3] = per_group[3][group]
            off[:n, 4] = (np.cumsum(per_group[3]) - per_group[3])[group]
        sizes = [int(rows.sum()), int((per_group[1] * stride).sum()), int(per_group[2].sum()), int(per_group[3].sum())]
        self.uniform = uniform
        # every buffer position (record rows, timed events, slab words) under 2**31: 32-bit positions
        self.positions_fit32 = max(sizes[0] * (WARP_RECORD_FIELDS if warp else 1), sizes[1], sizes[2] * 32) < 2**31
        self.record_variant = self.variant(count=False, uniform=uniform)
        self.offsets, self.caps, self.stride = off[:n], cap[:n], stride
        cnt = self.cuda.to_device(np.zeros((max(n, 1), CNT_COLUMNS), np.int32))
        if uniform:  # the device computes the offsets from the largest counts, passed as scalar parameters
            dev_off, dev_cap = np.zeros((1, OFF_COLUMNS), np.int64), np.zeros((1, OFF_COLUMNS), np.int32)
            self.launch_caps = tuple(int(biggest[c]) if (c < cols) else 0 for c in range(CNT_COLUMNS))
        else:
            dev_off, dev_cap = off, cap
            self.launch_caps = (0,) * CNT_COLUMNS
        bufs = self._buffers(sizes[0], sizes[1], sizes[2], sizes[3], dev_off, dev_cap, cnt)
        self.totals = (total, total_timed)
        self.buffer_lengths = tuple(sizes)
        return bufs

    def guessed_capacity(self, max_events: int | None) -> int:
        """Events per recorded thread that a first recording run, before any count, gets room for; 0: count first
        (per-warp mode, whose slots have several parts to size, or more threads than the guess has room for)."""
        if self.mode != "thread" or self.n_slots == 0:
            return 0
        budget = SPECULATE_EVENTS if max_events is None else min(SPECULATE_EVENTS, int(max_events))
        per_thread = min(SPECULATE_PER_THREAD, budget // self.n_slots)
        return per_thread if per_thread >= SPECULATE_MIN_PER_THREAD else 0

    def guessed_counts(self, per_thread: int) -> np.ndarray:
        """Counts, in the counting pass's columns, that give every recorded thread room for ``per_thread`` events
        and as many timed events (:meth:`allocate` lays them out uniformly)."""
        counts = np.zeros((self.n_slots, CNT_COLUMNS), np.int64)
        counts[:, :2] = per_thread
        return counts

    def produced_counts(self, bufs) -> np.ndarray | None:
        """(n_slots, 4) in the counting pass's columns: the events and timed events each recorded thread produced in
        the recording run that wrote ``bufs``, whether they fit or not (per-thread mode writes them at END, in the
        columns that mode leaves free); None when they cannot be trusted (a thread's overflow count, kept in a 32-bit
        state, wrapped past 2**31: fewer produced than written)."""
        cnt = bufs[BUFFERS.index("cnt")].copy_to_host()[: self.n_slots].astype(np.int64)
        produced = np.zeros_like(cnt)
        produced[:, :2] = cnt[:, 2:4]
        if np.any(produced[:, :2] < cnt[:, :2]):
            return None
        return produced

    def restore_inputs(self, pristine) -> list:
        """The recording kernel's arguments put back as they were before a recording run that must run again:
        numpy inputs uploaded afresh (the host arrays are written only after the capture), the caller's device
        arrays, in tuples too, copied back from ``pristine`` (copies taken before that run)."""
        dargs = self.device_args(fresh=False)
        _put_back(self.args, dargs, pristine)
        return dargs

    def scalar_params(self) -> list:
        """The recording kernel's scalar parameters (gpu_rewrite.PARAMS): the recorded block range and the
        uniform layout's capacities, as int64 so that every launch compiles to the same signature."""
        return [np.int64(v) for v in (*self.range_params, *self.launch_caps)]

    def trace_bytes(self) -> int:
        """Bytes of the device buffers that come back (padding of lanes or warps with fewer events included)."""
        rows, total_timed, slab_rows, diverged = self.buffer_lengths
        isz = np.dtype(self.index_dtype()).itemsize
        per_event = WARP_RECORD_FIELDS * isz if self.mode == "warp" else 4 + isz
        return int(rows * per_event + diverged * 4 + slab_rows * 32 * isz + total_timed * (8 + 2) + self.n_slots * CNT_COLUMNS * 4)

    def record(self, dargs, bufs, repeats: int = 1) -> float:
        """Run the recording variant once (timed with CUDA events); the events land in ``bufs``."""
        launch_args = list(dargs) + list(bufs) + self.scalar_params()
        compiled = self._compile(self.record_variant.dispatcher, launch_args, "instrumented")
        if compiled is not None:  # summed: a recording run again in another layout compiles that one too
            self.timings["instrumented_compile_s"] = self.timings.get("instrumented_compile_s", 0.0) + compiled
        _load_module(self.record_variant.dispatcher, launch_args)
        # one run only (it writes into the caller's arrays): no retry, a generous hold instead
        timer = DeviceTimer(self.cuda, hold_s=2e-3)
        try:
            timer.time(lambda: self._launch(self.record_variant.dispatcher, launch_args, "instrumented"), retry=False)
        except CaptureError:
            raise
        except Exception as exc:
            raise _fault(exc, self.root, self.grid, self.block, "instrumented") from exc
        self._sync("instrumented")
        self.timings["instrumented_kernel_s"] = timer.seconds
        self.timings["instrumented_enqueue_s"] = timer.host_seconds
        self.kernel_time_includes_enqueue = not timer.hidden
        self.record_args = launch_args
        return timer.seconds

    def dropped_records(self, bufs) -> bool:
        """Did the recording run drop records (slot full)? Reads the four drop counters."""
        return int(bufs[BUFFERS.index("drop")].copy_to_host()[0]) > 0

    def dropped_any(self, bufs) -> bool:
        """Did the recording run drop anything: events, timestamps or slab rows?"""
        return bool(np.any(bufs[BUFFERS.index("drop")].copy_to_host()[:3] > 0))

    FETCHED = ("code", "idx", "stride", "mask", "slab", "time", "sm", "cnt", "drop")

    def fetch(self, bufs) -> dict[str, np.ndarray]:
        """Copy the buffers back through pinned host memory (timed); host arrays by buffer name."""
        cuda = self.cuda
        picks = [bufs[BUFFERS.index(n)] for n in self.FETCHED]
        pinned = {n: cuda.pinned_array(d.shape, dtype=d.dtype) for n, d in zip(self.FETCHED, picks)}
        t = EventTimer(cuda)
        with t:
            for n, d in zip(self.FETCHED, picks):
                d.copy_to_host(pinned[n])
        self.timings["copy_back_s"] = t.seconds
        # own the data in pageable memory: pinned memory is scarce and the trace outlives the capture
        return {n: np.array(pinned[n]) for n in self.FETCHED}

    # -- decoding ------------------------------------------------------------------------------------------------
    def _warp_record_rows(self, wrote: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows of ``idx`` in each warp's program order, records per warp) of a per-warp recording.

        A warp's converged records fill the start of its slot in order; its diverged records follow in their
        own order, each with (in ``order``, the ``code`` buffer) how many converged records came before it.
        A diverged record that followed m converged ones goes before converged record m."""
        conv, div = wrote[:, 0], wrote[:, 3]
        n = len(conv)

        def runs(lengths):
            first = np.cumsum(lengths) - lengths
            return np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(first, lengths)

        k, j = runs(conv), runs(div)
        slots = np.concatenate([np.repeat(np.arange(n), conv), np.repeat(np.arange(n), div)])
        rows = np.concatenate([np.repeat(self.offsets[:, 0], conv) + k, np.repeat(self.offsets[:, 3], div) + j])
        before = order[np.repeat(self.offsets[:, 4], div) + j].astype(np.int64) if len(j) else j
        position = np.concatenate([k, before])
        diverged_first = np.concatenate([np.ones(len(k), np.int8), np.zeros(len(j), np.int8)])
        tie = np.concatenate([np.zeros(len(k), np.int64), j])
        ordered = np.lexsort((tie, diverged_first, position, slots))
        return rows[ordered], conv + div

    def _lane_events(self, host, take, starts, counts, slot, decoded, mem, stamps) -> dict[str, np.ndarray]:
        """Per-warp records as events: one per lane in each record's mask, with its lane's index and sequence
        number. ``decoded``: each record's (kind, array, line, site); ``stamps``: its (time, SM) columns."""
        kind, aid, line, site = decoded
        time_col, sm_col = stamps
        n = self.n_slots
        mask = host["mask"][take].astype(np.uint32)
        base = host["idx"][take].astype(np.int64)
        step = host["stride"][take].astype(np.int64)
        in_slab = mem & (step == SLAB_MARK)
        slab_before = np.cumsum(in_slab) - in_slab  # slab records before each record, over all slots
        first = starts
        slab_at_slot_start = np.zeros(n, np.int64)
        nonempty = counts > 0
        slab_at_slot_start[nonempty] = slab_before[first[nonempty]]
        row = self.offsets[slot, 2] + slab_before - slab_at_slot_start[slot]
        bits = ((mask[:, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(bool)
        rec, lane = np.nonzero(bits)
        # each lane's sequence number: how many records of its warp held it before this one
        running = np.cumsum(bits, axis=0, dtype=np.int32)
        before_slot = np.zeros((n, 32), np.int32)
        nz = first[nonempty]
        before_slot[nonempty] = np.where((nz > 0)[:, None], running[np.maximum(nz - 1, 0)], 0)
        lane_seq = running[rec, lane] - 1 - before_slot[slot[rec], lane]
        rslot = slot[rec]
        index = np.full(len(rec), -1, np.int64)
        m = mem[rec]
        reg = m & ~in_slab[rec]
        index[reg] = base[rec[reg]] + lane[reg] * step[rec[reg]]
        irr = m & in_slab[rec]
        index[irr] = host["slab"][row[rec[irr]] * 32 + lane[irr]]
        ev = {
            "block": self.slot_block[rslot], "thread": self.slot_thread[rslot] + lane.astype(np.int32),
            "seq": lane_seq.astype(np.int32), "kind": kind[rec], "array": aid[rec], "index": index, "line": line[rec],
            "site": site[rec],
            "time": time_col[rec], "sm": sm_col[rec], "value": mask[rec].astype(np.float64),
        }
        return ev

    def decode(self, host: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """(event fields, the drop counters: events, timed events, slab rows, diverged lane events) from the
        fetched buffers."""
        n = self.n_slots
        wrote = host["cnt"][:n].astype(np.int64)
        counts_t = wrote[:, 1]
        if self.mode == "warp":
            take, counts = self._warp_record_rows(wrote, host["code"])
        else:
            counts = wrote[:, 0]
        starts = np.cumsum(counts) - counts
        seq = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(starts, counts)
        if self.mode != "warp":
            take = np.repeat(self.offsets[:, 0], counts) + self.stride * seq
        starts_t = np.cumsum(counts_t) - counts_t
        seq_t = np.arange(int(counts_t.sum()), dtype=np.int64) - np.repeat(starts_t, counts_t)
        take_t = np.repeat(self.offsets[:, 1], counts_t) + self.stride * seq_t
        if self.mode == "warp":  # rows of (code, mask, base, stride) in idx: split them into the thread-mode names
            rec = host["idx"].reshape(-1, WARP_RECORD_FIELDS).astype(np.int64)
            host = dict(host, code=rec[:, 0].astype(np.int32), mask=(rec[:, 1] & 0xFFFFFFFF).astype(np.uint32),
                        idx=rec[:, 2], stride=rec[:, 3])
        code = host["code"][take]
        slot = np.repeat(np.arange(n, dtype=np.int64), counts)
        kind, aid, line = decode_kinds(self.record_variant.info, code)
        site = (code >> 8).astype(np.int32)  # the plan's site ids (gpu_rewrite: code = site << 8 | array id + 1)
        mem = aid >= 0
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
        drops = host["drop"].astype(np.int64)
        if self.mode != "warp":
            index = np.full(len(code), -1, np.int64)
            index[mem] = host["idx"][take][mem]
            ev = {
                "block": self.slot_block[slot], "thread": self.slot_thread[slot], "seq": seq.astype(np.int32),
                "kind": kind, "array": aid, "index": index, "line": line, "time": time_col, "sm": sm_col, "site": site,
            }
            return ev, drops
        ev = self._lane_events(host, take, starts, counts, slot, (kind, aid, line, site), mem, (time_col, sm_col))
        return ev, drops


def _origin(disk, hits_before: int | None) -> str:
    """Where a recording variant's compiled code came from (``launch.meta["variants"]``)."""
    if hits_before is None:
        return "compiled (GPUVIZ_GPU_CACHE=0)" if not disk_cache_enabled() else \
            "compiled (not kept on disk: a value the kernel reads has no stable description)"
    if disk.hits > hits_before:
        return "disk cache"
    return f"compiled (not kept on disk: {disk.problem})" if disk.problem else "compiled"


def _is_typing_error(exc) -> bool:
    return type(exc).__name__ in ("TypingError", "UnsupportedError", "NumbaError", "LoweringError", "NumbaNotImplementedError")


class SourceOnlyCuda:
    """A stand-in for ``numba.cuda`` whose ``jit`` hands the function back as written: the GPU build runs up
    to the rewritten source and its tables (arrays, sites, shared shapes) with no GPU and no numba-cuda GPU
    target. For tests and bench/corpus_gpu_source.py."""

    @staticmethod
    def jit(*args, **kwargs):
        if args and callable(args[0]) and not kwargs:
            return args[0]
        return lambda fn: fn


def variant_source(kernel, grid, block, args, *, count: bool = True, mode: str = "thread",
                   dynamic_shared_bytes: int = 0, keep_rewrite: bool = False):
    """The recording variant GPU capture would build for this launch, as source: (BuildInfo, {function name:
    rewritten source}). The same steps as :class:`GpuRecording` up to numba's compile: the plan, the arguments,
    the rewrite; what it refuses, GPU capture refuses with the same message."""
    plan = plan_for(kernel)
    plan.raise_if_unsupported()
    root = plan.root
    if len(args) != len(root.params):
        raise CaptureError(f"{root.file}:{root.first_line}: {root.name} takes {len(root.params)} argument(s)",
                           file=root.file, line=root.first_line)
    launch_args, _input_only = launch_arguments(kernel, root, args)
    grid, block = normalize_dims(grid, "grid"), normalize_dims(block, "block")
    v = build_variant(SourceOnlyCuda(), root, array_arguments(root, launch_args), plan=plan, count=count, mode=mode,
                      all_blocks=True, grid=grid, block=block, dynamic_shared_bytes=dynamic_shared_bytes,
                      c_contiguous=c_contiguous_arguments(root, launch_args), keep_rewrite=keep_rewrite)
    return v.info, v.sources


def record_launch(kernel, grid, block, args, *, record_blocks, max_events, mode, timestamps, record, time_plain,
                 repeats, layout, max_registers, dynamic_shared_bytes=0) -> Recorded:
    recorders_before = dict(recorder_cache.COUNTS)
    rec = GpuRecording(kernel, grid, block, args, mode=mode, timestamps=timestamps, record_blocks=record_blocks,
                       record=record, layout=layout, max_registers=max_registers,
                       dynamic_shared_bytes=dynamic_shared_bytes)
    cuda, root = rec.cuda, rec.root
    timings: dict[str, float] = {}
    if rec.rewrite_s:
        timings["rewrite_s"] = rec.rewrite_s
    warnings: list[str] = []
    meta: dict = {}

    # 1. plain: the user's kernel untouched, on fresh copies (it may write into its inputs)
    plain_args = rec.device_args(fresh=True)
    rec.plain_from_disk(plain_args)
    compiled = rec._compile(rec.plain, plain_args, "plain")
    if compiled is not None:
        timings["plain_compile_s"] = compiled
    meta["plain"] = kernel_resources(cuda, rec.plain, plain_args, rec.block)
    if time_plain:
        timings["plain_kernel_s"] = rec.time_launch(rec.plain, plain_args, "plain", repeats=repeats)
    else:
        rec._launch(rec.plain, plain_args, "plain")
        rec._sync("plain")
    # the inputs as the caller passed them, copied before the recording runs in place on the caller's device
    # arrays: an in-place kernel (a[i] += 1) checked on a copy taken later would differ by one more run; a recording
    # run again starts from them too
    check_args = rec.device_args(fresh=True)
    # 2. sizes: a first recording run into guessed buffers, or a counting pass on fresh copies; 3. record, on the
    # caller's data
    guess = rec.guessed_capacity(max_events)
    if guess:
        bufs = rec.allocate(rec.guessed_counts(guess))
        dargs = rec.device_args(fresh=False)
        rec.record(dargs, bufs)
        produced = rec.produced_counts(bufs)
        total = None if produced is None else int(produced[:, 0].sum())
        if produced is not None and not rec.dropped_any(bufs) and (max_events is None or total <= max_events):
            rec.totals = (total, int(produced[:, 1].sum()))
            meta["sizing"] = f"recorded at once: room for {guess} events per thread, and every thread's fitted"
        else:
            # what did not fit: the inputs as they were, and a second run sized by what each thread produced (a
            # counting pass when those counts cannot be trusted); allocate() refuses a trace over max_events
            dargs = rec.restore_inputs(check_args)
            counts = rec.count(rec.device_args(fresh=True)) if produced is None else produced
            bufs = rec.allocate(counts, max_events=max_events)
            rec.record(dargs, bufs)
            meta["sizing"] = (f"recorded twice: room for {guess} events per thread did not hold them all, so the "
                              "recording ran again with " + ("the counting pass's sizes" if produced is None else
                                                             "each thread's count from the first run"))
    else:
        counts = rec.count(rec.device_args(fresh=True))
        bufs = rec.allocate(counts, max_events=max_events)
        dargs = rec.device_args(fresh=False)
        rec.record(dargs, bufs)
        meta["sizing"] = "counting pass, then the recording"
    if mode == "warp" and rec.dropped_records(bufs) and all(isinstance(a, np.ndarray) or not hasattr(a, "shape") for a in args):
        # the warps converged differently from the counting pass, so one part of a slot (converged or diverged
        # records) overflowed: record again with room for every record in either part (numpy inputs are
        # uploaded afresh, so the second run starts from the same data)
        warnings.append("the recording ran twice: its warps converged differently from the counting pass")
        bufs = rec.allocate(counts, max_events=max_events, worst_case=True)
        dargs = rec.device_args(fresh=False)
        rec.record(dargs, bufs)
    meta["instrumented"] = kernel_resources(cuda, rec.record_variant.dispatcher, rec.record_args, rec.block)
    if rec.variant_origins:
        meta["variants"] = dict(rec.variant_origins)
    # the recorders' device functions this capture needed and numba had not compiled in this process yet
    meta["recorders"] = {k: v - recorders_before[k] for k, v in recorder_cache.COUNTS.items()}
    # does the instrumented run compute what one plain run does? (the timed plain copies ran several times;
    # this one runs on the copy of the inputs taken before the recording changed the caller's device arrays)
    rec._launch(rec.plain, check_args, "plain")
    rec._sync("plain")
    # 4. back to the host
    host = rec.fetch(bufs)
    _write_back(rec.args, dargs, rec.input_only)
    timings.update(rec.timings)
    events, drops = rec.decode(host)
    if record != "global":
        warnings.extend(uninitialised_shared_reads(events, rec.info.arrays, rec.grid, rec.block, root.file))
    dropped, dev = report(rec, drops, check_args, dargs, meta, warnings)
    fields = {k: v for k, v in events.items() if k in EVENT_FIELDS}
    return Recorded(rec.grid, rec.block, fields, list(rec.info.arrays), dev["name"],
                    gpu_versions() | {"driver": dev["driver"]}, timings=timings, warnings=warnings, meta=meta,
                    dropped=dropped, created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
