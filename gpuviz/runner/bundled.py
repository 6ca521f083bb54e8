"""A bundled kernel captured in the worker process: the window's launch panel asks for it (its Run button), so
that a kernel that crashes the interpreter, hangs at a divergent barrier, eats memory or faults on a GPU (which
leaves the process's CUDA context unusable) takes only the worker down, never the window.

The job speaks the one worker protocol (:mod:`gpuviz.runner.protocol`): ``stage`` and ``percent`` messages
while it runs (the launch's threads done while the CPU executor runs: 0..60, then the trace's index being
built: 60..97, then saving), a ``notice`` for what the user must see though the capture went on (no GPU here,
so the CPU executor captured the kernel instead), one ``launch`` with the trace file, or an ``error`` with a
readable message.

Request (``request["bundled"]``): kernel (bundled kernel name), size (problem size, or null for the kernel's
default), block (list of ints, or null for the default), backend ("cpu" | "sim" | "gpu"), fallback_to_cpu
(default true: when backend "gpu" cannot run here, capture with the CPU executor and say why in a notice; the
trace's ``launch.meta["fallback"]`` keeps the reason), watchdog (seconds a CPU launch may go without progress,
default 10; 0: never). While the CPU executor runs, a stage message about once a second says how far it got
(seconds, events, threads done, time without progress).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

import gpuviz  # gpuviz.capture is looked up at each call (the tests replace it)

from ..capture.errors import BackendUnavailable, KernelFault
from ..capture.limits import check_before_inputs, normalize_dims
from ..catalog import get_kernel  # imports nothing of the kernels (nor numba) until asked for one
from ..model.index import build_index
from ..model.prepared import prepare
from ..model.tracefile import save_traces
from .protocol import EventLog, sha256_of, trace_name

EXIT_FAILED = 2  # the capture failed and said why (an error message)


def short_reason(message: str) -> str:
    """BackendUnavailable's message without what the notice says anyway ("backend='gpu' is unavailable: ...",
    "Use backend='cpu' ..."): the part that says why."""
    text = " ".join(message.split()).replace("..", ".")
    for prefix in ("backend='gpu' is unavailable: ", "backend='gpu' is unavailable"):
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    cut = text.find(". Use backend=")
    if cut > 0:
        text = text[:cut]
    return text.rstrip(". ") or message


def _dims(d) -> str:
    d = tuple(int(x) for x in d)
    return "x".join(str(x) for x in d) if len(d) > 1 else str(d[0])


def choose_numba(backend: str) -> None:
    """numba decides at its first import between its simulator and a GPU: ``sim`` asks for the simulator,
    ``gpu`` for the GPU; ``cpu`` leaves the choice as the environment makes it (numba compiles nothing then).
    The worker calls it before the job (it sets this process's environment)."""
    if backend == "sim":
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    elif backend == "gpu":
        os.environ.pop("NUMBA_ENABLE_CUDASIM", None)


def run(request: dict, folder: Path, log: EventLog) -> int:
    """The job in the worker: capture, index and save the bundled kernel the request names; every failure is one
    ``error`` message (its kind, and a readable message). Returns the worker's exit code."""
    job = request["bundled"]
    try:
        name = capture_bundled(job, folder, log)
    except Exception as e:  # noqa: BLE001 - every failure becomes one readable message for the window
        msg = str(e).strip() or type(e).__name__
        if isinstance(e, KeyError) and e.args:
            msg = str(e.args[0])
        log.write("error", kind=type(e).__name__, message=" ".join([msg, *getattr(e, "__notes__", ())]))
        return EXIT_FAILED
    log.write("launch", number=1, kernel=str(job["kernel"]), status="traced", trace_file=name,
              sha256=sha256_of(folder / name))
    return 0


def capture_bundled(job: dict, folder: Path, log: EventLog) -> str:
    """Capture the bundled kernel ``job`` names, with its index, into the run folder; returns the trace's file name."""
    log.write("stage", text="loading the bundled kernels")
    spec = get_kernel(str(job["kernel"]))
    size = int(job.get("size") or spec.default_size)
    block = tuple(int(b) for b in (job.get("block") or spec.default_block))
    backend = str(job.get("backend") or "cpu")
    grid, block = spec.launch(size, block)
    # refused from its shape alone (too many threads, a trace that cannot fit) before the inputs are allocated
    check_before_inputs(normalize_dims(grid, "grid"), normalize_dims(block, "block"), backend=backend,
                        kernel=spec.name)
    n_threads = int(np.prod(grid)) * int(np.prod(block))
    where = f"{spec.name}[grid {_dims(grid)}, block {_dims(block)}] (size {size}, {n_threads:,} threads)"
    head = f"capturing {spec.name}: grid {tuple(grid)} x block {tuple(block)} = {n_threads:,} threads ({backend})"
    log.write("stage", text=head)
    # the panel shows the size of the trace on screen from its bundled_kernel entry (the launch alone does not
    # say it)
    trace = _capture(spec, size, grid, block, backend, job, where, head, log,
                     {"bundled_kernel": {"name": spec.name, "size": size, "size_label": spec.size_label}})
    # what the window needs to open the trace at once (gpuviz.model.index), computed here, saved with it
    log.write("percent", value=60)
    log.write("stage", text=f"indexing {len(trace):,} events for the window")
    last = [-1]

    def indexed(fraction: float, stage: str) -> None:
        pct = 60 + int(37 * fraction)
        if pct != last[0]:
            last[0] = pct
            log.write("percent", value=pct)

    prepare(trace, index=build_index(trace, progress=indexed), source="built")
    log.write("stage", text=f"saving {len(trace):,} events")
    name = trace_name(1)
    save_traces(folder / name, [trace])
    log.write("percent", value=100)
    return name


def _capture(spec, size, grid, block, backend: str, job: dict, where: str, head: str, log: EventLog, meta: dict):
    """The launch captured on ``backend``, with ``meta`` in its launch's; on "gpu" where it cannot run, on the CPU
    executor instead (a notice says so and why, the trace's meta keeps the reason)."""
    def progress(info: dict) -> None:
        """The CPU executor's progress, about once a second: under the progress bar."""
        text = f"{head}: {info['seconds']:.0f} s, {info['events']:,} events, {info['threads_done']:,} threads done"
        if info.get("no_progress_s", 0) >= 2:
            text += f", {info['no_progress_s']:.0f} s without progress at line {info['line']}"
        log.write("stage", text=text)
        if info.get("threads"):
            log.write("percent", value=int(60 * info["threads_done"] / info["threads"]))

    watch = {"watchdog": float(job.get("watchdog", 10.0)), "progress": progress}
    args = spec.make_args(size, np.random.default_rng(0))
    try:
        return gpuviz.capture(spec.kernel, grid, block, *args, backend=backend, meta=meta,
                              **(watch if backend == "cpu" else {"watchdog": watch["watchdog"]} if backend == "sim"
                                 else {}))
    except BackendUnavailable as e:
        if backend != "gpu" or not job.get("fallback_to_cpu", True):
            raise
        reason = str(e).strip()
    except KernelFault as e:
        # the message names file, line and launch already; say which launch of the panel it was, too
        raise KernelFault(f"{where} on backend {backend!r}: {e}", file=e.file, line=e.line) from e
    log.write("notice", text=f"No GPU here: {where} was captured with gpuviz's CPU executor instead, on this "
                             f"machine's CPU, not a GPU. Why: {short_reason(reason)}.")
    log.write("stage", text=f"capturing {spec.name} with the CPU executor instead of the GPU")
    args = spec.make_args(size, np.random.default_rng(0))  # fresh inputs: nothing of the GPU attempt leaks in
    try:
        trace = gpuviz.capture(spec.kernel, grid, block, *args, backend="cpu", **watch,
                               meta={**meta, "fallback": {"asked": "gpu", "reason": reason}})
    except Exception as cpu_exc:
        # what failed leads; that it was the stand-in for the GPU, and why, follows (the notice may be gone)
        cpu_exc.add_note(f"(captured with gpuviz's CPU executor because the GPU backend cannot run here: "
                         f"{short_reason(reason)})")
        raise
    return trace


def request_for(kernel: str, size=None, block=None, backend: str = "cpu", **options) -> dict:
    """The worker's request for a bundled kernel's capture (options: fallback_to_cpu, watchdog)."""
    return {"bundled": {"kernel": kernel, "size": size, "block": block, "backend": backend, **options}}
