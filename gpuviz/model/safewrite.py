"""Writing output files safely: only regular files (or new ones), complete or not at all, with the umask's mode.

Every file gpuviz writes (traces, recordings, PNG/SVG/GIF/MP4, Perfetto JSON) goes through
:func:`replace_atomically`: the writer fills a temporary file in the target's own folder, which is then
given the mode a new file would get (``0666`` less the umask; an existing file keeps its mode) and
renamed over the target. A crash or a full disk never leaves half a file, and a target that is not a
regular file (a folder, a device node such as ``/dev/full``, a FIFO, a socket) is refused rather than
replaced. :func:`check_output_path` says up front, before any work, whether a path can be written.

Standard library only (the model layer's rule: no Qt, no numba).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path


class OutputPathError(ValueError):
    """An output path gpuviz will not write to; the message names it and says why."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def current_umask() -> int:
    """The process's umask, read without changing it where the system allows (Linux: /proc)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def check_output_path(path, what: str = "output") -> Path:
    """The file a write to ``path`` will replace or create (a symlink's target), or :class:`OutputPathError`.

    Refused: an empty path; an existing path that is not a regular file; a missing folder, or one in
    which no file can be created (read-only, no permission, a pseudo file system like /proc).
    """
    text = os.fspath(path) if not isinstance(path, str) else path
    if not isinstance(text, str) or not text.strip():
        raise OutputPathError(f"the {what} path is empty")
    if "\0" in text:
        raise OutputPathError(f"the {what} path {text!r} holds a NUL character")
    p = Path(text)
    if text.endswith(os.sep):
        raise OutputPathError(f"{text}: names a folder; the {what} must be a file")
    try:
        real = Path(os.path.realpath(p)) if p.is_symlink() else p
        st = os.stat(real)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputPathError(f"{text}: cannot be written ({exc.strerror or exc})") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OutputPathError(f"{text}: is {_kind(st.st_mode)}; the {what} must be a regular file (or a new one)")
    folder = real.parent
    try:
        fst = os.stat(folder)
    except FileNotFoundError:
        raise OutputPathError(f"{text}: the folder {folder} does not exist") from None
    except OSError as exc:
        raise OutputPathError(f"{text}: the folder {folder} cannot be used ({exc.strerror or exc})") from None
    if not stat.S_ISDIR(fst.st_mode):
        raise OutputPathError(f"{text}: {folder} is not a folder")
    try:  # the one reliable test (permissions, read-only mounts, /proc): create a file there, then remove it
        fd, probe = tempfile.mkstemp(prefix=".gpuviz-probe.", dir=folder)
    except OSError as exc:
        raise OutputPathError(f"{text}: cannot create a file in {folder} ({exc.strerror or exc})") from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return real


@contextlib.contextmanager
def replace_atomically(path, what: str = "output"):
    """``with replace_atomically(out) as tmp: write(tmp)``: ``out`` gets the finished file, or nothing.

    ``tmp`` is a new, empty file in ``out``'s folder whose name ends like ``out`` (``.png``, ``.mp4``:
    writers that pick a format from the name see the same one). Raises :class:`OutputPathError` when
    ``out`` cannot be written (see :func:`check_output_path`), before the writer runs.
    """
    target = check_output_path(path, what)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=f".tmp{target.suffix}", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        try:
            st = os.stat(target)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):  # it changed while we wrote
            raise OutputPathError(f"{path}: is now {_kind(st.st_mode)}; not replacing it")
        mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~current_umask()
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
