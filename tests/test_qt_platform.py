"""The start-up check of Qt's platform plugin (gpuviz/qt_platform.py): a library the plugin needs and the system
lacks is named, with the command that installs it and ldd's lines, before Qt aborts the process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpuviz import qt_platform as qp

ROOT = Path(__file__).resolve().parents[1]
GPUVIZ = Path(sys.executable).with_name("gpuviz")
HIDE = ROOT / "tests" / "hide_library.py"
# what ldd printed for PySide6 6.11.3's libqxcb.so on a fresh Debian 12 with an X server and nothing else
DEBIAN_LDD = """\
\tlibxcb-cursor.so.0 => /lib/x86_64-linux-gnu/libxcb-cursor.so.0 (0x00007fbc6370d000)
\tlibxcb-icccm.so.4 => not found
\tlibxcb-util.so.1 => /lib/x86_64-linux-gnu/libxcb-util.so.1 (0x00007fbc62ba7000)
\tlibxcb-keysyms.so.1 => not found
\tlibxcb-icccm.so.4 => not found
\tlibxcb-keysyms.so.1 => not found
"""
COMMANDS = {
    "apt": "sudo apt-get install libxcb-icccm4 libxcb-keysyms1",
    "dnf": "sudo dnf install xcb-util-wm xcb-util-keysyms",
    "pacman": "sudo pacman -S --needed xcb-util-wm xcb-util-keysyms",
    "zypper": "sudo zypper install libxcb-icccm4 libxcb-keysyms1",
}


def _can_hide() -> bool:
    if shutil.which("unshare") is None or qp.plugin_file("xcb") is None:
        return False
    done = subprocess.run(["unshare", "-rm", "--propagation", "private", "true"], capture_output=True, timeout=30)
    return done.returncode == 0


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY")}
    env.update(DISPLAY=":93", GPUVIZ_NO_SYSTEM_INSTALL="1", **extra)
    return env


@pytest.mark.skipif(not _can_hide(), reason="needs unshare -rm (a private mount namespace) and the xcb plugin")
def test_gpuviz_names_a_hidden_library_and_the_command_not_a_qt_abort(tmp_path):
    """libxcb-icccm.so.4 hidden from gpuviz alone (a mount namespace, tests/hide_library.py): the real plugin, the
    real loader, the real ldd."""
    if not any(Path(d, "libxcb-icccm.so.4").exists() for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib")):
        pytest.skip("libxcb-icccm.so.4 is not installed here: nothing to hide")
    done = subprocess.run(["unshare", "-rm", "--propagation", "private", sys.executable, str(HIDE), "libxcb-icccm.so.4",
                           "--", str(GPUVIZ)], capture_output=True, text=True, timeout=120, env=_env(), cwd=tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == qp.EXIT_STATUS, out
    assert out.startswith("gpuviz cannot open its window: Qt's 'xcb' platform plugin (for the X11 display :93) does "
                          "not load: this system library is not installed: libxcb-icccm.so.4."), out
    assert "libxcb-icccm.so.4 => not found" in out and f"ldd {qp.plugin_file('xcb')}" in out  # ldd's own lines
    manager = qp.package_manager()
    if manager is not None:  # in the namespace gpuviz runs as root: no sudo
        assert COMMANDS[manager].replace("sudo ", "").replace(" libxcb-keysyms1", "").replace(" xcb-util-keysyms",
                                                                                                "") in out, out
    assert "gpuviz doctor" in out
    assert "qt.qpa.plugin" not in out and "Aborted" not in out and "Traceback" not in out


def test_a_fake_ldd_result_gives_every_missing_library_and_each_managers_command(tmp_path, monkeypatch):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "ldd").write_text(f"#!/bin/sh\ncat <<'EOF'\n{DEBIAN_LDD}EOF\n")
    (fake / "ldd").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    missing, lines = qp.ldd_missing(Path("/any/libqxcb.so"))
    assert missing == ["libxcb-icccm.so.4", "libxcb-keysyms.so.1"]  # once each, in ldd's order
    assert lines == ["libxcb-icccm.so.4 => not found", "libxcb-keysyms.so.1 => not found"]
    check = qp.PluginCheck("xcb", Path("/any/libqxcb.so"), "libxcb-icccm.so.4: cannot open shared object file", missing)
    for manager, command in COMMANDS.items():
        lines = qp.fix_lines(check, manager, as_root=False)
        assert f"    {command}" in lines, (manager, lines)
    assert qp.fix_lines(check, "apt", as_root=True)[-1] == "    apt-get install libxcb-icccm4 libxcb-keysyms1"
    unknown = qp.PluginCheck("xcb", Path("/p.so"), "x", ["libxcb-gpuviz-none.so.1"])
    assert qp.fix_lines(unknown, "dnf", as_root=False) == [
        "    libxcb-gpuviz-none.so.1: find the package that provides it with `dnf provides '*/libxcb-gpuviz-none.so.1'`"
        " and install that"]
    own = qp.PluginCheck("xcb", Path("/p.so"), "x", ["libQt6XcbQpa.so.6"])
    assert "pip install --force-reinstall PySide6-Essentials" in qp.fix_lines(own, "apt")[0]


def test_a_plugin_that_does_not_load_is_explained_through_gpuviz_itself(tmp_path):
    """A copy of the xcb plugin without PySide6's Qt libraries beside it (QT_QPA_PLATFORM_PLUGIN_PATH): the real
    check, through the gpuviz command, says what is missing and that it is PySide6's own."""
    plugin = qp.plugin_file("xcb")
    if plugin is None:
        pytest.skip("PySide6 has no xcb plugin here")
    shutil.copy(plugin, tmp_path / "libqxcb.so")
    done = subprocess.run([str(GPUVIZ)], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env=_env(QT_QPA_PLATFORM="xcb", QT_QPA_PLATFORM_PLUGIN_PATH=str(tmp_path)))
    out = done.stdout + done.stderr
    assert done.returncode == qp.EXIT_STATUS, out
    assert "libQt6XcbQpa.so.6" in out and "reinstall" in out and "gpuviz doctor" in out, out
    assert "qt.qpa.plugin" not in out and "Aborted" not in out


def test_which_platforms_a_session_gets_and_what_passes_at_once():
    assert qp.session_platforms({"QT_QPA_PLATFORM": "offscreen"}) == ["offscreen"]
    assert qp.session_platforms({"QT_QPA_PLATFORM": "wayland-egl;xcb:foo=1"}) == ["wayland-egl", "xcb"]
    if sys.platform.startswith("linux"):
        assert qp.session_platforms({"DISPLAY": ":0"}) == ["xcb"]
        assert qp.session_platforms({"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}) == ["wayland", "xcb"]
    qp.ensure_platform({"QT_QPA_PLATFORM": "offscreen"})  # needs no display and no xcb library: nothing checked
    assert qp.display_problem("xcb", {}) == "DISPLAY is not set: there is no X11 display to open the window on"
    assert qp.display_problem("xcb", {"DISPLAY": ":7391"}).startswith("no X server answers at DISPLAY=:7391")
    with pytest.raises(qp.PlatformUnavailable, match="(?s)DISPLAY is not set.*ssh -X.*gpuviz doctor"):
        qp.ensure_platform({"QT_QPA_PLATFORM": "xcb"}, install=False)
