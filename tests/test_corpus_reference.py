"""The corpus launches numba's simulator cannot judge, without a GPU.

* The two ``alignment=`` launches (corpus_support.SIMULATOR_REFUSES) are judged against a GPU reference file
  (bench/corpus_gpu_reference.py writes the real one on a GPU) when it holds them; here the file is made in tmp_path
  from the CPU executor's own run of the launch, so that an unchanged one must come out exact and a changed one not.
* forall(0)'s grid of no blocks (corpus_support.SIMULATOR_ONLY_LAUNCHES) is a launch only the simulator makes:
  "not stored", on every backend, before anything runs.
"""

import pytest

from . import corpus_support as C

pytestmark = pytest.mark.skipif(not C.CORPUS.exists(), reason="no corpus file: run bench/corpus_extract.py")

LOCAL = "numba.cuda.tests.cudapy.test_array_alignment.TestCudasimUnsupportedAlignment.test_local_unsupported"
SHARED = "numba.cuda.tests.cudapy.test_array_alignment.TestCudasimUnsupportedAlignment.test_shared_unsupported"
FORALL_NO_WORK = "numba.cuda.tests.cudapy.test_forall.TestForAll.test_forall_no_work"
GPU = "a test GPU"


@pytest.fixture(scope="module")
def rb():
    return C.Rebuilder(*C.load())


def launch_of(rb, test):
    return next(r for r in rb.launches if r.get("test") == test)


def stand_in(rb):
    """A launch of LOCAL's test whose kernel writes an array (test_forall_1's ``x[i] += 1`` over 11 threads): the
    alignment kernels take no arguments, so only a stand-in has outputs to compare."""
    return {**launch_of(rb, "numba.cuda.tests.cudapy.test_forall.TestForAll.test_forall_1"), "test": LOCAL,
            "sim_raised": "RuntimeError"}


def reference_file(rb, launch, path, *, change_output=False, change_event=False):
    """A GPU reference file holding ``launch`` as the CPU executor runs it (outputs and events), in
    corpus_support.write_gpu_reference's format, optionally with one output element or one event's line changed."""
    args = [C.decode_value(e, rb.arrays) for e in launch["args"]]
    trace = C.capture_launch(rb.function(launch["kernel"]), launch, args, "cpu")
    events, names = C.event_matrix(trace)
    arrays, outputs = {"r0_events": events.copy()}, []
    for k, arg in enumerate(args):
        host = C.host_of(arg)
        if host is not None:
            arrays[f"r0_out{k}"] = host.copy()
        outputs.append(f"r0_out{k}" if host is not None else None)
    if change_output:
        arrays[next(filter(None, outputs))].flat[0] += 1
    if change_event:
        arrays["r0_events"][-1, 5] += 1  # the last event's line
    entry = {"test": launch["test"], "kernel_name": launch["kernel_name"], "pos": 0, "grid": launch["grid"],
             "block": launch["block"], "dynshared": 0, "numba_raised": None, "outputs": outputs,
             "events": "r0_events", "event_names": names}
    provenance = {"gpu": GPU, "compute_capability": [9, 0], "numba": "-", "numba_cuda": "-", "numpy": "-",
                  "commit": None, "date": "-", "command": "tests/test_corpus_reference.py"}
    C.write_gpu_reference(path, provenance, {C.reference_key(launch, rb.launches): entry}, arrays)
    return path


@pytest.mark.parametrize("which", ["alignment launch", "stand-in with outputs"])
def test_a_launch_the_simulator_refuses_is_exact_against_an_equal_gpu_reference(rb, tmp_path, which):
    launch = launch_of(rb, LOCAL) if which == "alignment launch" else stand_in(rb)
    ref = reference_file(rb, launch, tmp_path / "ref.npz")
    r = C.run_launch(rb, launch, reference_file=ref)
    assert r["class"] == "exact", r
    assert f"against numba-cuda's own launch on {GPU}" in r["detail"]
    assert C.SIMULATOR_REFUSES[LOCAL] in r["detail"]


def test_outputs_unlike_the_gpu_references_are_wrong(rb, tmp_path):
    launch = stand_in(rb)
    ref = reference_file(rb, launch, tmp_path / "ref.npz", change_output=True)
    r = C.run_launch(rb, launch, reference_file=ref)
    assert r["class"] == "wrong", r
    assert r["detail"].startswith("arguments [0] differ") and GPU in r["detail"]


def test_events_unlike_the_gpu_recordings_are_outputs_only(rb, tmp_path):
    launch = launch_of(rb, LOCAL)
    ref = reference_file(rb, launch, tmp_path / "ref.npz", change_event=True)
    r = C.run_launch(rb, launch, reference_file=ref)
    assert r["class"] == "outputs only", r
    assert f"per-thread events differ from gpuviz's GPU recording on {GPU}" in r["detail"]


def test_without_a_gpu_reference_of_it_a_launch_the_simulator_refuses_is_beyond_it(rb, tmp_path):
    launch = launch_of(rb, LOCAL)
    other = reference_file(rb, launch_of(rb, SHARED), tmp_path / "shared_only.npz")  # the other launch only
    for ref in (None, tmp_path / "absent.npz", other):
        r = C.run_launch(rb, launch, reference_file=ref)
        assert (r["class"], r["detail"]) == ("beyond the simulator", C.SIMULATOR_REFUSES[LOCAL]), (ref, r)


@pytest.mark.parametrize("backend", ["cpu", "sim", "gpu"], ids=lambda b: f"on_{b}")  # a test id "gpu" is skipped
def test_forall_of_no_work_is_a_launch_only_the_simulator_makes(rb, backend):
    """Not stored with its reason on every backend, before anything runs (with no GPU here, a run on "gpu" would
    raise BackendUnavailable)."""
    r = C.run_launch(rb, launch_of(rb, FORALL_NO_WORK), backend=backend)
    assert (r["class"], r["detail"], r["cpu_s"]) == ("not stored", C.SIMULATOR_ONLY_LAUNCHES[FORALL_NO_WORK], None)
    assert "ntasks == 0" in r["detail"]
