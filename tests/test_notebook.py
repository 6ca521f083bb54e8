"""The page inline in notebooks (gpuviz/export/inline.py, ``gpuviz.show`` and a trace's rich display):
examples/notebook.ipynb executed by nbclient in a real Jupyter kernel (ipykernel, the python3 kernel of this
interpreter), and the inline page opened in headless Chromium inside its sandboxed iframe."""

from __future__ import annotations

import base64
import gzip
import html
import json
import re
from pathlib import Path

import numpy as np
import pytest

import gpuviz
from gpuviz.export.inline import InlinePage, inline_html
from gpuviz.model.tracefile import save_traces

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples" / "notebook.ipynb"


def _srcdoc(text: str) -> str:
    m = re.search(r'<iframe [^>]*srcdoc="([^"]*)"', text)
    assert m, text[:300]
    return html.unescape(m.group(1))


def _page_data(page: str) -> dict:
    blob = re.search(r'<script id="gpuviz-data" type="application/octet-stream">([^<]*)</script>', page).group(1)
    return json.loads(gzip.decompress(base64.b64decode(blob.strip())))


@pytest.fixture(scope="module")
def reduction():
    from gpuviz.catalog import get_kernel

    reduce_sum = get_kernel("reduce_sum").kernel

    x = np.arange(512, dtype=np.float32)
    partial = np.zeros(2, dtype=np.float32)
    return gpuviz.capture(reduce_sum, 2, 256, x, partial, 512, backend="cpu")


def test_a_traces_rich_display_is_its_page_in_a_sandboxed_iframe(reduction):
    text = reduction._repr_html_()
    assert text.startswith('<iframe class="gpuviz-page"') and 'sandbox="allow-scripts"' in text
    assert "allow-same-origin" not in text  # the page's scripts never reach the notebook
    data = _page_data(_srcdoc(text))
    assert data["kind"] == "trace" and data["title"].startswith("reduce_sum")
    assert data["scenes"][0]["first"] == 0 and data["scenes"][0]["last"] > 0
    dark = _srcdoc(inline_html(reduction, theme="dark", height=500))
    assert 'data-theme="dark"' in dark


def test_show_outside_a_notebook_keeps_to_the_window_and_refuses_page_options(reduction):
    from gpuviz.export.inline import in_notebook

    assert not in_notebook()
    with pytest.raises(TypeError, match="only apply to the page drawn inline"):
        gpuviz.show(reduction, inline=False, theme="dark")


def test_the_inline_page_of_a_saved_trace_and_of_a_shipped_lesson(reduction, tmp_path):
    path = tmp_path / "r.gpuviz"
    save_traces(path, [reduction])
    page = InlinePage(path)
    assert "reduce_sum" in repr(page)
    assert _page_data(_srcdoc(page._repr_html_()))["kind"] == "trace"
    lesson = InlinePage("reduction_ladder")
    assert repr(lesson) == "<gpuviz page of lesson 'reduction_ladder'>"
    with pytest.raises(TypeError, match="gpuviz.show takes"):
        InlinePage(42)


def test_the_example_notebook_runs_in_a_kernel_and_shows_the_page_inline(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    # the kernel's files (connection file, IPython profile) in this test's folder, never in the home directory
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    # python3: ipykernel's own spec, run by this interpreter (no kernel spec of the machine is looked at)
    km = KernelManager(kernel_name="python3", kernel_spec_manager=KernelSpecManager(kernel_dirs=[]), transport="ipc",
                       ip=str(tmp_path / "kernel"))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, km=km, timeout=240, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()

    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(o.output_type != "error" for c in code for o in c.outputs), [o for c in code for o in c.outputs]
    printed = "".join(o.get("text", "") for o in code[0].outputs if o.output_type == "stream")
    assert "partial sums: [32640. 98176.] = total 130816.0" in printed, printed
    shown = [o for o in code[-1].outputs if o.output_type == "display_data"]
    assert len(shown) == 1, code[-1].outputs
    text = shown[0].data["text/html"]
    assert "<gpuviz page of reduce_sum" in shown[0].data["text/plain"]
    data = _page_data(_srcdoc(text))
    assert data["kind"] == "trace" and data["title"].startswith("reduce_sum · grid (2, 1, 1) × block (256, 1, 1)")
    assert data["scenes"][0]["first"] == 0


def test_the_inline_page_draws_and_steps_inside_its_iframe_in_chromium(reduction, tmp_path):
    from tests.test_export_html_browser import _chromium

    exe = _chromium()
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    if exe is None:
        pytest.skip("no chromium on this machine")
    host = tmp_path / "notebook.html"
    host.write_text(f"<!DOCTYPE html><html><body><h1>a notebook</h1>{reduction._repr_html_()}</body></html>",
                    encoding="utf-8")
    errors, requests = [], []
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
        try:
            pg = b.new_page(viewport={"width": 1100, "height": 900})
            pg.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
            pg.on("pageerror", lambda e: errors.append(str(e)))
            pg.on("request", lambda r: requests.append(r.url))
            pg.goto(host.as_uri())
            frame = pg.frame_locator("iframe.gpuviz-page")
            inner = next(f for f in pg.frames if f is not pg.main_frame)
            inner.wait_for_function("() => document.body.dataset.ready !== undefined", timeout=15000)
            assert inner.evaluate("document.body.dataset.ready") == "1"
            assert inner.evaluate("document.body.dataset.frame") == "0"
            frame.locator("body").click(position={"x": 5, "y": 5})
            pg.keyboard.press("ArrowRight")
            inner.wait_for_function("() => document.body.dataset.frame === '1'", timeout=5000)
            assert inner.inner_text("#frame-title").strip()
            box = pg.locator("iframe.gpuviz-page").bounding_box()
            assert box["height"] >= 700 and box["width"] >= 1000
        finally:
            b.close()
    assert errors == [] and requests == [host.as_uri()], (errors, requests)
