"""Processes that must not outlive a run: the worker, and whatever the user's program started.

* the worker dies with the process that started it (``PR_SET_PDEATHSIG``, Linux), and is a *child
  subreaper* (``PR_SET_CHILD_SUBREAPER``): a process the program starts and orphans (a double fork, a
  ``setsid`` daemon) becomes the worker's child instead of init's, so it can be found and ended;
* :func:`end_tree` ends a process and all its descendants, found through ``/proc``: each is stopped
  first (SIGSTOP, so none forks while the tree is read), then killed, and the worker's process group is
  killed too (a child that left the tree but not the group).

Elsewhere than Linux only the process group is used.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent(parent_pid: int | None = None) -> bool:
    """Ask the kernel to SIGKILL this process when its parent dies. If the parent is already gone (it
    died before this call), exit now. True when the request was accepted."""
    ok = _prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)
    return ok


def become_subreaper() -> bool:
    """Orphaned descendants of this process become its children (Linux 3.4+), so they can be ended."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process visible in /proc (empty where there is no /proc)."""
    out = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # the command name is in parentheses and may hold spaces or ')': split after the last ')'
        rest = stat[stat.rfind(b")") + 2:].split()
        if len(rest) >= 2:
            try:
                out[int(name)] = int(rest[1])
            except ValueError:
                pass
    return out


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children, ...), parents before children."""
    parents = _parents()
    children: dict[int, list[int]] = {}
    for p, pp in parents.items():
        children.setdefault(pp, []).append(p)
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), ()):
            if c not in out and c != pid:
                out.append(c)
                todo.append(c)
    return out


def has_children() -> bool:
    """Whether this process has a child (running, stopped or a zombie), asked of the kernel in one call that
    reaps nothing. A process with no child has no descendant at all (a subreaper's orphans are its children),
    so ending its tree needs no scan of ``/proc``: that scan reads a file per process, giving up the GIL
    for each, and beside a simulated block's spinning threads it can take tens of seconds on a busy machine."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WSTOPPED | os.WCONTINUED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    except (OSError, AttributeError):  # no waitid here: cannot tell
        return True
    return True


def _below(pid: int, spare) -> bool:
    """Is ``pid`` one of ``spare`` or below one of them?"""
    if not spare:
        return False
    parents = _parents()
    seen = set()
    while pid and pid not in seen:
        if pid in spare:
            return True
        seen.add(pid)
        pid = parents.get(pid, 0)
    return False


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError, OSError):
        pass


def end_tree(pid: int, *, include_self: bool = True, group: int | None = None, spare=()) -> list[int]:
    """Kill ``pid`` (unless ``include_self`` is False) and all its descendants except ``spare`` (and theirs),
    and process group ``group`` when given. Returns the pids signalled."""
    me = os.getpid()
    if pid == me and not has_children():
        if group is not None:
            kill_group(group)
        return []
    stopped: list[int] = list(spare)
    if include_self and pid != me:
        _signal(pid, signal.SIGSTOP)
        stopped.append(pid)
    for _ in range(10):  # stop the tree, re-reading it until no new process shows up
        new = [p for p in descendants(pid) if p not in stopped and p != me and not _below(p, spare)]
        if not new:
            break
        for p in new:
            _signal(p, signal.SIGSTOP)
        stopped.extend(new)
    spare = set(spare)
    for p in stopped:
        if p not in spare:
            _signal(p, signal.SIGKILL)
    if group is not None:
        kill_group(group)
    return [p for p in stopped if p not in spare]


def kill_group(group: int) -> None:
    """SIGKILL process group ``group`` (never our own)."""
    if os.name != "posix" or group <= 1 or group == os.getpgrp():
        return
    try:
        os.killpg(group, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass


def reap(pids) -> None:
    """Collect the exit status of those of ``pids`` that are our children (killed ones end at once)."""
    for pid in pids:
        try:
            os.waitpid(pid, 0)
        except (ChildProcessError, OSError):
            pass


def reap_children() -> None:
    """Collect the exit status of children that ended (an orphan handed to a subreaper is its child)."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except (ChildProcessError, OSError):
            return
        if pid == 0:
            return
