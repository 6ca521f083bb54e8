"""A GPU launch's arguments as numba-cuda takes them: through the dispatcher's extensions, numba's hints
unwrapped, the arrays among them (named as the CPU executor names them), device copies of tuples, and the results
copied back."""

from __future__ import annotations

import numpy as np

from ....model.trace import ArrayInfo
from ...dtypes import to_dtype
from ...errors import UnsupportedConstruct
from ...args import _hint, prepare_args


def launch_arguments(kernel, root, args) -> tuple[list, set]:
    """(the arguments as the launch passes them on, positions of input-only ones): each through the
    dispatcher's ``extensions`` as numba does, numba's hints unwrapped (``cuda.In(a)``: ``a``, never copied
    back; ``cuda.Out``/``cuda.InOut``: ``a``, copied back as a plain array is). Arrays, numbers, records and
    tuples of them go on as numba takes them; anything else is refused, naming the argument."""
    out, input_only = [], set()
    for k, (p, a) in enumerate(zip(root.params, prepare_args(kernel, args))):
        hint, value = _hint(a)
        if hint == "In":
            input_only.add(k)
        if not _passable(value):  # what numba-cuda cannot pass to a kernel either
            raise UnsupportedConstruct(
                f"{root.file}:{root.first_line}: argument {p!r} of {root.name} is a {type(value).__name__}; gpuviz's GPU "
                "recorder passes arrays, numbers, records and tuples of them, as numba-cuda does: pass the values it "
                "holds as arguments of their own", file=root.file, line=root.first_line)
        out.append(value)
    return out, input_only


def _passable(a) -> bool:
    if isinstance(a, tuple):
        return all(_passable(x) for x in a)
    return (hasattr(a, "shape") and hasattr(a, "dtype")) or isinstance(a, (bool, int, float, complex, np.generic))


def array_arguments(root, args) -> dict[str, ArrayInfo]:
    """{name: ArrayInfo} of the arguments that are arrays, in parameter order: a parameter by its name, the arrays
    in a tuple argument as ``x[0]``, ``x[2][1]`` (as the CPU executor names them)."""
    out = {}

    def add(name, a):
        if isinstance(a, tuple):
            for k, e in enumerate(a):
                add(f"{name}[{k}]", e)
        elif hasattr(a, "shape") and hasattr(a, "dtype"):
            out[name] = ArrayInfo.of(name, a.shape, to_dtype(a.dtype), "global")

    for p, a in zip(root.params, args):
        add(p, a)
    return out


def c_contiguous_arguments(root, args) -> frozenset:
    """The array parameters whose argument is C-contiguous (a reshape of one keeps its elements' flat order)."""
    out = set()
    for p, a in zip(root.params, args):
        try:
            if not isinstance(a, tuple) and bool(a.flags["C_CONTIGUOUS"]):
                out.add(p)
        except (AttributeError, KeyError, TypeError):
            pass
    return frozenset(out)


def _copy_tuple(cuda, t: tuple, fresh: bool = True) -> tuple:
    """A tuple argument with device copies of its host arrays, and (``fresh``) of its device arrays too (a plain
    or counting run must not write the caller's); not ``fresh``: the caller's device arrays as they are."""
    out = []
    for x in t:
        if isinstance(x, tuple):
            out.append(_copy_tuple(cuda, x, fresh))
        elif isinstance(x, np.ndarray):
            out.append(cuda.to_device(x))
        elif fresh and hasattr(x, "copy_to_host") and hasattr(x, "shape"):
            d = cuda.device_array(x.shape, dtype=x.dtype)
            d.copy_to_device(x)
            out.append(d)
        else:
            out.append(x)
    return type(t)(*out) if hasattr(t, "_fields") else tuple(out)  # a namedtuple stays one (numba types its fields)


def _put_back(args, dargs, pristine) -> None:
    """Copy ``pristine`` (device copies taken before a run) back into the caller's own device arrays among ``dargs``,
    in tuples too; host arrays are not touched (their device copies are uploaded afresh by the caller)."""
    def back(a, d, p):
        if isinstance(a, tuple):
            for a_k, d_k, p_k in zip(a, d, p):
                back(a_k, d_k, p_k)
        elif not isinstance(a, np.ndarray) and hasattr(d, "copy_to_device") and hasattr(p, "copy_to_host"):
            d.copy_to_device(p)

    for a, d, p in zip(args, dargs, pristine):
        back(a, d, p)


def _write_back(args, dargs, input_only=()):
    def back(a, d):
        if isinstance(a, tuple) and isinstance(d, tuple):
            for a_k, d_k in zip(a, d):
                back(a_k, d_k)
        elif isinstance(a, np.ndarray) and hasattr(d, "copy_to_host"):
            a[...] = d.copy_to_host()

    for k, (a, d) in enumerate(zip(args, dargs)):
        if k in input_only:
            continue  # cuda.In(a): numba never copies it back
        back(a, d)
