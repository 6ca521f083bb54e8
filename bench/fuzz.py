"""Fuzz bench: tens of thousands of mutated trace files and lessons, each in a worker under memory and time limits.

    nice -n 10 .venv/bin/python bench/fuzz.py --traces 25000 --lessons 1000 [--seed 1] [--snapshot-every 1]
        [--start 0] [--numbers 6100-6199,7042] [--out bench/results/fuzz.json]

Inputs are made from (seed, number) by ``tests/fuzzing.py`` (flipped bits, truncations, zip members removed,
renamed, duplicated or added under path-traversal names, other compression methods, wrong JSON types, huge
declared shapes and event counts, object and structured dtypes, zip bombs, mismatched field lengths, index
arrays and reports that lie, newer schemas, huge sources; lessons: flipped bits, truncations, wrong types,
format specs in placeholders, huge sizes and lists, traces that are devices). Prints the counts: tracebacks,
hangs, memory blow-ups, crashes; refused / loaded unchanged / loaded with different content, and for the
latter what ``gpuviz info`` and ``gpuviz snapshot`` did. Every failing input, and every damaged file that
loaded and then made ``gpuviz info`` or ``gpuviz snapshot`` end in a one-line error, is re-run alone and listed
with its number, what was done to it and the message, in the JSON's ``failures`` and in the .md
(``--numbers N`` or ``--start N --traces 1`` makes it again). Results go to ``--out`` (JSON) and next to it as .md.
Trace inputs numbered from 1,000,000,000 (``tests/fuzzing.py`` RANGE_BASE; ``--start 1000000000 --traces 2000``)
each set one index value the loader checks just outside the range the file format declares for it
(``gpuviz.model.fileformat``): one that loads is counted as "accepted", a failure.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import fuzzing  # noqa: E402

ROWS = [("traceback", "tracebacks (any exception but TraceFileError / LessonError)"), ("hang", "hangs"),
        ("accepted", "accepted a value outside the format's declared range (inputs numbered from 1,000,000,000)"),
        ("memory", "memory blow-ups (MemoryError under the address-space limit)"), ("crash", "crashes (worker died)"),
        ("refused", "refused with a message"), ("same", "loaded, same content as the seed"),
        ("different", "loaded with different content"), ("loaded", "loaded (and played)"),
        ("info:ok", "  gpuviz info ok"), ("info:message", "  gpuviz info: a one-line error"),
        ("info:traceback", "  gpuviz info traceback"), ("info:memory", "  gpuviz info memory blow-up"),
        ("snapshot:ok", "  gpuviz snapshot ok"), ("snapshot:message", "  gpuviz snapshot: a one-line error"),
        ("snapshot:traceback", "  gpuviz snapshot traceback"), ("snapshot:memory", "  gpuviz snapshot memory blow-up")]


def run(kind: str, n: int, args, folder: Path) -> fuzzing.Report:
    t0 = time.monotonic()

    def progress(report, done):
        print(f"  {kind}: {min(done, n):,}/{n:,} in {time.monotonic() - t0:,.0f} s: {dict(report.counts)}",
              flush=True)

    return fuzzing.fuzz(kind, args.seed, n, folder, start=args.start, batch=args.batch, mem=args.mem_gb << 30,
                        snapshot=args.snapshot_every if kind == "trace" else 0, per_input_s=args.per_input_s,
                        progress=progress, jobs=args.jobs, deadline=args.deadline,
                        numbers=args.numbers if kind == "trace" else None)


def input_numbers(text: str) -> list[int]:
    """``"6100-6199,7042"`` -> [6100, ..., 6199, 7042] (ranges include both ends); ``"@FILE"``: the same
    written in FILE (commas or newlines between)."""
    if text.startswith("@"):
        text = Path(text[1:]).read_text(encoding="utf-8").replace("\n", ",")
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        a, b = int(lo), int(hi) if hi else int(lo)
        if b < a:
            raise argparse.ArgumentTypeError(f"--numbers: {part!r} ends before it starts")
        out.extend(range(a, b + 1))
    if not out:
        raise argparse.ArgumentTypeError("--numbers: no input numbers")
    return out


def problem_entries(report: fuzzing.Report) -> list[dict]:
    """Every input that went wrong, named so that it can be made again: the confirmed failures and the
    damaged files whose info or snapshot ended in a one-line error ("alone": the record of its re-run alone)."""
    out = [dict(f, problems=fuzzing.problems(f) or [f.get("first_run", "?")]) for f in report.failures]
    out += [dict(m, problems=fuzzing.problems(m)) for m in report.messages]
    return sorted(out, key=lambda e: e["n"])


def problem_line(kind: str, e: dict) -> str:
    alone = e.get("alone")
    what = {k: e[k] for k in ("info", "snapshot", "info_error", "snapshot_error", "error") if k in e and e[k] != "ok"}
    line = f"- {kind} input {e['n']} ({', '.join(e['problems'])}): {e.get('what', '')}: {json.dumps(what)[:500]}"
    if alone is not None:
        again = {k: alone[k] for k in ("outcome", "info", "snapshot") if k in alone}
        line += f"; run again alone: {json.dumps(again)[:300]}"
    return line


def table(report: fuzzing.Report) -> list[str]:
    c = report.counts
    ran = len(report.records)
    lines = [f"| {report.kind} files | {ran:,} inputs run (of {report.n:,} asked), seed {report.seed}, "
             f"{report.seconds:,.0f} s |", "|---|---:|"]
    for key, label in ROWS:
        if key in c or key in ("traceback", "hang", "memory", "crash"):
            lines.append(f"| {label} | {c.get(key, 0):,} |")
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--traces", type=int, default=25_000)
    p.add_argument("--lessons", type=int, default=1_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--start", type=int, default=0, help="number of the first input")
    p.add_argument("--numbers", type=input_numbers, default=None,
                   help="run these trace inputs only (e.g. 6100-6199,7042, or @FILE of them; --traces and --start "
                        "are then not used)")
    p.add_argument("--batch", type=int, default=500, help="inputs per worker process")
    p.add_argument("--snapshot-every", type=int, default=1,
                   help="run gpuviz snapshot on the loaded-different inputs whose number is a multiple of this")
    p.add_argument("--mem-gb", type=int, default=3, help="address-space limit of a worker (GB)")
    p.add_argument("--per-input-s", type=float, default=60.0, help="an input that takes longer is a hang")
    p.add_argument("--jobs", type=int, default=2, help="worker processes at once")
    p.add_argument("--deadline", default=None,
                   help="UTC time (HH:MM) after which no new batch starts; the report says how many inputs ran")
    p.add_argument("--work", default=None, help="scratch folder (default: a temporary one)")
    p.add_argument("--out", default=None, help="results JSON (default: bench/results/fuzz.json)")
    args = p.parse_args()
    import tempfile

    if args.deadline:
        hh, mm = (int(x) for x in args.deadline.split(":"))
        now = dt.datetime.now(dt.timezone.utc)
        at = now.replace(hour=hh, minute=mm, second=0, microsecond=0)
        args.deadline = time.monotonic() + (at - now).total_seconds()

    folder = Path(args.work or tempfile.mkdtemp(prefix="gpuviz-fuzz-"))
    command = "nice -n 10 .venv/bin/python bench/fuzz.py " + " ".join(sys.argv[1:])
    reports = []
    if args.numbers is not None:
        args.traces = len(args.numbers)
    for kind, n in (("lesson", args.lessons), ("trace", args.traces)):  # lessons first: seconds, then the long part
        if n > 0:
            print(f"{kind}: {n:,} inputs (seed {args.seed}) ...", flush=True)
            reports.append(run(kind, n, args, folder))
    out_lines = [f"# Fuzz bench {dt.date.today().isoformat()}", "", f"`{command}`", "",
                 f"Machine: {os.cpu_count()} cores (shared), worker limits: {args.mem_gb} GB address space, "
                 f"{args.per_input_s:g} s per input; snapshot on every {args.snapshot_every}th loaded-different input "
                 "(the whole window, shown in one window per worker process as File > Open shows file after file); "
                 f"{args.jobs} worker process(es) at once.", ""]
    failed = 0
    for r in reports:
        out_lines += table(r) + [""]
        failed += r.failed() + len(r.messages)
        entries = problem_entries(r)
        if entries:
            out_lines += [f"{r.kind} inputs that went wrong ({len(entries):,}; `--numbers N` makes one again):", ""]
            out_lines += [problem_line(r.kind, e) for e in entries] + [""]
    print("\n".join(out_lines))
    out = Path(args.out) if args.out else ROOT / "bench" / "results" / "fuzz.json"
    commit = os.popen(f"git -C {ROOT} rev-parse --short HEAD").read().strip()
    out_lines.insert(2, f"Code: commit {commit}")
    data = {"command": command, "commit": commit,
            "reports": [{"kind": r.kind, "seed": r.seed, "n": r.n, "ran": len(r.records), "start": args.start,
                         "counts": dict(r.counts), "seconds": round(r.seconds, 1),
                         "failures": problem_entries(r)} for r in reports]}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1))
    out.with_suffix(".md").write_text("\n".join(out_lines) + "\n")
    print(f"-> {out} and {out.with_suffix('.md')}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
