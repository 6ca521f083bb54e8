"""The recorders' compiled device functions kept on disk, so that the first capture in a new process does not
compile them again.

Every recording variant calls ``__gv_r_*`` device functions (:func:`.recorders.make_recorders`). Within a process
they are made once per set of constants and numba keeps what it compiled; a new process (``gpuviz run`` starts one
per program) compiled them all again: ~11 numba pipelines of about 0.2 s each per variant on an H200, most of a
cold capture (bench/gpu_capture_profile.py). numba-cuda has no disk cache for device functions, so this one plugs
into the dispatcher's ``compile_device``: an overload numba compiled is saved as its LLVM IR (numba-cuda's own
``CUDACompileResult._reduce`` parts: the function's descriptor, signature and environment) and a later process
rebuilds it without typing or lowering anything. NVVM then compiles the kernel with that IR as it would have.

The key: the recorder's name, the set's constants, the argument types, the compute capability, the versions of
numba, numba-cuda, llvmlite, numpy and Python, and the hash of gpuviz's capture code (:mod:`.disk_cache`); the
folder is ``gpu-recorders`` beside the variants' and the same switch (``GPUVIZ_GPU_CACHE=0``) turns it off. A file
that cannot be read is a miss and is replaced; an overload that cannot be kept (linked files: numba-cuda's own
libraries for fp16, say) is compiled each time, as before.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import os
import pickle
import types
from pathlib import Path

from . import disk_cache

log = logging.getLogger(__name__)

_FORMAT = 2  # 2: a payload's modules in numba's order (see _library_of)


def folder() -> Path:
    return disk_cache.cache_dir().parent / "gpu-recorders"


class _IrText:
    """An LLVM IR module as numba-cuda's code library reads it when it links a kernel: its text (``str``) and no
    functions to adjust (their linkage was set when the library was first finalized, before it was saved)."""

    functions = ()

    def __init__(self, text: str):
        self.text = text

    def __str__(self) -> str:
        return self.text


def _library_of(codegen, name: str, texts: list[str]):
    """A finalized code library that gives ``texts`` (its module, then the modules it links) to the kernels that
    link it."""
    libraries = []
    for k, text in enumerate(texts):
        lib = codegen.create_library(f"{name}.{k}")
        lib._module = _IrText(text)
        lib._finalized = True
        libraries.append(lib)
    # a chain, each linking the next, so that a kernel reads the modules in the order they were saved (numba's: a
    # module before the ones defining what it calls). NVVM links only what the modules before need: in another
    # order (a set of libraries) a definition that came before its first caller was dropped and the kernel
    # called an undefined function
    for lib, after in zip(libraries, libraries[1:]):
        lib._linking_libraries.add(after)
    return libraries[0]


def _payload(cres) -> dict:
    """What rebuilds ``cres`` in another process (numba-cuda's ``_reduce`` with the IR instead of the object code,
    which the CUDA target does not have for a device function)."""
    library = cres.library
    library._ensure_finalized()
    if library._linking_files:
        raise pickle.PicklingError("the device function links files")
    # a caller's lowering reads the descriptor's names, types and calling convention. The types of every variable
    # and the function's globals (a module's dict, with weak references) served only its own lowering; the calling
    # convention holds its target context, so its class is kept and made again for the target that loads it
    fndesc = copy.copy(cres.fndesc)
    call_conv = fndesc.call_conv
    fndesc.typemap = fndesc.calltypes = fndesc.global_dict = fndesc.call_conv = None
    # the linkage a kernel's library gives the functions of every library it links, when it links them (numba-cuda's
    # CUDACodeLibrary.finalize), set now: the text is read back as it would be linked
    for module in library.modules:
        for function in module.functions:
            if not function.is_declaration:
                function.linkage = "linkonce_odr"
    return {"name": library.name, "texts": [str(m) for m in library.modules], "fndesc": fndesc,
            "call_conv": None if call_conv is None else type(call_conv),
            "environment": cres.environment, "signature": cres.signature, "typeann": str(cres.type_annotation)}


def _rebuild(target_context, payload: dict):
    from numba.cuda.compiler import CUDACompileResult

    library = _library_of(target_context.codegen(), payload["name"], payload["texts"])
    if payload["call_conv"] is not None:
        payload["fndesc"].call_conv = payload["call_conv"](target_context)
    return CUDACompileResult(
        target_context=target_context, typing_context=target_context.typing_context, library=library,
        environment=payload["environment"], entry_point=None, fndesc=payload["fndesc"],
        type_annotation=payload["typeann"], signature=payload["signature"], objectmode=False, lifted=(),
        typing_error=None, call_helper=None, metadata=None, reload_init=(), referenced_envs=())


#: over this process, recorder overloads read from disk and compiled (``launch.meta["recorders"]`` per capture)
COUNTS = {"read from disk": 0, "compiled": 0}


class RecorderDiskCache:
    """The disk behind one recorder set's ``compile_device`` (:func:`attach`)."""

    def __init__(self, constants: str, where: Path | None = None):
        self.constants = constants
        self.folder = where or folder()
        self.hits = 0

    def path(self, name: str, args, cc) -> Path:
        text = "\n".join([str(_FORMAT), disk_cache._versions(), disk_cache._code_hash(), self.constants, name,
                          repr(tuple(str(a) for a in args)), repr(tuple(cc))])
        digest = hashlib.sha256(text.encode()).hexdigest()
        return self.folder / digest[:2] / f"{digest}.device"

    def load(self, path: Path, target_context):
        try:
            payload = pickle.loads(path.read_bytes())  # noqa: S301 - our own file, in the user's own cache folder
            cres = _rebuild(target_context, payload)
        except FileNotFoundError:
            return None
        except Exception as exc:  # noqa: BLE001 - a damaged or foreign file is a miss; the save replaces it
            log.info("gpuviz: ignoring the cached recorder %s: %s", path, exc)
            return None
        os.utime(path)
        self.hits += 1
        COUNTS["read from disk"] += 1
        return cres

    def save(self, path: Path, cres) -> None:
        try:
            try:
                from numba.cuda.serialize import dumps  # numba's pickler: it also takes typing templates' classes
            except ImportError:
                from numba.core.serialize import dumps
            disk_cache.write_entry(path, dumps(_payload(cres)))
        except Exception as exc:  # noqa: BLE001 - not kept: the next process compiles it, as before
            log.info("gpuviz: could not keep the compiled recorder on disk: %s", exc)
            return
        disk_cache.trim(self.folder, disk_cache.max_bytes(), pattern="*/*.device")


def attach(recorders: dict, constants: str) -> RecorderDiskCache | None:
    """Route each jitted recorder's ``compile_device`` through the disk: None when the cache is off or the
    recorders are not numba-cuda's device dispatchers."""
    if not disk_cache.enabled():
        return None
    cache = RecorderDiskCache(constants)
    for name, dispatcher in recorders.items():
        original = getattr(type(dispatcher), "compile_device", None)
        if original is None or not hasattr(dispatcher, "overloads"):
            continue
        dispatcher.compile_device = types.MethodType(_compile_device(cache, name, original), dispatcher)
    return cache


def _compile_device(cache: RecorderDiskCache, name: str, original):
    def compile_device(self, args, return_type=None):
        if args in self.overloads or return_type is not None:
            return original(self, args, return_type)
        from numba.cuda import dispatcher as numba_dispatcher

        path = cache.path(name, args, numba_dispatcher.get_current_device().compute_capability)
        cres = cache.load(path, self.targetctx)
        if cres is None:
            cres = original(self, args, return_type)
            COUNTS["compiled"] += 1
            cache.save(path, cres)
            return cres
        self.overloads[args] = cres
        cres.target_context.insert_user_function(cres.entry_point, cres.fndesc, [cres.library])
        return cres

    return compile_device
