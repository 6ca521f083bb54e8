"""A program that leaves processes behind: a forked child, a setsid background process, a double-forked
daemon. It writes their process ids (and its own) to the file named by its first argument, then either
waits (argument 'wait') or returns at once."""

import os
import subprocess
import sys
import time

import numpy as np
from numba import cuda


@cuda.jit
def fill(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = i


out = np.zeros(64, dtype=np.int64)
fill[2, 32](out)

pids = [os.getpid()]
child = os.fork()
if child == 0:  # a forked child that would sleep for ten minutes
    time.sleep(600)
    os._exit(0)
pids.append(child)
background = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
pids.append(background.pid)
read_end, write_end = os.pipe()
first = os.fork()
if first == 0:  # a double fork: the grandchild is orphaned at once and starts its own session
    os.setsid()
    second = os.fork()
    if second == 0:
        os.write(write_end, f"{os.getpid()}\n".encode())
        time.sleep(600)
        os._exit(0)
    os._exit(0)
os.waitpid(first, 0)
pids.append(int(os.read(read_end, 64).decode().strip()))
with open(sys.argv[1] + ".tmp", "w") as fh:
    fh.write(" ".join(str(p) for p in pids))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
print("children started", flush=True)
if len(sys.argv) > 2 and sys.argv[2] == "wait":
    time.sleep(600)
