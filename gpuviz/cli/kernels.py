"""``gpuviz kernels``: the bundled kernels, one a line with its description (imports every kernel, so numba)."""

from __future__ import annotations

from ..catalog import all_kernels


def main(args) -> int:
    specs = all_kernels()
    width = max(len(n) for n in specs)
    for name, spec in specs.items():
        print(f"{name:<{width}}  {spec.description}")
    return 0
