"""The host side of how a GPU capture sizes its buffers, without a GPU (numba's simulator stands in for the device
arrays): which launches record at once and with how much room, when the counts a first run wrote can be trusted,
and how the inputs are put back before a second run. tests/test_gpu_sizing.py runs the whole path on a GPU."""

import numpy as np
import pytest
from numba import cuda

from gpuviz.capture.backends.gpu import launch
from gpuviz.capture.backends.gpu.launch import GpuRecording
from gpuviz.capture.backends.gpu.layout import BUFFERS, CNT_COLUMNS


def _recording(mode="thread", n_slots=128, args=()):
    """The state the sizing steps read, set as GpuRecording.__init__ sets it (which needs a GPU's numba-cuda)."""
    rec = object.__new__(GpuRecording)
    rec.cuda, rec.mode, rec.n_slots, rec.args = cuda, mode, n_slots, list(args)
    return rec


@pytest.mark.parametrize("mode, n_slots, max_events, expected", [
    ("thread", 128, None, launch.SPECULATE_PER_THREAD),  # few threads: the most room per thread
    ("thread", launch.SPECULATE_EVENTS // 16, None, 16),  # more threads share the same budget
    ("thread", launch.SPECULATE_EVENTS // launch.SPECULATE_MIN_PER_THREAD, None, launch.SPECULATE_MIN_PER_THREAD),
    ("thread", launch.SPECULATE_EVENTS // launch.SPECULATE_MIN_PER_THREAD + 1, None, 0),  # too little room: count first
    ("thread", 128, 128 * 10, 10),  # never room for more than max_events
    ("thread", 128, 128 * 7, 0),
    ("thread", 0, None, 0),  # no recorded thread
    ("warp", 128, None, 0),  # per-warp slots have several parts to size: counted first
])
def test_which_launches_record_at_once_and_with_how_much_room(mode, n_slots, max_events, expected):
    assert _recording(mode, n_slots).guessed_capacity(max_events) == expected


def test_the_guess_gives_every_thread_the_same_room_for_events_and_timestamps():
    counts = _recording(n_slots=5).guessed_counts(64)
    assert counts.shape == (5, CNT_COLUMNS)
    assert (counts[:, :2] == 64).all() and (counts[:, 2:] == 0).all()


def _bufs_with_counts(cnt: np.ndarray) -> list:
    bufs = [None] * len(BUFFERS)
    bufs[BUFFERS.index("cnt")] = cuda.to_device(cnt.astype(np.int32))
    return bufs


def test_what_each_thread_produced_is_read_from_the_last_two_count_columns():
    # written (fitted) events and timestamps in columns 0-1, produced ones in 2-3; rows past n_slots are padding
    cnt = np.array([[3, 2, 3, 2], [64, 5, 200, 7], [0, 0, 0, 0], [9, 9, 9, 9]])
    produced = _recording(n_slots=3).produced_counts(_bufs_with_counts(cnt))
    np.testing.assert_array_equal(produced, [[3, 2, 0, 0], [200, 7, 0, 0], [0, 0, 0, 0]])


def test_counts_that_say_fewer_produced_than_written_are_not_trusted():
    # a produced count below the written one can only come from arithmetic that wrapped: count first instead
    cnt = np.array([[3, 2, 3, 2], [64, 5, -5, 7]])
    assert _recording(n_slots=2).produced_counts(_bufs_with_counts(cnt)) is None


def test_inputs_are_put_back_as_they_were_before_a_second_recording_run():
    host = np.arange(6, dtype=np.int64)
    device = cuda.to_device(np.arange(10, 16, dtype=np.int64))
    in_tuple = cuda.to_device(np.arange(20, 26, dtype=np.int64))
    rec = _recording(args=[host, device, (host * 2, in_tuple), 3.5])
    pristine = rec.device_args(fresh=True)
    # the first recording run wrote into the caller's device arrays (numpy inputs went up as copies)
    first = rec.device_args(fresh=False)
    assert first[1] is device and first[2][1] is in_tuple
    first[0].copy_to_device(np.full(6, -1, np.int64))
    device.copy_to_device(np.full(6, -1, np.int64))
    in_tuple.copy_to_device(np.full(6, -2, np.int64))
    again = rec.restore_inputs(pristine)
    # the caller's own device arrays, holding what they held before; numpy inputs uploaded afresh
    assert again[1] is device and again[2][1] is in_tuple and again[3] == 3.5
    np.testing.assert_array_equal(device.copy_to_host(), np.arange(10, 16))
    np.testing.assert_array_equal(in_tuple.copy_to_host(), np.arange(20, 26))
    np.testing.assert_array_equal(again[0].copy_to_host(), host)
    np.testing.assert_array_equal(again[2][0].copy_to_host(), host * 2)
    assert again[0] is not first[0]
