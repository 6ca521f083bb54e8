"""The corpus of numba-cuda's own test kernels (tests/data/numba_cuda_corpus.npz) on gpuviz's CPU executor.

Every stored launch is rebuilt and run (the CPU executor takes a few seconds for all of them) and
compared with what numba's simulator did: outputs and per-thread events. ``bench/corpus.py`` prints the
same counts with the reasons; ``bench/corpus_extract.py`` rebuilds the corpus from the installed numba-cuda.
"""

import re

import pytest

from . import corpus_support as C

pytestmark = pytest.mark.skipif(not C.CORPUS.exists(), reason="no corpus file: run bench/corpus_extract.py")

#: launches known to come out wrong, by test id and kernel: none now (alignment= runs, atomics on .real/.imag and
#: rec[0] run; forall(0)'s grid of no blocks is a launch only the simulator makes); a new wrong answer fails this test
KNOWN_WRONG: set[str] = set()


@pytest.fixture(scope="module")
def results():
    index, arrays = C.load()
    rb = C.Rebuilder(index, arrays)
    out = []
    for launch in index["launches"]:
        r = C.run_launch(rb, launch, time_limit_s=20.0)
        r["id"] = f"{launch.get('test')}::{launch.get('kernel_name')}"
        out.append(r)
    return out


def test_no_internal_errors_and_no_hangs(results):
    bad = [(r["id"], r["class"], r["detail"][:200]) for r in results if r["class"] in ("crashed", "hung")]
    assert bad == []


def test_no_new_wrong_answers(results):
    wrong = {r["id"] for r in results if r["class"] == "wrong"}
    assert wrong <= KNOWN_WRONG, sorted(wrong - KNOWN_WRONG)


def test_every_refusal_names_file_line_and_construct(results):
    # none on the CPU executor now (the last one, forall(0)'s grid of no blocks, is a launch numba-cuda does not
    # make: "not stored"); a refusal that comes must say where and what
    refused = [r for r in results if r["class"] == "refused"]
    unnamed = [r["detail"][:200] for r in refused if not re.search(r"\.py:\d+: \S", r["detail"])]
    assert unnamed == []


def test_most_of_the_corpus_is_exact(results):
    stored = [r for r in results if r["class"] != "not stored"]
    exact = [r for r in stored if r["class"] == "exact"]
    assert len(stored) > 500
    assert len(exact) / len(stored) >= EXACT_FLOOR, f"{len(exact)} of {len(stored)} exact"


#: the share of stored launches that must come out exact (raise it as coverage grows)
EXACT_FLOOR = 0.95


#: launches the CPU executor refuses only when it runs them (a record field that is an array, a slice whose
#: length differs between threads): the simulator's per-thread recording runs them
RUNTIME_REFUSALS = ("is itself an array", "different length in different threads", "attribute '.j' of a",
                    "attribute '.x' of a tuple")


@pytest.mark.sim
def test_cpu_and_sim_accept_the_same_programs(results):
    """Every third stored launch on gpuviz's simulator backend: it refuses exactly what the CPU executor refuses
    (one reading of the kernel decides for both), apart from the refusals made at run time."""
    index, arrays = C.load()
    rb = C.Rebuilder(index, arrays)
    differ = []
    checked = 0
    for k, (launch, cpu) in enumerate(zip(index["launches"], results)):
        if k % 3 or cpu["class"] == "not stored":
            continue
        sim = C.run_launch(rb, launch, backend="sim")
        checked += 1
        if (cpu["class"] == "refused") != (sim["class"] == "refused"):
            if not any(r in cpu["detail"] for r in RUNTIME_REFUSALS):
                differ.append((cpu["id"], cpu["class"], sim["class"], (cpu["detail"] or sim["detail"])[:160]))
        elif cpu["class"] == "refused":
            assert cpu["detail"].splitlines()[0] == sim["detail"].splitlines()[0]
    assert checked > 150
    assert differ == []


@pytest.mark.sim
def test_the_record_launches_are_exact_on_the_simulator_backend():
    """numba-cuda's test_record_dtype on gpuviz's simulator backend: set_record (``ary[i] = ary[j]``, 3 launches)
    and outer (a record returned by a device function) failed with a one-line CaptureError from inside numba's
    simulator, which copies a record only out of a recarray; every launch of the module is exact now."""
    index, arrays = C.load()
    rb = C.Rebuilder(index, arrays)
    launches = [r for r in index["launches"] if r["module"].endswith(".test_record_dtype") and "kernel" in r]
    assert len(launches) >= 25
    results = [(launch.get("kernel_name"), C.run_launch(rb, launch, backend="sim")) for launch in launches]
    assert sum(name == "set_record" for name, _ in results) == 3
    assert [(name, r["class"], r["detail"][:160]) for name, r in results if r["class"] != "exact"] == []
