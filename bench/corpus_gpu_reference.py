"""The reference of the corpus launches numba's simulator refuses: numba-cuda's own launch of each on a GPU.

    python3 bench/corpus_gpu_reference.py [--out tests/data/numba_cuda_gpu_reference.npz]   (on a machine with a GPU)

numba's simulator refuses constructs numba-cuda compiles for a GPU (``alignment=``: tests/corpus_support.py's
SIMULATOR_REFUSES), so the corpus holds no reference for those launches. For each, the kernel and arguments are
rebuilt as bench/corpus.py rebuilds them, then

* launched by numba-cuda itself (``kernel[grid, block, 0, dynshared](*args)`` and a synchronize): the arguments'
  host arrays afterwards are the reference outputs;
* recorded by gpuviz's GPU backend on fresh copies of the arguments, as bench/corpus.py records every launch: its
  per-thread events (tests/corpus_support.py's event_matrix) are the reference events.

Written with tests/corpus_support.py's write_gpu_reference (an index with provenance: GPU, compute capability,
versions, commit, date, command), keyed by reference_key (test id, kernel, position); bench/corpus.py and
tests/test_corpus.py then judge those launches against it on the cpu and sim backends (on the gpu backend the
events would be the very recording judged).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _first_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]


def _commit(given: str | None) -> str | None:
    if given:
        return given
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None  # a copy of the tree without its git folder


def main(argv=None) -> int:
    from tests.corpus_support import GPU_REFERENCE

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(GPU_REFERENCE), help="the reference file to write [%(default)s]")
    ap.add_argument("--commit", help="the commit to record, where the tree has no git folder [git rev-parse HEAD]")
    a = ap.parse_args(argv)

    from bench.corpus import choose_target

    choose_target("gpu")
    from gpuviz.capture.backends.gpu import device  # noqa: F401 - numba-cuda 0.30's numpy 2.5 shim, as gpuviz has it

    import numba
    import numba_cuda
    import numpy as np
    from numba import cuda

    from tests.corpus_support import (SIMULATOR_REFUSES, Rebuilder, capture_launch, decode_value, event_matrix,
                                      host_of, load, numba_config_of_the_test, reference_key, write_gpu_reference)

    index, arrays = load()
    rb = Rebuilder(index, arrays)
    dev = cuda.get_current_device()
    gpu = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    entries, saved = {}, {}
    for pos, launch in enumerate(index["launches"]):
        if launch.get("test") not in SIMULATOR_REFUSES or "kernel" not in launch:
            continue
        key, tag = reference_key(launch, index["launches"]), f"r{len(entries)}"
        grid, block, dynshared = tuple(launch["grid"]), tuple(launch["block"]), launch.get("dynshared", 0)
        entry = {"test": launch["test"], "kernel_name": launch.get("kernel_name"), "pos": pos, "grid": list(grid),
                 "block": list(block), "dynshared": dynshared, "numba_raised": None, "outputs": [], "events": None}
        try:
            kernel = rb.function(launch["kernel"])
        except Exception as exc:  # noqa: BLE001 - not rebuilt: nothing to launch
            print(f"{key}: not rebuilt ({_first_line(exc)})", flush=True)
            continue
        args = [decode_value(e, arrays) for e in launch["args"]]
        try:
            with numba_config_of_the_test(launch, "gpu"):
                kernel[grid, block, 0, dynshared](*args)
                cuda.synchronize()
            for k, arg in enumerate(args):
                host = host_of(arg) if not isinstance(arg, tuple) else None
                if host is not None:
                    saved[f"{tag}_out{k}"] = np.array(host)
                entry["outputs"].append(f"{tag}_out{k}" if host is not None else None)
        except Exception as exc:  # noqa: BLE001 - numba-cuda's own answer, kept as the reference
            entry.update({"numba_raised": type(exc).__name__, "numba_error": _first_line(exc)})
        try:
            trace = capture_launch(kernel, launch, [decode_value(e, arrays) for e in launch["args"]], "gpu")
            saved[f"{tag}_events"], entry["event_names"] = event_matrix(trace)
            entry["events"] = f"{tag}_events"
        except Exception as exc:  # noqa: BLE001 - the reference's outputs stand without events
            entry["events_missing"] = _first_line(exc)
        entries[key] = entry
        numba_said = f"numba-cuda raised {entry['numba_error']}" if entry["numba_raised"] else (
            f"numba-cuda ran, {sum(o is not None for o in entry['outputs'])} output arrays")
        gpuviz_said = (f"gpuviz recorded {len(saved[entry['events']])} events" if entry["events"]
                       else f"gpuviz raised {entry['events_missing']}")
        print(f"{key}: {numba_said}; {gpuviz_said}", flush=True)
    provenance = {
        "gpu": gpu, "compute_capability": list(dev.compute_capability), "numba": numba.__version__,
        "numba_cuda": numba_cuda.__version__, "numpy": np.__version__, "commit": _commit(a.commit),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
    }
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_gpu_reference(out, provenance, entries, saved)
    print(f"{len(entries)} launches on {gpu} (compute capability {provenance['compute_capability']}) -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
