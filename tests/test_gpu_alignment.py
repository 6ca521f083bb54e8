"""alignment= of shared and local arrays on the GPU (issue 25: numba-cuda compiles it, gpuviz's GPU back end refused
it): the recording keeps the declaration as written, and computes what the cpu back end records."""

import os

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

if os.environ.get("GPUVIZ_TEST_GPU") == "1":
    from gpuviz.capture.backends.gpu.device import gpu_cuda  # noqa: F401 - the numpy 2.5 shim before numba compiles


def test_an_aligned_shared_and_local_array_record_on_the_gpu_as_on_the_cpu():
    from gpuviz.capture import capture

    from .test_capture_language import aligned

    cpu_out, gpu_out, numba_out = np.zeros(4), np.zeros(4), np.zeros(4)
    cpu = capture(aligned, 1, 4, cpu_out, backend="cpu", lockstep=False)
    gpu = capture(aligned, 1, 4, gpu_out, backend="gpu", lockstep=False)
    aligned[1, 4](numba_out)
    assert gpu_out.tolist() == cpu_out.tolist() == numba_out.tolist() == [4.0, 5.0, 6.0, 7.0]
    assert gpu.launch.meta.get("outputs_match_plain") is True
    for k in ("block", "thread", "kind", "index", "line"):
        assert sorted(zip(gpu.field("thread").tolist(), gpu.field(k).tolist())) == \
            sorted(zip(cpu.field("thread").tolist(), cpu.field(k).tolist())), k
