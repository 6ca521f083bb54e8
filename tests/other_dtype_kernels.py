"""Kernels over arrays of the element types numba-cuda's own tests use besides numbers: dates, time spans and
fixed-width bytes and text (tests/test_round_trip.py saves and reopens their traces)."""

from numba import cuda


@cuda.jit
def add_spans(days, spans, out):
    i = cuda.grid(1)
    if i < days.size:
        out[i] = days[i] + spans[i]


@cuda.jit
def copy_bytes(src, dst):
    i = cuda.grid(1)
    if i < src.size:
        dst[i] = src[i]
