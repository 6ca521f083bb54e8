"""What recording costs on a real GPU: plain vs instrumented kernel time, trace bytes, copy-back time.

Run on a machine with an NVIDIA GPU (not under NUMBA_ENABLE_CUDASIM):

    python3 bench/gpu_overhead.py [--out bench/results/gpu_overhead_h200.md]

Cases: tiled matmul N=1024 (16x16 blocks) and vector add n=2^24 (256 threads per block), each as

* plain        the user's kernel untouched
* thread       every event of every thread (timestamps and SM at start, barriers, end)
* thread, global  the same without shared-memory accesses (record="global")
* warp         one record per instruction of lane 0 of each warp: active mask and every converged lane's
               exact index (base + lane * stride, or a 32-wide slab row written by the lanes together)
* warp, vote   the same with every index checked by a warp vote: vector add's a[i], b[i], c[i] (i = cuda.grid(1),
               a 1-D block) are otherwise recorded as "lane 0's index + lane" without one
* N blocks     thread mode recording only those blocks, with one kernel that branches once per thread:
               recorded blocks run the instrumented body, the others the user's own code. "1 block (0)"
               is dispatched first, "1 block (last)" in the last wave; "132 blocks" is one per SM's worth
               (blocks 0..131), "132 spread" evenly over the grid; "regs capped" compiles that kernel with
               max_registers = the plain kernel's registers (the plain kernel's occupancy); "occupancy regs"
               with max_registers="occupancy": the most registers that keep the plain kernel's blocks/SM;
               ", warp": those blocks recorded per warp instead of per thread

``--matmul`` / ``--vector`` pick rows (labels separated by ";"). For a before/after comparison on one
device in one run, check out the older recorder in a second worktree and run both there.

Kernel times are CUDA-event medians of repeats after a warm-up, with the host's enqueue of the launch
hidden behind a one-thread hold kernel (gpuviz.capture.backends.gpu.device.DeviceTimer; the enqueue time and the
idle-GPU event time are printed beside it); the instrumented time is the recording run alone (the counting pass that sizes the buffers is reported apart). Copy-back is device to pinned
host memory, in chunks through one reused pinned buffer. "write floor" is the trace bytes over the
device-to-device copy bandwidth measured in the same run: no recording that writes those bytes can take
less. Targets: instrumented/plain <= 1.3x for tiled matmul, per-warp mode <= 2x for vector add.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gpuviz.capture.backends.gpu.device import EventTimer, device_info, gpu_cuda, gpu_versions  # noqa: E402


def recorder_class():
    from gpuviz.capture.backends.gpu.launch import GpuRecording

    return GpuRecording


CHUNK_BYTES = 1 << 30  # copy-back goes through one reused pinned buffer of this size


def copy_back_seconds(cuda, bufs, pinned) -> float:
    """Device -> pinned host time of the trace buffers, chunked."""
    from gpuviz.capture.backends.gpu.launch import GpuRecording
    from gpuviz.capture.backends.gpu.layout import BUFFERS

    total = 0.0
    for name in GpuRecording.FETCHED:
        d = bufs[BUFFERS.index(name)]
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
    """Median device seconds of one call of ``fn`` (CUDA events, one warm-up, the host's enqueue hidden
    behind a hold kernel): the same measure as gpuviz.timing."""
    from gpuviz.timing.gpu import median_event_seconds

    return median_event_seconds(cuda, fn, repeats=repeats)


def launch_times(cuda, fn, repeats) -> dict:
    """Device ms (host enqueue hidden), the host's enqueue us, and ms between events on an idle GPU."""
    from gpuviz.timing.gpu import idle_gpu_event_seconds, median_device_and_host_seconds

    device, host = median_device_and_host_seconds(cuda, fn, repeats=repeats)
    idle = idle_gpu_event_seconds(cuda, fn, repeats=repeats)
    return {"kernel_ms": device * 1e3, "enqueue_us": host * 1e6, "idle_ms": idle * 1e3}


def copy_bandwidth(cuda, nbytes=1 << 30, repeats=5) -> float:
    """Device-to-device copy bandwidth (bytes read + written per second): the ceiling for trace writes."""
    src = cuda.device_array(nbytes // 4, np.float32)
    dst = cuda.device_array(nbytes // 4, np.float32)
    secs = median_launch(cuda, lambda: dst.copy_to_device(src), repeats)
    return 2 * nbytes / secs


def configs_for(n_blocks):
    one_wave = list(range(min(132, n_blocks)))
    spread = sorted(set(np.linspace(0, n_blocks - 1, min(132, n_blocks)).astype(int).tolist()))
    return {
        "thread": dict(mode="thread"),
        "thread, global": dict(mode="thread", record="global"),
        "warp": dict(mode="warp"),
        "warp, global": dict(mode="warp", record="global"),
        "1 block (0)": dict(record_blocks=[0]),
        "1 block (last)": dict(record_blocks=[n_blocks - 1]),
        "first 1% blocks": dict(record_blocks=range(max(1, n_blocks // 100))),
        "132 blocks": dict(record_blocks=one_wave),
        "132 spread": dict(record_blocks=spread),
        "132 blocks, global": dict(record_blocks=one_wave, record="global"),
        "132 blocks, regs capped": dict(record_blocks=one_wave, max_registers="plain"),
        "132 blocks, global, occupancy regs": dict(record_blocks=one_wave, record="global", max_registers="occupancy"),
        "warp, occupancy regs": dict(mode="warp", max_registers="occupancy"),
        "warp, vote": dict(mode="warp", lane_linear=False),  # every index checked by a warp vote
        "132 blocks, warp": dict(record_blocks=one_wave, mode="warp"),
        "first 1% blocks, warp": dict(record_blocks=range(max(1, n_blocks // 100)), mode="warp"),
    }


def run_case(cuda, name, kernel, grid, block, args, repeats, pinned, labels, bandwidth):
    from gpuviz.capture.backends.gpu.device import kernel_resources
    from gpuviz.capture.backends.gpu.layout import BUFFERS

    GpuRecording = recorder_class()
    rows = []
    rec0 = GpuRecording(kernel, grid, block, args)
    plain_args = rec0.device_args(fresh=True)
    pt = launch_times(cuda, lambda: rec0.plain[grid, block](*plain_args), repeats)
    plain = pt["kernel_ms"] / 1e3
    res_plain = kernel_resources(cuda, rec0.plain, plain_args, block)
    rows.append(dict(case=name, mode="plain", **pt, ratio=1.0, idle_ratio=1.0, events=0, trace_mb=0.0, floor_ms=0.0,
                     count_ms=0.0, copy_ms=0.0, regs=res_plain["registers_per_thread"],
                     blocks_per_sm=res_plain["resident_blocks_per_sm"], layout="", slab_rows=0))
    n_blocks = int(np.prod(grid))
    configs = configs_for(n_blocks)
    for label in labels:
        opts = dict(configs[label])
        if opts.get("max_registers") == "plain":
            opts["max_registers"] = res_plain["registers_per_thread"]
        try:
            rec = GpuRecording(kernel, grid, block, args, **opts)
            dargs = rec.device_args(fresh=True)
            counts = rec.count(dargs)
            rec.count(dargs)  # the first counted its compile's module load; time the second
            count_s = rec.timings["count_kernel_s"]
            bufs = rec.allocate(counts)
            rec.record(dargs, bufs)
            launch_args = rec.record_args
            it = launch_times(cuda, lambda: rec.record_variant.dispatcher[grid, block](*launch_args), repeats)
            inst = it["kernel_ms"] / 1e3
            drop = bufs[BUFFERS.index("drop")].copy_to_host()
            copy_s = copy_back_seconds(cuda, bufs, pinned)
            res = kernel_resources(cuda, rec.record_variant.dispatcher, launch_args, block)
            nbytes = rec.trace_bytes()
            if getattr(rec, "max_registers", None) is not None and "regs" in label:
                label = f"{label} ({rec.max_registers})"
            rows.append(dict(case=name, mode=label, **it, ratio=inst / plain, idle_ratio=it["idle_ms"] / pt["idle_ms"],
                             events=int(rec.totals[0]),
                             trace_mb=nbytes / 1e6, floor_ms=nbytes / bandwidth * 1e3, count_ms=count_s * 1e3,
                             copy_ms=copy_s * 1e3, regs=res["registers_per_thread"],
                             blocks_per_sm=res["resident_blocks_per_sm"], dropped=int(drop[:3].sum()),
                             warp_lane_events_not_recorded=int(drop[3]), layout="uniform" if rec.uniform else "table",
                             slab_rows=int(rec.buffer_lengths[2]), recorded_blocks=len(rec.blocks)))
            del bufs, dargs
        except Exception as exc:  # noqa: BLE001 - one broken configuration must not cost the rest of the run
            import traceback

            traceback.print_exc()
            rows.append(dict(case=name, mode=label, error=f"{type(exc).__name__}: {exc}"[:300]))
        cuda.current_context().deallocations.clear()
    return rows


MATMUL_LABELS = ("thread", "thread, global", "warp", "warp, global", "1 block (0)", "1 block (last)", "first 1% blocks",
                 "132 blocks", "132 spread", "132 blocks, global", "132 blocks, regs capped", "132 blocks, warp")
VECTOR_LABELS = ("thread", "warp", "warp, vote", "1 block (0)", "1 block (last)", "first 1% blocks", "132 blocks")


def previous_table(path) -> list[str]:
    """The table lines of an earlier result file (kept below the new one for comparison)."""
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        text = f.read()
    if "## Before" in text:  # already a combined file: keep its "before" section as it is
        return text[text.index("## Before"):].rstrip().splitlines()
    lines = [ln for ln in text.splitlines() if ln.startswith("|") or ln.startswith("target ")]
    return ["## Before (the same bench on the same device, earlier recorder: per-event block checks, offset table, "
            "per-warp mode = lane 0's own events only)", ""] + lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the markdown table here (and a .json beside it)")
    ap.add_argument("--previous", help="an earlier result file whose table is kept below the new one")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--matmul-n", type=int, default=1024)
    ap.add_argument("--vector-n", type=int, default=1 << 24)
    ap.add_argument("--date", default=_dt.date.today().isoformat())
    ap.add_argument("--matmul", help="matmul rows to run, ';'-separated labels (default: all)")
    ap.add_argument("--vector", help="vector add rows to run, ';'-separated labels (default: all)")
    opts = ap.parse_args(argv)
    matmul_labels = tuple(x.strip() for x in opts.matmul.split(";") if x.strip()) if opts.matmul else MATMUL_LABELS
    vector_labels = tuple(x.strip() for x in opts.vector.split(";") if x.strip()) if opts.vector else VECTOR_LABELS
    before = previous_table(opts.previous)

    cuda = gpu_cuda()
    from gpuviz.catalog import kernel_module
    _matmul = kernel_module("matmul")
    TILE, matmul_tiled = _matmul.TILE, _matmul.matmul_tiled
    vector_add = kernel_module("vector_add").vector_add

    dev = device_info(cuda)
    rng = np.random.default_rng(0)
    bandwidth = copy_bandwidth(cuda)
    pinned = cuda.pinned_array(CHUNK_BYTES, np.uint8)
    rows = []
    N = opts.matmul_n
    A, B = rng.random((N, N), dtype=np.float32), rng.random((N, N), dtype=np.float32)
    C = np.zeros((N, N), np.float32)
    grid = ((N + TILE - 1) // TILE, (N + TILE - 1) // TILE)
    rows += run_case(cuda, f"matmul_tiled N={N}", matmul_tiled, grid, (TILE, TILE), [A, B, C, N], opts.repeats, pinned,
                     matmul_labels, bandwidth)
    n = opts.vector_n
    a, b, c = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32), np.zeros(n, np.float32)
    rows += run_case(cuda, f"vector_add n=2^{n.bit_length() - 1}", vector_add, ((n + 255) // 256,), (256,), [a, b, c, n],
                     opts.repeats, pinned, vector_labels, bandwidth)

    head = (f"# gpuviz recording overhead\n\ndevice: {dev['name']} (cc {'.'.join(map(str, dev['compute_capability']))}, "
            f"{dev['sm_count']} SMs), driver {dev['driver']}, date {opts.date}\n"
            f"versions: {', '.join(f'{k} {v}' for k, v in gpu_versions().items())}\n"
            f"device-to-device copy bandwidth (read + write): {bandwidth / 1e9:.0f} GB/s\n\n"
            "kernel = CUDA-event median of the recording run alone, with a one-thread kernel holding the GPU while the "
            "host enqueues the launch (device time only); enqueue = the host's time to enqueue one launch (numba's "
            "argument checks and packing); idle-GPU = the same events around a launch on an idle GPU, which also "
            "count the part of the enqueue the GPU waited for (the measure of earlier runs); count = the counting pass "
            "that sizes the buffers; copy = device -> pinned host of the whole trace; write floor = trace bytes / "
            "copy bandwidth.\n\n")
    table = ["| case | mode | kernel ms | x plain | enqueue us | idle-GPU ms | idle x plain | events | trace MB | "
             "write floor ms | count ms | copy-back ms | regs | blocks/SM | layout |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        if "error" in r:
            table.append(f"| {r['case']} | {r['mode']} | failed: {r['error']} ||||||||||||")
            continue
        table.append(f"| {r['case']} | {r['mode']} | {r['kernel_ms']:.3f} | {r['ratio']:.2f} | {r['enqueue_us']:.0f} | "
                     f"{r['idle_ms']:.3f} | {r['idle_ratio']:.2f} | {r['events']:,} | "
                     f"{r['trace_mb']:.1f} | {r['floor_ms']:.3f} | {r['count_ms']:.3f} | {r['copy_ms']:.1f} | {r['regs']} | "
                     f"{r['blocks_per_sm']} | {r['layout']} |")
    ok = [r for r in rows if "error" not in r]
    mm = {r["mode"]: r for r in ok if r["case"].startswith("matmul")}
    va = {r["mode"]: r for r in ok if r["case"].startswith("vector")}

    def verdict(r, limit):
        return f"{r['ratio']:.2f}x ({'met' if r['ratio'] <= limit else 'missed'})"

    lines = ["", "Targets:", ""]
    for label, r in mm.items():
        if label != "plain":
            lines.append(f"- tiled matmul {label}: {verdict(r, 1.3)} against <= 1.3x")
    for label, r in va.items():
        if label.startswith("warp"):
            lines.append(f"- vector add per-warp ({label}): {verdict(r, 2.0)} against <= 2x")
    plain_mm = mm.get("plain")
    if plain_mm and "thread" in mm:
        t = mm["thread"]
        lines.append(f"- full per-thread trace of tiled matmul: {t['trace_mb']:,.0f} MB; writing it alone takes >= "
                     f"{t['floor_ms']:.2f} ms at {bandwidth / 1e9:.0f} GB/s, {t['floor_ms'] / plain_mm['kernel_ms']:.1f}x the "
                     f"plain kernel's {plain_mm['kernel_ms']:.3f} ms")
    if plain_mm and "thread, global" in mm:
        t = mm["thread, global"]
        lines.append(f"- the same without shared accesses (record='global'): {t['trace_mb']:,.0f} MB, >= {t['floor_ms']:.2f} ms "
                     f"to write, {t['floor_ms'] / plain_mm['kernel_ms']:.1f}x plain")
    text = head + "\n".join(table + lines) + "\n"
    if before:
        text += "\n" + "\n".join(before) + "\n"
    print(text)
    if opts.out:
        with open(opts.out, "w") as f:
            f.write(text)
        with open(os.path.splitext(opts.out)[0] + ".json", "w") as f:
            json.dump({"device": dev, "date": opts.date, "versions": gpu_versions(), "copy_bandwidth_Bps": bandwidth,
                       "rows": rows}, f, indent=1)
    return rows


if __name__ == "__main__":
    main()
