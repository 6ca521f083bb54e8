"""Compile the GPU backend's recording variants of corpus launches to PTX, with no GPU.

    pip install nvidia-cuda-nvrtc nvidia-nvvm        (NVRTC and NVVM only: no driver, no GPU)
    LD_LIBRARY_PATH=<site-packages>/nvidia/cu13/lib .venv/bin/python bench/gpu_compile_check.py [--all] [TEST ...]

numba-cuda types and compiles a kernel to PTX without a device when it is given the compute capability, so
the step a GPU run fails at most often (numba's typing of the instrumented code: "numba could not compile the
counting variant of ...") can be checked here. For each corpus launch whose test id contains one of the TEST
substrings (``--all``: one launch per kernel), the user's kernel is compiled as it is ("plain"), then the
counting variant gpuviz's GPU backend builds for that launch (gpu_variant.build_variant), for compute
capability 9.0. Prints OK, PLAIN-FAILS (numba-cuda itself cannot compile the kernel so: not gpuviz's),
VARIANT-FAILS (gpuviz's rewrite does not compile: a bug), REFUSED (the GPU build refuses it, with its reason) or
PLAN-REFUSED (every backend refuses it), one line per launch; exit status 1 if any VARIANT-FAILS.
"""

import argparse
import os
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.pop("NUMBA_ENABLE_CUDASIM", None)

import numpy as np  # noqa: E402

if not hasattr(np, "row_stack"):  # numba-cuda 0.30.x on numpy 2.5 (gpuviz.capture.backends.gpu.device applies the same shim)
    np.row_stack = np.vstack

import numba  # noqa: E402
import numba.cuda.dispatcher as _dispatcher  # noqa: E402
from numba import cuda  # noqa: E402

CC = (9, 0)
# device functions compile for the current device's capability: there is no device, so say which
_dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=CC)
_jit = cuda.jit


def _variant_jit(*args, **kwargs):
    """cuda.jit while a variant is built: device functions jitted for real, the kernel kept as a function
    (compile_ptx compiles it)."""
    if kwargs.get("device"):
        return _jit(*args, **kwargs)
    if args and callable(args[0]) and not kwargs:
        return args[0]
    return lambda fn: fn


def _host(e, arrays, decode):
    """A corpus value with device arrays as host arrays (the same numba type, no GPU needed)."""
    if e["t"] == "device":
        return np.array(arrays[e["a"]], copy=True)
    if e["t"] == "hint":
        return getattr(cuda, e["h"])(_host(e["v"], arrays, decode))
    if e["t"] == "tuple":
        items = [_host(x, arrays, decode) for x in e["v"]]
        if "fields" in e:
            import collections

            return collections.namedtuple(e["name"], e["fields"])(*items)
        return tuple(items)
    return decode(e, arrays)


def _buffer_types(idt) -> list:
    """numba types of layout.BUFFERS and PARAMS, as GpuRecording._buffers and scalar_params make them."""
    a = lambda dt, nd=1: numba.types.Array(numba.from_dtype(np.dtype(dt)), nd, "C")  # noqa: E731
    return [a(np.int32), a(idt), a(idt), a(np.uint32), a(idt), a(np.int64), a(np.int16), a(np.int64),
            a(np.int64, 2), a(np.int32, 2), a(np.int32, 2), a(np.int64)] + [numba.int64] * 7


def _typeof(a):
    return numba.typeof(a.value if type(a).__name__ in ("In", "Out", "InOut") else a)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tests", nargs="*", help="substrings of test ids")
    ap.add_argument("--all", action="store_true", help="one launch per kernel of the whole corpus")
    opts = ap.parse_args(argv)
    import tests.corpus_support as C
    from gpuviz.capture.backends.gpu import variant as gpu_variant
    from gpuviz.capture.errors import UnsupportedConstruct
    from gpuviz.capture.backends.gpu.arguments import array_arguments, c_contiguous_arguments, launch_arguments
    from gpuviz.capture.limits import normalize_dims
    from gpuviz.capture.frontend.plan import plan_for

    index, arrays = C.load()
    rb = C.Rebuilder(index, arrays)
    seen, failed = set(), 0
    for launch in index["launches"]:
        test = launch.get("test", "")
        if "kernel" not in launch or "unstorable" in launch:
            continue
        if opts.all:
            if launch["kernel"] in seen:
                continue
            seen.add(launch["kernel"])
        elif not any(t in test for t in opts.tests):
            continue
        name = f"{test.rsplit('.', 1)[-1]}::{launch.get('kernel_name')}"
        try:
            kernel = rb.function(launch["kernel"])
            args = [_host(e, arrays, C.decode_value) for e in launch["args"]]
        except Exception as exc:  # noqa: BLE001 - not rebuildable here
            print("SKIP", name, type(exc).__name__, str(exc)[:100])
            continue
        plan = plan_for(kernel)
        if plan.diagnostics:
            print("PLAN-REFUSED", name)
            continue
        t0 = time.perf_counter()
        try:
            cuda.compile_ptx(kernel.py_func, tuple(_typeof(a) for a in args), cc=CC)
        except Exception as exc:  # noqa: BLE001
            print("PLAIN-FAILS", name, type(exc).__name__, str(exc).splitlines()[0][:160] if str(exc) else "")
            continue
        try:
            root = plan.root
            largs, _ = launch_arguments(kernel, root, args)
            shaped = array_arguments(root, largs)
            idt = np.int32 if max([int(np.prod(a.shape)) for a in shaped.values()] or [0]) < 2**31 else np.int64
            cuda.jit = _variant_jit
            try:
                v = gpu_variant.build_variant(cuda, root, shaped, plan=plan, count=True, all_blocks=True,
                                              grid=normalize_dims(tuple(launch["grid"]), "grid"),
                                              block=normalize_dims(tuple(launch["block"]), "block"),
                                              dynamic_shared_bytes=launch.get("dynshared", 0),
                                              c_contiguous=c_contiguous_arguments(root, largs))
            finally:
                cuda.jit = _jit
            cuda.compile_ptx(v.dispatcher, tuple(_typeof(a) for a in largs) + tuple(_buffer_types(idt)), cc=CC)
            print("OK", name, f"{time.perf_counter() - t0:.1f}s")
        except UnsupportedConstruct as exc:  # refused on the GPU backend with its one-line reason
            print("REFUSED", name, str(exc).splitlines()[0][:200])
        except Exception as exc:  # noqa: BLE001 - what this script looks for
            failed += 1
            print("VARIANT-FAILS", name, type(exc).__name__, str(exc).replace("\n", " ")[:600])
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
