"""What the recording variants compile to, without a GPU: registers and SASS instruction counts.

A recording kernel is bound by the instructions it issues (Nsight Compute, per-warp vector add on an H200:
13.8x the plain kernel's instructions), so the number of SASS instructions on the recorded path is the
figure to push down, and it can be read on any machine with the CUDA compiler tools: numba-cuda compiles
the variant to PTX for a chosen compute capability, ``ptxas`` assembles it, ``nvdisasm`` lists the SASS.

    python bench/recorder_sass.py [--cc 9.0] [--keep DIR]

Needs ``ptxas`` (CUDA toolkit) and ``nvdisasm`` (toolkit, or pip ``nvidia-cuda-nvdisasm``) on PATH or
under CUDA_HOME, and NVRTC (pip ``nvidia-cuda-nvrtc-cu12``, LD_LIBRARY_PATH) for numba-cuda's PTX compile.
The counts are static (every instruction of the kernel, cold paths included) and "per event" is the
difference to the plain kernel divided by the events of one thread, a rough guide, not an execution count.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types as pytypes
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    for root in filter(None, (os.environ.get("CUDA_HOME"), "/usr/local/cuda", *sorted(map(str, Path("/usr/local").glob("cuda-*"))))):
        cand = Path(root) / "bin" / name
        if cand.exists():
            return str(cand)
    raise SystemExit(f"{name} not found on PATH or under CUDA_HOME / /usr/local/cuda*")


def sass_of(ptx: str, cc: str, keep: Path | None, label: str) -> tuple[int, list[str]]:
    """(registers, SASS instruction lines) of one PTX module."""
    arch = "sm_" + cc.replace(".", "")
    with tempfile.TemporaryDirectory() as tmp:
        d = keep or Path(tmp)
        stem = re.sub(r"\W+", "_", label)
        (d / f"{stem}.ptx").write_text(ptx)
        out = subprocess.run([_tool("ptxas"), f"-arch={arch}", "-v", str(d / f"{stem}.ptx"), "-o", str(d / f"{stem}.cubin")],
                             capture_output=True, text=True, check=True)
        regs = int(re.search(r"Used (\d+) registers", out.stderr + out.stdout).group(1))
        sass = subprocess.run([_tool("nvdisasm"), str(d / f"{stem}.cubin")], capture_output=True, text=True, check=True).stdout
        if keep:
            (d / f"{stem}.sass").write_text(sass)
    lines = [re.sub(r"^\s*/\*[0-9a-f]+\*/\s*", "", ln).strip() for ln in sass.splitlines()
             if re.match(r"^\s+/\*[0-9a-f]{4}\*/\s+[@A-Z]", ln)]
    lines = [ln for ln in lines if not ln.startswith(".") and not ln.startswith("NOP")]
    return regs, lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cc", default="9.0")
    ap.add_argument("--keep", help="keep the PTX, cubin and SASS files here")
    ap.add_argument("--only", help="only the variants whose label starts with this (e.g. warp)")
    ap.add_argument("--kernel", help="only this kernel (vector_add or matmul_tiled)")
    opts = ap.parse_args(argv)
    keep = Path(opts.keep) if opts.keep else None
    if keep:
        keep.mkdir(parents=True, exist_ok=True)
    cc = tuple(int(x) for x in opts.cc.split("."))

    import numpy as np

    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack
    from numba import cuda, types

    import numba.cuda.dispatcher as _dispatcher

    # device functions are compiled for the current device's compute capability; there is none here
    _dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=cc)

    from gpuviz.capture.backends.gpu.variant import build_variant
    from gpuviz.capture.frontend.source import collect_device_functions, parse_function, python_function
    from gpuviz.model.trace import ArrayInfo
    from gpuviz.catalog import kernel_module
    matmul_tiled = kernel_module("matmul").matmul_tiled
    vector_add = kernel_module("vector_add").vector_add

    def arr(dt, nd=1):
        return types.Array(dt, nd, "C")

    def buffers(idx):
        return (arr(types.int32), arr(idx), arr(idx), arr(types.uint32), arr(idx), arr(types.int64), arr(types.int16),
                arr(types.int64), arr(types.int64, 2), arr(types.int32, 2), arr(types.int32, 2), arr(types.int64)) + (types.int64,) * 7

    cases = [  # name, kernel, arrays, argument types, grid, block: the launches of bench/gpu_overhead.py
        ("vector_add", vector_add, {p: ArrayInfo(p, (1 << 24,), "float32", "global") for p in "abc"},
         (arr(types.float32),) * 3 + (types.int64,), (65536, 1, 1), (256, 1, 1)),
        ("matmul_tiled", matmul_tiled, {p: ArrayInfo(p, (1024, 1024), "float32", "global") for p in "ABC"},
         (arr(types.float32, 2),) * 3 + (types.int64,), (64, 64, 1), (16, 16, 1)),
    ]
    configs = [
        ("warp", dict(mode="warp", all_blocks=True, uniform=True)),
        ("thread", dict(mode="thread", all_blocks=True, uniform=True)),
        ("thread, 1 block range", dict(mode="thread", split=True, block_range=True, uniform=True)),
        ("thread, global, 1 block range", dict(mode="thread", split=True, block_range=True, uniform=True, record="global")),
    ]
    print("| kernel | variant | registers | SASS instructions | x plain |\n|---|---|---:|---:|---:|")
    import inspect

    extra = {"index32"} & set(inspect.signature(build_variant).parameters)  # older recorders: fewer options
    configs = [c for c in configs if not opts.only or c[0].startswith(opts.only)]
    cases = [c for c in cases if not opts.kernel or c[0] == opts.kernel]
    for name, kernel, arrays, sig, grid, block in cases:
        ptx, _ = cuda.compile_ptx(kernel.py_func, sig, cc=cc)
        regs0, plain = sass_of(ptx, opts.cc, keep, f"{name}_plain")
        print(f"| {name} | plain | {regs0} | {len(plain)} | 1.00 |")
        for label, cfg in configs:
            fn = python_function(kernel)
            root = parse_function(fn)
            collect_device_functions(root)
            opts_ = dict(cfg, index32=True, grid=grid, block=block) if extra else cfg
            v = build_variant(cuda, root, arrays, count=False, **opts_)
            ptx, _ = cuda.compile_ptx(v.dispatcher.py_func, sig + buffers(types.int32), cc=cc)
            regs, lines = sass_of(ptx, opts.cc, keep, f"{name}_{label}")
            print(f"| {name} | {label} | {regs} | {len(lines)} | {len(lines) / len(plain):.2f} |")


if __name__ == "__main__":
    main()
