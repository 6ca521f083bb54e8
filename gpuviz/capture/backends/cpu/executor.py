"""gpuviz's CPU executor: compile a kernel to lockstep numpy code once, run it on a launch, record it."""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field

import numpy as np

from ...args import _hint, host_array, prepare_args
from ...errors import LaunchConfigError, UnsupportedConstruct
from ...frontend.plan import kernel_debug, plan_for, unsupported  # noqa: F401 - kernel_debug: callers import it here
from ...frontend.source import FunctionSource
from ..base import PlanCache
from .compile import compile_kernel
from .runtime import SimtRuntime
from .watchdog import loop_table


@dataclass
class CompiledKernel:
    """A kernel compiled for the CPU executor, plus what the launch checks need to know statically: the plan's
    code (:class:`CpuCode`, made once per plan) with the kernel and plan it was asked for."""

    root: FunctionSource
    generated_source: str
    entry: object  # the generated Python function
    shared_bytes: int  # static shared memory per block
    shared_decls: list = field(default_factory=list)  # [(line, shape, dtype)]; shape (0,): dynamic shared memory
    compile_seconds: float = 0.0
    kernel: object = None  # the dispatcher it was compiled from (its extensions apply at each launch)
    plan: object = None  # the capture plan (gpuviz.capture.frontend.plan.KernelPlan) it was made from


@dataclass(frozen=True)
class CpuCode:
    """The executor's code for one plan: the generated source, its entry function, and the seconds generating and
    compiling it took. It refers to neither the plan nor the kernel (see ``_CODE``)."""

    source: str
    entry: object
    seconds: float


#: the executor's code, one per capture plan, as long as the plan lives: a plan is read once per kernel object
#: (``plan_for``), so a second launch of a kernel reuses its code. Held by the plan's id and a weak reference to it
#: (:class:`PlanCache`), with values that do not refer back to the plan or the kernel: a kernel nobody holds frees
#: its plan, and the plan its code.
_CODE = PlanCache()


def compile_for_cpu(kernel) -> CompiledKernel:
    """The kernel's plan (:func:`gpuviz.capture.frontend.plan.plan_for`, read once per kernel object) made runnable:
    its lockstep code generated and executed into a function the first time the plan is run, then reused."""
    plan = plan_for(kernel)
    plan.raise_if_unsupported()
    store = _CODE.of(plan)
    code = store.get("code")
    if code is None:
        code = store["code"] = _generate(plan)
    decls = [(d.line, d.shape, d.dtype) for d in plan.shared_decls if d.shape is not None]
    return CompiledKernel(plan.root, code.source, code.entry, plan.static_shared_bytes, decls,
                          plan.build_seconds + code.seconds, kernel, plan)


def _generate(plan) -> CpuCode:
    """The executor's code for ``plan``, which the front end accepted. Should the generator still refuse a
    statement (a construct the front end's check would have to learn), it refuses the kernel here, as the plan
    would have: the same UnsupportedConstruct with the same message."""
    t0 = time.perf_counter()
    (src, entry_name, namespaces), diagnostics = compile_kernel(plan, debug=plan.debug)
    if diagnostics:
        raise unsupported(diagnostics)
    name = plan.root.name
    ns = {"np": np, **namespaces}
    try:
        code = compile(src, f"<gpuviz simt: {name}>", "exec")
    except SyntaxError as exc:  # a bug of ours, not the user's: say so with the generated code
        raise UnsupportedConstruct(f"internal error compiling {name} for the CPU executor: {exc}\n{src}") from exc
    exec(code, ns)  # noqa: S102 - code generated from the user's own kernel
    return CpuCode(src, ns[entry_name], time.perf_counter() - t0)


def make_runtime(ck: CompiledKernel, grid, block, *, record=True, record_blocks=None, max_events=50_000_000,
                 max_loop_iterations=5_000_000, watchdog=None, blocks=None, dynamic_shared_bytes=0) -> SimtRuntime:
    """``watchdog``: a :class:`~gpuviz.capture.backends.cpu.watchdog.Watchdog` (stops a launch that makes no progress);
    ``blocks``: run only these linear block ids (a sample); ``dynamic_shared_bytes``: the launch's dynamic
    shared memory per block (what ``cuda.shared.array(0, dtype)`` declares)."""
    rt = SimtRuntime(
        grid, block, file=ck.root.file, line_text=ck.root.line_text, record=record, record_blocks=record_blocks,
        max_events=max_events, max_loop_iterations=max_loop_iterations, blocks=blocks, watchdog=watchdog,
        dynamic_shared_bytes=dynamic_shared_bytes,
    )
    if ck.plan is not None:
        rt.shared_names = ck.plan.shared_names()  # shared arrays named by the plan, not read off their line
    if watchdog is not None:
        watchdog.attach(rt, loop_table(ck.root))
    return rt


def _tuple_arg(rt, name, t, write_backs, root):
    out = []
    for k, e in enumerate(t):
        host, wb = host_array(e)
        if host is not None:
            out.append(rt.add_array(f"{name}[{k}]", host, "global"))
            if wb:
                write_backs.append(wb)
        elif isinstance(e, tuple):
            out.append(_tuple_arg(rt, f"{name}[{k}]", e, write_backs, root))
        elif isinstance(e, (bool, int, float, complex, np.generic)):
            out.append(e)
        else:
            raise UnsupportedConstruct(
                f"{root.file}:{root.first_line}: element {k} of the tuple argument {name!r} of {root.name} is a "
                f"{type(e).__name__}; pass arrays and numbers", file=root.file, line=root.first_line)
    if hasattr(type(t), "_fields"):  # a namedtuple keeps its type: x.field reads it
        return type(t)(*out)
    return tuple(out)


def _number_enum(a) -> bool:
    """A member of an enum whose value is a number (numba passes it as that number's enum member)."""
    return isinstance(a, enum.Enum) and isinstance(a.value, (bool, int, float))


def run_cpu(ck: CompiledKernel, rt: SimtRuntime, args) -> SimtRuntime:
    """Run the compiled kernel on the launch ``rt`` describes; ``rt`` collects the events and arrays."""
    root = ck.root
    args = prepare_args(ck.kernel, args)
    extra = ()
    if root.vararg and len(args) >= len(root.params):  # def k(a, *rest): the further arguments are rest's tuple
        args, extra = args[:len(root.params)], tuple(args[len(root.params):])
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
            h = rt.add_array(name, host, "global")
            # a record argument is element 0 of its one-element copy
            call_args.append(rt.record_of(h) if isinstance(_hint(a)[1], np.void) else h)
            if wb:
                write_backs.append(wb)
        elif isinstance(a, tuple):  # a tuple of numbers and arrays (numba passes it as a UniTuple/Tuple)
            call_args.append(_tuple_arg(rt, name, a, write_backs, root))
        elif isinstance(_hint(a)[1], (bool, int, float, complex, np.generic)):
            call_args.append(_hint(a)[1])
        elif isinstance(a, (bool, int, float, complex, np.generic)) or _number_enum(a):
            # an enum member stays itself: `is` and == compare members as numba does, .value reads its number
            call_args.append(a)
        else:
            raise UnsupportedConstruct(
                f"{root.file}:{root.first_line}: argument {name!r} of {root.name} is a {type(a).__name__}; "
                "gpuviz records kernels whose arguments are arrays and numbers",
                file=root.file,
                line=root.first_line,
            )
    if root.vararg:
        call_args.extend(_tuple_arg(rt, root.vararg, extra, write_backs, root))
    rt.kernel_start(ck.plan.site_line("start", ck.plan.kernel, None) if ck.plan is not None else root.first_line)
    with np.errstate(all="ignore"):  # lanes that are masked off may divide by zero; the GPU never computes them
        ck.entry(rt, rt.alive.copy(), *call_args)
    for wb in write_backs + rt.write_backs:
        wb()
    return rt
