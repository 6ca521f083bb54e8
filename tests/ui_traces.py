"""Hand-made traces for the frames, playback and app tests (and the GUI benchmark).

Each builder runs a tiny vectorised SIMT "program" over every thread of a launch: one instruction after
another, each with a kind, an array element per thread, a source line and an optional lane mask. The
warp's issue step is the instruction's position, so lanes masked off an instruction are diverged at
that step, exactly as the gpuviz CPU executor records it. Sizes up to millions of threads build in
well under a second, with no numba.
"""

from __future__ import annotations

import numpy as np

from gpuviz.model.trace import ArrayInfo, EventKind, Launch, Trace

K = EventKind


class _Program:
    def __init__(self, grid, block):
        self.grid = tuple(grid) + (1,) * (3 - len(grid))
        self.block = tuple(block) + (1,) * (3 - len(block))
        T = self.block[0] * self.block[1] * self.block[2]
        nb = self.grid[0] * self.grid[1] * self.grid[2]
        g = np.arange(nb * T, dtype=np.int64)
        self.blk = g // T
        self.thr = g % T
        self.tx = self.thr % self.block[0]
        self.ty = (self.thr // self.block[0]) % self.block[1]
        self.bx = self.blk % self.grid[0]
        self.by = (self.blk // self.grid[0]) % self.grid[1]
        self.rows: list[tuple] = []
        self.step = 0

    def emit(self, kind, line, array=-1, index=None, mask=None, value=None):
        m = np.ones(len(self.blk), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        idx = np.full(int(m.sum()), -1, dtype=np.int64) if index is None else np.broadcast_to(index, m.shape)[m]
        val = np.full(int(m.sum()), np.nan) if value is None else np.broadcast_to(value, m.shape)[m].astype(float)
        self.rows.append((self.blk[m], self.thr[m], int(kind), array, idx, line, self.step, val))
        self.step += 1

    def trace(self, name, arrays, source, first_line=1) -> Trace:
        cols = {k: [] for k in ("block", "thread", "kind", "array", "index", "line", "step", "value")}
        for b, t, kind, array, idx, line, step, val in self.rows:
            n = len(b)
            cols["block"].append(b)
            cols["thread"].append(t)
            cols["kind"].append(np.full(n, kind))
            cols["array"].append(np.full(n, array))
            cols["index"].append(idx)
            cols["line"].append(np.full(n, line))
            cols["step"].append(np.full(n, step))
            cols["value"].append(val)
        ev = {k: np.concatenate(v) for k, v in cols.items()}
        # per-thread sequence numbers: rows were emitted instruction by instruction
        order = np.lexsort((ev["step"], ev["thread"], ev["block"]))
        gt = ev["block"][order].astype(np.int64) * 1_000_003 + ev["thread"][order]
        start = np.r_[True, gt[1:] != gt[:-1]]
        pos = np.arange(len(order))
        seq_sorted = pos - np.maximum.accumulate(np.where(start, pos, 0))
        ev["seq"] = np.empty(len(order), dtype=np.int32)
        ev["seq"][order] = seq_sorted
        launch = Launch(
            kernel_name=name,
            grid=self.grid,
            block=self.block,
            arrays=arrays,
            source=source,
            source_file=f"<{name}>",
            first_line=first_line,
            backend="cpu",
            device="hand-made test trace",
        )
        return Trace(launch, ev)


VECTOR_ADD_SOURCE = """\
@cuda.jit
def vector_add(a, b, c):
    i = cuda.grid(1)
    if i < c.size:
        c[i] = a[i] + b[i]
"""


def vector_add_trace(n: int = 200, block: int = 64) -> Trace:
    """c = a + b over ``n`` elements; the last block's tail lanes are masked off (diverged)."""
    grid = -(-n // block)
    p = _Program((grid,), (block,))
    i = p.blk * block + p.thr
    inb = i < n
    p.emit(K.START, 2)
    p.emit(K.GLOBAL_LOAD, 5, 0, i, inb, value=i * 1.0)
    p.emit(K.GLOBAL_LOAD, 5, 1, i, inb, value=i * 2.0)
    p.emit(K.GLOBAL_STORE, 5, 2, i, inb, value=i * 3.0)
    p.emit(K.END, 5)
    arrays = [ArrayInfo(name, (n,), "float32") for name in ("a", "b", "c")]
    return p.trace("vector_add", arrays, VECTOR_ADD_SOURCE)


MATMUL_SOURCE = """\
@cuda.jit
def matmul_tiled(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    acc = 0.0
    for ph in range(C.shape[0] // TILE):
        sA[ty, tx] = A[row, ph * TILE + tx]
        sB[ty, tx] = B[ph * TILE + ty, col]
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()
    C[row, col] = acc
"""


def matmul_tiled_trace(n: int = 16, tile: int = 8) -> Trace:
    """Tiled matmul C = A @ B (n x n) with TILE x TILE blocks: shared tiles and two barriers per phase."""
    if n % tile:
        raise ValueError("n must be a multiple of tile")
    g = n // tile
    p = _Program((g, g), (tile, tile))
    row = p.by * tile + p.ty
    col = p.bx * tile + p.tx
    p.emit(K.START, 2)
    for ph in range(n // tile):
        p.emit(K.GLOBAL_LOAD, 10, 0, row * n + ph * tile + p.tx)
        p.emit(K.SHARED_STORE, 10, 3, p.ty * tile + p.tx)
        p.emit(K.GLOBAL_LOAD, 11, 1, (ph * tile + p.ty) * n + col)
        p.emit(K.SHARED_STORE, 11, 4, p.ty * tile + p.tx)
        p.emit(K.BARRIER, 12)
        for k in range(tile):
            p.emit(K.SHARED_LOAD, 14, 3, p.ty * tile + k)
            p.emit(K.SHARED_LOAD, 14, 4, k * tile + p.tx)
        p.emit(K.BARRIER, 15)
    p.emit(K.GLOBAL_STORE, 16, 2, row * n + col)
    p.emit(K.END, 16)
    arrays = [
        ArrayInfo("A", (n, n), "float32"),
        ArrayInfo("B", (n, n), "float32"),
        ArrayInfo("C", (n, n), "float32"),
        ArrayInfo("sA", (tile, tile), "float32", space="shared", line=3),
        ArrayInfo("sB", (tile, tile), "float32", space="shared", line=4),
    ]
    return p.trace("matmul_tiled", arrays, MATMUL_SOURCE)


REDUCE_SOURCE = """\
@cuda.jit
def block_sum(x, out):
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    s[t] = x[cuda.grid(1)]
    cuda.syncthreads()
    stride = cuda.blockDim.x // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        out[cuda.blockIdx.x] = s[0]
"""


def reduction_trace(n_blocks: int = 2, block: int = 64) -> Trace:
    """Shared-memory tree reduction: lanes drop out stride by stride (divergence), a barrier per level."""
    p = _Program((n_blocks,), (block,))
    t = p.thr
    gid = p.blk * block + t
    p.emit(K.START, 2)
    p.emit(K.GLOBAL_LOAD, 5, 0, gid, value=np.ones(len(gid)))
    p.emit(K.SHARED_STORE, 5, 2, t)
    p.emit(K.BARRIER, 6)
    stride = block // 2
    while stride > 0:
        m = t < stride
        p.emit(K.SHARED_LOAD, 10, 2, t, m)
        p.emit(K.SHARED_LOAD, 10, 2, t + stride, m)
        p.emit(K.SHARED_STORE, 10, 2, t, m)
        p.emit(K.BARRIER, 11)
        stride //= 2
    p.emit(K.SHARED_LOAD, 14, 2, np.zeros_like(t), t == 0)
    p.emit(K.GLOBAL_STORE, 14, 1, p.blk, t == 0)
    p.emit(K.END, 14)
    arrays = [
        ArrayInfo("x", (n_blocks * block,), "float32"),
        ArrayInfo("out", (n_blocks,), "float32"),
        ArrayInfo("s", (block,), "float32", space="shared", line=3),
    ]
    return p.trace("block_sum", arrays, REDUCE_SOURCE)


def large_trace(n_threads: int = 1 << 20, block: int = 256) -> Trace:
    """A vector-add-shaped trace of ``n_threads`` threads on a 2-d grid, for benchmarks and soak tests."""
    n_blocks = n_threads // block
    gx = int(2 ** np.ceil(np.log2(np.sqrt(n_blocks))))
    gy = -(-n_blocks // gx)
    p = _Program((gx, gy), (block,))
    i = p.blk * block + p.thr
    p.emit(K.START, 2)
    p.emit(K.GLOBAL_LOAD, 5, 0, i % n_threads)
    p.emit(K.GLOBAL_LOAD, 5, 1, i % n_threads)
    p.emit(K.GLOBAL_STORE, 5, 2, i % n_threads)
    p.emit(K.END, 5)
    arrays = [ArrayInfo(name, (n_threads,), "float32") for name in ("a", "b", "c")]
    return p.trace("vector_add", arrays, VECTOR_ADD_SOURCE)
