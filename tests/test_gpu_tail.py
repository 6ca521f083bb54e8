"""The GPU back end records the long tail numba-cuda compiles (tests/gpu_tail_kernels.py): tuple(...), a local
array's reductions, a def inside a kernel, *args of a device function, a device function of another module and a
grid-wide barrier in a cooperative launch.

Three layers: the rewritten source (here, no GPU: the recording calls where they belong); its count, record, split
and per-warp variants compiled to PTX by numba-cuda for sm_90 (here where libnvvm loads, no GPU: numba's typing and
NVVM accept them, and the grid barrier makes every variant a cooperative kernel); and on a GPU (marked ``gpu``, run
with GPUVIZ_TEST_GPU=1) the outputs numpy and numba-cuda's own launch give, and the trace of the CPU executor, event
for event."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest
from numba import cuda

from tests.gpu_tail_kernels import CASES

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ON_GPU = os.environ.get("GPUVIZ_TEST_GPU") == "1"
if ON_GPU:
    from gpuviz.capture.backends.gpu.device import gpu_cuda  # noqa: F401 - the numpy 2.5 shim before numba compiles


def _source(case: str, count: bool = False) -> dict[str, str]:
    """{function: rewritten source} of the case's recording variant, without a GPU (SourceOnlyCuda)."""
    from gpuviz.capture.backends.gpu.launch import variant_source

    kernel, grid, block, make, _ = CASES[case]
    return variant_source(kernel, grid, block, make(), count=count)[1]


# ---- the rewritten source, no GPU ----------------------------------------------------------------------------------
@pytest.mark.parametrize("case", list(CASES))
def test_the_gpu_backend_accepts_each_construct(case):
    from gpuviz.capture.frontend.plan import plan_for

    kernel, grid, _block, _make, _ = CASES[case]
    plan_for(kernel).refuse_on("gpu", grid)  # nothing refused


@pytest.mark.parametrize("case", list(CASES))
def test_each_construct_computes_on_the_cpu_what_numpy_says(case):
    # the reference the GPU tests below hold the GPU to, checked where there is no GPU
    from gpuviz.capture import capture

    kernel, grid, block, make, expected = CASES[case]
    args = make()
    capture(kernel, grid, block, *args, backend="cpu")
    for pos, want in expected().items():
        np.testing.assert_allclose(args[pos], want, rtol=1e-12, err_msg=case)


@pytest.mark.skipif(ON_GPU, reason="reads the source of the simulator's jit")
def test_another_modules_device_function_is_called_instrumented_with_the_arrays_it_is_given():
    src = _source("a device function of another module")
    # the kernel calls the instrumented copy under its own name, passing its recording state and a's id (0)
    assert re.search(r"__gv_dev_helpers__scaled_load\(a, i, __gv_s, [^)]*, 0, -1\)", src["module_device_function"])
    assert re.search(r"def scaled_load\(a, i, __gv_s, .*__gv_a_a, __gv_a_i\)", src["scaled_load"])
    assert "__gv_r_mem1(" in src["scaled_load"] and "(__gv_a_a + 1), a, i)" in src["scaled_load"]


@pytest.mark.skipif(ON_GPU, reason="reads the source of the simulator's jit")
def test_a_device_functions_star_args_are_packed_at_each_call():
    src = _source("*args of a device function")
    assert re.search(r"weighted\(a, i, \(3\.0, 1\.0\), __gv_s, ", src["device_varargs"])
    assert re.search(r"total\(\(1\.0, 2\.0, a\[__gv_r_mem1\w*\(", src["device_varargs"])  # a[i]: recorded, packed
    assert re.search(r"def weighted\(a, i, ws, __gv_s, .*__gv_a_a, __gv_a_i\):", src["weighted"])
    assert re.search(r"def total\(xs, __gv_s, ", src["total"])


@pytest.mark.skipif(ON_GPU, reason="reads the source of the simulator's jit")
def test_a_closure_records_the_enclosing_kernels_arrays_where_it_reads_and_writes_them():
    src = _source("a def inside a kernel")["closures"]
    load_plus = src[src.index("def load_plus"):src.index("def put")]
    put = src[src.index("def put"):src.index("if i < out.size")]
    assert "__gv_r_mem1(" in load_plus and ", a, j)]" in load_plus
    assert "__gv_r_mem1" in put and ", out, i)] = v" in put


@cuda.jit(device=True)
def _first_of_rest(i, *rest):
    return rest[0][i]


def test_an_array_passed_through_a_device_functions_star_args_is_refused_on_the_gpu_naming_it():
    """Its accesses (rest[0][i]) would be missing from the GPU trace, which the cpu and sim back ends record."""
    from gpuviz.capture.backends.gpu.launch import variant_source
    from gpuviz.capture.errors import UnsupportedConstruct

    @cuda.jit
    def through_star_args(a, out):
        i = cuda.grid(1)
        out[i] = _first_of_rest(i, a, 2.0)

    with pytest.raises(UnsupportedConstruct, match=r"passes the array 'a' through \*rest"):
        variant_source(through_star_args, 1, 4, [np.ones(4), np.zeros(4)])


def test_a_closure_subscripting_its_own_parameter_is_refused_on_the_gpu_naming_it():
    from numba import cuda

    from gpuviz.capture.backends.gpu.launch import variant_source
    from gpuviz.capture.errors import UnsupportedConstruct

    @cuda.jit
    def passes_an_array(a, out):
        i = cuda.grid(1)

        def first(arr):
            return arr[0]

        out[i] = first(a)

    with pytest.raises(UnsupportedConstruct, match="subscripts its parameter 'arr'"):
        variant_source(passes_an_array, 1, 4, [np.ones(4), np.zeros(4)])


@pytest.mark.skipif(ON_GPU, reason="reads the source of the simulator's jit")
def test_the_grid_barrier_is_recorded_as_a_barrier_before_it_is_called():
    from gpuviz.capture.backends.gpu.layout import SITE_BAR
    from gpuviz.capture.frontend.plan import plan_for

    src = _source("grid.sync()")["grid_rotate"]
    site = next(k for k, s in enumerate(plan_for(CASES["grid.sync()"][0]).sites) if s.kind == "barrier")
    assert re.search(rf"__gv_r_event\(__gv_s, [^)]*, {site << 8}\)\n\s+g\.sync\(\)", src)
    assert SITE_BAR == 5


# ---- the variants compiled to PTX by numba-cuda, no GPU ------------------------------------------------------------
def _nvvm_loads() -> bool:
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib

        load_nvidia_dynamic_lib("nvvm")
        load_nvidia_dynamic_lib("nvrtc")
        return True
    except Exception:  # noqa: BLE001 - no libnvvm here: the PTX test needs it
        return False


_PTX_OF_TAIL = r"""
import sys, types
sys.path.insert(0, {root!r})
import numpy as np, numba
import numba.cuda.dispatcher as d
from numba import cuda
d.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))
from gpuviz.capture.backends.gpu import variant
from gpuviz.capture.backends.gpu.arguments import array_arguments, c_contiguous_arguments, launch_arguments
from gpuviz.capture.frontend.plan import plan_for
from tests.gpu_tail_kernels import CASES
a = lambda dt, nd=1: numba.types.Array(numba.from_dtype(np.dtype(dt)), nd, "C")
for name, (kernel, grid, block, make, _) in CASES.items():
    plan = plan_for(kernel)
    largs, _ = launch_arguments(kernel, plan.root, make())
    for label, options in (("count", dict(count=True, all_blocks=True)), ("record", dict(count=False, all_blocks=True)),
                           ("split", dict(count=False, split=True)), ("warp", dict(count=False, all_blocks=True, mode="warp"))):
        real_jit = cuda.jit
        cuda.jit = lambda *a, **k: real_jit(*a, **k) if k.get("device") else (a[0] if a else (lambda f: f))
        try:
            v = variant.build_variant(cuda, plan.root, array_arguments(plan.root, largs), plan=plan, grid=(grid, 1, 1),
                                      block=(block, 1, 1), c_contiguous=c_contiguous_arguments(plan.root, largs), **options)
        finally:
            cuda.jit = real_jit
        i = np.int64
        buffers = [a(np.int32), a(i), a(i), a(np.uint32), a(i), a(np.int64), a(np.int16), a(np.int64),
                   a(np.int64, 2), a(np.int32, 2), a(np.int32, 2), a(np.int64)] + [numba.int64] * 7
        try:
            ptx, _ = cuda.compile_ptx(v.dispatcher, (*(numba.typeof(x) for x in largs), *buffers), cc=(9, 0))
            print(f"{{name}}|{{label}}|ok|{{'cooperative' if 'cudaCGGetIntrinsicHandle' in ptx else 'plain'}}")
        except Exception as exc:
            print(f"{{name}}|{{label}}|failed|{{type(exc).__name__}}: {{str(exc)[:300]!r}}")
"""


@pytest.mark.skipif(ON_GPU or not _nvvm_loads(), reason="needs libnvvm (pip install nvidia-nvvm nvidia-cuda-nvrtc, on "
                                                        "LD_LIBRARY_PATH) and no simulator in the child")
def test_every_recording_variant_of_each_construct_compiles_to_ptx():
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    out = subprocess.run([sys.executable, "-c", _PTX_OF_TAIL.format(root=ROOT)], capture_output=True, text=True,
                         timeout=600, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [line.split("|") for line in out.stdout.splitlines() if line.count("|") == 3]
    assert len(rows) == 4 * len(CASES), out.stdout
    failed = [r for r in rows if r[2] != "ok"]
    assert not failed, failed
    # the grid barrier makes every variant a cooperative kernel (numba-cuda launches it so); nothing else does
    assert {r[1] for r in rows if r[3] == "cooperative"} == {"count", "record", "split", "warp"}
    assert {r[0] for r in rows if r[3] == "cooperative"} == {"grid.sync()"}


# ---- on a GPU --------------------------------------------------------------------------------------------------------
def _fresh(args):
    return [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]


@pytest.mark.gpu
@pytest.mark.parametrize("case", list(CASES))
def test_each_construct_computes_as_numba_and_traces_as_on_the_cpu(case):
    from gpuviz.capture import capture
    from gpuviz.capture.lockstep import by_sites, same_sequences

    kernel, grid, block, make, expected = CASES[case]
    cpu_args, gpu_args, plain_args = make(), make(), make()
    cpu = capture(kernel, grid, block, *cpu_args, backend="cpu")
    gpu = capture(kernel, grid, block, *gpu_args, backend="gpu")
    kernel[grid, block](*plain_args)  # numba-cuda's own launch on this GPU
    for pos, want in expected().items():
        np.testing.assert_allclose(gpu_args[pos], want, rtol=1e-12, err_msg=case)
        np.testing.assert_array_equal(gpu_args[pos], plain_args[pos], err_msg=case)
        np.testing.assert_array_equal(cpu_args[pos], plain_args[pos], err_msg=case)
    assert gpu.launch.dropped == 0 and gpu.launch.meta["outputs_match_plain"] in (True, None)
    assert len(gpu) == len(cpu) and gpu.counts_by_kind() == cpu.counts_by_kind()
    assert gpu.per_thread_sequences() == cpu.per_thread_sequences()
    assert gpu.launch.sites == cpu.launch.sites and (gpu.site >= 0).all()
    assert by_sites(gpu, cpu) and same_sequences(gpu, cpu)


@pytest.mark.gpu
@pytest.mark.parametrize("case", ["a def inside a kernel", "a device function of another module", "grid.sync()"])
def test_each_construct_in_chosen_blocks_records_those_and_runs_the_others_plain(case):
    # record_blocks: the kernel branches between the instrumented body and the user's own (split_kernel), which
    # holds its own closure and, with grid.sync(), its own call of the grid barrier
    from gpuviz.capture import capture

    kernel, grid, block, make, expected = CASES[case]
    cpu_args, gpu_args = make(), make()
    cpu = capture(kernel, grid, block, *cpu_args, backend="cpu")
    gpu = capture(kernel, grid, block, *gpu_args, backend="gpu", record_blocks=[0])
    for pos, want in expected().items():
        np.testing.assert_allclose(gpu_args[pos], want, rtol=1e-12, err_msg=case)
    assert set(np.unique(gpu.block).tolist()) == {0}
    mine = {k: v for k, v in cpu.per_thread_sequences().items() if k[0] == 0}
    assert gpu.per_thread_sequences() == mine


@pytest.mark.gpu
def test_the_grid_barrier_on_a_gpu_is_reached_by_every_thread_between_its_store_and_its_load():
    from gpuviz import EventKind
    from gpuviz.capture import capture

    kernel, grid, block, make, _ = CASES["grid.sync()"]
    trace = capture(kernel, grid, block, *make(), backend="gpu")
    bar = np.flatnonzero(trace.kind == EventKind.BARRIER)
    assert len(bar) == grid * block  # every thread of every block, once
    assert set(trace.block[bar].tolist()) == set(range(grid))
    for (_b, _t), seq in trace.per_thread_sequences().items():
        assert [e[0] for e in seq] == ["start", "global_store", "barrier", "global_load", "global_store", "end"]
    # a barrier is a timed event: no thread's load after it is stamped before the last thread arrived
    stamped = trace.time[bar]
    assert (stamped > 0).all()
    ends = np.flatnonzero(trace.kind == EventKind.END)
    assert trace.time[ends].min() >= stamped.max()


@pytest.mark.gpu
def test_a_grid_too_large_to_be_resident_at_once_is_refused_before_it_runs():
    from numba import cuda

    from gpuviz.capture import capture
    from gpuviz.capture.errors import LaunchConfigError

    @cuda.jit
    def guarded(a):
        g = cuda.cg.this_grid()
        i = cuda.grid(1)
        if i < a.size:
            a[i] = 1
        g.sync()

    with pytest.raises(LaunchConfigError, match=r"uses grid\.sync\(\), a cooperative launch.*the grid has 4096"):
        capture(guarded, 4096, 256, np.zeros(4), backend="gpu")
