"""A program that kills the process that runs it (SIGKILL) after two launches. With an argument, it first
forks a child and writes both process ids there, and after the kill both wait for ten minutes."""

import os
import signal
import sys
import time

import numpy as np
from numba import cuda


@cuda.jit
def fill(out, k):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = i * k


out = np.zeros(64, dtype=np.int64)
fill[2, 32](out, 1)
fill[2, 32](out, 2)
if len(sys.argv) > 1:
    child = os.fork()
    if child == 0:
        time.sleep(600)
        os._exit(0)
    with open(sys.argv[1] + ".tmp", "w") as fh:
        fh.write(f"{os.getpid()} {child}")
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
print("killing my runner", flush=True)
os.kill(os.getppid(), signal.SIGKILL)
time.sleep(600)
