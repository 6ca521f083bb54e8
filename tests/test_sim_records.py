"""Records on gpuviz's simulator backend: a record copied whole, as a GPU and the CPU executor copy it.

numba's simulator copies a record only out of a ``np.recarray``; on a plain structured array (what a user, and
the corpus, passes) ``ary[i] = ary[j]`` raised inside it. numba-cuda's test_record_dtype (set_record, and outer
returning ``ary[0]`` from a device function) failed on ``--backend sim`` with a one-line CaptureError.
"""

import numpy as np
import pytest
from numba import cuda

import gpuviz

REC = np.dtype({"names": ["a", "b", "c", "d"], "formats": ["<f8", "<i4", "<c8", ("u1", (5,))],
                "offsets": [0, 8, 12, 20], "itemsize": 32})


def set_record(ary, i, j):
    ary[i] = ary[j]


@cuda.jit(device=True)
def first_record(ary):
    return ary[0]


def copy_first(arg0, res):
    res[0] = first_record(arg0)


def _sample():
    a = np.zeros(3, dtype=REC)
    for k in range(3):
        a[k] = (k + 0.5, 10 * k + 1, complex(k, -k), np.arange(5) + k)
    return a


def _per_thread(trace):
    return [(int(k), int(a), int(i), int(s)) for k, a, i, s in zip(trace.kind, trace.array, trace.index, trace.site)]


@pytest.mark.sim
@pytest.mark.parametrize("i, j", [(0, 1), (1, 2), (0, 2)])
def test_a_record_copied_whole_on_the_simulator_as_on_the_cpu(i, j):
    kernel = cuda.jit(set_record)
    expect = _sample()
    expect[i] = expect[j]
    cpu_ary, sim_ary = _sample(), _sample()
    cpu = gpuviz.capture(kernel, 1, 1, cpu_ary, i, j, backend="cpu")
    sim = gpuviz.capture(kernel, 1, 1, sim_ary, i, j, backend="sim")
    assert type(sim_ary) is np.ndarray  # the caller's array, written in place
    assert sim_ary.tobytes() == expect.tobytes()
    assert cpu_ary.tobytes() == expect.tobytes()
    assert _per_thread(sim) == _per_thread(cpu)
    kinds = [int(k) for k in sim.kind]
    assert kinds.count(int(gpuviz.EventKind.GLOBAL_LOAD)) == 1 and kinds.count(int(gpuviz.EventKind.GLOBAL_STORE)) == 1


@pytest.mark.sim
def test_a_record_returned_by_a_device_function_on_the_simulator():
    rec = np.dtype([("g", "<i4"), ("h", "<f4", (2,))])
    arg = np.zeros(2, dtype=rec)
    arg[0] = (1, (2.0, 3.0))
    kernel = cuda.jit(copy_first)
    res_cpu, res_sim = np.zeros(1, dtype=rec), np.zeros(1, dtype=rec)
    cpu = gpuviz.capture(kernel, 1, 1, arg.copy(), res_cpu, backend="cpu")
    sim = gpuviz.capture(kernel, 1, 1, arg.copy(), res_sim, backend="sim")
    assert res_sim.tobytes() == arg[:1].tobytes() == res_cpu.tobytes()
    assert _per_thread(sim) == _per_thread(cpu)
