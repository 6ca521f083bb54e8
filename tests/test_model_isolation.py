"""The model layer needs numpy only: import it, save, load and analyse a trace with Qt and numba blocked."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent(
    r"""
    import importlib, pkgutil, sys

    BLOCKED = ("PySide6", "pyqtgraph", "numba", "superqt", "shiboken6", "llvmlite")

    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"the model layer must not import {name}")
            return None

    sys.meta_path.insert(0, Block())

    import numpy as np
    import gpuviz.model as model

    imported = []
    for info in pkgutil.iter_modules(model.__path__):
        importlib.import_module(f"gpuviz.model.{info.name}")
        imported.append(info.name)

    from gpuviz.model import analysis
    from gpuviz.model.trace import ArrayInfo, EventKind as K, Launch, Trace
    from gpuviz.model.tracefile import load_trace, save_traces

    lanes = np.arange(32)
    events = {
        "block": np.zeros(64, np.int32),
        "thread": np.r_[lanes, lanes],
        "seq": np.r_[np.ones(32), np.full(32, 2)].astype(np.int32),
        "kind": np.r_[np.full(32, K.GLOBAL_LOAD), np.full(32, K.SHARED_STORE)].astype(np.uint8),
        "array": np.r_[np.zeros(32), np.ones(32)].astype(np.int16),
        "index": np.r_[lanes, lanes * 32],
        "line": np.full(64, 7),
    }
    launch = Launch("k", 1, 32, [ArrayInfo("a", (32,), "float32"), ArrayInfo("t", (32, 32), "float32", "shared")])
    trace = Trace(launch, events)
    path = sys.argv[1]
    save_traces(path, [trace])
    back = load_trace(path)
    s = analysis.summary(back)
    assert s["sectors_per_request"]["load"] == 4.0, s
    assert s["bank_conflicts"]["store"] == 31, s
    analysis.divergence(back)
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    assert not leaked, leaked
    print("OK", ",".join(sorted(imported)))
    """
)


def test_model_imports_and_runs_without_qt_or_numba(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "iso.gpuviz")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("OK")
    for name in ("trace", "tracefile", "analysis", "devices"):
        assert name in proc.stdout.split()[1].split(",")


#: what each lower layer of gpuviz may import of gpuviz: the model stands alone, capture makes traces of the model,
#: the runner runs programs through capture; none of them reaches up into the app (ui, export, lessons, timing, cli)
#: (the runner's job for a bundled kernel, gpuviz/runner/bundled.py, takes it from the kernels' catalog)
LAYERS = {"model": set(), "capture": {"model"}, "runner": {"model", "capture", "catalog"}}


def gpuviz_imports(path: Path) -> set[str]:
    """The gpuviz subpackages (and top-level modules) a file imports, at any depth of its code."""
    import ast

    package = path.relative_to(REPO / "gpuviz").parent.parts
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            where = list(package[:len(package) - (node.level - 1)]) + (node.module.split(".") if node.module else [])
            out.add(where[0] if where else node.names[0].name)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "gpuviz":
            parts = node.module.split(".")
            out.add(parts[1] if len(parts) > 1 else node.names[0].name)
        elif isinstance(node, ast.Import):
            out |= {a.name.split(".")[1] for a in node.names if a.name.startswith("gpuviz.")}
    return out


def test_the_lower_layers_import_no_higher_one():
    wrong = []
    for layer, allowed in LAYERS.items():
        for path in sorted((REPO / "gpuviz" / layer).rglob("*.py")):
            extra = gpuviz_imports(path) - allowed - {layer, "version"}  # gpuviz.version: the version, no imports
            if extra:
                wrong.append(f"{path.relative_to(REPO)} imports gpuviz.{', gpuviz.'.join(sorted(extra))}")
    assert not wrong, "\n".join(wrong)
