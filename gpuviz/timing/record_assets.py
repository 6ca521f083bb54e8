"""Record, on a machine with an NVIDIA GPU, the traces and timing set shipped in ``assets/recordings``.

    python3 -m gpuviz.timing.record_assets --out DIR [--date 2026-11-29] [--timings-only]

Writes one ``.gpuviz`` trace per bundled kernel (at its default size, or its small size where the default
would make a file of more than ``--max-events`` events), a blocks-on-SMs showcase (mandelbrot 1024 x 1024,
per-warp mode: its blocks take data-dependent times, so the waves are uneven), the GPU timing set as
JSON, the fusion timing set (``out = a * x + b * y``: libraries vs our fused kernel) as JSON, and
``index.json`` with device, driver, date and versions for every file. ``--timings-only`` re-records the two
timing sets and keeps the traces (and their index entries) already in DIR.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from ..capture import capture
from ..capture.backends.gpu.device import device_info, gpu_cuda, gpu_versions
from ..catalog import all_kernels
from ..model.timings import TimingSet, blocks_on_sms
from ..model.tracefile import load_traces, save_traces
from .gpu import _optional_versions, fusion_timings, gpu_timing_set
from .recordings import FUSION_TIMINGS_FILE as FUSION_FILE
from .recordings import INDEX_NAME, write_index


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--date", default=_dt.date.today().isoformat())
    ap.add_argument("--max-events", type=int, default=300_000)
    ap.add_argument("--skip-timings", action="store_true")
    ap.add_argument("--quick-timings", action="store_true")
    ap.add_argument("--timings-only", action="store_true", help="keep DIR's traces; record the timing sets again")
    ap.add_argument("--only", default="", metavar="KERNEL,...",
                    help="record these kernels' traces again (mandelbrot: its blocks-on-SMs showcase too) and keep "
                         "DIR's other files and their index entries; the timing sets are kept as they are")
    opts = ap.parse_args(argv)

    cuda = gpu_cuda()
    dev = device_info(cuda)
    versions = gpu_versions() | {"driver": dev["driver"]}
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)

    def entry(file, kind, title, kernel="", **details):
        return {"file": file, "kind": kind, "title": title, "kernel": kernel, "device": dev["name"],
                "driver": dev["driver"], "date": opts.date, "versions": versions, "details": details}

    if opts.timings_only:
        return _record_timings(opts, cuda, dev, out, entry)
    only = {k.strip() for k in opts.only.split(",") if k.strip()}
    unknown = only - set(all_kernels())
    if unknown:
        ap.error(f"--only: no bundled kernel named {', '.join(sorted(unknown))}")
    entries = _record_traces(opts, only, out, entry)
    if only and "mandelbrot" not in only:
        return _keep_the_rest(out, entries)
    waves, waves_entry = _record_waves(opts, out, entry)
    entries.append(waves_entry)
    if only:
        return _keep_the_rest(out, entries)
    if not opts.skip_timings:
        entries += _timing_sets(opts, dev, out, entry, waves)
    write_index(out, entries)
    return 0


def _record_traces(opts, only: set, out: Path, entry) -> list[dict]:
    """One trace per bundled kernel (``only``: these), at its default size, or its small size where the default
    makes more than ``--max-events`` events; their index entries."""
    entries = []
    for name, spec in all_kernels().items():
        if only and name not in only:
            continue
        t0 = time.perf_counter()
        trace = None
        for size in (spec.default_size, spec.small_size):
            args = spec.make_args(size, np.random.default_rng(0))
            grid, block = spec.launch(size, spec.default_block)
            trace = capture(spec.kernel, grid, block, *args, backend="gpu",
                            meta={"recorded_on": opts.date, "size": size})
            if len(trace) <= opts.max_events:
                break
        file = f"{name}.gpuviz"
        save_traces(out / file, [trace])
        m = trace.launch.meta
        entries.append(entry(file, "trace", f"{name}, {spec.size_label} {size}", name, size=size, events=len(trace),
                             registers_plain=m["plain"]["registers_per_thread"],
                             registers_instrumented=m["instrumented"]["registers_per_thread"],
                             blocks_per_sm_plain=m["plain"]["resident_blocks_per_sm"],
                             blocks_per_sm_instrumented=m["instrumented"]["resident_blocks_per_sm"]))
        print(f"{name:22s} size {size:6d} events {len(trace):8,d} file {os.path.getsize(out / file) / 1e3:8.1f} kB "
              f"regs {m['plain']['registers_per_thread']}->{m['instrumented']['registers_per_thread']} "
              f"{time.perf_counter() - t0:.1f}s", flush=True)
    return entries


def _record_waves(opts, out: Path, entry):
    """Blocks on SMs: many blocks of uneven length (mandelbrot 1024 x 1024, per-warp mode); (trace, index entry)."""
    spec = all_kernels()["mandelbrot"]
    size = 1024
    args = spec.make_args(size, np.random.default_rng(0))
    grid, block = spec.launch(size, spec.default_block)
    waves = capture(spec.kernel, grid, block, *args, backend="gpu", mode="warp", meta={"recorded_on": opts.date})
    save_traces(out / "mandelbrot_waves.gpuviz", [waves])
    print(f"mandelbrot_waves events {len(waves):,} file {os.path.getsize(out / 'mandelbrot_waves.gpuviz') / 1e3:.1f} kB", flush=True)
    return waves, entry("mandelbrot_waves.gpuviz", "trace", f"mandelbrot {size}x{size}, per-warp mode (blocks on SMs)",
                        "mandelbrot", size=size, events=len(waves), mode="warp")


def _keep_the_rest(out: Path, entries: list[dict]) -> int:
    """``--only``: the index of ``out`` with the entries of the files just recorded replaced, the rest kept."""
    path = out / INDEX_NAME
    old = json.loads(path.read_text(encoding="utf-8"))["recordings"] if path.exists() else []
    new = {e["file"]: e for e in entries}
    merged = [new.pop(e["file"], e) for e in old] + list(new.values())
    write_index(out, merged)
    return 0


def _timing_sets(opts, dev, out, entry, waves) -> list[dict]:
    """Record the GPU timing set (with ``waves``' blocks on SMs) and the fusion set; their index entries."""
    ts = gpu_timing_set(label=f"{dev['name']} timings", date=opts.date, quick=opts.quick_timings)
    ts.add(blocks_on_sms(waves))
    ts.save(out / "gpu_timings.json")
    fusion = TimingSet(label=f"{dev['name']}: out = a * x + b * y, library vs fused", processor="gpu", device=dev["name"],
                       driver=dev["driver"], date=opts.date, host=ts.host, versions=ts.versions | _optional_versions(),
                       notes=ts.notes)
    fusion.add(fusion_timings())
    fusion.save(out / FUSION_FILE)
    for s in ts.series + fusion.series:
        print(s.title, flush=True)
        print(s.to_csv(), flush=True)
    return [entry("gpu_timings.json", "timings", f"GPU timings on {dev['name']}", series=len(ts.series)),
            entry(FUSION_FILE, "timings", f"out = a * x + b * y on {dev['name']}: libraries vs one fused kernel",
                  series=len(fusion.series), standalone=True)]  # another operation: never drawn beside a + b


def _record_timings(opts, cuda, dev, out, entry) -> int:
    """``--timings-only``: the timing sets again, the traces and their index entries as they are."""
    index = json.loads((out / INDEX_NAME).read_text(encoding="utf-8"))
    kept = [e for e in index["recordings"] if e["kind"] != "timings"]
    waves = load_traces(out / "mandelbrot_waves.gpuviz")[0]
    write_index(out, kept + _timing_sets(opts, dev, out, entry, waves))
    return 0


if __name__ == "__main__":
    sys.exit(main())
