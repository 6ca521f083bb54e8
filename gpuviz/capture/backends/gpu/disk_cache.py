"""Compiled recording variants kept on disk, so that a kernel captured before costs a launch, not a compile.

``gpuviz run`` starts a fresh process per program, and each GPU capture compiled its counting and recording
variants again (issue 25: ~1 s of NVVM and linking each on an H200, a capture 5.7x numba's own first launch).
numba-cuda's ``cache=True`` cannot hold them: its index is keyed by the source file and the function's name and
bytecode, and the variants of one kernel share all three while their recorders (globals of the generated code)
differ. This cache plugs into the same place of numba-cuda's dispatcher (``dispatcher._cache``: ``load_overload``
and ``save_overload``, the interface of numba's ``Cache``) and stores what numba-cuda's own cache stores (the
kernel's ``_reduce_states()``: its PTX and cubins), under a key made of everything the compiled code depends on:

- the generated source of every function of the variant, and the variant's options (its recorders are made from
  them);
- what the free names of the user's functions refer to (constants, arrays read as constant memory, dtypes, the
  modules' attributes they read): a value with no stable description (an object of an unknown class) means no
  disk cache for that variant, never a stale one;
- the dispatcher's compile options, the signature, numba-cuda's codegen (target and compute capability), the
  versions of numba, numba-cuda, llvmlite and Python, and a hash of gpuviz's capture code.

``$XDG_CACHE_HOME/gpuviz/gpu-variants`` (``~/.cache/...``), at most :data:`MAX_BYTES` (``GPUVIZ_GPU_CACHE_MB``
sets another size); ``GPUVIZ_GPU_CACHE=0`` turns it off. A file that cannot be read (damaged, another version's) is a miss and is replaced.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import importlib
import logging
import marshal
import os
import pickle
import sys
import tempfile
import types
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

#: the folder is trimmed (least recently used first) to this size after a save; GPUVIZ_GPU_CACHE_MB sets another
#: (numba-cuda's whole test corpus fills ~600 MB: bench/gpu_capture_speed.py gives it room)
MAX_BYTES = 512 * 1024 * 1024


def max_bytes() -> int:
    try:
        return int(float(os.environ["GPUVIZ_GPU_CACHE_MB"]) * 1024 * 1024)
    except (KeyError, ValueError):
        return MAX_BYTES
_FORMAT = 1


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpuviz" / "gpu-variants"


def enabled() -> bool:
    return os.environ.get("GPUVIZ_GPU_CACHE", "1") != "0"


@functools.lru_cache(maxsize=1)
def _code_hash() -> str:
    """A hash of gpuviz's capture package: a change to the rewriter or the recorders invalidates every entry."""
    root = Path(__file__).resolve().parents[2]  # gpuviz/capture
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def _versions() -> str:
    import llvmlite
    import numba

    try:
        from importlib.metadata import version

        numba_cuda = version("numba-cuda")
    except Exception:  # noqa: BLE001 - a missing distribution's metadata: the key just says so
        numba_cuda = "?"
    return f"python {sys.version.split()[0]}, numba {numba.__version__}, numba-cuda {numba_cuda}, " \
           f"llvmlite {llvmlite.__version__}, numpy {np.__version__}"


class NoStableDescription(Exception):
    """A value whose compiled meaning cannot be told from a description: the variant is not cached on disk."""


def describe(value, depth: int = 0) -> str:
    """A description of ``value`` that is the same for equal values in any process, as far as compiled code
    depends on it."""
    if depth > 8:
        raise NoStableDescription("nested too deep")
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, np.generic):
        return f"np:{value.dtype.str}:{value!r}"
    if isinstance(value, np.dtype):
        return f"dtype:{value.descr!r}:{value.isalignedstruct}"
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        digest = hashlib.sha256(data.view(np.uint8).reshape(-1).tobytes() if data.size else b"").hexdigest()
        return f"array:{value.dtype.descr!r}:{value.shape}:{digest}"
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__}(" + ",".join(describe(v, depth + 1) for v in value) + ")"
    if isinstance(value, types.ModuleType):
        return f"module:{value.__name__}"
    if isinstance(value, type):
        return f"class:{value.__module__}.{value.__qualname__}"
    py_func = getattr(value, "py_func", None)
    if isinstance(py_func, types.FunctionType):  # a device function: its source is among the variant's
        return f"jit:{py_func.__module__}.{py_func.__qualname__}"
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType)):
        return f"function:{getattr(value, '__module__', '')}.{value.__qualname__}"
    module = type(value).__module__ or ""
    if module.startswith("numba"):  # numba types (float32, a Record, ...), whose repr is their identity
        text = repr(value)
        if " at 0x" not in text:
            return f"numba:{text}"
    raise NoStableDescription(f"a {type(value).__name__}")


def _free_names(tree: ast.AST) -> list[list[str]]:
    """The dotted names a function reads (``x``, ``mod.attr.attr``), as lists of parts."""
    out = []
    for node in ast.walk(tree):
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            out.append([node.id, *reversed(parts)])
    return out


def _module_attribute(module: types.ModuleType, attr: str):
    """``module.attr``, a submodule imported if need be: numba.cuda's ``fp16`` is there only once something imported
    it (numba's first compile of a kernel that uses it), so a description read before and after a compile differed,
    and a variant's entry written by one process was never found by the next (H200: every float16 kernel's
    instrumented variant compiled again)."""
    value = getattr(module, attr, None)
    if value is None:
        try:
            value = importlib.import_module(f"{module.__name__}.{attr}")
        except Exception:  # noqa: BLE001 - no such submodule: the name reads None, in every process alike
            return None
    return value


def globals_description(functions) -> str:
    """What the free names of ``functions`` (FunctionSource objects) refer to; raises :class:`NoStableDescription`
    for a value that cannot be described."""
    lines = []
    for fs in functions:
        ns = fs.names()
        for parts in sorted(_free_names(fs.tree)):
            if parts[0] not in ns:
                continue  # a local, a parameter, a builtin
            value = ns[parts[0]]
            text = [describe(value)]
            for attr in parts[1:]:  # a module's constant (``config.TILE``) is part of the code too
                if not isinstance(value, types.ModuleType):
                    break
                value = _module_attribute(value, attr)
                try:
                    text.append(describe(value))
                except NoStableDescription:
                    break
            lines.append(f"{fs.name}:{'.'.join(parts)}={'|'.join(text)}")
    return "\n".join(lines)


class VariantDiskCache:
    """numba-cuda's cache interface (``load_overload``, ``save_overload``, ``flush``) over one folder, for one
    variant, whose ``key`` covers everything but the signature and the target."""

    def __init__(self, key: str, folder: Path | None = None):
        self.key = key
        self.folder = folder or cache_dir()
        self.hits = 0
        self.problem = ""  # why the last compile could not be kept on disk, if it could not
        self._target_context = None  # numba-cuda's, given to load_overload (which numba calls before a save)

    def _path(self, sig, target_context) -> Path:
        codegen = target_context.codegen()
        text = f"{_FORMAT}\n{self.key}\n{sig!r}\n{codegen.magic_tuple()!r}"
        digest = hashlib.sha256(text.encode()).hexdigest()
        return self.folder / digest[:2] / f"{digest}.kernel"

    def load_overload(self, sig, target_context):
        from numba.cuda.dispatcher import _Kernel

        self._target_context = target_context
        path = self._path(sig, target_context)
        try:
            payload = pickle.loads(path.read_bytes())  # noqa: S301 - our own file, in the user's own cache folder
            kernel = _Kernel._rebuild(**payload)
        except FileNotFoundError:
            return None
        except Exception as exc:  # noqa: BLE001 - a damaged or foreign file is a miss; the save replaces it
            log.info("gpuviz: ignoring the cached GPU variant %s: %s", path, exc)
            return None
        os.utime(path)  # the trim keeps what was used last
        self.hits += 1
        return kernel

    @property
    def cache_path(self) -> str:
        return str(self.folder)

    def save_overload(self, sig, kernel):
        try:
            from numba.cuda.serialize import dumps  # numba-cuda's own cache pickles with it
        except ImportError:
            from numba.core.serialize import dumps

        if getattr(kernel, "launch_config_sensitive", False):
            self.problem = "compiled for one launch configuration"
            return
        if self._target_context is None:
            self.problem = "numba gave no target to key it by"
            return
        try:
            write_entry(self._path(sig, self._target_context), _pickled_with_final_code(kernel, dumps))
        except Exception as exc:  # noqa: BLE001 - a cache that cannot be written costs the next capture a compile
            self.problem = f"{type(exc).__name__}: {exc}"[:300]
            log.info("gpuviz: could not keep the compiled GPU variant on disk: %s", self.problem)
            return
        trim(self.folder, max_bytes())

    def flush(self):
        pass


def _pickled_with_final_code(kernel, dumps) -> bytes:
    """``dumps(kernel._reduce_states())``, also for a kernel whose code library links files (CUDA C++ that numba-cuda
    compiles with NVRTC: float16 arithmetic, cooperative groups), which numba-cuda refuses to pickle ("Cannot pickle
    CUDACodeLibrary with linking files"): those kernels were compiled again in every process, most of a warm
    capture's time over numba-cuda's corpus on an H200 (13 of 17.6 s in one shard). What is saved is the linked cubin
    for this device, with the files already in it: the entry is keyed by the compute capability (``_path``), and a
    library rebuilt with its cubin never links again. numba-cuda's own runtime library (NRT) stays listed, as numba-cuda
    keeps it, since a kernel using it needs NRT set up at launch."""
    from numba.cuda.memory_management.nrt import NRT_LIBRARY

    lib = kernel._codelibrary
    linked = set(lib._linking_files)
    if linked - {NRT_LIBRARY}:
        lib.get_cubin()  # the launch would link it now anyway; cached in the library, so not linked twice
        # the library is pickled (its own _reduce_states) inside dumps, so the files stay unlisted until it is done
        lib._linking_files = linked & {NRT_LIBRARY}
        try:
            return dumps(kernel._reduce_states())
        finally:
            lib._linking_files = linked
    return dumps(kernel._reduce_states())


def write_entry(path: Path, data: bytes) -> None:
    """Write a cache entry whole or not at all: a process reading it at the same time sees the old file or the new
    one, never a part. (Not model.safewrite: its checks are for the user's output paths, and its temporary file ends
    like the target, which :func:`trim`'s patterns would match while it is written.)"""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def trim(folder: Path, max_bytes: int = MAX_BYTES, pattern: str = "*/*.kernel") -> None:
    """Delete the least recently used files (``pattern``) until the folder holds at most ``max_bytes``."""
    try:
        files = [(p.stat().st_mtime, p.stat().st_size, p) for p in folder.glob(pattern)]
    except OSError:
        return
    total = sum(size for _, size, _ in files)
    for _, size, path in sorted(files):
        if total <= max_bytes:
            break
        try:
            path.unlink()
            total -= size
        except OSError:
            pass


def attach(dispatcher, *, sources: dict[str, str], options: tuple, functions, names: str | None = None
           ) -> VariantDiskCache | None:
    """Give ``dispatcher`` (a variant's ``cuda.jit`` kernel) a disk cache keyed by the variant's ``sources``
    ({function: generated source}), its ``options`` and the values the user's ``functions`` read (``names``: their
    :func:`globals_description`, when the caller has it already); None when the cache is off or a value has no
    stable description (the variant is then compiled as before)."""
    if not enabled() or not hasattr(dispatcher, "targetoptions"):  # off, or a stand-in (SourceOnlyCuda)
        return None
    if names is None:
        try:
            names = globals_description(functions)
        except NoStableDescription as exc:
            log.info("gpuviz: no disk cache for this GPU variant: a global is %s", exc)
            return None
    opts = sorted((k, repr(v)) for k, v in getattr(dispatcher, "targetoptions", {}).items())
    text = "\n\n".join([_versions(), _code_hash(), repr(options), repr(opts), names,
                        *(f"{name}\n{src}" for name, src in sorted(sources.items()))])
    cache = VariantDiskCache(hashlib.sha256(text.encode()).hexdigest())
    dispatcher._cache = cache
    return cache


def own_kernel_cache(name: str) -> VariantDiskCache | None:
    """The disk cache of one of gpuviz's own kernels (``name``: its code is gpuviz's, so the versions and gpuviz's code
    hash are its whole key), or None when the cache is off."""
    if not enabled():
        return None
    return VariantDiskCache(hashlib.sha256("\n".join([name, _versions(), _code_hash()]).encode()).hexdigest())


def cached_plain(kernel, root) -> object | None:
    """A copy of the user's dispatcher ``kernel`` (its function, its options) whose compiled code is kept on disk as
    a variant's is, keyed by the sources of ``root`` (the kernel's :class:`FunctionSource`) and its device functions,
    where they lie, and what their free names read; None when the cache is off, or the kernel cannot be copied or
    described.

    The plain run of a capture (its timing, the outputs the recording is checked against, its registers) compiled the
    user's kernel in every new process: on an H200 most of a capture whose variants came from disk (numba's first
    launch there: 0.09 s median over the corpus, a warm capture 0.13 s)."""
    if not enabled():
        return None
    try:
        copy = type(kernel)(kernel.py_func, targetoptions=dict(kernel.targetoptions))
    except Exception:  # noqa: BLE001 - not numba-cuda's dispatcher as this module knows it: the user's own, as before
        return None
    # every function it reaches, not only those it calls itself: a device function's callee is described by its name
    # alone among the caller's globals, so an edit of it must show in the sources
    functions = root.reachable()
    sources = {function_id(fs): ast.unparse(fs.tree) for fs in functions}
    return copy if attach(copy, sources=sources, options=("plain",), functions=functions) is not None else None


# ---- the rewrite's output, kept on disk too ---------------------------------------------------------------
#: 1: {"functions": {function_id: {"source", "code"}}, "arrays": [ArrayInfo]}
_BUILD_FORMAT = 1


def build_folder() -> Path:
    return cache_dir().parent / "gpu-builds"


def function_id(fs) -> str:
    """Which function of the user's a generated one came from: its name, file and first line."""
    return f"{fs.name} {fs.file}:{fs.first_line}"


def build_key(functions, options: tuple, names: str) -> str:
    """The key of a variant's rewrite: gpuviz's code, the versions, the variant's ``options``, what the free names of
    the user's ``functions`` refer to (``names``: :func:`globals_description`) and each function's tree as parsed,
    line numbers included (the file's text could change on disk after the parse; the tree is what is rewritten)."""
    text = "\n\n".join([str(_BUILD_FORMAT), _versions(), _code_hash(), repr(options), names,
                         *(f"{function_id(fs)}\n{ast.dump(fs.tree, include_attributes=True)}" for fs in functions)])
    return hashlib.sha256(text.encode()).hexdigest()


def _build_path(key: str) -> Path:
    return build_folder() / key[:2] / f"{key}.build"


def load_build(key: str) -> dict | None:
    """A rewrite saved by :func:`save_build`: {"functions": {function_id: {"source": generated source, "code": its
    code object}}, "arrays": [ArrayInfo]}; None when there is none, or it cannot be read (a damaged file is a miss,
    replaced by the next save)."""
    path = _build_path(key)
    try:
        payload = pickle.loads(path.read_bytes())  # noqa: S301 - our own file, in the user's own cache folder
        if payload.get("format") != _BUILD_FORMAT:
            return None
        functions = {fid: {"source": str(f["source"]), "code": marshal.loads(f["code"])}
                     for fid, f in payload["functions"].items()}
        arrays = list(payload["arrays"])
    except FileNotFoundError:
        return None
    except Exception as exc:  # noqa: BLE001 - damaged or another version's: rewritten as if never saved
        log.info("gpuviz: ignoring the cached GPU rewrite %s: %s", path, exc)
        return None
    os.utime(path)
    return {"functions": functions, "arrays": arrays}


def save_build(key: str, functions: dict[str, dict], arrays: list) -> None:
    """Keep a variant's rewrite: ``functions`` {function_id: {"source": generated source, "code": its compiled code
    object}} and the variant's ``arrays`` (ArrayInfo, in id order). A folder that cannot be written costs the next
    process a rewrite, nothing else."""
    try:
        write_entry(_build_path(key), pickle.dumps({
            "format": _BUILD_FORMAT, "arrays": list(arrays),
            "functions": {fid: {"source": f["source"], "code": marshal.dumps(f["code"])} for fid, f in functions.items()}}))
    except Exception as exc:  # noqa: BLE001 - see above
        log.info("gpuviz: could not keep the GPU rewrite on disk: %s", exc)
        return
    trim(build_folder(), max_bytes() // 16, pattern="*/*.build")
