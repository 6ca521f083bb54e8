"""Shared test setup.

numba picks its CUDA simulator at import time, so the choice is made here, before any test module
imports numba. Tests run under the simulator unless GPUVIZ_TEST_GPU=1 asks for a real GPU.
"""

import os

import pytest

ON_GPU = os.environ.get("GPUVIZ_TEST_GPU") == "1"
if not ON_GPU:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
else:
    import numpy as np

    # GPU images may carry numpy 2.5, where numba-cuda 0.30.x's first compile calls the removed np.row_stack
    # (gpuviz pins numpy<2.5 where it installs itself; gpuviz.capture.gpu applies the same shim)
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack


def pytest_collection_modifyitems(config, items):
    if ON_GPU:
        return
    skip_gpu = pytest.mark.skip(reason="needs a real NVIDIA GPU: run with GPUVIZ_TEST_GPU=1 on a machine that has one")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)
