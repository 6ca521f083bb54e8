"""What recording costs on a real GPU: plain vs instrumented kernel time, trace bytes, copy-back time.

Run on a machine with an NVIDIA GPU (not under NUMBA_ENABLE_CUDASIM):

    python3 bench/gpu_overhead.py [--out bench/results/gpu_overhead_<device>_<date>.md]

Cases: tiled matmul N=1024 (16x16 blocks) and vector add n=2^24 (256 threads per block), each as

* plain        the user's kernel untouched
* thread       every event of every thread (timestamps and SM at start, barriers, end)
* warp         lane 0 of each warp records its events and the active mask (per-warp mode)
* first 1% blocks  thread mode, recording only the first 1% of the blocks (the others run the instrumented
               code with recording off): what the app uses for launches too large to show whole. The first
               blocks are dispatched first, so their longer run overlaps the later waves of other SMs

Kernel times are CUDA-event medians of repeats after a warm-up; the instrumented time is the recording
run alone (the counting pass that sizes the buffers is reported apart). Copy-back is device to pinned
host memory, in chunks through one reused pinned buffer. Targets: instrumented/plain <= 1.3x for
tiled matmul, per-warp mode <= 2x for vector add.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gpuviz.capture.gpu import EventTimer, GpuRecording, device_info, gpu_cuda, gpu_versions  # noqa: E402

CHUNK_BYTES = 1 << 30


def copy_back_seconds(cuda, bufs, pinned) -> float:
    """Device -> pinned host time of the trace buffers (code, idx, mask, time, sm, cnt), chunked."""
    total = 0.0
    for d in (bufs[0], bufs[1], bufs[2], bufs[3], bufs[4], bufs[8]):
        flat = d.reshape(d.size) if d.ndim > 1 else d
        step = max(1, CHUNK_BYTES // flat.dtype.itemsize)
        view = pinned.view(flat.dtype)
        for i in range(0, flat.size, step):
            j = min(flat.size, i + step)
            t = EventTimer(cuda)
            with t:
                flat[i:j].copy_to_host(view[: j - i])
            total += t.seconds
    return total


def median_launch(cuda, fn, repeats):
    fn()
    cuda.synchronize()
    times = []
    for _ in range(repeats):
        t = EventTimer(cuda)
        with t:
            fn()
        times.append(t.seconds)
    return float(np.median(times))


def run_case(cuda, name, kernel, grid, block, args, repeats, pinned):
    rows = []
    rec0 = GpuRecording(kernel, grid, block, args)
    plain_args = rec0.device_args(fresh=True)
    plain = median_launch(cuda, lambda: rec0.plain[grid, block](*plain_args), repeats)
    from gpuviz.capture.gpu import kernel_resources

    res_plain = kernel_resources(cuda, rec0.plain, plain_args, block)
    rows.append(dict(case=name, mode="plain", kernel_ms=plain * 1e3, ratio=1.0, events=0, trace_mb=0.0, count_ms=0.0,
                     copy_ms=0.0, regs=res_plain["registers_per_thread"], blocks_per_sm=res_plain["resident_blocks_per_sm"]))
    n_blocks = int(np.prod(grid))
    for mode, record_blocks, label in (("thread", None, "thread"), ("warp", None, "warp"),
                                       ("thread", range(max(1, n_blocks // 100)), "first 1% blocks")):
        rec = GpuRecording(kernel, grid, block, args, mode=mode, record_blocks=record_blocks)
        dargs = rec.device_args(fresh=True)
        counts = rec.count(dargs)
        rec.count(dargs)  # the first counted its compile's module load; time the second
        count_s = rec.timings["count_kernel_s"]
        bufs = rec.allocate(counts)
        rec.record(dargs, bufs)
        launch_args = rec.record_args
        inst = median_launch(cuda, lambda: rec.record_variant.dispatcher[grid, block](*launch_args), repeats)
        drop = bufs[9].copy_to_host()
        copy_s = copy_back_seconds(cuda, bufs, pinned)
        res = kernel_resources(cuda, rec.record_variant.dispatcher, launch_args, block)
        rows.append(dict(case=name, mode=label, kernel_ms=inst * 1e3, ratio=inst / plain, events=int(rec.totals[0]),
                         trace_mb=rec.trace_bytes() / 1e6, count_ms=count_s * 1e3, copy_ms=copy_s * 1e3,
                         regs=res["registers_per_thread"], blocks_per_sm=res["resident_blocks_per_sm"], dropped=int(drop.sum())))
        del bufs, dargs
        cuda.current_context().deallocations.clear()
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the markdown table here (and a .json beside it)")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--matmul-n", type=int, default=1024)
    ap.add_argument("--vector-n", type=int, default=1 << 24)
    ap.add_argument("--date", default=_dt.date.today().isoformat())
    opts = ap.parse_args(argv)

    cuda = gpu_cuda()
    from kernels.matmul import TILE, matmul_tiled
    from kernels.vector_add import vector_add

    dev = device_info(cuda)
    rng = np.random.default_rng(0)
    pinned = cuda.pinned_array(CHUNK_BYTES, np.uint8)
    rows = []
    N = opts.matmul_n
    A, B = rng.random((N, N), dtype=np.float32), rng.random((N, N), dtype=np.float32)
    C = np.zeros((N, N), np.float32)
    grid = ((N + TILE - 1) // TILE, (N + TILE - 1) // TILE)
    rows += run_case(cuda, f"matmul_tiled N={N}", matmul_tiled, grid, (TILE, TILE), [A, B, C, N], opts.repeats, pinned)
    n = opts.vector_n
    a, b, c = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32), np.zeros(n, np.float32)
    rows += run_case(cuda, f"vector_add n=2^{n.bit_length() - 1}", vector_add, ((n + 255) // 256,), (256,), [a, b, c, n],
                     opts.repeats, pinned)

    head = (f"# gpuviz recording overhead\n\ndevice: {dev['name']} (cc {'.'.join(map(str, dev['compute_capability']))}, "
            f"{dev['sm_count']} SMs), driver {dev['driver']}, date {opts.date}\n"
            f"versions: {', '.join(f'{k} {v}' for k, v in gpu_versions().items())}\n\n"
            "kernel = CUDA-event median of the recording run alone; count = the counting pass that sizes the buffers; "
            "copy = device -> pinned host of the whole trace.\n\n")
    table = ["| case | mode | kernel ms | x plain | events | trace MB | count ms | copy-back ms | regs | blocks/SM |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        table.append(f"| {r['case']} | {r['mode']} | {r['kernel_ms']:.3f} | {r['ratio']:.2f} | {r['events']:,} | "
                     f"{r['trace_mb']:.1f} | {r['count_ms']:.3f} | {r['copy_ms']:.1f} | {r['regs']} | {r['blocks_per_sm']} |")
    mm = {r["mode"]: r["ratio"] for r in rows if r["case"].startswith("matmul")}
    va = {r["mode"]: r["ratio"] for r in rows if r["case"].startswith("vector")}
    verdict = [
        "",
        f"target tiled matmul instrumented/plain <= 1.3x: thread {mm['thread']:.2f}x "
        f"({'met' if mm['thread'] <= 1.3 else 'missed'}), warp {mm['warp']:.2f}x "
        f"({'met' if mm['warp'] <= 1.3 else 'missed'}), first 1% blocks {mm['first 1% blocks']:.2f}x ({'met' if mm['first 1% blocks'] <= 1.3 else 'missed'})",
        f"target vector add per-warp <= 2x: {va['warp']:.2f}x ({'met' if va['warp'] <= 2 else 'missed'}); "
        f"thread mode {va['thread']:.2f}x",
    ]
    text = head + "\n".join(table + verdict) + "\n"
    print(text)
    if opts.out:
        with open(opts.out, "w") as f:
            f.write(text)
        with open(os.path.splitext(opts.out)[0] + ".json", "w") as f:
            json.dump({"device": dev, "date": opts.date, "versions": gpu_versions(), "rows": rows}, f, indent=1)
    return rows


if __name__ == "__main__":
    main()
