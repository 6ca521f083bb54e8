"""gpuviz as people install it: a wheel whose bundled kernels are ``gpuviz.kernels`` (never a top-level
``kernels`` package), reached through one module, gpuviz.catalog.

The wheel test builds sdist and wheel with ``python -m build`` (no download: ``--no-isolation``, the test
extras carry build and setuptools), installs the wheel with ``--no-deps`` into a fresh venv outside the checkout
whose dependencies are this venv's (a site folder of links to them, the checkout's editable gpuviz left out),
and runs the installed ``gpuviz`` from a folder of its own.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KERNEL_PACKAGES = ("kernels", "gpuviz.kernels")


def _imported_kernel_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of each import of the bundled kernels in ``path``: ``import kernels``, ``from kernels.x
    import``, ``gpuviz.kernels`` and relative imports that reach it from inside gpuviz, and import_module calls
    with such a name."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    except SyntaxError:  # tests/user_scripts holds programs that do not parse, on purpose: they import nothing
        return []
    package = None
    if path.is_relative_to(ROOT / "gpuviz"):
        package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level and package is not None:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
            names = [a.value for a in node.args[:1] if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        for name in names:
            if any(name == p or name.startswith(p + ".") for p in KERNEL_PACKAGES):
                found.append((node.lineno, name))
                break
    return found


def test_only_the_catalog_imports_the_bundled_kernels():
    allowed = {ROOT / "gpuviz" / "catalog.py"}
    offenders = []
    for folder in ("gpuviz", "tests", "bench", "examples"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path in allowed or "__pycache__" in path.parts:
                continue
            offenders += [f"{path.relative_to(ROOT)}:{line}: {name}" for line, name in _imported_kernel_modules(path)]
    assert not offenders, "import the bundled kernels through gpuviz.catalog:\n" + "\n".join(offenders)


def test_the_import_check_sees_each_way_of_importing_them(tmp_path):
    """The check above is not vacuous: each spelling it must catch, in a file of gpuviz's own folder."""
    probe = ROOT / "gpuviz" / "ui" / "_probe_kernel_imports.py"
    probe.write_text("import kernels\nfrom kernels.matmul import TILE\nfrom gpuviz.kernels import all_kernels\n"
                     "from ..kernels import catalog\nimport importlib\nimportlib.import_module('kernels.fusion')\n"
                     "from gpuviz.catalog import get_kernel\n")
    try:
        lines = [line for line, _ in _imported_kernel_modules(probe)]
    finally:
        probe.unlink()
    assert lines == [1, 2, 3, 4, 6]


def test_the_catalog_reaches_the_kernels_by_their_installed_name():
    from gpuviz import catalog

    assert catalog.get_kernel("vector_add").kernel.py_func.__module__ == "gpuviz.kernels.vector_add"
    assert catalog.kernels_folder() == ROOT / "kernels"  # the checkout's folder, under its installed name
    assert catalog.kernel_module("matmul").TILE == 16
    assert catalog.kernel_info("matmul_tiled").name == "matmul_tiled"
    with pytest.raises(ModuleNotFoundError, match="no bundled kernel module named 'nothing'; modules: .*vector_add"):
        catalog.kernel_module("nothing")
    with pytest.raises(ValueError, match="not the name"):
        catalog.kernel_module("../app")


def _dependency_site(tmp: Path) -> Path:
    """A site folder of links to this venv's installed packages, the checkout's editable gpuviz left out: the
    fresh venv takes its dependencies from it (its .pth files too: numba-cuda's redirector) and no download."""
    site = tmp / "deps"
    site.mkdir()
    here = Path(sysconfig.get_paths()["purelib"])
    for entry in here.iterdir():
        if entry.name.startswith(("gpuviz", "__editable__", "kernels")):
            continue
        (site / entry.name).symlink_to(entry)
    return site


def test_a_checkout_that_was_never_installed_finds_its_kernels(tmp_path):
    """``PYTHONPATH=. python -m pytest tests/test_gpu.py`` on the GPU machine (a copy of the tree, gpuviz not
    installed): ``gpuviz.kernels`` was not found ('No module named gpuviz.kernels') and no GPU test ran."""
    for folder in ("gpuviz", "kernels"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    probe = (
        "import sys\n"
        # this venv's editable install maps gpuviz.kernels onto the checkout: a machine without it has no such finder
        "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in getattr(f, '__module__', '').lower()]\n"
        "sys.path[:] = [p for p in sys.path if '__editable__' not in p]\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "from gpuviz import catalog\n"
        "print(catalog.kernels_folder())\n"
        "print(sys.modules['gpuviz.kernels'].__file__ if 'gpuviz.kernels' in sys.modules else '-')\n"
        "specs = catalog.all_kernels()\n"
        "print(sys.modules['gpuviz.kernels'].__file__, len(specs), catalog.kernel_module('matmul').TILE)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    folder, before, after = out.stdout.splitlines()
    assert folder == str(tmp_path / "kernels") and before == "-"  # found without importing a kernel
    path, n, tile = after.split()
    assert path == str(tmp_path / "kernels" / "__init__.py") and int(n) >= 10 and int(tile) > 0


def test_the_wheel_installs_and_runs_outside_the_checkout(tmp_path):
    dist = tmp_path / "dist"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # a user's build compiles
    # about 14 s in all (build 3 s, the venv, three gpuviz commands): not marked slow
    built = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "-o", str(dist), str(ROOT)],
                           capture_output=True, text=True, timeout=300, env=env)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    output = built.stdout + built.stderr
    warnings = [line for line in output.splitlines() if "warning" in line.lower()]
    assert not warnings, "python -m build warned:\n" + "\n".join(warnings)
    wheel = next(dist.glob("gpuviz-*.whl"))
    assert next(dist.glob("gpuviz-*.tar.gz"))
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.split("/")[0] == "kernels"], "the wheel installs a top-level kernels package"
    for needed in ("gpuviz/kernels/__init__.py", "gpuviz/kernels/matmul.py", "gpuviz/kernels/catalog.json",
                   "gpuviz/assets/default_trace.gpuviz", "gpuviz/catalog.py", "gpuviz/qt_platform.py"):
        assert needed in names, f"{needed} is not in {wheel.name}"

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    purelib = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    (purelib / "gpuviz_test_dependencies.pth").write_text(
        f"import site; site.addsitedir({str(_dependency_site(tmp_path))!r})\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, timeout=300, capture_output=True)

    work = tmp_path / "work"  # a folder of its own: nothing of the checkout on sys.path
    work.mkdir()
    run_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NUMBA_ENABLE_CUDASIM")}
    run_env.update(QT_QPA_PLATFORM="offscreen", GPUVIZ_NO_SYSTEM_INSTALL="1")

    def gpuviz(*args, timeout=300):
        done = subprocess.run([str(venv / "bin" / "gpuviz"), *args], cwd=work, env=run_env, capture_output=True,
                              text=True, timeout=timeout)
        assert done.returncode == 0, f"gpuviz {' '.join(args)}: {done.returncode}\n{done.stdout}\n{done.stderr}"
        return done.stdout

    where = subprocess.run(
        [str(py), "-c", "import importlib.util, gpuviz, gpuviz.catalog as c, gpuviz.app as a\n"
         "print(gpuviz.__file__); print(c.kernels_folder()); print(a.DEFAULT_TRACE_PATH)\n"
         "print(a.load_default_trace().launch.source_file)\n"
         "print(importlib.util.find_spec('kernels'))"],
        cwd=work, env=run_env, capture_output=True, text=True, timeout=120)
    assert where.returncode == 0, where.stderr
    package, kernels_folder, default_trace, source_file, top_level_kernels = where.stdout.splitlines()
    assert Path(package).is_relative_to(purelib), package  # the wheel's gpuviz, not the checkout's
    assert Path(kernels_folder) == purelib / "gpuviz" / "kernels"
    assert Path(source_file) == purelib / "gpuviz" / "kernels" / "matmul.py"  # the source view reads the wheel's
    assert top_level_kernels == "None", "import kernels finds something"

    listing = gpuviz("kernels")
    assert "vector_add" in listing and "matmul_tiled" in listing
    out = gpuviz("snapshot", default_trace, "-o", "default.png", "--size", "1280x720")
    assert (work / "default.png").stat().st_size > 10_000, out
    shutil.copy(ROOT / "examples" / "my_saxpy.py", work / "my_saxpy.py")
    out = gpuviz("run", "my_saxpy.py", "--backend", "cpu", "-o", "saxpy.gpuviz")
    assert (work / "saxpy.gpuviz").is_file(), out
    info = gpuviz("info", "saxpy.gpuviz")
    assert "saxpy" in info
