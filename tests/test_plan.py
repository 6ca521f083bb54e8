"""The capture plan (gpuviz.capture.frontend.plan): a kernel read once into resolved names, tables, recorded sites and
diagnostics, which the CPU executor, the simulator's instrumentation and the GPU recorder all take."""

import ast

import numpy as np
import pytest

import gpuviz
import tests.plan_kernels as K
from gpuviz.capture import UnsupportedConstruct
from gpuviz.capture.backends.gpu.rewrite import PREFIX, BuildInfo, GpuRewriter
from gpuviz.capture.backends.gpu.layout import BUF_NAMES, SITE_KIND_NAMES
from gpuviz.capture.lockstep import by_sites, same_sequences
from gpuviz.capture.frontend.plan import ArrayDecl, plan_for
from gpuviz.model.frames import Frames
from gpuviz.model.narration import Narrator
from gpuviz.model.trace import EventKind, Trace
from gpuviz.catalog import get_kernel

#: the event kinds each site kind may record (a slice assignment's element loads carry its store site)
SITE_EVENT_KINDS = {
    "start": {EventKind.START}, "end": {EventKind.END}, "barrier": {EventKind.BARRIER}, "warp": {EventKind.WARP_OP},
    "load": {EventKind.GLOBAL_LOAD, EventKind.SHARED_LOAD},
    "store": {EventKind.GLOBAL_STORE, EventKind.SHARED_STORE, EventKind.GLOBAL_LOAD, EventKind.SHARED_LOAD},
    "atomic": {EventKind.ATOMIC},
}


def mixed_args():
    return np.arange(9, dtype=np.float32), np.zeros(8, dtype=np.float32), np.int32(8)


def test_every_name_is_resolved_once_into_tables():
    plan = plan_for(K.mixed)
    assert plan_for(K.mixed) is plan  # read once per kernel object
    kernel = plan.kernel
    refs = {pos: (r.kind, r.text) for pos, r in kernel.refs.items()}
    assert refs[(18, 4)] == ("shared", "tile")
    assert refs[(18, 11)] == ("cuda", "cuda.shared.array")
    assert refs[(18, 46)] == ("numba", "numba.float32")
    assert refs[(19, 4)] == ("local_array", "scratch")
    assert refs[(20, 8)] == ("cuda", "cuda.grid")
    assert refs[(21, 4)] == ("local", "t")
    assert refs[(23, 13)] == ("constant", "TILE")
    assert refs[(23, 24)] == ("parameter", "x")
    assert refs[(23, 42)] == ("host_array", "WEIGHTS")
    assert refs[(26, 8)] == ("device_function", "add_into")
    assert refs[(27, 8)] == ("cuda", "cuda.atomic.add")
    assert kernel.shared == [ArrayDecl("mixed", "tile", 18, (4, 2), "float32")]
    assert kernel.local_arrays == [ArrayDecl("mixed", "scratch", 19, (2,), "int32")]
    assert plan.static_shared_bytes == 4 * 2 * 4 and plan.shared_names() == {18: "tile"}
    assert kernel.constants == {"TILE": 4}
    assert kernel.device_functions == {"add_into": 1} and plan.functions[1].fs.name == "add_into"
    # the module-level host array is frozen when the kernel is read, as numba freezes it
    np.testing.assert_array_equal(kernel.host_arrays["WEIGHTS"], K.WEIGHTS)
    assert kernel.host_arrays["WEIGHTS"] is not K.WEIGHTS
    assert plan.diagnostics == []


def test_the_site_table_lists_every_recording_construct_with_its_text():
    sites = [(s.function, s.kind, s.line, s.array, s.index) for s in plan_for(K.mixed).sites]
    assert sites == [
        ("mixed", "start", 17, "", ()),
        ("mixed", "store", 22, "scratch", ("0",)),
        ("mixed", "store", 23, "tile", ("t % TILE", "0")),
        ("mixed", "load", 23, "x", ("i",)),
        ("mixed", "load", 23, "x", ("i + 1",)),
        ("mixed", "load", 23, "WEIGHTS", ("t % 4",)),
        ("mixed", "barrier", 24, "", ()),
        ("mixed", "load", 26, "tile", ("t % TILE", "0")),
        ("mixed", "atomic", 27, "out", ("0",)),
        ("mixed", "end", 28, "", ()),  # the return
        ("mixed", "end", 28, "", ()),  # the implicit end (the kernel's last line)
        ("add_into", "load", 13, "dst", ("i",)),  # dst[i] += v reads, then writes
        ("add_into", "store", 13, "dst", ("i",)),
    ]


@pytest.fixture(scope="module")
def mixed_traces():
    traces = {}
    for backend in ("cpu", "sim"):
        traces[backend] = gpuviz.capture(K.mixed, 1, 8, *mixed_args(), backend=backend)
    return traces


@pytest.mark.parametrize("backend", ["cpu", "sim"])
def test_every_event_carries_its_site(mixed_traces, backend):
    tr = mixed_traces[backend]
    plan = plan_for(K.mixed)
    assert tr.launch.sites == tuple(plan.sites) and tr.has("site")
    site = tr.site
    assert (site >= 0).all()
    for s in np.unique(site).tolist():
        ev = site == s
        assert set(np.unique(tr.line[ev]).tolist()) == {plan.sites[s].line}
        assert {EventKind(k) for k in np.unique(tr.kind[ev]).tolist()} <= SITE_EVENT_KINDS[plan.sites[s].kind]
    # the device function's accesses carry its own sites, whatever array they reach
    dst_load = [i for i, s in enumerate(plan.sites) if s.function == "add_into" and s.kind == "load"][0]
    assert {tr.launch.arrays[a].name for a in np.unique(tr.array[site == dst_load]).tolist()} == {"out"}
    assert plan.unplanned == []


def test_cpu_and_sim_events_match_site_for_site(mixed_traces):
    cpu, sim = mixed_traces["cpu"], mixed_traces["sim"]
    assert by_sites(cpu, sim) and same_sequences(cpu, sim)
    assert sim.launch.meta["step_source"].startswith("gpuviz's CPU executor")
    # two loads of x on one line are two sites: swapping them is a different program order, though every
    # event keeps its line
    swapped = dict(cpu.columns)
    x_i, x_i1 = 3, 4
    site = swapped["site"].copy()
    site[cpu.site == x_i], site[cpu.site == x_i1] = x_i1, x_i
    swapped["site"] = site
    other = Trace(cpu.launch, {k: swapped[k] for k in cpu.recorded_fields})
    assert not same_sequences(sim, other)


def test_narration_names_the_subscript_of_the_event_site(mixed_traces):
    tr = mixed_traces["cpu"]
    frames = Frames(tr)
    narrator = Narrator.of_frames(frames)
    x = tr.launch.array_id("x")
    said = {}
    for f in range(frames.n_frames):
        ev = frames.events(f)
        loads = ev[(tr.kind[ev] == EventKind.GLOBAL_LOAD) & (tr.array[ev] == x)]
        if len(loads):
            said[int(tr.site[loads[0]])] = narrator.caption(f)
    assert set(said) == {3, 4}
    assert "x[i]" in said[3] and "x[i + 1]" not in said[3]
    assert "x[i + 1]" in said[4]


def test_every_unsupported_construct_is_one_diagnostic_on_every_backend():
    plan = plan_for(K.two_refusals)
    got = [(d.construct, d.line) for d in plan.diagnostics]
    assert got == [("Dict", 33), ("While", 35)]
    for d in plan.diagnostics:
        assert d.file == K.__file__ and d.message.startswith(f"{K.__file__}:{d.line}: ") and "instead" in d.message
    for backend in ("cpu", "sim"):
        with pytest.raises(UnsupportedConstruct) as info:
            gpuviz.capture(K.two_refusals, 1, 1, np.zeros(1, np.float32), backend=backend)
        assert info.value.line == 33 and f"{K.__file__}:35: 'while ... else'" in str(info.value)
        assert [(d.construct, d.line) for d in info.value.diagnostics] == got


def test_the_gpu_recorder_codes_hold_the_plans_site_ids():
    plan = plan_for(K.mixed)
    info = BuildInfo(sites=list(plan.sites))
    x, out, _n = mixed_args()
    from gpuviz.model.trace import ArrayInfo

    array_args = {"x": ArrayInfo("x", x.shape, "float32"), "out": ArrayInfo("out", out.shape, "float32")}
    found = {}
    for fp in plan.functions:
        rw = GpuRewriter(fp.fs, is_kernel=fp.is_kernel, info=info, array_args=array_args if fp.is_kernel else {},
                         plan=plan)
        tree = rw.rewrite()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id.startswith(PREFIX + "r_") and len(node.args) > len(BUF_NAMES) + 1:
                code = node.args[1 + len(BUF_NAMES)]
                value = code.value if isinstance(code, ast.Constant) else code.left.value  # device fn: site + aid
                found.setdefault(fp.fs.name, set()).add(value >> 8)
    assert info.sites == plan.sites
    kinds, lines = info.decode_tables()
    assert [SITE_KIND_NAMES[k] for k in kinds] == [s.kind for s in plan.sites]
    assert lines.tolist() == [s.line for s in plan.sites]
    # every recorded site of the source is in the GPU build, under the plan's id (the local array's store is
    # not recorded on a GPU, as on the other backends)
    want = {s.function: set() for s in plan.sites}
    for i, s in enumerate(plan.sites):
        if s.array != "scratch":
            want[s.function].add(i)
    assert found == want


def test_the_gpu_rewrite_emits_recorder_calls_directly():
    """No simulator recorder call is left for the GPU build to find by name: each recording is made as a GPU
    recorder call where the per-thread rewrite makes it."""
    plan = plan_for(K.mixed)
    info = BuildInfo(sites=list(plan.sites))
    x, out, _n = mixed_args()
    from gpuviz.model.trace import ArrayInfo

    array_args = {"x": ArrayInfo("x", x.shape, "float32"), "out": ArrayInfo("out", out.shape, "float32")}
    for fp in plan.functions:
        rw = GpuRewriter(fp.fs, is_kernel=fp.is_kernel, info=info, array_args=array_args if fp.is_kernel else {},
                         plan=plan)
        called = {n.func.id for n in ast.walk(rw.rewrite()) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                  and n.func.id.startswith(PREFIX)}
        assert called and all(c.startswith(PREFIX + "r_") for c in called), called
    # the shared array and the host array got their ids from the plan's tables
    assert [(a.name, a.space, a.shape) for a in info.arrays] == [
        ("x", "global", (9,)), ("out", "global", (8,)), ("WEIGHTS", "global", (4,)), ("tile", "shared", (4, 2))]


@pytest.mark.parametrize("name, size", [("reduce_sum", 512), ("matmul_tiled", 16), ("histogram_shared", 512),
                                        ("race_missing_sync", 256)])
def test_bundled_kernels_record_only_planned_sites(name, size):
    spec = get_kernel(name)
    grid, block = spec.launch(size, spec.default_block)
    plan = plan_for(spec.kernel)
    for backend in ("cpu", "sim"):
        tr = gpuviz.capture(spec.kernel, grid, block, *spec.make_args(size, np.random.default_rng(0)), backend=backend)
        assert tr.has("site") and (tr.site >= 0).all() and tr.launch.sites == tuple(plan.sites)
        lines = np.array([s.line for s in plan.sites])
        np.testing.assert_array_equal(lines[tr.site], tr.line)
    assert plan.unplanned == []


def test_a_site_line_is_its_line_and_survives_the_worker_boundary():
    import pickle

    from gpuviz.capture.frontend.plan import SiteLine

    line = SiteLine(27, 8)
    assert line == 27 and f"file.py:{line}" == "file.py:27" and hash(line) == hash(27)
    back = pickle.loads(pickle.dumps(line))
    assert back == 27 and back.site == 8


def test_the_executor_reads_the_plans_frozen_host_array():
    from gpuviz.capture.backends.cpu.executor import compile_for_cpu

    plan = plan_for(K.mixed)
    ck = compile_for_cpu(K.mixed)
    assert ck.plan is plan
    frozen = plan.kernel.host_arrays["WEIGHTS"]
    # the generated code's namespaces (its entry function's globals) hold the plan's copy, not the module's array
    assert any(ns.get("WEIGHTS") is frozen for ns in ck.entry.__globals__.values() if isinstance(ns, dict))


@pytest.mark.parametrize("backend", ["cpu", "sim"])
def test_a_module_level_complex_number_is_the_constant_the_plan_says(backend):
    """The plan resolved ``SHIFT = 1.5 - 2j`` to a constant while the executor's generator, looking the name up
    itself, refused it ("'SHIFT' (complex) cannot be used as a value"): one resolver now, read by both."""
    out = np.zeros(5, np.complex128)
    gpuviz.capture(K.complex_constant, 1, 8, out, backend=backend)
    np.testing.assert_allclose(out, (1.5 - 2j) * np.arange(5) + 2.0)
    kernel = plan_for(K.complex_constant).kernel
    refs = {r.text: r for r in kernel.refs.values()}
    assert (refs["SHIFT"].kind, kernel.constants["SHIFT"]) == ("constant", 1.5 - 2j)
    # an imported function resolves to what it is, whatever it is called here
    assert refs["sqrt_of"].kind == "math" and refs["sqrt_of"].target == ("math", "sqrt")


def test_the_back_ends_read_the_plans_refs_not_the_namespace():
    """A name the plan resolves is read off its Ref by the executor's generator and the simulator's rewrite:
    changing the Ref changes what they do (neither looks the name up again)."""
    from gpuviz.capture.backends.sim.perthread import PerThreadRewriter
    from gpuviz.capture.frontend.names import Ref
    from gpuviz.capture.frontend.plan import build_plan
    from gpuviz.capture.backends.cpu.compile import SimtCompiler

    plan = plan_for(K.mixed)
    fplan = plan.kernel
    pos = next(p for p, r in fplan.refs.items() if r.text == "TILE")
    node = ast.Name("TILE", ast.Load(), lineno=pos[0], col_offset=pos[1])
    comp = SimtCompiler(fplan.fs, is_kernel=True, device_names={}, plan=plan)
    assert comp.name(node) == "4"
    fresh = build_plan(plan.root)
    fresh.kernel.refs[pos] = Ref("local", "TILE")
    assert SimtCompiler(fresh.kernel.fs, is_kernel=True, device_names={}, plan=fresh).name(node) == "V['TILE']"
    assert PerThreadRewriter(fresh.kernel.fs, is_kernel=True, plan=fresh).is_local(node)
    assert not PerThreadRewriter(fplan.fs, is_kernel=True, plan=plan).is_local(node)


_BARRIER_KERNEL = """from numba import cuda
from numba.cuda import syncthreads


@cuda.jit
def k(a):
    i = cuda.threadIdx.x
    a[i] = i
    BARRIER()
    a[i] += 1
"""

_REWRITE_BOTH = """
import ast
import json
import sys

import numpy as np

from gpuviz.capture.backends.gpu.launch import variant_source
from gpuviz.capture.backends.sim.perthread import PerThreadRewriter
from gpuviz.capture.frontend.plan import plan_for

sys.path.insert(0, sys.argv[1])
out = {}
for name in ("k_dotted", "k_imported"):
    k = __import__(name).k
    plan = plan_for(k)
    sim = ast.unparse(PerThreadRewriter(plan.root, is_kernel=True, plan=plan).rewrite())
    _, gpu = variant_source(k, 1, 4, [np.zeros(4, np.float32)])
    out[name] = {"sites": [(s.kind, s.line) for s in plan.sites], "unplanned": plan.unplanned,
                 "sim": sim.replace("cuda.syncthreads", "syncthreads"),
                 "gpu": "".join(gpu.values()).replace("cuda.syncthreads", "syncthreads")}
json.dump(out, sys.stdout)
"""


def test_an_imported_barrier_is_recorded_where_the_plan_lists_it(tmp_path):
    """``from numba.cuda import syncthreads`` (numba-cuda's GPU target; the simulator has no such import): the plan
    lists the barrier's site, but the simulator's rewrite and the GPU recorder, which share it, recorded no barrier
    there (they read only module chains, ``cuda.syncthreads``); they read the plan's chain of the name now."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "k_dotted.py").write_text(_BARRIER_KERNEL.replace("BARRIER", "cuda.syncthreads"))
    (tmp_path / "k_imported.py").write_text(_BARRIER_KERNEL.replace("BARRIER", "syncthreads"))
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}  # numba-cuda's GPU target
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", _REWRITE_BOTH, str(tmp_path)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    dotted, imported = out["k_dotted"], out["k_imported"]
    assert imported["sites"] == dotted["sites"] and ["barrier", 9] in dotted["sites"]
    assert imported["unplanned"] == [] and "__gv_bar(9, 2)" in dotted["sim"]
    # the same recording, call for call, whichever way the kernel names the barrier
    assert imported["sim"] == dotted["sim"]
    assert imported["gpu"] == dotted["gpu"]
