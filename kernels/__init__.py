"""The example kernels bundled with gpuviz: ordinary Numba CUDA kernels plus what the app needs to run
them (inputs, launch shape, a numpy reference) and a short teaching note for each.

One module per kernel family; each exports its ``SPEC`` (or ``SPECS``). ``all_kernels()`` gives them
in teaching order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class KernelSpec:
    name: str  # CLI name, e.g. "vector_add"
    kernel: object  # the @cuda.jit dispatcher (an ordinary numba kernel)
    description: str  # one line, shown by `gpuviz kernels`
    note: str  # a short teaching note: what to look at and why it matters
    default_size: int  # problem size for the app (elements, or side of a square matrix/image)
    small_size: int  # size used in tests (fast under numba's simulator)
    default_block: tuple  # e.g. (256,) or (16, 16)
    make_args: Callable  # (size, rng) -> kernel args (numpy arrays and scalars) in parameter order
    launch: Callable  # (size, block) -> (grid, block); ValueError for a block the kernel cannot take
    reference: Callable  # (copy of the args before the launch) -> {arg position: expected array after it}
    rtol: float = 1e-5
    group: str = ""  # kernels to compare side by side: "transpose", "reduction", "attention", ...
    rank: int = 0  # order within the group (naive first)
    size_label: str = "elements"
    uses_warp_shuffle: bool = False  # numba's simulator has no shfl_*_sync
    tile: int = 0  # shared-memory tile size where the kernel has one
    items_per_thread: int = 1  # items one thread covers along the block's last dimension (the launch has
    #                            that many times fewer threads there): 2 for first-add reductions, 4 for transposes
    has_race: bool = False  # a deliberate data race: its output depends on thread timing, so only the
    #                         intended result (``reference``) is defined, and an analysis must flag the race
    frame_notes: tuple = ()  # ((stop, note), ...): the kernel's own notes at chosen frames, shown with the
    #                          narration's captions; a stop names a frame ("first barrier", "first conflict",
    #                          "source: cuda.syncthreads", ... see gpuviz.model.narration.STOP_HELP)


def _collect() -> dict[str, KernelSpec]:
    from . import attention, fusion, histogram, matmul, mandelbrot, race, reduction, stencil, transpose, vector_add

    ordered = [
        vector_add.SPEC,
        mandelbrot.SPEC,
        reduction.REDUCE_SUM,
        *race.SPECS,
        *matmul.SPECS,
        *transpose.SPECS,
        *reduction.LADDER,
        *histogram.SPECS,
        stencil.SPEC,
        *attention.SPECS,
        *fusion.SPECS,
    ]
    specs: dict[str, KernelSpec] = {}
    for spec in ordered:
        if spec.name in specs:
            raise RuntimeError(f"two bundled kernels are both named {spec.name!r}")
        specs[spec.name] = spec
    return specs


_SPECS: dict[str, KernelSpec] | None = None


def all_kernels() -> dict[str, KernelSpec]:
    """Every bundled kernel by CLI name, in teaching order."""
    global _SPECS
    if _SPECS is None:
        _SPECS = _collect()
    return dict(_SPECS)


def get_kernel(name: str) -> KernelSpec:
    specs = all_kernels()
    try:
        return specs[name]
    except KeyError:
        raise KeyError(f"no bundled kernel named {name!r}; known kernels: {', '.join(specs)}") from None


__all__ = ["KernelSpec", "all_kernels", "get_kernel"]
