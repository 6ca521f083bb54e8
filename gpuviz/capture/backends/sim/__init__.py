"""The ``sim`` back end: numba's CUDA simulator running a per-thread instrumented copy of the kernel."""
