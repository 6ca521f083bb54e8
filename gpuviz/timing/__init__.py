"""Timing measurements: on the GPU (CUDA events) and on the CPU (numpy, gpuviz's CPU executor).

* :mod:`gpuviz.timing.gpu`        host flow, compile vs run, block-size sweep, CPU vs GPU over sizes,
                                  blocks on SMs (needs an NVIDIA GPU and numba-cuda)
* :mod:`gpuviz.timing.cpu`        numpy and CPU-executor timings: run anywhere, labelled "cpu"
* :mod:`gpuviz.timing.recordings` the GPU recordings shipped in ``assets/recordings`` for people without a GPU

Results are :class:`gpuviz.model.timings.TimingSet` objects (JSON and CSV export).
Rules every measurement here follows: warm-up excluded, median of repeats, device work timed with CUDA
events, short kernels timed as a batch of launches so that launch overhead does not swamp them.
"""
