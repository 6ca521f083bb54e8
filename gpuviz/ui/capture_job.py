"""A capture run in its own process: ``python -m gpuviz.ui.capture_job '<json request>'``.

The app starts this through :class:`gpuviz.ui.launch.CaptureRunner` (a QProcess), so a kernel that
crashes the interpreter, hangs at a divergent barrier, eats memory or faults on a GPU (which leaves the
process's CUDA context unusable) takes only this process down, never the window. The protocol is lines
on stdout:

    STAGE <words>        what it is doing now (shown under the progress bar)
    PERCENT <n>          how far the whole job is, 0..100 (the bar): the launch's threads done while the
                         CPU executor runs (0..60), then the trace's index being built (60..97), then saving
    NOTICE <json string> something the user must see though the capture went on (e.g. no GPU here, so
                         the CPU executor captured the kernel instead)
    DONE <path>          the trace was saved to <path>
    ERROR <json string>  a readable message saying what went wrong (then exit status 2)

Request fields: kernel (bundled kernel name), size (problem size, or null for the kernel's default),
block (list of ints, or null for the default), backend ("cpu" | "sim" | "gpu"), out (trace path),
fallback_to_cpu (default true: when backend "gpu" cannot run here, capture with the CPU executor and
say why in a NOTICE; the trace's ``launch.meta["fallback"]`` keeps the reason), watchdog (seconds a CPU
launch may go without progress, default 10; 0: never). While the CPU executor runs, a STAGE line about
once a second says how far it got (seconds, events, threads done, time without progress).
"""

from __future__ import annotations

import json
import sys


def _say(tag: str, text: str) -> None:
    print(f"{tag} {text}", flush=True)


def _dims(d) -> str:
    d = tuple(int(x) for x in d)
    return "x".join(str(x) for x in d) if len(d) > 1 else str(d[0])


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


def run(request: dict) -> str:
    import numpy as np

    _say("STAGE", "loading the bundled kernels")
    from gpuviz.catalog import get_kernel

    spec = get_kernel(str(request["kernel"]))
    size = int(request.get("size") or spec.default_size)
    block = tuple(int(b) for b in (request.get("block") or spec.default_block))
    backend = str(request.get("backend") or "cpu")
    grid, block = spec.launch(size, block)
    from gpuviz.capture.limits import check_before_inputs, normalize_dims

    # refused from its shape alone (too many threads, a trace that cannot fit) before the inputs are allocated
    check_before_inputs(normalize_dims(grid, "grid"), normalize_dims(block, "block"), backend=backend,
                        kernel=spec.name)
    args = spec.make_args(size, np.random.default_rng(0))
    n_threads = int(np.prod(grid)) * int(np.prod(block))
    where = f"{spec.name}[grid {_dims(grid)}, block {_dims(block)}] (size {size}, {n_threads:,} threads)"
    head = f"capturing {spec.name}: grid {tuple(grid)} x block {tuple(block)} = {n_threads:,} threads ({backend})"
    _say("STAGE", head)
    import gpuviz
    from gpuviz.capture.errors import BackendUnavailable, KernelFault

    def progress(info: dict) -> None:
        """The CPU executor's progress, about once a second: under the progress bar."""
        text = f"{head}: {info['seconds']:.0f} s, {info['events']:,} events, {info['threads_done']:,} threads done"
        if info.get("no_progress_s", 0) >= 2:
            text += f", {info['no_progress_s']:.0f} s without progress at line {info['line']}"
        _say("STAGE", text)
        if info.get("threads"):
            _say("PERCENT", str(int(60 * info["threads_done"] / info["threads"])))

    watch = {"watchdog": float(request.get("watchdog", 10.0)), "progress": progress}
    try:
        trace = gpuviz.capture(spec.kernel, grid, block, *args, backend=backend,
                               **(watch if backend == "cpu" else {"watchdog": watch["watchdog"]} if backend == "sim"
                                  else {}))
    except BackendUnavailable as e:
        if backend != "gpu" or not request.get("fallback_to_cpu", True):
            raise
        reason = str(e).strip()
        _say("NOTICE", json.dumps(f"No GPU here: {where} was captured with gpuviz's CPU executor instead, on this "
                                  f"machine's CPU, not a GPU. Why: {short_reason(reason)}."))
        _say("STAGE", f"capturing {spec.name} with the CPU executor instead of the GPU")
        args = spec.make_args(size, np.random.default_rng(0))  # fresh inputs: nothing of the GPU attempt leaks in
        try:
            trace = gpuviz.capture(spec.kernel, grid, block, *args, backend="cpu", **watch)
        except Exception as cpu_exc:
            # what failed leads; that it was the stand-in for the GPU, and why, follows (the notice may be gone)
            cpu_exc.add_note(f"(captured with gpuviz's CPU executor because the GPU backend cannot run here: "
                             f"{short_reason(reason)})")
            raise
        trace.launch.meta["fallback"] = {"asked": "gpu", "reason": reason}
    except KernelFault as e:
        # the message names file, line and launch already; say which launch of the panel it was, too
        raise KernelFault(f"{where} on backend {backend!r}: {e}", file=e.file, line=e.line) from e
    # the panel shows the size of the trace on screen from this (the launch alone does not say it)
    trace.launch.meta.setdefault("bundled_kernel", {"name": spec.name, "size": size, "size_label": spec.size_label})
    # what the window needs to open the trace at once (gpuviz.model.index), computed here, saved with it
    from gpuviz.model.index import build_index
    from gpuviz.model.prepared import prepare
    from gpuviz.model.tracefile import save_traces

    _say("PERCENT", "60")
    _say("STAGE", f"indexing {len(trace):,} events for the window")
    last = [-1]

    def indexed(fraction: float, stage: str) -> None:
        pct = 60 + int(37 * fraction)
        if pct != last[0]:
            last[0] = pct
            _say("PERCENT", str(pct))

    prepare(trace, index=build_index(trace, progress=indexed), source="built")
    _say("STAGE", f"saving {len(trace):,} events")
    save_traces(request["out"], [trace])
    _say("PERCENT", "100")
    return request["out"]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        _say("ERROR", json.dumps("usage: python -m gpuviz.ui.capture_job '<json request>'"))
        return 2
    try:
        request = json.loads(argv[1])
        path = run(request)
    except Exception as e:  # noqa: BLE001 - every failure becomes one readable line for the window
        msg = str(e).strip() or type(e).__name__
        if isinstance(e, KeyError) and e.args:
            msg = str(e.args[0])
        msg = " ".join([msg, *getattr(e, "__notes__", ())])
        _say("ERROR", json.dumps(f"{type(e).__name__}: {msg}"))
        return 2
    _say("DONE", path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
