"""Analyses on hand-built traces with answers derived by hand, plus brute-force cross-checks on random traces."""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np
import pytest

from gpuviz.model import analysis as A
from gpuviz.model.devices import DEVICES, get_device, occupancy
from gpuviz.model.trace import ArrayInfo, EventKind, Launch, Trace

K = EventKind
FIELDS = ("block", "thread", "seq", "kind", "array", "index", "line", "step")


def build(launch: Launch, rows, with_step=True) -> Trace:
    """rows: (block, thread, seq, kind, array, index, line, step) tuples."""
    cols = {name: np.array([r[i] for r in rows], dtype=np.int64) for i, name in enumerate(FIELDS)}
    if not with_step:
        cols.pop("step")
    return Trace(launch, cols)


def warp_access(kind, array, indices, line=10, step=1, block=0, seq=None, first_thread=0):
    """One event per lane: lane i of the warp touches indices[i]."""
    return [
        (block, first_thread + lane, step if seq is None else seq, kind, array, int(ix), line, step)
        for lane, ix in enumerate(indices)
    ]


def launch(arrays, grid=1, block=32, **kw) -> Launch:
    return Launch("k", grid=grid, block=block, arrays=arrays, **kw)


GLOBAL_F32 = ArrayInfo("a", (4096,), "float32")
GLOBAL_F64 = ArrayInfo("d", (4096,), "float64")


# ---- global memory ---------------------------------------------------------------------------------
def test_consecutive_float32_is_4_sectors_1_line():
    tr = build(launch([GLOBAL_F32]), warp_access(K.GLOBAL_LOAD, 0, range(32)))
    gm = A.global_memory(tr)
    r = gm.requests
    assert len(r["lanes"]) == 1
    # 32 lanes x 4 bytes = 128 contiguous bytes from address 0: sectors 0..3, one 128-byte line
    assert (r["lanes"][0], r["sectors"][0], r["lines"][0], r["bytes"][0], r["ideal_sectors"][0]) == (32, 4, 1, 128, 4)
    assert r["efficiency"][0] == 1.0
    assert gm.sectors_per_request == {"load": 4.0, "store": None, "atomic": None}


def test_stride_2_float32_is_8_sectors_half_efficiency():
    tr = build(launch([GLOBAL_F32]), warp_access(K.GLOBAL_LOAD, 0, range(0, 64, 2)))
    r = A.global_memory(tr).requests
    # byte addresses 0, 8, ..., 248 span 256 bytes: 8 sectors, 2 lines; 128 useful bytes need 4 sectors
    assert (r["sectors"][0], r["lines"][0], r["ideal_sectors"][0]) == (8, 2, 4)
    assert r["efficiency"][0] == 0.5


def test_misaligned_and_broadcast_and_float64():
    # start at element 1: bytes 4..131 cross 5 sectors and 2 lines
    tr = build(launch([GLOBAL_F32]), warp_access(K.GLOBAL_LOAD, 0, range(1, 33)))
    r = A.global_memory(tr).requests
    assert (r["sectors"][0], r["lines"][0], r["ideal_sectors"][0]) == (5, 2, 4)
    # every lane reads element 7: one sector, 4 distinct bytes need 1 sector: fully efficient broadcast
    tr = build(launch([GLOBAL_F32]), warp_access(K.GLOBAL_LOAD, 0, [7] * 32))
    r = A.global_memory(tr).requests
    assert (r["sectors"][0], r["bytes"][0], r["ideal_sectors"][0], r["efficiency"][0]) == (1, 128, 1, 1.0)
    # 32 consecutive float64: 256 bytes, 8 sectors, 2 lines
    tr = build(launch([GLOBAL_F64]), warp_access(K.GLOBAL_LOAD, 0, range(32)))
    r = A.global_memory(tr).requests
    assert (r["sectors"][0], r["lines"][0], r["bytes"][0]) == (8, 2, 256)


def test_sectors_per_request_splits_loads_and_stores_and_lines():
    rows = (
        warp_access(K.GLOBAL_LOAD, 0, range(32), line=5, step=1)  # 4 sectors
        + warp_access(K.GLOBAL_LOAD, 0, range(0, 64, 2), line=6, step=2)  # 8 sectors
        + warp_access(K.GLOBAL_STORE, 0, range(0, 32 * 32, 32), line=7, step=3)  # one sector per lane: 32
    )
    gm = A.global_memory(build(launch([GLOBAL_F32]), rows))
    assert gm.sectors_per_request["load"] == 6.0  # (4 + 8) / 2 requests
    assert gm.sectors_per_request["store"] == 32.0
    assert gm.totals["store"]["efficiency"] == 4 / 32
    by_line = {row["line"]: row for row in gm.per_line}
    assert by_line[5]["sectors"] == 4 and by_line[6]["sectors"] == 8 and by_line[7]["sectors"] == 32
    assert by_line[7]["store_requests"] == 1 and by_line[5]["load_requests"] == 1


def test_requests_split_by_warp_block_step_and_partial_warps():
    rows = []
    for block in range(2):
        for warp in range(2):
            lanes = 32 if warp == 0 else 10
            rows += warp_access(K.GLOBAL_LOAD, 0, range(block * 64 + warp * 32, block * 64 + warp * 32 + lanes),
                                block=block, first_thread=warp * 32, step=4)
    gm = A.global_memory(build(launch([GLOBAL_F32], grid=2, block=64), rows))
    r = gm.requests
    assert len(r["lanes"]) == 4
    got = sorted(zip(r["block"].tolist(), r["warp"].tolist(), r["lanes"].tolist(), r["sectors"].tolist()))
    # 10 lanes x 4 bytes = 40 bytes from a 128-byte boundary: 2 sectors
    assert got == [(0, 0, 32, 4), (0, 1, 10, 2), (1, 0, 32, 4), (1, 1, 10, 2)]


# ---- shared banks ----------------------------------------------------------------------------------
def tile(cols):
    return ArrayInfo("tile", (32, cols), "float32", space="shared")


def test_column_read_of_32x32_tile_is_32_way():
    # lane i reads tile[i, 0]: word 32*i, bank (32*i) % 32 = 0 for every lane: 32 distinct words on bank 0
    tr = build(launch([tile(32)]), warp_access(K.SHARED_LOAD, 0, [i * 32 for i in range(32)]))
    sb = A.shared_banks(tr)
    assert sb.requests["ways"].tolist() == [32]
    assert sb.bank_conflicts == {"load": 31, "store": 0, "total": 31}
    assert sb.totals["load"]["wavefronts"] == 32


def test_padded_33_columns_is_conflict_free():
    # word 33*i: bank (33*i) % 32 = i: every lane on its own bank
    tr = build(launch([tile(33)]), warp_access(K.SHARED_LOAD, 0, [i * 33 for i in range(32)]))
    sb = A.shared_banks(tr)
    assert sb.requests["ways"].tolist() == [1]
    assert sb.bank_conflicts["total"] == 0


def test_broadcast_is_not_a_conflict_and_stride_2_is_2_way():
    tr = build(launch([tile(32)]), warp_access(K.SHARED_LOAD, 0, [5] * 32))
    assert A.shared_banks(tr).bank_conflicts["total"] == 0
    # words 0, 2, ..., 62: banks 0, 2, ..., 30 each hold two distinct words (lanes i and i+16)
    tr = build(launch([tile(32)]), warp_access(K.SHARED_STORE, 0, range(0, 64, 2)))
    sb = A.shared_banks(tr)
    assert sb.requests["ways"].tolist() == [2]
    assert sb.bank_conflicts == {"load": 0, "store": 1, "total": 1}
    # half the lanes broadcast word 0, the other half read word 32 (also bank 0): 2 distinct words, 2-way
    tr = build(launch([tile(32)]), warp_access(K.SHARED_LOAD, 0, [0] * 16 + [32] * 16))
    assert A.shared_banks(tr).requests["ways"].tolist() == [2]


def test_shared_offsets_and_wide_elements():
    arrays = [ArrayInfo("s", (64,), "float32", space="shared"), ArrayInfo("w", (64,), "float64", space="shared")]
    # float64 w[i] starts at word 2*i: banks 0, 2, ..., 30 twice: 2-way (counted at the first word)
    tr = build(launch(arrays), warp_access(K.SHARED_LOAD, 1, range(32)))
    assert A.shared_banks(tr).requests["ways"].tolist() == [2]
    # an offset shifts words, not their spacing: the column read stays 32-way whatever the offset
    arrays = [ArrayInfo("pad", (3,), "float32", space="shared"), tile(32)]
    tr = build(launch(arrays, meta={"shared_offsets": {"pad": 0, "tile": 12}}),
               warp_access(K.SHARED_LOAD, 1, [i * 32 for i in range(32)]))
    assert A.shared_banks(tr).requests["ways"].tolist() == [32]


def test_per_line_conflicts():
    rows = warp_access(K.SHARED_LOAD, 0, [i * 32 for i in range(32)], line=20, step=1) + warp_access(
        K.SHARED_LOAD, 0, range(32), line=21, step=2
    )
    sb = A.shared_banks(build(launch([tile(32)]), rows))
    by_line = {row["line"]: row for row in sb.per_line}
    assert by_line[20]["bank_conflicts"] == 31 and by_line[21]["bank_conflicts"] == 0
    assert by_line[20]["load_conflicts"] == 31


# ---- races -----------------------------------------------------------------------------------------
SH = ArrayInfo("s", (32,), "float32", space="shared")
OUT = ArrayInfo("out", (64,), "float32")


def start_end(block, thread, n_seq, line=1):
    return [(block, thread, 0, K.START, -1, -1, line, 0), (block, thread, n_seq, K.END, -1, -1, line, n_seq)]


def test_write_then_read_by_another_thread_in_one_phase_is_a_race():
    rows = start_end(0, 0, 2) + start_end(0, 1, 2) + [
        (0, 0, 1, K.SHARED_STORE, 0, 3, 11, 1),
        (0, 1, 1, K.SHARED_LOAD, 0, 3, 12, 1),
    ]
    rep = A.races(build(launch([SH]), rows))
    assert rep.count == 1
    r = rep.records[0]
    assert (r["space"], r["array"], r["index"], r["block"], r["phase"]) == ("shared", 0, 3, 0, 0)
    assert (r["thread_a"], r["kind_a"], r["line_a"]) == (0, K.SHARED_STORE, 11)
    assert (r["thread_b"], r["kind_b"], r["line_b"]) == (1, K.SHARED_LOAD, 12)
    assert (r["loads"], r["stores"], r["atomics"]) == (1, 1, 0)
    assert "s[3]" in rep.describe()[0]


def test_barrier_between_write_and_read_is_not_a_race():
    rows = start_end(0, 0, 3) + start_end(0, 1, 3) + [
        (0, 0, 1, K.SHARED_STORE, 0, 3, 11, 1),
        (0, 0, 2, K.BARRIER, -1, -1, 13, 2),
        (0, 1, 1, K.BARRIER, -1, -1, 13, 2),
        (0, 1, 2, K.SHARED_LOAD, 0, 3, 14, 3),
    ]
    assert A.races(build(launch([SH]), rows)).count == 0


def test_same_thread_same_block_and_other_block_are_not_races():
    rows = [
        (0, 0, 1, K.SHARED_STORE, 0, 3, 11, 1),
        (0, 0, 2, K.SHARED_LOAD, 0, 3, 12, 2),  # the writer reads back its own value
        (1, 1, 1, K.SHARED_LOAD, 0, 3, 12, 1),  # another block has its own shared memory
        (0, 2, 1, K.SHARED_LOAD, 0, 4, 12, 1),  # another element
    ]
    assert A.races(build(launch([SH], grid=2), rows)).count == 0


def test_atomics_do_not_race_with_atomics_but_do_with_loads():
    atomics = [(0, t, 1, K.ATOMIC, 0, 0, 20, 1) for t in range(8)]
    assert A.races(build(launch([SH]), atomics)).count == 0
    rows = atomics + [(0, 9, 2, K.SHARED_LOAD, 0, 0, 21, 2)]
    rep = A.races(build(launch([SH]), rows))
    assert rep.count == 1
    r = rep.records[0]
    assert {int(r["kind_a"]), int(r["kind_b"])} == {K.ATOMIC, K.SHARED_LOAD}
    assert r["thread_a"] != r["thread_b"] and (r["atomics"], r["loads"]) == (8, 1)
    # the loading thread is the only atomic one: still a race with... nobody else: no race
    rows = [(0, 4, 1, K.ATOMIC, 0, 0, 20, 1), (0, 4, 2, K.SHARED_LOAD, 0, 0, 21, 2)]
    assert A.races(build(launch([SH]), rows)).count == 0
    # atomics by threads 4 and 5, a load by thread 4: the load races with thread 5's atomic
    rows = [(0, 4, 1, K.ATOMIC, 0, 0, 20, 1), (0, 5, 1, K.ATOMIC, 0, 0, 20, 1), (0, 4, 2, K.SHARED_LOAD, 0, 0, 21, 2)]
    rep = A.races(build(launch([SH]), rows))
    assert rep.count == 1
    r = rep.records[0]
    assert {(int(r["thread_a"]), int(r["kind_a"])), (int(r["thread_b"]), int(r["kind_b"]))} == {
        (5, K.ATOMIC), (4, K.SHARED_LOAD)
    }


def test_global_races_across_blocks_and_within_a_block():
    # block 0 writes out[0]; block 1 reads it: no barrier orders different blocks
    rows = [(0, 0, 1, K.GLOBAL_STORE, 0, 0, 30, 1), (1, 0, 1, K.GLOBAL_LOAD, 0, 0, 31, 1)]
    rep = A.races(build(launch([OUT], grid=2), rows))
    assert rep.count == 1
    r = rep.records[0]
    assert (r["space"], r["block"], r["phase"], r["block_a"], r["block_b"]) == ("global", -1, -1, 0, 1)
    # within one block, a barrier between the store and another thread's load orders them
    rows = [
        (0, 0, 1, K.GLOBAL_STORE, 0, 5, 30, 1), (0, 0, 2, K.BARRIER, -1, -1, 32, 2),
        (0, 1, 1, K.BARRIER, -1, -1, 32, 2), (0, 1, 2, K.GLOBAL_LOAD, 0, 5, 33, 3),
    ]
    assert A.races(build(launch([OUT], grid=2), rows)).count == 0
    # ... and without the barrier they race
    rows = [(0, 0, 1, K.GLOBAL_STORE, 0, 5, 30, 1), (0, 1, 1, K.GLOBAL_LOAD, 0, 5, 33, 1)]
    rep = A.races(build(launch([OUT], grid=2), rows))
    assert rep.count == 1 and rep.records[0]["block"] == 0 and rep.records[0]["phase"] == 0
    # atomics from every block on one counter: fine
    rows = [(b, t, 1, K.ATOMIC, 0, 9, 34, 1) for b in range(2) for t in range(4)]
    assert A.races(build(launch([OUT], grid=2), rows)).count == 0


def test_fast_phase_matches_trace_phase():
    rng = np.random.default_rng(3)
    L = launch([SH], grid=3, block=8)
    rows = []
    for b, t in itertools.product(range(3), range(8)):
        n = int(rng.integers(3, 12))
        for s in range(n):
            kind = K.BARRIER if rng.random() < 0.3 else K.SHARED_LOAD
            rows.append((b, t, s, kind, 0 if kind != K.BARRIER else -1, int(rng.integers(0, 32)) if kind != K.BARRIER else -1, 1, s))
    rng.shuffle(rows)
    tr = build(L, rows)
    sub = A._subset(tr, "shared")
    np.testing.assert_array_equal(A._phase_of(tr, sub["mask"], sub), tr.phase[sub["mask"]])


# ---- brute-force cross-checks on random traces -----------------------------------------------------
def random_trace(seed, with_step=True, n_threads=64, tpb=32, n_events=1500):
    rng = np.random.default_rng(seed)
    arrays = [ArrayInfo("g", (256,), "float32"), ArrayInfo("s", (64,), "float32", space="shared"),
              ArrayInfo("h", (128,), "int16"), ArrayInfo("t", (40,), "float64", space="shared")]
    L = launch(arrays, grid=n_threads // tpb, block=tpb)
    kinds = [K.GLOBAL_LOAD, K.GLOBAL_STORE, K.SHARED_LOAD, K.SHARED_STORE, K.ATOMIC, K.BARRIER]
    rows = []
    seq = defaultdict(int)
    for _ in range(n_events):
        gt = int(rng.integers(0, n_threads))
        b, t = divmod(gt, tpb)
        kind = kinds[int(rng.integers(0, len(kinds)))]
        if kind == K.BARRIER:
            arr, ix = -1, -1
        elif kind in (K.GLOBAL_LOAD, K.GLOBAL_STORE):
            arr = int(rng.choice([0, 2]))
            ix = int(rng.integers(0, arrays[arr].size)) if rng.random() < 0.5 else int(rng.integers(0, 8))
        elif kind == K.ATOMIC:
            arr = int(rng.choice([0, 1]))
            ix = int(rng.integers(0, 6))
        else:
            arr = int(rng.choice([1, 3]))
            ix = int(rng.integers(0, arrays[arr].size))
        s = seq[gt]
        seq[gt] += 1
        step = int(rng.integers(0, 6))
        rows.append((b, t, s, kind, arr, ix, 100 + int(rng.integers(0, 3)), step))
    return build(L, rows, with_step=with_step)


def brute_requests(tr, kinds):
    groups = defaultdict(list)
    ws = tr.launch.warp_size
    steps = tr.issue_step
    for i in range(len(tr)):
        if int(tr.kind[i]) in kinds and tr.array[i] >= 0:
            key = (int(tr.block[i]), int(tr.thread[i]) // ws, int(steps[i]), int(tr.kind[i]), int(tr.array[i]), int(tr.line[i]))
            groups[key].append(i)
    return groups


@pytest.mark.parametrize("seed, with_step", [(0, True), (1, False), (2, True)])
def test_global_memory_matches_brute_force(seed, with_step):
    tr = random_trace(seed, with_step)
    spaces = [a.space for a in tr.launch.arrays]
    want = {}
    for key, idx in brute_requests(tr, {K.GLOBAL_LOAD, K.GLOBAL_STORE, K.ATOMIC}).items():
        arr = tr.launch.arrays[key[4]]
        if spaces[key[4]] != "global":
            continue
        addrs = {int(tr.index[i]) * arr.itemsize for i in idx}
        want[key] = (len(idx), len({a // 32 for a in addrs}), len({a // 128 for a in addrs}),
                     -(-len(addrs) * arr.itemsize // 32))
    r = A.global_memory(tr).requests
    got = {
        (int(r["block"][i]), int(r["warp"][i]), int(r["step"][i]), int(r["kind"][i]), int(r["array"][i]), int(r["line"][i])):
        (int(r["lanes"][i]), int(r["sectors"][i]), int(r["lines"][i]), int(r["ideal_sectors"][i]))
        for i in range(len(r["lanes"]))
    }
    assert got == want


@pytest.mark.parametrize("seed, with_step", [(0, True), (1, False), (4, True)])
def test_shared_banks_match_brute_force(seed, with_step):
    tr = random_trace(seed, with_step)
    want = {}
    for key, idx in brute_requests(tr, {K.SHARED_LOAD, K.SHARED_STORE}).items():
        arr = tr.launch.arrays[key[4]]
        words = {int(tr.index[i]) * arr.itemsize // 4 for i in idx}
        per_bank = defaultdict(set)
        for w in words:
            per_bank[w % 32].add(w)
        want[key] = max(len(v) for v in per_bank.values())
    r = A.shared_banks(tr).requests
    got = {
        (int(r["block"][i]), int(r["warp"][i]), int(r["step"][i]), int(r["kind"][i]), int(r["array"][i]), int(r["line"][i])): int(r["ways"][i])
        for i in range(len(r["ways"]))
    }
    assert got == want
    assert max(want.values()) > 1  # the random trace does exercise conflicts


def brute_races(tr):
    phase = tr.phase
    cls = {K.SHARED_LOAD: 0, K.GLOBAL_LOAD: 0, K.SHARED_STORE: 1, K.GLOBAL_STORE: 1, K.ATOMIC: 2}
    spaces = [a.space for a in tr.launch.arrays]
    acc = defaultdict(list)
    for i in range(len(tr)):
        k = int(tr.kind[i])
        if k in cls and tr.array[i] >= 0:
            acc[(spaces[int(tr.array[i])], int(tr.array[i]), int(tr.index[i]))].append(
                (int(tr.block[i]), int(tr.thread[i]), int(phase[i]), cls[k]))
    found = set()
    for (space, arr, ix), events in acc.items():
        for (b1, t1, p1, c1), (b2, t2, p2, c2) in itertools.combinations(events, 2):
            if (b1, t1) == (b2, t2):
                continue
            if not (c1 == 1 or c2 == 1 or {c1, c2} == {0, 2}):
                continue
            if b1 != b2:
                if space == "shared":
                    continue
                found.add((space, arr, ix, -1, -1))
            elif p1 == p2:
                found.add((space, arr, ix, b1, p1))
    return found


@pytest.mark.parametrize("seed, with_step", [(0, True), (5, False), (6, True)])
def test_races_match_brute_force(seed, with_step):
    tr = random_trace(seed, with_step, n_events=600)
    want = brute_races(tr)
    rec = A.races(tr).records
    got = {(str(r["space"]), int(r["array"]), int(r["index"]), int(r["block"]), int(r["phase"])) for r in rec}
    # the brute force also lists within-block pairs of elements that other blocks touch too; the analysis
    # reports such an element once, as a cross-block race
    cross = {(s, a, i) for s, a, i, b, _ in got if b == -1}
    want = {w for w in want if not (w[0] == "global" and w[3] >= 0 and (w[0], w[1], w[2]) in cross)}
    assert got == want
    assert len(got) == len(rec)
    assert len(want) > 0
    for r in rec:  # each record's pair really races
        assert (r["block_a"], r["thread_a"]) != (r["block_b"], r["thread_b"])
        kinds = {int(r["kind_a"]), int(r["kind_b"])}
        assert kinds != {K.ATOMIC}
        assert int(r["kind_a"]) in (K.SHARED_STORE, K.GLOBAL_STORE, K.ATOMIC)


# ---- divergence ------------------------------------------------------------------------------------
def test_divergence_idle_lanes_and_lines():
    L = launch([GLOBAL_F32], block=40)  # warp 0: 32 lanes, warp 1: 8 lanes
    rows = [(0, t, 1, K.GLOBAL_LOAD, 0, t, 10 if t < 16 else 20, 1) for t in range(32)]  # diverged: 2 lines
    rows += [(0, t, 2, K.GLOBAL_LOAD, 0, t, 30, 2) for t in range(8)]  # 8 of 32 lanes active
    rows += [(0, t, 1, K.GLOBAL_LOAD, 0, t, 10, 1) for t in range(32, 40)]  # warp 1: all its 8 lanes
    d = A.divergence(build(L, rows))
    s = d.steps
    got = sorted(zip(s["warp"].tolist(), s["step"].tolist(), s["active"].tolist(), s["idle"].tolist(), s["lines"].tolist()))
    assert got == [(0, 1, 32, 0, 2), (0, 2, 8, 24, 1), (1, 1, 8, 0, 1)]
    assert d.totals["warp_instructions"] == 3
    assert d.totals["diverged_instructions"] == 1
    assert d.totals["simt_efficiency"] == pytest.approx((32 + 8 + 8) / (3 * 32))
    assert d.totals["occupied_lane_fraction"] == pytest.approx(48 / (32 + 32 + 8))
    by_line = {row["line"]: row for row in d.per_line}
    assert by_line[30]["mean_active_lanes"] == 8


# ---- occupancy -------------------------------------------------------------------------------------
def test_occupancy_sm90_threads_and_registers():
    # 256 threads = 8 warps. Threads: 64 warp slots / 8 = 8 blocks (2048 threads).
    # 32 regs: 32*32 = 1024 regs per warp; 65536/4 = 16384 per sub-partition -> 16 warps each, 64 per SM -> 8.
    o = occupancy(256, 32, 0, "H200")
    assert (o["blocks_per_sm"], o["warps_per_sm"], o["threads_per_sm"], o["occupancy"]) == (8, 64, 2048, 1.0)
    assert o["limited_by"] == "threads" and o["limits"]["registers"] == 8
    # 64 regs: 2048 per warp -> 8 warps per sub-partition, 32 per SM -> 4 blocks: register-limited, 50 %
    o = occupancy(256, 64, 0, "sm_90")
    assert (o["blocks_per_sm"], o["limited_by"], o["occupancy"]) == (4, "registers", 0.5)
    # 40 regs (1280 per warp): 16384 // 1280 = 12 warps per sub-partition, 48 per SM -> 6 blocks of 8 warps
    assert occupancy(256, 40, 0, "H100")["blocks_per_sm"] == 6


def test_occupancy_shared_memory_and_block_limits():
    # 48 KB + 1 KB reserve = 50176 bytes (a multiple of 128); 233472 // 50176 = 4 blocks
    o = occupancy(256, 32, 48 * 1024, "H200")
    assert (o["blocks_per_sm"], o["limited_by"], o["shared_allocated_per_block"]) == (4, "shared_memory", 50176)
    # 32-thread blocks: 64 warp slots would allow 64 blocks, but an SM holds at most 32
    o = occupancy(32, 32, 0, "H200")
    assert (o["blocks_per_sm"], o["limited_by"], o["occupancy"]) == (32, "blocks", 0.5)
    # T4: 1024 threads/SM -> 4 blocks of 256; 16 blocks max; 64 KB shared, 256-byte units, no reserve
    o = occupancy(256, 32, 100, "T4")
    assert (o["blocks_per_sm"], o["limited_by"], o["shared_allocated_per_block"]) == (4, "threads", 256)
    # RTX 4090: 48 warp slots hold one block of 32 warps: 2/3 occupancy
    o = occupancy(1024, 32, 0, "RTX 4090")
    assert (o["blocks_per_sm"], o["occupancy"]) == (1, pytest.approx(2 / 3))


def test_occupancy_impossible_launches():
    # 255 regs x 32 lanes = 8160, rounded to 8192 per warp; 32 warps need 262144 > 65536 registers
    o = occupancy(1024, 255, 0, "H200")
    assert (o["blocks_per_sm"], o["limited_by"], o["fits"]) == (0, "registers", False)
    assert occupancy(2048, 16, 0, "H200")["limits"]["threads"] == 0
    assert occupancy(128, 300, 0, "A100")["blocks_per_sm"] == 0  # more than 255 registers per thread
    assert occupancy(128, 32, 200 * 1024, "A100")["limits"]["shared_memory"] == 0  # more than 163 KB
    with pytest.raises(ValueError):
        occupancy(0, 32, 0)


def test_device_table_and_names():
    assert get_device("NVIDIA H200").compute_capability == "9.0"
    assert get_device("a100-sxm4-80gb") is DEVICES["A100"]
    assert get_device("sm_89") is DEVICES["RTX 4090"]
    assert get_device("NVIDIA GeForce RTX 4090").max_warps_per_sm == 48
    assert get_device("Tesla T4").max_blocks_per_sm == 16
    assert "generic" in DEVICES
    with pytest.raises(KeyError, match="unknown device 'Voodoo2'"):
        get_device("Voodoo2")


# ---- summary ---------------------------------------------------------------------------------------
def test_summary_keys_and_estimated_occupancy():
    arrays = [GLOBAL_F32, tile(32)]
    rows = warp_access(K.GLOBAL_LOAD, 0, range(32), step=1) + warp_access(K.SHARED_LOAD, 1, [i * 32 for i in range(32)], step=2)
    tr = build(launch(arrays, block=256), rows)
    s = A.summary(tr)
    assert s["sectors_per_request"] == {"load": 4.0, "store": None}
    assert s["bank_conflicts"] == {"load": 31, "store": 0, "total": 31}
    assert s["races"] == 0
    occ = s["occupancy"]
    assert occ["estimated"] and occ["registers_per_thread"] == 32 and occ["shared_bytes_per_block"] == 4096
    assert occ["blocks_per_sm"] == 8  # 4096 + 1024 = 5120 bytes -> 45 by shared memory; 8 by threads
    tr = tr.with_launch(meta={**tr.launch.meta, "registers_per_thread": 64, "shared_bytes_per_block": 0})
    occ = A.summary(tr, device="A100")["occupancy"]
    assert not occ["estimated"] and occ["blocks_per_sm"] == 4 and occ["device"] == "NVIDIA A100"
    import json

    json.dumps(s)  # the CLI merges it into JSON output


def test_empty_trace_analyses():
    tr = Trace(launch([GLOBAL_F32, tile(32)]), {n: np.zeros(0) for n in ("block", "thread", "seq", "kind")})
    s = A.summary(tr)
    assert s["sectors_per_request"] == {"load": None, "store": None}
    assert s["bank_conflicts"]["total"] == 0 and s["races"] == 0
    assert A.divergence(tr).totals["warp_instructions"] == 0
