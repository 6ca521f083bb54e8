"""The GPU back end keeps each variant's rewrite on disk (disk_cache.load_build / save_build), so that a warm capture
in a new process does not rewrite the kernel again: what it reads back must build the very variant a fresh rewrite
builds (sources and array table), and the key must follow everything the rewrite reads. No GPU: the builds stop
before numba's compile (SourceOnlyCuda)."""

import numpy as np
import pytest

from gpuviz.capture.backends.gpu import disk_cache
from gpuviz.capture.backends.gpu.launch import variant_source

from . import corpus_support as C
from .test_gpu_disk_cache import _kernel_reading, _namespace


@pytest.fixture
def cache_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path


@pytest.fixture
def loads(monkeypatch):
    """The rewrites read back from disk, in order (None: a miss)."""
    seen = []
    real = disk_cache.load_build

    def spy(key):
        got = real(key)
        seen.append(got is not None)
        return got

    monkeypatch.setattr(disk_cache, "load_build", spy)
    return seen


def _build(kernel, args, grid=(2,), block=(32,), keep=True, **kw):
    info, sources = variant_source(kernel, grid, block, args, keep_rewrite=keep, **kw)
    return info.arrays, sources


def _args():
    return [np.zeros(64, np.float32), np.arange(64, dtype=np.float32)]


def test_a_rewrite_read_back_builds_the_same_variant(cache_home, loads):
    kernel = _kernel_reading(_namespace())
    fresh = _build(kernel, _args(), keep=False)
    assert loads == []  # not asked to keep: the disk is not read
    first = _build(kernel, _args())
    second = _build(kernel, _args())
    assert loads == [False, True]
    assert first == second == fresh
    assert len(list((cache_home / "gpuviz" / "gpu-builds").glob("*/*.build"))) == 1
    # the count variant and the record variant are two rewrites
    _build(kernel, _args(), count=False)
    assert loads[-1] is False and len(list((cache_home / "gpuviz" / "gpu-builds").glob("*/*.build"))) == 2


def test_the_key_follows_what_the_rewrite_reads(cache_home, loads):
    _build(_kernel_reading(_namespace()), _args())
    _build(_kernel_reading(_namespace(FACTOR=3.0)), _args())  # a global constant
    _build(_kernel_reading(_namespace()), [np.zeros(64, np.float64), np.arange(64, dtype=np.float64)])  # dtypes
    _build(_kernel_reading(_namespace()), _args(), block=(64,))  # the launch shape
    _build(_kernel_reading(_namespace()), _args(), mode="warp")  # the recording mode
    assert loads == [False] * 5
    _build(_kernel_reading(_namespace()), _args(), block=(64,))
    assert loads[-1] is True


def test_a_damaged_rewrite_on_disk_is_a_miss_and_is_replaced(cache_home, loads):
    kernel = _kernel_reading(_namespace())
    first = _build(kernel, _args())
    (path,) = (cache_home / "gpuviz" / "gpu-builds").glob("*/*.build")
    path.write_bytes(b"not a pickle")
    assert _build(kernel, _args()) == first
    assert loads == [False, False]
    assert _build(kernel, _args()) == first and loads[-1] is True


def test_the_cache_switch_turns_it_off(cache_home, loads, monkeypatch):
    monkeypatch.setenv("GPUVIZ_GPU_CACHE", "0")
    kernel = _kernel_reading(_namespace())
    _build(kernel, _args(), keep=None)
    assert loads == [] and not (cache_home / "gpuviz" / "gpu-builds").exists()


@pytest.mark.skipif(not C.CORPUS.exists(), reason="no corpus file: run bench/corpus_extract.py")
def test_every_tenth_corpus_launch_builds_the_same_variant_from_its_kept_rewrite(cache_home, loads):
    """A slice of numba-cuda's corpus (every 10th launch the plan accepts; bench: all of them, see the module's
    test below run with GPUVIZ_ALL_CORPUS=1): device functions, views, shared arrays sized at run time, records."""
    from gpuviz.capture.errors import UnsupportedConstruct
    from gpuviz.capture.frontend.plan import plan_for

    index, arrays = C.load()
    rb = C.Rebuilder(index, arrays)
    step = 1 if __import__("os").environ.get("GPUVIZ_ALL_CORPUS") else 10
    checked = 0
    for launch in index["launches"][::step]:
        if "unstorable" in launch or "kernel" not in launch:
            continue
        try:
            kernel = rb.function(launch["kernel"])
            args = [C.decode_value(e, rb.arrays) for e in launch["args"]]
        except Exception:  # noqa: BLE001 - not rebuildable: nothing to compare
            continue
        if plan_for(kernel).diagnostics:
            continue
        shape = dict(grid=tuple(launch["grid"]), block=tuple(launch["block"]),
                     dynamic_shared_bytes=launch.get("dynshared", 0))
        try:
            fresh = _build(kernel, args, keep=False, **shape)
        except UnsupportedConstruct:
            continue
        before = len(loads)
        kept = [_build(kernel, args, **shape) for _ in range(2)]
        assert loads[before:] == [False, True] or loads[before:] == [True, True], launch["test"]
        assert kept[0] == kept[1] == fresh, launch["test"]
        checked += 1
    assert checked >= (40 if step == 10 else 400)
