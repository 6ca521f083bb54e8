"""Run ordinary Numba CUDA programs with every kernel launch captured, unmodified and safely.

    gpuviz run my_program.py [args] [--backend cpu|sim|gpu] [--kernel NAME] [--launch K] [-o run.gpuviz]

    from gpuviz.runner import run_script
    result = run_script("my_program.py", timeout=60)      # in a worker process; result.traces, .launches

    with gpuviz.recording() as rec: ...                     # in this process (notebooks)
    gpuviz.show(rec)                                        # the window, in its own process

Parts: :mod:`.protocol` (the one protocol between gpuviz and a worker process), :mod:`.intercept` (launch hooks
and the per-launch policy), :mod:`.worker` (the process that runs the program, or :mod:`.bundled`, a bundled
kernel's capture), :mod:`.script` (starting it and reading back what it left), :mod:`.notebook`.
"""

from __future__ import annotations

import importlib

__all__ = ["LaunchRecord", "Recording", "RunResult", "recording", "run_script", "show"]
#: where each name of the package's API lives. They are loaded when first asked for, not when the package is:
#: the window imports gpuviz.runner.protocol (and this package with it) to follow a capture job, and must not
#: load the capture package or numba that intercept and script bring (tests/test_startup.py)
_API = {"LaunchRecord": "intercept", "Recording": "notebook", "recording": "notebook", "show": "notebook",
        "RunResult": "script", "run_script": "script"}


def __getattr__(name: str):
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
