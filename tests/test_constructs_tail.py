"""The long tail of issue 25 that numba compiles: a grid-wide barrier (``cuda.cg.this_grid().sync()``), a ``def``
inside a kernel, ``*args``, ``tuple(...)``, reductions of a local array, a device function of another module; and a
kernel built with ``exec()`` (no source), which runs untraced with that reason.

Each construct is captured on the cpu and sim back ends and checked against numba's simulator run alone (this
process runs numba in simulator mode: tests/conftest.py), and its trace against what the kernel must record."""

import re

import numpy as np
import pytest
from numba import cuda

import gpuviz
from gpuviz import EventKind
from gpuviz.capture.errors import DivergentBarrierError, UnsupportedConstruct

from . import constructs_tail_helpers as helpers
from .gpu_tail_kernels import tuple_values as tuple_kernel  # the same kernel the GPU tests capture

BACKENDS = ("cpu", "sim")
HERE = __file__


def _line_of(kernel, text: str) -> int:
    """The absolute line of the first line of ``kernel``'s source that holds ``text``."""
    import inspect

    lines, first = inspect.getsourcelines(kernel.py_func)
    return first + next(k for k, line in enumerate(lines) if text in line)


def _capture_and_simulate(kernel, grid, block, make_args, backend):
    """(captured arguments, simulator's arguments, trace): ``kernel`` captured on ``backend`` and run alone on
    numba's simulator, on equal inputs; the result arrays must agree."""
    mine, ref = make_args(), make_args()
    trace = gpuviz.capture(kernel, grid, block, *mine, backend=backend)
    kernel[grid, block](*ref)
    for a, b in zip(mine, ref):
        if isinstance(a, np.ndarray):
            np.testing.assert_allclose(a, b, rtol=1e-12)
    assert trace.launch.backend == backend
    return mine, ref, trace


def _memory(trace, block, thread):
    """(kind, array name, flat index) of one thread's memory events, in its order."""
    names = [a.name for a in trace.launch.arrays]
    return [(EventKind(int(trace.kind[e])).label, names[int(trace.array[e])], int(trace.index[e]))
            for e in trace.events_of_thread(block, thread) if EventKind(int(trace.kind[e])).is_memory]


# ---- 1. a grid-wide barrier ------------------------------------------------------------------------------------
@cuda.jit
def grid_rotate(a, out):
    g = cuda.cg.this_grid()
    i = cuda.grid(1)
    a[i] = i * 10
    g.sync()
    out[i] = a[(i + 1) % a.size]


@cuda.jit
def grid_chained(a, out):
    i = cuda.grid(1)
    a[i] = i + 1
    cuda.cg.this_grid().sync()
    out[i] = a[a.size - 1 - i]


@cuda.jit
def grid_divergent(a):
    i = cuda.grid(1)
    if i < 3:
        cuda.cg.this_grid().sync()
    a[i] = i


def _arrivals_before_departures(trace):
    """No event after the grid barrier (of any thread, in any block) issues before the last thread of the whole
    grid arrives at it: the barrier's events share one issue step that every later event follows."""
    kind, step, seq = trace.kind, trace.field("step"), trace.field("seq")
    bar = np.flatnonzero(kind == EventKind.BARRIER)
    assert len(bar) == trace.launch.n_threads  # every thread of every block arrives once
    arrival = int(step[bar].max())
    barrier_seq = {(int(trace.block[e]), int(trace.thread[e])): int(seq[e]) for e in bar}
    after = np.array([seq[e] > barrier_seq[(int(trace.block[e]), int(trace.thread[e]))] for e in range(len(kind))])
    before = ~after & (kind != EventKind.BARRIER)
    assert after.any() and int(step[after].min()) > arrival  # nobody goes on before everyone arrived
    assert int(step[before].max()) < int(step[bar].min())  # and nobody arrives before everyone's earlier events
    assert set(int(b) for b in trace.block[bar]) == set(range(trace.launch.n_blocks))


def test_grid_sync_is_a_barrier_of_every_block_on_the_cpu():
    """Four blocks: each thread reads what a thread of the next block wrote before the barrier. numba's simulator
    runs the blocks one after another, so it is no reference here: the expected values are what a GPU gives."""
    a, out = np.zeros(32), np.zeros(32)
    trace = gpuviz.capture(grid_rotate, 4, 8, a, out, backend="cpu")
    np.testing.assert_array_equal(out, np.roll(np.arange(32) * 10.0, -1))
    _arrivals_before_departures(trace)
    # the barrier is listed as a site of its own line, and each thread's events around it are in program order
    line = _line_of(grid_rotate, "g.sync()")
    assert [s.line for s in trace.launch.sites if s.kind == "barrier"] == [line]
    assert _memory(trace, 3, 7) == [("global_store", "a", 31), ("global_load", "a", 0), ("global_store", "out", 31)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kernel", [grid_rotate, grid_chained], ids=["g.sync", "this_grid().sync"])
def test_grid_sync_of_one_block_matches_the_simulator(kernel, backend):
    _, ref, trace = _capture_and_simulate(kernel, 1, 16, lambda: [np.zeros(16), np.zeros(16)], backend)
    assert ref[1].tolist() != [0.0] * 16
    seqs = trace.per_thread_sequences()
    for (_, t), events in seqs.items():
        kinds = [e[0] for e in events]
        assert kinds.count("barrier") == 1 and kinds.index("barrier") == 2  # start, store, barrier, load, store, end
    if backend == "cpu":
        _arrivals_before_departures(trace)


def test_grid_sync_of_one_block_records_the_same_events_on_cpu_and_sim():
    cpu = gpuviz.capture(grid_chained, 1, 8, np.zeros(8), np.zeros(8), backend="cpu")
    sim = gpuviz.capture(grid_chained, 1, 8, np.zeros(8), np.zeros(8), backend="sim")
    assert cpu.per_thread_sequences() == sim.per_thread_sequences()


def test_grid_sync_across_blocks_is_refused_on_the_simulator_naming_it_and_its_line():
    line = _line_of(grid_rotate, "g.sync()")
    with pytest.raises(UnsupportedConstruct) as err:
        gpuviz.capture(grid_rotate, 2, 8, np.zeros(16), np.zeros(16), backend="sim")
    assert f"{HERE}:{line}: grid.sync() is not supported on the sim backend" in str(err.value)
    assert "one after another" in str(err.value) and err.value.line == line


def test_grid_sync_across_blocks_runs_untraced_on_the_simulator_under_a_recording():
    a, out = np.zeros(16), np.zeros(16)
    with gpuviz.recording(backend="sim") as rec:
        grid_rotate[2, 8](a, out)
    (launch,) = rec.launches
    assert launch.status == "untraced" and "grid.sync() is not supported on the sim backend" in launch.reason
    assert a.tolist() == [i * 10.0 for i in range(16)]  # it ran (numba's simulator, block after block)


def test_a_grid_sync_not_every_thread_reaches_is_a_divergent_grid_barrier():
    line = _line_of(grid_divergent, "this_grid().sync()")
    with pytest.raises(DivergentBarrierError, match=re.escape(f"{HERE}:{line}: divergent grid barrier")):
        gpuviz.capture(grid_divergent, 2, 4, np.zeros(8), backend="cpu")


def test_grid_sync_is_accepted_for_the_gpu_backend_which_launches_it_cooperatively():
    from gpuviz.capture.frontend.plan import plan_for

    plan_for(grid_rotate).refuse_on("gpu", 4)  # nothing refused: tests/test_gpu_tail.py records it on a GPU
    assert plan_for(grid_rotate).grid_sync and plan_for(grid_chained).grid_sync
    assert not plan_for(closure_kernel).grid_sync


# ---- 2. a def inside a kernel, *args, tuple(...), local-array reductions, another module's device function ------
@cuda.jit
def closure_kernel(a, out):
    i = cuda.grid(1)
    base = i * 100

    def load_plus(j, k):
        if j >= a.size:
            return base
        return a[j] + base + k

    if i < out.size:
        out[i] = load_plus(i, 1) + load_plus(i + 8, 2)


@cuda.jit(device=True)
def add_all(*xs):
    s = 0.0
    for x in xs:
        s += x
    return s


@cuda.jit
def varargs_kernel(out, *rest):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = rest[0][i] * rest[1] + add_all(i, 2.0, rest[1])


@cuda.jit
def local_reductions(a, out):
    i = cuda.grid(1)
    loc = cuda.local.array(4, np.float64)
    for j in range(4):
        loc[j] = a[(i + j) % a.size]
    out[i, 0] = loc.sum()
    out[i, 1] = loc.mean()
    out[i, 2] = loc.max() - loc.min()
    out[i, 3] = loc.prod()
    out[i, 4] = loc.argmax()


@cuda.jit
def module_device_function(a, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = helpers.scaled_load(a, i) + helpers.OFFSET


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_def_inside_a_kernel_runs_and_records_its_loads(backend):
    mine, _, trace = _capture_and_simulate(closure_kernel, 2, 8, lambda: [np.arange(16.0), np.zeros(16)], backend)
    assert mine[1][3] == 3 + 300 + 1 + 11 + 300 + 2 and mine[1][12] == 12 + 1200 + 1 + 1200
    # thread 3 of block 0 (i = 3) loads a[3] and a[11]; i = 12 loads a[12] only (12 + 8 is past the end)
    assert _memory(trace, 0, 3) == [("global_load", "a", 3), ("global_load", "a", 11), ("global_store", "out", 3)]
    assert _memory(trace, 1, 4) == [("global_load", "a", 12), ("global_store", "out", 12)]
    ends = [e for e in range(len(trace.kind)) if trace.kind[e] == EventKind.END]
    assert len(ends) == 16  # the closure's returns end the closure, not the thread


@pytest.mark.parametrize("backend", BACKENDS)
def test_kernels_and_device_functions_with_star_args(backend):
    mine, _, trace = _capture_and_simulate(varargs_kernel, 1, 8, lambda: [np.zeros(8), np.arange(8.0), 3.0],
                                           backend)
    assert mine[0].tolist() == [i * 3.0 + i + 2.0 + 3.0 for i in range(8)]
    assert sorted(a.name for a in trace.launch.arrays) == ["out", "rest[0]"]
    assert _memory(trace, 0, 5) == [("global_load", "rest[0]", 5), ("global_store", "out", 5)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_tuple_of_values(backend):
    mine, _, _ = _capture_and_simulate(tuple_kernel, 1, 8, lambda: [np.zeros(8)], backend)
    assert mine[0].tolist() == [i + i * 20 + 300 for i in range(8)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_reductions_of_a_local_array(backend):
    mine, _, trace = _capture_and_simulate(local_reductions, 1, 4, lambda: [np.array([1.0, 5, 2, 4]), np.zeros((4, 5))],
                                           backend)
    assert mine[1][0].tolist() == [12.0, 3.0, 4.0, 40.0, 1.0]
    # the local array's elements are no events: four loads of a, five stores of out
    assert [k for k, _, _ in _memory(trace, 0, 0)] == ["global_load"] * 4 + ["global_store"] * 5


@cuda.jit
def global_sum(a, out):
    out[0] = a.sum()


def test_a_reduction_of_a_global_array_is_refused_naming_it_and_its_line():
    line = _line_of(global_sum, "a.sum()")
    for backend in BACKENDS:
        with pytest.raises(UnsupportedConstruct, match=re.escape(f"{HERE}:{line}: the method .sum() of a: gpuviz runs "
                                                                 "it on a thread's own cuda.local.array only")):
            gpuviz.capture(global_sum, 1, 1, np.ones(4), np.zeros(1), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_device_function_reached_as_an_attribute_of_another_module(backend):
    mine, _, trace = _capture_and_simulate(module_device_function, 1, 8, lambda: [np.arange(8.0), np.zeros(8)],
                                           backend)
    assert mine[1].tolist() == [i * 2 + 1 + 7.0 for i in range(8)]
    # the device function's load is recorded, at its line in the other module
    assert _memory(trace, 0, 6) == [("global_load", "a", 6), ("global_store", "out", 6)]
    load = [s for s in trace.launch.sites if s.kind == "load"]
    assert [(s.function, s.array) for s in load] == [("scaled_load", "a")]


def test_cpu_and_sim_record_the_same_events_for_every_construct():
    cases = [
        (closure_kernel, 2, 8, lambda: [np.arange(16.0), np.zeros(16)]),
        (varargs_kernel, 1, 8, lambda: [np.zeros(8), np.arange(8.0), 3.0]),
        (tuple_kernel, 1, 8, lambda: [np.zeros(8)]),
        (local_reductions, 1, 4, lambda: [np.array([1.0, 5, 2, 4]), np.zeros((4, 5))]),
        (module_device_function, 1, 8, lambda: [np.arange(8.0), np.zeros(8)]),
    ]
    for kernel, grid, block, make_args in cases:
        cpu = gpuviz.capture(kernel, grid, block, *make_args(), backend="cpu")
        sim = gpuviz.capture(kernel, grid, block, *make_args(), backend="sim")
        assert cpu.per_thread_sequences() == sim.per_thread_sequences(), kernel.__name__


def test_the_gpu_backend_refuses_what_numba_cuda_does_not_run_naming_construct_and_line():
    """numba-cuda launches no kernel with *args and compiles no .max() or .min() of a local array: the gpu back end
    refuses them, saying so; the rest of this section it records (tests/test_gpu_tail.py)."""
    from gpuviz.capture.frontend.plan import plan_for

    cases = [(varargs_kernel, "def varargs_kernel", "*args of a kernel", "numba-cuda does not launch a kernel with *args"),
             (local_reductions, "loc.max()", ".max()", "numba-cuda does not compile a local array's .min() or .max()")]
    for kernel, text, construct, why in cases:
        line = _line_of(kernel, text)
        with pytest.raises(UnsupportedConstruct, match=re.escape(f"{HERE}:{line}: {construct} is not supported on "
                                                                 f"the gpu backend: {why}")):
            plan_for(kernel).refuse_on("gpu", 1)
        plan_for(kernel).refuse_on("sim", 1)  # the simulator's recorder models them all
    for kernel in (closure_kernel, module_device_function, tuple_kernel):
        plan_for(kernel).refuse_on("gpu", 1)


# ---- 3. a kernel built with exec(): no source --------------------------------------------------------------------
def _exec_kernel():
    ns = {"cuda": cuda}
    exec("def made(a):\n    i = cuda.grid(1)\n    if i < a.size:\n        a[i] = i * 3\n", ns)  # noqa: S102
    return cuda.jit(ns["made"])


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_kernel_built_with_exec_is_refused_with_no_source(backend):
    with pytest.raises(UnsupportedConstruct, match=re.escape("no source: built with exec()")):
        gpuviz.capture(_exec_kernel(), 1, 4, np.zeros(4), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_kernel_built_with_exec_runs_untraced_with_that_reason(backend):
    kernel = _exec_kernel()
    a = np.zeros(8)
    with gpuviz.recording(backend=backend) as rec:
        kernel[2, 4](a)
    assert a.tolist() == [i * 3.0 for i in range(8)]
    (launch,) = rec.launches
    assert launch.status == "untraced" and "no source: built with exec()" in launch.reason
    assert rec.status == "ok" and len(rec.traces) == 1 and len(rec.traces[0]) == 0
