"""Can Qt's platform plugin for this session load? Asked before Qt is.

Qt opens a window through a platform plugin: ``xcb`` under X11, ``wayland`` under Wayland (``offscreen`` draws
without a display and needs neither). PySide6's wheels ship the plugins but not the system libraries they
link (``libxcb-cursor0``, ``libxcb-icccm4``, ``libxcb-keysyms1`` ... which a fresh Debian or Ubuntu desktop
often lacks). When one is missing, Qt prints "Could not load the Qt platform plugin "xcb" in "" even though it
was found", blames a library that may be installed, and aborts the process: nothing a student can act on.

So before the QApplication is made, :func:`ensure_platform` loads the session's plugin the way Qt will (the
system's dynamic loader, ``dlopen``): a plugin that loads costs about a millisecond, and the libraries it
brought in are the ones Qt loads next anyway. Only when it does not load does it look further: ``ldd`` of the
plugin and of the Qt library it needs (``libQt6XcbQpa``) names every library that is "not found", a table maps
them to the packages of apt, dnf, pacman and zypper, and then it installs them (as root, with apt, as
``bash dev test`` does) or raises :class:`PlatformUnavailable` with the one command to run and ``ldd``'s own
lines as evidence. ``gpuviz doctor`` says the same for every plugin, and more.

No Qt import here: this runs before Qt, and where Qt cannot start.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

#: exit status of ``gpuviz`` when the window cannot open because of the platform plugin
EXIT_STATUS = 3
#: set to 1 to keep gpuviz from installing system packages itself (as root, with apt)
NO_INSTALL_ENV = "GPUVIZ_NO_SYSTEM_INSTALL"

#: the platforms whose plugins link system libraries that a desktop may lack (checked); the others
#: (offscreen, minimal, vnc, eglfs ...) need no display and are left to Qt
CHECKED = ("xcb", "wayland")

# soname -> package (apt, dnf, pacman, zypper), for the libraries Qt's xcb and wayland plugins and Qt's own
# libraries link. Names from the distributions' package indexes (Debian 12 / Ubuntu 24.04, Fedora 40,
# Arch, openSUSE Tumbleweed).
PACKAGES: dict[str, tuple[str, str, str, str]] = {
    "libxcb.so.1": ("libxcb1", "libxcb", "libxcb", "libxcb1"),
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor", "xcb-util-cursor", "libxcb-cursor0"),
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm", "xcb-util-wm", "libxcb-icccm4"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms", "xcb-util-keysyms", "libxcb-keysyms1"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image", "xcb-util-image", "libxcb-image0"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil", "xcb-util-renderutil",
                                "libxcb-render-util0"),
    "libxcb-util.so.1": ("libxcb-util1", "xcb-util", "xcb-util", "libxcb-util1"),
    "libxcb-randr.so.0": ("libxcb-randr0", "libxcb", "libxcb", "libxcb-randr0"),
    "libxcb-render.so.0": ("libxcb-render0", "libxcb", "libxcb", "libxcb-render0"),
    "libxcb-shape.so.0": ("libxcb-shape0", "libxcb", "libxcb", "libxcb-shape0"),
    "libxcb-shm.so.0": ("libxcb-shm0", "libxcb", "libxcb", "libxcb-shm0"),
    "libxcb-sync.so.1": ("libxcb-sync1", "libxcb", "libxcb", "libxcb-sync1"),
    "libxcb-xfixes.so.0": ("libxcb-xfixes0", "libxcb", "libxcb", "libxcb-xfixes0"),
    "libxcb-xinerama.so.0": ("libxcb-xinerama0", "libxcb", "libxcb", "libxcb-xinerama0"),
    "libxcb-xkb.so.1": ("libxcb-xkb1", "libxcb", "libxcb", "libxcb-xkb1"),
    "libxcb-glx.so.0": ("libxcb-glx0", "libxcb", "libxcb", "libxcb-glx0"),
    "libX11.so.6": ("libx11-6", "libX11", "libx11", "libX11-6"),
    "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb", "libx11", "libX11-xcb1"),
    "libXau.so.6": ("libxau6", "libXau", "libxau", "libXau6"),
    "libXdmcp.so.6": ("libxdmcp6", "libXdmcp", "libxdmcp", "libXdmcp6"),
    "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon", "libxkbcommon", "libxkbcommon0"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11", "libxkbcommon-x11", "libxkbcommon-x11-0"),
    "libSM.so.6": ("libsm6", "libSM", "libsm", "libSM6"),
    "libICE.so.6": ("libice6", "libICE", "libice", "libICE6"),
    "libEGL.so.1": ("libegl1", "libglvnd-egl", "libglvnd", "libEGL1"),
    "libGL.so.1": ("libgl1", "libglvnd-glx", "libglvnd", "libGL1"),
    "libGLX.so.0": ("libglx0", "libglvnd-glx", "libglvnd", "libGLX0"),
    "libOpenGL.so.0": ("libopengl0", "libglvnd-opengl", "libglvnd", "libOpenGL0"),
    "libGLdispatch.so.0": ("libglvnd0", "libglvnd", "libglvnd", "libGLdispatch0"),
    "libfontconfig.so.1": ("libfontconfig1", "fontconfig", "fontconfig", "libfontconfig1"),
    "libfreetype.so.6": ("libfreetype6", "freetype", "freetype2", "libfreetype6"),
    "libglib-2.0.so.0": ("libglib2.0-0", "glib2", "glib2", "libglib-2_0-0"),
    "libgthread-2.0.so.0": ("libglib2.0-0", "glib2", "glib2", "libgthread-2_0-0"),
    "libdbus-1.so.3": ("libdbus-1-3", "dbus-libs", "dbus", "libdbus-1-3"),
    "libwayland-client.so.0": ("libwayland-client0", "libwayland-client", "wayland", "libwayland-client0"),
    "libwayland-cursor.so.0": ("libwayland-cursor0", "libwayland-cursor", "wayland", "libwayland-cursor0"),
    "libwayland-egl.so.1": ("libwayland-egl1", "libwayland-egl", "wayland", "libwayland-egl1"),
    "libpng16.so.16": ("libpng16-16", "libpng", "libpng", "libpng16-16"),
    "libz.so.1": ("zlib1g", "zlib", "zlib", "libz1"),
    "libzstd.so.1": ("libzstd1", "libzstd", "zstd", "libzstd1"),
}
MANAGERS = ("apt", "dnf", "pacman", "zypper")
_INSTALL = {"apt": "apt-get install", "dnf": "dnf install", "pacman": "pacman -S --needed", "zypper": "zypper install"}
# how to find the package of a library the table does not know
_SEARCH = {"apt": "apt-file search {}", "dnf": "dnf provides '*/{}'", "pacman": "pacman -F {}",
           "zypper": "zypper search --provides {}"}
_SYSTEM = {"apt": "Debian/Ubuntu", "dnf": "Fedora/RHEL", "pacman": "Arch", "zypper": "openSUSE"}


class PlatformUnavailable(RuntimeError):
    """The window cannot open: the message says why in plain words and what to run."""


@dataclass
class PluginCheck:
    """What was found out about one platform plugin."""

    platform: str  # "xcb", "wayland"
    plugin: Path | None  # the plugin file, None when PySide6 has none for the platform
    load_error: str = ""  # the loader's own message; "" when the plugin loads
    missing: list[str] = field(default_factory=list)  # sonames ldd reports "not found", in its order
    evidence: list[str] = field(default_factory=list)  # "ldd FILE" and its "not found" lines under it

    @property
    def loads(self) -> bool:
        return self.plugin is not None and not self.load_error


def session_platforms(env=None) -> list[str]:
    """The platforms Qt will try for this session, in order: ``QT_QPA_PLATFORM`` when set (``a;b`` lists
    fallbacks, ``:options`` dropped), else Wayland then X11 under a Wayland session, else X11. Empty off Linux
    (macOS and Windows plugins come with their systems' libraries)."""
    env = os.environ if env is None else env
    forced = env.get("QT_QPA_PLATFORM", "").strip()
    if forced:
        return [p.split(":")[0].strip() for p in forced.split(";") if p.split(":")[0].strip()]
    if not sys.platform.startswith("linux"):
        return []
    if env.get("WAYLAND_DISPLAY") or env.get("XDG_SESSION_TYPE") == "wayland":
        return ["wayland", "xcb"]
    return ["xcb"]


def _family(platform: str) -> str:
    return "wayland" if platform.startswith("wayland") else platform


def pyside_dir() -> Path | None:
    """PySide6's package folder, found without importing it."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("PySide6")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def plugin_dirs(env=None) -> list[Path]:
    """Where Qt looks for platform plugins, in its order: ``QT_QPA_PLATFORM_PLUGIN_PATH``, the
    ``platforms`` folder of each ``QT_PLUGIN_PATH`` entry, then PySide6's own."""
    env = os.environ if env is None else env
    dirs = [Path(p) for p in env.get("QT_QPA_PLATFORM_PLUGIN_PATH", "").split(os.pathsep) if p]
    dirs += [Path(p) / "platforms" for p in env.get("QT_PLUGIN_PATH", "").split(os.pathsep) if p]
    base = pyside_dir()
    if base is not None:
        dirs.append(base / "Qt" / "plugins" / "platforms")
    return dirs


def plugin_file(platform: str, env=None) -> Path | None:
    """The plugin file of ``platform`` (``libqxcb.so``; all the ``wayland-*`` keys are ``libqwayland*.so``)."""
    family = _family(platform)
    names = ["libqwayland.so", "libqwayland-generic.so", "libqwayland-egl.so"] if family == "wayland" \
        else [f"libq{family}.so"]
    for d in plugin_dirs(env):
        for name in names:
            if (d / name).is_file():
                return d / name
    return None


def load_error(plugin: Path) -> str:
    """The dynamic loader's message when ``plugin`` cannot be loaded, '' when it can. It stays loaded: Qt's own
    dlopen of the same file a moment later finds it there."""
    import ctypes

    try:
        ctypes.CDLL(str(plugin), mode=os.RTLD_LAZY | os.RTLD_LOCAL)
    except OSError as exc:
        return str(exc)
    return ""


_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found\s*$")


def ldd_missing(path: Path, timeout: float = 20.0) -> tuple[list[str], list[str]]:
    """(sonames that ``ldd path`` reports not found, those lines as ldd wrote them); ([], []) when there is no
    ldd or it fails (musl, a foreign file)."""
    exe = shutil.which("ldd")
    if exe is None:
        return [], []
    try:
        out = subprocess.run([exe, str(path)], capture_output=True, text=True, timeout=timeout).stdout
    except (OSError, subprocess.SubprocessError):
        return [], []
    missing, lines = [], []
    for line in out.splitlines():
        m = _NOT_FOUND.match(line)
        if m and m.group(1) not in missing:  # ldd lists a library once per object that needs it
            missing.append(m.group(1))
            lines.append(line.strip())
    return missing, lines


def _needed_qt_libraries(plugin: Path, family: str) -> list[Path]:
    """The Qt library the plugin does its work in (``libQt6XcbQpa``, ``libQt6WaylandClient``), beside the plugin
    in PySide6's layout (``plugins/platforms/../../lib``): ldd of it says which missing library is its own."""
    lib = plugin.parent.parent.parent / "lib"
    name = {"xcb": "libQt6XcbQpa.so.6", "wayland": "libQt6WaylandClient.so.6"}.get(family)
    return [lib / name] if name and (lib / name).is_file() else []


def check_plugin(platform: str, env=None, deep: bool = False) -> PluginCheck:
    """Load ``platform``'s plugin; when it does not load (or ``deep``), ldd it and its Qt library."""
    plugin = plugin_file(platform, env)
    check = PluginCheck(_family(platform), plugin)
    if plugin is None:
        check.load_error = f"PySide6 has no {platform!r} platform plugin (looked in: " \
                           f"{', '.join(str(d) for d in plugin_dirs(env)) or 'no PySide6 found'})"
        return check
    check.load_error = load_error(plugin)
    if check.load_error or deep:
        for path in [plugin, *_needed_qt_libraries(plugin, check.platform)]:
            missing, lines = ldd_missing(path)
            if lines:
                check.evidence.append(f"ldd {path}")
                check.evidence += [f"    {line}" for line in lines]
            check.missing += [m for m in missing if m not in check.missing]
        if not check.missing:
            # no ldd (or it saw nothing): the loader's own message names the first library it could not open
            m = re.match(r"^(\S+\.so[.\d]*): cannot open shared object file", check.load_error)
            if m:
                check.missing.append(m.group(1))
    return check


def package_manager() -> str | None:
    """apt, dnf, pacman or zypper: the first this system has."""
    for name, exe in (("apt", "apt-get"), ("dnf", "dnf"), ("zypper", "zypper"), ("pacman", "pacman")):
        if shutil.which(exe):
            return name
    return None


def packages_for(sonames, manager: str) -> tuple[list[str], list[str]]:
    """(packages that provide ``sonames`` under ``manager``, in order and once each; sonames the table does not
    know). Qt's own libraries (``libQt6*``, ``libicu*`` in PySide6's folder) are never system packages."""
    column = MANAGERS.index(manager)
    packages, unknown = [], []
    for so in sonames:
        pkg = PACKAGES.get(so, (None,) * 4)[column]
        if pkg is None:
            unknown.append(so)
        elif pkg not in packages:
            packages.append(pkg)
    return packages, unknown


def install_command(manager: str, packages, as_root: bool | None = None) -> str:
    as_root = (os.geteuid() == 0) if as_root is None else as_root
    return f"{'' if as_root else 'sudo '}{_INSTALL[manager]} {' '.join(packages)}"


def _qt_own(soname: str) -> bool:
    return soname.startswith(("libQt6", "libicu", "libpyside6", "libshiboken6"))


def fix_lines(check: PluginCheck, manager: str | None = None, as_root: bool | None = None) -> list[str]:
    """What to run so that ``check``'s plugin loads, in plain words (one command where the table knows the
    packages)."""
    manager = package_manager() if manager is None else manager
    system_libs = [m for m in check.missing if not _qt_own(m)]
    qt_libs = [m for m in check.missing if _qt_own(m)]
    lines = []
    if qt_libs:
        lines.append(f"PySide6's own Qt libraries are missing ({', '.join(qt_libs)}): reinstall it, "
                     f"`pip install --force-reinstall PySide6-Essentials`.")
    if not system_libs:
        if not qt_libs and check.load_error:
            lines.append(f"the loader says: {check.load_error}")
        return lines
    if manager is None:
        lines.append(f"install the packages of your system that provide {', '.join(system_libs)}.")
        return lines
    packages, unknown = packages_for(system_libs, manager)
    if packages:
        width = max(len(s) for s in system_libs)
        for so in system_libs:
            if so not in unknown:
                lines.append(f"    {so:<{width}}  package {packages_for([so], manager)[0][0]}")
        lines.append(f"Install {'it' if len(packages) == 1 else 'them'} ({_SYSTEM[manager]}):")
        lines.append(f"    {install_command(manager, packages, as_root)}")
    for so in unknown:
        lines.append(f"    {so}: find the package that provides it with `{_SEARCH[manager].format(so)}`"
                     f" and install that")
    return lines


def display_problem(platform: str, env=None, connect: bool = False) -> str:
    """Why ``platform`` has no display to open a window on ('' when one answers): DISPLAY or WAYLAND_DISPLAY
    unset, or no server at it. A local X display's socket file is looked for (``connect``: also connected to,
    which takes an X server a few ms to accept; without a file, the abstract socket is tried); a remote one
    (ssh -X, ``host:0``) is left to Qt."""
    env = os.environ if env is None else env
    if _family(platform) == "xcb":
        display = env.get("DISPLAY", "")
        if not display:
            return "DISPLAY is not set: there is no X11 display to open the window on"
        m = re.fullmatch(r"(?:unix)?:(\d+)(?:\.\d+)?", display)
        if m is None:
            return ""
        path = f"/tmp/.X11-unix/X{m.group(1)}"
        if not connect and os.path.exists(path):
            return ""
        import socket

        for address in ("\0" + path, path):  # Xorg and Xvfb listen on the abstract socket and on the file
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(1.0)
                try:
                    s.connect(address)
                    return ""
                except OSError:
                    continue
        return f"no X server answers at DISPLAY={display} (nothing listens on {path})"
    if _family(platform) == "wayland":
        name = env.get("WAYLAND_DISPLAY", "")
        if not name:
            return "WAYLAND_DISPLAY is not set: there is no Wayland compositor to open the window on"
        sock = Path(name) if name.startswith("/") else Path(env.get("XDG_RUNTIME_DIR", "/run/user/0")) / name
        return "" if sock.exists() else f"no Wayland compositor at {sock} (WAYLAND_DISPLAY={name})"
    return ""


def _where(platform: str, env) -> str:
    if _family(platform) == "xcb":
        return f"the X11 display {env.get('DISPLAY')}" if env.get("DISPLAY") else "X11"
    return f"the Wayland display {env.get('WAYLAND_DISPLAY')}" if env.get("WAYLAND_DISPLAY") else "Wayland"


HEADLESS_HINT = ("Without a window, `gpuviz snapshot`, `gpuviz export` and `gpuviz info` work here: Qt's offscreen "
                 "platform needs none of this.")
DOCTOR_HINT = "`gpuviz doctor` checks everything else gpuviz needs, in plain words."


def explain(check: PluginCheck, env=None, manager: str | None = None, as_root: bool | None = None) -> str:
    """The message a student reads when ``check``'s plugin does not load."""
    env = os.environ if env is None else env
    head = (f"gpuviz cannot open its window: Qt's {check.platform!r} platform plugin (for "
            f"{_where(check.platform, env)}) does not load")
    system_libs = [m for m in check.missing if not _qt_own(m)]
    if system_libs:
        head += f": {'this system library is' if len(system_libs) == 1 else 'these system libraries are'} " \
                f"not installed: {', '.join(system_libs)}."
    else:
        head += f": {check.load_error}" if check.plugin is None else "."
    lines = [head, *fix_lines(check, manager, as_root), "Then start gpuviz again."]
    if check.evidence:
        lines.append("What the system's loader says:")
        lines += [f"    {e}" for e in check.evidence]
    elif check.load_error and check.plugin is not None:
        lines.append(f"The loader says: {check.load_error}")
    lines += [HEADLESS_HINT, DOCTOR_HINT]
    return "\n".join(lines)


def may_install(env=None) -> bool:
    """gpuviz installs system packages itself only as root, with apt (as ``bash dev test`` does), and not when
    ``GPUVIZ_NO_SYSTEM_INSTALL=1``."""
    env = os.environ if env is None else env
    return (hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get") is not None
            and env.get(NO_INSTALL_ENV, "") not in ("1", "true", "yes"))


def install_with_apt(packages) -> bool:
    """``apt-get update`` and ``apt-get install`` of ``packages``, saying so on stderr; True when it worked."""
    print(f"gpuviz: installing the system libraries Qt's window needs: {' '.join(packages)}", file=sys.stderr)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        for cmd in (["apt-get", "update", "-qq"],
                    ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages]):
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
            if done.returncode != 0:
                tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
                print(f"gpuviz: {' '.join(cmd[:2])} failed: {tail[0]}", file=sys.stderr)
                return False
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"gpuviz: could not run apt-get: {exc}", file=sys.stderr)
        return False
    return True


def ensure_platform(env=None, install: bool | None = None) -> None:
    """Raise :class:`PlatformUnavailable` (with what to run) when none of the platforms Qt will try for this
    session can open a window; install what is missing first where that is allowed (:func:`may_install`).
    Offscreen, minimal and the other display-less platforms, and systems other than Linux, pass at once."""
    env = os.environ if env is None else env
    platforms = session_platforms(env)
    if not platforms or not sys.platform.startswith("linux"):
        return
    if any(_family(p) not in CHECKED for p in platforms):
        return  # a fallback Qt can always take (offscreen ...) or one this check does not know
    failures = []
    for platform in platforms:
        check = check_plugin(platform, env)
        if check.loads:
            problem = display_problem(platform, env)
            if not problem:
                return
            failures.append((check, problem))
            continue
        install = may_install(env) if install is None else install
        packages, _ = packages_for([m for m in check.missing if not _qt_own(m)], "apt")
        if install and packages and package_manager() == "apt" and install_with_apt(packages):
            check = check_plugin(platform, env)
            if check.loads:
                problem = display_problem(platform, env)
                if not problem:
                    return
                failures.append((check, problem))
                continue
        failures.append((check, ""))
    # the first platform Qt would try says most; a display problem only matters once a plugin loads
    for check, problem in failures:
        if not check.loads:
            raise PlatformUnavailable(explain(check, env))
    check, problem = failures[0]
    raise PlatformUnavailable(f"gpuviz cannot open its window: {problem}.\n"
                              f"On a desktop, start gpuviz from a terminal inside the desktop session; over ssh, "
                              f"connect with `ssh -X`.\n{HEADLESS_HINT}\n{DOCTOR_HINT}")


def main(argv=None) -> int:
    """``python -m gpuviz.qt_platform [--install]``: what ``bash dev app`` runs once its venv is set up."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        # --install: install what is missing where that is allowed (as root, with apt); else only say what to run
        ensure_platform(install=None if "--install" in argv else False)
    except PlatformUnavailable as exc:
        print(exc, file=sys.stderr)
        return EXIT_STATUS
    return 0


if __name__ == "__main__":
    sys.exit(main())
