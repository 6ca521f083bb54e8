"""A kernel that uses a grid-wide barrier (``cuda.cg.this_grid().sync()``) on a GPU: numba-cuda launches it
cooperatively by itself (its compiled code calls ``cudaCGGetIntrinsicHandle``), and a cooperative launch needs every
block of the grid resident at once. The recording variants run the same barrier (recorded as the barrier it is, then
called), so each of them is a cooperative launch too, and recording costs registers, which can lower the blocks an
SM holds: the variants are built with the registers capped to keep the plain kernel's resident blocks
(``GpuRecording``, :func:`.device.occupancy_register_cap`), and each launch is checked against what the GPU holds before it runs (:func:`check_fits`),
so that a grid too large is refused naming the variant, not failed by the driver."""

from __future__ import annotations

import numpy as np

from ...errors import LaunchConfigError


def check_fits(dispatcher, launch_args, grid, block, dynamic_shared_bytes: int, where: str, what: str) -> None:
    """Refuse the ``what`` launch of a cooperative kernel whose grid has more blocks than the GPU holds at once."""
    kern = dispatcher.overloads.get(tuple(dispatcher.typeof_pyval(a) for a in launch_args))
    if kern is None or not getattr(kern, "cooperative", False):
        return
    limit = int(kern.max_cooperative_grid_blocks(tuple(block), int(dynamic_shared_bytes)))
    n_blocks = int(np.prod(grid))
    if n_blocks > limit:
        raise LaunchConfigError(
            f"{where}: the {what} launch uses grid.sync(), a cooperative launch, which needs every block of the grid "
            f"resident at once: this GPU holds at most {limit} blocks of it, the grid has {n_blocks}. Launch fewer "
            "blocks (a grid-stride loop covers the rest), or capture the kernel with the cpu backend")
