"""Kernels that read and write through array views (slices, rows, reinterpreted dtypes, reshapes), the shapes
numba-cuda's own tests use (test_sm's shared-memory slices, test_slicing, test_atomics' compare_and_swap on
``res[gid:]``, test_array_methods' ``.view``, test_ssa's reshaped parameter), and arrays bound to other names
(test_ssa's issue 5493 rebinds a loop counter to a module-level array). tests/test_gpu_views.py runs them through
the GPU backend's rewrite."""

import numpy as np
from numba import cuda


@cuda.jit
def shared_slices(x):
    sm = cuda.shared.array(8, dtype=np.int32)
    fwd = sm[1:3]
    back = sm[1::-1]
    tail = sm[-1::-2]
    gaps = sm[::3]
    i = cuda.threadIdx.x
    for k in range(8):
        sm[k] = 99
    fwd[0] = 1
    fwd[1] = 2
    back[0] = 3
    tail[1] = 4
    gaps[2] = 5
    x[i, 0] = back[1]
    x[i, 1] = tail[2]
    x[i, 2] = gaps[1]
    x[i, 3] = sm[5]


@cuda.jit(device=True)
def copy_row(src, dst):
    for j in range(dst.shape[0]):
        dst[j] = src[j]


@cuda.jit
def rows_to_device_function(inp, out):
    i = cuda.grid(1)
    if i < inp.shape[0]:
        copy_row(inp[i, :], out[i, 1:])


@cuda.jit
def compare_and_swap_on_a_view(res, old, ary, fill_val):
    gid = cuda.grid(1)
    if gid < res.size:
        old[gid] = cuda.atomic.compare_and_swap(res[gid:], fill_val, ary[gid])


@cuda.jit
def reinterpret_bytes(byte_arr, start, stop, output):
    val = byte_arr[start:stop].view(np.int32)[0]
    output[0] = val


@cuda.jit
def view_of_a_view(a, out):
    i = cuda.threadIdx.x
    inner = a[2:, 1]
    deeper = inner[1::2]
    out[i] = deeper[i % deeper.shape[0]]


@cuda.jit
def reshaped_parameter(result, arr):
    for _ in range(1):
        arr = arr.reshape(3 * 2)
        arr = arr.reshape(3, 2)
    for i in range(arr.shape[0]):
        for j in range(arr.shape[1]):
            result[i, j] = arr[i, j]


#: name: (kernel, grid, block, a function making fresh arguments)
CASES = {
    "shared slices, reversed and strided": (shared_slices, 1, 4, lambda: (np.zeros((4, 4), np.int32),)),
    "rows passed to a device function": (rows_to_device_function, 1, 4,
                                         lambda: (np.arange(20, dtype=np.int32).reshape(4, 5),
                                                  np.zeros((4, 5), np.int32))),
    "compare_and_swap on res[gid:]": (compare_and_swap_on_a_view, 1, 8,
                                      lambda: (np.array([0, 1, 0, 3, 0, 0, 6, 0], np.int32), np.zeros(8, np.int32),
                                               np.arange(10, 18, dtype=np.int32), np.int32(0))),
    "a byte slice viewed as int32": (reinterpret_bytes, 1, 1,
                                     lambda: (np.arange(16, dtype=np.uint8), 4, 12, np.zeros(1, np.int32))),
    "a view of a view": (view_of_a_view, 1, 6, lambda: (np.arange(40, dtype=np.float64).reshape(8, 5),
                                                           np.zeros(6))),
    "a parameter reshaped in a loop": (reshaped_parameter, 1, 1,
                                       lambda: (np.zeros((3, 2)), np.arange(6.0).reshape(3, 2))),
}


@cuda.jit
def tuple_of_arrays(x):
    # numba-cuda's test_array_args: the arrays of a tuple argument, recorded as x[0], x[1], x[2]
    i = cuda.grid(1)
    if i < len(x[0]):
        x[0][i] = x[1][i] + x[2][i]


@cuda.jit
def tuple_member_bound_in_branches(res, data, n):
    # numba-cuda's test_ssa (issue 5493): a name bound to one tuple member in each branch
    if n == 1:
        v0 = data[0]
    else:
        v0 = data[0]
        for _ in range(1, n):
            v0[0] += 1.0
    res[0] = v0[0]


@cuda.jit
def atomic_on_the_real_parts(values):
    # numba-cuda's test_complex: an atomic on .real (and .imag) records the complex array's element
    i = cuda.grid(1)
    cuda.atomic.add(values.real, i, 1)
    cuda.atomic.add(values.imag, i, 2)
    values[i] = values.real[i] + 1j * values.imag[i]


CASES.update({
    "a tuple of arrays": (tuple_of_arrays, 1, 6, lambda: ((np.zeros(6), np.ones(6), np.arange(6.0)),)),
    "a tuple member bound in two branches": (tuple_member_bound_in_branches, 1, 1,
                                             lambda: (np.zeros(1), (np.ones(2), np.ones(2)), 3)),
    "atomics on .real and .imag": (atomic_on_the_real_parts, 1, 4, lambda: (np.arange(4) + 1j * np.arange(4),)),
})


@cuda.jit
def reads_shared_nobody_wrote(out):
    # numba-cuda's test_sm_creation (global_constants): a shared array read before any thread wrote it
    sa = cuda.shared.array(4, dtype=np.float32)
    i = cuda.threadIdx.x
    out[i] = sa[i] + 1.0


G = np.arange(6.0)
B = np.ones(1)


@cuda.jit
def arrays_bound_to_other_names(a):
    # an argument and a module-level array, each under a second name
    out = a
    g = G
    i = cuda.threadIdx.x
    out[i] = g[i] + 1


@cuda.jit
def a_loop_counter_rebound_to_an_array(res, m, n):
    # numba-cuda's test_ssa, issue 5493: ``t`` counts a loop, then names the module-level array B
    for t in range(1, m):
        for idx in range(n):
            t = B
            if idx == 0:
                res[0] = t[0]
            else:
                res[0] += t[0]


@cuda.jit
def an_array_picked_per_thread(a, b):
    # ``v`` is a in some threads and b in the others: each thread's stores go to its own array
    t = cuda.threadIdx.x
    if t < 2:
        v = a
    else:
        v = b
    v[t] = t + 1


CASES.update({
    "arrays bound to other names": (arrays_bound_to_other_names, 1, 6, lambda: (np.zeros(6),)),
    "a loop counter rebound to an array": (a_loop_counter_rebound_to_an_array, 1, 1, lambda: (np.zeros(1), 3, 3)),
})
