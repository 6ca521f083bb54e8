"""Shared test setup.

numba picks its CUDA simulator at import time, so the choice is made here, before any test module
imports numba. Tests run under the simulator unless GPUVIZ_TEST_GPU=1 asks for a real GPU.
"""

import os

import pytest

ON_GPU = os.environ.get("GPUVIZ_TEST_GPU") == "1"
if not ON_GPU:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")


def pytest_collection_modifyitems(config, items):
    if ON_GPU:
        return
    skip_gpu = pytest.mark.skip(reason="needs a real NVIDIA GPU: run with GPUVIZ_TEST_GPU=1 on a machine that has one")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)
