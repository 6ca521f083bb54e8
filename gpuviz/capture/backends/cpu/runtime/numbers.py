"""Numbers and calls per lane: casts, vector types, builtins (int, round, min, ...), math and cmath, intrinsics,
fp16, reinterpretation, a kernel's raise and print, device functions and functions passed as values.

A part of :class:`~gpuviz.capture.backends.cpu.runtime.SimtRuntime` (see the package's docstring).
"""

from __future__ import annotations

import cmath as _cmath
import collections
import enum
import math

import numpy as np

from ....dtypes import dtype_text, to_dtype
from ....errors import KernelFault, KernelRaised, UnsupportedConstruct
from .values import _VECTOR_TYPES, ArrayHandle, FnRef, SplitBinding, View, _round_ndigits


class Numbers:
    @staticmethod
    def cast(x, name):
        dt = np.dtype(name)
        if isinstance(x, np.ndarray):
            return x.astype(dt)
        return dt.type(x)

    def vector(self, name, line, *args):
        """``cuda.float64x4(1.0, 3.0, 5.0, 7.0)``, ``cuda.short2(v1)``: a CUDA vector type, its components
        ``.x .y .z .w`` cast to its base type; a vector argument gives its components in order."""
        base, n = name.rsplit("x", 1)
        n = int(n)
        cls = _VECTOR_TYPES.get(name)
        if cls is None:
            cls = _VECTOR_TYPES[name] = collections.namedtuple(name, list("xyzw"[:n]))
        values = []
        for a in args:
            values.extend(a if isinstance(a, tuple) and type(a).__name__ in _VECTOR_TYPES else [a])
        if len(values) != n:
            raise UnsupportedConstruct(f"{self.where(line)}: cuda.{name} takes {n} component(s) (numbers, or "
                                       f"smaller vectors), not {len(values)}\n    {self.line_text(line)}",
                                       file=self.file, line=line)
        return cls(*(self.cast(v, base) for v in values))

    @staticmethod
    def dtype_of(name):
        return np.dtype(name).type

    @staticmethod
    def b_int(x):
        if isinstance(x, np.ndarray):
            return (np.trunc(x) if x.dtype.kind == "f" else x).astype(np.int64)
        return int(x)

    @staticmethod
    def b_float(x):
        if isinstance(x, np.ndarray):
            return x.astype(np.float64)
        return float(x)

    @staticmethod
    def b_round(x, nd=None):
        if nd is not None:
            return _round_ndigits(x, int(nd))
        if isinstance(x, np.ndarray):
            return np.round(x).astype(np.int64)
        return round(x)

    @staticmethod
    def b_complex(re=0.0, im=0.0):
        if isinstance(re, np.ndarray) or isinstance(im, np.ndarray):
            # parts set as they are: re + 1j * im would turn an infinite part into NaNs and lose -0.0
            re, im = np.asarray(re), np.asarray(im)
            if re.dtype.kind == "c" or im.dtype.kind == "c":  # complex(z, w) is z + 1j * w
                return re + 1j * im
            out = np.empty(np.broadcast_shapes(re.shape, im.shape), dtype=np.complex128)
            out.real, out.imag = re, im
            return out
        return complex(re, im)

    @staticmethod
    def b_pow(a, b, mod=None):
        return a**b if mod is None else (a**b) % mod

    def method(self, m, line, obj, name, *args):
        """``x.bit_count()``, ``z.conjugate()``: the few methods of numbers numba compiles."""
        if name == "reshape" and isinstance(obj, (ArrayHandle, View)) and args:
            return self.reshape(obj, args[0] if len(args) == 1 else tuple(args), line)
        if name == "view" and isinstance(obj, (ArrayHandle, View)) and len(args) == 1:
            return self.reinterpret(obj, args[0], line)
        if name == "copy" and isinstance(obj, ArrayHandle) and not args and obj.space in ("global", "const", "field"):
            # a thread's own copy (numba allocates it per thread): its accesses are a local array's, not events
            data = np.array(np.broadcast_to(obj.data, (self.N,) + obj.shape))
            return ArrayHandle(-1, f"{obj.name}.copy()", data, "local", obj.shape, line)
        if name == "bit_count" and not args:
            return self.intrinsic("popc", obj)
        if name == "conjugate" and not args:
            return np.conjugate(obj)
        raise UnsupportedConstruct(f"{self.where(line)}: the method .{name}() of a {type(obj).__name__} is not "
                                   f"supported by gpuviz's executor\n    {self.line_text(line)}", file=self.file, line=line)

    def reinterpret(self, obj, dtype, line):
        """``a.view(dtype)`` of a 1-d array or of a contiguous slice of one, the same for every thread: its
        bytes read as ``dtype`` (numba's rule: the byte length divides by the new item size). An element of the
        result is recorded as the first element of the array it overlays."""
        dt = to_dtype(self.dtype_name(dtype))
        base, start, length = obj, 0, None
        if isinstance(obj, View) and obj.lengths is not None:
            self._fixed_length(obj, line)
        if isinstance(obj, View):
            d = obj.dims[0] if len(obj.dims) == 1 else None
            if obj.reshape_of is None and d is not None and d[0] == "ax" and d[2] == 1 and np.ndim(d[1]) == 0:
                base, start, length = obj.base, int(d[1]), obj.shape[0]
            else:
                base = None
        if base is None or base.ndim != 1 or base.space not in ("global", "const"):
            raise UnsupportedConstruct(
                f"{self.where(line)}: .view({dt}) is supported on a 1-d kernel-argument array or a contiguous slice of "
                f"one with the same bounds in every thread: index the bytes yourself\n    {self.line_text(line)}",
                file=self.file, line=line)
        length = base.shape[0] - start if length is None else length
        nbytes = length * base.dtype.itemsize
        if dt.itemsize % base.dtype.itemsize:
            raise UnsupportedConstruct(
                f"{self.where(line)}: .view({dt}) of the {base.dtype} array {base.name}: gpuviz views an array as a "
                f"type of the same or a larger item size\n    {self.line_text(line)}", file=self.file, line=line)
        if nbytes % dt.itemsize:
            raise KernelFault(f"{self.where(line)}: cannot view {nbytes} bytes of {base.name} ({base.dtype}) as "
                              f"{dt}\n    {self.line_text(line)}", file=self.file, line=line)
        data = base.data[start:start + length].view(dt)
        h = ArrayHandle(base.aid, base.name, data, base.space, data.shape, base.line)
        h.strides = (dt.itemsize // base.dtype.itemsize,)
        h.flat_offset = start
        return h

    @staticmethod
    def b_len(x):
        if isinstance(x, View) and x.lengths is not None:
            return x.lengths
        if isinstance(x, (ArrayHandle, View)):
            return x.shape[0]
        return len(x)

    @staticmethod
    def b_min(*args):
        if any(isinstance(a, np.ndarray) for a in args):
            out = args[0]
            for a in args[1:]:
                out = np.minimum(out, a)
            return out
        return min(args)

    @staticmethod
    def b_max(*args):
        if any(isinstance(a, np.ndarray) for a in args):
            out = args[0]
            for a in args[1:]:
                out = np.maximum(out, a)
            return out
        return max(args)

    @staticmethod
    def _int_result(f, x):
        if isinstance(x, np.ndarray):
            return f(x).astype(np.int64)
        return int(f(x))

    def math_floor(self, x):
        return self._int_result(np.floor, x)

    def math_ceil(self, x):
        return self._int_result(np.ceil, x)

    def math_trunc(self, x):
        return self._int_result(np.trunc, x)

    @staticmethod
    def math_erf(x):
        if isinstance(x, np.ndarray):
            return np.vectorize(math.erf, otypes=[np.float64])(x)
        return math.erf(x)

    @staticmethod
    def math_vec(name):
        """math.<name> for functions numpy lacks (erfc, gamma, lgamma, remainder), per element."""
        f = getattr(math, name)

        def apply(*args):
            if any(isinstance(a, np.ndarray) for a in args):
                dt = np.result_type(*[a.dtype if isinstance(a, np.ndarray) else np.float64 for a in args])
                out_dt = dt if dt.kind == "f" else np.dtype(np.float64)
                return np.vectorize(f, otypes=[np.float64])(*args).astype(out_dt)
            return f(*args)

        return apply

    @staticmethod
    def math_frexp(x):
        m, e = np.frexp(x)
        return (m, e.astype(np.int64) if isinstance(e, np.ndarray) else int(e))

    @staticmethod
    def math_modf(x):
        frac, whole = np.modf(x)
        return (frac, whole)

    @staticmethod
    def is_(a, b, negate):
        """``a is b``: enum members (kernel arguments) are the same member, as numba types them (two IntEnum
        members of different classes with one value are equal, not identical); numbers are compared by value."""
        if isinstance(a, enum.Enum) or isinstance(b, enum.Enum):
            same = a is b
        else:
            same = a == b
        return ~same if negate and isinstance(same, np.ndarray) else (not same if negate else same)

    @staticmethod
    def cmath(name, *args):
        """``cmath.<name>`` lane by lane with Python's own cmath, as numba's simulator computes it (its
        special values, signed zeros and infinities, are C99's, which numpy's complex functions do not all
        follow: exp(-inf-infj) is 0j, not -0j)."""
        exact = getattr(_cmath, name)
        nan = (float("nan"), float("nan")) if name == "polar" else complex("nan+nanj")

        def f(*xs):
            # Python raises where C gives NaN (log(0), ...): lanes that are masked off compute it too
            try:
                return exact(*xs)
            except (ValueError, OverflowError):
                return nan

        vals = [np.asarray(a) for a in args]
        if all(v.ndim == 0 for v in vals):
            return f(*[v[()] for v in vals])
        nout = 2 if name == "polar" else 1
        out = np.frompyfunc(f, len(vals), nout)(*vals)
        kind = bool if name in ("isnan", "isinf", "isfinite") else float if name == "phase" else complex
        if nout == 2:
            return tuple(o.astype(np.float64) for o in out)
        return out.astype(kind)

    @staticmethod
    def intrinsic(name, x):
        """cuda.popc/clz/ffs/brev (on the value's own width, 32 bits for Python ints) and cuda.cbrt."""
        if name == "cbrt":
            return np.cbrt(x)
        a = np.asarray(x)
        width = a.dtype.itemsize * 8 if a.dtype.kind in "iu" and a.dtype.itemsize >= 4 else 32
        if not isinstance(x, (np.ndarray, np.generic)):
            width = 32 if -(2**31) <= int(x) < 2**32 else 64
        u = a.astype(np.int64).astype(np.uint64) & np.uint64((1 << width) - 1)
        if name == "popc":
            out = np.bitwise_count(u).astype(np.int64)
        else:
            def one(v, w=width):
                v = int(v)
                if name == "clz":
                    return w - v.bit_length()
                if name == "ffs":
                    return (v & -v).bit_length()
                return int(format(v, f"0{w}b")[::-1], 2)

            out = np.vectorize(one, otypes=[np.int64])(u) if u.ndim else np.int64(one(u[()]))
            if name == "brev":
                out = np.asarray(out).astype(np.uint64 if width == 64 else np.uint32)
        return out if isinstance(x, np.ndarray) else out[()] if isinstance(out, np.ndarray) else out

    @staticmethod
    def fp16(op, *args):
        """cuda.fp16.h*: half-precision arithmetic, comparisons and math."""
        h = [np.asarray(a).astype(np.float16) for a in args]
        with np.errstate(all="ignore"):
            if op in ("heq", "hne", "hge", "hgt", "hle", "hlt"):
                f = {"heq": np.equal, "hne": np.not_equal, "hge": np.greater_equal, "hgt": np.greater,
                     "hle": np.less_equal, "hlt": np.less}[op]
                return f(h[0], h[1])[()]
            table = {
                "hadd": lambda a, b: a + b, "hsub": lambda a, b: a - b, "hmul": lambda a, b: a * b,
                "hdiv": lambda a, b: a / b, "hfma": lambda a, b, c: a * b + c, "hneg": lambda a: -a,
                "habs": np.abs, "hsin": np.sin, "hcos": np.cos, "hlog": np.log, "hlog2": np.log2,
                "hlog10": np.log10, "hexp": np.exp, "hexp2": np.exp2, "hexp10": lambda a: 10**a,
                "hsqrt": np.sqrt, "hrsqrt": lambda a: a**-0.5, "hceil": np.ceil,
                "hfloor": np.floor, "hrcp": lambda a: np.float16(1) / a, "htrunc": np.trunc, "hrint": np.rint,
                "hmax": np.maximum, "hmin": np.minimum,
            }
            return np.asarray(table[op](*h)).astype(np.float16)[()]

    def real_imag(self, value, part, line):
        """``x.real`` / ``x.imag``: of a number, its part; of a complex array (or a view of one), the array of
        that part, whose element i is element i of the array: accesses through it (an atomic on
        ``values.imag``, say) are recorded as accesses of the array itself."""
        if isinstance(value, View) and value.reshape_of is None:
            return View(self.real_imag(value.base, part, line), value.dims, value.shape)
        if isinstance(value, ArrayHandle):
            if value.dtype.kind != "c":
                if part == "real":
                    return value
                raise UnsupportedConstruct(f"{self.where(line)}: .imag of the {value.dtype} array {value.name} is not "
                                           f"supported: it has no imaginary part (use 0)\n    {self.line_text(line)}",
                                           file=self.file, line=line)
            h = ArrayHandle(value.aid, value.name, getattr(value.data, part), value.space, value.shape, value.line)
            h.written = value.written
            return h
        return np.real(value) if part == "real" else np.imag(value)

    def kernel_raise(self, m, exc, line):
        """``raise`` in a kernel reached by a running thread: the launch raises it (numba's simulator does; on a
        GPU numba reports it when the kernel is compiled with debug=True)."""
        act = np.flatnonzero(np.broadcast_to(m, (self.N,)) & self.alive)
        if not len(act):
            return
        instance = exc() if isinstance(exc, type) else exc
        raise KernelRaised(
            f"{self.where(line)}: {self.lane_name(int(act[0]))} raised {type(instance).__name__}: {instance}\n"
            f"    {self.line_text(line)}", file=self.file, line=line, exception=self._from_thread(instance, int(act[0])))

    def _from_thread(self, exc, lane):
        """The exception as numba raises it from a launch: its message led by the thread that raised it,
        ``tid=[x, y, z] ctaid=[x, y, z]: message`` (the simulator's words; numba-cuda's debug kernels say the same)."""
        where = f"tid={[int(t[lane]) for t in self.tid]} ctaid={[int(b[lane]) for b in self.bid]}"
        text = str(exc)
        try:
            return type(exc)(f"{where}: {text}" if text else where)
        except Exception:  # noqa: BLE001 - an exception class that takes other arguments: raised as it is
            return exc

    def grid(self, ndim):
        g = tuple(self.bid[d] * self.bdim[d] + self.tid[d] for d in range(ndim))
        return g[0] if ndim == 1 else g

    def gridsize(self, ndim):
        g = tuple(self.gdim[d] * self.bdim[d] for d in range(ndim))
        return g[0] if ndim == 1 else g

    def array_attr(self, base, attr, line):
        if isinstance(base, SplitBinding):  # no mask here: the arrays' shapes must agree
            values = [self.array_attr(a, attr, line) for a in base.arrays]
            if all(isinstance(v, (int, tuple, type)) and v == values[0] for v in values):
                return values[0]
            base.refuse(line, range(len(base.arrays)))
        if isinstance(base, (ArrayHandle, View)):
            if attr == "shape":
                return (base.lengths,) if isinstance(base, View) and base.lengths is not None else base.shape
            if attr == "size":
                return base.size
            if attr == "ndim":
                return base.ndim
            if attr == "dtype":
                return base.dtype.type
        raise KernelFault(f"{self.where(line)}: '.{attr}' of a {type(base).__name__}", file=self.file, line=line)

    def call_device(self, fn, m, *args):
        return fn(self, m, *args)

    @staticmethod
    def fnref_atomic(op):
        return FnRef("atomic", op)

    @staticmethod
    def fnref_device(fn):
        return FnRef("device", fn)

    def call_value(self, f, m, line, *args):
        """Call what a variable holds: an atomic or device function passed as a value, or a scalar type (a cast)."""
        if isinstance(f, FnRef):
            if f.kind == "atomic":
                return self.atomic(f.target, m, line, *args)
            return f.target(self, m, *args)
        if isinstance(f, type) and issubclass(f, np.generic) and len(args) == 1:
            return self.cast(args[0], np.dtype(f).name)
        raise KernelFault(f"{self.where(line)}: cannot call a {type(f).__name__}\n    {self.line_text(line)}",
                          file=self.file, line=line)

    @staticmethod
    def dtype_name(d):
        """numpy's dtype name for a dtype given at run time (a numpy type, a numba type, a dtype)."""
        if isinstance(d, type) and issubclass(d, np.generic):
            return np.dtype(d).name
        return dtype_text(d)  # a record's layout as text that reads back

    def kernel_print(self, m, line, *args):
        act = np.flatnonzero(m & self.alive)
        for lane in act[: max(0, 200 - len(self.printed))]:
            parts = [str(a[lane]) if isinstance(a, np.ndarray) and a.shape == (self.N,) else str(a) for a in args]
            self.printed.append(" ".join(parts))
