"""Never break the user's program: a failure of gpuviz's own instrumentation or recording, at any stage of a
traced launch and on every backend, falls back to the plain launch (the CPU executor untraced, numba's simulator,
or numba's own launcher on a GPU); the program's results stay numba's, and the launch is listed untraced with the
first cause. The failures are injected with gpuviz.capture.faults (GPUVIZ_INJECT_FAULT=STAGE[:BACKEND]).

Before the fallback was one place, an internal failure on the cpu backend ran the launch on numba's simulator
(not the executor), a failure after the instrumented run left device arrays holding its results for the plain
launch to add to (the program printed max error 198), and a failure while saving a trace (the aligned record of
numba.cuda.random: ``ValueError: format number 1 ... is not recognized``) killed the program.
"""

import sys
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

from gpuviz.capture import faults
from gpuviz.runner import run_script
from gpuviz.runner.intercept import LaunchPolicy

SCRIPT = Path(__file__).resolve().parent / "user_scripts" / "accumulates.py"


@pytest.mark.parametrize("backend", ["cpu", "sim"])
@pytest.mark.parametrize("stage", faults.STAGES)
def test_a_failure_at_every_stage_leaves_the_program_right_and_the_launch_untraced(stage, backend, monkeypatch):
    monkeypatch.setenv(faults.ENV, f"{stage}:{backend}")
    result = run_script(SCRIPT, backend=backend, timeout=120)
    assert result.ok, result.message + result.stderr[-2000:]
    assert "max error 0.0" in result.stdout  # two launches, each exactly once, on the arguments as they were
    assert len(result.launches) == 2
    for rec in result.launches:
        assert rec.status == "untraced", rec
        assert f"injected failure at stage {stage!r} on the {backend} backend" in rec.reason
        assert "InjectedFault" in rec.reason
        if stage == "save":  # it was traced, then its trace could not be saved: who traced it is who ran it
            assert rec.backend == backend
        else:  # the plain launch of this backend: the executor untraced on cpu, numba's simulator on sim
            assert rec.backend == {"cpu": "cpu", "sim": "plain"}[backend]


def test_without_the_hook_the_same_program_is_traced(monkeypatch):
    monkeypatch.delenv(faults.ENV, raising=False)
    result = run_script(SCRIPT, backend="cpu", timeout=120)
    assert result.ok and "max error 0.0" in result.stdout
    assert [r.status for r in result.launches] == ["traced", "traced"]


def test_the_hook_names_a_stage_and_a_backend_or_refuses():
    with pytest.raises(ValueError, match="the stage must be one of plan, run, events, assemble, save"):
        faults.inject_fault("compile")
    with pytest.raises(ValueError, match="backend must be cpu, sim or gpu"):
        faults.inject_fault("run:tpu")
    faults.inject_fault("events:gpu")
    try:
        faults.check("events", "cpu")  # another backend: nothing
        with pytest.raises(faults.InjectedFault, match="stage 'events' on the gpu backend"):
            faults.check("events", "gpu")
    finally:
        faults.inject_fault(None)


def _accumulate(x, y):
    i = cuda.grid(1)
    if i < x.size:
        y[i] += 2 * x[i]


@pytest.mark.parametrize("stage", ["plan", "run", "events", "assemble"])
def test_on_the_gpu_backend_a_failure_falls_back_to_numbas_own_launcher(stage, monkeypatch):
    """The GPU backend's path through the policy, without a GPU: its capture fails at a stage as the GPU recorder's
    hook would make it (gpuviz.capture.capture replaced by one that meets the hook: no GPU recorder runs here), and
    the launch runs on the original launcher once, on the arguments as they were."""
    capture_mod = sys.modules["gpuviz.capture"]  # the package (gpuviz.capture the name is the function)

    def recorder_fails(kernel, grid, block, *args, backend, **options):
        assert backend == "gpu"
        args[1][:] = -7  # a failed recording half-wrote the caller's array
        faults.check(stage, backend)
        raise AssertionError("the hook did not fire")

    monkeypatch.setattr(capture_mod, "capture", recorder_fails)
    monkeypatch.setenv(faults.ENV, f"{stage}:gpu")
    kernel = cuda.jit(_accumulate)
    x, y = np.arange(40, dtype=np.float32), np.ones(40, dtype=np.float32)
    ran = []

    def numbas_launcher():
        ran.append(1)
        y[:] += 2 * x  # what the plain launch computes

    traces = []
    policy = LaunchPolicy(backend="gpu", on_trace=lambda rec, tr: traces.append((rec, tr)))
    monkeypatch.setattr("gpuviz.runner.intercept._synchronize", lambda: None)
    policy.launch(kernel, 2, 32, (x, y), numbas_launcher)
    assert ran == [1]
    assert np.array_equal(y, 1 + 2 * x)
    rec, trace = traces[-1]
    assert rec.status == "untraced" and rec.backend == "plain" and len(trace) == 0
    assert f"injected failure at stage {stage!r} on the gpu backend" in rec.reason
