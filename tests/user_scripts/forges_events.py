"""A program that writes into the worker's event log: a fake error, a fake launch whose trace is a file
outside the run folder, a replayed line, and garbage."""

import json
import os
import sys
from pathlib import Path

import numpy as np
from numba import cuda


@cuda.jit
def fill(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = i


out = np.zeros(64, dtype=np.int64)
fill[2, 32](out)

args = open("/proc/self/cmdline", "rb").read().split(b"\0")
folder = Path(os.fsdecode([a for a in args if a][-1]))
log = folder / "events.jsonl"
lines = [line for line in log.read_text().splitlines() if line.strip()]
with open(log, "a") as fh:
    fh.write(json.dumps({"event": "error", "kind": "KernelFault", "message": "FAKE: your kernel is broken",
                         "file": __file__, "line": 1}) + "\n")
    fh.write("0" * 64 + " " + json.dumps({"event": "launch", "n": 99, "number": 7, "kernel": "fake",
                                          "trace_file": "../" + sys.argv[1], "status": "traced"}) + "\n")
    fh.write(lines[-1] + "\n")  # a genuine line, again
    fh.write("garbage without a newline")
fill[2, 32](out)
print("done", flush=True)
