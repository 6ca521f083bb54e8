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


_PTX_OF_A_VARIANT = r"""
import hashlib, re, sys, types
sys.path.insert(0, {root!r})
import numpy as np, numba
import numba.cuda.dispatcher as d
from numba import cuda
d.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))
from gpuviz.capture.backends.gpu import recorder_cache, variant
from gpuviz.capture.backends.gpu.arguments import array_arguments, launch_arguments
from gpuviz.capture.frontend.plan import plan_for
from tests.kernels_for_ptx import tiled
real_jit = cuda.jit
cuda.jit = lambda *a, **k: real_jit(*a, **k) if k.get("device") else (a[0] if a else (lambda f: f))
x = np.arange(256, dtype=np.float32)
plan = plan_for(tiled)
largs, _ = launch_arguments(tiled, plan.root, (x, x.copy()))
v = variant.build_variant(cuda, plan.root, array_arguments(plan.root, largs), plan=plan, count=True, all_blocks=True,
                          grid=(4, 1, 1), block=(64, 1, 1))
cuda.jit = real_jit
a = lambda dt, nd=1: numba.types.Array(numba.from_dtype(np.dtype(dt)), nd, "C")
buffers = [a(np.int32), a(np.int64), a(np.int64), a(np.uint32), a(np.int64), a(np.int64), a(np.int16), a(np.int64),
           a(np.int64, 2), a(np.int32, 2), a(np.int32, 2), a(np.int64)] + [numba.int64] * 7
ptx, _ = cuda.compile_ptx(v.dispatcher, (a(np.float32), a(np.float32), *buffers), cc=(9, 0))
print(recorder_cache.COUNTS["read from disk"], recorder_cache.COUNTS["compiled"],
      hashlib.sha256(re.sub(r"_ZN[0-9A-Za-z_$]+", "F", ptx).encode()).hexdigest())
"""


@pytest.mark.skipif(not _nvvm_loads(), reason="needs libnvvm (pip install nvidia-nvvm nvidia-cuda-nvrtc, on "
                                               "LD_LIBRARY_PATH), as on a GPU machine")
def test_a_variant_built_on_recorders_read_from_disk_compiles_to_the_same_ptx(tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    env.pop("NUMBA_ENABLE_CUDASIM", None)

    def run(**extra):
        out = subprocess.run([sys.executable, "-c", _PTX_OF_A_VARIANT.format(root=ROOT)], capture_output=True,
                             text=True, timeout=300, env=dict(env, **extra), cwd=ROOT)
        assert out.returncode == 0, out.stderr[-3000:]
        read, compiled, ptx = out.stdout.split()
        return int(read), int(compiled), ptx

    cold, warm, off = run(), run(), run(GPUVIZ_GPU_CACHE="0")
    assert cold[0] == 0 and cold[1] > 5, cold  # a new cache: every recorder compiled, and kept
    assert warm[0] > 5 and warm[1] == 0, warm  # the next process: every one read back
    assert off[:2] == (0, 0)  # the cache off: numba compiles them, uncounted
    assert cold[2] == warm[2] == off[2]  # the same PTX, the functions' names aside
