"""CPU time of a no-index open, per stage, user and system apart: to bisect the index build with CPU time, not wall.

    PYTHONPATH=$PWD .venv/bin/python bench/index_cpu.py FILE_WITHOUT_INDEX.gpuviz

Runs what the open job runs for a file that lacks an index (``load_trace``, ``build_index`` stage by stage, the
cache write, ``Prepared.use_index``, the prepared frames) in this process, with a fresh cache folder, and prints each stage's
user + system CPU seconds and wall seconds. Imports ``gpuviz`` from the current directory first, so the same
script runs in a worktree of an older commit (``git worktree add --detach DIR COMMIT; cd DIR``). System time is
mostly the kernel zeroing the fresh pages numpy's big temporaries take (``perf record``: clear_page_erms), which
grows with the machine's memory state and load, not with the code.
"""

import os
import resource
import sys
import tempfile
import time

os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="idxcpu-")
sys.path.insert(0, os.getcwd())

from gpuviz.model import index as im  # noqa: E402
from gpuviz.model.indexcache import save_cached  # noqa: E402
from gpuviz.model.prepared import prepare  # noqa: E402
from gpuviz.model.tracefile import load_trace  # noqa: E402

marks = []


def mark(name: str) -> None:
    t = os.times()
    marks.append((name, time.perf_counter(), t.user, t.system))


def main() -> int:
    mark("start")
    tr = load_trace(sys.argv[1])
    mark("load_trace")
    last = ["frames"]

    def progress(_fraction, stage):
        if stage != last[0]:
            mark(last[0])
            last[0] = stage

    idx = im.build_index(tr, progress=progress)
    mark(last[0])
    p = prepare(tr)
    save_cached(p, idx)
    mark("save_cached")
    if p.crcs:
        idx.info["events_crc"] = dict(p.crcs)
    p.use_index(idx, "built")
    mark("use_index")
    p.frames  # noqa: B018 - adopted from the index, as the open job does
    mark("Frames")
    parts = [f"{n1} {u1 - u0:.2f}+{s1 - s0:.2f}/{w1 - w0:.2f}"
             for (_, w0, u0, s0), (n1, w1, u1, s1) in zip(marks, marks[1:])]
    (_, w0, u0, s0), (_, w1, u1, s1) = marks[0], marks[-1]
    print("user+sys/wall s: " + ", ".join(parts) + f"; total user {u1 - u0:.2f} sys {s1 - s0:.2f} wall {w1 - w0:.2f}; "
          f"maxrss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB; load {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
