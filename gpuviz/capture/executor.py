"""gpuviz's CPU executor: compile a kernel to lockstep numpy code once, run it on a launch, record it."""

from __future__ import annotations

import ast
import os
import time
from dataclasses import dataclass, field

import numpy as np

from .errors import LaunchConfigError, UnsupportedConstruct
from .simt_compile import compile_kernel
from .simt_runtime import SimtRuntime
from .source import FunctionSource, collect_device_functions, parse_function, python_function


@dataclass
class CompiledKernel:
    """A kernel compiled for the CPU executor, plus what the launch checks need to know statically."""

    root: FunctionSource
    generated_source: str
    entry: object  # the generated Python function
    shared_bytes: int  # static shared memory per block
    shared_decls: list = field(default_factory=list)  # [(line, shape, dtype)]
    compile_seconds: float = 0.0


_cache: dict = {}


def _static_shared(root: FunctionSource) -> tuple[int, list]:
    """Shared memory a block needs, from the cuda.shared.array declarations (their shapes are constants)."""
    from .simt_compile import SimtCompiler

    total, decls = 0, []
    funcs = [root, *root.device_functions.values()]
    for fs in funcs:
        comp = SimtCompiler(fs, is_kernel=False, device_names={})
        for node in ast.walk(fs.tree):
            if isinstance(node, ast.Call):
                parts = comp.dotted(node.func)
                if parts and parts[0] == "cuda" and parts[1:] == ["shared", "array"]:
                    kw = {k.arg: k.value for k in node.keywords}
                    shape_node = node.args[0] if node.args else kw.get("shape")
                    dtype_node = node.args[1] if len(node.args) > 1 else kw.get("dtype")
                    if shape_node is None or dtype_node is None:
                        raise comp.error(node, "cuda.shared.array needs a shape and a dtype")
                    shape = comp.const_eval(shape_node)
                    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
                    dtype = np.dtype(comp.np_dtype(comp.const_eval(dtype_node), node))
                    if any(int(s) <= 0 for s in shape):
                        raise comp.error(
                            node,
                            "gpuviz needs a static shared-memory shape (dynamic shared memory, shape 0, is not supported)",
                        )
                    total += int(np.prod(shape)) * dtype.itemsize
                    decls.append((node.lineno, shape, str(dtype)))
    return total, decls


def compile_for_cpu(kernel) -> CompiledKernel:
    fn = python_function(kernel)
    try:
        mtime = os.path.getmtime(fn.__code__.co_filename)
    except OSError:
        mtime = 0.0
    key = (fn.__code__, mtime)
    hit = _cache.get(key)
    if hit is not None:
        return hit
    t0 = time.perf_counter()
    root = parse_function(fn)
    collect_device_functions(root)
    src, entry_name, namespaces = compile_kernel(root)
    ns = {"np": np, **namespaces}
    try:
        code = compile(src, f"<gpuviz simt: {root.name}>", "exec")
    except SyntaxError as exc:  # a bug of ours, not the user's: say so with the generated code
        raise UnsupportedConstruct(f"internal error compiling {root.name} for the CPU executor: {exc}\n{src}") from exc
    exec(code, ns)  # noqa: S102 - code generated from the user's own kernel
    shared_bytes, decls = _static_shared(root)
    ck = CompiledKernel(root, src, ns[entry_name], shared_bytes, decls, time.perf_counter() - t0)
    _cache[key] = ck
    return ck


def host_array(arg):
    """(numpy array, write_back) for an array argument: numpy arrays as they are, device arrays copied."""
    if isinstance(arg, np.ndarray):
        return arg, None
    if isinstance(arg, np.generic):  # numpy scalars have __array_interface__ too, but they are numbers
        return None, None
    if hasattr(arg, "copy_to_host") and hasattr(arg, "shape"):
        host = np.asarray(arg.copy_to_host())

        def write_back(h=host, dev=arg):
            dev.copy_to_device(h)

        return host, write_back
    if hasattr(arg, "__cuda_array_interface__") or hasattr(arg, "__array_interface__"):
        return np.asarray(arg), None
    return None, None


def make_runtime(ck: CompiledKernel, grid, block, *, record=True, record_blocks=None, max_events=50_000_000,
                 max_loop_iterations=5_000_000) -> SimtRuntime:
    return SimtRuntime(
        grid, block, file=ck.root.file, line_text=ck.root.line_text, record=record, record_blocks=record_blocks,
        max_events=max_events, max_loop_iterations=max_loop_iterations,
    )


def run_cpu(ck: CompiledKernel, rt: SimtRuntime, args) -> SimtRuntime:
    """Run the compiled kernel on the launch ``rt`` describes; ``rt`` collects the events and arrays."""
    root = ck.root
    if len(args) != len(root.params):
        raise LaunchConfigError(
            f"{root.file}:{root.first_line}: {root.name} takes {len(root.params)} argument(s) "
            f"({', '.join(root.params)}) but the launch passes {len(args)}",
            file=root.file,
            line=root.first_line,
        )
    call_args = []
    write_backs = []
    for name, a in zip(root.params, args):
        host, wb = host_array(a)
        if host is not None:
            call_args.append(rt.add_array(name, host, "global"))
            if wb:
                write_backs.append(wb)
        elif isinstance(a, (bool, int, float, complex, np.generic)):
            call_args.append(a)
        else:
            raise UnsupportedConstruct(
                f"{root.file}:{root.first_line}: argument {name!r} of {root.name} is a {type(a).__name__}; "
                "gpuviz records kernels whose arguments are arrays and numbers",
                file=root.file,
                line=root.first_line,
            )
    rt.kernel_start(root.first_line)
    with np.errstate(all="ignore"):  # lanes that are masked off may divide by zero; the GPU never computes them
        ck.entry(rt, rt.alive.copy(), *call_args)
    for wb in write_backs:
        wb()
    return rt
