"""Record (structured) dtypes on the cpu and sim backends: aligned, packed and nested, in global, shared and local
arrays; the trace describes them (ArrayInfo.record) and saves and loads back.

Before: numba.cuda.random's aligned states (a Monte Carlo pi) died under gpuviz run with ``ValueError: format number
1 of "{'names': ['s0', 's1'], ..., 'aligned': True}" is not recognized`` (a record dtype rebuilt from its str()), a
shared array of records with a nested array field was 'unknown dtype' or refused, and no trace holding a record
array could be saved.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

import gpuviz
from gpuviz.model.dtypes import dtype_text, parse_dtype
from gpuviz.model.trace import ArrayInfo
from gpuviz.runner import run_script
from gpuviz.model.tracefile import save_traces

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "monte_carlo_pi.py"

ALIGNED = np.dtype([("s0", "<u8"), ("s1", "<u4")], align=True)  # 4 bytes of padding after s1
PACKED = np.dtype({"names": ["a", "b", "d"], "formats": ["<f8", "<i4", ("u1", (5,))], "offsets": [0, 8, 12],
                   "itemsize": 17})
NESTED = np.dtype([("i", np.int32), ("j", np.float32, (3, 2))])
DEEP = np.dtype([("p", [("x", "<f4"), ("y", "u1")]), ("q", "<i2", (2,))], align=True)


@pytest.mark.parametrize("dt", [ALIGNED, PACKED, NESTED, DEEP], ids=["aligned", "packed", "nested", "deep"])
def test_a_record_dtype_as_text_reads_back_the_same(dt):
    back = parse_dtype(dtype_text(dt))
    assert back == dt and back.isalignedstruct == dt.isalignedstruct and back.itemsize == dt.itemsize
    info = ArrayInfo.of("a", (3,), dt, "shared", 7)
    assert info.itemsize == dt.itemsize and info.nbytes == 3 * dt.itemsize
    assert ArrayInfo.from_json(info.to_json()) == info
    assert info.to_json()["dtype"] == "uint8"  # the file names plain number types only; "record" says the rest


@cuda.jit
def _copy_records(ary, i, j):
    ary[i] = ary[j]


@cuda.jit
def _shared_nested(out):
    sm = cuda.shared.array(4, dtype=NESTED)
    t = cuda.threadIdx.x
    sm[t].i = t
    for a in range(3):
        for b in range(2):
            sm[t].j[a, b] = t * 10 + a * 2 + b
    cuda.syncthreads()
    out[t] = sm[3 - t].i + sm[3 - t].j[2, 1]


@cuda.jit
def _local_aligned(out):
    loc = cuda.local.array(2, dtype=ALIGNED)
    t = cuda.threadIdx.x
    loc[0].s0 = t
    loc[1].s1 = 2 * t
    out[t] = loc[0].s0 + loc[1].s1


def _saves_and_loads(trace, tmp_path):
    path = tmp_path / "t.gpuviz"
    save_traces(path, [trace])
    back = gpuviz.load(path)
    assert back.launch.arrays == trace.launch.arrays
    assert len(back) == len(trace) and np.array_equal(back.index, trace.index)
    return back


@pytest.mark.parametrize("backend", ["cpu", "sim"])
@pytest.mark.parametrize("dt", [ALIGNED, PACKED], ids=["aligned", "packed"])
def test_global_records_trace_and_save(dt, backend, tmp_path):
    a = np.zeros(3, dt)
    a[2] = tuple(np.ones((), dt[n]) * (k + 1) for k, n in enumerate(dt.names))
    want = a.copy()
    want[0] = want[2]
    trace = gpuviz.capture(_copy_records, 1, 1, a, 0, 2, backend=backend)
    for name in dt.names:  # field by field: padding bytes are no one's
        assert np.array_equal(a[name], want[name]), name
    back = _saves_and_loads(trace, tmp_path)
    assert back.launch.arrays[0].numpy_dtype == dt and back.launch.arrays[0].itemsize == dt.itemsize


def test_a_shared_array_of_records_with_a_nested_array_field(tmp_path):
    out = np.zeros(4, np.float32)
    trace = gpuviz.capture(_shared_nested, 1, 4, out, backend="cpu")
    assert out.tolist() == [11 * (3 - t) + 5 for t in range(4)]
    sm = next(a for a in trace.launch.arrays if a.space == "shared")
    assert sm.numpy_dtype == NESTED and sm.itemsize == 28
    assert trace.kind.size and (trace.array == trace.launch.arrays.index(sm)).any()  # its records' accesses
    _saves_and_loads(trace, tmp_path)


def test_a_local_array_of_aligned_records(tmp_path):
    out = np.zeros(8, np.uint64)
    trace = gpuviz.capture(_local_aligned, 1, 8, out, backend="cpu")
    assert out.tolist() == [3 * t for t in range(8)]
    _saves_and_loads(trace, tmp_path)


def _plain_estimate(simulator: bool = True) -> float:
    """numba alone (its simulator, or numba-cuda on the GPU), in a process of its own, same seed."""
    code = f"import runpy, sys; sys.argv=['x']; print('EST', runpy.run_path({str(EXAMPLE)!r})['main']())"
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONWARNINGS="ignore")
    if not simulator:
        env.pop("NUMBA_ENABLE_CUDASIM")
        # numba-cuda 0.30 needs np.row_stack, gone in numpy 2.5 (GPU images carry it): the shim gpuviz applies too
        code = "import numpy as np; np.row_stack = getattr(np, 'row_stack', np.vstack); " + code
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return float(next(line for line in out.stdout.splitlines() if line.startswith("EST")).split()[1])


@pytest.mark.parametrize("backend", ["cpu", "sim"])
def test_monte_carlo_pi_traces_with_a_plain_runs_estimate(backend, tmp_path):
    result = run_script(EXAMPLE, backend=backend, timeout=300, output=tmp_path / "pi.gpuviz")
    assert result.ok, result.message + result.stderr[-2000:]
    assert [r.status for r in result.launches] == ["traced"], result.summary_lines()
    line = next(s for s in result.stdout.splitlines() if s.startswith("pi is about"))
    assert float(line.split()[3]) == _plain_estimate()
    states = next(a for a in result.traces[0].launch.arrays if a.name == "rng_states")
    assert states.numpy_dtype.names == ("s0", "s1") and states.numpy_dtype.isalignedstruct
    back = gpuviz.load(tmp_path / "pi.gpuviz")
    assert len(back.traces[0]) == len(result.traces[0]) and back.traces[0].launch.arrays == result.traces[0].launch.arrays


@pytest.mark.gpu
def test_monte_carlo_pi_traces_on_the_gpu_with_numba_cudas_own_estimate(tmp_path):
    """Issue 25: numba.cuda.random's states on the GPU backend, the program's estimate that of numba-cuda's own run on
    the same GPU with the same seed (the GPU's float32 arithmetic, not the simulator's)."""
    result = run_script(EXAMPLE, backend="gpu", timeout=300, output=tmp_path / "pi.gpuviz")
    assert result.ok, result.message + result.stderr[-2000:]
    assert [r.status for r in result.launches] == ["traced"], result.summary_lines()
    line = next(s for s in result.stdout.splitlines() if s.startswith("pi is about"))
    assert float(line.split()[3]) == _plain_estimate(simulator=False)
    assert result.traces[0].launch.backend == "gpu"
    states = next(a for a in result.traces[0].launch.arrays if a.name == "rng_states")
    assert states.numpy_dtype.names == ("s0", "s1") and states.numpy_dtype.isalignedstruct
    back = gpuviz.load(tmp_path / "pi.gpuviz")
    assert len(back.traces[0]) == len(result.traces[0]) > 0
