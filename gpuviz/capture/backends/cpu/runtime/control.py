"""Control flow over every lane at once: masks, merges of values a branch set in some lanes, short-circuit
logic, loops (their bounds, iterations and the watchdog tick), division with numba-cuda's error models.

A part of :class:`~gpuviz.capture.backends.cpu.runtime.SimtRuntime` (see the package's docstring).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from ....errors import KernelFault, KernelRaised, UnsupportedConstruct
from .values import ArrayHandle, FnRef, RecordRef, SplitBinding, View


class ControlFlow:
    def no_lanes(self):
        return np.zeros(self.N, dtype=bool)

    def covers(self, m) -> bool:
        return not (self.alive & ~m).any()

    def merge(self, m, new, old, line=-1, name=None):
        """The value of a variable after `var = new` executed by the threads in mask m (``line`` and ``name``:
        where, for the message when the threads end up holding different arrays)."""
        if old is None or new is old:
            return new
        arrays = (ArrayHandle, View, SplitBinding)
        if isinstance(new, arrays) and isinstance(old, arrays) and not self.covers(m):
            return self._merge_arrays(m, new, old, line, name)
        if isinstance(new, (ArrayHandle, FnRef, type, View)) or isinstance(old, (ArrayHandle, FnRef, type, View)):
            return new
        if isinstance(new, RecordRef) or isinstance(old, RecordRef):
            if isinstance(new, RecordRef) and isinstance(old, RecordRef) and new.h is old.h and not self.covers(m):
                return RecordRef(new.h, tuple(np.where(m, a, b) for a, b in zip(
                    self._lane_cols(new.where), self._lane_cols(old.where))))
            return new
        if isinstance(new, tuple) or isinstance(old, tuple):
            if isinstance(new, tuple) and isinstance(old, tuple) and len(new) == len(old):
                if self.covers(m):
                    return new
                merged = [self.merge(m, a, b) for a, b in zip(new, old)]
                # a namedtuple (a vector type, a namedtuple argument) keeps its fields
                return type(new)(*merged) if hasattr(type(new), "_fields") else tuple(merged)
            return new
        if self.covers(m):
            return new
        return np.where(m, new, old)

    def _merge_arrays(self, m, new, old, line, name):
        """``v = new`` run by the lanes in ``m`` while the others keep ``old``: one view of one array whose
        per-lane indices differ merges lane by lane; different arrays make a :class:`SplitBinding`, which
        :meth:`one_array` resolves wherever the lanes that use it agree."""
        if isinstance(new, View) and isinstance(old, View) and new.base is old.base and new.shape == old.shape \
                and new.reshape_of is None and old.reshape_of is None and (new.lengths is None) == (old.lengths is None) \
                and len(new.dims) == len(old.dims) and all(a[0] == b[0] for a, b in zip(new.dims, old.dims)):
            dims = tuple((a[0], *(self.merge(m, x, y) for x, y in zip(a[1:], b[1:]))) for a, b in zip(new.dims, old.dims))
            lengths = None if new.lengths is None else np.where(m, new.lengths, old.lengths)
            return View(new.base, dims, new.shape, lengths=lengths)
        arrays: list = []

        def lanes_of(v):
            opts, choice = (v.arrays, v.choice) if isinstance(v, SplitBinding) else ((v,), np.zeros(self.N, np.int16))
            index = []
            for a in opts:
                k = next((k for k, b in enumerate(arrays) if b is a), None)
                if k is None:
                    k = len(arrays)
                    arrays.append(a)
                index.append(k)
            return np.asarray(index, np.int16)[choice]

        old_choice = lanes_of(old)
        choice = np.where(m, lanes_of(new), old_choice)
        held = np.unique(choice[self.alive])
        if len(held) == 1:
            return arrays[int(held[0])]
        return SplitBinding(name or "a variable", old.line if isinstance(old, SplitBinding) else line, tuple(arrays),
                            choice, self.file)

    def one_array(self, m, base, line):
        """The array ``base`` is for the lanes in ``m`` (``base`` itself unless it is a :class:`SplitBinding`)."""
        if not isinstance(base, SplitBinding):
            return base
        picked = np.unique(base.choice[np.broadcast_to(m, (self.N,)) & self.alive])
        if len(picked) == 1:
            return base.arrays[int(picked[0])]
        if len(picked) == 0:
            return base.arrays[0]
        base.refuse(line, picked)

    @staticmethod
    def truth(c):
        if isinstance(c, np.ndarray):
            return c if c.dtype == np.bool_ else c.astype(bool)
        return bool(c)

    def land(self, m, c):
        if isinstance(c, bool):
            return m if c else self.no_lanes()
        return m & c

    @staticmethod
    def lnot(c):
        if isinstance(c, np.ndarray):
            return ~(c if c.dtype == np.bool_ else c.astype(bool))
        return not c

    def and_(self, m, a, fb):
        at = self.truth(a)
        if isinstance(at, bool):
            return self.truth(fb(m)) if at else False
        m2 = m & at
        if not m2.any():
            return np.zeros(self.N, dtype=bool)
        return at & self.truth(fb(m2))

    def or_(self, m, a, fb):
        at = self.truth(a)
        if isinstance(at, bool):
            return True if at else self.truth(fb(m))
        m2 = m & ~at
        if not m2.any():
            return at
        return at | self.truth(fb(m2))

    def all_of(self, *parts):
        out = True
        for p in parts:
            out = out & self.truth(p)
        return out

    def ifexp(self, m, c, fa, fb):
        ct = self.truth(c)
        if isinstance(ct, bool):
            return fa(m) if ct else fb(m)
        ma, mb = m & ct, m & ~ct
        va = fa(ma) if ma.any() else None
        vb = fb(mb) if mb.any() else None
        if va is None:
            return vb
        if vb is None:
            return va
        return np.where(ct, va, vb)

    def unpack(self, value, n, line):
        if isinstance(value, tuple) and len(value) == n:
            return value
        raise KernelFault(f"{self.where(line)}: cannot unpack {type(value).__name__} into {n} names", file=self.file, line=line)

    def range_args(self, *args):
        if len(args) == 1:
            out = (0, args[0], 1)
        elif len(args) == 2:
            out = (args[0], args[1], 1)
        else:
            out = tuple(args)
        out = tuple(int(a) if isinstance(a, (np.integer, bool)) else a for a in out)
        if isinstance(out[2], int) and out[2] == 0:
            raise KernelFault("range() step must not be zero", file=self.file)
        return out

    @staticmethod
    def is_uniform(r):
        return not any(isinstance(a, np.ndarray) for a in r)

    @staticmethod
    def range_cond(i, stop, step):
        if isinstance(step, np.ndarray):
            return np.where(step > 0, i < stop, i > stop)
        c = (i < stop) if step > 0 else (i > stop)
        return c if isinstance(c, np.ndarray) else bool(c)

    @staticmethod
    def div(a, b, op):
        """``a / b``, ``a // b``, ``a % b`` with numba-cuda's default (numpy) error model: dividing by zero gives
        inf/nan for floats and 0 for integers, never an exception (Python scalars would raise)."""
        try:
            if op == "/":
                return a / b
            if op == "//":
                return a // b
            return a % b
        except ZeroDivisionError:
            f = {"/": np.true_divide, "//": np.floor_divide, "%": np.remainder}[op]
            with np.errstate(all="ignore"):
                return f(np.asarray(a), np.asarray(b))[()]

    def div_checked(self, m, a, b, op, line):
        """``a / b`` (or ``//``, ``%``) of a kernel compiled with ``debug=True``: numba-cuda then uses Python's
        error model, and a division by zero in any running thread raises ZeroDivisionError at the launch (numba's
        simulator divides numpy values with numpy set to raise: FloatingPointError, which a program run on it
        sees; Python numbers, kernel arguments, still raise ZeroDivisionError there)."""
        zero = (b == 0) & (m & self.alive) if isinstance(b, np.ndarray) and b.ndim else (b == 0 and bool((m & self.alive).any()))
        if np.any(zero):
            lane = int(np.flatnonzero(np.broadcast_to(zero, (self.N,)))[0])
            on_simulator = bool(getattr(sys.modules.get("numba.core.config"), "ENABLE_CUDASIM", 0))
            numpy_values = isinstance(a, (np.ndarray, np.generic)) or isinstance(b, (np.ndarray, np.generic))
            exc = (FloatingPointError("divide by zero encountered in scalar divide") if on_simulator and numpy_values
                   else ZeroDivisionError("division by zero"))
            raise KernelRaised(
                f"{self.where(line)}: {self.lane_name(lane)} divides by zero (the kernel is compiled with "
                f"debug=True, so numba raises {type(exc).__name__})\n    {self.line_text(line)}",
                file=self.file, line=line, exception=self._from_thread(exc, lane))
        if op == "/":
            return a / b
        if op == "//":
            return a // b
        return a % b

    def iter_items(self, value, line):
        """The items a ``for`` walks over a tuple or an array (its elements along the first axis, read as the
        simulator reads them, without a recorded access)."""
        if isinstance(value, tuple):
            return list(value)
        if isinstance(value, list):
            return value
        if isinstance(value, View) and value.lengths is not None:
            self._fixed_length(value, line)
        if isinstance(value, ArrayHandle) and value.space in ("global", "const") and value.ndim == 1:
            return [value.data[k][()] for k in range(value.shape[0])]
        if isinstance(value, View) and value.ndim == 1 and value.base.space in ("global", "const") \
                and value.reshape_of is None and all(d[0] == "ax" or np.ndim(d[1]) == 0 for d in value.dims):
            m = np.ones(self.N, dtype=bool)
            return [value.base.data[self._resolve(m, value, (k,), line)[1]][()] for k in range(value.shape[0])]
        raise UnsupportedConstruct(
            f"{self.where(line)}: a kernel can loop over range(), a tuple, a 1-d array, enumerate() and zip() of them, "
            f"not over a {type(value).__name__}: loop over range(len(...)) and index\n    {self.line_text(line)}",
            file=self.file, line=line)

    def iter_range(self, line, *args):
        r = self.range_args(*args)
        if not self.is_uniform(r):
            raise UnsupportedConstruct(
                f"{self.where(line)}: range() inside enumerate()/zip() needs bounds that are the same for every "
                f"thread: loop over range() and index instead\n    {self.line_text(line)}", file=self.file, line=line)
        return list(range(*r))

    @staticmethod
    def iter_enumerate(items, start=0):
        return [(int(start) + k, x) for k, x in enumerate(items)]

    @staticmethod
    def iter_zip(*seqs):
        return [tuple(t) for t in zip(*seqs)]

    def loop_body(self, mask) -> None:
        """The lanes of ``mask`` enter one more iteration of a loop's body."""
        if isinstance(mask, np.ndarray) and mask.shape == (self.N,):
            self.lane_iterations += mask
        else:  # a mask the loop did not narrow: every live lane
            self.lane_iterations += self.alive

    def loop_tick(self, line, mask=None):
        """Called at the top of every iteration of every loop, with the lanes still in the loop."""
        self.loop_iterations += 1
        wd = self.watchdog
        if wd is not None:
            self._loop_masks[line] = mask
            if time.monotonic() >= wd.next_check:
                wd.check(self, line, sys._getframe(1))
        if self.loop_iterations > self.max_loop_iterations:
            raise KernelFault(
                f"{self.where(line)}: more than {self.max_loop_iterations:,} loop iterations: does this loop ever end?\n"
                f"    {self.line_text(line)}",
                file=self.file,
                line=line,
            )
