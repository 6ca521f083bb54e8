"""A program that imports numba-cuda before anything else and needs numpy's row_stack (numba-cuda 0.30.x
calls it; numpy 2.5 removed it)."""

from numba import cuda  # noqa: F401

import numpy as np

print("row_stack:", hasattr(np, "row_stack") and np.row_stack(([1, 2], [3, 4])).tolist())
