"""Build the corpus of real kernels: every launch numba-cuda's own tests make, recorded under numba's simulator.

    .venv/bin/python bench/corpus_extract.py [--out tests/data/numba_cuda_corpus.npz] [--only test_atomics]
                                             [--into tests/data/numba_cuda_corpus.npz]   (re-extract some modules)

Runs the test modules that ship inside the installed numba-cuda (``numba/cuda/tests/cudapy`` and
``doc_examples``) under ``NUMBA_ENABLE_CUDASIM=1``, one module per worker process (a module that hangs or
crashes the interpreter loses only itself), with every launch intercepted (gpuviz.runner.intercept's
Interceptor). For each launch of a small grid it keeps what re-running it needs without the tests:

* the kernel: its source (original file and line numbers), the jit options, and every free name it reads
  (modules, numbers, numpy/numba types, arrays, device functions, each encoded as data, never pickled);
* the configuration and the inputs (host copies), and the outputs the simulator left;
* an independent per-thread recording of the same launch on the simulator (gpuviz's ``backend="sim"``,
  perthread.py), as a canonical event matrix.

A launch whose kernel or arguments cannot be stored that way is listed with the reason. The result is one
compressed ``.npz`` (loads with ``allow_pickle=False``): ``index`` (JSON) plus the arrays it names.
``bench/corpus.py`` re-runs it on the CPU executor and compares.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MAX_THREADS = 8192  # grid x block of a kept launch
MAX_BYTES = 8 << 20  # inputs of a kept launch
MAX_EVENTS = 400_000  # per-thread recording of a kept launch
MAX_PER_KERNEL = 3  # launches kept per kernel and test module
MODULE_TIMEOUT_S = 300


class Unstorable(Exception):
    pass


def tests_root() -> Path:
    import numba_cuda

    return Path(numba_cuda.__file__).resolve().parent / "numba" / "cuda" / "tests"


def test_modules() -> list[str]:
    root = tests_root()
    out = []
    for sub in ("cudapy", "doc_examples"):
        for p in sorted((root / sub).glob("test_*.py")):
            out.append(f"numba.cuda.tests.{sub}.{p.stem}")
    return out


# ---- encoding -------------------------------------------------------------------------------------------
class Store:
    """Arrays go to ``arrays`` under fresh keys; everything else is JSON."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.arrays: dict = {}

    def put(self, arr) -> str:
        import numpy as np

        key = f"{self.prefix}{len(self.arrays)}"
        self.arrays[key] = np.array(arr, copy=True)
        return key


def encode_value(v, st: Store, depth=0):
    """Arguments and plain data (numbers, arrays, records, tuples, argument hints)."""
    import numpy as np

    if depth > 6:
        raise Unstorable("nested too deeply")
    if v is None:
        return {"t": "none"}
    if isinstance(v, (bool, int, float)) and not isinstance(v, np.generic):
        return {"t": "py", "v": v, "k": type(v).__name__}
    if isinstance(v, complex):
        return {"t": "complex", "v": [v.real, v.imag]}
    if isinstance(v, np.void):
        return {"t": "record", "a": st.put(np.array(v))}
    if isinstance(v, np.generic):
        return {"t": "npscalar", "a": st.put(np.array(v))}
    if isinstance(v, np.ndarray):
        if v.dtype.hasobject:
            raise Unstorable("object array")
        return {"t": "array", "a": st.put(v)}
    name = type(v).__name__
    if name in ("In", "Out", "InOut") and hasattr(v, "value"):
        return {"t": "hint", "h": name, "v": encode_value(v.value, st, depth + 1)}
    if hasattr(v, "copy_to_host") and hasattr(v, "shape"):
        host = v.copy_to_host()
        if host.dtype.hasobject:
            raise Unstorable("object device array")
        return {"t": "device", "a": st.put(host)}
    if isinstance(v, tuple):
        enc = {"t": "tuple", "v": [encode_value(e, st, depth + 1) for e in v]}
        if hasattr(type(v), "_fields"):  # a namedtuple: its fields are read by name (p.x)
            enc["name"], enc["fields"] = type(v).__name__, list(type(v)._fields)
        return enc
    if isinstance(v, str):
        return {"t": "py", "v": v, "k": "str"}
    raise Unstorable(f"a {type(v).__module__}.{type(v).__qualname__}")


def _importable(obj) -> dict | None:
    mod = getattr(obj, "__module__", None)
    qual = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if not mod or not qual or "<" in qual:
        return None
    try:
        target = importlib.import_module(mod)
        for part in qual.split("."):
            target = getattr(target, part)
    except Exception:  # noqa: BLE001
        return None
    return {"t": "attr", "mod": mod, "name": qual} if target is obj else None


def encode_name(obj, st: Store, funcs: dict, depth=0):
    """What a kernel's free name refers to."""
    import types

    import numpy as np

    if isinstance(obj, types.ModuleType):
        return {"t": "module", "name": obj.__name__}
    if hasattr(obj, "py_func") and getattr(obj, "_device", False):
        return {"t": "device", "f": encode_function(obj, st, funcs, depth + 1)}
    if hasattr(obj, "py_func") and hasattr(obj, "grid_dim"):
        raise Unstorable("a kernel referenced from a kernel")
    if isinstance(obj, type) and issubclass(obj, np.generic):
        return {"t": "nptype", "s": np.dtype(obj).name}
    if isinstance(obj, np.dtype):
        return {"t": "dtype", "a": st.put(np.zeros(0, obj))}
    if type(obj).__module__.startswith("numba.core.types") or type(obj).__module__.startswith("numba.cuda.types"):
        import numba

        s = str(obj)
        if getattr(numba.types, s, None) == obj:
            return {"t": "numba_type", "s": s}
        raise Unstorable(f"numba type {s}")
    try:
        return encode_value(obj, st, depth)
    except Unstorable:
        pass
    hit = _importable(obj)
    if hit is not None:
        return hit
    raise Unstorable(f"a {type(obj).__module__}.{type(obj).__qualname__}")


def _free_names(code) -> set:
    out = set(code.co_names) | set(code.co_freevars)
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            out |= _free_names(c)
    return out


def encode_function(kernel, st: Store, funcs: dict, depth=0) -> str:
    """The key of the function entry in ``funcs`` (each function stored once)."""
    import inspect

    fn = kernel.py_func
    # per dispatcher: two jits of one function may differ in options and extensions
    key = f"{fn.__module__}.{fn.__qualname__}@{fn.__code__.co_firstlineno}#{id(fn)}#{id(kernel)}"
    if key in funcs:
        return key
    if depth > 8:
        raise Unstorable("device functions nested too deeply")
    funcs[key] = None  # recursion guard
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        raise Unstorable(f"no source ({exc})") from exc
    names = {}
    ns = dict(fn.__globals__)
    if fn.__closure__:
        for n, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                ns[n] = cell.cell_contents
            except ValueError:
                pass
    for n in sorted(_free_names(fn.__code__)):
        if n in ns:
            try:
                names[n] = encode_name(ns[n], st, funcs, depth)
            except Unstorable as exc:
                names[n] = {"t": "unstorable", "why": str(exc)}
    src_file = inspect.getsourcefile(fn) or fn.__code__.co_filename
    root = str(tests_root().parents[2])
    rel = os.path.relpath(src_file, root) if src_file.startswith(root) else src_file
    funcs[key] = {
        "name": fn.__name__, "file": rel, "first_line": first, "source": "".join(lines), "names": names,
        "device": bool(getattr(kernel, "_device", False)), "debug": bool(getattr(kernel, "_debug", False)),
        "fastmath": bool(getattr(kernel, "_fastmath", False)),
        "extensions": [type(e).__name__ for e in getattr(kernel, "extensions", [])],
    }
    return key


def _nbytes(v) -> int:
    import numpy as np

    if isinstance(v, np.ndarray):
        return v.nbytes
    if hasattr(v, "value"):
        return _nbytes(v.value)
    if hasattr(v, "nbytes"):
        return int(v.nbytes)
    if isinstance(v, tuple):
        return sum(_nbytes(e) for e in v)
    return 0


# ---- one module, in a worker process --------------------------------------------------------------------
def run_module(modname: str, out_path: str, prefix: str) -> None:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    import unittest

    from tests.corpus_support import event_matrix, stub_filecheck

    stub_filecheck()

    import numpy as np
    from numba import cuda  # noqa: F401 - the simulator is chosen here

    import gpuviz
    from gpuviz.runner.intercept import Interceptor

    st = Store(prefix)
    funcs: dict = {}
    launches: list = []
    per_kernel: dict = {}
    state = {"test": ""}

    class Recorder:
        def launch(self, kernel, grid, block, args, run_original, dynamic_shared_bytes=0):
            rec = {"test": state["test"], "module": modname, "grid": list(grid), "block": list(block)}
            try:
                from gpuviz.capture.limits import normalize_dims

                g, b = normalize_dims(grid, "grid"), normalize_dims(block, "block")
                rec["grid"], rec["block"] = list(g), list(b)
                n = int(np.prod(g)) * int(np.prod(b))
                kname = getattr(kernel.py_func, "__qualname__", "?")
                rec["kernel_name"] = kname
                count = per_kernel.get(kname, 0)
                if n > MAX_THREADS:
                    raise Unstorable(f"{n} threads (corpus keeps <= {MAX_THREADS})")
                if sum(_nbytes(a) for a in args) > MAX_BYTES:
                    raise Unstorable("inputs over the size kept")
                if count >= MAX_PER_KERNEL:
                    rec = None
                    return run_original()
                if dynamic_shared_bytes:
                    rec["dynshared"] = int(dynamic_shared_bytes)
                rec["kernel"] = encode_function(kernel, st, funcs)
                rec["args"] = [encode_value(a, st) for a in args]
            except Unstorable as exc:
                if rec is not None:
                    rec["unstorable"] = str(exc)
                    launches.append(rec)
                return run_original()
            per_kernel[kname] = count + 1
            sim_args = decode_args(rec["args"], st.arrays)
            t0 = time.perf_counter()
            try:
                result = run_original()
                rec["sim_raised"] = None
            except Exception as exc:  # the test may expect it: let it through after recording
                rec["sim_raised"] = type(exc).__name__
                rec["sim_seconds"] = time.perf_counter() - t0
                rec["outputs"] = [encode_value(a, st) if _is_array_like(a) else None for a in args]
                launches.append(rec)
                self._per_thread(kernel, rec, sim_args, st)
                raise
            rec["sim_seconds"] = time.perf_counter() - t0
            rec["outputs"] = [encode_value(a, st) if _is_array_like(a) else None for a in args]
            launches.append(rec)
            self._per_thread(kernel, rec, sim_args, st)
            return result

        def _per_thread(self, kernel, rec, sim_args, st):
            try:
                trace = gpuviz.capture(kernel, tuple(rec["grid"]), tuple(rec["block"]), *sim_args, backend="sim",
                                       lockstep=False, max_events=MAX_EVENTS,
                                       dynamic_shared_bytes=rec.get("dynshared", 0))
                mat, names = event_matrix(trace)
                rec["sim_events"] = st.put(mat)
                rec["sim_event_names"] = names
            except BaseException as exc:  # noqa: BLE001 - the per-thread recording is optional
                rec["sim_events_missing"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]

    class Result(unittest.TextTestResult):
        def startTest(self, test):
            state["test"] = test.id()
            super().startTest(test)

    try:
        suite = unittest.defaultTestLoader.loadTestsFromName(modname)
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        suite = unittest.TestSuite()
    with open(os.devnull, "w") as devnull:
        with Interceptor(Recorder()):
            unittest.TextTestRunner(stream=devnull, resultclass=Result, verbosity=0).run(suite)
    np.savez_compressed(out_path, index=np.frombuffer(json.dumps({"launches": launches, "funcs": funcs}).encode(), np.uint8),
                        **st.arrays)


def _is_array_like(a) -> bool:
    import numpy as np

    return isinstance(a, np.ndarray) or (hasattr(a, "copy_to_host") and hasattr(a, "shape")) or (
        type(a).__name__ in ("In", "Out", "InOut")) or isinstance(a, np.void) or (
        isinstance(a, tuple) and any(_is_array_like(e) for e in a))


def decode_args(encoded, arrays) -> list:
    from tests.corpus_support import decode_value

    return [decode_value(e, arrays) for e in encoded]


# ---- merge ------------------------------------------------------------------------------------------------
def _merged(into: Path, mods: list[str], launches, funcs, arrays, status):
    """The corpus ``into`` with the launches of ``mods`` replaced by these (re-extracted) ones: the new
    arrays renamed apart from the old ones, and the functions and arrays nothing refers to any more left out."""
    import numpy as np

    with np.load(into, allow_pickle=False) as z:
        old = json.loads(bytes(z["index"]).decode())
        old_arrays = {k: z[k] for k in z.files if k != "index"}
    tag = next(f"r{k}" for k in range(10_000) if not any(name.startswith(f"r{k}") for name in old_arrays))
    rename = {name: tag + name for name in arrays}

    def renamed(v):
        if isinstance(v, dict):
            return {k: renamed(x) for k, x in v.items()}
        if isinstance(v, list):
            return [renamed(x) for x in v]
        return rename.get(v, v) if isinstance(v, str) else v

    kept = [r for r in old["launches"] if r["module"] not in set(mods)] + renamed(launches)
    all_funcs = {**old["funcs"], **renamed(funcs)}
    all_arrays = {**old_arrays, **{rename[k]: v for k, v in arrays.items()}}
    used_funcs, todo = set(), [r["kernel"] for r in kept if "kernel" in r]
    while todo:  # the kernels kept and the device functions they name
        key = todo.pop()
        if key in used_funcs or not all_funcs.get(key):
            continue
        used_funcs.add(key)
        todo.extend(e["f"] for e in all_funcs[key]["names"].values() if e.get("t") == "device")
    funcs_out = {k: all_funcs[k] for k in used_funcs}
    refs: set = set()

    def collect(v):
        if isinstance(v, dict):
            for x in v.values():
                collect(x)
        elif isinstance(v, list):
            for x in v:
                collect(x)
        elif isinstance(v, str) and v in all_arrays:
            refs.add(v)

    collect(kept)
    collect(funcs_out)
    return kept, funcs_out, {k: all_arrays[k] for k in refs}, {**old.get("modules", {}), **status}

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "tests" / "data" / "numba_cuda_corpus.npz"))
    ap.add_argument("--only", nargs="*", help="test module stems (test_atomics ...)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--into", help="replace the --only modules' launches in this existing corpus, keep the rest")
    ap.add_argument("--module", help=argparse.SUPPRESS)
    ap.add_argument("--part", help=argparse.SUPPRESS)
    ap.add_argument("--prefix", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.module:
        run_module(a.module, a.part, a.prefix)
        return 0
    import tempfile

    import numpy as np

    mods = test_modules()
    if a.only:
        mods = [m for m in mods if m.rsplit(".", 1)[1] in a.only]
    tmp = Path(tempfile.mkdtemp(prefix="gpuviz-corpus-"))
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=str(ROOT))
    pending = list(enumerate(mods))
    running: list = []
    status = {}
    t_start = time.perf_counter()
    while pending or running:
        while pending and len(running) < a.jobs:
            i, m = pending.pop(0)
            part = tmp / f"part{i:03d}.npz"
            p = subprocess.Popen([sys.executable, __file__, "--module", m, "--part", str(part), "--prefix", f"m{i}_"], env=env,
                                 stdout=subprocess.DEVNULL, stderr=open(tmp / f"part{i:03d}.log", "w"))
            running.append((i, m, part, p, time.perf_counter()))
        time.sleep(0.2)
        for item in list(running):
            i, m, part, p, t0 = item
            if p.poll() is None and time.perf_counter() - t0 < MODULE_TIMEOUT_S:
                continue
            if p.poll() is None:
                p.kill()
                p.wait()
                status[m] = "timed out"
            else:
                status[m] = "ok" if p.returncode == 0 and part.exists() else f"exit {p.returncode}"
            running.remove(item)
            print(f"{m:70s} {status[m]:10s} {time.perf_counter() - t0:6.1f}s", flush=True)
    launches, funcs, arrays = [], {}, {}
    for i, m in enumerate(mods):
        part = tmp / f"part{i:03d}.npz"
        if not part.exists():
            continue
        with np.load(part, allow_pickle=False) as z:
            idx = json.loads(bytes(z["index"]).decode())
            for k in z.files:
                if k != "index":
                    arrays[k] = z[k]  # keys carry the module's prefix (m<i>_<n>)
            launches.extend(idx["launches"])
            funcs.update(idx["funcs"])
    if a.into:
        launches, funcs, arrays, status = _merged(Path(a.into), mods, launches, funcs, arrays, status)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"launches": launches, "funcs": funcs, "modules": status,
            "numba_cuda": __import__("numba_cuda").__version__, "built": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    np.savez_compressed(out, index=np.frombuffer(json.dumps(meta).encode(), np.uint8), **arrays)
    kept = sum(1 for r in launches if "unstorable" not in r)
    print(f"{len(launches)} launches seen, {kept} kept, {len(funcs)} functions, {out.stat().st_size / 1e6:.1f} MB "
          f"in {time.perf_counter() - t_start:.0f}s -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
