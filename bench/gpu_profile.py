"""Where a recording kernel's time goes: one launch of each variant, for Nsight Compute, plus their SASS.

Run on a machine with an NVIDIA GPU, under ncu (NUMBA_ENABLE_CUDASIM unset):

    ncu --set full --clock-control none -o OUT/profile python3 bench/gpu_profile.py --sass OUT/sass.txt
    ncu --import OUT/profile.ncu-rep --csv --page details --print-units base > OUT/profile.csv

Each variant is launched once, after its buffers are sized and allocated (the counting launches come
first and are profiled too: their kernel names say which they are). ``--sass`` writes the SASS of every
variant (numba's ``inspect_sass``, which needs nvdisasm) so the plain body and the recording body can be
read side by side. Cases are labels of bench/gpu_overhead.py (``--vector``, ``--matmul``).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.gpu_overhead import configs_for  # noqa: E402
from gpuviz.capture.backends.gpu.launch import GpuRecording  # noqa: E402
from gpuviz.capture.backends.gpu.device import gpu_cuda  # noqa: E402


def launch_once(cuda, label, kernel, grid, block, args, sass):
    n_blocks = int(np.prod(grid))
    rec = GpuRecording(kernel, grid, block, args, **(configs_for(n_blocks)[label] if label != "plain" else {}))
    if label == "plain":
        dargs = rec.device_args(fresh=True)
        rec.plain[grid, block](*dargs)
        cuda.synchronize()
        dispatcher, launch_args = rec.plain, dargs
    else:
        dargs = rec.device_args(fresh=True)
        bufs = rec.allocate(rec.count(dargs))
        rec.record(dargs, bufs)
        cuda.synchronize()
        dispatcher, launch_args = rec.record_variant.dispatcher, rec.record_args
    print(f"launched {kernel.__name__} {label}", flush=True)
    if sass is not None:
        argtypes = tuple(dispatcher.typeof_pyval(a) for a in launch_args)
        try:
            text = dispatcher.inspect_sass(argtypes)
        except Exception as exc:  # noqa: BLE001 - nvdisasm missing: say so in the file, keep profiling
            text = f"(no SASS: {type(exc).__name__}: {exc})"
        sass.write(f"\n==== {kernel.__name__} {label} ====\n{text}\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vector", default="plain;warp;1 block (0)")
    ap.add_argument("--matmul", default="")
    ap.add_argument("--vector-n", type=int, default=1 << 24)
    ap.add_argument("--matmul-n", type=int, default=1024)
    ap.add_argument("--sass", help="write the SASS of every variant here")
    opts = ap.parse_args(argv)
    cuda = gpu_cuda()
    from gpuviz.catalog import kernel_module
    _matmul = kernel_module("matmul")
    TILE, matmul_tiled = _matmul.TILE, _matmul.matmul_tiled
    vector_add = kernel_module("vector_add").vector_add

    rng = np.random.default_rng(0)
    sass = open(opts.sass, "w") if opts.sass else None
    n = opts.vector_n
    for label in filter(None, (x.strip() for x in opts.vector.split(";"))):
        a, b, c = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32), np.zeros(n, np.float32)
        launch_once(cuda, label, vector_add, ((n + 255) // 256,), (256,), [a, b, c, n], sass)
    N = opts.matmul_n
    for label in filter(None, (x.strip() for x in opts.matmul.split(";"))):
        A, B = rng.random((N, N), dtype=np.float32), rng.random((N, N), dtype=np.float32)
        grid = ((N + TILE - 1) // TILE, (N + TILE - 1) // TILE)
        launch_once(cuda, label, matmul_tiled, grid, (TILE, TILE), [A, B, np.zeros((N, N), np.float32), N], sass)
    if sass:
        sass.close()


if __name__ == "__main__":
    main()
