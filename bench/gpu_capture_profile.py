"""Where a GPU capture's seconds go: one shard of numba-cuda's corpus captured cold, then warm, each in one fresh
process under cProfile, with the capture's own split (``launch.timings``) per launch.

    python3 bench/gpu_capture_profile.py [--shard 0/8] [--only MODULE ...] [--out DIR]    (on a machine with a GPU)

bench/gpu_capture_speed.py says how far the capture is from numba's own launch over the whole corpus (16 processes
time-sharing one GPU); this says why, in one uncontended process per pass. Three passes, each one process: **cold** (every cache empty), **new kernel**
(the kernels' own variants, rewrites and plain copies removed from the disk cache, gpuviz's recorders kept: a kernel
never captured before on a machine where gpuviz has run) and **warm** (everything kept). Written to ``--out`` per
pass: ``<pass>.json`` (every launch's seconds, split and variant origins) and ``<pass>.prof.txt`` (cProfile's top
functions by cumulative and by own time), and ``summary.txt``. ``--only`` keeps the launches of test modules whose
name ends with one of the words given (``test_atomics``).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _worker(shard: str, out: Path, only: list[str]) -> None:
    from numba import cuda

    from bench.corpus import choose_target, shard_of
    from tests.corpus_support import Rebuilder, decode_value, load

    choose_target("gpu")
    import gpuviz

    index, arrays = load()
    rb = Rebuilder(index, arrays)
    cuda.current_context()
    i, n = (int(x) for x in shard.split("/"))
    rows, profile = [], cProfile.Profile()
    for pos, launch in shard_of(index["launches"], (i, n)):
        if "unstorable" in launch or "kernel" not in launch:
            continue
        if only and not any(launch["module"].endswith(word) for word in only):
            continue
        try:
            kernel = rb.function(launch["kernel"])
            args = [decode_value(e, rb.arrays) for e in launch["args"]]
        except Exception:  # noqa: BLE001 - the corpus cannot rebuild it: nothing to time
            continue
        t0 = time.perf_counter()
        profile.enable()
        try:
            trace = gpuviz.capture(kernel, tuple(launch["grid"]), tuple(launch["block"]), *args, backend="gpu",
                                   lockstep=False, dynamic_shared_bytes=launch.get("dynshared", 0), repeats=1)
            timings, variants, error = dict(trace.launch.timings), dict(trace.launch.meta.get("variants", {})), None
            extra = {k: trace.launch.meta.get(k) for k in ("recorders", "sizing")}
        except Exception as exc:  # noqa: BLE001 - refused or raised: timed all the same, said so
            timings, variants, error = {}, {}, f"{type(exc).__name__}: {str(exc)[:120]}"
            extra = {}
        finally:
            profile.disable()
        rows.append({"pos": pos, "module": launch["module"], "kernel": launch.get("kernel_name"),
                     "s": time.perf_counter() - t0,
                     "timings": timings, "variants": variants, "error": error, **extra})
    out.with_suffix(".json").write_text(json.dumps(rows))
    text = io.StringIO()
    stats = pstats.Stats(profile, stream=text)
    stats.sort_stats("cumulative").print_stats(70)
    stats.sort_stats("tottime").print_stats(40)
    out.with_suffix(".prof.txt").write_text(text.getvalue())


def _summary(name: str, rows: list[dict]) -> str:
    ok = [r for r in rows if not r["error"]]
    lines = [f"{name}: {len(rows)} launches ({len(rows) - len(ok)} raised), {sum(r['s'] for r in rows):.1f} s in all, "
             f"median {statistics.median(r['s'] for r in rows):.3f} s"]
    firsts, seen = [], set()
    for r in rows:
        if r["kernel"] not in seen:
            seen.add(r["kernel"])
            firsts.append(r["s"])
    lines.append(f"  a kernel's first capture: {len(firsts)} kernels, median {statistics.median(firsts):.3f} s, "
                 f"sum {sum(firsts):.1f} s; the other launches sum {sum(r['s'] for r in rows) - sum(firsts):.1f} s")
    keys = sorted({k for r in ok for k in r["timings"] if k.endswith("_s")})
    for k in keys:
        lines.append(f"  {k:28s} sum {sum(r['timings'].get(k, 0) for r in ok):8.2f} s")
    origins = {}
    for r in ok:
        for v in r["variants"].values():
            origins[v] = origins.get(v, 0) + 1
    lines.append(f"  variants: {origins}")
    lines.append("  the slowest launches (seconds, the split over 0.01 s, where each variant came from):")
    for r in sorted(rows, key=lambda r: -r["s"])[:12]:
        split = ", ".join(f"{k[:-2]} {v:.2f}" for k, v in r["timings"].items() if k.endswith("_s") and v >= 0.01)
        lines.append(f"    {r['s']:6.2f} s  {r.get('module', '').rsplit('.', 1)[-1]}.{r['kernel']}: {split}; "
                     f"{r['variants'] or r['error']}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shard", default="0/8")
    ap.add_argument("--only", nargs="*", default=[], help="test modules (the end of their names) to keep")
    ap.add_argument("--out", default=".")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    out = Path(a.out)
    if a.worker:
        _worker(a.shard, out / a.worker, a.only)
        return 0
    out.mkdir(parents=True, exist_ok=True)
    cache = tempfile.mkdtemp(prefix="gpuviz-capture-profile-")
    env = dict(os.environ, XDG_CACHE_HOME=cache, PYTHONPATH=str(ROOT), GPUVIZ_GPU_CACHE_MB="4096")
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    summary = []
    for name in ("cold", "new kernel", "warm"):
        if name == "new kernel":
            # what a kernel's own capture compiled goes; gpuviz's recorders (its own code) stay
            for kept in ("gpu-variants", "gpu-builds"):
                shutil.rmtree(Path(cache) / "gpuviz" / kept, ignore_errors=True)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--worker", name.replace(" ", "_"), "--shard", a.shard,
                        "--out", str(out), "--only", *a.only], env=env, cwd=ROOT, check=False)
        rows = json.loads((out / f"{name.replace(' ', '_')}.json").read_text())
        summary.append(_summary(name, rows) + f"\n  (the process: {time.perf_counter() - t0:.1f} s)")
        print(summary[-1], flush=True)
    (out / "summary.txt").write_text("\n".join(summary) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
