"""out = a * x + b * y two ways: the chain of element-wise kernels a library launches (one per operator,
each reading and writing whole arrays in global memory, with temporaries in between) and one fused kernel
that reads each input once and writes the output once.

numpy, cupy and torch evaluate ``a * x + b * y`` one operator at a time: ``t1 = a * x`` (a launch),
``t2 = b * y`` (another launch of the same kernel), ``out = t1 + t2`` (a third). All three kernels are
memory bound, so what they cost is the bytes they move: the fused kernel moves fewer.

The three specs draw x and y from the random generator in the same order, so with the same seed a lesson
shows the same numbers flowing through the chain and through the fused kernel.
"""

import numpy as np
from numba import cuda

from . import KernelSpec
from ._launch import launch_1d

# the scalars of the expression, as a user passes them: plain Python floats (numpy keeps a float32 array
# float32 when it is multiplied by one, so the references stay float32 like the kernels' outputs)
A = 2.0
B = 3.0


@cuda.jit
def unfused_scale(s, x, t, n):
    i = cuda.grid(1)
    if i < n:
        t[i] = s * x[i]  # one load, one store: a whole array in, a whole temporary t out


@cuda.jit
def unfused_add(t1, t2, out, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = t1[i] + t2[i]  # reads back both temporaries the scale launches just wrote


@cuda.jit
def axpby_fused(a, x, b, y, out, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = a * x[i] + b * y[i]  # the products stay in registers: two loads and one store in all


def _inputs(size, rng):
    x = rng.random(size, dtype=np.float32)
    y = rng.random(size, dtype=np.float32)
    return x, y


def make_args_scale(size, rng):
    x, _ = _inputs(size, rng)
    return [A, x, np.zeros(size, dtype=np.float32), size]


def reference_scale(args):
    s, x, _, _ = args
    return {2: s * x}


def make_args_add(size, rng):
    x, y = _inputs(size, rng)
    # the temporaries exactly as the two scale launches leave them in global memory
    return [A * x, B * y, np.zeros(size, dtype=np.float32), size]


def reference_add(args):
    t1, t2, _, _ = args
    return {2: t1 + t2}


def make_args_fused(size, rng):
    x, y = _inputs(size, rng)
    return [A, x, B, y, np.zeros(size, dtype=np.float32), size]


def reference_fused(args):
    a, x, b, y, _, _ = args
    return {4: a * x + b * y}


SPECS = [
    KernelSpec(
        name="unfused_scale",
        kernel=unfused_scale,
        description="t = s * x: the kernel a library launches for one `a * x`, a temporary array out",
        note=(
            "This is what `a * x` runs inside numpy, cupy or torch: one launch for one operator, reading all "
            "of x from global memory and writing the whole product to a new temporary array. "
            "For `a * x + b * y` it runs twice (t1 = a * x, t2 = b * y) before an add kernel reads both "
            "temporaries back. "
            "Each thread does a single multiply per 8 bytes it moves, so the time goes to memory, not arithmetic."
        ),
        default_size=10_000,
        small_size=1000,
        default_block=(256,),
        make_args=make_args_scale,
        launch=lambda size, block: launch_1d(size, block, "unfused_scale"),
        reference=reference_scale,
        group="fusion",
        rank=0,
    ),
    KernelSpec(
        name="unfused_add",
        kernel=unfused_add,
        description="out = t1 + t2: the last launch of a library's `a * x + b * y`, reading two temporaries",
        note=(
            "The third launch of the unfused chain: it reads the temporaries t1 and t2 that the two scale "
            "launches wrote, and writes the result. "
            "Those temporaries went to global memory and came straight back, only because each operator is its "
            "own kernel. "
            "Count the loads and stores of all three launches and compare them with the fused kernel."
        ),
        default_size=10_000,
        small_size=1000,
        default_block=(256,),
        make_args=make_args_add,
        launch=lambda size, block: launch_1d(size, block, "unfused_add"),
        reference=reference_add,
        group="fusion",
        rank=1,
    ),
    KernelSpec(
        name="axpby_fused",
        kernel=axpby_fused,
        description="out = a * x + b * y in one pass: two loads and one store per element, no temporaries",
        note=(
            "The whole expression in one kernel: each thread loads x[i] and y[i] once, keeps both products in "
            "registers and stores out[i] once. "
            "No temporary array is written or read back, and there is one launch instead of three. "
            "A memory-bound chain of element-wise operators is exactly where a small custom kernel beats the "
            "library, which has to run each operator on its own."
        ),
        default_size=10_000,
        small_size=1000,
        default_block=(256,),
        make_args=make_args_fused,
        launch=lambda size, block: launch_1d(size, block, "axpby_fused"),
        reference=reference_fused,
        group="fusion",
        rank=2,
    ),
]
