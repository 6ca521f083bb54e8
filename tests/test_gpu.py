"""backend="gpu" on a real NVIDIA GPU: traces equal the CPU executor's, SM ids and timestamps make sense,
the plain variant carries no recording, results equal numpy references.

Marked ``gpu``: tests/conftest.py skips them unless GPUVIZ_TEST_GPU=1 (then numba.cuda is the real one).
Run on a GPU machine: ``GPUVIZ_TEST_GPU=1 python3 -m pytest tests/test_gpu.py``.
"""

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

if os.environ.get("GPUVIZ_TEST_GPU") == "1":
    from gpuviz.capture.backends.gpu.device import gpu_cuda  # noqa: F401 - applies the numpy 2.5 shim before numba compiles

from gpuviz.catalog import all_kernels  # noqa: E402

SPECS = all_kernels()
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _args(spec, size, seed=0):
    return spec.make_args(size, np.random.default_rng(seed))


def _copy(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _capture_both(name, size=None, **gpu_options):
    from gpuviz.capture import capture

    spec = SPECS[name]
    size = size or spec.small_size
    args = _args(spec, size)
    grid, block = spec.launch(size, spec.default_block)
    before = _copy(args)
    cpu = capture(spec.kernel, grid, block, *_copy(args), backend="cpu")
    gpu_args = _copy(args)
    gpu = capture(spec.kernel, grid, block, *gpu_args, backend="gpu", **gpu_options)
    return spec, before, gpu_args, cpu, gpu


@pytest.fixture(scope="module")
def nsmid():
    from numba import cuda

    from gpuviz.capture.backends.gpu.intrinsics import nsmid as read_nsmid

    @cuda.jit
    def probe(out):
        out[0] = read_nsmid()

    out = cuda.to_device(np.zeros(1, np.int64))
    probe[1, 1](out)
    return int(out.copy_to_host()[0])


@pytest.mark.parametrize("name", list(SPECS))
def test_gpu_trace_equals_cpu_executor(name, nsmid):
    spec, before, after, cpu, gpu = _capture_both(name)
    # indices and per-thread counts: the same events in the same per-thread order (step is backend-specific)
    assert gpu.launch.dropped == 0
    assert len(gpu) == len(cpu), f"{name}: {len(gpu)} GPU events vs {len(cpu)} CPU events"
    assert gpu.per_thread_sequences() == cpu.per_thread_sequences()
    assert gpu.counts_by_kind() == cpu.counts_by_kind()
    # every event carries the capture plan's site, the same site as on the CPU executor, event for event
    from gpuviz.capture.lockstep import by_sites, same_sequences

    assert gpu.has("site") and (gpu.site >= 0).all() and gpu.launch.sites == cpu.launch.sites
    assert by_sites(gpu, cpu) and same_sequences(gpu, cpu)
    # SM ids in [0, nsmid); one SM per block
    assert gpu.has("sm") and gpu.sm.min() >= 0 and gpu.sm.max() < nsmid
    for b in np.unique(gpu.block)[:64]:
        assert len(np.unique(gpu.sm[gpu.block == b])) == 1, f"{name}: block {b} on several SMs"
    # timestamps grow within each thread, over its timestamped events in program order
    order = gpu.thread_order
    t = gpu.time[order]
    gt = gpu.global_thread[order]
    stamped = t >= 0
    t, gt = t[stamped], gt[stamped]
    same_thread = gt[1:] == gt[:-1]
    assert np.all(np.diff(t)[same_thread] >= 0), f"{name}: a thread's timestamps go backwards"
    starts = gpu.kind == 0
    assert np.all(gpu.time[starts] > 0)
    # the kernel computed what numpy says (a kernel with a deliberate race only has an intended result)
    if not spec.has_race:
        for pos, expected in spec.reference(before).items():
            atol = spec.rtol * float(np.max(np.abs(expected), initial=0.0))
            np.testing.assert_allclose(after[pos], expected, rtol=spec.rtol, atol=atol, err_msg=name)
        assert gpu.launch.meta["outputs_match_plain"] in (True, None)
    meta = gpu.launch.meta
    for variant in ("plain", "instrumented"):
        assert meta[variant]["registers_per_thread"] > 0
        assert meta[variant]["resident_blocks_per_sm"] != 0
    assert meta["registers_per_thread"] == meta["instrumented"]["registers_per_thread"]
    assert "shared_bytes_per_block" in meta and "schedule" in meta
    assert gpu.launch.backend == "gpu" and gpu.launch.device


def test_plain_ptx_has_no_recording():
    from gpuviz.capture.backends.gpu.launch import GpuRecording
    from gpuviz.capture.backends.gpu.device import kernel_ptx

    spec = SPECS["matmul_tiled"]
    args = _args(spec, spec.small_size)
    grid, block = spec.launch(spec.small_size, spec.default_block)
    rec = GpuRecording(spec.kernel, grid, block, args)
    dargs = rec.device_args(fresh=True)
    plain = kernel_ptx(rec.plain, dargs)
    for marker in ("%globaltimer", "%smid", "__gv_", "atom.global.add.u64"):
        assert marker not in plain, f"the plain PTX contains {marker!r}"
    counts = rec.count(dargs)
    bufs = rec.allocate(counts)
    rec.record(rec.device_args(fresh=True), bufs)
    instrumented = kernel_ptx(rec.record_variant.dispatcher, rec.record_args)
    assert "%globaltimer" in instrumented and "%smid" in instrumented
    # the counting variant writes no timestamps either: its recording branches are compiled out
    counting = kernel_ptx(rec.count_variant.dispatcher, rec.count_args)
    assert "%globaltimer" not in counting


def _is_subsequence(short, long) -> bool:
    it = iter(long)
    return all(any(x == y for y in it) for x in short)


@pytest.mark.parametrize("name", list(SPECS))
def test_warp_mode_records_every_converged_lane_exactly(name):
    # one record per instruction of lane 0, shown for every lane converged with it: the indices of every
    # lane are exact (regular ones as base + lane * stride, irregular ones, histogram bins, from the slab)
    spec, _before, _after, cpu, gpu = _capture_both(name, mode="warp")
    meta = gpu.launch.meta
    assert meta["value_field"] == "active_mask" and meta["mode"] == "warp" and "lane 0" in meta["records"]
    assert gpu.launch.dropped == 0
    # nothing is lost silently: recorded lane events + those run diverged from lane 0 = every event
    missing = meta["warp_lane_events_not_recorded"]
    assert len(gpu) + missing == len(cpu), f"{name}: {len(gpu)} + {missing} != {len(cpu)}"
    masks = gpu.value.astype(np.int64)
    assert np.all((masks >> (gpu.thread % 32)) & 1), "an event of a lane outside its record's mask"
    want, got = cpu.per_thread_sequences(), gpu.per_thread_sequences()
    if missing == 0:
        assert got == want
    else:
        for key, seq in got.items():
            assert _is_subsequence(seq, want[key]), f"{name}: thread {key} has events the CPU executor does not"


DIVERGE_SRC = textwrap.dedent("""
    from numba import cuda


    @cuda.jit
    def diverge_then_converge(a, out):
        i = cuda.grid(1)
        if i >= out.shape[0]:  # the last warp is partial: its lanes are never all converged after this
            return
        lane = cuda.threadIdx.x % 32
        if lane < 8:  # lanes 8-31 sit this out: lane 0's records here are stored at once, not staged
            out[i] = a[i] * 2
        for k in range(40):  # 80 converged records in a row: the register stage fills and is written mid-loop
            out[i] += a[(i + k) % a.shape[0]]
        if lane >= 16:  # lanes 16-31 leave early: each writes the record it holds at its own END
            return
        out[i] += 1
""")


def test_warp_mode_stage_survives_divergence_early_exit_and_overflow(tmp_path):
    # the per-warp recorder stages converged records in registers (one record per lane) and stores diverged
    # ones at once: every record must land in its place whatever the interleaving
    from gpuviz.capture import capture

    path = tmp_path / "diverge_kernel.py"
    path.write_text(DIVERGE_SRC)
    sys.path.insert(0, str(tmp_path))
    try:
        import importlib

        kernel = importlib.import_module("diverge_kernel").diverge_then_converge
    finally:
        sys.path.remove(str(tmp_path))
    n = 8 * 64 + 20  # a partial last warp
    a = np.arange(n, dtype=np.float32)
    out_cpu, out_gpu = np.zeros(n, np.float32), np.zeros(n, np.float32)
    grid, block = (n + 63) // 64, 64
    cpu = capture(kernel, grid, block, a, out_cpu, backend="cpu")
    gpu = capture(kernel, grid, block, a, out_gpu, backend="gpu", mode="warp")
    assert gpu.launch.dropped == 0
    missing = gpu.launch.meta["warp_lane_events_not_recorded"]
    assert missing > 0  # lanes 16-31's END runs while lane 0 is elsewhere
    want, got = cpu.per_thread_sequences(), gpu.per_thread_sequences()
    for key, seq in got.items():
        assert _is_subsequence(seq, want[key]), f"thread {key}"
    # lane 0 of every full warp: its whole sequence, in order (START, 2 + 1, 40 x (load, load, load, store), ...)
    full_warps = list(range(0, n - 31, 32))
    for t in full_warps:
        key = (t // 64, t % 64)
        assert got[key] == want[key], f"lane 0 of the warp at thread {t}"
    # lanes 1-7 ran the first branch with lane 0, lanes 8-15 only the loop and the tail, lanes 16-31 the loop
    for t in full_warps[:4]:
        for lane in (1, 7, 8, 15):
            key = (t // 64, t % 64 + lane)
            assert got[key] == want[key], f"lane {lane} of the warp at thread {t}"
    np.testing.assert_allclose(out_gpu, out_cpu)


WARP_FIELDS = ("block", "thread", "seq", "kind", "array", "index", "value")


def _warp_recording(spec, args, grid, block, counts=None, worst_case=False, **options):
    """(events, drop counters, GpuRecording) of one per-warp recording run by its stages, with the buffers
    sized from ``counts`` (default: the counting pass's)."""
    from gpuviz.capture.backends.gpu.launch import GpuRecording

    rec = GpuRecording(spec.kernel, grid, block, _copy(args), mode="warp", **options)
    if counts is None:
        counts = rec.count(rec.device_args(fresh=True))
    bufs = rec.allocate(counts, worst_case=worst_case)
    rec.record(rec.device_args(fresh=True), bufs)
    events, drops = rec.decode(rec.fetch(bufs))
    return events, drops, rec


def test_warp_mode_lane_linear_indices_equal_the_voted_ones():
    # a[i] with i = cuda.grid(1) in a 1-D block is recorded as "lane 0's index + lane" without a warp vote:
    # the same records as with the vote, partial last warp (diverged, stored at once) included
    spec = SPECS["vector_add"]
    size = 5000
    args = _args(spec, size)
    grid, block = spec.launch(size, spec.default_block)
    got = {}
    for lane_linear in (True, False):
        events, drops, rec = _warp_recording(spec, args, grid, block, lane_linear=lane_linear)
        assert int(drops[0]) == 0
        assert ("r_mem1_lane_linear" in rec.record_variant.sources["vector_add"]) == lane_linear
        got[lane_linear] = events
    assert len(got[True]["index"]) == 3 * size + 2 * grid[0] * block[0]  # a, b, c per element; START, END per thread
    for f in WARP_FIELDS:
        np.testing.assert_array_equal(np.asarray(got[True][f]), np.asarray(got[False][f]), err_msg=f)


def test_warp_mode_overflow_is_counted_and_the_worst_case_layout_holds_every_record():
    # the counting pass found each warp's converged and diverged records; a recording run whose warps converge
    # differently overflows one part of a slot: it must count what it could not write, and the layout capture()
    # then records with (room for every record in either part) must hold them all
    from gpuviz.capture.backends.gpu.launch import GpuRecording

    spec = SPECS["reduce_sum"]
    args = _args(spec, spec.small_size)
    grid, block = spec.launch(spec.small_size, spec.default_block)

    rec = GpuRecording(spec.kernel, grid, block, _copy(args), mode="warp")
    counts = rec.count(rec.device_args(fresh=True))
    diverged = int(counts[:, 3].sum())
    assert diverged > 0, "reduce_sum's tree has warps with lanes idle: diverged records"
    skewed = counts.copy()
    skewed[:, 0] += skewed[:, 3]  # the same records per warp, all taken for converged ones
    skewed[:, 3] = 0
    _events, drops, _rec = _warp_recording(spec, args, grid, block, counts=skewed)
    assert int(drops[0]) == diverged
    exact, exact_drops, _rec = _warp_recording(spec, args, grid, block, counts=counts)
    roomy, roomy_drops, _rec = _warp_recording(spec, args, grid, block, counts=skewed, worst_case=True)
    assert int(exact_drops[0]) == 0 and int(roomy_drops[0]) == 0
    for f in WARP_FIELDS:
        np.testing.assert_array_equal(np.asarray(roomy[f]), np.asarray(exact[f]), err_msg=f)


def test_warp_mode_table_layout_equals_uniform_layout():
    *_rest, uniform = _capture_both("histogram_global", mode="warp", layout="uniform")
    *_rest, table = _capture_both("histogram_global", mode="warp", layout="table")
    assert uniform.launch.meta["layout"].startswith("uniform") and table.launch.meta["layout"] == "offset table"
    assert uniform.per_thread_sequences() == table.per_thread_sequences()
    *_rest, thread_table = _capture_both("reduce_sum", layout="table")
    *_rest, thread_uniform = _capture_both("reduce_sum", layout="uniform")
    assert thread_table.per_thread_sequences() == thread_uniform.per_thread_sequences()


def test_record_blocks_records_only_those():
    spec, _b, _a, cpu, gpu = _capture_both("reduce_sum", size=3000, record_blocks=[0, 5])
    assert set(np.unique(gpu.block)) == {0, 5}
    want = {k: v for k, v in cpu.per_thread_sequences().items() if k[0] in (0, 5)}
    assert gpu.per_thread_sequences() == want
    assert "user's body" in gpu.launch.meta["unrecorded_blocks"]


@pytest.mark.parametrize("mode", ["thread", "warp"])
def test_unrecorded_blocks_run_the_plain_code_and_compute_the_right_result(mode):
    # one kernel: recorded blocks run the instrumented body, the others the user's own: all must compute C
    # (size 70: the edge tiles make lanes diverge, if-branch loads against else-branch zero stores)
    spec, before, after, cpu, gpu = _capture_both("matmul_tiled", size=70, record_blocks=[1, 7], mode=mode)
    assert set(np.unique(gpu.block)) == {1, 7}
    want = {k: v for k, v in cpu.per_thread_sequences().items() if k[0] in (1, 7)}
    got = gpu.per_thread_sequences()
    if mode == "thread":
        assert got == want
    else:  # lanes diverged from lane 0 are not recorded, but counted: nothing is lost silently
        missing = gpu.launch.meta["warp_lane_events_not_recorded"]
        assert missing > 0 and len(gpu) + missing == sum(len(v) for v in want.values())
        assert all(_is_subsequence(seq, want[key]) for key, seq in got.items())
    for pos, expected in spec.reference(before).items():
        np.testing.assert_allclose(after[pos], expected, rtol=spec.rtol, atol=spec.rtol * float(np.max(np.abs(expected))))
    assert gpu.launch.meta["outputs_match_plain"] in (True, None)


def test_split_kernel_ptx_branches_between_recorded_and_plain_bodies():
    from gpuviz.capture.backends.gpu.launch import GpuRecording
    from gpuviz.capture.backends.gpu.device import kernel_ptx

    spec = SPECS["matmul_tiled"]
    args = _args(spec, spec.small_size)
    grid, block = spec.launch(spec.small_size, spec.default_block)
    rec = GpuRecording(spec.kernel, grid, block, args, record_blocks=[0])
    assert rec.split
    source = rec.count_variant.sources["matmul_tiled"]
    # shared tiles declared once, before the branch; the plain branch holds the user's statements unchanged
    assert source.index("cuda.shared.array") < source.index("if __gv_r_block_ordinal(")
    assert source.count("cuda.shared.array") == 2
    assert "sA[ty, tx] = A[row, a_col]" in source
    dargs = rec.device_args(fresh=True)
    bufs = rec.allocate(rec.count(dargs))
    rec.record(dargs, bufs)
    ptx = kernel_ptx(rec.record_variant.dispatcher, rec.record_args)
    assert "%globaltimer" in ptx
    # one block is a range: the test "is this block recorded" reads scalar parameters, no load before it
    assert rec.block_range and rec.record_variant.blocks == "range"
    # the code before the kernel's first branch: the block test. (Text before the first %globaltimer is not
    # that: ptxas may lay the plain body out before the recorded one.)
    body = ptx[ptx.index(".entry"):]
    entry = body[: re.search(r"\bbra(\.uni)?\b", body).start()]
    assert "ld.global" not in entry, "a global load before the recorded-block branch"


@pytest.mark.parametrize("blocks", [[0, 3, 4], [2, 5, 8]])
def test_record_blocks_as_table_or_range_record_the_same(blocks):
    # [0, 3, 4] is no arithmetic progression (slot table); [2, 5, 8] is range(2, 9, 3) (scalar parameters)
    spec, _b, _a, cpu, gpu = _capture_both("reduce_sum", size=3000, record_blocks=blocks)
    assert gpu.launch.meta["recorded_block_test"] == ("block table" if blocks[0] == 0 else "range in scalar parameters")
    want = {k: v for k, v in cpu.per_thread_sequences().items() if k[0] in blocks}
    assert gpu.per_thread_sequences() == want


def test_occupancy_register_cap_keeps_the_plain_blocks_per_sm():
    spec, before, after, cpu, gpu = _capture_both("vector_add", size=50_000, mode="warp", max_registers="occupancy")
    meta = gpu.launch.meta
    assert meta["instrumented"]["resident_blocks_per_sm"] == meta["plain"]["resident_blocks_per_sm"]
    assert meta["max_registers"] >= meta["plain"]["registers_per_thread"]
    assert len(gpu) + meta["warp_lane_events_not_recorded"] == len(cpu)
    for pos, expected in spec.reference(before).items():
        np.testing.assert_allclose(after[pos], expected, rtol=spec.rtol)


def test_record_global_leaves_out_shared_accesses():
    from gpuviz.model.trace import EventKind

    spec, _b, _a, cpu, gpu = _capture_both("matmul_tiled", record="global")
    shared = {EventKind(k).label for k in (EventKind.SHARED_LOAD, EventKind.SHARED_STORE)}
    assert not np.isin(gpu.kind, [EventKind.SHARED_LOAD, EventKind.SHARED_STORE]).any()
    want = {k: [e for e in v if e[0] not in shared] for k, v in cpu.per_thread_sequences().items()}
    assert gpu.per_thread_sequences() == want
    assert gpu.launch.meta["record"] == "global" and "not recorded" in gpu.launch.meta["records"]
    assert any("record='global'" in w for w in gpu.launch.warnings)


def test_too_many_events_is_refused_not_truncated():
    from gpuviz.capture import TraceTooLarge, capture

    spec = SPECS["vector_add"]
    args = _args(spec, 10_000)
    grid, block = spec.launch(10_000, spec.default_block)
    with pytest.raises(TraceTooLarge, match="record_blocks"):
        capture(spec.kernel, grid, block, *args, backend="gpu", max_events=1000)


def test_in_place_kernel_on_device_arrays_matches_the_plain_run_without_a_warning():
    # gpuviz run passes the program's device arrays: the recording changes them in place, so the plain check
    # must run on a copy taken before it (a copy taken after gave a false "outputs differ" warning)
    from numba import cuda

    from gpuviz.capture import capture

    @cuda.jit
    def bump(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] += 1

    d = cuda.to_device(np.arange(100, dtype=np.int32))
    gpu = capture(bump, 4, 32, d, backend="gpu")
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(100) + 1)
    assert gpu.launch.meta["outputs_match_plain"] is True
    assert not any("differ" in w for w in gpu.launch.warnings)


def test_timings_on_gpu_are_labelled_gpu():
    from gpuviz.model.timings import blocks_on_sms
    from gpuviz.timing.gpu import compile_vs_run, cpu_vs_gpu

    s = cpu_vs_gpu(sizes=(1000, 100_000), repeats=3)
    procs = dict(zip(s.columns["implementation"], s.columns["processor"]))
    assert procs["numpy a + b"] == "cpu" and procs["numba vector_add"] == "gpu"
    assert all(x > 0 for x in s.columns["seconds"])
    c = compile_vs_run(names=("vector_add",), repeats=3)
    assert c.columns["first_call_s"][0] > c.columns["steady_s"][0]
    _spec, _b, _a, _cpu, gpu = _capture_both("vector_add", size=50_000, mode="warp")
    bs = blocks_on_sms(gpu)
    assert len(bs) == gpu.launch.n_blocks
    assert np.all(bs.column("end_ns") >= bs.column("start_ns"))


def test_illegal_address_is_reported_with_kernel_and_launch():
    # a fault ruins the process's CUDA context, so it happens in a child process
    code = textwrap.dedent(f"""
        import sys, numpy as np
        sys.path.insert(0, {ROOT!r})
        from gpuviz.capture import capture, KernelFault
        from tests.gpu_fault_kernel import scribble
        try:
            capture(scribble, 4, 32, np.zeros(8, np.float32), backend="gpu")
        except KernelFault as e:
            print("FAULT:", e)
    """)
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert "FAULT:" in out.stdout, out.stdout + out.stderr
    assert "scribble" in out.stdout and "[(4, 1, 1), (32, 1, 1)]" in out.stdout


# ---- the GPU build through the capture plan: what the CPU executor accepts, computed the same --------------
def _cpu_and_gpu(kernel, grid, block, args):
    from gpuviz.capture import capture

    def fresh(a):
        return tuple(fresh(e) for e in a) if isinstance(a, tuple) else np.array(a, copy=True) \
            if isinstance(a, np.ndarray) else a

    cpu_args = [fresh(a) for a in args]
    gpu_args = [fresh(a) for a in args]
    cpu = capture(kernel, grid, block, *cpu_args, backend="cpu")
    gpu = capture(kernel, grid, block, *gpu_args, backend="gpu")
    return cpu, cpu_args, gpu, gpu_args


def test_front_end_kernels_of_one_factory_get_their_own_variant():
    # numba-cuda's test_operator and test_sm: closures over one code object (an operator, a shared shape)
    # compile separately; the GPU build's variants are kept per kernel, not per code object
    import operator

    from numba import cuda

    from gpuviz.capture import capture

    def make(op):
        @cuda.jit
        def apply(a, b):
            i = 0
            a[i] = op(a[i], b[i])

        return apply

    for op, want in ((operator.add, 10.0), (operator.floordiv, 2.0), (operator.mul, 21.0)):
        a, b = np.array([7.0]), np.array([3.0])
        capture(make(op), 1, 1, a, b, backend="gpu")
        assert a[0] == want, op

    def sized(shape):
        @cuda.jit
        def s(a):
            arr = cuda.shared.array(shape, dtype=np.int32)
            a[0] = arr.size

        return s

    for shape, want in ((2, 2), ((2, 3), 6), ((2, 3, 4), 24)):
        a = np.zeros(1, np.int64)
        trace = capture(sized(shape), 1, 1, a, backend="gpu")
        assert a[0] == want
        assert [x.shape for x in trace.launch.arrays if x.space == "shared"] == [shape if isinstance(shape, tuple)
                                                                                 else (shape,)]


def test_front_end_shared_arrays_sized_by_callers_and_locals_trace_as_on_the_cpu():
    from numba import cuda, float32, int32

    @cuda.jit(device=True)
    def reverse_through_shared(ary, dtype, n):
        sm = cuda.shared.array(n, dtype)
        sm[cuda.threadIdx.x] = ary[cuda.threadIdx.x]
        cuda.syncthreads()
        ary[cuda.threadIdx.x] = sm[n - 1 - cuda.threadIdx.x]

    @cuda.jit
    def k(ary, flags):
        N = 16
        seen = cuda.shared.array(N, int32)
        seen[cuda.threadIdx.x] = 1
        cuda.syncthreads()
        flags[cuda.threadIdx.x] = seen[N - 1 - cuda.threadIdx.x]
        reverse_through_shared(ary, float32, 16)

    x = np.arange(16, dtype=np.float32)
    cpu, cpu_args, gpu, gpu_args = _cpu_and_gpu(k, 1, 16, [x, np.zeros(16, np.int32)])
    np.testing.assert_array_equal(gpu_args[0], x[::-1])
    np.testing.assert_array_equal(gpu_args[1], np.ones(16))
    assert gpu.per_thread_sequences() == cpu.per_thread_sequences()
    assert {(a.name, a.shape) for a in gpu.launch.arrays} == {(a.name, a.shape) for a in cpu.launch.arrays}


def test_front_end_tuple_and_hinted_arguments_are_passed_as_numba_passes_them():
    from numba import cuda

    from gpuviz.capture import capture

    @cuda.jit
    def k(out, t, src):
        i = cuda.threadIdx.x
        out[i] = t[0] + t[1][1] * src[i]
        src[i] = -1.0

    out, src = np.zeros(4), np.arange(4.0)
    trace = capture(k, 1, 4, cuda.InOut(out), (1.0, (0, 2.0)), cuda.In(src), backend="gpu")
    np.testing.assert_array_equal(out, 1.0 + 2.0 * np.arange(4.0))
    np.testing.assert_array_equal(src, np.arange(4.0))  # cuda.In: never copied back, as numba does
    assert {a.name for a in trace.launch.arrays} == {"out", "src"}


def test_front_end_inplace_division_of_a_2d_element_and_a_recursive_device_function():
    from numba import cuda

    @cuda.jit
    def div(grid, l_x, l_y):
        for x in range(l_x):
            for y in range(l_y):
                grid[x, y] /= 2.0

    cpu, _c, gpu, gpu_args = _cpu_and_gpu(div, 1, 1, [np.ones((2, 3), np.float32) * 4, 2, 3])
    np.testing.assert_array_equal(gpu_args[0], np.full((2, 3), 2.0, np.float32))
    assert gpu.per_thread_sequences() == cpu.per_thread_sequences()

    @cuda.jit("int64(int64)", device=True)
    def fib(n):
        if n < 2:
            return n
        return fib(n - 1) + fib(n - 2)

    @cuda.jit
    def k(out, n):
        out[0] = fib(n)

    cpu, _c, gpu, gpu_args = _cpu_and_gpu(k, 1, 1, [np.zeros(1, np.int64), 10])
    assert gpu_args[0][0] == 55
    assert gpu.per_thread_sequences() == cpu.per_thread_sequences()


def test_front_end_uninitialised_shared_read_is_warned_as_on_the_cpu():
    from numba import cuda, float32

    from gpuviz.capture import capture

    @cuda.jit
    def k(A):
        sa = cuda.shared.array(shape=5, dtype=float32)
        i = cuda.grid(1)
        A[i] = sa[i]

    trace = capture(k, 1, 5, np.zeros(5, np.float32), backend="gpu")
    assert any("reads sa before any thread of its block wrote it" in w for w in trace.launch.warnings)


def test_front_end_an_atomic_passed_into_a_device_function_is_recorded_as_on_the_cpu():
    # numba-cuda's test_atomics: atomic_binary_2dim_shared(ary, 1, uint32, (4, 8), cuda.atomic.add, ...)
    from numba import cuda, uint32

    @cuda.jit(device=True)
    def binary_2dim_shared(ary, op2, ary_dtype, ary_shape, binop_func):
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        sm = cuda.shared.array(ary_shape, ary_dtype)
        sm[tx, ty] = ary[tx, ty]
        cuda.syncthreads()
        bin = (tx, ty)
        binop_func(sm, bin, op2)
        cuda.syncthreads()
        ary[tx, ty] = sm[tx, ty]

    @cuda.jit
    def k(ary):
        binary_2dim_shared(ary, 1, uint32, (4, 8), cuda.atomic.add)

    x = np.arange(32, dtype=np.uint32).reshape(4, 8)
    cpu, _c, gpu, gpu_args = _cpu_and_gpu(k, 1, (4, 8), [x])
    np.testing.assert_array_equal(gpu_args[0], x + 1)
    assert gpu.counts_by_kind() == cpu.counts_by_kind() and gpu.counts_by_kind()["atomic"] == 32
    assert gpu.per_thread_sequences() == cpu.per_thread_sequences()


CONST1D = np.arange(64, dtype=np.float32)


def test_front_end_barrier_predicates_and_constant_arrays_trace_as_on_the_cpu():
    # numba-cuda's test_sync (the predicate's load before the barrier) and test_constmem (C = const.array_like(H):
    # C's loads are H's)
    from numba import cuda

    @cuda.jit
    def use_syncthreads_count(ary_in, ary_out):
        i = cuda.grid(1)
        ary_out[i] = cuda.syncthreads_count(ary_in[i])

    cpu, _c, gpu, gpu_args = _cpu_and_gpu(use_syncthreads_count, 1, 64, [np.arange(64, dtype=np.int32) % 2,
                                                                          np.zeros(64, np.int32)])
    np.testing.assert_array_equal(gpu_args[1], np.full(64, 32))
    assert gpu.per_thread_sequences() == cpu.per_thread_sequences()

    @cuda.jit
    def cuconst(A):
        C = cuda.const.array_like(CONST1D)
        i = cuda.grid(1)
        A[i] = C[i] + 1.0

    cpu, _c, gpu, gpu_args = _cpu_and_gpu(cuconst, 2, 32, [np.zeros(64, np.float32)])
    np.testing.assert_array_equal(gpu_args[0], CONST1D + 1)
    assert gpu.per_thread_sequences() == cpu.per_thread_sequences()


def test_front_end_record_field_stores_and_reshapes_trace_as_on_the_cpu():
    # numba-cuda's test_record_dtype (ary[i].a = v) and test_array_reshape (y = arr.reshape(s); y[i, j])
    from numba import cuda

    @cuda.jit
    def set_a(ary, i, v):
        ary[i].a = v

    dt = np.dtype([("a", np.int32), ("b", np.float32)])
    cpu, _c, gpu, gpu_args = _cpu_and_gpu(set_a, 1, 1, [np.zeros(3, dt), 1, 5])
    assert gpu_args[0]["a"].tolist() == [0, 5, 0]
    assert gpu.per_thread_sequences() == cpu.per_thread_sequences()

    @cuda.jit
    def array_reshape2d(arr, newshape, got):
        y = arr.reshape(newshape)
        for i in range(y.shape[0]):
            for j in range(y.shape[1]):
                got[i, j] = y[i, j]

    cpu, _c, gpu, gpu_args = _cpu_and_gpu(array_reshape2d, 1, 1, [np.arange(6), (2, 3), np.zeros((2, 3), np.int64)])
    np.testing.assert_array_equal(gpu_args[2], np.arange(6).reshape(2, 3))
    assert gpu.per_thread_sequences() == cpu.per_thread_sequences()


@pytest.mark.parametrize("case", ["shared slices, reversed and strided", "rows passed to a device function",
                                  "compare_and_swap on res[gid:]", "a byte slice viewed as int32", "a view of a view",
                                  "a parameter reshaped in a loop", "a tuple of arrays",
                                  "a tuple member bound in two branches", "atomics on .real and .imag",
                                  "arrays bound to other names", "a loop counter rebound to an array"])
def test_front_end_views_trace_as_on_the_cpu(case):
    # numba-cuda's test_sm (slices of shared memory), test_slicing (rows passed to a device function),
    # test_atomics (compare_and_swap on res[gid:]), test_array_methods (.view(np.int32) of a byte slice) and
    # test_ssa (a parameter reshaped in a loop): the same kernels tests/test_gpu_views.py checks without a GPU
    from tests.view_kernels import CASES

    kernel, grid, block, make = CASES[case]
    cpu, cpu_args, gpu, gpu_args = _cpu_and_gpu(kernel, grid, block, list(make()))
    # the outputs as numba-cuda's own launch of the kernel leaves them on this GPU (the reference on a GPU)
    plain_args = list(make())
    kernel[grid, block](*plain_args)
    for p, g in zip(plain_args, gpu_args):
        for p_part, g_part in zip(p, g) if isinstance(p, tuple) else [(p, g)]:
            if isinstance(p_part, np.ndarray):
                np.testing.assert_array_equal(g_part, p_part)
    assert gpu.per_thread_sequences() == cpu.per_thread_sequences()


def test_an_array_picked_per_thread_is_recorded_per_thread_on_the_gpu():
    # ``v = a`` in threads 0 and 1, ``v = b`` in threads 2 and 3: the CPU executor refuses it; on the GPU each
    # thread's store is recorded as its own array's element (tests/test_gpu_views.py checks the same against
    # numba's simulator), and the outputs are numba-cuda's own launch's
    from gpuviz.capture import capture
    from tests.view_kernels import an_array_picked_per_thread

    a, b = np.zeros(4), np.zeros(4)
    trace = capture(an_array_picked_per_thread, 1, 4, a, b, backend="gpu")
    plain = np.zeros(4), np.zeros(4)
    an_array_picked_per_thread[1, 4](*plain)
    np.testing.assert_array_equal(a, plain[0])
    np.testing.assert_array_equal(b, plain[1])
    assert a.tolist() == [1, 2, 0, 0] and b.tolist() == [0, 0, 3, 4]
    stores = {t: [(name, index) for kind, name, index, _line in seq if kind == "global_store"]
              for (_b, t), seq in trace.per_thread_sequences().items()}
    assert stores == {0: [("a", 0)], 1: [("a", 1)], 2: [("b", 2)], 3: [("b", 3)]}


# ---- what the GPU records saves and opens again (issue 23) -----------------------------------------------------
RACE_SRC = textwrap.dedent("""
    from numba import cuda


    @cuda.jit
    def count_race(counter):
        counter[0] += 1


    @cuda.jit
    def race_in_block(out):
        out[cuda.blockIdx.x] += cuda.threadIdx.x
""")


@pytest.mark.parametrize("mode", [None, "warp"])
@pytest.mark.parametrize("name", list(SPECS))
def test_gpu_traces_of_every_bundled_kernel_round_trip(name, mode, tmp_path):
    """Every bundled kernel captured on the GPU (per thread, and per warp) saves and loads back equal: events,
    SM ids and times, the index, reports, captions and warnings (tests/roundtrip.py)."""
    from tests.roundtrip import assert_round_trip

    spec, _b, _a, _cpu, gpu = _capture_both(name, **({"mode": mode} if mode else {}))
    assert gpu.launch.backend == "gpu"
    assert_round_trip(gpu, tmp_path)


def test_gpu_races_across_and_within_blocks_and_chosen_blocks_round_trip(tmp_path):
    import importlib.util

    from gpuviz.capture import capture
    from tests.roundtrip import assert_round_trip

    path = tmp_path / "gpu_races.py"
    path.write_text(RACE_SRC, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("gpu_races", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    across = capture(mod.count_race, 4, 64, np.zeros(1, np.int32), backend="gpu")
    within = capture(mod.race_in_block, 3, 32, np.zeros(3, np.int64), backend="gpu")
    chosen = capture(mod.count_race, 4, 64, np.zeros(1, np.int32), backend="gpu", record_blocks=[0, 2])
    for k, trace in enumerate((across, within, chosen)):
        assert trace.launch.backend == "gpu" and len(trace)
        (tmp_path / f"t{k}").mkdir()
        assert_round_trip(trace, tmp_path / f"t{k}")


def test_a_debug_kernel_indexing_past_its_array_ends_in_a_report():
    """Issue 25: a kernel compiled with debug=True that indexes out of range ran under `gpuviz run --backend gpu`
    until it was killed at 280 s, with no report: the program waited inside numba's own launch (the copy back of
    the debug exception flag), where the watchdog did not look. Now the program either gets numba's IndexError
    (the program catches it and goes on) or the watchdog ends it naming the kernel and the launch, well inside
    the run's time limit."""
    from gpuviz.runner import run_script

    script_path = os.path.join(ROOT, "tests", "user_scripts", "debug_out_of_range.py")
    result = run_script(script_path, backend="gpu", watchdog=10, timeout=120)
    assert result.status != "timeout" and (result.error or {}).get("kind") != "TimeLimit", result.message
    if result.status == "ok":
        assert "the program caught:" in result.stdout and "program went on" in result.stdout, result.stdout
    else:
        assert "past_the_end" in result.message and "launch 1" in result.message, result.message
