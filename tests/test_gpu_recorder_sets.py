"""The GPU backend's recorder device functions are made once per process and set of constants (issue 25): numba
compiles a device function once per signature and keeps it on its dispatcher, so a variant that reuses a set
reuses its compiled code. Device-function compiles were 78% of a cold GPU capture (bench/gpu_capture_profile.py
on an H200: 343 of 438 s over 56 corpus launches), every variant making and compiling ~11 of its own. Here on
a stand-in ``cuda`` module whose ``jit`` makes a new object per function, as numba-cuda's does (numba's simulator
does not take ``forceinline``), with no GPU."""

import os
import subprocess
import sys
import types

import pytest

from gpuviz.capture.backends.gpu.launch import SourceOnlyCuda
from gpuviz.capture.backends.gpu.recorders import make_recorders


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _Jitted:
    def __init__(self, fn):
        self.py_func = fn


def simulator_cuda():
    """One stand-in ``numba.cuda`` module for this file's tests (the cache is per module)."""
    global _CUDA
    if _CUDA is None:
        _CUDA = types.ModuleType("cuda_stand_in")
        _CUDA.jit = lambda fn=None, **options: _Jitted(fn) if fn is not None else _Jitted
    return _CUDA


_CUDA = None


def test_the_same_constants_give_the_same_recorders():
    cuda = simulator_cuda()
    first = make_recorders(cuda, count=True, warp=False, time_all=False, grid=(4, 1, 1), block=(64, 1, 1))
    again = make_recorders(cuda, count=True, warp=False, time_all=False, grid=(8,), block=(64,))
    assert first.keys() == again.keys() and len(first) > 10
    # another grid of one dimension and the same block: the constants are equal, so are the functions
    assert all(first[name] is again[name] for name in first)
    # a caller that changes its copy of the table does not change the next caller's
    again.clear()
    assert make_recorders(cuda, count=True, warp=False, time_all=False, grid=(4,), block=(64,)).keys() == first.keys()


def test_other_constants_give_other_recorders():
    cuda = simulator_cuda()
    base = dict(warp=False, time_all=False, grid=(4,), block=(64,))
    count = make_recorders(cuda, count=True, **base)
    for other in (make_recorders(cuda, count=False, **base),
                  make_recorders(cuda, count=True, **{**base, "block": (32, 2)}),
                  make_recorders(cuda, count=True, **{**base, "grid": (2, 2)}),
                  make_recorders(cuda, count=True, index32=True, **base),
                  make_recorders(cuda, count=True, uniform=True, **base),
                  make_recorders(cuda, count=True, blocks="range", **base),
                  make_recorders(cuda, count=True, **{**base, "warp": True}),
                  make_recorders(cuda, count=True, **{**base, "time_all": True})):
        assert all(other[name] is not count[name] for name in count)


def test_a_stand_in_cuda_gets_fresh_functions_and_nothing_is_kept():
    one = make_recorders(SourceOnlyCuda(), count=True, warp=False, time_all=False, block=(32,))
    two = make_recorders(SourceOnlyCuda(), count=True, warp=False, time_all=False, block=(32,))
    # (r_slice_start is the module's own slice_first, as a stand-in's jit hands every function back)
    assert all(one[name] is not two[name] for name in one if name != "__gv_r_slice_start")


# ---- the recorders' compiled code on disk (gpuviz.capture.backends.gpu.recorder_cache) -------------------------
def test_a_recorder_is_kept_under_its_name_constants_argument_types_and_device(tmp_path):
    from gpuviz.capture.backends.gpu.recorder_cache import RecorderDiskCache

    cache = RecorderDiskCache("(True, False)", where=tmp_path)
    base = cache.path("__gv_r_begin", ("int64", "float32"), (9, 0))
    assert base == RecorderDiskCache("(True, False)", where=tmp_path).path("__gv_r_begin", ("int64", "float32"), (9, 0))
    others = [cache.path("__gv_r_end", ("int64", "float32"), (9, 0)),
              cache.path("__gv_r_begin", ("int32", "float32"), (9, 0)),
              cache.path("__gv_r_begin", ("int64", "float32"), (8, 0)),
              RecorderDiskCache("(False, False)", where=tmp_path).path("__gv_r_begin", ("int64", "float32"), (9, 0))]
    assert len({base, *others}) == 5 and all(p.parent.parent == tmp_path for p in others)


def test_a_damaged_or_missing_recorder_file_is_a_miss(tmp_path):
    from gpuviz.capture.backends.gpu.recorder_cache import RecorderDiskCache

    cache = RecorderDiskCache("k", where=tmp_path)
    path = cache.path("__gv_r_begin", ("int64",), (9, 0))
    assert cache.load(path, target_context=None) is None
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x80\x05 not a pickle")
    assert cache.load(path, target_context=None) is None and cache.hits == 0


def test_the_recorders_are_read_from_disk_only_when_the_cache_is_on(monkeypatch):
    from gpuviz.capture.backends.gpu import recorder_cache

    class Dispatcher:
        overloads: dict = {}

        def compile_device(self, args, return_type=None):
            return "compiled"

    recorders = {"__gv_r_begin": Dispatcher()}
    monkeypatch.setenv("GPUVIZ_GPU_CACHE", "0")
    assert recorder_cache.attach(recorders, "k") is None and "compile_device" not in vars(recorders["__gv_r_begin"])
    monkeypatch.setenv("GPUVIZ_GPU_CACHE", "1")
    assert recorder_cache.attach(recorders, "k") is not None and "compile_device" in vars(recorders["__gv_r_begin"])


def _nvvm_loads() -> bool:
    try:  # how numba-cuda finds them (this process may hold numba's simulator)
        from cuda.pathfinder import load_nvidia_dynamic_lib

        load_nvidia_dynamic_lib("nvvm")
        load_nvidia_dynamic_lib("nvrtc")
        return True
    except Exception:  # noqa: BLE001 - no libnvvm here (CI): the test below needs it
        return False


_PTX_OF_VARIANTS = r"""
import hashlib, re, sys, types
sys.path.insert(0, {root!r})
import numpy as np, numba
import numba.cuda.dispatcher as d
from numba import cuda
d.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))
from gpuviz.capture.backends.gpu import recorder_cache, variant
from gpuviz.capture.backends.gpu.arguments import array_arguments, launch_arguments
from gpuviz.capture.frontend.plan import plan_for
import tests.kernels_for_ptx as kernels
a = lambda dt, nd=1: numba.types.Array(numba.from_dtype(np.dtype(dt)), nd, "C")
x = np.arange(256, dtype=np.float32)
digests = []
for name in {names!r}:
    kernel = getattr(kernels, name)
    plan = plan_for(kernel)
    largs, _ = launch_arguments(kernel, plan.root, (x, x.copy()))
    for count, index32 in ((True, False), (False, True)):
        real_jit = cuda.jit
        cuda.jit = lambda *a, **k: real_jit(*a, **k) if k.get("device") else (a[0] if a else (lambda f: f))
        try:
            v = variant.build_variant(cuda, plan.root, array_arguments(plan.root, largs), plan=plan, count=count,
                                      all_blocks=True, index32=index32, grid=(4, 1, 1), block=(64, 1, 1))
        finally:
            cuda.jit = real_jit
        i = np.int32 if index32 else np.int64
        buffers = [a(np.int32), a(i), a(i), a(np.uint32), a(i), a(np.int64), a(np.int16), a(np.int64),
                   a(np.int64, 2), a(np.int32, 2), a(np.int32, 2), a(np.int64)] + [numba.int64] * 7
        ptx, _ = cuda.compile_ptx(v.dispatcher, (a(np.float32), a(np.float32), *buffers), cc=(9, 0))
        # numba's names aside (their numbers differ from process to process), and environment pointers no code reads
        ptx = re.sub(r"_ZN[0-9A-Za-z_$]+", "F", ptx)
        ptx = "\n".join(l for l in ptx.splitlines() if not l.startswith((".common .global", "//")))
        digests.append(hashlib.sha256(ptx.encode()).hexdigest()[:16] + ("+extern" if ".extern .func  (.param .b32 func_retval0) F" in ptx else ""))
print(recorder_cache.COUNTS["read from disk"], recorder_cache.COUNTS["compiled"], ",".join(digests))
"""


@pytest.mark.skipif(not _nvvm_loads(), reason="needs libnvvm (pip install nvidia-nvvm nvidia-cuda-nvrtc, on "
                                               "LD_LIBRARY_PATH), as on a GPU machine")
def test_variants_built_on_recorders_read_from_disk_compile_to_the_same_ptx(tmp_path):
    """Recorders saved by two processes (two kernels, so some of the same functions and some others), read by a
    third for a kernel of both patterns: the count and record variants' PTX equal those compiled with the cache
    off. On an H200 a first version gave nvJitLink's ERROR_PTX_COMPILE for half of the corpus: its modules came in
    another order, and NVVM drops a definition that comes before its first caller."""
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    env.pop("NUMBA_ENABLE_CUDASIM", None)

    def run(*names, **extra):
        out = subprocess.run([sys.executable, "-c", _PTX_OF_VARIANTS.format(root=ROOT, names=names)],
                             capture_output=True, text=True, timeout=300, env=dict(env, **extra), cwd=ROOT)
        assert out.returncode == 0, out.stderr[-3000:]
        read, compiled, ptx = out.stdout.split()
        return int(read), int(compiled), ptx

    tiled, stencil = run("tiled"), run("stencil")
    assert tiled[0] == 0 and tiled[1] > 5, tiled  # a new cache: every recorder compiled, and kept
    assert stencil[0] > 0, stencil  # the recorders tiled's process compiled and stencil's calls alike
    both, again = run("both"), run("tiled", "stencil")
    assert both[0] > 5 and again[0] > 5 and again[1] == 0, (both, again)
    off_both, off_again = run("both", GPUVIZ_GPU_CACHE="0"), run("tiled", "stencil", GPUVIZ_GPU_CACHE="0")
    assert off_both[:2] == off_again[:2] == (0, 0)  # the cache off: numba compiles them, uncounted
    assert both[2] == off_both[2] and again[2] == off_again[2] == ",".join([tiled[2], stencil[2]])
    assert "+extern" not in again[2] + both[2]
