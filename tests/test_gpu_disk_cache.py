"""The GPU back end's disk cache of compiled recording variants (gpuviz.capture.backends.gpu.disk_cache): its key
follows everything the compiled code depends on, and (on a GPU) a capture in a fresh process reads the variants a
capture before it compiled, with the same trace."""

import json
import os
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

from gpuviz.capture.backends.gpu import disk_cache
from gpuviz.capture.frontend.source import parse_function

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _FakeDispatcher:
    """What attach reads of a numba-cuda dispatcher: its target options; it sets ``_cache``."""

    def __init__(self, **options):
        self.targetoptions = options


def _key(fn, sources=None, options=(), **targetoptions):
    d = _FakeDispatcher(**targetoptions)
    cache = disk_cache.attach(d, sources=sources or {"k": "src"}, options=options, functions=[parse_function(fn)])
    assert cache is None or d._cache is cache
    return cache.key if cache is not None else None


PROBE_PATH = os.path.join(ROOT, "tests", "_disk_cache_probe.py")  # no such file: its lines are in linecache
PROBE = textwrap.dedent("""
    def scale(out, x):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] * FACTOR + consts.OFFSET + TABLE[i % 4]
""")


def _kernel_reading(namespace: dict):
    """The probe kernel over ``namespace`` (parse_function reads its source through linecache, as for a file)."""
    import linecache

    linecache.cache[PROBE_PATH] = (len(PROBE), None, PROBE.splitlines(True), PROBE_PATH)
    ns = dict(namespace, __name__="probe")
    exec(compile(PROBE, PROBE_PATH, "exec"), ns)  # noqa: S102
    return ns["scale"]


def _namespace(**changes):
    from numba import cuda

    consts = types.ModuleType("consts")
    consts.OFFSET = changes.pop("OFFSET", 1.0)
    ns = {"cuda": cuda, "consts": consts, "FACTOR": 2.0, "TABLE": np.arange(4, dtype=np.float32)}
    ns.update(changes)
    return ns


def test_the_key_follows_the_values_the_kernel_reads(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    base = _key(_kernel_reading(_namespace()))
    assert base is not None
    assert _key(_kernel_reading(_namespace())) == base  # the same values: the same entry
    assert _key(_kernel_reading(_namespace(FACTOR=3.0))) != base  # a global constant
    assert _key(_kernel_reading(_namespace(OFFSET=2.0))) != base  # a module's attribute the kernel reads
    assert _key(_kernel_reading(_namespace(TABLE=np.arange(1, 5, dtype=np.float32)))) != base  # an array's data
    assert _key(_kernel_reading(_namespace(TABLE=np.arange(4, dtype=np.float64)))) != base  # its dtype
    fn = _kernel_reading(_namespace())
    assert _key(fn, sources={"k": "other"}) != base  # the generated code
    assert _key(fn, options=(True,)) != base  # the variant's options (its recorders)
    assert _key(fn, max_registers=32) != base  # numba's compile options
    monkeypatch.setenv("GPUVIZ_GPU_CACHE", "0")
    assert _key(fn) is None


def test_a_value_with_no_stable_description_turns_the_cache_off_for_that_variant():
    class Opaque:
        pass

    assert _key(_kernel_reading(_namespace(FACTOR=Opaque()))) is None
    with pytest.raises(disk_cache.NoStableDescription):
        disk_cache.describe(object())
    # numba types and dtypes are described by what they are, not where they lie in memory
    from numba import float32

    assert disk_cache.describe(float32) == disk_cache.describe(float32)
    rec = np.dtype([("a", np.int32), ("b", np.float64)], align=True)
    assert disk_cache.describe(rec) != disk_cache.describe(np.dtype([("a", np.int32), ("b", np.float64)]))


def test_the_key_is_the_same_before_and_after_a_submodule_the_kernel_reads_is_imported(monkeypatch, tmp_path):
    """``cuda.fp16.hadd``: numba.cuda's fp16 is an attribute only once something imported it (numba's first compile
    of a kernel using it). A key read before that differed from one read after, so on the H200 a process that read
    the plain kernel from disk (no compile) never found the instrumented variant the last process had written."""
    import ast
    import importlib

    package = tmp_path / "lazy_pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("VALUE = 3.5\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    lazy_pkg = importlib.import_module("lazy_pkg")
    reader = types.SimpleNamespace(names=lambda: {"pkg": lazy_pkg}, tree=ast.parse("pkg.sub.VALUE"), name="probe")
    assert not hasattr(lazy_pkg, "sub")
    before = disk_cache.globals_description([reader])
    importlib.import_module("lazy_pkg.sub")
    assert disk_cache.globals_description([reader]) == before
    assert before.splitlines()[-1] == "probe:pkg.sub.VALUE=module:lazy_pkg|module:lazy_pkg.sub|float:3.5"
    sys.modules.pop("lazy_pkg.sub")
    sys.modules.pop("lazy_pkg")


def test_the_key_is_the_same_in_another_process(tmp_path):
    code = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {ROOT!r})
        from tests import test_gpu_disk_cache as t
        print(t._key(t._kernel_reading(t._namespace())))
    """)
    # the child imports numba as this process did (the simulator's cuda module, or the GPU's)
    keys = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                           env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path))).stdout.strip() for _ in range(2)]
    assert keys[0] and keys[0] == keys[1] == _key(_kernel_reading(_namespace()))


def test_the_size_limit_can_be_set(monkeypatch):
    monkeypatch.setenv("GPUVIZ_GPU_CACHE_MB", "2")
    assert disk_cache.max_bytes() == 2 * 1024 * 1024
    monkeypatch.setenv("GPUVIZ_GPU_CACHE_MB", "lots")
    assert disk_cache.max_bytes() == disk_cache.MAX_BYTES


def test_trim_keeps_the_most_recently_used(tmp_path):
    for i in range(5):
        p = tmp_path / "ab" / f"{i}.kernel"
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(b"x" * 100)
        os.utime(p, (1000 + i, 1000 + i))
    disk_cache.trim(tmp_path, max_bytes=250)
    assert sorted(p.name for p in tmp_path.glob("*/*.kernel")) == ["3.kernel", "4.kernel"]


# ---- on a GPU: a fresh process reads what the last one compiled ---------------------------------------------
_CAPTURE = textwrap.dedent("""
    import json, sys, numpy as np
    sys.path.insert(0, {root!r})
    sys.path.insert(0, {folder!r})
    from gpuviz.capture import capture
    from {module} import {name} as kernel
    x = np.arange(256, dtype=np.{dtype})
    out = np.zeros_like(x)
    t = capture(kernel, 2, 128, out, x, backend="gpu")
    print(json.dumps({{"recorders": t.launch.meta.get("recorders"), "variants": t.launch.meta.get("variants"),
                      "out": out.tolist(), "n": len(t),
                      "digest": [int(t.field(k).astype(np.int64).sum()) for k in ("kind", "index", "line", "thread")]}}))
""")


def _program(tmp_path, module: str, source: str, **more_modules: str):
    """A folder holding ``module``.py with ``source`` (dedented), and any ``more_modules`` (name: source) beside it."""
    folder = tmp_path / "program"
    folder.mkdir()
    for name, text in {module: source, **more_modules}.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(text))
    return folder


def _fresh_capture(folder, tmp_path, module: str, name: str, dtype: str = "float32", **env) -> dict:
    """What a capture of ``module.name`` (a kernel in ``folder``) says, run in a fresh process on the GPU with the
    disk caches under ``tmp_path``."""
    # no .pyc: a module rewritten within the same second at the same size would be read from a stale one
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONDONTWRITEBYTECODE="1", **env)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    script = _CAPTURE.format(root=ROOT, folder=str(folder), module=module, name=name, dtype=dtype)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.gpu
def test_a_capture_in_a_fresh_process_reads_the_variants_compiled_before(tmp_path):
    folder = _program(tmp_path, "probe_kernel", """
        from numba import cuda
        import consts

        @cuda.jit
        def scale(out, x):
            i = cuda.grid(1)
            if i < out.size:
                out[i] = x[i] * 2.0 + consts.OFFSET
    """, consts="OFFSET = 1.0\n")

    def run(**extra):
        return _fresh_capture(folder, tmp_path, "probe_kernel", "scale", **extra)

    first, second = run(), run()
    # a launch of 256 threads records at once (no counting variant: tests/test_gpu_sizing.py)
    both = {"plain": "compiled", "instrumented": "compiled"}
    assert first["variants"] == both, first
    # the plain run's kernel too (a copy of the user's dispatcher, with the same disk cache)
    assert second["variants"] == {"plain": "disk cache", "instrumented": "disk cache"}, (first, second)
    assert second["n"] == first["n"] > 0 and second["digest"] == first["digest"]
    assert second["out"] == first["out"] == list(np.arange(256, dtype=np.float32) * 2 + 1)
    # a constant of another module the kernel reads changed: compiled again, and the result follows it
    (folder / "consts.py").write_text("OFFSET = 5.25\n")
    third = run()
    assert third["variants"] == both, third
    assert third["out"] == list(np.arange(256, dtype=np.float32) * 2 + 5.25)
    off = "compiled (GPUVIZ_GPU_CACHE=0)"
    assert run(GPUVIZ_GPU_CACHE="0")["variants"] == {"instrumented": off}


@pytest.mark.gpu
def test_a_kernel_that_links_cuda_cpp_is_read_from_disk_too(tmp_path):
    """float16 arithmetic links CUDA C++ that numba-cuda compiles with NVRTC, and numba-cuda refuses to pickle such a
    kernel ("Cannot pickle CUDACodeLibrary with linking files"): its variants were compiled in every process (13 of
    a warm shard's 17.6 s on the H200). The linked cubin is kept instead."""
    folder = _program(tmp_path, "half_kernel", """
        from numba import cuda

        @cuda.jit
        def double(out, x):
            i = cuda.grid(1)
            if i < out.size:
                out[i] = cuda.fp16.hadd(x[i], x[i])
    """)

    def run(**extra):
        return _fresh_capture(folder, tmp_path, "half_kernel", "double", dtype="float16", **extra)

    first, second = run(), run()
    assert first["variants"] == {"plain": "compiled", "instrumented": "compiled"}, first
    assert second["variants"] == {"plain": "disk cache", "instrumented": "disk cache"}, (first, second)
    assert second["n"] == first["n"] > 0 and second["digest"] == first["digest"]
    assert second["out"] == first["out"] == list(np.arange(256, dtype=np.float16) * 2)


@pytest.mark.gpu
def test_a_fresh_process_reads_the_recorders_another_kernel_compiled(tmp_path):
    """Issue 25: the recorders' device functions were most of a cold capture's compile. Captured once (any kernel
    of the block shape), a new process reads them from disk for a kernel it never captured, with the same trace
    and results as with the cache off."""
    folder = _program(tmp_path, "probe_kernels", """
        from numba import cuda

        @cuda.jit
        def scale(out, x):
            i = cuda.grid(1)
            if i < out.size:
                out[i] = x[i] * 2.0

        @cuda.jit
        def shift(out, x):
            i = cuda.grid(1)
            if i < out.size - 1:
                out[i] = x[i + 1] - x[i]
    """)

    def run(name, **extra):
        return _fresh_capture(folder, tmp_path, "probe_kernels", name, **extra)

    first = run("scale")
    assert first["recorders"]["compiled"] >= 3 and first["recorders"]["read from disk"] == 0, first
    shifted = run("shift")
    assert shifted["variants"] == {"plain": "compiled", "instrumented": "compiled"}, shifted
    # scale's recorders, read back: at least r_begin and r_end of the recording variant (shift's x[i + 1] is no
    # lane-linear read, as scale's x[i] is, so its recorder is compiled)
    assert shifted["recorders"]["read from disk"] >= 2, shifted
    off = run("shift", GPUVIZ_GPU_CACHE="0")
    assert off["recorders"] == {"read from disk": 0, "compiled": 0}, off  # off: numba compiles them, uncounted
    assert shifted["n"] == off["n"] > 0 and shifted["digest"] == off["digest"] and shifted["out"] == off["out"]
    x = np.arange(256, dtype=np.float32)
    assert shifted["out"][:255] == list(x[1:] - x[:-1]) and shifted["out"][255] == 0


class _CopyableDispatcher(_FakeDispatcher):
    """What cached_plain copies of a numba-cuda dispatcher: its function and its options."""

    def __init__(self, py_func=None, targetoptions=None):
        super().__init__(**(targetoptions or {}))
        self.py_func = py_func


def test_the_plain_runs_copy_is_keyed_by_the_kernels_code_and_what_it_reads(monkeypatch, tmp_path):
    """Issue 25: the plain run compiled the user's kernel again in every process; a copy of it (the same function
    and options) now has a disk cache, keyed as a variant's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))

    def key(namespace, **options):
        fn = _kernel_reading(namespace)
        copy = disk_cache.cached_plain(_CopyableDispatcher(fn, dict(options)), parse_function(fn))
        assert copy is not None and copy.py_func is fn and copy.targetoptions == options
        return copy._cache.key

    base = key(_namespace(), fastmath=False)
    assert key(_namespace(), fastmath=False) == base
    assert key(_namespace(FACTOR=3.0), fastmath=False) != base  # a constant it reads
    assert key(_namespace(OFFSET=2.0), fastmath=False) != base  # another module's attribute
    assert key(_namespace(), fastmath=True) != base  # numba's options
    # a plain function's variants and its plain copy never share an entry
    assert base != _key(_kernel_reading(_namespace()), sources={"scale": "x"}, options=("plain",), fastmath=False)
    monkeypatch.setenv("GPUVIZ_GPU_CACHE", "0")
    fn = _kernel_reading(_namespace())
    assert disk_cache.cached_plain(_CopyableDispatcher(fn, {}), parse_function(fn)) is None


def test_the_plain_runs_copy_follows_an_edit_of_a_device_function_its_callee_calls(monkeypatch, tmp_path):
    """kernel -> f -> g: f's globals describe g by its name only, so the key must hold g's source too (it held the
    kernel's and f's: an edit of g read the old compiled kernel back from disk)."""
    import linecache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = os.path.join(ROOT, "tests", "_disk_cache_chain_probe.py")  # no such file: its lines are in linecache

    def key(g_body: str) -> str:
        src = textwrap.dedent(f"""
            from numba import cuda

            @cuda.jit(device=True)
            def g(x):
                return {g_body}

            @cuda.jit(device=True)
            def f(x):
                return g(x) * 2

            def k(a):
                a[0] = f(a[0])
        """)
        linecache.cache[path] = (len(src), None, src.splitlines(True), path)
        ns = {"__name__": "chain_probe"}
        exec(compile(src, path, "exec"), ns)  # noqa: S102
        from gpuviz.capture.frontend.plan import plan_for

        root = plan_for(ns["k"]).root
        assert [fs.name for fs in root.reachable()] == ["k", "f", "g"]
        return disk_cache.cached_plain(_CopyableDispatcher(ns["k"], {}), root)._cache.key

    assert key("x + 1") == key("x + 1")
    assert key("x + 1") != key("x + 2")
