"""The ``gpuviz`` command.

    gpuviz                         open the app on its embedded default (no GPU, no file needed)
    gpuviz open FILE               open a saved trace
    gpuviz kernels                 list the bundled kernels
    gpuviz capture KERNEL ...      capture a bundled kernel to a trace file
    gpuviz info FILE [--json]      what a trace holds
    gpuviz snapshot FILE ...       render a view (or the window) to PNG, headless
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def _dims(text: str) -> tuple[int, ...]:
    try:
        dims = tuple(int(p) for p in text.lower().replace(",", "x").split("x") if p)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected BX or BXxBY or BXxBYxBZ (e.g. 256 or 16x16), not {text!r}") from None
    if not 1 <= len(dims) <= 3:
        raise argparse.ArgumentTypeError(f"a block has 1 to 3 dimensions, not {len(dims)}")
    return dims


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(p) for p in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT (e.g. 1920x1080), not {text!r}") from None
    return w, h


def select_backend_before_numba(backend: str) -> None:
    """numba picks its simulator when numba.cuda is first imported: decide before any kernel module loads."""
    if backend == "sim":
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    elif backend == "gpu":
        os.environ.pop("NUMBA_ENABLE_CUDASIM", None)


def cmd_kernels(args) -> int:
    from kernels import all_kernels

    specs = all_kernels()
    width = max(len(n) for n in specs)
    for name, spec in specs.items():
        print(f"{name:<{width}}  {spec.description}")
    return 0


def capture_bundled(name: str, size: int | None, block, backend: str, record_blocks=None, seed: int = 0):
    """Capture a bundled kernel; returns (trace, spec, args after the launch)."""
    import numpy as np

    import gpuviz
    from kernels import get_kernel

    spec = get_kernel(name)
    size = spec.default_size if size is None else size
    args = spec.make_args(size, np.random.default_rng(seed))
    grid, block = spec.launch(size, tuple(block) if block else spec.default_block)
    trace = gpuviz.capture(spec.kernel, grid, block, *args, backend=backend, record_blocks=record_blocks)
    trace.launch.meta.setdefault("bundled_kernel", {"name": name, "size": size, "size_label": spec.size_label})
    return trace, spec, args


def cmd_capture(args) -> int:
    select_backend_before_numba(args.backend)
    from gpuviz.capture.errors import CaptureError

    try:
        trace, _spec, _ = capture_bundled(args.kernel, args.size, args.block, args.backend, args.blocks)
    except KeyError as exc:
        print(f"gpuviz capture: {exc.args[0]}", file=sys.stderr)
        return 2
    except (CaptureError, ValueError) as exc:
        print(f"gpuviz capture: {exc}", file=sys.stderr)
        return 1
    trace.save(args.output)
    counts = trace.counts_by_kind()
    print(
        f"{trace.launch.kernel_name}: grid {trace.launch.grid} x block {trace.launch.block} on {args.backend}: "
        f"{len(trace):,} events ({counts['global_load']:,} global loads, {counts['global_store']:,} global stores, "
        f"{counts['shared_load']:,} shared loads, {counts['barrier']:,} barriers) -> {args.output}"
    )
    for w in trace.launch.warnings:
        print(f"warning: {w}", file=sys.stderr)
    return 0


def trace_info(trace) -> dict:
    info = trace.info()
    try:
        from gpuviz.model import analysis
    except ImportError:  # the analyses are optional for `info`
        return info
    info.update(analysis.summary(trace))
    return info


def cmd_info(args) -> int:
    from gpuviz.model.tracefile import TraceFileError, load_traces

    try:
        traces = load_traces(args.file)
    except (TraceFileError, OSError) as exc:
        print(f"gpuviz info: {exc}", file=sys.stderr)
        return 1
    infos = [trace_info(t) for t in traces]
    if args.json:
        print(json.dumps(infos[0] if len(infos) == 1 else infos, indent=2, default=str))
        return 0
    for info in infos:
        print(f"{info['kernel']}  ({info['backend']}: {info.get('device', '')})")
        print(f"  grid {info['grid']} x block {info['block']} = {info['threads']:,} threads, {info['n_events']:,} events")
        for kind, n in info["events"].items():
            if n:
                print(f"  {kind:<13} {n:>12,}")
        print(f"  barriers per thread: {info['barriers_per_thread']}   dropped: {info['dropped']}")
        for key in ("sectors_per_request", "bank_conflicts", "races"):
            if key in info:
                print(f"  {key}: {info[key]}")
        for w in info["warnings"]:
            print(f"  warning: {w}")
    return 0


def cmd_open(args) -> int:
    from gpuviz.app import run_app

    return run_app(trace_path=args.file, present=args.present)


def cmd_snapshot(args) -> int:
    from gpuviz.app import snapshot
    from gpuviz.model.tracefile import TraceFileError

    source = args.file
    if not os.path.exists(source):
        from kernels import all_kernels

        if source not in all_kernels():
            print(f"gpuviz snapshot: {source!r} is neither a trace file nor a bundled kernel (see `gpuviz kernels`)",
                  file=sys.stderr)
            return 2
        source, _spec, _ = capture_bundled(source, None, None, "cpu")
    try:
        snapshot(source, frame=args.frame, view=args.view, size=args.size, out_png=args.output)
    except (TraceFileError, ValueError, KeyError) as exc:
        print(f"gpuviz snapshot: {exc}", file=sys.stderr)
        return 1
    print(args.output)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gpuviz", description="See what a GPU really does when it runs a kernel.")
    p.add_argument("--present", action="store_true", help="presenter mode: full screen, scaled for a projector")
    p.add_argument("--version", action="version", version=_version())
    sub = p.add_subparsers(dest="command")

    s = sub.add_parser("open", help="open a saved trace in the app")
    s.add_argument("file")
    s.set_defaults(func=cmd_open)

    s = sub.add_parser("kernels", help="list the bundled kernels")
    s.set_defaults(func=cmd_kernels)

    s = sub.add_parser("capture", help="capture a bundled kernel to a trace file")
    s.add_argument("kernel", help="a bundled kernel (see `gpuviz kernels`)")
    s.add_argument("--size", type=int, default=None, help="problem size: elements, or the side of a square matrix/image")
    s.add_argument("--block", type=_dims, default=None, help="block shape, e.g. 256 or 16x16")
    s.add_argument("--backend", choices=("cpu", "sim", "gpu"), default="cpu")
    s.add_argument("--blocks", type=lambda t: [int(x) for x in t.split(",")], default=None,
                   help="record only these linear block ids (comma-separated); the others still run")
    s.add_argument("-o", "--output", required=True, help="trace file to write (.gpuviz)")
    s.set_defaults(func=cmd_capture)

    s = sub.add_parser("info", help="summarise a trace file")
    s.add_argument("file")
    s.add_argument("--json", action="store_true", help="one JSON object")
    s.set_defaults(func=cmd_info)

    s = sub.add_parser("snapshot", help="render a view or the whole window to PNG, headless")
    s.add_argument("file", help="a trace file, or a bundled kernel name")
    s.add_argument("--frame", type=int, default=None)
    s.add_argument("--view", default=None, help="view id (default: the whole window)")
    s.add_argument("--size", type=_size, default=(1920, 1080))
    s.add_argument("-o", "--output", required=True)
    s.set_defaults(func=cmd_snapshot)
    return p


def _version() -> str:
    from gpuviz import __version__

    return f"gpuviz {__version__}"


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        from gpuviz.app import run_app

        return run_app(trace_path=None, present=args.present)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
