"""The capture core: exact traces, CPU executor == numba's simulator, bad input reported clearly."""

import re

import numpy as np
import pytest

import gpuviz
from gpuviz import EventKind
from gpuviz.capture.errors import (
    DivergentBarrierError,
    KernelFault,
    LaunchConfigError,
    TraceTooLarge,
    UnsupportedConstruct,
)
from gpuviz.catalog import all_kernels
from gpuviz.model.tracefile import save_traces

from . import capture_kernels as K

SPECS = all_kernels()


def _run_spec(spec, backend, size=None):
    size = spec.small_size if size is None else size
    args = spec.make_args(size, np.random.default_rng(1))
    expected = spec.reference([a.copy() if isinstance(a, np.ndarray) else a for a in args])
    grid, block = spec.launch(size, spec.default_block)
    trace = gpuviz.capture(spec.kernel, grid, block, *args, backend=backend)
    return trace, args, expected


def _assert_outputs(spec, args, expected):
    for pos, want in expected.items():
        np.testing.assert_allclose(args[pos], want, rtol=spec.rtol, atol=1e-5, err_msg=f"{spec.name} arg {pos}")


@pytest.mark.parametrize("name", list(SPECS))
def test_cpu_executor_matches_numpy_reference(name):
    spec = SPECS[name]
    trace, args, expected = _run_spec(spec, "cpu")
    _assert_outputs(spec, args, expected)
    assert trace.launch.backend == "cpu"
    counts = trace.counts_by_kind()
    n_threads = trace.launch.n_threads
    assert counts["start"] == n_threads and counts["end"] == n_threads
    assert trace.launch.dropped == 0


@pytest.mark.sim
@pytest.mark.parametrize("name", [n for n, s in SPECS.items() if not s.uses_warp_shuffle])
def test_cpu_trace_equals_simulator_trace(name):
    """Per-thread event sequences (kind, array, flat index, line) agree with numba's simulator."""
    spec = SPECS[name]
    cpu, cpu_args, expected = _run_spec(spec, "cpu")
    sim, sim_args, _ = _run_spec(spec, "sim")
    if not spec.has_race:
        _assert_outputs(spec, sim_args, expected)
    assert cpu.per_thread_sequences() == sim.per_thread_sequences()
    assert {a.name: a.shape for a in cpu.launch.arrays} == {a.name: a.shape for a in sim.launch.arrays}


def test_vector_add_trace_is_exact():
    spec = SPECS["vector_add"]
    n = 1000
    a = np.arange(n, dtype=np.float32)
    b = np.ones(n, dtype=np.float32)
    c = np.zeros(n, dtype=np.float32)
    trace = gpuviz.capture(spec.kernel, (4,), (256,), a, b, c, n)
    np.testing.assert_array_equal(c, a + b)
    names = [x.name for x in trace.launch.arrays]
    ka, kb, kc = (names.index(x) for x in ("a", "b", "c"))
    for block in range(4):
        for t in (0, 1, 31, 32, 255):
            ev = trace.events_of_thread(block, t)
            i = block * 256 + t
            mem = [(int(trace.kind[e]), int(trace.array[e]), int(trace.index[e])) for e in ev if trace.kind[e] not in (EventKind.START, EventKind.END)]
            if i < n:
                assert mem == [(EventKind.GLOBAL_LOAD, ka, i), (EventKind.GLOBAL_LOAD, kb, i), (EventKind.GLOBAL_STORE, kc, i)]
            else:
                assert mem == []
    # exactly one store per element, none out of range
    stores = trace.kind == EventKind.GLOBAL_STORE
    np.testing.assert_array_equal(np.sort(trace.index[stores]), np.arange(n))


def test_tiled_matmul_trace_is_exact():
    spec = SPECS["matmul_tiled"]
    tile = spec.tile
    n = 2 * tile
    rng = np.random.default_rng(0)
    A = rng.random((n, n), dtype=np.float32)
    B = rng.random((n, n), dtype=np.float32)
    C = np.zeros((n, n), dtype=np.float32)
    grid, block = spec.launch(n, spec.default_block)
    trace = gpuviz.capture(spec.kernel, grid, block, A, B, C, n)
    np.testing.assert_allclose(C, A @ B, rtol=1e-4)
    per = trace.launch.n_threads
    counts = trace.counts_by_kind()
    assert counts["global_load"] == per * 2 * n // tile
    assert counts["shared_store"] == per * 2 * n // tile
    assert counts["shared_load"] == per * 2 * n
    assert counts["barrier"] == per * 2 * n // tile
    assert counts["global_store"] == per
    assert trace.barriers_per_thread() == (2 * n // tile, 2 * n // tile)
    names = [x.name for x in trace.launch.arrays]
    # thread (tx, ty) of block (bx, by) loads A[row, t*TILE + tx] and B[t*TILE + ty, col], stores C[row, col]
    for bx, by, tx, ty in [(0, 0, 0, 0), (1, 0, 3, 5), (1, 1, 15, 15)]:
        blk = bx + by * grid[0]
        thr = tx + ty * tile
        row, col = by * tile + ty, bx * tile + tx
        ev = trace.events_of_thread(blk, thr)
        loads = [(names[trace.array[e]], int(trace.index[e])) for e in ev if trace.kind[e] == EventKind.GLOBAL_LOAD]
        want = []
        for t in range(n // tile):
            want.append(("A", row * n + t * tile + tx))
            want.append(("B", (t * tile + ty) * n + col))
        assert sorted(loads) == sorted(want)
        stores = [(names[trace.array[e]], int(trace.index[e])) for e in ev if trace.kind[e] == EventKind.GLOBAL_STORE]
        assert stores == [("C", row * n + col)]


def test_grid_and_block_indices_in_2d_and_3d():
    out = np.zeros((5, 7), dtype=np.int64)
    trace = gpuviz.capture(K.grid2d, (2, 3), (4, 2), out)
    y, x = np.mgrid[0:5, 0:7]
    np.testing.assert_array_equal(out, y * 8 + x)
    assert trace.counts_by_kind()["global_store"] == 35
    out3 = np.zeros((4, 3, 2), dtype=np.int64)
    gpuviz.capture(K.grid3d, (1, 2, 2), (2, 2, 2), out3)
    z = np.arange(4)[:, None, None]
    np.testing.assert_array_equal(out3, np.broadcast_to((z % 2) * 100 + (z // 2) * 10 + 2, out3.shape))


def test_device_functions_are_instrumented_and_early_return_works():
    a = np.arange(40, dtype=np.float32)
    out = np.zeros(36, dtype=np.float32)
    trace = gpuviz.capture(K.device_calls, (2,), (32,), a, out)
    want = np.minimum(a[:36] * 2 * 3 + 2, 100)
    np.testing.assert_array_equal(out, want)
    counts = trace.counts_by_kind()
    assert counts["global_load"] == 36 * 2  # two loads inside load_twice per live thread
    assert counts["global_store"] == 36
    # the store inside the device function is recorded at the device function's line
    src_lines = {int(line) for line in trace.line[trace.kind == EventKind.GLOBAL_STORE]}
    fn_lines = K.clamp_store.py_func.__code__.co_firstlineno
    assert all(fn_lines < line <= fn_lines + 6 for line in src_lines)


def test_loops_with_break_continue_and_per_thread_bounds():
    n_iters = np.arange(32, dtype=np.int64) % 7
    out = np.zeros(32, dtype=np.int64)
    gpuviz.capture(K.loops_and_breaks, 1, 32, n_iters, out)
    want = []
    for i in range(32):
        total = sum(k for k in range(1, n_iters[i] + 1) if k % 2 == 1)
        total += sum(range(i, 20, 7))
        want.append(total)
    np.testing.assert_array_equal(out, want)


def test_atomics_return_old_values_in_order_and_local_arrays_are_not_traffic():
    values = np.array([1, 2, 1, 1, 3, 2, 0, 1], dtype=np.int32)
    hist = np.zeros(5, dtype=np.int32)
    firsts = np.zeros(8, dtype=np.int32)
    trace = gpuviz.capture(K.atomics_and_locals, 1, 8, values, hist, firsts)
    np.testing.assert_array_equal(hist[:4], np.bincount(values % 4, minlength=4))
    assert hist[4] == values.max() + 3
    # each lane saw the count of lanes before it with the same bin
    want = [int(np.sum(values[:i] % 4 == values[i] % 4)) for i in range(8)]
    np.testing.assert_array_equal(firsts, want)
    assert trace.counts_by_kind()["atomic"] == 16
    assert all(trace.launch.arrays[a].space != "local" for a in set(trace.array[trace.array >= 0].tolist()))


def test_warp_shuffle_ballot_and_lane_id():
    x = np.arange(64, dtype=np.int64) * 3
    shfl = np.zeros(64, dtype=np.int64)
    ballot = np.zeros(64, dtype=np.int64)
    lane = np.zeros(64, dtype=np.int64)
    trace = gpuviz.capture(K.warp_votes, 1, 64, x, shfl, ballot, lane)
    want = x.copy()
    for i in range(64):
        if i % 32 != 31:
            want[i] = x[i + 1]
    np.testing.assert_array_equal(shfl, want)
    bits = [sum(1 << lane for lane in range(32) if x[w * 32 + lane] % 2 == 0) for w in range(2)]
    np.testing.assert_array_equal(ballot, np.repeat(bits, 32))
    np.testing.assert_array_equal(lane, np.arange(64) % 32)
    assert trace.counts_by_kind()["warp_op"] == 128


def test_syncthreads_count():
    x = np.array([1, -1, 2, 3] * 16, dtype=np.int32)
    out = np.zeros(2, dtype=np.int64)
    trace = gpuviz.capture(K.syncthreads_count_kernel, 2, 32, x, out)
    np.testing.assert_array_equal(out, [24, 24])
    assert trace.barriers_per_thread() == (1, 1)


def test_math_casts_constants_and_module_arrays():
    x = np.linspace(0.1, 4.0, 20).astype(np.float32)
    out = np.zeros(20, dtype=np.float32)
    gpuviz.capture(K.math_and_casts, 1, 32, x, out)
    y = (np.sqrt(x) + np.exp(-x) + np.abs(x - 2.0) + np.minimum(x, 1.5) + np.maximum(x, 0.5)).astype(np.float32)
    want = y + np.floor(x) + K.LUT[np.arange(20) % 8] + np.where(x > 2.0, 1.0, -1.0)
    np.testing.assert_allclose(out, want, rtol=1e-5)


def test_tuples_and_short_circuit_guard_out_of_range_reads():
    a = np.array([1, 0, 1, 1, 1], dtype=np.int32)
    out = np.zeros(8, dtype=np.int64)
    trace = gpuviz.capture(K.tuples_and_shorts, 1, 8, a, out)
    np.testing.assert_array_equal(out, [0, -1, 4, -1, 8, 0, 0, 0])
    # a[i] is read only where i < a.size (short-circuit), a[0] only for lanes past the end
    loads = trace.index[trace.kind == EventKind.GLOBAL_LOAD]
    assert loads.max() < a.size


def test_early_exit_then_barrier_is_allowed():
    out = np.zeros(32, dtype=np.float32)
    trace = gpuviz.capture(K.early_exit_barrier, 1, 32, out)
    np.testing.assert_array_equal(out[:20], (np.arange(20) + 1) % 20)
    assert trace.barriers_per_thread() == (0, 1)


def test_divergent_barrier_is_reported_with_threads():
    out = np.zeros(32, dtype=np.int64)
    with pytest.raises(DivergentBarrierError) as info:
        gpuviz.capture(K.divergent_barrier, 1, 32, out)
    err = info.value
    assert "threads 0-15 reached" in str(err) and "16-31" in str(err)
    assert list(err.arrived) == list(range(16)) and list(err.missing) == list(range(16, 32))
    assert err.line == K.divergent_barrier.py_func.__code__.co_firstlineno + 4
    assert err.trace is not None and "partial" in err.trace.launch.warnings[0]


def test_impossible_launches_are_refused_before_running():
    a = np.zeros(4, dtype=np.float32)
    with pytest.raises(LaunchConfigError, match="1056 threads exceeds the CUDA limit of 1024"):
        gpuviz.capture(K.out_of_range, 1, (32, 33), a)
    with pytest.raises(LaunchConfigError, match="80,000 bytes per block"):
        gpuviz.capture(K.too_much_shared, 1, 1, a)
    with pytest.raises(LaunchConfigError, match="at least 1"):
        gpuviz.capture(K.out_of_range, 0, 32, a)
    assert not a.any()  # nothing ran


def test_out_of_range_index_names_thread_and_line():
    a = np.zeros(8, dtype=np.float32)
    with pytest.raises(KernelFault) as info:
        gpuviz.capture(K.out_of_range, 1, 8, a)
    msg = str(info.value)
    assert "thread (7, 0, 0) of block (0, 0, 0)" in msg and "a[8]" in msg and "shape (8,)" in msg
    assert re.search(r"capture_kernels\.py:\d+", msg)


def test_unsupported_construct_names_file_line_and_construct():
    a = np.zeros(8, dtype=np.float32)
    with pytest.raises(UnsupportedConstruct) as info:
        gpuviz.capture(K.unsupported, 1, 1, a)
    msg = str(info.value)
    assert "Dict" in msg and f"capture_kernels.py:{K.unsupported.py_func.__code__.co_firstlineno + 2}" in msg


def test_shared_memory_is_fresh_and_poisoned_per_block():
    out = np.zeros(128, dtype=np.float32)
    trace = gpuviz.capture(K.shared_read_before_write, 2, 64, out)
    assert np.all(out[:64] == 7.0)
    assert np.all(np.isnan(out[64:]))  # block 1 never wrote its own tile: it must not see block 0's
    assert any("before any thread of its block wrote it" in w for w in trace.launch.warnings)


def test_endless_loop_is_stopped_with_a_clear_message():
    a = np.zeros(1, dtype=np.int32)
    with pytest.raises(KernelFault, match="loop iterations"):
        gpuviz.capture(K.forever, 1, 1, a, max_loop_iterations=10_000)


def test_record_chosen_blocks_and_event_limit():
    spec = SPECS["vector_add"]
    n = 1024
    a, b, c = np.ones(n, np.float32), np.ones(n, np.float32), np.zeros(n, np.float32)
    trace = gpuviz.capture(spec.kernel, 4, 256, a, b, c, n, record_blocks=[2])
    assert np.all(c == 2)  # every block ran
    assert set(np.unique(trace.block).tolist()) == {2}
    with pytest.raises(TraceTooLarge, match="smaller problem"):
        gpuviz.capture(spec.kernel, 4, 256, a, b, c, n, max_events=1000)


def test_steps_are_lockstep_within_a_warp():
    spec = SPECS["reduce_interleaved"]
    trace, _, _ = _run_spec(spec, "cpu")
    # every event of one (block, warp, step) is the same instruction: one kind and one line
    key = (trace.block.astype(np.int64) * 64 + trace.warp) * (2**31) + trace.step
    order = np.argsort(key, kind="stable")
    k = key[order]
    same = k[1:] == k[:-1]
    assert np.all(trace.kind[order][1:][same] == trace.kind[order][:-1][same])
    assert np.all(trace.line[order][1:][same] == trace.line[order][:-1][same])


def test_trace_round_trips_through_a_file(tmp_path):
    spec = SPECS["transpose_shared"]
    trace, _, _ = _run_spec(spec, "cpu")
    path = tmp_path / "t.gpuviz"
    save_traces(path, [trace])
    back = gpuviz.load(path)
    assert back.launch.kernel_name == "transpose_shared"
    for name in ("block", "thread", "seq", "kind", "array", "index", "line", "step"):
        np.testing.assert_array_equal(back.field(name), trace.field(name))
    assert back.per_thread_sequences() == trace.per_thread_sequences()


def test_numpy_scalar_arguments_are_numbers():
    spec = SPECS["vector_add"]
    n = np.int64(100)
    a, b, c = np.ones(100, np.float32), np.ones(100, np.float32), np.zeros(100, np.float32)
    trace = gpuviz.capture(spec.kernel, 1, 128, a, b, c, n)
    assert np.all(c == 2) and trace.counts_by_kind()["global_store"] == 100


def test_a_grid_too_big_for_the_cpu_executor_is_refused_up_front():
    spec = SPECS["vector_add"]
    a = np.zeros(4, np.float32)
    with pytest.raises(TraceTooLarge, match="more than gpuviz's CPU executor runs at once"):
        gpuviz.capture(spec.kernel, 2**20, 1024, a, a, a, 4)


@pytest.mark.sim
def test_simulator_traces_get_lockstep_steps_from_a_cpu_replay():
    spec = SPECS["matmul_tiled"]
    size = 24  # partial tiles: lanes take different branches and their sequence numbers drift apart
    args = spec.make_args(size, np.random.default_rng(0))
    grid, block = spec.launch(size, spec.default_block)
    sim = gpuviz.capture(spec.kernel, grid, block, *args, backend="sim")
    assert sim.has("step") and "replaying" in sim.launch.meta["step_source"]
    cpu = gpuviz.capture(spec.kernel, grid, block, *spec.make_args(size, np.random.default_rng(0)))
    np.testing.assert_array_equal(sim.step[sim.thread_order], cpu.step[cpu.thread_order])
    # every (block, warp, step) group is one instruction: one kind and one line
    key = (sim.block.astype(np.int64) * 64 + sim.warp) * 2**31 + sim.step
    order = np.argsort(key, kind="stable")
    same = key[order][1:] == key[order][:-1]
    assert np.all(sim.line[order][1:][same] == sim.line[order][:-1][same])


def test_lockstep_steps_are_not_invented_when_sequences_differ():
    from gpuviz.capture.lockstep import with_lockstep_steps

    spec = SPECS["vector_add"]
    a, b = np.ones(64, np.float32), np.ones(64, np.float32)
    t64 = gpuviz.capture(spec.kernel, 1, 64, a, b, np.zeros(64, np.float32), 64)
    t60 = gpuviz.capture(spec.kernel, 1, 64, a, b, np.zeros(64, np.float32), 60)
    out = with_lockstep_steps(t60, t64)
    # t60's events, untouched (the same arrays): only its launch says why no step was taken over
    assert out.recorded_fields == t60.recorded_fields and all(out.field(n) is t60.field(n) for n in t60.recorded_fields)
    assert out.launch.meta["step_source"].startswith("none") and "step_source" not in t60.launch.meta


def test_shipped_gpu_recordings_carry_lockstep_steps():
    from gpuviz.timing.recordings import list_recordings

    recs = [r for r in list_recordings(kind="trace")]
    assert recs, "assets/recordings holds the H200 recordings"
    from gpuviz.model.tracefile import load_traces

    for rec in recs:
        for trace in load_traces(rec.path):
            if trace.launch.meta.get("mode", "thread") == "thread":
                assert trace.has("step") and trace.has("sm"), rec.path


@pytest.mark.sim
def test_numpy_scalar_arguments_are_numbers_on_the_simulator_too():
    from gpuviz.catalog import get_kernel

    spec = get_kernel("vector_add")
    a, b, c = np.ones(40, np.float32), np.ones(40, np.float32), np.zeros(40, np.float32)
    sim = gpuviz.capture(spec.kernel, 1, 64, a, b, c, np.int32(40), backend="sim")
    assert [x.name for x in sim.launch.arrays] == ["a", "b", "c"]
    assert np.all(c == 2)


@pytest.mark.sim
@pytest.mark.parametrize("case", ["grid_stride", "shared_3d"])
def test_harder_control_flow_matches_the_simulator(case):
    """Grid-stride loops, while/break/continue nested in ifs, device functions returning from a loop,
    2-d atomics, 3-d blocks and shared arrays: results and per-thread traces equal numba's simulator's."""
    rng = np.random.default_rng(3)
    if case == "grid_stride":
        kernel, grid, block = K.grid_stride_and_nested_control, 3, 32
        x = (rng.random(250, dtype=np.float32) * 6 - 1).astype(np.float32)

        def fresh():
            return [x.copy(), np.zeros(250 + 3, np.float32), np.zeros((2, 3), np.int32)]
    else:
        kernel, grid, block = K.shared_3d_tile, 2, (8, 4, 2)
        src = rng.random(128, dtype=np.float32)

        def fresh():
            return [src.copy(), np.zeros(128, np.float32)]
    cpu_args, sim_args = fresh(), fresh()
    cpu = gpuviz.capture(kernel, grid, block, *cpu_args)
    sim = gpuviz.capture(kernel, grid, block, *sim_args, backend="sim")
    for a, b in zip(cpu_args, sim_args):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert cpu.per_thread_sequences() == sim.per_thread_sequences()
    if case == "shared_3d":
        t = src.reshape(2, 2, 4, 8)  # block, z, y, x
        want = t[:, ::-1, ::-1, ::-1] + np.roll(t, -1, axis=3)
        np.testing.assert_allclose(cpu_args[1], want.reshape(-1), rtol=1e-6)


def test_no_garbage_collection_starts_inside_a_simulated_launch():
    # numba's simulator runs each CUDA thread as a Python thread: a collection started in one of them runs
    # finalizers there, holding the GIL, while the block's other threads wait at a barrier (a CI run hung so)
    import gc
    import threading

    spec = SPECS["reduce_sum"]
    caller = threading.get_ident()
    started_in: list[int] = []

    def note(phase, _info):
        if phase == "start":
            started_in.append(threading.get_ident())

    gc.callbacks.append(note)
    try:
        _run_spec(spec, "sim")
    finally:
        gc.callbacks.remove(note)
    assert started_in and set(started_in) == {caller}
    assert gc.isenabled()
