"""``gpuviz run SCRIPT.py [ARGS]``: a user's program run in a worker with every launch captured, its recording
saved; the exit status says how the program ended."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..runner import procs
from ..runner.script import RunInterrupted, run_script
from .common import output_problem, progress_printer


def _report(result, script: Path, output: Path) -> int:
    """The run's lines (what the file holds, per launch, problems on stderr) and its exit status."""
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


def main(args) -> int:
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
    progress = progress_printer("gpuviz run")
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
    return _report(result, script, output)
