"""Run a command with system libraries hidden from it, and from nothing else on the machine.

    unshare -rm --propagation private python tests/hide_library.py libxcb-icccm.so.4 [...] -- COMMAND ARGS

Inside a private mount namespace (``unshare -rm``: a user namespace, no real root needed), the folder that holds
each library is replaced, for this process tree only, by a view of it that links every entry but the hidden
ones: the dynamic loader (and ``ldd``) then find the library nowhere, as on a machine without its package.
Other processes, and the folder itself, are untouched: the mounts go away with the namespace.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path


def library_folder(soname: str) -> Path:
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib64", "/lib"):
        if (Path(d) / soname).exists():
            return Path(os.path.realpath(d))
    raise SystemExit(f"hide_library: {soname} is not installed here, nothing to hide")


def hide(sonames: list[str]) -> None:
    stems = tuple(s.split(".so")[0] + ".so" for s in sonames)  # libxcb-icccm.so.4 hides libxcb-icccm.so*
    work = Path(tempfile.mkdtemp(prefix="gpuviz-hide-"))
    for n, folder in enumerate(sorted({library_folder(s) for s in sonames})):
        original, view = work / f"original{n}", work / f"view{n}"
        original.mkdir()
        view.mkdir()
        subprocess.run(["mount", "--bind", str(folder), str(original)], check=True)
        for entry in os.listdir(original):
            if not entry.startswith(stems):
                os.symlink(original / entry, view / entry)
        subprocess.run(["mount", "--bind", str(view), str(folder)], check=True)


def main() -> None:
    args = sys.argv[1:]
    if "--" not in args:
        raise SystemExit(__doc__)
    split = args.index("--")
    hide(args[:split])
    command = args[split + 1:]
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
