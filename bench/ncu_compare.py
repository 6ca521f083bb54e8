"""gpuviz's bank-conflict and sectors-per-request figures next to Nsight Compute's counters, same launches.

Three steps, two machines:

    # on a machine with an NVIDIA GPU and ncu (numba.cuda must see the real GPU: NUMBA_ENABLE_CUDASIM unset)
    python3 bench/ncu_compare.py gather --out DIR
        runs ``ncu --clock-control none`` over ``bench/ncu_compare.py launch``, which launches each PLAIN bundled
        kernel of CASES once (the user's @cuda.jit function, untouched) and checks its result against the
        kernel's numpy reference. Writes DIR/ncu_raw.csv (ncu's --csv details page), DIR/launches.json (the
        launches, in order), DIR/sass.txt (each kernel's SASS, to see which load/store instructions the
        compiler emitted), DIR/ncu_query_metrics.txt and DIR/ncu_log.txt.

    # anywhere (no GPU needed): the same launches through gpuviz's CPU executor, and the table
    .venv/bin/python bench/ncu_compare.py table --ncu DIR/ncu_raw.csv --launches DIR/launches.json \\
        [--md bench/results/ncu_compare_h200.md] [--json ...]

Compared per kernel (ncu counts are for the whole launch, summed over SMs):

    global loads/stores   requests: ours = warp requests (one SIMT memory instruction of one warp),
                          ncu = l1tex__t_requests_pipe_lsu_mem_global_op_{ld,st}.sum;
                          sectors: ours = distinct 32-byte sectors per request, summed,
                          ncu = l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}.sum
    shared loads/stores   requests: ncu = smsp__sass_inst_executed_op_shared_{ld,st}.sum;
                          wavefronts: ours = n-way of each request, summed,
                          ncu = l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum;
                          bank conflicts: ours = extra wavefronts (ways - 1), summed,
                          ncu = l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}.sum
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# (bundled kernel, problem size): the sizes gpuviz captures on a CPU in a second or less. The last three
# do not divide evenly into tiles/blocks, to show what the tail (masked lanes, zero-padding stores) does.
CASES = [
    ("transpose_naive", 128),
    ("transpose_shared", 128),
    ("transpose_padded", 128),
    ("reduce_interleaved", 16384),
    ("reduce_sequential", 16384),
    ("reduce_first_add", 16384),
    ("reduce_warp_shuffle", 16384),
    ("matmul_naive", 64),
    ("matmul_tiled", 64),
    ("transpose_naive", 100),
    ("reduce_sequential", 16000),
    ("matmul_tiled", 72),
]

# base metric names (ncu --query-metrics lists these; ".sum" is the roll-up we read)
METRICS = {
    "gld_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld",
    "gld_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld",
    "gst_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_st",
    "gst_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_st",
    "gld_inst": "smsp__sass_inst_executed_op_global_ld",
    "gst_inst": "smsp__sass_inst_executed_op_global_st",
    "sld_inst": "smsp__sass_inst_executed_op_shared_ld",
    "sst_inst": "smsp__sass_inst_executed_op_shared_st",
    "sld_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld",
    "sst_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st",
    "sld_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld",
    "sst_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st",
}
# the launch-statistics and occupancy sections: registers per thread, the occupancy limits
SECTIONS = ("LaunchStats", "Occupancy")


def _case_label(name: str, size: int) -> str:
    return f"{name} n={size}"


# ---- on the GPU machine: the plain launches (run under ncu) ----------------------------------------------
def cmd_launch(args) -> int:
    import numpy as np

    # numba-cuda 0.30.4 + numpy 2.5: np.row_stack is gone; alias it before numba.cuda compiles (see gpu.py)
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack
    from numba import cuda

    from gpuviz.catalog import get_kernel

    launches = []
    sass = []
    for name, size in CASES:
        spec = get_kernel(name)
        host = spec.make_args(size, np.random.default_rng(0))
        before = [a.copy() if isinstance(a, np.ndarray) else a for a in host]
        grid, block = spec.launch(size, spec.default_block)
        dev = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in host]
        spec.kernel[grid, block](*dev)  # the plain kernel: exactly one launch per case, in CASES order
        cuda.synchronize()
        out = [d.copy_to_host() if isinstance(h, np.ndarray) else h for d, h in zip(dev, host)]
        ok = all(
            np.allclose(out[pos], want, rtol=max(spec.rtol, 1e-6), atol=1e-6)
            for pos, want in spec.reference(before).items()
        )
        launches.append({"kernel": name, "size": size, "grid": list(grid), "block": list(block), "result_ok": bool(ok)})
        print(f"launched {_case_label(name, size)} grid={grid} block={block} result {'ok' if ok else 'WRONG'}", flush=True)
        if args.sass and name not in {s[0] for s in sass}:
            try:
                text = "\n".join(spec.kernel.inspect_sass().values())
            except Exception as exc:  # noqa: BLE001 - nvdisasm missing: the table still stands, without the SASS notes
                text = f"(no SASS: {type(exc).__name__}: {exc})"
            sass.append((name, text))
    Path(args.launches).write_text(json.dumps(launches, indent=1))
    if args.sass:
        with open(args.sass, "w") as f:
            for name, text in sass:
                f.write(f"===== {name}\n{text}\n")
    return 0 if all(x["result_ok"] for x in launches) else 3


def _find_ncu() -> str:
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in ("/usr/local/cuda*/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu"):
        hits = sorted(Path("/").glob(pattern.lstrip("/")))
        if hits:
            return str(hits[-1])
    raise SystemExit("ncu not found on PATH, under /usr/local/cuda*/bin or /opt/nvidia/nsight-compute/*")


def cmd_gather(args) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ncu = _find_ncu()
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}  # the real GPU, not the simulator
    env["PYTHONUNBUFFERED"] = "1"
    log = open(out / "ncu_log.txt", "w")
    version = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"ncu: {ncu}\n{version}", file=log, flush=True)

    # keep only the metrics this ncu knows on this device: one unknown name would fail the whole run
    q = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120)
    (out / "ncu_query_metrics.txt").write_text(q.stdout + q.stderr)
    names = list(METRICS.values())
    if q.returncode == 0 and q.stdout:
        known = set(q.stdout.split())
        missing = [m for m in names if m not in known]
        names = [m for m in names if m in known]
        print(f"metrics missing on this device: {missing or 'none'}", file=log, flush=True)
    metrics = ",".join(m + ".sum" for m in names)

    child = [sys.executable, str(Path(__file__).resolve()), "launch", "--launches", str(out / "launches.json"),
             "--sass", str(out / "sass.txt")]
    base = [ncu, "--clock-control", "none", "--csv", "--page", "details", "--print-units", "base",
            "--log-file", str(out / "ncu_raw.csv"), "--metrics", metrics]
    with_sections = base + [x for s in SECTIONS for x in ("--section", s)]
    t0 = time.perf_counter()
    rc = None
    for cmd in (with_sections, base):
        print("$ " + " ".join(cmd + child), file=log, flush=True)
        p = subprocess.run(cmd + child, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(ROOT),
                           timeout=args.timeout)
        rc = p.returncode
        print(f"rc={rc} after {time.perf_counter() - t0:.1f} s", file=log, flush=True)
        if rc in (0, 3) and (out / "ncu_raw.csv").exists():
            break
    log.close()
    print((out / "ncu_log.txt").read_text()[-4000:])
    if (out / "ncu_raw.csv").exists():
        rows = parse_ncu(out / "ncu_raw.csv")
        print(f"{len(rows)} kernels profiled")
        for i, r in sorted(rows.items()):
            print(i, r["kernel_name"][:60], {k: r.get(k) for k in METRICS})
    return rc or 0


# ---- reading ncu's csv ---------------------------------------------------------------------------------
def _number(text: str):
    text = text.replace(",", "").strip()
    try:
        v = float(text)
    except ValueError:
        return text or None
    return int(v) if v.is_integer() else v


def parse_ncu(path) -> dict[int, dict]:
    """{launch ID: {"kernel_name", key of METRICS: value, "section/metric name": value}} from --page details."""
    lines = Path(path).read_text().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise SystemExit(f"{path}: no ncu CSV header (a line starting with \"ID\") found")
    by_metric = {m + ".sum": key for key, m in METRICS.items()}
    rows: dict[int, dict] = {}
    for rec in csv.DictReader(lines[start:]):
        if not rec.get("ID", "").strip().isdigit():
            continue
        row = rows.setdefault(int(rec["ID"]), {"kernel_name": rec.get("Kernel Name", "")})
        metric, value = rec.get("Metric Name", ""), _number(rec.get("Metric Value", ""))
        if metric in by_metric:
            row[by_metric[metric]] = value
        else:
            row[f"{rec.get('Section Name', '')}/{metric}"] = value
    return rows


# ---- here: gpuviz's figures for the same launches, and the table ---------------------------------------
def ours(name: str, size: int) -> dict:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")  # the CPU executor needs no GPU; keep numba off it
    import numpy as np

    from gpuviz.capture import capture
    from gpuviz.model import analysis
    from gpuviz.catalog import get_kernel

    spec = get_kernel(name)
    args = spec.make_args(size, np.random.default_rng(0))
    grid, block = spec.launch(size, spec.default_block)
    trace = capture(spec.kernel, grid, block, *args, backend="cpu")
    gm, sb = analysis.global_memory(trace).totals, analysis.shared_banks(trace).totals
    occ = analysis.trace_occupancy(trace)
    return {
        "events": len(trace),
        "gld_requests": gm["load"]["requests"], "gld_sectors": gm["load"]["sectors"],
        "gst_requests": gm["store"]["requests"], "gst_sectors": gm["store"]["sectors"],
        "sld_inst": sb["load"]["requests"], "sld_wavefronts": sb["load"]["wavefronts"],
        "sld_conflicts": sb["load"]["bank_conflicts"],
        "sst_inst": sb["store"]["requests"], "sst_wavefronts": sb["store"]["wavefronts"],
        "sst_conflicts": sb["store"]["bank_conflicts"],
        "blocks_per_sm_estimated": occ.get("blocks_per_sm"),
    }


def _ratio(a, b):
    return f"{a / b:.2f}" if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else "–"


def _pair(a, b) -> str:
    fmt = lambda v: "–" if v is None else (f"{v:,}" if isinstance(v, int) else str(v))  # noqa: E731
    mark = "" if a == b else " ≠"
    return f"{fmt(a)} / {fmt(b)}{mark}"


def build_table(ncu_rows: dict[int, dict], launches: list[dict]) -> tuple[str, list[dict]]:
    records = []
    for i, launch in enumerate(launches):
        theirs = ncu_rows.get(i)
        if theirs is None:
            raise SystemExit(f"ncu has no kernel with ID {i} ({launch['kernel']}): the CSV and launches.json disagree")
        if launch["kernel"] not in theirs["kernel_name"]:
            raise SystemExit(f"ncu's kernel {i} is {theirs['kernel_name']!r}, expected {launch['kernel']}")
        t0 = time.perf_counter()
        mine = ours(launch["kernel"], launch["size"])
        records.append({"launch": launch, "ours": mine, "ncu": theirs, "capture_and_analysis_s": time.perf_counter() - t0})

    def g(rec, side, key):
        return rec[side].get(key)

    out = ["### Global memory (ours / ncu; ≠ marks a difference)", "",
           "| kernel | ld requests | ld sectors | ld sectors/req | st requests | st sectors | st sectors/req |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for r in records:
        label = _case_label(r["launch"]["kernel"], r["launch"]["size"])
        cells = []
        for op in ("gld", "gst"):
            req_o, req_n = g(r, "ours", op + "_requests"), g(r, "ncu", op + "_requests")
            sec_o, sec_n = g(r, "ours", op + "_sectors"), g(r, "ncu", op + "_sectors")
            spr_o, spr_n = _ratio(sec_o, req_o), _ratio(sec_n, req_n)
            cells += [_pair(req_o, req_n), _pair(sec_o, sec_n), _pair(spr_o, spr_n)]
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    out += ["", "### Shared memory (ours / ncu; ≠ marks a difference)", "",
            "| kernel | ld requests | ld wavefronts | ld bank conflicts | st requests | st wavefronts | st bank conflicts |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for r in records:
        label = _case_label(r["launch"]["kernel"], r["launch"]["size"])
        cells = []
        for op in ("sld", "sst"):
            for what in ("inst", "wavefronts", "conflicts"):
                cells.append(_pair(g(r, "ours", f"{op}_{what}"), g(r, "ncu", f"{op}_{what}")))
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    out += occupancy_table(records)
    return "\n".join(out), records


def occupancy_table(records: list[dict]) -> list[str]:
    """gpuviz's occupancy calculator fed the plain kernel's registers and static shared memory (as ncu read
    them) next to ncu's own occupancy section: blocks per SM each resource allows, and the result."""
    from gpuviz.model.devices import occupancy

    out = ["", "### Occupancy on the H200 from ncu's registers and shared bytes (ours / ncu)", "",
           "| kernel | block | regs | static smem B | by registers | by warps | by blocks | by smem (ncu carveout) "
           "| blocks/SM | warps/SM |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    seen = set()
    for r in records:
        name, n = r["launch"]["kernel"], r["ncu"]
        regs, smem = n.get("Launch Statistics/Registers Per Thread"), n.get("Launch Statistics/Static Shared Memory Per Block")
        if name in seen or not isinstance(regs, int) or not isinstance(smem, int):
            continue
        seen.add(name)
        threads = 1
        for b in r["launch"]["block"]:
            threads *= b
        o = occupancy(threads, regs, smem, "H200")
        lim = o["limits"]
        carve = n.get("Launch Statistics/Shared Memory Configuration Size")
        theirs_warps = n.get("Occupancy/Theoretical Active Warps per SM")
        theirs_blocks = theirs_warps // o["warps_per_block"] if isinstance(theirs_warps, int) else None
        carve_kb = f" ({carve // 1024} KB)" if isinstance(carve, int) else ""
        out.append(
            f"| {name} | {threads} | {regs} | {smem:,} | {_pair(lim['registers'], n.get('Occupancy/Block Limit Registers'))} "
            f"| {_pair(lim['threads'], n.get('Occupancy/Block Limit Warps'))} | {_pair(lim['blocks'], n.get('Occupancy/Block Limit SM'))} "
            f"| {_pair(lim['shared_memory'], n.get('Occupancy/Block Limit Shared Mem'))}{carve_kb} "
            f"| {_pair(o['blocks_per_sm'], theirs_blocks)} | {_pair(o['warps_per_sm'], theirs_warps)} |"
        )
    return out if seen else []


def cmd_table(args) -> int:
    rows = parse_ncu(args.ncu)
    launches = json.loads(Path(args.launches).read_text())
    table, records = build_table(rows, launches)
    print(table)
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1, default=str))
    if args.md:
        md = Path(args.md)
        text = md.read_text() if md.exists() else ""
        begin, end = "<!-- table:begin -->", "<!-- table:end -->"
        block = f"{begin}\n{table}\n{end}"
        if begin in text and end in text:  # refresh the generated table, keep the hand-written notes around it
            text = text[: text.index(begin)] + block + text[text.index(end) + len(end):]
        else:
            text = text + ("\n" if text else "") + block + "\n"
        md.write_text(text)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("gather", help="on the GPU machine: run ncu over the plain launches")
    p.add_argument("--out", required=True)
    p.add_argument("--timeout", type=int, default=420, help="seconds for one ncu run")
    p.set_defaults(fn=cmd_gather)
    p = sub.add_parser("launch", help="(run by gather under ncu) launch each plain kernel once")
    p.add_argument("--launches", required=True)
    p.add_argument("--sass")
    p.set_defaults(fn=cmd_launch)
    p = sub.add_parser("table", help="compute gpuviz's figures for the same launches and print the table")
    p.add_argument("--ncu", required=True, help="ncu_raw.csv written by gather")
    p.add_argument("--launches", required=True, help="launches.json written by gather")
    p.add_argument("--md", help="write (or refresh) the table in this markdown file")
    p.add_argument("--json", help="write every figure, ours and ncu's, here")
    p.set_defaults(fn=cmd_table)
    args = ap.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
