"""The ``gpuviz`` command.

    gpuviz                         open the app on its embedded default (no GPU, no file needed)
    gpuviz open FILE               open a saved trace or recording, or run a program (FILE.py) and open it
    gpuviz run SCRIPT.py [ARGS]    run a Numba CUDA program with every launch captured, save a recording
    gpuviz kernels                 list the bundled kernels
    gpuviz doctor                  check what gpuviz needs here, in plain words, with the fix for each problem
    gpuviz capture KERNEL ...      capture a bundled kernel to a trace file
    gpuviz info FILE [--json]      what a trace holds
    gpuviz snapshot FILE ...       render a view (or the window) to PNG, headless
    gpuviz lesson FILE|NAME        play a lesson (a file, or a shipped one by name; --list shows them)
    gpuviz export FILE ...         PNG / SVG of a view, GIF / MP4 of a frame range, Perfetto JSON timeline, HTML page
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import cliargs as ca


def select_backend_before_numba(backend: str) -> None:
    """numba picks its simulator when numba.cuda is first imported: decide before any kernel module loads."""
    if backend == "sim":
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    elif backend == "gpu":
        os.environ.pop("NUMBA_ENABLE_CUDASIM", None)


def cmd_kernels(args) -> int:
    from gpuviz.catalog import all_kernels

    specs = all_kernels()
    width = max(len(n) for n in specs)
    for name, spec in specs.items():
        print(f"{name:<{width}}  {spec.description}")
    return 0


def cmd_doctor(args) -> int:
    from gpuviz.doctor import main as doctor

    return doctor()


def input_bytes(spec, size: int) -> int:
    """The bytes a bundled kernel's inputs take at ``size``, from two small sizes (never allocating them)."""
    import numpy as np

    def nbytes(s):
        return sum(int(getattr(a, "nbytes", 0)) for a in spec.make_args(s, np.random.default_rng(0)))

    s1 = max(2, min(int(spec.small_size), 64))
    b1, b2 = nbytes(s1), nbytes(2 * s1)
    if size <= 2 * s1 or b1 <= 0 or b2 <= b1:
        return max(b1, b2)
    k = np.log2(b2 / b1)  # 1 for vectors, 2 for square matrices
    return int(b1 * (size / s1) ** k)


def capture_bundled(name: str, size: int | None, block, backend: str, record_blocks=None, seed: int = 0,
                    watchdog=None, progress=None, max_events: int = 50_000_000):
    """Capture a bundled kernel; returns (trace, spec, args after the launch). What the launch shape and the
    inputs' size can refuse is refused before the inputs are allocated."""
    import numpy as np

    import gpuviz
    from gpuviz.capture.errors import TraceTooLarge
    from gpuviz.capture.limits import available_memory, check_before_inputs
    from gpuviz.capture.backends.cpu.watchdog import DEFAULT_STALL_S
    from gpuviz.catalog import get_kernel

    spec = get_kernel(name)
    size = spec.default_size if size is None else size
    grid, block = spec.launch(size, tuple(block) if block else spec.default_block)
    if record_blocks:
        n_blocks = int(np.prod(grid))
        outside = [b for b in record_blocks if b >= n_blocks]
        if outside:
            raise ca.ArgumentRangeError(f"argument --blocks: block {outside[0]} is not in the launch: it has "
                                        f"{n_blocks:,} block(s), ids 0..{n_blocks - 1}")
    check_before_inputs(grid, block, backend=backend, max_events=max_events, record_blocks=record_blocks,
                        kernel=spec.name)
    need, have = input_bytes(spec, size), available_memory()
    if have is not None and need > have // 2:
        raise TraceTooLarge(f"{spec.name} at size {size:,}: its inputs would take {need / 2**30:.1f} GiB, more than half "
                            f"of the memory available here ({have / 2**30:.1f} GiB). Capture a smaller problem (--size).")
    args = spec.make_args(size, np.random.default_rng(seed))
    trace = gpuviz.capture(spec.kernel, grid, block, *args, backend=backend, record_blocks=record_blocks,
                           max_events=max_events, **({"watchdog": DEFAULT_STALL_S if watchdog is None else watchdog,
                                                      "progress": progress} if backend == "cpu" else
                                                     {"watchdog": DEFAULT_STALL_S if watchdog is None else watchdog}
                                                     if backend == "sim" else {}))
    trace.launch.meta.setdefault("bundled_kernel", {"name": name, "size": size, "size_label": spec.size_label})
    return trace, spec, args


def output_problem(path) -> str:
    """Why ``path`` cannot take an output file ('' when it can): asked before the work, not after
    (:func:`gpuviz.model.safewrite.check_output_path`: a regular file or a new one, in a folder where a
    file can be created)."""
    try:
        ca.output_file("" if path is None else str(path))
    except argparse.ArgumentTypeError as exc:
        return str(exc)
    return ""


def _progress_printer(prefix: str):
    """Prints a running launch's progress on stderr: in place on a terminal, else every few seconds."""
    import time

    tty = sys.stderr.isatty()
    state = {"last": 0.0, "shown": False}

    def show(info: dict) -> None:
        from gpuviz.runner.script import progress_text

        if float(info.get("seconds", 0)) < 2:
            return
        now = time.monotonic()
        if not tty and now - state["last"] < 5:
            return
        state["last"] = now
        info = {"number": info.get("number", 1), "kernel": info.get("kernel", info.get("label", "")), **info}
        text = f"{prefix}: {progress_text(info)}"
        if tty:
            sys.stderr.write("\r\033[K" + text)
            state["shown"] = True
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def done() -> None:
        if state["shown"]:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            state["shown"] = False

    show.done = done
    return show


def cmd_capture(args) -> int:
    select_backend_before_numba(args.backend)
    from gpuviz.capture.errors import CaptureError

    problem = output_problem(args.output)
    if problem:
        print(f"gpuviz capture: -o: {problem}", file=sys.stderr)
        return 2
    progress = _progress_printer("gpuviz capture")
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
    from gpuviz.model.tracefile import TraceFileError

    try:
        trace.save(args.output)
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


def trace_info(trace) -> dict:
    info = trace.info()
    try:
        from gpuviz.model import analysis
    except ImportError:  # the analyses are optional for `info`
        return info
    info.update(analysis.summary(trace))
    return info


def launch_info(la, trace) -> dict:
    """One launch of a recording for ``gpuviz info --json``: what the runner knew of it (number, status, why it
    was not traced or not saved) and, when its trace is in the file, everything :func:`trace_info` says."""
    entry = trace_info(trace) if trace is not None else {
        "kernel": la.kernel, "backend": la.backend, "grid": list(la.grid), "block": list(la.block),
        "n_events": la.events}
    entry.update({"number": la.number, "status": la.status, "in_file": trace is not None,
                  "saved": la.category != "unsaved", "reason": la.reason, "save_error": la.save_error,
                  "kernel_call": la.kernel_call})
    return entry


def _print_launch(la, info: dict | None, indent: str = "") -> None:
    dims = f"grid {info['grid'] if info else list(la.grid)} x block {info['block'] if info else list(la.block)}"
    state = {"saved": "", "untraced": "  NOT TRACED", "unsaved": "  NOT SAVED", "stopped": "  STOPPED THE PROGRAM"}
    print(f"{indent}launch {la.number}: {la.kernel}  {dims}{state[la.category]}")
    inner = indent + "  "
    if la.save_error:
        print(f"{inner}not in the file: {la.save_error}")
    if la.reason:
        print(f"{inner}{'failed' if la.status == 'failed' else 'not traced'}: {la.reason.strip().splitlines()[0]}")
    if info is None or not info.get("n_events"):
        return
    print(f"{inner}{info['backend']}: {info.get('device', '')}, {info['threads']:,} threads, {info['n_events']:,} events")
    for kind, n in info["events"].items():
        if n:
            print(f"{inner}{kind:<13} {n:>12,}")
    print(f"{inner}barriers per thread: {info['barriers_per_thread']}   dropped: {info['dropped']}")
    for key in ("sectors_per_request", "bank_conflicts", "races"):
        if key in info:
            print(f"{inner}{key}: {info[key]}")
    for w in info["warnings"]:
        print(f"{inner}warning: {w}")


def _print_trace(info: dict) -> None:
    """What `gpuviz info` printed for a one-trace file before recordings were listed (kept as it was)."""
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


def load_for_launch(path, number: int | None, what: str):
    """(recording, trace to show) of a file; ``number``: that launch's trace (from 1, as ``gpuviz run`` and
    ``gpuviz info`` number them), else the first launch with events. A launch the file does not hold, or one
    without a trace to show, is a ValueError that says why (and how many launches the file holds)."""
    from gpuviz.model.recording import load_recording

    rec = load_recording(path)
    if number is not None:
        try:
            return rec, rec.trace_of(number)
        except ValueError as exc:
            raise ValueError(f"{path}: --launch {number}: {exc}") from None
    shown = next((tr for tr in rec if len(tr)), None)
    return rec, shown if shown is not None else rec[0]


def cmd_info(args) -> int:
    from pathlib import Path

    from gpuviz.model.recording import Recording, holds_recording, load_file_contents
    from gpuviz.model.tracefile import TraceFileError

    try:
        traces, manifest = load_file_contents(args.file)
        rec = Recording.from_file(traces, manifest, str(args.file))
    except (TraceFileError, OSError) as exc:
        print(f"gpuviz info: {exc}", file=sys.stderr)
        return 1
    pairs = [(la, rec[la.trace] if la.trace is not None else None) for la in rec.launches]
    if args.launch is not None:
        chosen = [(la, tr) for la, tr in pairs if la.number == args.launch]
        if not chosen:
            print(f"gpuviz info: {args.file}: --launch {args.launch}: no such launch: {rec.describe_numbers()}",
                  file=sys.stderr)
            return 2
        la, tr = chosen[0]
        info = launch_info(la, tr)
        if args.json:
            print(json.dumps(info, indent=2, default=str))
        else:
            _print_launch(la, info if tr is not None else None)
        return 0
    infos = [launch_info(la, tr) for la, tr in pairs]
    is_recording = holds_recording(traces, manifest)
    if args.json:
        out = dict(infos[0]) if len(traces) == 1 else {}  # a one-trace file keeps its top-level keys
        for key in ("number", "status", "in_file", "saved", "reason", "save_error", "kernel_call"):
            out.pop(key, None)
        if is_recording:
            out["recording"] = {"script": rec.script, "argv": rec.argv, "status": rec.status, "backend": rec.backend,
                                "error": rec.error, "seconds": rec.seconds}
        out["summary"] = rec.summary_line()
        out["counts"] = rec.counts()
        out["launches"] = infos
        print(json.dumps(out, indent=2, default=str))
        return 0
    if not is_recording:
        _print_trace(infos[0])
        return 0
    head = Path(rec.script).name if rec.script else Path(args.file).name
    status = f", {rec.status}" if rec.status else ""
    print(f"{head} ({rec.backend or 'recording'}{status}): {rec.summary_line()}")
    if rec.error:
        print(f"  {rec.error.splitlines()[0]}")
    for (la, tr), info in zip(pairs, infos):
        _print_launch(la, info if tr is not None else None, indent="  ")
    return 0


def cmd_open(args) -> int:
    from gpuviz.app import open_window, run_app
    from gpuviz.ui.views.launches import needs_launch_list

    if needs_launch_list(args.file):  # a program to run, or a recording of several launches
        return open_window(args.file, present=args.present)
    return run_app(trace_path=args.file, present=args.present)


#: the options of `gpuviz run` that take a value; every other token after the script is the script's
RUN_VALUE_OPTIONS = ("--backend", "--kernel", "--launch", "-o", "--output", "--timeout", "--max-events", "--blocks",
                     "--watchdog")
RUN_FLAG_OPTIONS = ("-h", "--help")
RUN_SWITCHES = ("--run-untraced",)  # gpuviz's own wherever they come, like the options that take a value


def split_run_argv(tokens: list[str]) -> tuple[list[str], list[str]]:
    """Tokens after ``run`` -> (gpuviz's options plus the script path, the script's own arguments).

    gpuviz's options may come before or after the script and its arguments; everything after ``--``
    goes to the script untouched (for a script whose own options share a name with gpuviz's)."""
    ours, theirs = [], []
    script_seen = False
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        name = tok.split("=", 1)[0]
        if tok == "--":
            theirs.extend(tokens[i + 1:])
            break
        if name in RUN_VALUE_OPTIONS:
            ours.append(tok)
            if "=" not in tok and i + 1 < len(tokens):
                ours.append(tokens[i + 1])
                i += 1
        elif tok in RUN_SWITCHES:
            ours.append(tok)
        elif tok in RUN_FLAG_OPTIONS and not script_seen:
            ours.append(tok)
        elif not script_seen:
            ours.append(tok)
            script_seen = True
        else:
            theirs.append(tok)
        i += 1
    return ours, theirs


def _watchdog_seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds (0: no watchdog), not {text!r}") from None
    if not 0 <= v <= 86400:
        raise argparse.ArgumentTypeError(f"the watchdog takes 0 (off) to 86400 seconds, not {text}")
    return v


def cmd_run(args) -> int:
    from pathlib import Path

    from gpuviz.runner import procs
    from gpuviz.runner.script import RunInterrupted, run_script

    script = Path(args.script)
    if not script.is_file():
        print(f"gpuviz run: no such program: {script}" + (" (a folder)" if script.is_dir() else ""), file=sys.stderr)
        return 2
    output = Path(args.output) if args.output is not None else Path(script.stem + ".gpuviz")
    problem = output_problem(args.output if args.output is not None else output)
    if problem:
        print(f"gpuviz run: -o: {problem}", file=sys.stderr)
        return 2
    procs.become_subreaper()  # what the program orphans, even past a killed worker, comes back to us to end
    ours_before = procs.descendants(os.getpid())  # a caller's own children (main() called in-process) are spared
    progress = _progress_printer("gpuviz run")
    try:
        result = run_script(script, args.script_args, backend=args.backend, kernel=args.kernel, launches=args.launch,
                            record_blocks=args.blocks, max_events=args.max_events, timeout=args.timeout,
                            watchdog=args.watchdog, capture_output=False, output=output, on_progress=progress,
                            run_untraced=args.run_untraced)
    except (KeyboardInterrupt, RunInterrupted) as exc:
        progress.done()
        how = "cancelled" if isinstance(exc, KeyboardInterrupt) else str(exc)
        saved = getattr(exc, "saved", 0)
        kept = f"; {saved} finished launch(es) are in {output}" if saved else ""
        print(f"\ngpuviz run: {how}; the program and every process it started were stopped{kept}", file=sys.stderr)
        return 130 if isinstance(exc, KeyboardInterrupt) else 128 + exc.signum
    finally:
        procs.reap(procs.end_tree(os.getpid(), include_self=False, spare=ours_before))
    progress.done()
    sys.stdout.flush()
    # the counts are of what the file holds, as read back after its last save
    held = result.saved
    if held is not None:
        counted = held.summary_line()
    else:
        counted = f"{len(result.launches)} launch(es), none saved"
    print(f"gpuviz: {script.name}: {counted} ({result.backend}), {result.seconds:.1f} s")
    for line in result.summary_lines():
        print(f"  {line}")
    if result.error:
        print(f"gpuviz run: {result.message}", file=sys.stderr)
    for number, problem in sorted(result.save_failures.items()):
        kernel = next((r.kernel for r in result.launches if r.number == number), "?")
        print(f"gpuviz run: launch {number} ({kernel}) is not in {output}: {problem}", file=sys.stderr)
    not_saved = next((note for note in result.notices if note.startswith("could not save the recording")), None)
    for note in result.notices:
        if "gpuviz's event log" in note:  # found by this process, not printed by the worker
            print(f"gpuviz run: {note}", file=sys.stderr)
    if not_saved:
        print(f"gpuviz run: {not_saved}", file=sys.stderr)
        return 1
    if held is not None:
        print(f"recording -> {output}   (open it with: gpuviz open {output})")
    else:
        print("gpuviz: the program launched no kernel: nothing to save")
    if result.save_failures:
        return 1  # the recording lacks launches the program made: not a success, whatever the program did
    return {"ok": 0, "exited": result.exit_code or 1, "timeout": 124}.get(result.status, 1)


def cmd_snapshot(args) -> int:
    from gpuviz.app import snapshot
    from gpuviz.export.framerange import window_frame
    from gpuviz.model.tracefile import TraceFileError

    from gpuviz.export.verify import check_export

    source = args.file
    if not os.path.exists(source):
        from gpuviz.catalog import all_kernels

        if source not in all_kernels():
            print(f"gpuviz snapshot: {source!r} is neither a trace file nor a bundled kernel (see `gpuviz kernels`)",
                  file=sys.stderr)
            return 2
        if args.launch is not None:
            print(f"gpuviz snapshot: --launch picks a launch of a recording file; {source!r} is a bundled kernel",
                  file=sys.stderr)
            return 2
        source, _spec, _ = capture_bundled(source, None, None, "cpu")
    else:
        try:
            _rec, source = load_for_launch(source, args.launch, "snapshot")
        except ValueError as exc:  # TraceFileError too: a damaged file, or a launch it does not hold
            print(f"gpuviz snapshot: {exc}", file=sys.stderr)
            return 2 if args.launch is not None and not isinstance(exc, TraceFileError) else 1
        except OSError as exc:
            print(f"gpuviz snapshot: {exc}", file=sys.stderr)
            return 1
    from gpuviz.model.safewrite import replace_atomically

    try:
        with replace_atomically(args.output, "snapshot") as tmp:
            snapshot(source, frame=window_frame(args.frame), view=args.view, size=args.size, out_png=tmp)
            # read back before it is moved into place (its size is reported: a window has a least size of its own)
            held = check_export(tmp, "png", name=args.output)
    except (TraceFileError, ValueError, KeyError, OSError) as exc:
        print(f"gpuviz snapshot: {exc.args[0] if isinstance(exc, KeyError) and exc.args else exc}", file=sys.stderr)
        return 1
    print(f"{args.output} ({held})")
    return 0


def _trace_or_kernel(source: str, what: str, launch: int | None = None):
    """A trace file (``launch``: that launch of a recording, else its first with events), or a bundled kernel
    captured now on the CPU executor (its small size)."""
    if os.path.exists(source):
        return load_for_launch(source, launch, what)[1]
    from gpuviz.catalog import all_kernels

    specs = all_kernels()
    if source not in specs:
        raise FileNotFoundError(f"{source!r} is neither a trace file nor a bundled kernel (see `gpuviz kernels`)")
    if launch is not None:
        raise ValueError(f"--launch picks a launch of a recording file; {source!r} is a bundled kernel")
    trace, _spec, _ = capture_bundled(source, specs[source].small_size, None, "cpu")
    return trace


def _export_html(args) -> int:
    """``--format html``: one self-contained page of a trace, a bundled kernel or a lesson."""
    from gpuviz.export.framerange import window_frames
    from gpuviz.export.html import export_html
    from gpuviz.lessons import LessonError, builtin_lessons, load_lesson
    from gpuviz.model.tracefile import TraceFileError

    src = args.file
    try:
        is_lesson = src.endswith((".toml", ".json")) or (not os.path.exists(src) and src in builtin_lessons())
        if is_lesson and args.launch is not None:
            raise ValueError("--launch picks a launch of a recording file; a lesson has scenes of its own")
        source = load_lesson(src) if is_lesson else _trace_or_kernel(src, "export", args.launch)
        from pathlib import Path

        from gpuviz.export.verify import check_export
        from gpuviz.model.safewrite import replace_atomically

        with replace_atomically(args.output, "page") as tmp:  # a regular file or a new one, complete or not at all
            export_html(source, tmp, frames=window_frames(args.frames), theme=args.theme,
                        max_bytes=int(args.max_mb * 1e6))
            held = check_export(tmp, "html", name=args.output)  # read back before it is moved into place
        out = Path(args.output)
    except (FileNotFoundError, TraceFileError, LessonError, ValueError, KeyError, OSError) as exc:
        print(f"gpuviz export: {exc.args[0] if isinstance(exc, KeyError) and exc.args else exc}", file=sys.stderr)
        return 1
    print(f"{out} ({out.stat().st_size / 1e6:.2f} MB: {held})")
    return 0


def cmd_export(args) -> int:
    from gpuviz.export.framerange import window_frame, window_frames
    from gpuviz.ui.film import export
    from gpuviz.model.tracefile import TraceFileError

    if args.format == "html":
        return _export_html(args)
    try:
        trace = _trace_or_kernel(args.file, "export", args.launch)
        timing_sets = []
        for path in args.timings or []:
            from gpuviz.model.timings import TimingSet

            timing_sets.append(TimingSet.load(path))
        from gpuviz.model.safewrite import replace_atomically

        from gpuviz.export.verify import check_export

        with replace_atomically(args.output, "export") as tmp:
            export(trace, tmp, args.format, frames=window_frames(args.frames), frame=window_frame(args.frame),
                   view=args.view, size=args.size, theme=args.theme, scale=args.scale, fps=args.fps,
                   caption=False if args.no_caption else None, progress=not args.quiet, timing_sets=timing_sets,
                   name=str(args.output))
            # read back before it is moved into place: what is reported written is there, whole
            held = check_export(tmp, args.format, size=None if args.format == "perfetto" else args.size,
                                n_frames=_film_frames(trace, args.frames) if args.format in ("gif", "mp4") else None,
                                name=args.output)
        out = args.output
    except (FileNotFoundError, TraceFileError, ValueError, KeyError, OSError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"gpuviz export: {msg}", file=sys.stderr)
        return 1
    print(f"{out} ({held})")
    return 0


def _film_frames(trace, frames_text) -> int:
    """How many frames a film of ``--frames`` holds (what export_film draws: frames A..B of the trace)."""
    from gpuviz.export.framerange import parse_frames, window_frames
    from gpuviz.model.frames import Frames

    start, stop = parse_frames(window_frames(frames_text), Frames(trace).n_frames)
    return stop - start


def cmd_lesson(args) -> int:
    from gpuviz.lessons import LessonError, LessonPlayer, builtin_lessons, load_lesson

    if args.list:
        for name, path in builtin_lessons().items():
            try:
                title = load_lesson(path).title
            except LessonError as exc:
                title = f"(broken: {exc})"
            print(f"{name:<20} {title}")
        return 0
    if not args.lesson:
        print("gpuviz lesson: name a lesson file or a shipped lesson (gpuviz lesson --list)", file=sys.stderr)
        return 2
    try:
        lesson = load_lesson(args.lesson)
        if args.check or args.print:
            player = LessonPlayer(lesson)

            def show(slide):
                if args.print:
                    print(f"[{slide.progress}] frame {slide.frame + 1}")  # numbered as the window numbers them
                    if slide.beat_index == 0 and slide.notes:
                        print(f"  notes: {slide.notes}")
                    if slide.question:
                        print(f"  predict: {slide.question}" + (f"\n  answer: {slide.answer}" if slide.answer else ""))
                    if slide.caption:
                        print(f"  {slide.caption}")

            slides = player.play_all(show)
            if args.check:
                print(f"{lesson.name}: {len(lesson.scenes)} scenes, {len(slides)} steps, all stops and answers resolve")
            return 0
    except LessonError as exc:
        print(f"gpuviz lesson: {exc}", file=sys.stderr)
        return 1
    return _play_lesson_window(lesson, present=args.present, theme=args.theme)


def _play_lesson_window(lesson, present: bool, theme: str) -> int:
    from PySide6.QtWidgets import QApplication, QMessageBox

    from gpuviz.lessons import LessonError
    from gpuviz.ui.lesson_player import play_lesson
    from gpuviz.style.theme import get_theme
    from gpuviz.ui.window import MainWindow

    from gpuviz.app import fit_to_screen, install_error_reporting

    install_error_reporting()
    if QApplication.instance() is None:
        from gpuviz.qt_platform import ensure_platform

        ensure_platform()  # a platform plugin that cannot load is a plain message with its fix, not Qt's abort
    app = QApplication.instance() or QApplication(sys.argv[:1])

    window = MainWindow(theme=get_theme(theme))
    fit_to_screen(window)  # a 1280x720 projector gets a window that fits it
    window.show()
    try:
        play_lesson(window, lesson, present=present, theme=theme)
    except LessonError as exc:
        from PySide6.QtCore import Qt

        box = QMessageBox(QMessageBox.Icon.Critical, "gpuviz lesson", str(exc), parent=window)
        box.setTextFormat(Qt.TextFormat.PlainText)  # the message quotes the lesson file: never rich text
        box.exec()
        print(f"gpuviz lesson: {exc}", file=sys.stderr)
        return 1
    return app.exec()


def build_parser() -> ca.Parser:
    p = ca.Parser(prog="gpuviz", description="See what a GPU really does when it runs a kernel.")
    p.add_argument("--present", action="store_true", help="presenter mode: full screen, scaled for a projector")
    p.add_argument("--share", action="store_true", help="share with the class: students' browsers follow the window "
                   "(a link and a QR code; this machine only unless --lan)")
    p.add_argument("--lan", action="store_true", help="with --share: students join over the LAN")
    p.add_argument("--version", action="version", version=_version())
    sub = p.add_subparsers(dest="command")

    s = sub.add_parser("open", help="open a saved trace or recording in the app, or run a program (.py) from it")
    s.add_argument("file", type=ca.input_file)
    s.set_defaults(func=cmd_open)

    s = sub.add_parser("run", help="run a Numba CUDA program with its kernel launches captured",
                       description="Run an unmodified Python program that launches @cuda.jit kernels, in a worker "
                       "process; capture its launches and save them as one recording. Arguments after the script "
                       "are the script's own (put them after -- if they share a name with an option below).")
    s.add_argument("script", type=ca.input_file, help="the program (a .py file)")
    s.add_argument("--backend", choices=("cpu", "sim", "gpu"), default="cpu",
                   help="cpu: gpuviz's CPU executor (default); sim: numba's simulator; gpu: a real NVIDIA GPU")
    s.add_argument("--kernel", default=None, help="trace only the launches of this kernel (the others still run)")
    s.add_argument("--launch", type=ca.launch_numbers, default=None,
                   help="trace only launch K (or K1,K2); counted per kernel with --kernel, else over the program")
    s.add_argument("--blocks", type=ca.block_ids, default=None,
                   help="record only these linear block ids (comma-separated); the others still run")
    s.add_argument("-o", "--output", type=ca.output_file, default=None,
                   help="recording to write (default: SCRIPT.gpuviz here)")
    s.add_argument("--timeout", type=ca.seconds, default=300.0, help="stop the program after this many seconds (300)")
    s.add_argument("--max-events", type=ca.int_range(1, 1 << 40, "--max-events"), default=50_000_000,
                   help="most events the whole recording may hold (50,000,000)")
    s.add_argument("--watchdog", type=_watchdog_seconds, default=10.0, metavar="SECONDS",
                   help="stop a launch that makes no progress toward its end for this long (10; 0: never)")
    s.add_argument("--run-untraced", action="store_true",
                   help="run a launch too large to trace untraced and let the program go on (default: the program "
                        "stops at it, saying the estimate, the limit and the options)")
    s.set_defaults(func=cmd_run, script_args=[])

    s = sub.add_parser("kernels", help="list the bundled kernels")
    s.set_defaults(func=cmd_kernels)

    s = sub.add_parser("doctor", help="check what gpuviz needs here (Qt, display, fonts, numba, GPU, folders)")
    s.set_defaults(func=cmd_doctor)

    s = sub.add_parser("capture", help="capture a bundled kernel to a trace file")
    s.add_argument("kernel", help="a bundled kernel (see `gpuviz kernels`)")
    s.add_argument("--size", type=ca.int_range(1, ca.MAX_INT, "the size"), default=None,
                   help="problem size: elements, or the side of a square matrix/image")
    s.add_argument("--block", type=ca.block_shape, default=None, help="block shape, e.g. 256 or 16x16")
    s.add_argument("--backend", choices=("cpu", "sim", "gpu"), default="cpu")
    s.add_argument("--blocks", type=ca.block_ids, default=None,
                   help="record only these linear block ids (comma-separated); the others still run")
    s.add_argument("-o", "--output", type=ca.output_file, required=True, help="trace file to write (.gpuviz)")
    s.add_argument("--watchdog", type=_watchdog_seconds, default=10.0, metavar="SECONDS",
                   help="stop a launch that makes no progress toward its end for this long (10; 0: never)")
    s.set_defaults(func=cmd_capture)

    s = sub.add_parser("info", help="summarise a trace file or a recording (every launch)")
    s.add_argument("file", type=ca.input_file)
    s.add_argument("--json", action="store_true", help="one JSON object (its 'launches' list: one entry per launch)")
    s.add_argument("--launch", type=ca.int_range(1, ca.MAX_INT, "--launch"), default=None, metavar="N",
                   help="describe launch N only (numbered from 1, as gpuviz run numbers them)")
    s.set_defaults(func=cmd_info)

    s = sub.add_parser("snapshot", help="render a view or the whole window to PNG, headless")
    s.add_argument("file", type=ca.file_or_name, help="a trace file, or a bundled kernel name")
    s.add_argument("--frame", type=ca.frame_number, default=None,
                   help="frame number as the window shows it (1 = first, -1 = last)")
    s.add_argument("--view", default=None, help="view id (default: the whole window)")
    s.add_argument("--size", type=ca.image_size, default=(1920, 1080), help="WIDTHxHEIGHT, 64..8192 px each")
    s.add_argument("--launch", type=ca.int_range(1, ca.MAX_INT, "--launch"), default=None, metavar="N",
                   help="launch N of a recording (numbered from 1, as gpuviz run and gpuviz info number them)")
    s.add_argument("-o", "--output", type=ca.output_file, required=True)
    s.set_defaults(func=cmd_snapshot)

    s = sub.add_parser("lesson", help="play a lesson: a lesson file, or a shipped lesson by name")
    s.add_argument("lesson", nargs="?", type=ca.file_or_name, help="a .toml/.json lesson file or a shipped lesson's name")
    s.add_argument("--list", action="store_true", help="list the shipped lessons")
    s.add_argument("--check", action="store_true", help="check the lesson (captures every scene), print a summary")
    s.add_argument("--print", action="store_true", help="print every step (notes, questions, answers, captions)")
    s.add_argument("--present", action="store_true", help="presenter mode: full screen, projector sizes, clicker")
    s.add_argument("--theme", choices=("light", "dark"), default="dark")
    s.set_defaults(func=cmd_lesson)

    s = sub.add_parser("export", help="export a view or the window (PNG, SVG), a frame range (GIF, MP4), the "
                                      "timeline (Perfetto / Chrome trace JSON)")
    s.add_argument("file", type=ca.file_or_name, help="a trace file, or a bundled kernel name (captured now at its "
                   "small size); for html also a lesson (a shipped lesson's name or a lesson file)")
    s.add_argument("--format", required=True, choices=("png", "svg", "gif", "mp4", "perfetto", "html"))
    s.add_argument("--frames", default=None, help="frames A:B as the window numbers them, both included (1:120, "
                                                  ":50, -30:), for gif, mp4, perfetto and html")
    s.add_argument("--max-mb", type=ca.float_range(0.01, 1000.0, "--max-mb"), default=3.0,
                   help="html: refuse a page over this many MB (3)")
    s.add_argument("--frame", type=ca.frame_number, default=1, help="the frame for png and svg, as the window numbers "
                                                                  "it (1 = first, -1 = last)")
    s.add_argument("--view", default=None, help="view id (default: the whole window)")
    s.add_argument("--size", type=ca.image_size, default=(1280, 720), help="WIDTHxHEIGHT, 64..8192 px each")
    s.add_argument("--theme", choices=("light", "dark"), default="light")
    s.add_argument("--scale", type=ca.float_range(0.25, 8.0, "the text scale"), default=1.0, help="text scale (0.25..8)")
    s.add_argument("--fps", type=ca.float_range(0.1, 120.0, "frames per second"), default=8.0,
                   help="frames per second of a gif or mp4 (0.1..120)")
    s.add_argument("--no-caption", action="store_true", help="no narration band on gif/mp4 frames")
    s.add_argument("--timings", action="append", type=ca.input_file, help="a timings JSON file to add to a perfetto export")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.add_argument("--launch", type=ca.int_range(1, ca.MAX_INT, "--launch"), default=None, metavar="N",
                   help="launch N of a recording (numbered from 1, as gpuviz run and gpuviz info number them)")
    s.add_argument("-o", "--output", type=ca.output_file, required=True)
    s.set_defaults(func=cmd_export)
    return p


def _version() -> str:
    from gpuviz import __version__

    return f"gpuviz {__version__}"


def main(argv=None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    first = next((i for i, t in enumerate(argv) if t not in ("--present", "--share", "--lan")), None)
    try:  # a bad argument is one line and status 2 (argparse exits; the status is returned instead)
        if first is not None and argv[first] == "run":
            ours, script_args = split_run_argv(argv[first + 1:])
            args = parser.parse_args(argv[: first + 1] + ours)
            args.script_args = script_args
        else:
            args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    from gpuviz.qt_platform import EXIT_STATUS, PlatformUnavailable

    try:
        if args.command is None:
            from gpuviz.app import run_app

            return run_app(trace_path=None, present=args.present, share="lan" if args.lan else args.share)
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # here, where a reader gone away is caught, rather than at the interpreter's exit
        return status
    except PlatformUnavailable as exc:  # the window cannot open here: why, and what to run (gpuviz/qt_platform.py)
        print(exc, file=sys.stderr)
        return EXIT_STATUS
    except BrokenPipeError:
        # the reader went away (gpuviz info REC | head): nothing more to say, and no traceback. stdout goes to
        # /dev/null so that the interpreter's own flush at exit does not raise again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports a command cut off by its pipe


if __name__ == "__main__":
    sys.exit(main())
