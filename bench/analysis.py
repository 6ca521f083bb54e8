"""Benchmark: load a 10M-event trace and run every analysis on it.

    .venv/bin/python bench/analysis.py [--n 160] [--tile 16] [--repeat 3] [--keep PATH] [--check]

The trace is a synthetic but faithful tiled matrix multiply C = A @ B (N x N float32, T x T tiles in shared
memory), built with numpy in the order gpuviz's CPU executor emits events (block by block, step by step,
lane by lane). Per thread: START, then per tile 2 global loads, 2 shared stores, a barrier, 2T shared loads,
a barrier; then the global store of C and END. N=160, T=16: 100 blocks x 256 threads x 383 events = 9.8M.

Every analysis is timed on a cold cache (intermediate results are cached per trace, so a second call
would be free); the numbers printed are the median of ``--repeat`` runs, measured in this same process
next to the load time, so the ratio analysis/load holds on whatever machine runs it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuviz.model import analysis, analysis_prep  # noqa: E402
from gpuviz.model.trace import ArrayInfo, EventKind as K, Launch, Trace  # noqa: E402
from gpuviz.model.tracefile import load_trace, save_traces  # noqa: E402

SOURCE = '''\
@cuda.jit
def matmul_tiled(A, B, C):
    As = cuda.shared.array((TILE, TILE), float32)
    Bs = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    acc = 0.0
    for m in range(A.shape[1] // TILE):
        As[ty, tx] = A[row, m * TILE + tx]
        Bs[ty, tx] = B[m * TILE + ty, col]
        cuda.syncthreads()
        for k in range(TILE):
            acc += As[ty, k] * Bs[k, tx]
        cuda.syncthreads()
    C[row, col] = acc
'''
FIRST_LINE = 1
LINE = {"def": 2, "load_a": 10, "load_b": 11, "sync1": 12, "fma": 14, "sync2": 15, "store_c": 16}


def tiled_matmul_trace(n: int, tile: int) -> Trace:
    if n % tile:
        raise ValueError(f"N={n} must be a multiple of the tile size {tile}")
    n_tiles = n // tile
    grid = (n_tiles, n_tiles)
    tpb = tile * tile
    A_, B_, C_, AS, BS = range(5)
    arrays = [
        ArrayInfo("A", (n, n), "float32"),
        ArrayInfo("B", (n, n), "float32"),
        ArrayInfo("C", (n, n), "float32"),
        ArrayInfo("As", (tile, tile), "float32", "shared", line=3),
        ArrayInfo("Bs", (tile, tile), "float32", "shared", line=4),
    ]
    # One thread's program as columns: kind, array, line and the index as
    # c0 + c_ty*ty + c_tx*tx + c_by*by + c_bx*bx.
    prog = [(K.START, -1, LINE["def"], 0, 0, 0, 0, 0)]
    for m in range(n_tiles):
        prog += [
            (K.GLOBAL_LOAD, A_, LINE["load_a"], m * tile, n, 1, tile * n, 0),
            (K.SHARED_STORE, AS, LINE["load_a"], 0, tile, 1, 0, 0),
            (K.GLOBAL_LOAD, B_, LINE["load_b"], m * tile * n, n, 1, 0, tile),
            (K.SHARED_STORE, BS, LINE["load_b"], 0, tile, 1, 0, 0),
            (K.BARRIER, -1, LINE["sync1"], 0, 0, 0, 0, 0),
        ]
        for k in range(tile):
            prog += [(K.SHARED_LOAD, AS, LINE["fma"], k, tile, 0, 0, 0), (K.SHARED_LOAD, BS, LINE["fma"], k * tile, 0, 1, 0, 0)]
        prog.append((K.BARRIER, -1, LINE["sync2"], 0, 0, 0, 0, 0))
    prog += [(K.GLOBAL_STORE, C_, LINE["store_c"], 0, n, 1, tile * n, tile), (K.END, -1, LINE["store_c"], 0, 0, 0, 0, 0)]
    p = np.array(prog, dtype=np.int64)
    kind, array, line, c0, c_ty, c_tx, c_by, c_bx = p.T
    n_blocks, n_steps = n_tiles * n_tiles, len(prog)

    # executor order: block-major, then step, then thread: shape (block, step, thread)
    shape = (n_blocks, n_steps, tpb)
    block = np.broadcast_to(np.arange(n_blocks, dtype=np.int32)[:, None, None], shape)
    thread = np.broadcast_to(np.arange(tpb, dtype=np.int32)[None, None, :], shape)
    seq = np.broadcast_to(np.arange(n_steps, dtype=np.int32)[None, :, None], shape)
    tx = np.arange(tpb) % tile
    ty = np.arange(tpb) // tile
    bx = np.arange(n_blocks) % n_tiles
    by = np.arange(n_blocks) // n_tiles
    index = (
        c0[None, :, None]
        + c_ty[None, :, None] * ty[None, None, :]
        + c_tx[None, :, None] * tx[None, None, :]
        + c_by[None, :, None] * by[:, None, None]
        + c_bx[None, :, None] * bx[:, None, None]
    )
    index = np.where(array[None, :, None] >= 0, index, -1)
    events = {
        "block": block.reshape(-1),
        "thread": thread.reshape(-1),
        "seq": seq.reshape(-1),
        "kind": np.broadcast_to(kind[None, :, None], shape).reshape(-1),
        "array": np.broadcast_to(array[None, :, None], shape).reshape(-1),
        "index": index.reshape(-1),
        "line": np.broadcast_to(line[None, :, None], shape).reshape(-1),
        "step": seq.reshape(-1),  # lockstep: every lane of a warp issues step s together
    }
    launch = Launch(
        "matmul_tiled", grid=grid, block=(tile, tile), arrays=arrays, source=SOURCE, source_file="bench_matmul.py",
        first_line=FIRST_LINE, backend="cpu", device="synthetic (bench/analysis.py)",
    )
    return Trace(launch, events)


def timed(fn, repeat: int):
    """(median wall s, min wall s, median CPU s of this process, result) over ``repeat`` runs."""
    times, cpu, result = [], [], None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(times), min(times), statistics.median(cpu), result


def _same(a, b, where: str) -> None:
    if isinstance(a, dict):
        if set(a) != set(b):
            raise AssertionError(f"{where}: keys differ: {sorted(set(a) ^ set(b))}")
        for k in a:
            _same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, (list, tuple)):
        if len(a) != len(b):
            raise AssertionError(f"{where}: {len(a)} vs {len(b)} items")
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray):
        if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
            raise AssertionError(f"{where}: arrays differ")
    elif a != b and not (a != a and b != b):
        raise AssertionError(f"{where}: {a!r} != {b!r}")


def check_paths(trace: Trace) -> None:
    """Every report of the fast path (one chunked pass, small chunks here) equals the general path's."""
    names = ("global_memory", "shared_banks", "races", "divergence")
    reports = []
    saved = analysis._FAST_PATH, analysis_prep._CHUNK
    try:
        for fast, chunk in ((False, saved[1]), (True, 4099)):
            analysis._FAST_PATH, analysis_prep._CHUNK = fast, chunk
            analysis.clear_cache(trace)
            reports.append({name: vars(getattr(analysis, name)(trace)) for name in names} | {"summary": analysis.summary(trace)})
    finally:
        analysis._FAST_PATH, analysis_prep._CHUNK = saved
        analysis.clear_cache(trace)
    _same(reports[0], reports[1], "general vs fast")
    print(f"check: fast path == general path on {len(trace):,} events ({', '.join(names)}, summary)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=160, help="matrix size N (default 160: 9.8M events)")
    ap.add_argument("--tile", type=int, default=16, help="tile size T (default 16)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement; the median is printed")
    ap.add_argument("--keep", type=Path, help="keep the trace file here instead of a temporary folder")
    ap.add_argument("--check", action="store_true",
                    help="first check that the fast path and the general path give identical reports (N=48)")
    args = ap.parse_args(argv)
    load_before = os.getloadavg()[0]
    if args.check:
        check_paths(tiled_matmul_trace(48, args.tile))

    t0 = time.perf_counter()
    trace = tiled_matmul_trace(args.n, args.tile)
    build_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "bench.gpuviz"
        t0 = time.perf_counter()
        save_traces(path, [trace])
        save_s = time.perf_counter() - t0
        size = os.path.getsize(path)
        del trace
        load_med, load_min, load_cpu, trace = timed(lambda: load_trace(path), args.repeat)

    print(f"trace: {trace!r}")
    print(f"events: {len(trace):,}  built in {build_s:.2f} s, saved in {save_s:.2f} s, file {size / 1e6:.1f} MB")
    print(f"{'step':<16}{'median s':>10}{'min s':>9}{'CPU s':>9}{'/ load':>9}")
    print(f"{'load':<16}{load_med:>10.3f}{load_min:>9.3f}{load_cpu:>9.3f}{1.0:>9.2f}")

    def cold(fn):
        def run():
            analysis.clear_cache(trace)
            return fn(trace)

        return run

    results = {}
    for name, fn in [
        ("global_memory", analysis.global_memory),
        ("shared_banks", analysis.shared_banks),
        ("races", analysis.races),
        ("divergence", analysis.divergence),
        ("summary", analysis.summary),
    ]:
        med, best, cpu, results[name] = timed(cold(fn), args.repeat)
        print(f"{name:<16}{med:>10.3f}{best:>9.3f}{cpu:>9.3f}{med / load_med:>9.2f}")
        if name == "summary":
            summary_med, summary_min = med, best
    warm_med, _, _, _ = timed(lambda: analysis.summary(trace), args.repeat)
    print(f"{'summary (warm)':<16}{warm_med:>10.3f}")

    s = results["summary"]
    print(
        f"summary: sectors/request load {s['sectors_per_request']['load']:.2f} store {s['sectors_per_request']['store']:.2f}, "
        f"bank conflicts {s['bank_conflicts']}, races {s['races']}, "
        f"occupancy {s['occupancy']['blocks_per_sm']} blocks/SM ({s['occupancy']['limited_by']}-limited, "
        f"{'estimated' if s['occupancy']['estimated'] else 'recorded'})"
    )
    target = 1.0
    verdict = "meets" if summary_med <= target else ("meets at best" if summary_min <= target else "MISSES")
    print(f"target: summary() on {len(trace):,} events <= {target:.1f} s: {verdict} "
          f"(median {summary_med:.3f} s, best {summary_min:.3f} s; load average {load_before:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after, on {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
