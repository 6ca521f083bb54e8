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
"""

from __future__ import annotations

import os
import time

__all__ = ["SIMULATED", "clock64", "globaltimer", "laneid", "nsmid", "smid"]


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
