"""The GPU backend's build of every corpus launch, without a GPU: each launch the capture plan accepts is
rewritten into its recording variant's source (numba's compile for the GPU is the only step left out:
gpu.SourceOnlyCuda), or refused with a one-line message that names the file and line and says what to write.
Shared arrays the plan sizes at run time (shapes from closures, from a local ``N = 100``, from a device
function's parameters) get the shapes the CPU executor gives them.
"""

import numpy as np
import pytest

from . import corpus_support as C

pytestmark = pytest.mark.skipif(not C.CORPUS.exists(), reason="no corpus file: run bench/corpus_extract.py")

#: what the GPU build still refuses, by the start of its message: views (the simulator's recorder and the
#: CPU executor follow them; the GPU recorder cannot map a view's elements back to its array yet) and one
#: parameter reused as another array
REFUSED_ON_GPU = ("array slicing (a view", "parameter 'arr' is indexed and also assigned")


def _build_all():
    from gpuviz.capture.errors import UnsupportedConstruct
    from gpuviz.capture.backends.gpu.launch import variant_source
    from gpuviz.capture.frontend.plan import plan_for

    index, arrays = C.load()
    rb = C.Rebuilder(index, arrays)
    out = []
    for launch in index["launches"]:
        if "unstorable" in launch or "kernel" not in launch:
            continue
        try:
            kernel = rb.function(launch["kernel"])
            args = [C.decode_value(e, rb.arrays) for e in launch["args"]]
        except Exception:  # noqa: BLE001 - not rebuildable: not the GPU build's answer
            continue
        if plan_for(kernel).diagnostics:  # refused by the plan, as on every backend
            continue
        row = {"launch": launch, "kernel": kernel, "args": args, "id": f"{launch.get('test')}::{launch.get('kernel_name')}"}
        try:
            row["info"], row["sources"] = variant_source(kernel, tuple(launch["grid"]), tuple(launch["block"]), args,
                                                         dynamic_shared_bytes=launch.get("dynshared", 0))
        except UnsupportedConstruct as exc:
            row["refused"] = str(exc)
        except Exception as exc:  # noqa: BLE001 - an internal error: what this test is about
            row["crashed"] = f"{type(exc).__name__}: {exc}"
        out.append(row)
    return out


@pytest.fixture(scope="module")
def built():
    return _build_all()


def test_every_launch_the_plan_accepts_builds_or_is_refused_with_its_reason(built):
    assert len(built) > 500
    crashed = [(r["id"], r["crashed"][:200]) for r in built if "crashed" in r]
    assert crashed == []
    refused = [r for r in built if "refused" in r]
    for r in refused:
        first = r["refused"].splitlines()[0]
        assert first.startswith("corpus/") and ".py:" in first, first  # file and line first
        reason = first.split(": ", 1)[1]
        assert reason.startswith(REFUSED_ON_GPU), (r["id"], first)
    assert len(refused) <= 17  # 16 launches slice (views), one reuses a parameter


def test_shared_shapes_the_plan_leaves_to_run_time_are_the_cpu_executors(built):
    import gpuviz
    from gpuviz.capture.frontend.plan import plan_for

    checked = 0
    for r in built:
        if "info" not in r or not any(d.shape is None for d in plan_for(r["kernel"]).shared_decls):
            continue
        launch = r["launch"]
        trace = gpuviz.capture(r["kernel"], tuple(launch["grid"]), tuple(launch["block"]), *_copies(r["args"]),
                               backend="cpu", lockstep=False, dynamic_shared_bytes=launch.get("dynshared", 0))
        want = {(a.name, a.shape, a.dtype) for a in trace.launch.arrays if a.space == "shared"}
        got = {(a.name, a.shape, a.dtype) for a in r["info"].arrays if a.space == "shared"}
        assert got == want, r["id"]
        checked += 1
    assert checked >= 40  # test_atomics' shared arrays sized by their callers, test_sync's N = 100, ...


def _copies(args):
    return [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
