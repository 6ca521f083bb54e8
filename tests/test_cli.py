"""The command line: kernels, capture, info (through main(), and once through the installed script)."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from gpuviz.cli import main
from gpuviz.catalog import all_kernels


def test_kernels_lists_every_bundled_kernel_with_a_description(capsys):
    assert main(["kernels"]) == 0
    out = capsys.readouterr().out.splitlines()
    names = [line.split()[0] for line in out]
    assert names == list(all_kernels())
    assert all(len(line.split(None, 1)[1]) > 10 for line in out)


def test_capture_then_info_json(tmp_path, capsys):
    path = tmp_path / "mm.gpuviz"
    assert main(["capture", "matmul_tiled", "--size", "32", "--block", "16x16", "-o", str(path)]) == 0
    capsys.readouterr()
    assert main(["info", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["kernel"] == "matmul_tiled" and info["backend"] == "cpu"
    assert info["grid"] == [2, 2, 1] and info["block"] == [16, 16, 1] and info["threads"] == 1024
    n, tile = 32, 16
    ev = info["events"]
    assert ev["global_load"] == 1024 * 2 * n // tile
    assert ev["shared_store"] == 1024 * 2 * n // tile
    assert ev["shared_load"] == 1024 * 2 * n
    assert ev["barrier"] == 1024 * 2 * n // tile
    assert ev["global_store"] == 1024 and ev["atomic"] == 0
    assert info["barriers_per_thread"] == [4, 4]
    assert info["dropped"] == 0


def test_capture_with_chosen_blocks(tmp_path, capsys):
    path = tmp_path / "va.gpuviz"
    # 600 elements in blocks of 128: block 1 is full, block 4 (the last) holds elements 512..599
    assert main(["capture", "vector_add", "--size", "600", "--block", "128", "--blocks", "1,4", "-o", str(path)]) == 0
    capsys.readouterr()
    main(["info", str(path), "--json"])
    info = json.loads(capsys.readouterr().out)
    assert info["events"]["global_store"] == 128 + (600 - 4 * 128)
    assert info["events"]["start"] == 2 * 128


def test_capture_errors_are_messages_not_tracebacks(tmp_path, capsys):
    assert main(["capture", "nope", "-o", str(tmp_path / "x.gpuviz")]) == 2
    err = capsys.readouterr().err
    assert "no bundled kernel named 'nope'" in err and "vector_add" in err
    assert main(["capture", "vector_add", "--block", "2048", "-o", str(tmp_path / "x.gpuviz")]) == 2
    assert "CUDA's limit" in capsys.readouterr().err
    assert not (tmp_path / "x.gpuviz").exists()


def test_info_on_a_damaged_file_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.gpuviz"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 100)
    assert main(["info", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "bad.gpuviz" in err and "Traceback" not in err


@pytest.mark.skipif(shutil.which("gpuviz") is None and not os.path.exists(os.path.join(os.path.dirname(sys.executable), "gpuviz")),
                    reason="the gpuviz console script is not installed in this environment")
def test_installed_console_script_runs(tmp_path):
    exe = shutil.which("gpuviz") or os.path.join(os.path.dirname(sys.executable), "gpuviz")
    out = subprocess.run([exe, "kernels"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "matmul_tiled" in out.stdout


def test_cli_frames_are_numbered_as_the_window_numbers_them(tmp_path, monkeypatch, capsys):
    """Finding 4: `snapshot --frame N` showed the window's frame N+1 (0-based there, 1-based in the window)."""
    from gpuviz.export.framerange import window_frames

    seen = {}

    def fake_snapshot(source, frame=None, out_png=None, **kw):
        import imageio.v3 as iio
        import numpy as np

        iio.imwrite(out_png, np.zeros((8, 8, 3), np.uint8), extension=".png")  # the snapshot is read back
        seen.setdefault("frame", frame)

    monkeypatch.setattr("gpuviz.app.snapshot", fake_snapshot)
    trace = tmp_path / "va.gpuviz"
    assert main(["capture", "vector_add", "--size", "64", "-o", str(trace)]) == 0
    assert main(["snapshot", str(trace), "--frame", "1", "-o", str(tmp_path / "a.png")]) == 0
    assert seen["frame"] == 0  # the window's "frame 1 / N"
    seen.clear()
    assert main(["snapshot", str(trace), "--frame", "-1", "-o", str(tmp_path / "a.png")]) == 0
    assert seen["frame"] == -1  # the last one
    assert main(["snapshot", str(trace), "--frame", "0", "-o", str(tmp_path / "a.png")]) == 1
    assert "numbered from 1" in capsys.readouterr().err
    assert window_frames("1:5") == "0:5" and window_frames("-30:") == "-30:"
    assert window_frames(":-1") == ":" and window_frames("3:-2") == "2:-1"


def test_lesson_print_numbers_frames_as_the_window(capsys):
    import re

    from gpuviz.lessons import LessonPlayer, builtin_lessons, load_lesson

    assert main(["lesson", "simt_hierarchy", "--print"]) == 0
    printed = [int(m) for m in re.findall(r"^\[[^\]]*\] frame (\d+)$", capsys.readouterr().out, re.M)]
    slides = LessonPlayer(load_lesson(builtin_lessons()["simt_hierarchy"])).play_all(lambda s: None)
    assert printed and printed == [sl.frame + 1 for sl in slides]


def test_every_command_has_its_module_and_only_the_chosen_one_loads():
    """gpuviz.cli dispatches by name (COMMANDS): every command of the parser has a module with main(args), and a
    command pays only for what it uses: `gpuviz info` loads neither Qt nor numba, nor the capture package."""
    import argparse
    import importlib

    from gpuviz.cli import COMMANDS
    from gpuviz.cli.parser import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert set(COMMANDS) == {None, *sub.choices}
    for name in COMMANDS.values():
        assert callable(importlib.import_module(f"gpuviz.cli.{name}").main), name
    from gpuviz.app import DEFAULT_TRACE_PATH

    script = ("import sys\nfrom gpuviz.cli import main\nassert main(['info', sys.argv[1], '--json']) == 0\n"
              "print('LOADED', sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph', 'numba',"
              " 'llvmlite') or m == 'gpuviz.capture'))")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    proc = subprocess.run([sys.executable, "-c", script, str(DEFAULT_TRACE_PATH)], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines()[-1] == "LOADED []"
