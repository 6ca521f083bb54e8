"""The GPU backend follows array views without a GPU: its rewrite of each view kernel (tests/view_kernels.py) is
run on numba's simulator with Python stand-ins for the recorder device functions, and the element indices it
would record are compared, thread by thread and in program order, with the CPU executor's trace of the same
launch. The stand-ins compute the flat index from the same offset and stride arithmetic the device recorders
do (gpu_rewrite.make_recorders: r_view*, r_mem*, slice_start, wrap); the real recorders run in
tests/test_gpu.py on a GPU."""

import ast
import threading

import numpy as np
import pytest

import gpuviz
from gpuviz.capture.backends.gpu.rewrite import PREFIX, BuildInfo, GpuRewriter
from gpuviz.capture.backends.gpu.bindings import view_parameters
from gpuviz.capture.backends.gpu.recorders import slice_first
from gpuviz.capture.backends.gpu.arguments import array_arguments
from gpuviz.capture.backends.sim.backend import simulator_cuda
from gpuviz.capture.frontend.plan import plan_for

from .view_kernels import CASES

N_BUFFERS = 13  # a recorder's first arguments: the thread's state, then the 12 trace buffers (gpu_rewrite.BUFFERS)


def _wrap(i, n):
    return i + n if i < 0 else i


class Recorded:
    """What the stand-in recorders saw, per simulated thread: {(block, thread): [(site, array id, flat index)]}."""

    def __init__(self, block):
        block = (block,) if isinstance(block, int) else tuple(block)
        self.block = block + (1,) * (3 - len(block))
        self.events: dict[tuple[int, int], list] = {}
        self.lock = threading.Lock()

    def add(self, code, flat):
        if code & 255:
            me = threading.current_thread()  # the simulator runs each CUDA thread as a Python thread
            bx, by, bz = self.block
            t = me.threadIdx.x + bx * (me.threadIdx.y + by * me.threadIdx.z)
            with self.lock:
                self.events.setdefault((me.blockIdx.x, t), []).append((code >> 8, (code & 255) - 1, int(flat)))

    def functions(self) -> dict:
        """Stand-ins for the ``__gv_r_*`` device functions, with their signatures: (state, the buffers, code, ...)."""
        add = self.add

        def mem(rest, dims):
            code, A, idx = rest[N_BUFFERS], rest[N_BUFFERS + 1], rest[N_BUFFERS + 2:]
            flat = 0
            for d in range(dims):
                flat = flat * A.shape[d] + _wrap(idx[d], A.shape[d])
            add(code, flat)
            return idx[0] if dims == 1 else tuple(idx)

        def view(rest, dims):
            code, V, off, isz, idx = rest[N_BUFFERS:N_BUFFERS + 4] + (rest[N_BUFFERS + 4:],)
            add(code, (off + sum(_wrap(idx[d], V.shape[d]) * V.strides[d] for d in range(dims))) // isz)
            return idx[0] if dims == 1 else tuple(idx)

        fns = {"r_begin": lambda *r: None, "r_end": lambda *r: None, "r_event": lambda *r: None,
               "r_value": lambda *r: r[-1], "r_wrap": _wrap, "r_slice_start": slice_first,
               "r_mem1_lane_linear": lambda *r: mem(r, 1)}
        for d in range(1, 5):
            fns[f"r_mem{d}"] = (lambda d: lambda *r: mem(r, d))(d)
            fns[f"r_view{d}"] = (lambda d: lambda *r: view(r, d))(d)
        return {PREFIX + k: v for k, v in fns.items()}


def gpu_rewrite_accesses(kernel, grid, block, *args):
    """{linear thread: [(kind, array name, flat index)]} of the memory accesses the GPU rewrite records, in
    program order: its rewritten kernel and device functions, run on numba's simulator."""
    cuda = simulator_cuda()
    plan = plan_for(kernel)
    info = BuildInfo(sites=list(plan.sites))
    info.view_params = view_parameters(plan.root)
    params = plan.root.params
    array_args = array_arguments(plan.root, args)  # as the GPU backend lists them: x, and x[0] of a tuple x
    for name, a in array_args.items():
        info.array(("param", name), a)
    contiguous = frozenset(p for p, a in zip(params, args) if isinstance(a, np.ndarray) and a.flags["C_CONTIGUOUS"])
    rec = Recorded(block)
    ns: dict = {}
    rewritten = {}
    for fp in plan.functions:  # callers before callees, as build_variant rewrites them
        rw = GpuRewriter(fp.fs, is_kernel=fp.is_kernel, info=info, array_args=array_args if fp.is_kernel else {},
                         plan=plan, c_contiguous=contiguous if fp.is_kernel else frozenset())
        rewritten[fp.fs.name] = (fp, rw.rewrite())
    for name, (fp, tree) in rewritten.items():
        ns.update(fp.fs.names())
    ns.update(rec.functions())
    ns[PREFIX + "cuda"] = cuda
    ns[PREFIX + "state_t"] = np.int64
    jitted = {}
    for name, (fp, tree) in rewritten.items():
        exec(compile(ast.Module(body=[tree], type_ignores=[]), fp.fs.file, "exec"), ns)  # noqa: S102
        jitted[name] = cuda.jit(device=not fp.is_kernel)(ns[name])
    for name, (fp, tree) in rewritten.items():
        if not fp.is_kernel:
            ns[name] = jitted[name]
    for fp, _tree in rewritten.values():  # a caller's own name for a device function
        for call_name, sub in fp.fs.device_functions.items():
            ns[call_name] = jitted[sub.name]
    bufs = [np.zeros(1, np.int64) for _ in range(N_BUFFERS - 1)]
    jitted[plan.root.name][grid, block](*args, *bufs, *([0] * 7))
    tpb = int(np.prod(block))
    return {b * tpb + t: [(plan.sites[site].kind, info.arrays[aid].name, flat) for site, aid, flat in events]
            for (b, t), events in rec.events.items()}


def cpu_accesses(kernel, grid, block, *args):
    trace = gpuviz.capture(kernel, grid, block, *args, backend="cpu")
    kinds = {"global_load": "load", "shared_load": "load", "global_store": "store", "shared_store": "store",
             "atomic": "atomic"}
    tpb = int(np.prod(block))
    out = {}
    for (b, t), seq in trace.per_thread_sequences().items():
        acc = [(kinds[k], name, index) for k, name, index, _line in seq if k in kinds]
        if acc:
            out[b * tpb + t] = acc
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_the_gpu_rewrite_records_a_views_elements_as_the_cpu_executor_does(case):
    kernel, grid, block, make = CASES[case]
    want = cpu_accesses(kernel, grid, block, *make())
    got = gpu_rewrite_accesses(kernel, grid, block, *make())
    assert want, "the CPU trace records these accesses"
    assert got == want


@pytest.mark.parametrize("lo, step, n", [(lo, step, n) for n in (0, 1, 5) for step in (-3, -1, 1, 2)
                                         for lo in (None, -7, -1, 0, 2, 4, 9)])
def test_slice_first_is_pythons_slice_start(lo, step, n):
    start = slice(lo, None, step).indices(n)[0]
    assert slice_first(0 if lo is None else lo, lo is not None, step, n) == start


def test_an_array_picked_per_thread_is_recorded_per_thread():
    """``v = a`` in some threads, ``v = b`` in the others: the CPU executor refuses it (one array per statement),
    numba's simulator runs it, and the GPU rewrite records each thread's element of its own array, as the
    simulator's trace of the same launch does."""
    from .view_kernels import an_array_picked_per_thread

    def make():
        return np.zeros(4), np.zeros(4)

    trace = gpuviz.capture(an_array_picked_per_thread, 1, 4, *make(), backend="sim")
    want = {t: [("store", name, index) for kind, name, index, _line in seq if kind == "global_store"]
            for (_b, t), seq in trace.per_thread_sequences().items()}
    assert want == {0: [("store", "a", 0)], 1: [("store", "a", 1)], 2: [("store", "b", 2)], 3: [("store", "b", 3)]}
    assert gpu_rewrite_accesses(an_array_picked_per_thread, 1, 4, *make()) == want
