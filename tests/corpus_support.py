"""The corpus of numba-cuda's own test kernels: load it, rebuild its kernels, run a launch on gpuviz, judge it.

The corpus file is made by ``bench/corpus_extract.py``; ``bench/corpus.py`` runs all of it and
``tests/test_corpus.py`` a slice. Kernels are rebuilt from their stored source with their original file
and line numbers (the text is registered with ``linecache``, as for a kernel compiled from a string), in a
namespace rebuilt from the stored free names, and jitted with the simulator's ``cuda.jit``.

Classes of a launch:
    exact         outputs equal the reference's (on the GPU: numba-cuda's own launch on that GPU, where it and the
                  simulator differ) and per-thread events equal the reference's per-thread recording (or both
                  raised or refused, as the test expected)
    outputs only  outputs equal; events differ, or the reference's per-thread recording is missing
    beyond the simulator
                  the simulator refuses a construct numba-cuda compiles for a GPU (SIMULATOR_REFUSES), gpuviz
                  ran the launch, and the GPU reference file holds no launch of it: nothing to compare it with (on
                  the GPU: its outputs are numba-cuda's)
    warned        outputs differ, and gpuviz warned why (uninitialised shared memory: the reference's answer is
                  itself arbitrary)
    wrong         outputs differ without a warning, or only one side raised
    refused       gpuviz refused the kernel (UnsupportedConstruct) or its launch configuration (LaunchConfigError)
    crashed       an internal error (any other exception)
    hung          over the time limit
    not stored    the extraction could not store the kernel or its arguments, or the launch is one only numba's
                  simulator makes (SIMULATOR_ONLY_LAUNCHES: numba-cuda on a GPU does not launch it); nothing runs

The reference is what numba's simulator did when the tests ran (stored in the corpus), except for the launches
the simulator refuses (SIMULATOR_REFUSES): for those, ``tests/data/numba_cuda_gpu_reference.npz``
(``bench/corpus_gpu_reference.py``, made on a GPU) holds numba-cuda's own launch on a GPU (outputs) and gpuviz's
GPU recording of it (per-thread events); where it holds a launch, the launch is judged against it like any other
on the cpu and sim backends (on the gpu backend it would judge gpuviz's GPU recording by itself).
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import hashlib
import importlib
import json
import linecache
import signal
import sys
import textwrap
import time
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "numba_cuda_corpus.npz"
CLASSES = ("exact", "outputs only", "beyond the simulator", "warned", "wrong", "refused", "crashed", "hung",
           "not stored")

#: launches whose stored reference is the simulator refusing what numba-cuda compiles for a GPU (the test checks
#: that refusal: numba.cuda.testing's skip_unless_cudasim), by test id: why
SIMULATOR_REFUSES = {
    f"numba.cuda.tests.cudapy.test_array_alignment.TestCudasimUnsupportedAlignment.test_{space}_unsupported":
        f"numba's simulator refuses cuda.{space}.array(..., alignment=), which numba-cuda compiles for a GPU"
    for space in ("local", "shared")
}

#: numba-cuda's own launch on a GPU of the SIMULATOR_REFUSES launches (bench/corpus_gpu_reference.py, run on a
#: machine with a GPU); while it is absent, those launches are "beyond the simulator"
GPU_REFERENCE = ROOT / "tests" / "data" / "numba_cuda_gpu_reference.npz"

#: launches that only numba's simulator makes, by test id: why. The corpus stores what the simulator launched;
#: these are "not stored" on every backend, before anything runs
SIMULATOR_ONLY_LAUNCHES = {
    "numba.cuda.tests.cudapy.test_forall.TestForAll.test_forall_no_work":
        "not a launch numba-cuda makes: numba's simulator runs forall(0) as a grid of 0 blocks (kernel[0, 1]), "
        "numba-cuda on a GPU launches nothing (ForAll.__call__ returns when ntasks == 0)",
}


class Unstorable(Exception):
    pass


class Hung(Exception):
    pass


def stub_filecheck() -> None:
    """numba.cuda.testing imports the ``filecheck`` test tool (for checks of generated PTX, which the simulator
    skips): stand-ins, so the test modules import without installing it."""
    import importlib.util
    import sys
    import types

    if "filecheck" in sys.modules or importlib.util.find_spec("filecheck") is not None:
        return
    pkg = types.ModuleType("filecheck")
    pkg.__path__ = []
    sys.modules["filecheck"] = pkg
    for sub, names in (("matcher", ["Matcher"]), ("options", ["Options"]), ("parser", ["Parser", "pattern_for_opts"]),
                       ("finput", ["FInput"])):
        m = types.ModuleType(f"filecheck.{sub}")
        for n in names:
            setattr(m, n, type(n, (), {}))
        sys.modules[f"filecheck.{sub}"] = m
        setattr(pkg, sub, m)


def load(path=CORPUS):
    """(index dict, arrays dict) of a corpus file."""
    with np.load(path, allow_pickle=False) as z:
        index = json.loads(bytes(z["index"]).decode())
        arrays = {k: z[k] for k in z.files if k != "index"}
    return index, arrays


def decode_value(e, arrays):
    t = e["t"]
    if t == "none":
        return None
    if t == "py":
        return {"bool": bool, "int": int, "float": float, "str": str}[e["k"]](e["v"])
    if t == "complex":
        return complex(*e["v"])
    if t in ("record", "npscalar"):
        return np.array(arrays[e["a"]], copy=True)[()]
    if t == "array":
        return np.array(arrays[e["a"]], copy=True)
    if t == "device":
        from numba import cuda

        return cuda.to_device(np.array(arrays[e["a"]], copy=True))
    if t == "hint":
        from numba import cuda

        return getattr(cuda, e["h"])(decode_value(e["v"], arrays))
    if t == "tuple":
        items = [decode_value(x, arrays) for x in e["v"]]
        if "fields" in e:  # a namedtuple, rebuilt with its name and fields
            import collections

            return collections.namedtuple(e["name"], e["fields"])(*items)
        return tuple(items)
    raise Unstorable(f"cannot decode {t}")


def host_of(v):
    """The numpy array an argument leaves its results in (None for numbers)."""
    if isinstance(v, np.ndarray):
        return v
    if type(v).__name__ in ("In", "Out", "InOut"):
        return host_of(v.value)
    if hasattr(v, "copy_to_host") and hasattr(v, "shape"):
        return v.copy_to_host()
    if isinstance(v, np.void):
        return np.array(v)
    return None


class DefaultIn:
    """numba-cuda's test_retrieve_autoconverted_arrays extension: every argument input-only."""

    def prepare_args(self, ty, val, **kwargs):
        from numba import cuda
        from numba.cuda.args import wrap_arg

        return ty, wrap_arg(val, default=cuda.In)


_EXTENSIONS = {"DefaultIn": DefaultIn}


class Rebuilder:
    """Kernels and device functions of a corpus, rebuilt once each (per process)."""

    def __init__(self, index, arrays):
        stub_filecheck()  # stored names may come from numba-cuda's test modules, which import numba.cuda.testing
        self.funcs = index["funcs"]
        self.launches = index.get("launches", [])
        self.arrays = arrays
        self.built: dict = {}
        self._register_sources()

    def _register_sources(self):
        files: dict[str, dict[int, str]] = {}
        for f in self.funcs.values():
            if not f:
                continue
            lines = files.setdefault(self.filename(f), {})
            for k, text in enumerate(f["source"].splitlines(True)):
                lines[f["first_line"] + k] = text
        for name, lines in files.items():
            n = max(lines)
            # lines between stored functions read as a statement at column 0, so that inspect's block finder
            # ends each function where its own lines end
            text = [lines.get(i, "pass\n") for i in range(1, n + 1)]
            linecache.cache[name] = (sum(len(x) for x in text), None, text, name)

    @staticmethod
    def filename(f) -> str:
        return "corpus/" + f["file"]

    def name_value(self, enc):
        t = enc["t"]
        if t == "module":
            return importlib.import_module(enc["name"])
        if t == "nptype":
            return np.dtype(enc["s"]).type
        if t == "dtype":
            return self.arrays[enc["a"]].dtype
        if t == "numba_type":
            import numba

            return getattr(numba.types, enc["s"])
        if t == "attr":
            obj = importlib.import_module(enc["mod"])
            for part in enc["name"].split("."):
                obj = getattr(obj, part)
            return obj
        if t == "device":
            return self.function(enc["f"])
        if t == "unstorable":
            raise Unstorable(enc["why"])
        return decode_value(enc, self.arrays)

    def function(self, key):
        hit = self.built.get(key)
        if hit is not None:
            return hit
        f = self.funcs.get(key)
        if not f:
            raise Unstorable("function not stored")
        from numba import cuda

        # each function in a module of its own, as in its test file: numba-cuda mangles a device function by its
        # module, and lowers a function's call of itself as a call of itself only when that module is imported
        # (a bare namespace made test_recursion's kernels fail to compile on the GPU: "no attribute
        # 'insert_unresolved_ref'"). Named by the stored function, not by the order of rebuilding: a kernel's GPU
        # variants on disk are keyed by the modules of the device functions it calls, so a name that depended on what
        # the process rebuilt before missed them in another process (bench/gpu_capture_speed.py's one-process pass
        # compiled 97 kernels again whose variants 16 processes had kept)
        module_name = f"gpuviz_corpus_{hashlib.sha1(repr(key).encode()).hexdigest()[:12]}_{f['name']}"
        home = types.ModuleType(module_name)
        sys.modules[module_name] = home
        ns = home.__dict__
        ns["__builtins__"] = __builtins__
        src = textwrap.dedent(f["source"])
        module = ast.parse(src)
        ast.increment_lineno(module, f["first_line"] - 1)
        fdef = next(x for x in module.body if isinstance(x, ast.FunctionDef))
        fdef.decorator_list = []
        exec(compile(ast.Module(body=[fdef], type_ignores=[]), self.filename(f), "exec"), ns)  # noqa: S102
        fn = ns[fdef.name]
        jitted = cuda.jit(device=f["device"], debug=f["debug"], fastmath=f["fastmath"])(fn)
        for ext in f["extensions"]:
            if ext not in _EXTENSIONS:
                raise Unstorable(f"extension {ext}")
            jitted.extensions.append(_EXTENSIONS[ext]())
        self.built[key] = jitted
        # names after the function is known: a recursive device function finds itself
        try:
            for n, enc in f["names"].items():
                ns[n] = self.name_value(enc)
        except Unstorable:
            del self.built[key]
            raise
        return jitted


def _equal(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.names:
        return all(_equal(a[n], b[n]) for n in a.dtype.names)
    if a.dtype.kind in "fc":
        return bool(np.allclose(a, b, rtol=1e-6, atol=1e-12, equal_nan=True))
    return bool(np.array_equal(a, b))


def _alarm(signum, frame):
    raise Hung()


@dataclasses.dataclass
class Reference:
    """What a run of a corpus launch is judged against: numba's simulator at extraction (stored in the corpus),
    or, for a launch the simulator refuses, numba-cuda's own launch on a GPU and gpuviz's GPU recording of it."""

    raised: str | None  # the name of the exception the reference's launch raised, or None
    outputs: list  # per argument: its host array after the launch, or None (not an array)
    events: np.ndarray | None  # per-thread events, event_matrix's columns; None: missing, events_missing says why
    event_names: list
    events_missing: str = ""
    gpu: str = ""  # the GPU of a GPU reference; "" for the simulator's
    why: str = ""  # a GPU reference: why the simulator's is not the reference

    @property
    def name(self) -> str:
        return f"numba-cuda's own launch on {self.gpu}" if self.gpu else "the simulator"

    @property
    def detail(self) -> str:
        """What a GPU reference's class says about it ("" for the simulator's, the default)."""
        return f"against {self.name} ({self.why})" if self.gpu else ""


def simulator_reference(launch, arrays) -> Reference:
    raised = launch.get("sim_raised")
    outputs = [] if raised else [None if e is None else host_of(decode_value(e, arrays)) for e in launch["outputs"]]
    return Reference(raised, outputs, arrays[launch["sim_events"]] if "sim_events" in launch else None,
                     launch.get("sim_event_names", []), launch.get("sim_events_missing", ""))


def reference_key(launch, launches) -> str:
    """A launch's key in the GPU reference file: test id::kernel name::n, n counting the earlier launches of the same
    test and kernel in ``launches`` (the corpus's); stable across extractions, unlike positions or function keys."""
    n = 0
    for other in launches:
        if other is launch or other == launch:
            break
        n += other.get("test") == launch.get("test") and other.get("kernel_name") == launch.get("kernel_name")
    return f"{launch.get('test')}::{launch.get('kernel_name')}::{n}"


def write_gpu_reference(path, provenance: dict, entries: dict, arrays: dict) -> None:
    """The GPU reference file: ``index`` (JSON: provenance, and entries by reference_key, naming their arrays)
    plus the arrays, loadable with ``allow_pickle=False``. An entry: test, kernel_name, pos (in the corpus it was
    made from), grid, block, dynshared; numba_raised (None, or the exception's name) and numba_error;
    outputs (per argument: an array key or None); events (an array key or None), event_names, events_missing."""
    index = {"provenance": provenance, "launches": entries}
    np.savez_compressed(path, index=np.frombuffer(json.dumps(index).encode(), np.uint8), **arrays)


@functools.lru_cache(maxsize=8)
def _gpu_reference_file(path: str, stamp: tuple):  # noqa: ARG001 - stamp: a rewritten file is read again
    return load(path)


def gpu_reference(launch, launches, path=GPU_REFERENCE) -> Reference | None:
    """The GPU reference of a SIMULATOR_REFUSES launch, from the file at ``path``, or None (no file, or no launch
    of this test, kernel and position, or one of another grid or block)."""
    if path is None or launch.get("test") not in SIMULATOR_REFUSES or not Path(path).exists():
        return None
    st = Path(path).stat()
    index, arrays = _gpu_reference_file(str(path), (st.st_mtime_ns, st.st_size))
    e = index["launches"].get(reference_key(launch, launches))
    if e is None or (e["grid"], e["block"]) != (list(launch["grid"]), list(launch["block"])):
        return None
    gpu = index["provenance"]["gpu"]
    return Reference(e["numba_raised"], [None if k is None else arrays[k] for k in e["outputs"]],
                     arrays[e["events"]] if e.get("events") else None, e.get("event_names", []),
                     f"gpuviz's GPU recording on {gpu} failed: " + e.get("events_missing", ""), gpu=gpu,
                     why=SIMULATOR_REFUSES[launch["test"]])


def capture_launch(kernel, launch, args, backend: str):
    """gpuviz's capture of a corpus launch, with the options the corpus runs every launch with."""
    import gpuviz

    # on the GPU: one timed plain launch, not five (the corpus judges results, not speed)
    options = {"repeats": 1} if backend == "gpu" else {}
    with numba_config_of_the_test(launch, backend):
        return gpuviz.capture(kernel, tuple(launch["grid"]), tuple(launch["block"]), *args, backend=backend,
                              lockstep=False, max_loop_iterations=2_000_000,
                              dynamic_shared_bytes=launch.get("dynshared", 0), **options)


def run_launch(rb: Rebuilder, launch, *, time_limit_s=20.0, backend="cpu", round_trip=None,
               reference_file=GPU_REFERENCE) -> dict:
    """Run one corpus launch on gpuviz's ``backend`` and judge it: {"class", "detail", "cpu_s", "sim_s"}
    (``cpu_s``: the seconds gpuviz took on that backend). On ``backend="gpu"`` the Rebuilder's kernels must
    be numba-cuda's real dispatchers (numba imported without NUMBA_ENABLE_CUDASIM). ``round_trip``: a folder;
    the launch's trace is then also saved there and loaded back (tests/roundtrip.py), and "round_trip" says
    "ok" or what differed. ``reference_file``: the GPU reference of the SIMULATOR_REFUSES launches (None: none)."""
    from gpuviz.capture.errors import BackendUnavailable, CaptureError, LaunchConfigError, UnsupportedConstruct

    out = {"class": "not stored", "detail": "", "cpu_s": None, "sim_s": launch.get("sim_seconds")}
    if launch.get("test") in SIMULATOR_ONLY_LAUNCHES:
        out["detail"] = SIMULATOR_ONLY_LAUNCHES[launch["test"]]
        return out
    if "unstorable" in launch or "kernel" not in launch:
        out["detail"] = launch.get("unstorable", "")
        return out
    try:
        kernel = rb.function(launch["kernel"])
        args = [decode_value(e, rb.arrays) for e in launch["args"]]
        # the GPU reference's events are gpuviz's own GPU recording: on the gpu backend that would judge a recording by
        # itself, so there the launch stays "beyond the simulator" (its outputs checked against numba-cuda's launch)
        gpu_ref = gpu_reference(launch, rb.launches, reference_file) if backend != "gpu" else None
        ref = gpu_ref or simulator_reference(launch, rb.arrays)
    except Exception as exc:  # noqa: BLE001 - the corpus could not rebuild it: not gpuviz's answer
        out["detail"] = f"{type(exc).__name__}: {exc}"
        return out
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, time_limit_s)
    t0 = time.perf_counter()
    trace, raised = None, None
    try:
        trace = capture_launch(kernel, launch, args, backend)
    except Hung:
        out.update({"class": "hung", "detail": f"over {time_limit_s:.0f}s"})
        return out
    except BackendUnavailable:
        raise  # no GPU (say): nothing of the run would mean anything
    except (UnsupportedConstruct, LaunchConfigError) as exc:
        # a launch configuration gpuviz refuses as a GPU would: refused, not wrong; refused where the reference
        # raised too (a construct numba cannot compile): as the test expected
        if ref.raised:
            out.update({"class": "exact", "detail": f"both refused ({ref.name} raised {ref.raised}): {exc}"})
        else:
            out.update({"class": "refused", "detail": str(exc)})
        return out
    except CaptureError as exc:  # a fault, or an exception the kernel raises (KernelRaised)
        if "loop iterations" in str(exc):
            out.update({"class": "hung", "detail": str(exc).splitlines()[0]})
            return out
        raised = exc
    except Exception as exc:  # noqa: BLE001 - an internal error is what this counts
        import traceback

        out.update({"class": "crashed", "detail": "".join(traceback.format_exception_only(type(exc), exc)).strip()})
        return out
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    out["cpu_s"] = time.perf_counter() - t0
    if round_trip is not None and trace is not None:
        out["round_trip"] = round_trip_problem(trace, round_trip)
    out.update(judge(trace, raised, args, ref, launch, backend))
    return out


def judge(trace, raised, args, ref: Reference, launch, backend: str) -> dict:
    """{"class", "detail"} of a launch gpuviz ran (``trace``) or that raised (``raised``), against ``ref``."""
    def said(*parts):
        return "; ".join(filter(None, [*parts, ref.detail]))

    if ref.raised and raised is None and not ref.gpu and launch.get("test") in SIMULATOR_REFUSES:
        detail = SIMULATOR_REFUSES[launch["test"]]
        if backend == "gpu" and trace.launch.meta.get("outputs_match_plain") is True:
            detail += "; the recording's outputs equal numba-cuda's own launch on this GPU"
        return {"class": "beyond the simulator", "detail": detail}
    if ref.raised or raised is not None:
        if ref.raised and raised is not None:
            return {"class": "exact", "detail": said(f"both raised ({ref.raised})")}
        return {"class": "wrong", "detail": said(f"{ref.name} raised {ref.raised}" if ref.raised
                                                 else f"gpuviz raised: {str(raised).splitlines()[0]}")}
    bad = []
    for k, (arg, want) in enumerate(zip(args, ref.outputs)):
        got = host_of(arg) if not isinstance(arg, tuple) else None
        if want is not None and got is not None and not _equal(got, want):
            bad.append(k)
    on_gpus_terms = ""
    if bad and not ref.gpu and backend == "gpu" and trace.launch.meta.get("outputs_match_plain") is True:
        # the recorded run computed what numba-cuda's own launch of the kernel computes on this GPU: the GPU's
        # arithmetic (libdevice, fused multiply-adds, clz of a negative int32) or its uninitialised shared memory
        # differs from the simulator's Python, not gpuviz; the reference of a GPU's outputs is numba-cuda on it
        on_gpus_terms = f"arguments {bad} differ from the simulator's and equal numba-cuda's own launch on this GPU"
        bad = []
    if bad:
        uninit = [w for w in trace.launch.warnings if "before any thread of its block wrote it" in w]
        return {"class": "warned" if uninit else "wrong",
                "detail": said(f"arguments {bad} differ", uninit[0] if uninit else "")}
    if ref.events is None:
        return {"class": "outputs only", "detail": said("no per-thread recording: " + ref.events_missing)}
    if events_equal(trace, ref.events, ref.event_names):
        return {"class": "exact", "detail": said(on_gpus_terms)}
    recording = f"gpuviz's GPU recording on {ref.gpu}" if ref.gpu else "the simulator's"
    return {"class": "outputs only", "detail": said(f"per-thread events differ from {recording}", on_gpus_terms)}


@contextlib.contextmanager
def numba_config_of_the_test(launch, backend: str):
    """On the GPU, numba-cuda's settings that the launch's test turned on in its ``setUp`` (``config.CUDA_ENABLE_NRT =
    True``: test_array_methods' ``val.copy()`` needs numba-cuda's runtime on a GPU), as the test ran with them; the
    simulator needs none of them."""
    nrt = backend == "gpu" and _test_enables_nrt(launch.get("test") or "")
    if not nrt:
        yield
        return
    from numba.cuda import config

    old = config.CUDA_ENABLE_NRT
    config.CUDA_ENABLE_NRT = True
    try:
        yield
    finally:
        config.CUDA_ENABLE_NRT = old


def _test_enables_nrt(test_id: str) -> bool:
    """Whether the test class of ``test_id`` (module.Class.test) sets ``CUDA_ENABLE_NRT = True`` in its setUp."""
    import inspect

    module_name, _, rest = test_id.rpartition(".")
    module_name, _, class_name = module_name.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
        return "CUDA_ENABLE_NRT = True" in inspect.getsource(cls.setUp)
    except Exception:  # noqa: BLE001 - no such class or setUp, or no source: the test sets nothing
        return False


def round_trip_problem(trace, folder) -> str:
    """"ok" when ``trace`` saves and loads back equal (tests/roundtrip.py), else what went wrong."""
    from gpuviz.model.tracefile import TraceFileError
    from tests.roundtrip import assert_round_trip

    try:
        assert_round_trip(trace, Path(folder))
    except (AssertionError, TraceFileError) as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
    except Exception as exc:  # noqa: BLE001 - an internal error while saving or reading back is what this counts
        import traceback

        where = traceback.extract_tb(exc.__traceback__)[-3:]  # the innermost frames: where it broke
        at = " <- ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(where))
        return f"crashed: {type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''} (at {at})"
    return "ok"


def event_matrix(trace) -> tuple[np.ndarray, list[str]]:
    """A trace's per-thread events as an int64 matrix (block, thread, kind, array-name id, index, line; in per-thread
    program order, trace.thread_order) and the sorted array names the ids index (-1: no array)."""
    names = sorted({a.name for a in trace.launch.arrays})
    remap = np.array([names.index(a.name) for a in trace.launch.arrays] + [-1], dtype=np.int64)
    arr = trace.array.astype(np.int64)
    arr = remap[np.where(arr >= 0, arr, len(trace.launch.arrays))]
    o = trace.thread_order
    cols = [trace.block, trace.thread, trace.kind, arr, trace.index, trace.line]
    got = np.stack([np.asarray(c, dtype=np.int64)[o] for c in cols], axis=1) if len(o) else np.zeros((0, 6), np.int64)
    return got, names


def events_equal(trace, want: np.ndarray, want_names: list[str]) -> bool:
    """Whether ``trace``'s event_matrix equals a reference's (``want``, ``want_names``: the simulator's, or a GPU
    recording's), comparing array ids by name."""
    got, names = event_matrix(trace)
    if names != want_names:
        # arrays gpuviz names but the simulator never touched (or the other way round) do not matter when
        # no event names them: compare by name
        got_named = np.where(got[:, 3] >= 0, got[:, 3], -1)
        gn = np.array([names[i] if i >= 0 else "" for i in got_named], dtype=object)
        wn = np.array([want_names[i] if i >= 0 else "" for i in want[:, 3]], dtype=object)
        return got.shape == want.shape and bool(np.array_equal(np.delete(got, 3, 1), np.delete(want, 3, 1))) and bool(
            (gn == wn).all())
    return got.shape == want.shape and bool(np.array_equal(got, want))
