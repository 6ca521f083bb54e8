"""A launch's arguments as every back end receives them: numba's hints (``cuda.In(a)``, ``cuda.Out``, ``cuda.InOut``),
the dispatcher's ``extensions`` applied as a launch applies them, and arrays as host numpy arrays (device arrays
copied, with how to write them back)."""

from __future__ import annotations

import numpy as np


def _hint(arg):
    """('In' | 'Out' | 'InOut', value) for numba's argument hints (cuda.In(a), ...), else (None, arg)."""
    name = type(arg).__name__
    if name in ("In", "Out", "InOut") and hasattr(arg, "value") and hasattr(arg, "to_device"):
        return name, arg.value
    return None, arg


def prepare_args(kernel, args) -> list:
    """The arguments as a launch of ``kernel`` passes them on: each through the dispatcher's ``extensions``
    (``prepare_args(ty, val, stream=, retr=)``, as numba's simulator calls them)."""
    exts = list(getattr(kernel, "extensions", None) or ())
    if not exts:
        return list(args)
    out = []
    for a in args:
        ty, val = None, a
        for ext in exts:
            ty, val = ext.prepare_args(ty, val, stream=0, retr=[])
        out.append(val)
    return out


def host_array(arg):
    """(numpy array, write_back) for an array argument: numpy arrays as they are, device arrays copied.

    ``cuda.In(a)`` runs on a copy of ``a`` (numba never copies an input-only argument back); ``cuda.Out`` and
    ``cuda.InOut`` on ``a`` itself."""
    hint, arg = _hint(arg)
    if hint == "In":
        host, _ = host_array(arg)
        return (None, None) if host is None else (np.array(host, copy=True), None)
    if isinstance(arg, np.ndarray):
        return arg, None
    if isinstance(arg, np.void):  # one record: run on a copy, its fields written back (a view writes through)
        host = np.array([arg])

        def write_back(h=host, rec=arg):
            for f in rec.dtype.names or ():
                rec[f] = h[0][f]

        return host, write_back
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
