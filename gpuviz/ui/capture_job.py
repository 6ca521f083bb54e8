"""A capture run in its own process: ``python -m gpuviz.ui.capture_job '<json request>'``.

The app starts this through :class:`gpuviz.ui.launch.CaptureRunner` (a QProcess), so a kernel that
crashes the interpreter, hangs at a divergent barrier or eats memory takes only this process down,
never the window. The protocol is lines on stdout:

    STAGE <words>        what it is doing now (shown under the progress bar)
    DONE <path>          the trace was saved to <path>
    ERROR <json string>  a readable message saying what went wrong (then exit status 2)

Request fields: kernel (bundled kernel name), size (problem size, or null for the kernel's default),
block (list of ints, or null for the default), backend ("cpu" | "sim" | "gpu"), out (trace path).
"""

from __future__ import annotations

import json
import sys


def _say(tag: str, text: str) -> None:
    print(f"{tag} {text}", flush=True)


def run(request: dict) -> str:
    import numpy as np

    _say("STAGE", "loading the bundled kernels")
    from kernels import get_kernel

    spec = get_kernel(str(request["kernel"]))
    size = int(request.get("size") or spec.default_size)
    block = tuple(int(b) for b in (request.get("block") or spec.default_block))
    backend = str(request.get("backend") or "cpu")
    grid, block = spec.launch(size, block)
    args = spec.make_args(size, np.random.default_rng(0))
    n_threads = int(np.prod(grid)) * int(np.prod(block))
    _say("STAGE", f"capturing {spec.name}: grid {tuple(grid)} x block {tuple(block)} = {n_threads:,} threads ({backend})")
    import gpuviz

    trace = gpuviz.capture(spec.kernel, grid, block, *args, backend=backend)
    _say("STAGE", f"saving {len(trace):,} events")
    trace.save(request["out"])
    return request["out"]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        _say("ERROR", json.dumps("usage: python -m gpuviz.ui.capture_job '<json request>'"))
        return 2
    try:
        request = json.loads(argv[1])
        path = run(request)
    except Exception as e:  # every failure becomes one readable line for the window
        msg = str(e).strip() or type(e).__name__
        if isinstance(e, KeyError) and e.args:
            msg = str(e.args[0])
        _say("ERROR", json.dumps(f"{type(e).__name__}: {msg}"))
        return 2
    _say("DONE", path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
