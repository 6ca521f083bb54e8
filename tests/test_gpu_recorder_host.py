"""The host side of the GPU recorder, without a GPU: which accesses the per-warp recorder may record without
a warp vote (a static proof that lane l's index is lane 0's plus l), and how the two streams of a per-warp
recording (converged records staged in registers, diverged ones stored at once) go back into program order.
"""

import importlib.util
import textwrap
import types

import numpy as np
import pytest

from gpuviz.capture.gpu import GpuRecording
from gpuviz.capture.gpu_rewrite import BuildInfo, GpuRewriter
from gpuviz.capture.source import parse_function


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
