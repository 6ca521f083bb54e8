"""GPU special registers for recording: ``%smid``, ``%nsmid``, ``%globaltimer``, ``%clock64``, ``%laneid``.

On a real GPU each is a numba-cuda intrinsic that emits one ``mov`` from the special register through
llvmlite's ``InlineAsm`` (``side_effect=True`` so that the read is neither hoisted out of loops nor
merged with another read of the same register: two reads of a clock must stay two reads).

Under numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, chosen when ``numba.cuda`` is first
imported) an ``InlineAsm`` intrinsic imports fine but raises when a simulated thread calls it, so the
names here are plain Python functions instead: SM 0 of 1, the host's nanosecond clock, lane from the
simulated thread index. The same kernel source therefore runs on both.

* ``smid()``        the SM the calling thread runs on, in ``[0, nsmid())``
* ``nsmid()``       how many SM ids there may be (an upper bound on smid() + 1, not the SM count)
* ``globaltimer()`` a nanosecond timer shared by all SMs (comparable across blocks; it ticks in steps
                    of about a microsecond on many GPUs, so equal stamps are common)
* ``clock64()``     the calling SM's cycle counter (not comparable across SMs)
* ``laneid()``      the hardware lane, 0..31

and one arithmetic helper for the recorder's buffer positions:

and two helpers for the recorder's buffers:

* ``imad32(a, b, c)`` ``a * b + c`` computed in 32 bits, an int32.
* ``mad32_index(a, b, c)`` ``a * b + c`` computed in 32 bits and widened to an unsigned 64-bit index.
  numba widens every int32 operation to int64, and the compiler then spends two instructions on each
  64-bit step of an address; the recorder calls this only where the host has checked that the value
  fits in 31 bits (every buffer under 2**31 elements).
* ``store_row4(arr, row, a, b, c, d)`` writes ``arr[4 * row : 4 * row + 4] = a, b, c, d`` (a 1-D array) or
  ``arr[row, :] = a, b, c, d`` (a C-contiguous array of 4 columns) with one vector store
  (``st.global.v4``: 16 bytes for int32) instead of four; the rows must be aligned, as every row of a
  freshly allocated buffer is.
"""

from __future__ import annotations

import os
import time

__all__ = ["SIMULATED", "clock64", "globaltimer", "imad32", "laneid", "mad32_index", "nsmid", "smid", "store_row4"]


def _simulator_selected() -> bool:
    import sys

    if sys.modules.get("numba.cuda") is not None:
        from numba import config

        return bool(config.ENABLE_CUDASIM)
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


#: True when numba's CUDA simulator is (or will be) the numba.cuda of this process
SIMULATED = _simulator_selected()

if SIMULATED:

    def smid() -> int:
        return 0

    def nsmid() -> int:
        return 1

    def globaltimer() -> int:
        return time.time_ns()

    def clock64() -> int:
        return time.perf_counter_ns()

    def laneid() -> int:
        from numba import cuda

        return (cuda.threadIdx.x + cuda.threadIdx.y * cuda.blockDim.x
                + cuda.threadIdx.z * cuda.blockDim.x * cuda.blockDim.y) % 32

    def mad32_index(a, b, c) -> int:
        return (int(a) * int(b) + int(c)) & 0xFFFFFFFF

    def imad32(a, b, c) -> int:
        v = (int(a) * int(b) + int(c)) & 0xFFFFFFFF
        return v - (1 << 32) if v >= 1 << 31 else v

    def store_row4(arr, row, a, b, c, d) -> None:
        flat = arr.reshape(-1)
        at = 4 * int(row)
        flat[at], flat[at + 1], flat[at + 2], flat[at + 3] = a, b, c, d

else:
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    def _special_register(name: str, bits: int, ptx_type: str, constraint: str, numba_type):
        @intrinsic
        def read(typingctx):
            def codegen(context, builder, signature, args):
                fnty = ir.FunctionType(ir.IntType(bits), [])
                asm = ir.InlineAsm(fnty, f"mov.{ptx_type} $0, %{name};", constraint, side_effect=True)
                return builder.call(asm, [])

            return numba_type(), codegen

        read.__name__ = name
        read.__doc__ = f"Read the PTX special register %{name}."
        return read

    smid = _special_register("smid", 32, "u32", "=r", types.uint32)
    nsmid = _special_register("nsmid", 32, "u32", "=r", types.uint32)
    laneid = _special_register("laneid", 32, "u32", "=r", types.uint32)
    globaltimer = _special_register("globaltimer", 64, "u64", "=l", types.uint64)
    clock64 = _special_register("clock64", 64, "u64", "=l", types.uint64)

    def _mad32(builder, context, args, signature):
        i32 = [context.cast(builder, v, t, types.int32) for v, t in zip(args, signature.args)]
        return builder.add(builder.mul(i32[0], i32[1]), i32[2])

    def _integers(*tys) -> bool:
        return all(isinstance(t, (types.Integer, types.IntegerLiteral, types.Boolean)) for t in tys)

    @intrinsic
    def imad32(typingctx, a, b, c):
        """``a * b + c`` in 32-bit integer arithmetic, an int32 (see the module docstring)."""
        if not _integers(a, b, c):
            return None

        def codegen(context, builder, signature, args):
            return _mad32(builder, context, args, signature)

        return types.int32(a, b, c), codegen

    @intrinsic
    def mad32_index(typingctx, a, b, c):
        """``a * b + c`` in 32-bit integer arithmetic, zero-extended to uint64 (see the module docstring)."""
        if not _integers(a, b, c):
            return None

        def codegen(context, builder, signature, args):
            return builder.zext(_mad32(builder, context, args, signature), ir.IntType(64))

        return types.uint64(a, b, c), codegen

    @intrinsic
    def store_row4(typingctx, arr, row, a, b, c, d):
        """``arr[4 * row : 4 * row + 4] = a, b, c, d`` as one vector store (see the module docstring)."""
        if not (isinstance(arr, types.Array) and (arr.ndim == 1 or arr.layout == "C") and arr.ndim <= 2
                and isinstance(arr.dtype, types.Integer) and isinstance(row, types.Integer)):
            return None
        sig = types.void(arr, row, a, b, c, d)

        def codegen(context, builder, signature, args):
            aryty = signature.args[0]
            elem = context.get_value_type(aryty.dtype)
            data = context.make_array(aryty)(context, builder, args[0]).data
            vec_t = ir.VectorType(elem, 4)
            vec = ir.Constant(vec_t, ir.Undefined)
            for k, (v, t) in enumerate(zip(args[2:], signature.args[2:])):
                vec = builder.insert_element(vec, context.cast(builder, v, t, aryty.dtype), ir.Constant(ir.IntType(32), k))
            row64 = context.cast(builder, args[1], signature.args[1], types.uint64)
            at = builder.gep(builder.bitcast(data, vec_t.as_pointer()), [row64])
            builder.store(vec, at, align=4 * aryty.dtype.bitwidth // 8)
            return context.get_dummy_value()

        return sig, codegen
