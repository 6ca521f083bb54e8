"""The launch a runtime runs: its threads as lanes, its arrays (global, constant, shared, local), the events it records
and how they are joined into field-major columns.

A part of :class:`~gpuviz.capture.backends.cpu.runtime.SimtRuntime` (see the package's docstring).
"""

from __future__ import annotations

import numpy as np

from .....model.trace import EventKind
from ....dtypes import to_dtype
from ....errors import TraceTooLarge
from ....limits import MAX_CPU_THREADS, normalize_dims
from .values import ArrayHandle, _poison


class LaunchState:
    def __init__(
        self,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        *,
        file: str = "",
        line_text=lambda line: "",
        warp_size: int = 32,
        record: bool = True,
        record_blocks=None,
        max_events: int = 50_000_000,
        max_loop_iterations: int = 5_000_000,
        blocks=None,
        watchdog=None,
        dynamic_shared_bytes: int = 0,
    ):
        """``blocks``: run only these linear block ids (a sample for the size estimate; the grid, block
        indices and results of those blocks are as in the whole launch). ``watchdog``: a
        :class:`~gpuviz.capture.backends.cpu.watchdog.Watchdog` the loops consult (stops a launch that makes no progress).
        ``dynamic_shared_bytes``: the launch's dynamic shared memory per block (``kernel[grid, block, stream,
        nbytes]``), what ``cuda.shared.array(0, dtype)`` declares."""
        self.grid_dims = normalize_dims(grid, "grid")
        self.block_dims = normalize_dims(block, "block")
        self.file = file
        self.line_text = line_text
        self.warp_size = warp_size
        gx, gy, gz = self.grid_dims
        bx, by, bz = self.block_dims
        self.tpb = bx * by * bz
        self.n_blocks = gx * gy * gz
        if blocks is None:
            self.n_slots = self.n_blocks
        else:
            blocks = np.unique(np.asarray(list(blocks), dtype=np.int64))
            if len(blocks) == 0 or blocks[0] < 0 or blocks[-1] >= self.n_blocks:
                raise ValueError(f"blocks must be linear block ids in 0..{self.n_blocks - 1}")
            self.n_slots = len(blocks)
        self.N = self.tpb * self.n_slots
        if self.N > MAX_CPU_THREADS:
            raise TraceTooLarge(
                f"{self.N:,} threads is more than gpuviz's CPU executor runs at once ({MAX_CPU_THREADS:,}): every "
                "thread's variables live in memory together. Launch a smaller problem, or capture it on a GPU.",
                file=file,
            )
        self._lay_out_lanes(blocks)
        #: loop-body iterations each lane has run (all loops together): a data-dependent loop's work per thread,
        #: recorded as the value of the lane's END event (see events())
        self.lane_iterations = np.zeros(self.N, dtype=np.int64)
        self.seq = np.zeros(self.N, dtype=np.int32)
        self.step = 0
        self.record = record
        if record_blocks is not None:
            sel = np.zeros(self.n_blocks, dtype=bool)
            sel[np.asarray(list(record_blocks), dtype=np.int64)] = True
            self.recorded = sel[self.block_lin]
        else:
            self.recorded = None
        self.max_events = int(max_events)
        self.count_only = False  # count events against max_events without keeping them (the size estimate)
        self.max_loop_iterations = int(max_loop_iterations)
        self.loop_iterations = 0
        self.barriers_passed = 0
        self.watchdog = watchdog
        self._loop_masks: dict = {}  # loop line -> the lanes in it at its latest iteration (for the watchdog)
        self.n_events = 0
        # one per recording call: (lanes, seq, flat index, values, kind, array, line, step, site)
        self._chunks: list[tuple] = []
        self.shared_names: dict[int, str] = {}  # declaration line -> name (the capture plan's shared table)
        self.arrays: list[ArrayHandle] = []
        self._by_site: dict = {}
        self.write_backs: list = []  # device arrays the kernel reached through globals, copied back at the end
        self.warnings: list[str] = []
        self._warned: set = set()
        self.printed: list[str] = []
        self.dynamic_shared_bytes = int(dynamic_shared_bytes)
        self._dynamic_shared = None  # the dynamic shared bytes of each block, made at the first declaration
        self._dynamic_written: dict = {}  # dtype -> written flags of its elements (declarations alike share them)

    def _lay_out_lanes(self, blocks):
        """Each lane's block and thread (linear and as coordinates), lane in its warp and warp; all alive.
        ``blocks``: the linear block ids this runtime runs (None: every block of the grid)."""
        gx, gy, gz = self.grid_dims
        bx, by, bz = self.block_dims
        warp_size = self.warp_size
        lanes = np.arange(self.N, dtype=np.int64)
        self.lanes = lanes
        # slot: the block's place among the blocks this runtime runs (its shared memory, its warps);
        # block_lin: its linear id in the launch (what the events and blockIdx say)
        self.slot = lanes // self.tpb
        self.block_lin = self.slot if blocks is None else blocks[self.slot]
        self.thread_lin = lanes % self.tpb
        t = self.thread_lin
        b = self.block_lin
        self.tid = (t % bx, (t // bx) % by, t // (bx * by))
        self.bid = (b % gx, (b // gx) % gy, b // (gx * gy))
        self.bdim = (bx, by, bz)
        self.gdim = (gx, gy, gz)
        self.laneid = t % warp_size
        self.warps_per_block = -(-self.tpb // warp_size)
        self.warp_gid = self.slot * self.warps_per_block + t // warp_size
        self.alive = np.ones(self.N, dtype=bool)

    def add_array(self, name: str, data: np.ndarray, space: str, line: int = -1) -> ArrayHandle:
        h = ArrayHandle(len(self.arrays), name, data, space, data.shape if space != "shared" else data.shape[1:], line)
        self.arrays.append(h)
        return h

    def const_array(self, name, arr, line):
        key = ("const", name)
        if key not in self._by_site:
            self._by_site[key] = self.add_array(name, np.asarray(arr), "const", line)
        return self._by_site[key]

    def device_global(self, name, dev, line):
        """A module-level device array: read (and written) through its current contents, written back at the end."""
        key = ("device", name)
        if key not in self._by_site:
            host = np.asarray(dev.copy_to_host())
            self._by_site[key] = self.add_array(name, host, "global", line)
            self.write_backs.append(lambda h=host, d=dev: d.copy_to_device(h))
        return self._by_site[key]

    def shared_array(self, shape, dtype, line):
        key = ("shared", line)
        h = self._by_site.get(key)
        if h is None:
            dt = to_dtype(dtype)
            if isinstance(shape, (int, np.integer)) and int(shape) == 0:
                return self._dynamic_shared_array(dt, line)
            shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
            data = np.empty((self.n_slots,) + shape, dtype=dt)
            _poison(data)
            h = self.add_array(self._shared_name(line), data, "shared", line)
            h.written = np.zeros(data.shape, dtype=bool)
            self._by_site[key] = h
        return h

    def _dynamic_shared_array(self, dt, line):
        """``cuda.shared.array(0, dt)``: the launch's dynamic shared memory seen as ``dt`` elements, as many as
        fit (numba's rule). Every such declaration of a kernel views the same bytes of its block (as on a GPU;
        the simulator does the same), each named after its own variable."""
        if self._dynamic_shared is None:
            data = np.empty((self.n_slots, self.dynamic_shared_bytes), dtype=np.uint8)
            data.fill(0xFF)  # poison: NaN as a float, -1 or the maximum as an integer
            self._dynamic_shared = data
        count = self.dynamic_shared_bytes // dt.itemsize
        data = self._dynamic_shared[:, : count * dt.itemsize].view(dt)
        h = self.add_array(self._shared_name(line), data, "shared", line)
        h.written = self._dynamic_written.setdefault(dt.str, np.zeros(data.shape, dtype=bool))
        self._by_site[("shared", line)] = h
        return h

    def _shared_name(self, line):
        if line in self.shared_names:
            return self.shared_names[line]
        # named after the variable it is assigned to, when the line reads `name = cuda.shared.array(...)`
        text = self.line_text(line)
        if "=" in text:
            name = text.split("=", 1)[0].strip()
            if name.isidentifier():
                return name
        return f"shared@{line}"

    def local_array(self, shape, dtype, line):
        key = ("local", line)
        h = self._by_site.get(key)
        if h is None:
            shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
            h = ArrayHandle(-1, f"local@{line}", np.zeros((self.N,) + shape, dtype=to_dtype(dtype)), "local", shape, line)
            self._by_site[key] = h
        return h

    def _rec(self, act: np.ndarray, kind: int, aid: int, flat, line: int, values=None):
        self.step += 1
        if not self.record:
            return
        if self.recorded is not None:
            keep = self.recorded[act]
            if not keep.all():
                act = act[keep]
                if isinstance(flat, np.ndarray) and flat.ndim:
                    flat = flat[keep]
                if isinstance(values, np.ndarray) and values.ndim:
                    values = values[keep]
        n = len(act)
        if n == 0:
            return
        self.n_events += n
        if self.n_events > self.max_events:
            raise TraceTooLarge(
                f"the trace passed {self.max_events:,} events at {self.where(line)}: capture a smaller problem, "
                "fewer blocks (record_blocks=...), or raise max_events",
                file=self.file,
                line=line,
            )
        if self.count_only:
            return
        if n == self.N:  # every lane: slices instead of gathers and scatters, and no lane list kept
            seq = self.seq.copy()
            self.seq += 1
            act = None
        else:
            seq = self.seq[act]
            self.seq[act] = seq + 1
            act = act.astype(np.int32)  # half the memory kept per event; lanes < 2**31 (checked at launch)
        if isinstance(values, np.ndarray) and values.dtype.kind == "c":
            values = values.real
        # chunks are joined once, at the end (events()): recording stays a few cheap appends per step
        # ``line`` is the plan's SiteLine where the generated code passed one: a line that knows its site id
        self._chunks.append((act, seq, flat, values, kind, aid, line, self.step, getattr(line, "site", -1)))

    def keep_first(self, limit: int) -> int:
        """Drop the events recorded after the first ``limit`` (whole steps); returns how many were dropped."""
        kept, n = [], 0
        for chunk in self._chunks:
            if n + len(chunk[1]) > limit:
                break
            kept.append(chunk)
            n += len(chunk[1])
        dropped = self.n_events - n
        self._chunks, self.n_events = kept, n
        return dropped

    def events(self) -> dict[str, np.ndarray]:
        """The recorded events, field-major, in execution order."""
        total = self.n_events if self.record else 0
        out = {
            "block": np.empty(total, np.int32), "thread": np.empty(total, np.int32), "seq": np.empty(total, np.int32),
            "kind": np.empty(total, np.uint8), "array": np.empty(total, np.int16), "index": np.empty(total, np.int64),
            "line": np.empty(total, np.int32), "step": np.empty(total, np.int32), "value": np.empty(total, np.float64),
            "site": np.empty(total, np.int32),
        }
        if not total:
            return out
        # END events carry each lane's loop iterations; kept only when they tell lanes apart (a data-dependent
        # loop: mandelbrot's escape count), so a kernel whose threads all loop alike has no value column at all
        end_counts = [c[3] for c in self._chunks if c[4] == EventKind.END and c[3] is not None]
        loops_differ = bool(end_counts) and len({float(v) for c in end_counts for v in np.unique(c)}) > 1
        with_values = loops_differ or any(c[3] is not None for c in self._chunks if c[4] != EventKind.END)
        block32 = self.block_lin.astype(np.int32)
        thread32 = self.thread_lin.astype(np.int32)
        o = 0
        for act, seq, flat, values, kind, aid, line, step, site in self._chunks:
            e = o + len(seq)
            if act is None:  # every lane, in lane order: copies, not gathers
                out["block"][o:e] = block32
                out["thread"][o:e] = thread32
            else:
                np.take(block32, act, out=out["block"][o:e])
                np.take(thread32, act, out=out["thread"][o:e])
            out["seq"][o:e] = seq
            out["kind"][o:e] = kind
            out["array"][o:e] = aid
            out["index"][o:e] = -1 if flat is None else flat
            out["line"][o:e] = line
            out["step"][o:e] = step
            out["site"][o:e] = site
            if with_values:
                out["value"][o:e] = np.nan if values is None or (kind == EventKind.END and not loops_differ) else values
            o = e
        if not with_values:
            del out["value"]
        if (out["site"] < 0).all():
            del out["site"]  # run without a plan: sites unknown  # no values recorded: the trace reports the field as unknown, lazily
        return out

    def where(self, line: int) -> str:
        return f"{self.file}:{line}"

    def lane_name(self, lane: int) -> str:
        b = int(self.block_lin[lane])
        bx, by, bz = (int(self.bid[0][lane]), int(self.bid[1][lane]), int(self.bid[2][lane]))
        tx, ty, tz = (int(self.tid[0][lane]), int(self.tid[1][lane]), int(self.tid[2][lane]))
        return f"thread ({tx}, {ty}, {tz}) of block ({bx}, {by}, {bz}) [linear: block {b}, thread {int(self.thread_lin[lane])}]"

    def warn(self, key, message: str):
        if key not in self._warned and len(self.warnings) < 50:
            self._warned.add(key)
            self.warnings.append(message)

    def kernel_start(self, line: int):
        self._rec(self.lanes, EventKind.START, -1, None, line)

    def kernel_end(self, m, line: int):
        m = m & self.alive
        act = np.flatnonzero(m)
        if len(act):
            self._rec(act, EventKind.END, -1, None, line, values=self.lane_iterations[act].astype(np.float64))
            self.alive[act] = False
