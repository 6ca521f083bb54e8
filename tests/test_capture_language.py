"""CUDA Python as numba-cuda compiles it, on the CPU executor: each construct against numba's simulator."""

import cmath
import math
import operator
from collections import namedtuple
from enum import Enum, IntEnum

import numpy as np
import pytest
from numba import cuda, float64, int32, uint32

import gpuviz
from gpuviz.capture.errors import KernelRaised, UnsupportedConstruct


def _same_as_simulator(kernel, grid, block, make_args):
    cpu, sim = make_args(), make_args()
    gpuviz.capture(kernel, grid, block, *cpu)
    kernel[grid, block](*sim)
    for a, b in zip(cpu, sim):
        if isinstance(a, (np.ndarray, np.void)):
            for f in a.dtype.names or [None]:
                x, y = (a, b) if f is None else (a[f], b[f])
                if x.dtype.kind in "SU":
                    np.testing.assert_array_equal(x, y)
                else:
                    np.testing.assert_allclose(x, y, rtol=1e-6, equal_nan=True)
    return cpu


@cuda.jit
def views(a, out, b):
    i = cuda.grid(1)
    if i < a.shape[0]:
        row = a[i]  # a row of a 2-d array
        s = 0.0
        for j in range(row.shape[0]):
            s += row[j]
        col = a[:, 0]
        window = a[i, 1:3]
        flat = a.reshape(a.size)
        out[i] = s + col[i] + window.size + flat[i]
    if i == 0:
        b[0, 0:2] = 9.0
        b[1, :] = a[1]


def test_slices_rows_and_reshapes_are_views_of_their_array():
    cpu = _same_as_simulator(views, 1, 4, lambda: [np.arange(12.0).reshape(4, 3), np.zeros(4), np.zeros((2, 3))])
    assert cpu[2].tolist() == [[9.0, 9.0, 0.0], [3.0, 4.0, 5.0]]


REC = np.dtype([("a", np.int32), ("b", np.float64)])


@cuda.jit
def records(ary, r):
    i = cuda.grid(1)
    if i < ary.size:
        ary[i].b = ary[i]["a"] * 2.5
    if i == 0:
        r.a = 7


def test_record_fields_are_read_and_written():
    def args():
        ary = np.zeros(3, REC)
        ary["a"] = [1, 2, 3]
        return [ary, np.zeros(1, REC)[0]]

    cpu = _same_as_simulator(records, 1, 3, args)
    assert cpu[0]["b"].tolist() == [2.5, 5.0, 7.5] and cpu[0]["a"].tolist() == [1, 2, 3] and cpu[1]["a"] == 7


@cuda.jit(device=True)
def apply(op, cast, a, i, v):
    return op(a, i, cast(v))


@cuda.jit
def casts_and_atomics(a, b, out):
    i = cuda.grid(1)
    old = apply(cuda.atomic.add, uint32, a, 0, i)
    out[i] = float64(old) + int32(2.7)
    cuda.atomic.max(b, 0, float64(i))
    cuda.atomic.add(b, 1, 0.5)


def test_numba_types_cast_and_atomics_passed_as_values():
    cpu = _same_as_simulator(casts_and_atomics, 1, 8, lambda: [np.zeros(1, np.uint32), np.zeros(2), np.zeros(8)])
    assert cpu[0][0] == 28 and cpu[1].tolist() == [7.0, 4.0]
    assert sorted(cpu[2].tolist()) == [2.0 + k * (k - 1) / 2 for k in range(8)]


class Color(IntEnum):
    RED = 1
    BLUE = 3


Pair = namedtuple("Pair", ["x", "y"])


@cuda.jit
def language(out, t, p, c):
    i = cuda.grid(1)
    acc = 0
    for k, v in enumerate(t):
        acc += k * v
    for u, w in zip(t, t):
        acc += u * w
    out[i, 0] = acc + p.x * 10 + p.y
    out[i, 1] = operator.mul(i, 3) + pow(2, 3)
    out[i, 2] = Color.BLUE if i % 2 == 0 else Color.RED
    out[i, 3] = cuda.popc(i) + cuda.clz(np.uint32(i + 1)) + cuda.ffs(np.uint32(i)) + math.gamma(i + 1.0)
    out[i, 4] = cmath.sqrt(-1.0 - i).imag + abs(cmath.exp(1j * i)) + c.real


def test_enumerate_zip_tuples_enums_operator_intrinsics_and_cmath():
    cpu = _same_as_simulator(language, 1, 4, lambda: [np.zeros((4, 5)), (1, 2, 3), Pair(4, 5), 2.0 + 1j])
    assert cpu[0][:, 0].tolist() == [8 + 14 + 45] * 4
    assert cpu[0][:, 2].tolist() == [3, 1, 3, 1]


@cuda.jit
def fp16_ops(out, a, b):
    i = cuda.grid(1)
    out[i] = cuda.fp16.hadd(a[i], b[i]) * cuda.fp16.hmul(a[i], a[i])
    if cuda.fp16.hlt(a[i], b[i]):
        out[i] = cuda.fp16.hneg(out[i])


def test_half_precision_intrinsics():
    h = np.float16
    _same_as_simulator(fp16_ops, 1, 4, lambda: [np.zeros(4, h), np.arange(4, dtype=h), np.full(4, 1.5, h)])


@cuda.jit
def raises(out):
    i = cuda.grid(1)
    out[i] = 1
    if i == 3:
        raise ValueError("thread 3 saw a bad value")


def test_raise_in_a_kernel_raises_from_the_launch():
    out = np.zeros(4)
    with pytest.raises(KernelRaised, match="thread 3 saw a bad value") as info:
        gpuviz.capture(raises, 1, 4, out)
    assert isinstance(info.value.exception, ValueError)
    with pytest.raises(ValueError, match="thread 3 saw a bad value"):
        with gpuviz.recording():
            raises[1, 4](np.zeros(4))


@cuda.jit
def dynamic_shared(x, out):
    ints = cuda.shared.array(0, dtype=int32)
    again = cuda.shared.array(0, dtype=int32)  # every dynamic declaration views the same bytes
    tx = cuda.threadIdx.x
    ints[tx] = x[cuda.grid(1)]
    cuda.syncthreads()
    evens = again[::2]
    if tx < evens.size:
        out[cuda.grid(1)] = evens[tx] + ints.size


def test_dynamic_shared_memory_is_sized_by_the_launch():
    """``cuda.shared.array(0, dtype)`` holds as many elements as the launch's dynamic shared bytes fit, per
    block, on every backend (numba's simulator and gpuviz's per-thread recorder launch with the same bytes)."""
    x = np.arange(16, dtype=np.int32)
    sim = np.zeros(16, np.int32)
    dynamic_shared[2, 8, 0, 8 * 4](x, sim)
    cpu = np.zeros(16, np.int32)
    trace = gpuviz.capture(dynamic_shared, 2, 8, x, cpu, dynamic_shared_bytes=8 * 4)
    assert cpu.tolist() == sim.tolist() == [0 + 8, 2 + 8, 4 + 8, 6 + 8, 0, 0, 0, 0, 8 + 8, 10 + 8, 12 + 8, 14 + 8, 0, 0, 0, 0]
    assert {a.name: a.shape for a in trace.launch.arrays if a.space == "shared"} == {"ints": (8,), "again": (8,)}
    by_sim = np.zeros(16, np.int32)
    sim_trace = gpuviz.capture(dynamic_shared, 2, 8, x, by_sim, backend="sim", lockstep=False, dynamic_shared_bytes=32)
    assert by_sim.tolist() == cpu.tolist()
    assert sorted(sim_trace.launch.arrays, key=lambda a: a.name) == sorted(trace.launch.arrays, key=lambda a: a.name)
    assert len(sim_trace.kind) == len(trace.kind)
    # a program's own launch kernel[grid, block, stream, nbytes] is traced with its bytes
    ran = np.zeros(16, np.int32)
    with gpuviz.recording() as rec:
        dynamic_shared[2, 8, 0, 32](x, ran)
    assert ran.tolist() == cpu.tolist()
    assert len(rec.traces) == 1 and rec.traces[0].launch.meta["dynamic_shared_bytes"] == 32


@cuda.jit
def complex_parts(values, out):
    i = cuda.grid(1)
    cuda.atomic.add(values.imag, i, 1)
    cuda.atomic.add(values.real, 0, 0.5)
    out[i] = values[i].imag


def test_atomics_on_the_real_and_imaginary_parts_of_a_complex_array():
    cpu = _same_as_simulator(complex_parts, 1, 4, lambda: [np.arange(4) * (1 + 1j), np.zeros(4)])
    assert cpu[0].real.tolist() == [2.0, 1.0, 2.0, 3.0] and cpu[0].imag.tolist() == [1.0, 2.0, 3.0, 4.0]
    # an access of values.imag[i] is an access of values[i]: the trace names the array itself
    trace = gpuviz.capture(complex_parts, 1, 4, np.zeros(4, np.complex128), np.zeros(4))
    assert [a.name for a in trace.launch.arrays] == ["values", "out"]


PAIR = np.dtype([("g", np.int32), ("h", np.float64)])


@cuda.jit(device=True)
def first_field(rec):
    return rec[0]


@cuda.jit
def record_by_position(r, out):
    out[0] = first_field(r) + r[1]
    r[1] = 2.5


def test_a_record_indexed_by_a_constant_position_is_that_field():
    def args():
        r = np.zeros(1, PAIR)
        r["g"], r["h"] = 4, 0.25
        return [r[0], np.zeros(1)]

    cpu = _same_as_simulator(record_by_position, 1, 1, args)
    assert cpu[1][0] == 4.25 and cpu[0]["h"] == 2.5


@cuda.jit
def aligned(out):
    s = cuda.shared.array(4, dtype=float64, alignment=16)
    t = cuda.local.array(2, float64, 32)  # alignment given by position
    i = cuda.threadIdx.x
    s[i] = i + 1.0
    t[0] = 2.0 * i
    cuda.syncthreads()
    out[i] = s[3 - i] + t[0]


@cuda.jit
def unaligned(out):
    s = cuda.shared.array(4, dtype=float64)
    t = cuda.local.array(2, float64)
    i = cuda.threadIdx.x
    s[i] = i + 1.0
    t[0] = 2.0 * i
    cuda.syncthreads()
    out[i] = s[3 - i] + t[0]


@cuda.jit
def misaligned(out):
    s = cuda.shared.array(4, dtype=float64, alignment=12)
    s[0] = 1.0
    out[0] = s[0]


def _events(trace):
    """Each thread's events in its own order (the simulator interleaves threads as its scheduler does)."""
    per_thread: dict = {}
    for b, t, kind, index in zip(*(trace.field(k).tolist() for k in ("block", "thread", "kind", "index"))):
        per_thread.setdefault((b, t), []).append((kind, index))
    return per_thread


def test_alignment_runs_on_every_backend_as_numba_cuda_compiles_it():
    """numba's simulator refuses alignment= (numba-cuda compiles it for a GPU); it only says where an array starts in
    memory, which no trace depends on, so cpu and sim run it: the same results and events as without it."""
    with pytest.raises(RuntimeError, match="alignment"):
        aligned[1, 4](np.zeros(4))
    want = [4.0, 5.0, 6.0, 7.0]  # s[3 - i] = 4 - i, plus 2i
    for backend in ("cpu", "sim"):
        out, plain = np.zeros(4), np.zeros(4)
        trace = gpuviz.capture(aligned, 1, 4, out, backend=backend, lockstep=False)
        twin = gpuviz.capture(unaligned, 1, 4, plain, backend=backend, lockstep=False)
        assert out.tolist() == plain.tolist() == want, backend
        assert len(trace) > 0 and _events(trace) == _events(twin), backend


def test_an_alignment_numba_refuses_is_refused_on_every_backend_with_its_rule():
    messages = []
    for backend in ("cpu", "sim"):
        with pytest.raises(UnsupportedConstruct) as info:
            gpuviz.capture(misaligned, 1, 1, np.zeros(1), backend=backend, lockstep=False)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "test_capture_language.py:" in messages[0] and "power of two" in messages[0] and "not 12" in messages[0]


NESTED = np.dtype([("g", np.int32), ("h", np.float32, (2,)), ("j", np.float32, (3, 2))])


@cuda.jit
def record_array_fields(r, src, out):
    out[0] = r.h[0] + r.h[1] + r.j[2, 1]
    r.h[1] = 7.5
    r["j"] = src  # a whole field from an array of its shape
    r.g = 3


def test_record_fields_that_are_arrays_are_read_written_and_assigned_whole():
    def args():
        r = np.zeros(1, NESTED)
        r["h"], r["j"] = [1.5, 2.0], np.arange(6, dtype=np.float32).reshape(3, 2)
        return [r[0], np.full((3, 2), 9.0, np.float32), np.zeros(1, np.float32)]

    cpu = _same_as_simulator(record_array_fields, 1, 1, args)
    assert cpu[2][0] == 1.5 + 2.0 + 5.0 and cpu[0]["h"].tolist() == [1.5, 7.5] and cpu[0]["g"] == 3
    assert (cpu[0]["j"] == 9.0).all()


@cuda.jit
def reinterpret_and_copy(byte_arr, start, stop, out, val):
    out[0] = byte_arr[start:stop].view(np.int32)[0]
    q = val.copy()
    q[0] = 100.0  # the copy is the thread's own: val is unchanged
    out[1] = q[0] + val[0] + q[2]


def test_view_as_another_dtype_and_copy():
    def args():
        return [np.arange(16, dtype=np.uint8), 4, 8, np.zeros(2, np.int32), np.array([1.0, 2.0, 3.0])]

    cpu = _same_as_simulator(reinterpret_and_copy, 1, 1, args)
    assert cpu[3][0] == np.arange(16, dtype=np.uint8)[4:8].view(np.int32)[0] and cpu[3][1] == 104
    assert cpu[4].tolist() == [1.0, 2.0, 3.0]
    # an element of the int32 view is recorded as the first byte it overlays
    trace = gpuviz.capture(reinterpret_and_copy, 1, 1, *args())
    loads = [(trace.launch.arrays[a].name, int(i)) for a, i, k in zip(trace.array, trace.index, trace.kind)
             if k == 2 and a >= 0]
    assert ("byte_arr", 4) in loads


class Shade(IntEnum):
    LIGHT = 2
    DARK = 5


@cuda.jit
def bytes_and_enum_lookup(arr, out):
    i = cuda.grid(1)
    arr[i] = b"XYZ"
    out[i] = Shade["DARK"] - Shade.LIGHT


def test_bytes_constants_and_enum_members_looked_up_by_name():
    cpu = _same_as_simulator(bytes_and_enum_lookup, 1, 3, lambda: [np.zeros(3, "S8"), np.zeros(3)])
    assert cpu[0].tolist() == [b"XYZ"] * 3 and cpu[1].tolist() == [3.0] * 3


@cuda.jit
def cmath_special(z, out, logs):
    i = cuda.grid(1)
    out[i] = cmath.exp(z[i])
    if z[i] != 0:
        logs[i] = cmath.log(z[i])  # log(0) raises in Python: the lane of z = 0 computes it masked off here


def test_cmath_follows_python_on_special_values():
    z = np.array([complex(-np.inf, -np.inf), 1 + 1j, 0j])
    cpu = _same_as_simulator(cmath_special, 1, 3, lambda: [z.copy(), np.zeros(3, np.complex128),
                                                           np.zeros(3, np.complex128)])
    assert str(cpu[1][0]) == str(cmath.exp(z[0])) == "0j"  # numpy's exp gives -0j
    assert cpu[2][2] == 0


class Small(IntEnum):
    ONE = 1


class Other(IntEnum):
    UNO = 1


@cuda.jit
def identity(a, b, out):
    out[0] = a == b
    out[1] = a is b
    out[2] = a is not b


def test_is_of_enum_members_of_different_classes_with_one_value():
    cpu = _same_as_simulator(identity, 1, 1, lambda: [Small.ONE, Other.UNO, np.zeros(3, np.bool_)])
    assert cpu[2].tolist() == [True, False, True]
    cpu = _same_as_simulator(identity, 1, 1, lambda: [Small.ONE, Small.ONE, np.zeros(3, np.bool_)])
    assert cpu[2].tolist() == [True, True, False]


@cuda.jit
def grid_tuple_index(res, old, ary, fill_val):
    gid = cuda.grid(2)
    if gid[0] < res.shape[0] and gid[1] < res.shape[1]:
        old[gid] = cuda.atomic.cas(res, gid, fill_val, ary[gid])


def test_a_tuple_variable_indexes_as_its_elements():
    def args():
        res = np.zeros((4, 8), np.int32)
        res[::2] = 7
        return [res, np.zeros((4, 8), np.int32), np.arange(32, dtype=np.int32).reshape(4, 8), 7]

    cpu = _same_as_simulator(grid_tuple_index, 1, (8, 4), args)
    # gid = (x, y) indexes rows by x < 4 and columns by y < 4: the old values where the swap happened
    assert (cpu[1][::2, :4] == 7).all() and (cpu[1][:, 4:] == 0).all() and (cpu[1][1::2] == 0).all()


@cuda.jit
def touch(out):
    out[0] = 1


def test_a_grid_of_no_blocks_is_launched_as_numba_launches_it():
    """forall() of no work launches a grid of 0 blocks: numba's simulator runs nothing; the recording passes
    it to numba's own launcher instead of stopping the program."""
    out = np.zeros(1)
    with gpuviz.recording() as rec:
        touch.forall(0)(out)
    assert out[0] == 0 and rec.launches[0].backend == "plain" and not rec.traced


@cuda.jit
def vector_types(arr):
    i = cuda.grid(1)
    v1 = cuda.float64x4(1.0, 3.0, 5.0, 7.0)
    v2 = cuda.short2(10, 11)
    if i == 0:
        v2 = cuda.short2(cuda.short1(4), 5)  # built from a smaller vector; merged per thread
    arr[i, 0] = v1.x + v1.w
    arr[i, 1] = v2.x
    arr[i, 2] = v2.y


def test_cuda_vector_types():
    cpu = _same_as_simulator(vector_types, 1, 2, lambda: [np.zeros((2, 3))])
    assert cpu[0].tolist() == [[8.0, 4.0, 5.0], [8.0, 10.0, 11.0]]


class Hue(Enum):
    RED = 1
    GREEN = 2


@cuda.jit
def enum_arguments(a, b, out):
    out[0] = a == b
    out[1] = a is b
    out[2] = a.value * 10


def test_members_of_a_plain_enum_as_arguments():
    cpu = _same_as_simulator(enum_arguments, 1, 1, lambda: [Hue.RED, Hue.GREEN, np.zeros(3)])
    assert cpu[2].tolist() == [0.0, 0.0, 10.0]
    cpu = _same_as_simulator(enum_arguments, 1, 1, lambda: [Hue.GREEN, Hue.GREEN, np.zeros(3)])
    assert cpu[2].tolist() == [1.0, 1.0, 20.0]


@cuda.jit(device=True)
def polar_as_complex(x):
    return complex(*cmath.polar(x))


@cuda.jit(device=True)
def add3(a, b, c):
    return a + b + c


@cuda.jit
def starred(z, out):
    i = cuda.grid(1)
    out[i] = polar_as_complex(z[i]) + add3(*(1.0, 2.0, i))


def test_a_tuple_unpacked_into_a_call():
    _same_as_simulator(starred, 1, 3, lambda: [np.array([1 + 1j, -2j, 3.0]), np.zeros(3, np.complex128)])


@cuda.jit
def complex_of_parts(re, im, out):
    i = cuda.grid(1)
    out[i] = complex(re[i], im[i])


def test_complex_of_an_infinite_part_and_a_negative_zero():
    def args():
        return [np.array([np.inf, 1.0, -np.inf]), np.array([-0.0, np.inf, 2.0]), np.zeros(3, np.complex128)]

    cpu = _same_as_simulator(complex_of_parts, 1, 3, args)
    assert [str(z) for z in cpu[2]] == [str(complex(np.inf, -0.0)), str(complex(1.0, np.inf)), str(complex(-np.inf, 2.0))]


@cuda.jit(device=True)
def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


@cuda.jit
def fibs(out):
    i = cuda.grid(1)
    out[i] = fib(i)


def test_a_recursive_device_function_on_cpu_and_on_the_simulators_recorder():
    cpu = _same_as_simulator(fibs, 1, 8, lambda: [np.zeros(8, np.int64)])
    assert cpu[0].tolist() == [0, 1, 1, 2, 3, 5, 8, 13]
    by_sim = np.zeros(8, np.int64)
    sim = gpuviz.capture(fibs, 1, 8, by_sim, backend="sim", lockstep=False)
    assert by_sim.tolist() == cpu[0].tolist() and len(sim.kind) == len(gpuviz.capture(fibs, 1, 8, by_sim).kind)


@cuda.jit
def tail_slices(res, old, ary, lens):
    gid = cuda.grid(1)
    if gid < res.size:
        tail = res[gid:]  # a different length in every thread
        lens[gid] = len(tail) + tail.size
        old[gid] = cuda.atomic.compare_and_swap(res[gid:], 0, ary[gid])
        if len(tail) > 1:
            tail[1] += 0


def test_a_slice_whose_length_differs_between_threads():
    def args():
        res = np.zeros(6, np.int32)
        res[::2] = 9
        return [res, np.zeros(6, np.int32), np.arange(10, 16, dtype=np.int32), np.zeros(6, np.int64)]

    cpu = _same_as_simulator(tail_slices, 1, 8, args)
    assert cpu[3].tolist() == [12, 10, 8, 6, 4, 2] and cpu[1].tolist() == [9, 0, 9, 0, 9, 0]


@cuda.jit
def loop_over_tail(res, out):
    gid = cuda.grid(1)
    s = 0
    for v in res[gid:]:
        s += v
    out[gid] = s


def test_looping_over_a_slice_of_varying_length_is_refused_with_what_to_write():
    with pytest.raises(UnsupportedConstruct, match="different length in different threads.*index the array directly"):
        gpuviz.capture(loop_over_tail, 1, 4, np.arange(4), np.zeros(4))


@cuda.jit
def swap_first(res, old, fill, val):
    i = cuda.grid(1)
    old[i] = cuda.atomic.compare_and_swap(res[i:], fill, val[i])


def test_compare_and_swap_is_recorded_on_the_first_element_by_both_recorders():
    """The simulator's recorder took compare_and_swap's second argument (a value) for an index."""
    def args():
        return [np.zeros(4, np.int32), np.zeros(4, np.int32), 0, np.arange(5, 9, dtype=np.int32)]

    cpu = gpuviz.capture(swap_first, 1, 4, *args())
    sim = gpuviz.capture(swap_first, 1, 4, *args(), backend="sim", lockstep=False)
    for t in (cpu, sim):
        atomics = sorted((int(th), int(ix)) for th, ix, k in zip(t.thread, t.index, t.kind) if k == 6)
        assert atomics == [(0, 0), (1, 1), (2, 2), (3, 3)]


def test_an_exception_raised_in_a_kernel_names_its_thread_as_numba_does():
    with pytest.raises(ValueError) as by_numba:
        raises[1, 4](np.zeros(4))
    with pytest.raises(KernelRaised) as info:
        gpuviz.capture(raises, 1, 4, np.zeros(4))
    assert str(info.value.exception) == str(by_numba.value) == "tid=[3, 0, 0] ctaid=[0, 0, 0]: thread 3 saw a bad value"
