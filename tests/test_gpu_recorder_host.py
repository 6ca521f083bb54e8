"""The host side of the GPU recorder, without a GPU: which accesses the per-warp recorder may record without
a warp vote (a static proof that lane l's index is lane 0's plus l), and how the two streams of a per-warp
recording (converged records staged in registers, diverged ones stored at once) go back into program order.
"""

import importlib.util
import re
import textwrap
import types

import numpy as np
import pytest

from gpuviz.capture.backends.gpu.launch import GpuRecording
from gpuviz.capture.backends.gpu.rewrite import BuildInfo, GpuRewriter
from gpuviz.capture.frontend.source import parse_function


def _lane_linear(tmp_path, body: str, *, block_1d: bool = True) -> set[str]:
    src = "from numba import cuda\n\n\ndef k(a, b, n):\n" + textwrap.indent(textwrap.dedent(body), "    ")
    path = tmp_path / f"lane_linear_{abs(hash(body))}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rw = GpuRewriter(parse_function(module.k), is_kernel=True, info=BuildInfo(), array_args={}, block_1d=block_1d)
    return rw.lane_linear


@pytest.mark.parametrize("body, expected", [
    ("i = cuda.grid(1)\nif i < n:\n    b[i] = a[i]\n", {"i"}),
    ("i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x\nb[i] = a[i]\n", {"i"}),
    ("i = cuda.threadIdx.x + cuda.blockDim.x * cuda.blockIdx.x\nb[i] = a[i]\n", {"i"}),
    ("i = cuda.grid(1)\ni += 1\nb[i] = a[i]\n", set()),  # bound twice: not provably lane 0's + lane
    ("i = cuda.grid(1) + 1\nb[i] = a[i]\n", set()),
    ("i = cuda.threadIdx.x\nb[i] = a[i]\n", set()),  # within a block only: not the global index the proof uses
    ("x, y = cuda.grid(2)\nb[x] = a[y]\n", set()),
    ("for i in range(n):\n    b[i] = a[i]\n", set()),
    ("if n > 0:\n    i = cuda.grid(1)\n    b[i] = a[i]\n", set()),  # not bound at the top level of the kernel
])
def test_lane_linear_names_are_exactly_the_global_thread_index(tmp_path, body, expected):
    assert _lane_linear(tmp_path, body) == expected


def test_lane_linear_needs_a_one_dimensional_block(tmp_path):
    # in a 2-D block a warp spans rows of threadIdx.x when blockDim.x < 32: lane l is not lane 0 + l
    assert _lane_linear(tmp_path, "i = cuda.grid(1)\nb[i] = a[i]\n", block_1d=False) == set()


def test_warp_records_are_put_back_in_program_order():
    # two warps' slots: converged rows first (in the order they were staged), then diverged rows, each with the
    # number of converged records of its warp that came before it (the `code` buffer)
    rec = types.SimpleNamespace(offsets=np.array([[0, 0, 0, 5, 0], [8, 0, 0, 12, 3]], np.int64))
    # warp 0: converged c0 c1 c2, diverged d0 after 1 converged and d1 after 1 converged -> c0 d0 d1 c1 c2
    # warp 1: converged c0, diverged d0 before any converged record, d1 after it, d2 after it -> d0 c0 d1 d2
    wrote = np.array([[3, 0, 0, 2], [1, 0, 0, 3]], np.int64)
    order = np.array([1, 1, 0, 0, 1, 1], np.int32)  # warp 0's entries at 0..1, warp 1's at 3..5
    rows, counts = GpuRecording._warp_record_rows(rec, wrote, order)
    assert counts.tolist() == [5, 4]
    assert rows.tolist() == [0, 5, 6, 1, 2, 12, 8, 13, 14]


def test_warp_records_of_an_empty_slot_and_no_diverged_records():
    rec = types.SimpleNamespace(offsets=np.array([[0, 0, 0, 4, 0], [6, 0, 0, 10, 0]], np.int64))
    rows, counts = GpuRecording._warp_record_rows(rec, np.array([[0, 0, 0, 0], [4, 0, 0, 0]], np.int64),
                                                  np.zeros(1, np.int32))
    assert counts.tolist() == [0, 4] and rows.tolist() == [6, 7, 8, 9]


# ---- the GPU build through the capture plan (gpu.variant_source: up to numba's compile, no GPU) --------------
def _module(tmp_path, src: str):
    path = tmp_path / f"gpu_build_{abs(hash(src))}.py"
    path.write_text("from numba import cuda, int32, float32\n\n\n" + textwrap.dedent(src))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _shared(info):
    return {a.name: (a.shape, a.dtype) for a in info.arrays if a.space == "shared"}


def test_shared_shapes_from_a_local_constant_and_from_the_callers_arguments(tmp_path):
    from gpuviz.capture.backends.gpu.launch import variant_source

    m = _module(tmp_path, """
        @cuda.jit(device=True)
        def fill(ary, dtype, n):
            sm = cuda.shared.array(n, dtype)
            sm[cuda.threadIdx.x] = ary[cuda.threadIdx.x]
            cuda.syncthreads()
            ary[cuda.threadIdx.x] = sm[n - 1 - cuda.threadIdx.x]

        @cuda.jit
        def k(ary):
            N = 8
            tile = cuda.shared.array(N, int32)
            tile[cuda.threadIdx.x] = 1
            fill(ary, float32, 16)
        """)
    info, sources = variant_source(m.k, 1, 8, [np.zeros(16, np.float32)])
    assert _shared(info) == {"tile": ((8,), "int32"), "sm": ((16,), "float32")}
    assert set(sources) == {"k", "fill"}
    # the callers' constant is written into the declaration, as numba folds it (no literal retyping of n)
    assert "sm = cuda.shared.array(16, dtype)" in sources["fill"]
    assert "tile = cuda.shared.array(N, int32)" in sources["k"]


def test_a_shared_shape_two_calls_give_differently_is_refused_with_its_line(tmp_path):
    from gpuviz.capture.errors import UnsupportedConstruct
    from gpuviz.capture.backends.gpu.launch import variant_source

    m = _module(tmp_path, """
        @cuda.jit(device=True)
        def fill(ary, n):
            sm = cuda.shared.array(n, int32)
            sm[0] = 1
            ary[0] = sm[0]

        @cuda.jit
        def k(ary):
            fill(ary, 4)
            fill(ary, 8)
        """)
    with pytest.raises(UnsupportedConstruct) as exc:
        variant_source(m.k, 1, 1, [np.zeros(4, np.int32)])
    first = str(exc.value).splitlines()[0]
    assert first.endswith("every call of fill") and ":7: cannot read the shape of shared array 'sm'" in first


def test_inplace_operator_on_a_2d_element_records_both_indices(tmp_path):
    # numba-cuda's test_idiv: grid[x, y] /= 2.0 hoists the index tuple; the recorder takes it element by element
    from gpuviz.capture.backends.gpu.launch import variant_source

    m = _module(tmp_path, """
        @cuda.jit
        def div(grid, l_x, l_y):
            for x in range(l_x):
                for y in range(l_y):
                    grid[x, y] /= 2.0
        """)
    _info, sources = variant_source(m.div, 1, 1, [np.ones((2, 3), np.float32), 2, 3])
    src = sources["div"]
    assert src.count("__gv_r_mem2(") == 2 and "__gv_r_mem1(" not in src
    assert re.search(r"__gv_r_mem2\([^)]*__gv_t\d+\[0\], __gv_t\d+\[1\]\)", src)


def test_a_recursive_device_function_builds_once_and_calls_its_own_instrumented_copy(tmp_path):
    from gpuviz.capture.backends.gpu.launch import variant_source

    m = _module(tmp_path, """
        @cuda.jit(device=True)
        def fib(n):
            if n < 2:
                return n
            return fib(n - 1) + fib(n - 2)

        @cuda.jit
        def k(out, n):
            out[0] = fib(n)
        """)
    _info, sources = variant_source(m.k, 1, 1, [np.zeros(1, np.int64), 10])
    assert set(sources) == {"k", "fib"}
    assert "fib(n - 1, __gv_s" in sources["fib"]  # the recursive call passes the recording state on


def test_launch_arguments_apply_extensions_unwrap_hints_and_take_tuples(tmp_path):
    from numba import cuda

    from gpuviz.capture.errors import UnsupportedConstruct
    from gpuviz.capture.backends.gpu.arguments import array_arguments, launch_arguments
    from gpuviz.capture.frontend.source import parse_function

    m = _module(tmp_path, """
        @cuda.jit
        def k(a, t, b):
            a[0] = t[0] + b[0]
        """)
    root = parse_function(m.k.py_func)
    a, b = np.zeros(2), np.ones(2)
    args, input_only = launch_arguments(m.k, root, [cuda.In(a), (1, (2.0, 3)), cuda.InOut(b)])
    assert args[0] is a and args[1] == (1, (2.0, 3)) and args[2] is b and input_only == {0}
    assert sorted(array_arguments(root, args)) == ["a", "b"]  # a tuple's members are not recorded by name

    class AllIn:  # numba-cuda's test_retrieve_autoconverted_arrays: every argument input-only
        def prepare_args(self, ty, val, **kwargs):
            return ty, cuda.In(val) if isinstance(val, np.ndarray) else val

    m.k.extensions.append(AllIn())
    try:
        _args, input_only = launch_arguments(m.k, root, [a, (1,), b])
    finally:
        m.k.extensions.pop()
    assert input_only == {0, 2}
    with pytest.raises(UnsupportedConstruct, match=r"argument .t. of k is a dict"):
        launch_arguments(m.k, root, [a, {"x": 1}, b])


def test_shared_elements_read_and_never_written_in_their_block_are_warned_once_per_line():
    from gpuviz.capture.backends.gpu.launch import uninitialised_shared_reads
    from gpuviz.model.trace import ArrayInfo, EventKind

    arrays = [ArrayInfo("out", (4,), "float32", "global"), ArrayInfo("sa", (4,), "float32", "shared", 3)]
    L, S, G = EventKind.SHARED_LOAD, EventKind.SHARED_STORE, EventKind.GLOBAL_STORE
    # block 0: thread 1 stores sa[0], thread 0 reads sa[0] (written in its block: fine) and sa[2] (never written)
    # block 1: thread 0 reads sa[0], which only block 0 wrote; thread 1 reads sa[2] at the same line (one warning)
    ev = {
        "block": np.array([0, 0, 0, 0, 1, 1]), "thread": np.array([1, 0, 0, 0, 0, 1]),
        "kind": np.array([S, L, L, G, L, L], np.uint8), "array": np.array([1, 1, 1, 0, 1, 1]),
        "index": np.array([0, 0, 2, 0, 0, 2]), "line": np.array([5, 6, 7, 8, 7, 7]),
    }
    warnings = uninitialised_shared_reads(ev, arrays, (2, 1, 1), (2, 1, 1), "k.py")
    assert warnings == [
        "k.py:7: thread (0, 0, 0) of block (0, 0, 0) [linear: block 0, thread 0] reads sa before any thread of its "
        "block wrote it (uninitialised shared memory reads as garbage on a GPU)",
    ]
    ev["kind"][0] = G  # nothing stores sa at all now: line 6 too
    assert [w.split(":")[1] for w in uninitialised_shared_reads(ev, arrays, (2, 1, 1), (2, 1, 1), "k.py")] == ["6", "7"]


def test_an_atomic_a_device_function_is_given_is_recorded_with_each_index_of_its_tuple(tmp_path, monkeypatch):
    # numba-cuda's test_atomics hands cuda.atomic.add to a device function; numba's simulator has no module-level
    # cuda.atomic to read, so the binding is given as numba-cuda's stub class (numba.cuda.stubs.atomic.add) is
    from gpuviz.capture.backends.gpu import variant as gpu_variant
    from gpuviz.capture.backends.gpu.launch import variant_source

    m = _module(tmp_path, """
        @cuda.jit(device=True)
        def binary_2dim_shared(ary, op2, ary_shape, binop_func):
            tx = cuda.threadIdx.x
            ty = cuda.threadIdx.y
            sm = cuda.shared.array(ary_shape, int32)
            sm[tx, ty] = ary[tx, ty]
            bin = (tx % ary_shape[0], ty)
            binop_func(sm, bin, op2)
            ary[tx, ty] = sm[tx, ty]

        @cuda.jit
        def k(ary):
            binary_2dim_shared(ary, 1, (4, 8), 0)
        """)
    stub = type("add", (), {"__qualname__": "atomic.add", "__module__": "numba.cuda.stubs"})
    found = gpu_variant.call_bindings

    def with_atomic(root):
        out = found(root)
        for bound in out.values():
            if "ary_shape" in bound:
                bound["binop_func"] = stub
        return out

    monkeypatch.setattr(gpu_variant, "call_bindings", with_atomic)
    info, sources = variant_source(m.k, 1, (4, 8), [np.zeros((4, 8), np.int32)])
    assert _shared(info) == {"sm": ((4, 8), "int32")}
    src = sources["binary_2dim_shared"]
    # the atomic recorded on sm (array id 1: code ... | 2) with both indices, then called as written
    assert re.search(r"__gv_r_mem2\([^)]*, (__gv_t\d+), (__gv_t\d+)\[0\], \2\[1\]\)\n\s+binop_func\(\1, \2, __gv_t\d+\)", src)
    # the shape tuple is a constant of every call, no array: its elements are read as numba folds them
    assert "__gv_a_ary_shape + 1" not in src


def test_a_barrier_predicate_is_read_before_the_barrier_is_recorded(tmp_path):
    # numba-cuda's test_sync: cuda.syncthreads_count(ary_in[i]) loads ary_in[i], then reaches the barrier
    from gpuviz.capture.backends.gpu.launch import variant_source

    m = _module(tmp_path, """
        @cuda.jit
        def use_syncthreads_count(ary_in, ary_out):
            i = cuda.grid(1)
            ary_out[i] = cuda.syncthreads_count(ary_in[i])
        """)
    _info, sources = variant_source(m.use_syncthreads_count, 1, 32, [np.ones(32, np.int32), np.zeros(32, np.int32)])
    src = sources["use_syncthreads_count"]
    # the barrier's record takes the predicate's value, whose load is recorded as it is evaluated
    assert re.search(r"cuda\.syncthreads_count\(__gv_r_value\([^\n]*ary_in\[__gv_r_mem1", src), src



def test_a_constant_array_is_recorded_as_the_host_array_it_copies(tmp_path):
    # numba-cuda's test_constmem: C = cuda.const.array_like(CONST1D); C[i] is recorded as a load of CONST1D
    from gpuviz.capture.backends.gpu.launch import variant_source

    m = _module(tmp_path, """
        import numpy as np

        CONST1D = np.arange(8, dtype=np.float32)

        @cuda.jit
        def cuconst(A):
            C = cuda.const.array_like(CONST1D)
            i = cuda.grid(1)
            A[i] = C[i] + 1.0
        """)
    info, sources = variant_source(m.cuconst, 1, 8, [np.zeros(8, np.float32)])
    names = [a.name for a in info.arrays]
    assert names == ["A", "CONST1D"]
    # the load of C[i] carries CONST1D's id (1: code ... | 2)
    load = re.search(r"C\[__gv_r_mem1(?:_lane_linear)?\((?:[^,]*, ){13}(\d+), C, i\)\]", sources["cuconst"])
    assert load and int(load.group(1)) & 255 == 2


def test_a_field_of_one_record_is_left_as_numba_compiles_it(tmp_path):
    # numba-cuda's test_record_dtype: rec_dest["j"] = rec_source["j"] on single records (numpy.void arguments);
    # a recorder call in place of the field name gave numba a record without a shape (KeyError: 'shape')
    from gpuviz.capture.backends.gpu.launch import variant_source

    m = _module(tmp_path, """
        @cuda.jit
        def record_setitem_array(rec_source, rec_dest):
            rec_dest["j"] = rec_source["j"]
        """)
    dt = np.dtype([("i", np.int32), ("j", np.float32, (3, 2))])
    _info, sources = variant_source(m.record_setitem_array, 1, 1, [np.zeros(1, dt)[0], np.zeros(1, dt)[0]])
    assert "rec_dest['j'] = rec_source['j']" in sources["record_setitem_array"]


def test_a_fresh_copy_of_a_namedtuple_argument_is_the_same_namedtuple():
    # numba-cuda's test_namedtuple: numba types x.a by the namedtuple's fields; a plain tuple copy did not compile
    import collections

    from gpuviz.capture.backends.gpu.arguments import _copy_tuple

    Point = collections.namedtuple("Point", ["a", "b"])
    cuda = types.SimpleNamespace(to_device=lambda x: ("on device", x.copy()))
    data = np.arange(3)
    copied = _copy_tuple(cuda, Point(data, (1, 2.0)))
    assert type(copied) is Point and copied.b == (1, 2.0)
    assert copied.a[0] == "on device" and copied.a[1] is not data and np.array_equal(copied.a[1], data)


def test_one_record_handed_to_a_device_function_is_not_indexed_as_an_array(tmp_path):
    # numba-cuda's test_getitem_idx: inner(arg0) with arg0 one record (numpy.void); ary[0] in inner is its first
    # field, so the callee must not record through the parameter (numba has no shape for a record: KeyError)
    from gpuviz.capture.backends.gpu.launch import variant_source

    m = _module(tmp_path, """
        @cuda.jit(device=True)
        def first_field(ary):
            return ary[0]

        @cuda.jit
        def outer(arg0, res):
            res[0] = first_field(arg0)
        """)
    dt = np.dtype([("g", np.int32), ("h", np.float32)])
    info, sources = variant_source(m.outer, 1, 1, [np.zeros(1, dt)[0], np.zeros(1, np.int32)])
    assert "return ary[0]" in sources["first_field"]
    assert "first_field(arg0, __gv_s" in sources["outer"] and sources["outer"].rstrip().endswith("512)")


def test_a_record_field_store_and_a_reshaped_array_are_recorded_on_their_arrays(tmp_path):
    # numba-cuda's test_record_dtype (ary[i].a = v: a store of ary[i]) and test_array_reshape (y = arr.reshape(s):
    # y[i, j] is arr's element at y's C-order flat index), recorded as the CPU executor and the simulator record them
    from gpuviz.capture.backends.gpu.launch import variant_source

    m = _module(tmp_path, """
        @cuda.jit
        def set_a(ary, i, v):
            ary[i].a = v

        @cuda.jit
        def array_reshape2d(arr, newshape, got):
            y = arr.reshape(newshape)
            for i in range(y.shape[0]):
                for j in range(y.shape[1]):
                    got[i, j] = y[i, j]
        """)
    dt = np.dtype([("a", np.int32), ("b", np.float32)])
    _info, sources = variant_source(m.set_a, 1, 1, [np.zeros(3, dt), 1, 5])
    assert re.search(r"ary\[__gv_r_mem1\((?:[^,]*, ){13}\d+, ary, i\)\]\.a = v", sources["set_a"])
    arr = np.arange(6, dtype=np.int64)
    info, sources = variant_source(m.array_reshape2d, 1, 1, [arr, (2, 3), np.zeros((2, 3), np.int64)])
    load = re.search(r"y\[__gv_r_mem2\((?:[^,]*, ){13}(\d+), y, i, j\)\]", sources["array_reshape2d"])
    assert load and int(load.group(1)) & 255 == 1  # arr's id (0) + 1
    # an F-ordered argument's reshape is not C-order flat: not taken for arr's elements
    fortran = np.asfortranarray(np.arange(6).reshape(3, 2))
    _info, sources = variant_source(m.array_reshape2d, 1, 1, [fortran, (2, 3), np.zeros((2, 3), np.int64)])
    assert "y[i, j]" in sources["array_reshape2d"]
