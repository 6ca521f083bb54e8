"""Run the corpus of numba-cuda's own test kernels on gpuviz and count how each launch comes out.

    .venv/bin/python bench/corpus.py [--corpus tests/data/numba_cuda_corpus.npz] [--backend cpu|sim|gpu]
                                     [--details out.json] [--only test_atomics] [--list wrong,crashed]
                                     [--round-trip] [--gpu-reference tests/data/numba_cuda_gpu_reference.npz]

Every stored launch (see bench/corpus_extract.py) is rebuilt and run on gpuviz's CPU executor (or
``--backend sim``: gpuviz's per-thread instrumentation on numba's simulator; or ``--backend gpu``: the
kernels jitted by numba-cuda for the real GPU and recorded by gpuviz's GPU backend, no simulator
anywhere), all launches of one kernel back to back in one process, and compared with what numba's
simulator did when the tests ran (the stored outputs and per-thread recording):
every output array, and per-thread event sequences against the simulator's per-thread recording. The
launches the simulator refuses (``alignment=``) are compared with numba-cuda's own launch on a GPU where
``--gpu-reference`` (bench/corpus_gpu_reference.py) holds them, else counted "beyond the simulator"; a
launch only the simulator makes (forall(0)'s grid of no blocks) is "not stored". It
prints counts by class (tests/corpus_support.py defines them), the most common refusals and crashes,
and the executor-vs-simulator time ratio over the launches that work (the simulator's time is its
plain launch, measured at extraction on this kind of machine).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPUS = ROOT / "tests" / "data" / "numba_cuda_corpus.npz"


def choose_target(backend: str) -> None:
    """Before numba is first imported: the simulator for cpu and sim (the kernels are rebuilt with its
    ``cuda.jit``), numba-cuda's real GPU target for gpu."""
    if backend == "gpu":
        if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
            raise SystemExit("--backend gpu runs numba-cuda on the real GPU: unset NUMBA_ENABLE_CUDASIM")
    else:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"


def run(corpus=CORPUS, backend="cpu", only=None, time_limit_s=20.0, progress=False, shard=(0, 1),
        round_trip: bool = False, gpu_reference=None) -> list[dict]:
    """``shard`` (i, n): only the kernels at positions i, i + n, ... of the sorted list of (test module, kernel)
    (so that n processes share the corpus; the launches of one kernel stay in one process, back to back). By
    kernel, not by module: test_math and test_atomics hold a fifth of the corpus's GPU compile time each.
    ``gpu_reference``: the GPU reference file of the launches the simulator refuses [corpus_support.GPU_REFERENCE]."""
    choose_target(backend)
    from tests.corpus_support import GPU_REFERENCE, Rebuilder, load, run_launch

    index, arrays = load(corpus)
    rb = Rebuilder(index, arrays)
    launches = index["launches"]
    if only:
        only_set = set(only)
        launches = [r for r in launches if r["module"].rsplit(".", 1)[1] in only_set]
    results = []
    import tempfile

    scratch = tempfile.TemporaryDirectory(prefix="gpuviz-corpus-rt-") if round_trip else None
    mine = shard_of(launches, shard)
    for k, (pos, launch) in enumerate(mine):
        res = run_launch(rb, launch, time_limit_s=time_limit_s, backend=backend,
                         round_trip=scratch.name if scratch else None, reference_file=gpu_reference or GPU_REFERENCE)
        res.update({"test": launch.get("test"), "kernel": launch.get("kernel_name"), "module": launch["module"],
                    "pos": pos})
        results.append(res)
        if progress and k % 50 == 0:
            print(f"  {k}/{len(mine)}", file=sys.stderr, flush=True)
    return results


def shard_of(launches: list[dict], shard=(0, 1)) -> list[tuple[int, dict]]:
    """(position in ``launches``, launch) of the ``shard`` (i, n): the launches of the kernels at positions i, i + n,
    ... of the sorted list of (test module, kernel), so that n processes share the corpus and the launches of one
    kernel stay in one process, back to back. By kernel, not by module: test_math and test_atomics hold a fifth of
    the corpus's GPU compile time each."""
    if shard[1] <= 1:
        return list(enumerate(launches))

    def key(r):
        return r["module"], str(r.get("kernel", r.get("kernel_name", "")))

    kernels = sorted({key(r) for r in launches})
    mine = {m for k, m in enumerate(kernels) if k % shard[1] == shard[0]}
    return [(pos, r) for pos, r in enumerate(launches) if key(r) in mine]


def _reason(detail: str) -> str:
    """The first line of a message without its file:line prefix (to group alike messages)."""
    line = (detail or "").strip().splitlines()[0] if (detail or "").strip() else ""
    parts = line.split(": ", 1)
    return parts[1] if len(parts) == 2 and ":" in parts[0] else line


def report(results, backend) -> str:
    from tests.corpus_support import CLASSES

    counts = collections.Counter(r["class"] for r in results)
    stored = [r for r in results if r["class"] != "not stored"]
    out = [f"{len(results)} launches in the corpus, {len(stored)} stored and checked on backend {backend!r}"]
    for c in CLASSES:
        share = f"{100 * counts[c] / len(stored):5.1f}%" if stored and c != "not stored" else "      "
        out.append(f"  {c:20s} {counts[c]:5d}  {share}")
    ok = [r for r in results if r["class"] in ("exact", "outputs only") and r["cpu_s"] and r["sim_s"]]
    if ok:
        sim, cpu = sum(r["sim_s"] for r in ok), sum(r["cpu_s"] for r in ok)
        out.append(f"time over the {len(ok)} launches that work: simulator {sim:.2f}s, gpuviz {backend} {cpu:.2f}s, "
                   f"ratio {sim / cpu:.1f}x")
    trips = [r["round_trip"] for r in results if "round_trip" in r]
    if trips:
        failed = [t for t in trips if t != "ok"]
        out.append(f"round trip (saved, loaded back, compared): {len(trips) - len(failed)} of {len(trips)} traces equal")
        for why, n in collections.Counter(f[:110] for f in failed).most_common(12):
            out.append(f"  {n:4d}  {why}")
    for c in ("refused", "crashed", "wrong", "hung"):
        reasons = collections.Counter(_reason(r["detail"])[:110] for r in results if r["class"] == c)
        if reasons:
            out.append(f"most common {c}:")
            for why, n in reasons.most_common(12):
                out.append(f"  {n:4d}  {why}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(CORPUS))
    ap.add_argument("--backend", default="cpu", choices=("cpu", "sim", "gpu"))
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--details", help="write every launch's class and message to this JSON file")
    ap.add_argument("--list", default="", help="print the launches of these classes (comma-separated)")
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--shard", default="0/1", help="i/n: run the i-th of n parts (kernels i, i+n, ... of the sorted list)")
    ap.add_argument("--round-trip", action="store_true",
                    help="also save every launch's trace, load it back and compare (tests/roundtrip.py)")
    ap.add_argument("--merge", nargs="*", help="print the report of these --details files (the parts of one run)")
    ap.add_argument("--gpu-reference", help="numba-cuda's own launches on a GPU of the launches the simulator refuses "
                    "(bench/corpus_gpu_reference.py) [tests/data/numba_cuda_gpu_reference.npz, where it exists]")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    if a.merge:
        results = [r for path in a.merge for r in json.loads(Path(path).read_text())]
    else:
        i, n = (int(x) for x in a.shard.split("/"))
        results = run(a.corpus, a.backend, a.only, a.time_limit, progress=True, shard=(i, n), round_trip=a.round_trip,
                      gpu_reference=a.gpu_reference)
    print(report(results, a.backend))
    print(f"({time.perf_counter() - t0:.0f}s)")
    for c in filter(None, a.list.split(",")):
        for r in results:
            if r["class"] == c:
                print(f"[{c}] {r['test']} {r['kernel']}: {r['detail'][:400]}")
    if a.details:
        Path(a.details).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
