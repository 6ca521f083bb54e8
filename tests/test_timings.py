"""Timing sets: files round-trip, CPU timings say CPU, the shipped GPU recording loads and names its device,
backend="gpu" without a GPU says so clearly. Runs anywhere (no GPU needed)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from gpuviz.model.timings import Series, TimingFileError, TimingSet, waves

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _gpu_set():
    ts = TimingSet(label="test", processor="gpu", device="NVIDIA H200", driver="580.159.04", date="2026-11-29",
                   versions={"numba_cuda": "0.30.4"})
    ts.add(Series("host_flow", "flow", "gpu", {"memory": ["pinned", "pinned"], "stage": ["copy in", "kernel"],
                                                 "seconds": [1e-3, 2.5e-5]}, {"seconds": "s"}))
    ts.add(Series("cpu_vs_gpu", "add", "mixed", {"size": [1000, 1000], "implementation": ["numpy a + b", "numba"],
                                                  "processor": ["cpu", "gpu"], "seconds": [1e-6, float("nan")]}))
    return ts


def test_json_round_trip(tmp_path):
    ts = _gpu_set()
    path = tmp_path / "t.json"
    ts.save(path)
    back = TimingSet.load(path)
    assert back.to_json() == ts.to_json()
    assert back.series[1].column("seconds")[1] != back.series[1].column("seconds")[1]  # NaN survives as NaN
    assert back.series[1].processor_of_rows() == ["cpu", "gpu"]


def test_csv_has_units_and_rows(tmp_path):
    ts = _gpu_set()
    text = ts.series[0].to_csv().splitlines()
    assert text[0] == "memory,stage,seconds [s]"
    assert text[1] == "pinned,copy in,0.001"
    paths = ts.write_csv(tmp_path / "csv")
    assert [p.name for p in paths] == ["00_host_flow.csv", "01_cpu_vs_gpu.csv"]


def test_damaged_and_foreign_files_are_refused(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(TimingFileError, match="bad.json"):
        TimingSet.load(bad)
    bad.write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(TimingFileError, match="not a gpuviz timings file"):
        TimingSet.load(bad)
    d = _gpu_set().to_json()
    d["schema_version"] = 99
    bad.write_text(json.dumps(d))
    with pytest.raises(TimingFileError, match="schema version 99"):
        TimingSet.load(bad)


def test_a_cpu_set_cannot_hold_gpu_numbers():
    ts = TimingSet(label="cpu", processor="cpu", device="some CPU")
    with pytest.raises(ValueError, match="CPU-only"):
        ts.add(Series("cpu_vs_gpu", "x", "gpu", {"size": [1], "seconds": [1.0]}))
    with pytest.raises(ValueError, match="needs a 'processor' column"):
        Series("cpu_vs_gpu", "x", "mixed", {"size": [1], "seconds": [1.0]})


def test_cpu_timings_are_labelled_cpu():
    from gpuviz.timing.cpu import cpu_timing_set

    ts = cpu_timing_set(numpy_sizes=(1000, 10_000), executor_sizes=(1000,), repeats=2)
    assert ts.processor == "cpu"
    assert ts.description.startswith("CPU timings")
    rows = [p for s in ts.series for p in s.processor_of_rows()]
    assert rows and set(rows) == {"cpu"}
    impls = {i for s in ts.series for i in s.columns["implementation"]}
    assert impls == {"numpy a + b", "gpuviz CPU executor (recorded)"}
    assert all(x > 0 for s in ts.series for x in s.columns["seconds"])


def test_recorded_gpu_timing_set_loads_and_names_its_device():
    from gpuviz.timing.recordings import list_recordings

    timing = list_recordings(kind="timings")
    assert timing, "assets/recordings holds no GPU timing set"
    ts = timing[0].load()
    assert ts.processor == "gpu" and "H200" in ts.device
    assert ts.driver and ts.date == "2026-11-29" and ts.versions.get("numba_cuda")
    assert {s.kind for s in ts.series} >= {"host_flow", "compile_vs_run", "block_sweep", "cpu_vs_gpu", "blocks_on_sms"}
    cvg = ts.by_kind("cpu_vs_gpu")[0]
    procs = dict(zip(cvg.columns["implementation"], cvg.processor_of_rows()))
    assert procs["numpy a + b"] == "cpu" and procs["numba vector_add"] == "gpu"
    assert "GPU timings" in ts.description and "H200" in timing[0].label


def test_recorded_gpu_traces_load_with_sms_and_times():
    from gpuviz.model.timings import blocks_on_sms
    from gpuviz.timing.recordings import list_recordings

    traces = {r.kernel + ("_waves" if "waves" in r.path.name else ""): r for r in list_recordings(kind="trace")}
    assert "matmul_tiled" in traces and "mandelbrot_waves" in traces
    total = sum(r.path.stat().st_size for r in list_recordings())
    assert total < 20 * 1024 * 1024
    (t,) = traces["mandelbrot_waves"].load()
    assert t.launch.backend == "gpu" and t.has("sm") and t.has("time")
    s = blocks_on_sms(t)
    assert len(s) == t.launch.n_blocks
    w = waves(s)
    assert w.min() == 0 and w.max() > 0  # more blocks than SMs: later blocks follow earlier ones


@pytest.mark.skipif(os.environ.get("GPUVIZ_TEST_GPU") == "1", reason="checks the machine without a GPU")
def test_gpu_backend_without_gpu_says_so():
    from gpuviz.capture import BackendUnavailable, capture
    from gpuviz.catalog import get_kernel

    spec = get_kernel("vector_add")
    args = spec.make_args(100, np.random.default_rng(0))
    # in this process numba.cuda is the simulator (tests/conftest.py): the message says so
    with pytest.raises(BackendUnavailable, match="simulator"):
        capture(spec.kernel, 1, 128, *args, backend="gpu")
    # a process with the real numba.cuda but no GPU (CI, laptops): the message says no GPU was found
    code = ("import numpy as np\nfrom gpuviz.catalog import get_kernel\nfrom gpuviz.capture import capture, BackendUnavailable\n"
            "s = get_kernel('vector_add')\n"
            "try:\n    capture(s.kernel, 1, 128, *s.make_args(100, np.random.default_rng(0)), backend='gpu')\n"
            "except BackendUnavailable as e:\n    print('UNAVAILABLE:', e)\nelse:\n    print('RAN')\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    if "RAN" in out.stdout:
        pytest.skip("this machine has a working NVIDIA GPU")
    assert "UNAVAILABLE: backend='gpu' is unavailable" in out.stdout, out.stdout + out.stderr
    assert "backend='cpu'" in out.stdout


class _FakeCuda:
    """Just enough of numba.cuda for DeviceTimer: a stream of launches and events on a fake device clock
    (the device runs each launch when it is enqueued; the hold kernel advances the clock by its hold)."""

    def __init__(self):
        self.log: list[tuple] = []
        self.clock_ns = 0

    def jit(self, fn_or_signature=None):
        cuda = self

        class Kernel:
            def compile(self, _argtypes):  # compiled (or read from gpuviz's disk cache) ahead of its first launch
                pass

            def __getitem__(self, _config):
                def launch(ns):
                    cuda.log.append(("hold", int(ns)))
                    cuda.clock_ns += int(ns)

                return launch

        return Kernel() if callable(fn_or_signature) else (lambda fn: Kernel())

    def synchronize(self):
        pass

    def event(self, timing=True):
        cuda = self

        class Event:
            def record(self):
                self.at = cuda.clock_ns
                cuda.log.append(("event", self.at))

            def synchronize(self):
                pass

        return Event()

    def event_elapsed_time(self, start, end):
        return (end.at - start.at) / 1e6  # ms, as numba's


def test_device_timer_holds_the_gpu_before_the_start_event_and_retries_a_hold_too_short(monkeypatch):
    import time

    from gpuviz.capture.backends.gpu import device as gpu_mod

    cuda = _FakeCuda()
    monkeypatch.setattr(gpu_mod, "_hold_kernel", None)
    timer = gpu_mod.DeviceTimer(cuda, hold_s=5e-4)
    runs = []

    def work():  # the host takes 20 ms to enqueue the first time (a module load), then nothing; the device 3 us
        time.sleep(0.02 if not runs else 0)
        runs.append(1)
        cuda.clock_ns += 3000

    cuda.log.clear()
    seconds = timer.time(work)
    # each attempt: hold kernel, start event, work, end event; the first hold (0.5 ms) was shorter than the
    # host's 20 ms, so the time was not trusted and the work ran again under a longer hold
    kinds = [k for k, _ in cuda.log]
    assert kinds == ["hold", "event", "event", "hold", "event", "event"]
    assert len(runs) == 2 and timer.hidden
    assert cuda.log[3][1] >= 2 * 0.02e9  # the second hold covers twice what the host took
    assert seconds == pytest.approx(3e-6) and timer.seconds == seconds
    # without retry (work that must run once): one run, flagged when the hold was too short
    runs.clear()
    short = gpu_mod.DeviceTimer(cuda, hold_s=1e-4)
    short.time(work, retry=False)
    assert len(runs) == 1 and not short.hidden


def test_a_short_timings_view_gives_its_room_to_the_chart(make_window, qtbot):
    """Issue 28: a lesson scene with the Timings view at 1280x720 in presenter mode left it ~200 px, and its set
    box, plot box, buttons and three wrapped lines of source left the chart ~40 px. Short, the view keeps the chart
    (its minimum height) and one elided line of where the numbers come from (the whole line in its tooltip); tall
    enough, the controls come back."""
    from gpuviz.ui.plaintext import plain_tooltip
    from gpuviz.ui.views.timings import TimingsView

    w = make_window()
    tv = TimingsView(w.session)
    qtbot.addWidget(tv)
    tv.setMinimumSize(120, 80)  # as presenter mode relaxes every view's minimum (views side by side on a projector)
    tv.plot_box.setCurrentIndex(tv.plot_box.findData("host_flow"))
    tv.resize(420, 600)
    tv.show()
    qtbot.waitExposed(tv)
    assert not tv.compact and tv.set_box.isVisible() and tv.cpu_button.isVisible() and tv.label.isVisible()
    full = tv.label.text()
    assert "GPU timings recorded on NVIDIA H200" in full
    tv.resize(420, 210)
    qtbot.waitUntil(lambda: tv.compact)
    assert not tv.set_box.isVisible() and not tv.plot_box.isVisible() and not tv.export_button.isVisible()
    assert not tv.label.isVisible() and tv.short_label.isVisible()
    short = tv.short_label.text()
    # the set's name (GPU or CPU, device, date), whole or elided, and all of the source line in the tooltip
    name = tv.set_box.currentText()
    assert short.startswith("GPU · NVIDIA H200") and name.startswith(short.rstrip("…")) and tv.short_label.toolTip() == plain_tooltip(full)
    assert tv.plot.height() >= tv.plot.minimumHeight() and tv.plot.geometry().bottom() <= tv.height()
    assert tv.label.text() == full  # the export and the tests still read the whole source line
    tv.resize(420, 600)
    qtbot.waitUntil(lambda: not tv.compact)
    assert tv.set_box.isVisible() and tv.label.isVisible() and not tv.short_label.isVisible()
    assert tv.errors == []
