"""``gpuviz doctor``: its report here (offscreen, no GPU) has no problem and exits 0; with a system library of
the xcb plugin hidden, or numba-cuda hidden, it exits 1 naming what is missing and the fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_qt_platform import HIDE, _can_hide

GPUVIZ = Path(sys.executable).with_name("gpuviz")


def _doctor(cwd, prefix=(), **env):
    run_env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY", "DISPLAY")}
    run_env.update(GPUVIZ_NO_SYSTEM_INSTALL="1", **env)
    done = subprocess.run([*prefix, str(GPUVIZ), "doctor"], capture_output=True, text=True, timeout=300, cwd=cwd,
                          env=run_env)
    return done.returncode, done.stdout + done.stderr


def test_doctor_reports_everything_and_exits_0_offscreen(tmp_path):
    status, out = _doctor(tmp_path, QT_QPA_PLATFORM="offscreen")
    assert status == 0, out
    for topic in ("Qt platform plugin xcb", "Qt platform plugin wayland", "display", "Qt ", "fonts", "numba ",
                  "CUDA GPU", "cache folder", "recordings", "temporary folder"):
        assert f" {topic}" in out, (topic, out)
    assert "starts on offscreen" in out and "PROBLEM" not in out and out.rstrip().endswith("has what it needs here.")
    assert f"{tmp_path} is writable" in out  # recordings go to the current folder


@pytest.mark.skipif(not _can_hide(), reason="needs unshare -rm (a private mount namespace) and the xcb plugin")
def test_doctor_names_a_hidden_library_of_the_sessions_plugin(tmp_path):
    prefix = ["unshare", "-rm", "--propagation", "private", sys.executable, str(HIDE), "libxcb-icccm.so.4", "--"]
    status, out = _doctor(tmp_path, prefix, DISPLAY=":93")
    assert status == 1, out
    line = next(x for x in out.splitlines() if "Qt platform plugin xcb" in x)
    assert "PROBLEM" in line and "missing libxcb-icccm.so.4" in line and "this session's window needs it" in line, out
    assert "libxcb-icccm.so.4 => not found" in out
    assert "apt-get install libxcb-icccm4" in out or "install xcb-util-wm" in out or "--needed xcb-util-wm" in out, out
    assert "problem(s): Qt platform plugin xcb" in out


def test_doctor_names_numba_cuda_when_it_is_hidden(tmp_path):
    """numba_cuda made unimportable for the doctor's process and its subprocesses (a sitecustomize on PYTHONPATH
    that refuses it, as an environment without the package would)."""
    hider = tmp_path / "hide"
    hider.mkdir()
    (hider / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'numba_cuda' or name.startswith('numba_cuda.'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, _Hide())\n")
    status, out = _doctor(tmp_path, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(hider))
    assert status == 1, out
    line = next(x for x in out.splitlines() if " numba-cuda " in x)
    assert "PROBLEM" in line and "`import numba_cuda` finds nothing" in line, out
    assert "pip install 'numba-cuda==0.30.4'" in out and "problem(s): numba-cuda" in out
