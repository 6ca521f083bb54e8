"""What a GPU trace says of its recording, once decoded: the events dropped, whether the instrumented run's outputs
match the plain run's, the device, both variants' resources and the schedule the trace shows (``launch.meta`` and
``launch.warnings``)."""

from __future__ import annotations

import numpy as np

from .device import device_info


def recorded_description(mode: str, record: str) -> str:
    """What a GPU trace of this mode and ``record`` holds, in words (``launch.meta["records"]``)."""
    if mode == "warp":
        text = ("per-warp: one record per instruction that lane 0 of each warp executed, with the mask of the lanes "
                "converged with lane 0 there ('value') and the exact index of every lane in that mask; each record is "
                "shown as one event per lane in its mask. Instructions that lanes ran while diverged from lane 0 are not "
                "recorded (their number is launch.meta['warp_lane_events_not_recorded'])")
    else:
        text = "per-thread: every event of every thread of the recorded blocks"
    if record == "global":
        text += "; shared-memory loads, stores and atomics are not recorded (record='global')"
    return text


def report(rec, drops, check_args, dargs, meta: dict, warnings: list) -> tuple[int, dict]:
    """What a GPU trace says of its recording (``rec``: the :class:`.launch.GpuRecording`), after the decode: the
    drops, whether the outputs match the plain run's, the device, both variants' resources and the schedule shown
    (into ``meta`` and ``warnings``).
    Returns (events dropped, the device's description)."""
    dropped, dropped_timed, dropped_slab, diverged = (int(x) for x in drops[:4])
    dropped += dropped_slab
    if dropped:
        warnings.append(f"{dropped:,} events did not fit the sizes an earlier run measured and were dropped: the kernel's "
                        "control flow differs between runs (a data race?)")
    if dropped_timed:
        warnings.append(f"{dropped_timed:,} timestamps did not fit and were dropped")
    if rec.kernel_time_includes_enqueue:
        warnings.append("the instrumented kernel time includes part of the host's launch time (the host took longer to "
                        "enqueue the launch than the GPU was held for)")
    same = compare_outputs(rec, check_args, dargs)
    meta["outputs_match_plain"] = same
    if same is False:
        warnings.append("the instrumented run's outputs differ from the plain run's (expected only for kernels with a data race)")

    dev = device_info(rec.cuda)
    p, i = meta["plain"], meta["instrumented"]
    meta.update({
        "registers_per_thread": i["registers_per_thread"],
        "shared_bytes_per_block": i["shared_bytes_per_block"],
        "device": dev,
        "mode": rec.mode,
        "record": rec.record_what,
        "records": recorded_description(rec.mode, rec.record_what),
        "timestamps": rec.timestamps,
        "threads_recorded": "all" if rec.all_blocks else "chosen blocks",
        "layout": "uniform (computed offsets)" if rec.uniform else "offset table",
        "unrecorded_blocks": (
            "run the kernel's own code: one kernel branches once per thread between the instrumented body (recorded "
            "blocks) and the user's body; every block has the registers of that combined kernel" if rec.split else "none"
        ),
        "recorded_blocks": len(rec.blocks),
        "recorded_block_test": ("none (every block)" if rec.all_blocks else
                                "range in scalar parameters" if rec.block_range else "block table"),
        "max_registers": rec.max_registers,
        "trace_bytes": rec.trace_bytes(),
        "events_counted": rec.totals[0],
        "time_unit": "ns (%globaltimer)",
        "schedule": (
            "SM ids and times are those of the instrumented run: "
            f"{i['registers_per_thread']} registers/thread and {i['resident_blocks_per_sm']} resident blocks/SM, "
            f"against {p['registers_per_thread']} registers/thread and {p['resident_blocks_per_sm']} blocks/SM for the plain kernel"
        ),
    })
    if rec.mode == "warp":
        meta["value_field"] = "active_mask"
        meta["warp_lane_events_not_recorded"] = diverged
        warnings.append("per-warp recording: one record per instruction of lane 0 of each warp, shown for every lane "
                        "converged with lane 0 ('value' holds that mask)"
                        + (f"; {diverged:,} lane events ran while diverged from lane 0 and are not in the trace" if diverged else ""))
    if rec.record_what == "global":
        warnings.append("record='global': shared-memory loads, stores and atomics are not in this trace")
    if p["resident_blocks_per_sm"] != i["resident_blocks_per_sm"] and min(p["resident_blocks_per_sm"], i["resident_blocks_per_sm"]) > 0:
        warnings.append(f"recording changes occupancy: {i['resident_blocks_per_sm']} resident blocks/SM instrumented vs "
                        f"{p['resident_blocks_per_sm']} plain, so the recorded schedule (waves, SMs) is not the plain kernel's")
    return dropped, dev


def compare_outputs(rec, plain_args, dargs) -> bool | None:
    """True if every array argument ends equal after the plain and the instrumented runs (None: too large to check)."""
    same = True
    for a, p, d in zip(rec.args, plain_args, dargs):
        if not hasattr(p, "copy_to_host") or p is d:
            continue
        if p.size * p.dtype.itemsize > (256 << 20):
            return None
        x, y = p.copy_to_host(), d.copy_to_host()
        if not np.array_equal(x, y, equal_nan=np.issubdtype(x.dtype, np.inexact)):
            same = False
    return same


