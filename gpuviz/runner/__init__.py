"""Run ordinary Numba CUDA programs with every kernel launch captured, unmodified and safely.

    gpuviz run my_program.py [args] [--backend cpu|sim|gpu] [--kernel NAME] [--launch K] [-o run.gpuviz]

    from gpuviz.runner import run_script
    result = run_script("my_program.py", timeout=60)      # in a worker process; result.traces, .launches

    with gpuviz.recording() as rec: ...                     # in this process (notebooks)
    gpuviz.show(rec)                                        # the window, in its own process

Parts: :mod:`.intercept` (launch hooks and the per-launch policy), :mod:`.worker` (the process that runs
the program), :mod:`.script` (starting it and reading back what it left), :mod:`.notebook`.
"""

from __future__ import annotations

from .intercept import LaunchRecord
from .notebook import Recording, recording, show
from .script import RunResult, run_script

__all__ = ["LaunchRecord", "Recording", "RunResult", "recording", "run_script", "show"]
