"""The ``gpu`` back end: numba-cuda on a real NVIDIA GPU, recording into device arrays."""
