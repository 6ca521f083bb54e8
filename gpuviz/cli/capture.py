"""``gpuviz capture KERNEL``: a bundled kernel captured on a back end and saved as a trace file."""

from __future__ import annotations

import sys

from .. import cliargs as ca
from ..capture.errors import CaptureError
from ..model.tracefile import TraceFileError, save_traces
from .bundled import capture_bundled, select_backend_before_numba
from .common import output_problem, progress_printer


def main(args) -> int:
    select_backend_before_numba(args.backend)
    problem = output_problem(args.output)
    if problem:
        print(f"gpuviz capture: -o: {problem}", file=sys.stderr)
        return 2
    progress = progress_printer("gpuviz capture")
    try:
        trace, _spec, _ = capture_bundled(args.kernel, args.size, args.block, args.backend, args.blocks,
                                          watchdog=args.watchdog, progress=progress)
    except KeyError as exc:
        print(f"gpuviz capture: {exc.args[0]}", file=sys.stderr)
        return 2
    except ca.ArgumentRangeError as exc:
        return ca.fail("gpuviz capture", str(exc))
    except (CaptureError, ValueError) as exc:
        progress.done()
        print(f"gpuviz capture: {exc}", file=sys.stderr)
        return 1
    except MemoryError:
        progress.done()
        print(f"gpuviz capture: {args.kernel} at size {args.size} needs more memory than this machine has; "
              "try a smaller --size or --blocks", file=sys.stderr)
        return 1
    progress.done()
    try:
        save_traces(args.output, [trace])
    except (TraceFileError, OSError) as exc:
        print(f"gpuviz capture: {exc}", file=sys.stderr)
        return 1
    counts = trace.counts_by_kind()
    print(
        f"{trace.launch.kernel_name}: grid {trace.launch.grid} x block {trace.launch.block} on {args.backend}: "
        f"{len(trace):,} events ({counts['global_load']:,} global loads, {counts['global_store']:,} global stores, "
        f"{counts['shared_load']:,} shared loads, {counts['barrier']:,} barriers) -> {args.output}"
    )
    for w in trace.launch.warnings:
        print(f"warning: {w}", file=sys.stderr)
    return 0
