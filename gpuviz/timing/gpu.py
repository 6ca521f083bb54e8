"""GPU timings with CUDA events: host flow, compile vs run, block-size sweep, CPU vs GPU, blocks on SMs.

Every device time here is a median of repeats measured with CUDA events after a warm-up launch, with a
one-thread kernel holding the GPU while the host enqueues the timed work (:class:`DeviceTimer`): on an
idle GPU the events would also count the host's dispatch (tens of microseconds per numba launch, which is
the whole of a small kernel's time). Short kernels are, besides, timed as a batch (``batch`` launches
between two events, divided by ``batch``) so that the events' own resolution does not dominate. Host-side
stages that CUDA events cannot bracket (allocation, free, the first call's JIT compile) are timed with
``time.perf_counter`` around a synchronized region, and say so in the series notes."""

from __future__ import annotations

import datetime as _dt
import functools
import platform
import time

import numpy as np

from ..capture.backends.gpu.device import DeviceTimer, EventTimer, device_info, gpu_cuda, gpu_versions
from ..catalog import all_kernels, kernel_module
from ..model.timings import Series, TimingSet
from .cpu import cpu_name, numpy_add_seconds


def median_event_seconds(cuda, fn, repeats: int = 7, batch: int = 1, warmup: int = 1) -> float:
    """Median device seconds per call of ``fn``, ``batch`` calls per timed region (CUDA events, the host's
    enqueue time hidden behind a hold kernel: see :class:`~gpuviz.capture.backends.gpu.device.DeviceTimer`)."""
    return median_device_and_host_seconds(cuda, fn, repeats=repeats, batch=batch, warmup=warmup)[0]


def median_device_and_host_seconds(cuda, fn, repeats: int = 7, batch: int = 1, warmup: int = 1) -> tuple[float, float]:
    """(median device seconds, median host enqueue seconds) per call of ``fn``."""
    for _ in range(warmup):
        fn()
    cuda.synchronize()
    timer = DeviceTimer(cuda)

    def calls():
        for _ in range(batch):
            fn()

    device, host = [], []
    for _ in range(repeats):
        device.append(timer.time(calls) / batch)
        host.append(timer.host_seconds / batch)
    return float(np.median(device)), float(np.median(host))


def idle_gpu_event_seconds(cuda, fn, repeats: int = 7, warmup: int = 1) -> float:
    """Median seconds between two CUDA events around one call of ``fn`` on an idle GPU: device time *plus*
    whatever of the host's enqueue the GPU waited for. Kept only to show what :class:`DeviceTimer` removes."""
    for _ in range(warmup):
        fn()
    cuda.synchronize()
    times = []
    for _ in range(repeats):
        t = EventTimer(cuda)
        with t:
            fn()
        times.append(t.seconds)
    return float(np.median(times))


def _batch_for(seconds_estimate: float, target: float = 2e-3, limit: int = 2000) -> int:
    return int(max(1, min(limit, target / max(seconds_estimate, 1e-7))))


def _batched_seconds(cuda, fn, repeats: int, limit: int) -> float:
    """Median device seconds per call of a short ``fn``: a first estimate picks how many calls make ~2 ms."""
    est = median_event_seconds(cuda, fn, repeats=3)
    return median_event_seconds(cuda, fn, repeats=repeats, batch=_batch_for(est, limit=limit))


def _gpu_libraries():
    """(cupy, torch), each None where it is not installed or cannot use the GPU."""
    try:
        import cupy
    except Exception:  # noqa: BLE001 - installed but broken (its CUDA libraries missing) counts as absent
        cupy = None
    try:
        import torch

        if not torch.cuda.is_available():
            torch = None
    except Exception:  # noqa: BLE001 - installed but broken (its CUDA libraries missing) counts as absent
        torch = None
    return cupy, torch


def host_flow(n: int = 1 << 24, repeats: int = 5) -> Series:
    """One vector-add launch stage by stage, with pageable and with pinned host memory."""
    cuda = gpu_cuda()
    vector_add = kernel_module("vector_add").vector_add

    rng = np.random.default_rng(1)
    rows = {"memory": [], "stage": [], "seconds": [], "bytes": []}
    threads = 256
    grid = (n + threads - 1) // threads
    for memory in ("pageable", "pinned"):
        if memory == "pinned":
            a, b, c = (cuda.pinned_array(n, np.float32) for _ in range(3))
            a[:] = rng.random(n, dtype=np.float32)
            b[:] = rng.random(n, dtype=np.float32)
        else:
            a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
            c = np.empty(n, np.float32)
        per_stage: dict[str, list[float]] = {s: [] for s in ("allocate", "copy in", "kernel", "copy out", "free")}
        for rep in range(repeats + 1):  # the first repetition is the warm-up
            cuda.synchronize()
            t0 = time.perf_counter()
            da, db, dc = (cuda.device_array(n, np.float32) for _ in range(3))
            cuda.synchronize()
            t_alloc = time.perf_counter() - t0
            with EventTimer(cuda) as t_in:
                da.copy_to_device(a)
                db.copy_to_device(b)
            t_k = DeviceTimer(cuda)  # the GPU held while the host enqueues: device time only
            t_k.time(functools.partial(vector_add[grid, threads], da, db, dc, n))  # bound now: da.. go below
            with EventTimer(cuda) as t_out:
                dc.copy_to_host(c)
            t0 = time.perf_counter()
            del da, db, dc
            cuda.current_context().deallocations.clear()
            cuda.synchronize()
            t_free = time.perf_counter() - t0
            if rep == 0:
                continue
            for stage, s in (("allocate", t_alloc), ("copy in", t_in.seconds), ("kernel", t_k.seconds),
                             ("copy out", t_out.seconds), ("free", t_free)):
                per_stage[stage].append(s)
        if not np.allclose(c, a + b):
            raise RuntimeError("host_flow: the vector add computed a wrong result")
        nbytes = {"allocate": 3 * 4 * n, "copy in": 2 * 4 * n, "kernel": 3 * 4 * n, "copy out": 4 * n, "free": 3 * 4 * n}
        for stage, values in per_stage.items():
            rows["memory"].append(memory)
            rows["stage"].append(stage)
            rows["seconds"].append(float(np.median(values)))
            rows["bytes"].append(nbytes[stage])
    return Series("host_flow", f"host flow of one vector add, n = {n:,} float32", "gpu", rows,
                  {"seconds": "s", "bytes": "B"},
                  notes="copies and kernel: CUDA events (the kernel with the host's enqueue hidden behind a hold kernel); allocate and free: host clock around synchronized calls; "
                        f"median of {repeats} after a warm-up")


def compile_vs_run(names=("vector_add", "mandelbrot", "reduce_sum", "matmul_tiled", "attention_fused"), repeats: int = 7) -> Series:
    """First call of a fresh dispatcher (JIT compile, module load, launch) vs the steady-state kernel time."""
    cuda = gpu_cuda()
    specs = all_kernels()
    rows = {"kernel": [], "first_call_s": [], "steady_s": [], "compile_s": []}
    for name in names:
        spec = specs[name]
        size = spec.default_size
        args = spec.make_args(size, np.random.default_rng(2))
        grid, block = spec.launch(size, spec.default_block)
        dargs = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
        fresh = cuda.jit(spec.kernel.py_func)  # a new dispatcher: nothing compiled or cached yet
        cuda.synchronize()
        t0 = time.perf_counter()
        fresh[grid, block](*dargs)
        cuda.synchronize()
        first = time.perf_counter() - t0
        steady = median_event_seconds(cuda, lambda: fresh[grid, block](*dargs), repeats=repeats, batch=10)
        rows["kernel"].append(name)
        rows["first_call_s"].append(first)
        rows["steady_s"].append(steady)
        rows["compile_s"].append(max(first - steady, 0.0))
    return Series("compile_vs_run", "first call (JIT compile) vs steady-state run", "gpu", rows,
                  {"first_call_s": "s", "steady_s": "s", "compile_s": "s"},
                  notes="first call: host clock around a new dispatcher's first launch (type inference, LLVM, NVVM, "
                        "module load, launch); steady: CUDA events, batches of 10, median; compile = first - steady")


def block_sweep(n: int = 1 << 24, matmul_n: int = 1024, repeats: int = 7) -> list[Series]:
    """Kernel time vs block size: vector add (achieved GB/s) and naive matmul (achieved GFLOP/s)."""
    cuda = gpu_cuda()
    matmul_naive = kernel_module("matmul").matmul_naive
    vector_add = kernel_module("vector_add").vector_add

    rng = np.random.default_rng(3)
    a, b = cuda.to_device(rng.random(n, dtype=np.float32)), cuda.to_device(rng.random(n, dtype=np.float32))
    c = cuda.device_array(n, np.float32)
    rows = {"threads_per_block": [], "seconds": [], "gb_per_s": []}
    for t in (32, 64, 128, 256, 512, 1024):
        g = (n + t - 1) // t
        s = median_event_seconds(cuda, lambda: vector_add[g, t](a, b, c, n), repeats=repeats, batch=20)
        rows["threads_per_block"].append(t)
        rows["seconds"].append(s)
        rows["gb_per_s"].append(3 * 4 * n / s / 1e9)
    out = [Series("block_sweep", f"vector add, n = {n:,}: time vs block size", "gpu", rows,
                  {"seconds": "s", "gb_per_s": "GB/s"}, notes="bytes = 3 x 4 x n (read a, b; write c); CUDA events, host enqueue hidden, batches of 20, median")]
    N = matmul_n
    A, B = cuda.to_device(rng.random((N, N), dtype=np.float32)), cuda.to_device(rng.random((N, N), dtype=np.float32))
    C = cuda.device_array((N, N), np.float32)
    rows = {"block": [], "threads_per_block": [], "seconds": [], "gflop_per_s": []}
    for bx, by in ((8, 8), (16, 8), (16, 16), (32, 8), (32, 16), (32, 32)):
        grid = ((N + bx - 1) // bx, (N + by - 1) // by)
        s = median_event_seconds(cuda, lambda: matmul_naive[grid, (bx, by)](A, B, C, N), repeats=repeats, batch=3)
        rows["block"].append(f"{bx}x{by}")
        rows["threads_per_block"].append(bx * by)
        rows["seconds"].append(s)
        rows["gflop_per_s"].append(2 * N**3 / s / 1e9)
    out.append(Series("block_sweep", f"naive matmul, N = {N}: time vs block shape", "gpu", rows,
                      {"seconds": "s", "gflop_per_s": "GFLOP/s"}, notes="FLOP = 2 N^3; CUDA events, host enqueue hidden, batches of 3, median"))
    return out


def cpu_vs_gpu(sizes=(10**3, 10**4, 10**5, 10**6, 10**7, 10**8), repeats: int = 5) -> Series:
    """c = a + b over sizes: numpy on the CPU; our Numba kernel, and cupy / torch ``a + b`` when installed, on the GPU.

    GPU times are device times of data already on the GPU (the copies are the host-flow plot's business).
    """
    cuda = gpu_cuda()
    vector_add = kernel_module("vector_add").vector_add

    rows = {"size": [], "implementation": [], "processor": [], "seconds": []}

    def add(size, impl, proc, s):
        rows["size"].append(int(size))
        rows["implementation"].append(impl)
        rows["processor"].append(proc)
        rows["seconds"].append(float(s))

    cupy, torch = _gpu_libraries()
    rng = np.random.default_rng(4)
    for n in sizes:
        a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        add(n, "numpy a + b", "cpu", numpy_add_seconds(a, b, repeats=repeats))
        da, db, dc = cuda.to_device(a), cuda.to_device(b), cuda.device_array(n, np.float32)
        g = (n + 255) // 256
        add(n, "numba vector_add", "gpu", _batched_seconds(cuda, functools.partial(vector_add[g, 256], da, db, dc, n),
                                                           repeats, 500))
        if cupy is not None:
            ca, cb = cupy.asarray(a), cupy.asarray(b)
            add(n, "cupy a + b", "gpu", _batched_seconds(cuda, lambda: ca + cb, repeats, 500))
            del ca, cb
        if torch is not None:
            ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
            add(n, "torch a + b", "gpu", _batched_seconds(cuda, lambda: ta + tb, repeats, 500))
            del ta, tb
        del da, db, dc
    return Series("cpu_vs_gpu", "c = a + b: CPU vs GPU over sizes", "mixed", rows, {"seconds": "s"},
                  notes="CPU: numpy, host clock, median; GPU: device time of data already on the GPU, CUDA events "
                        "around batches of launches, the host's enqueue hidden behind a hold kernel, median; numba, cupy and torch all "
                        "launch on the legacy default stream, which the events bracket")


def fusion_timings(sizes=(10**4, 10**6, 10**7, 10**8), repeats: int = 7) -> Series:
    """``out = a * x + b * y`` (float32) on the GPU: our fused Numba kernel (one launch), our chain of three
    launches as a library runs it (t1 = a * x, t2 = b * y, out = t1 + t2), and cupy / torch when installed
    (their own kernels, one per operator, temporaries from their memory pools)."""
    cuda = gpu_cuda()
    fusion = kernel_module("fusion")
    A, B = fusion.A, fusion.B
    axpby_fused, unfused_add, unfused_scale = fusion.axpby_fused, fusion.unfused_add, fusion.unfused_scale

    cupy, torch = _gpu_libraries()
    rows = {"size": [], "implementation": [], "launches": [], "seconds": []}
    rng = np.random.default_rng(5)
    for n in sizes:
        x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        expect = A * x + B * y
        dx, dy = cuda.to_device(x), cuda.to_device(y)
        out, t1, t2 = (cuda.device_array(n, np.float32) for _ in range(3))
        g = (n + 255) // 256

        def fused():
            axpby_fused[g, 256](A, dx, B, dy, out, n)

        def chain():
            unfused_scale[g, 256](A, dx, t1, n)
            unfused_scale[g, 256](B, dy, t2, n)
            unfused_add[g, 256](t1, t2, out, n)

        cases = [("numba axpby_fused", 1, fused, lambda: out.copy_to_host()),
                 ("numba unfused chain", 3, chain, lambda: out.copy_to_host())]
        if cupy is not None:
            cx, cy = cupy.asarray(x), cupy.asarray(y)
            cases.append(("cupy a * x + b * y", 3, lambda: A * cx + B * cy, lambda: cupy.asnumpy(A * cx + B * cy)))
        if torch is not None:
            tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
            cases.append(("torch a * x + b * y", 3, lambda: A * tx + B * ty, lambda: (A * tx + B * ty).cpu().numpy()))
        for name, launches, fn, result in cases:
            secs = _batched_seconds(cuda, fn, repeats, 200)
            fn()
            if not np.allclose(result(), expect, rtol=1e-5):
                raise RuntimeError(f"fusion_timings: {name} computed a wrong result at n = {n:,}")
            rows["size"].append(int(n))
            rows["implementation"].append(name)
            rows["launches"].append(launches)
            rows["seconds"].append(float(secs))
    return Series("cpu_vs_gpu", "out = a * x + b * y (float32): one kernel per operator vs one fused kernel", "gpu", rows,
                  {"seconds": "s"},
                  notes="device time of data already on the GPU: CUDA events around batches of calls, the host's "
                        "enqueue hidden behind a hold kernel, median after a warm-up; numba, cupy and torch launch on "
                        "the legacy default stream, which the events bracket; the library calls allocate their "
                        "temporaries and output through their memory pools, inside the timed region")


def gpu_timing_set(label: str = "", date: str | None = None, *, sizes=None, quick: bool = False) -> TimingSet:
    """Every GPU timing series of this module, as one labelled set."""
    cuda = gpu_cuda()
    dev = device_info(cuda)
    ts = TimingSet(
        label=label or f"{dev['name']} timings",
        processor="gpu",
        device=dev["name"],
        driver=dev["driver"],
        date=date or _dt.date.today().isoformat(),
        host=f"{cpu_name()} ({platform.system()} {platform.machine()})",
        versions=gpu_versions() | _optional_versions(),
        notes=f"compute capability {dev['compute_capability']}, {dev['sm_count']} SMs",
    )
    ts.add(host_flow(n=1 << (20 if quick else 24)))
    ts.add(compile_vs_run())
    for s in block_sweep(n=1 << (20 if quick else 24), matmul_n=256 if quick else 1024):
        ts.add(s)
    ts.add(cpu_vs_gpu(sizes=sizes or ((10**3, 10**4, 10**5) if quick else (10**3, 10**4, 10**5, 10**6, 10**7, 10**8))))
    return ts


def _optional_versions() -> dict[str, str]:
    out = {}
    for mod in ("cupy", "torch"):
        try:
            out[mod] = str(__import__(mod).__version__)
        except Exception:  # noqa: BLE001 - a version is only reported: a package that fails to import has none
            pass
    return out
