"""The construct table (gpuviz.capture.frontend.constructs) and a construct added through it: ``cuda.nanosleep(ns)``,
which numba-cuda compiles and gpuviz refused on every back end (the CPU executor did not know it). It changes no
value and records nothing of its own (its argument's loads are recorded as any expression's): the CPU executor runs
it as nothing, the GPU keeps it as numba compiles it, and numba's simulator has no ``cuda.nanosleep``, so the table
refuses it there, naming it and its line."""

import inspect
import re

import numpy as np
import pytest
from numba import cuda

import gpuviz
from gpuviz.capture.errors import UnsupportedConstruct
from gpuviz.capture.frontend import constructs
from gpuviz.capture.frontend.plan import plan_for

HERE = __file__


@cuda.jit
def backoff(a, waits, out):
    i = cuda.grid(1)
    a[i] = i + 1
    cuda.nanosleep(waits[i])
    cuda.syncthreads()
    out[i] = a[(i + 1) % a.size]


@cuda.jit
def no_backoff(a, waits, out):
    i = cuda.grid(1)
    a[i] = i + 1
    w = waits[i]  # noqa: F841 - the load nanosleep's argument makes, without the sleep
    cuda.syncthreads()
    out[i] = a[(i + 1) % a.size]


def _args():
    return np.zeros(8, np.int64), np.full(8, 100, np.uint32), np.zeros(8, np.int64)


def _line(kernel, text):
    lines, first = inspect.getsourcelines(kernel.py_func)
    return first + next(k for k, line in enumerate(lines) if text in line)


def test_the_table_lists_each_construct_once_and_what_the_readers_share_comes_from_it():
    names = [c.name for c in constructs.CONSTRUCTS]
    assert len(names) == len(set(names))
    assert constructs.BARRIERS == {"syncthreads", "syncthreads_count", "syncthreads_and", "syncthreads_or"}
    assert "add" in constructs.ATOMICS and "shfl_sync" in constructs.WARP and "syncwarp" not in constructs.WARP
    assert constructs.call_site_kind(["cuda", "atomic", "add"]) == "atomic"
    assert constructs.call_site_kind(["cuda", "syncwarp"]) == "warp"
    assert constructs.BY_NAME["cuda.nanosleep"].backends == ("cpu", "gpu")


def test_nanosleep_runs_on_the_cpu_as_the_kernel_without_it():
    a, waits, out = _args()
    trace = gpuviz.capture(backoff, 1, 8, a, waits, out, backend="cpu")
    assert out.tolist() == [(i + 1) % 8 + 1 for i in range(8)]
    ref = gpuviz.capture(no_backoff, 1, 8, *_args(), backend="cpu")
    # the same events in each thread's order: its argument's load, then the barrier
    mine = [[(int(trace.kind[e]), int(trace.index[e])) for e in trace.events_of_thread(0, t)] for t in range(8)]
    theirs = [[(int(ref.kind[e]), int(ref.index[e])) for e in ref.events_of_thread(0, t)] for t in range(8)]
    assert mine == theirs


def test_nanosleep_is_refused_on_the_simulator_naming_it_and_its_line():
    line = _line(backoff, "cuda.nanosleep")
    with pytest.raises(UnsupportedConstruct) as err:
        gpuviz.capture(backoff, 1, 8, *_args(), backend="sim")
    assert f"{HERE}:{line}: cuda.nanosleep is not supported on the sim backend" in str(err.value)
    assert err.value.line == line


def test_nanosleep_is_accepted_for_the_gpu_and_kept_as_numba_compiles_it():
    from gpuviz.capture.backends.gpu.launch import variant_source

    plan_for(backoff).refuse_on("gpu", 1)  # nothing refused
    _info, sources = variant_source(backoff, 1, 8, list(_args()))
    assert re.search(r"cuda\.nanosleep\(", sources["backoff"])
