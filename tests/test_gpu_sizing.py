"""How a GPU capture sizes its buffers: a launch of few threads records at once into guessed room (no counting
variant compiled), a thread that made more than that room is recorded again from its inputs as they were, and the
trace is the CPU executor's either way; many threads are counted first.

Marked ``gpu``: tests/conftest.py skips them unless GPUVIZ_TEST_GPU=1. On a GPU machine:
``GPUVIZ_TEST_GPU=1 python3 -m pytest tests/test_gpu_sizing.py``.
"""

import os

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

if os.environ.get("GPUVIZ_TEST_GPU") == "1":
    from gpuviz.capture.backends.gpu.device import gpu_cuda  # noqa: F401 - the numpy 2.5 shim before numba compiles


def _kernels():
    from numba import cuda

    @cuda.jit
    def few(a, b):
        i = cuda.grid(1)
        if i < a.size:
            b[i] = a[i] * 2

    @cuda.jit
    def uneven(a, n):
        # thread i adds n + 20 * (i % 7): up to n + 120 loads and as many stores, past the guessed room for most
        i = cuda.grid(1)
        if i < a.size:
            for _ in range(n + 20 * (i % 7)):
                a[i] += 1

    return few, uneven


def _expected_uneven(size, n):
    return np.arange(size, dtype=np.int64) + n + 20 * (np.arange(size) % 7)


def test_a_small_launch_records_at_once_and_compiles_no_counting_variant():
    from gpuviz.capture import capture

    few, _ = _kernels()
    a = np.arange(100, dtype=np.float32)
    b_gpu, b_cpu = np.zeros_like(a), np.zeros_like(a)
    gpu = capture(few, 4, 32, a, b_gpu, backend="gpu")
    cpu = capture(few, 4, 32, a, b_cpu, backend="cpu")
    meta = gpu.launch.meta
    assert meta["sizing"].startswith("recorded at once: room for 64 events per thread")
    assert "counting" not in meta.get("variants", {})
    assert "count_compile_s" not in gpu.launch.timings and "count_kernel_s" not in gpu.launch.timings
    assert gpu.launch.dropped == 0 and meta["events_counted"] == len(gpu) == len(cpu)
    assert gpu.per_thread_sequences() == cpu.per_thread_sequences()
    np.testing.assert_array_equal(b_gpu, a * 2)


@pytest.mark.parametrize("where", ["numpy", "device"])
@pytest.mark.parametrize("timestamps", ["sync", "all"])
def test_threads_past_the_guessed_room_are_recorded_again_from_their_inputs_as_they_were(where, timestamps):
    from numba import cuda

    from gpuviz.capture import capture

    _, uneven = _kernels()
    size, n = 100, 40
    start = np.arange(size, dtype=np.int64)
    arg = start.copy() if where == "numpy" else cuda.to_device(start)
    gpu = capture(uneven, 4, 32, arg, n, backend="gpu", timestamps=timestamps)
    cpu = capture(uneven, 4, 32, start.copy(), n, backend="cpu")
    meta = gpu.launch.meta
    assert meta["sizing"].startswith("recorded twice") and "each thread's count from the first run" in meta["sizing"]
    # the kernel ran once on the caller's data, not twice: the first run's writes were put back before the second
    result = arg if where == "numpy" else arg.copy_to_host()
    np.testing.assert_array_equal(result, _expected_uneven(size, n))
    assert meta["outputs_match_plain"] is True
    assert gpu.launch.dropped == 0 and not any("dropped" in w for w in gpu.launch.warnings)
    assert len(gpu) == len(cpu) == meta["events_counted"]
    assert gpu.per_thread_sequences() == cpu.per_thread_sequences()
    if timestamps == "all":  # every event stamped: the timed buffer overflowed the guess too, and was resized
        assert (gpu.time >= 0).all()


def test_a_trace_over_max_events_found_by_the_first_run_is_refused_and_the_inputs_are_left_as_they_were():
    from numba import cuda

    from gpuviz.capture import TraceTooLarge, capture

    _, uneven = _kernels()
    start = np.arange(100, dtype=np.int64)
    d = cuda.to_device(start)
    # 128 threads and room for 10 events each: recorded at once first, then found to make far more than 1,280
    with pytest.raises(TraceTooLarge, match="max_events=1,280"):
        capture(uneven, 4, 32, d, 40, backend="gpu", max_events=1280, estimate=False)
    np.testing.assert_array_equal(d.copy_to_host(), start)


def test_many_threads_are_counted_first():
    from gpuviz.capture import capture

    few, _ = _kernels()
    a = np.arange(70_000, dtype=np.float32)
    b = np.zeros_like(a)
    gpu = capture(few, 70_000 // 256 + 1, 256, a, b, backend="gpu")
    assert gpu.launch.meta["sizing"] == "counting pass, then the recording"
    assert gpu.launch.dropped == 0 and len(gpu) == gpu.launch.meta["events_counted"]
    np.testing.assert_array_equal(b, a * 2)
