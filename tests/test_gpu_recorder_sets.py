"""The GPU backend's recorder device functions are made once per process and set of constants (issue 25): numba
compiles a device function once per signature and keeps it on its dispatcher, so a variant that reuses a set
reuses its compiled code. Device-function compiles were 78% of a cold GPU capture (bench/gpu_capture_profile.py
on an H200: 343 of 438 s over 56 corpus launches), every variant making and compiling ~11 of its own. Here on
a stand-in ``cuda`` module whose ``jit`` makes a new object per function, as numba-cuda's does (numba's simulator
does not take ``forceinline``), with no GPU."""

import types

from gpuviz.capture.backends.gpu.launch import SourceOnlyCuda
from gpuviz.capture.backends.gpu.recorders import make_recorders


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
