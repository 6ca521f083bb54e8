"""``gpuviz`` opens its window on the embedded default without numba: the default's trace ships with gpuviz, the
kernel list is a catalog (plain data), pyqtgraph loads without CUDA, and numba waits until a capture is asked for,
in the capture's worker process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]

def _run(script: str, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), QT_QPA_PLATFORM="offscreen")
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    return subprocess.run([sys.executable, "-c", script, *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout)


# The window as `gpuviz` opens it (gpuviz.cli.main, no argument), inspected once its first frames are drawn and the
# kernel list is filled; then a capture asked for in the launch panel, and the process inspected again.
WINDOW = textwrap.dedent(
    r"""
    import json, sys
    import gpuviz.app as A

    CAPTURE = "--capture" in sys.argv
    report = {}

    def loaded():
        return sorted(m for m in sys.modules if m.split(".")[0] in ("numba", "llvmlite") or m == "gpuviz.capture"
                      or (m.startswith("gpuviz.kernels.") and m != "gpuviz.kernels.catalog"))

    made = A._application
    def _application(*a, **k):
        app = made(*a, **k)
        from PySide6.QtCore import QTimer
        from PySide6.QtWidgets import QApplication
        from gpuviz.ui.window import MainWindow

        def window():
            return next(w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow))

        def first_frame():
            w = window()
            s = w.session
            report["first"] = loaded()
            report["kernel"] = s.trace.launch.kernel_name
            report["frames"] = s.frames.n_frames
            report["label"] = s.source_label
            report["live"] = w.is_live_trace(s.trace)
            report["kernel_list"] = [w.launch_panel.kernel.itemText(i) for i in range(w.launch_panel.kernel.count())]
            report["errors"] = {vid: v.errors for vid, v in w.views.items() if v.errors}
            report["presenter"] = "gpuviz.ui.presenter" in sys.modules
            # the views behind a tab: none has computed the trace (each waits until it is shown)
            behind = [vid for vid, v in w.views.items() if not v.on_screen()]
            report["behind"] = {vid: w.views[vid]._trace_stale for vid in behind}
            if behind:
                w.docks[behind[0]].raise_()  # a click on its tab
                QTimer.singleShot(300, lambda: shown(behind[0]))
            else:
                shown(None)

        def shown(vid):
            w = window()
            if vid is not None:
                v = w.views[vid]
                report["raised"] = {"view": vid, "on_screen": v.on_screen(), "stale": v._trace_stale or v._stale,
                                    "errors": v.errors}
            if not CAPTURE:
                finish()
                return
            panel = w.launch_panel
            panel.runner.succeeded.connect(lambda *_: QTimer.singleShot(0, captured))
            panel.runner.failed.connect(lambda msg, _r: (report.update(failed=msg), finish()))
            panel.run({"kernel": "vector_add", "size": 100, "block": [64], "backend": "cpu"})

        def captured():
            w = window()
            report["captured_kernel"] = w.session.trace.launch.kernel_name
            report["captured_live"] = w.is_live_trace(w.session.trace)
            report["after_capture"] = loaded()
            finish()

        def finish():
            print("REPORT " + json.dumps(report), flush=True)
            window().close()
            app.quit()

        QTimer.singleShot(400, first_frame)
        QTimer.singleShot(150_000, finish)
        return app

    A._application = _application
    sys.argv = ["gpuviz"]
    from gpuviz.cli import main
    code = main()
    sys.exit(code)
    """
)


def _report(proc) -> dict:
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("REPORT ")), None)
    assert line is not None, proc.stdout + proc.stderr[-4000:]
    return json.loads(line.split(" ", 1)[1])


def test_the_window_shows_the_shipped_default_without_numba_or_the_capture_package():
    from gpuviz.app import DEFAULT_KERNEL
    from gpuviz.catalog import kernel_catalog

    report = _report(_run(WINDOW))
    assert report["first"] == [], report["first"]  # neither numba, nor gpuviz.capture, nor a kernel module
    assert report["kernel"] == DEFAULT_KERNEL and report["frames"] > 100
    assert "shipped trace" in report["label"] and report["live"] is False  # not said to be captured here
    assert report["kernel_list"] == list(kernel_catalog())  # the launch panel's list, from the catalog
    assert report["errors"] == {}
    assert report["presenter"] is False  # nobody presents: its module (~700 lines) is not loaded for the frames
    # the views the layout put behind a tab computed nothing for the trace; the one brought to the front drew it
    assert report["behind"] and all(report["behind"].values()), report["behind"]
    raised = report["raised"]
    assert raised["on_screen"] and not raised["stale"] and raised["errors"] == [], raised


@pytest.mark.slow
def test_a_capture_asked_for_runs_in_its_worker_and_numba_never_enters_the_window():
    report = _report(_run(WINDOW, "--capture"))
    assert "failed" not in report, report.get("failed")
    assert report["captured_kernel"] == "vector_add" and report["captured_live"] is True
    assert report["after_capture"] == [], report["after_capture"]


def test_the_kernel_catalog_says_what_the_kernels_say():
    from gpuviz.catalog import all_kernels
    from gpuviz.catalog import kernel_module

    kc = kernel_module("catalog")
    catalog_json, info_of, kernel_catalog, read_catalog, source_digest = (
        kc.catalog_json, kc.info_of, kc.kernel_catalog, kc.read_catalog, kc.source_digest)

    stored = read_catalog()
    assert stored is not None, "kernels/catalog.json is missing: write it with `python -m gpuviz.kernels.catalog`"
    assert stored == catalog_json(), "kernels/catalog.json is stale: write it again with `python -m gpuviz.kernels.catalog`"
    assert stored["source_sha256"] == source_digest()
    specs = all_kernels()
    catalog = kernel_catalog()
    assert list(catalog) == list(specs)  # teaching order kept
    for name, spec in specs.items():
        assert catalog[name] == info_of(spec)
    tiled = catalog["matmul_tiled"]
    assert tiled.frame_notes == tuple(tuple(n) for n in specs["matmul_tiled"].frame_notes) and tiled.frame_notes


def test_a_stale_catalog_is_not_believed(monkeypatch, tmp_path):
    from gpuviz.catalog import kernel_module

    kc = kernel_module("catalog")

    stale = kc.catalog_json()
    stale["source_sha256"] = "0" * 64  # written from kernel sources that are not the ones here
    stale["kernels"][0]["description"] = "an old description"
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(stale))
    monkeypatch.setattr(kc, "CATALOG_PATH", path)
    monkeypatch.setattr(kc, "read_catalog", lambda p=path: json.loads(p.read_text()))
    monkeypatch.setattr(kc, "_CATALOG", None)
    first = kc.kernel_catalog()[stale["kernels"][0]["name"]]
    assert first.description != "an old description"  # read from the kernels themselves instead
    monkeypatch.setattr(kc, "_CATALOG", None)
    stale["source_sha256"] = kc.source_digest()
    path.write_text(json.dumps(stale))
    assert kc.kernel_catalog()[stale["kernels"][0]["name"]].description == "an old description"


def test_the_shipped_default_trace_is_what_a_capture_gives_now():
    from gpuviz.app import DEFAULT_TRACE_PATH, capture_default_trace, load_default_trace
    from gpuviz.model.prepared import prepare

    assert DEFAULT_TRACE_PATH.is_file()
    shipped, fresh = load_default_trace(), capture_default_trace()
    hint = "the shipped default is stale: python -c 'from gpuviz.app import write_default_trace; write_default_trace()'"
    assert len(shipped) == len(fresh), hint
    assert shipped.recorded_fields == fresh.recorded_fields, hint
    for name in fresh.recorded_fields:
        assert np.array_equal(shipped.field(name), fresh.field(name), equal_nan=True), (name, hint)
    a, b = shipped.launch, fresh.launch
    assert (a.kernel_name, a.grid, a.block, a.backend) == (b.kernel_name, b.grid, b.block, b.backend), hint
    assert [x.to_json() if hasattr(x, "to_json") else x for x in a.arrays] == \
        [x.to_json() if hasattr(x, "to_json") else x for x in b.arrays], hint
    assert [x.to_json() for x in a.sites] == [x.to_json() for x in b.sites], hint
    assert a.meta["bundled_kernel"] == b.meta["bundled_kernel"], hint
    assert prepare(shipped).index is not None  # its index is stored: opening reads it, builds nothing
    assert a.source_file == b.source_file  # the kernel file of this checkout, whichever machine wrote the trace


def test_without_the_shipped_file_the_default_is_captured_and_said_to_be_live(monkeypatch, tmp_path):
    import gpuviz.app as app

    monkeypatch.setattr(app, "DEFAULT_TRACE_PATH", tmp_path / "absent.gpuviz")
    trace, label, live = app._load(None)
    assert live is True and "shipped" not in label
    assert trace.launch.kernel_name == app.DEFAULT_KERNEL and trace.launch.backend == "cpu"


ISOLATED = textwrap.dedent(
    r"""
    import sys
    import gpuviz
    assert "gpuviz.capture" not in sys.modules, "import gpuviz loaded the capture package"
    capture = gpuviz.capture
    import gpuviz.capture.limits
    from gpuviz.capture.limits import normalize_dims
    assert gpuviz.capture is capture and callable(capture), gpuviz.capture  # still the function, not the package
    assert sys.modules["gpuviz.capture"].__name__ == "gpuviz.capture"
    import gpuviz.ui.views
    assert "pyqtgraph" in sys.modules
    assert sys.modules.get("cuda.bindings", "absent") is not None  # hidden only while pyqtgraph loaded
    import pyqtgraph.widgets.RawImageWidget as raw
    assert raw.cudart is None
    try:
        import cuda.bindings.runtime  # noqa: F401  (installed with numba-cuda: a capture can still use it)
    except ImportError as e:
        assert "halted" not in str(e), e
    print("OK")
    """
)


def test_import_gpuviz_leaves_the_capture_package_and_cuda_for_later():
    proc = _run(ISOLATED)
    assert proc.returncode == 0 and proc.stdout.strip() == "OK", proc.stdout + proc.stderr


def test_the_application_keeps_what_it_imported_out_of_full_collections():
    """gc.freeze() once the QApplication is made: the ~70,000 objects of numpy, Qt and pyqtgraph are not walked by
    every full garbage collection (80-120 ms each with the GIL held, a stall of the window)."""
    out = _run("import gc; from gpuviz.app import _application; n = gc.get_freeze_count(); "
               "_application(headless=True); print(n, gc.get_freeze_count())")
    assert out.returncode == 0, out.stderr[-2000:]
    before, after = (int(x) for x in out.stdout.split()[-2:])
    assert before == 0 and after > 10_000
