"""Narration: a caption for every frame of every bundled kernel, numbers matching the analyses."""

import numpy as np
import pytest

import gpuviz
from gpuviz.model import analysis
from gpuviz.model.frames import Frames, LaneState
from gpuviz.model.narration import Narrator, StopError
from gpuviz.model.trace import EventKind as K
from gpuviz.catalog import all_kernels, get_kernel

# small launches: the CPU executor captures each in well under a second
SIZES = {"matmul_naive": 24, "matmul_tiled": 24, "attention_naive": 40, "attention_fused": 40, "stencil_heat": 20}


def _narrated(name, size=None):
    spec = get_kernel(name)
    size = size or SIZES.get(name, spec.small_size)
    args = spec.make_args(size, np.random.default_rng(0))
    grid, block = spec.launch(size, spec.default_block)
    trace = gpuviz.capture(spec.kernel, grid, block, *args, backend="cpu")
    frames = Frames(trace)
    return trace, frames, Narrator.of_frames(frames)


@pytest.mark.parametrize("name", list(all_kernels()))
def test_every_frame_has_a_caption_whose_numbers_match_the_analyses(name):
    trace, frames, n = _narrated(name)
    gm, sb = analysis.global_memory(trace), analysis.shared_banks(trace)
    captions = n.captions()
    assert len(captions) == frames.n_frames
    for f, cap in enumerate(captions):
        assert cap.strip() and (cap[0].isupper() or cap[0].isdigit()), (f, cap)
        facts = n.facts(f)
        if "sectors" in facts:
            g = int(n.g_row[f])
            # the request is the frame's warp instruction: same block, warp, step, kind, array, line
            for key in ("block", "warp", "step", "kind", "array", "line"):
                assert int(gm.requests[key][g]) == int(getattr(frames, key)[f])
            assert facts["sectors"] == int(gm.requests["sectors"][g])
            assert f"{facts['sectors']} sector" in cap, cap
        if facts.get("ways", 1) > 1:
            s = int(n.s_row[f])
            assert facts["ways"] == int(sb.requests["ways"][s])
            assert f"{facts['ways']}-way bank conflict" in cap, cap
        if facts.get("barrier_opens"):
            assert f"{facts['threads_at_barrier']} " in cap


def test_coalesced_load_caption():
    _, frames, n = _narrated("vector_add")
    f = n.find("first global load")
    assert n.caption(f) == "Warp 0 reads a[i] for 32 consecutive i: 4 sectors, fully coalesced"
    assert n.facts(f)["sectors"] == 4 and n.facts(f)["efficiency"] == 1.0


def test_uncoalesced_store_caption_has_the_analysis_sector_count():
    trace, frames, n = _narrated("transpose_naive")
    f = n.find("first global store")
    facts = n.facts(f)
    assert (facts["sectors"], facts["ideal_sectors"]) == (32, 4)
    assert n.caption(f).startswith("Warp 0 writes dst[col, row] down a column")
    assert "32 sectors where 4 would do" in n.caption(f)


def test_bank_conflict_caption():
    _, frames, n = _narrated("transpose_shared")
    f = n.find("first conflict")
    assert n.facts(f)["ways"] == 32
    assert n.caption(f) == ("Warp 0 reads tile[tx, ty + j] down a column (32 values of tx, 128 bytes apart): "
                            "a 32-way bank conflict, 32 times slower than it could be")
    _, _, padded = _narrated("transpose_padded")
    g = padded.find("first barrier + 1")
    assert padded.facts(g)["ways"] == 1 and "conflict-free" in padded.caption(g)


def test_barrier_captions():
    _, frames, n = _narrated("matmul_tiled")
    opens = n.find("first barrier")
    assert opens == int(frames.barrier_complete_frames[0])
    assert n.caption(opens).startswith("All 256 threads of block (0,0) are at syncthreads and it opens: "
                                       "the shared arrays sA and sB are complete")
    # every warp issues the same instructions before sync 1: on the Barriers view's clock none waits (issue 28, 4)
    assert n.caption(opens - 1) == ("Warp 6 reaches syncthreads (7 of 8 warps of block (0,0) are there): every warp "
                                    "issues the same 6 instructions to get here, so all arrive at the same step and "
                                    "none waits for another")
    second = n.find("barrier 2")
    assert "everyone is done reading sA and sB" in n.caption(second)


def test_divergence_caption_counts_the_lanes_the_frames_model_calls_diverged():
    trace, frames, n = _narrated("reduce_interleaved")
    f = n.find("first divergence")
    # its first read, cache[tid] of ``cache[tid] += cache[tid + s]``: the event's site names the subscript, though
    # the line holds two reads of cache
    assert n.caption(f).startswith("16 lanes of warp 0 (every 2nd one) read cache[tid] (every 2nd element)")
    assert n.caption(f).endswith("the other 16 lanes wait on the other branch, so divergence halves the warp's speed")
    dv = analysis.divergence(trace)
    checked = 0
    for g in range(frames.n_frames):
        facts = n.facts(g)
        if facts.get("waiting_lanes"):
            b, w = facts["block"], facts["warp"]
            ws = trace.launch.warp_size
            states = frames.lane_states(b, g)[w * ws:(w + 1) * ws]
            assert facts["waiting_lanes"] == int((states == LaneState.DIVERGED).sum())
            d = int(n.d_row[g])
            assert facts["active_lanes"] == int(dv.steps["active"][d]) == facts["lanes"]
            checked += 1
    assert checked > 10


def test_kernel_notes_at_stops_and_stop_errors():
    _, frames, _ = _narrated("transpose_shared")
    n = Narrator.of_frames(frames, notes={"first conflict": "A column of the tile is one bank.", "end": "Done."})
    f = n.find("first conflict")
    assert n.note(f) == "A column of the tile is one bank."
    assert n.text(f).endswith(". A column of the tile is one bank.")
    assert n.note(f + 1) == ""
    assert n.find("end") == frames.n_frames - 1 and n.find(-1) == frames.n_frames - 1
    assert n.find("source: cuda.syncthreads") == int(np.flatnonzero(frames.kind == K.BARRIER)[0])
    with pytest.raises(StopError, match="unknown stop 'first lunch'"):
        n.find("first lunch")
    _, _, va = _narrated("vector_add")
    with pytest.raises(StopError, match="no syncthreads"):
        va.find("first barrier")


def test_a_strided_read_is_named_as_the_cells_it_reads_in_title_and_caption():
    """Finding 5: the title said cache[0..30], the view lit the even cells, the caption said cache[tid + s]
    (the line is ``cache[tid] += cache[tid + s]``: its first read is cache[tid])."""
    import numpy as np

    import gpuviz
    from gpuviz.model.frames import Frames
    from gpuviz.model.narration import Narrator
    from gpuviz.catalog import get_kernel

    spec = get_kernel("reduce_interleaved")
    grid, block = spec.launch(spec.small_size, spec.default_block)
    tr = gpuviz.capture(spec.kernel, grid, block, *spec.make_args(spec.small_size, np.random.default_rng(0)))
    F = Frames(tr)
    n = Narrator.of_frames(F)
    f = next(i for i in range(F.n_frames) if "16 of 32 lanes read shared" in F.describe(i))
    cells = np.unique(tr.index[F.events(f)])
    assert list(cells) == list(range(0, 32, 2))  # the cells the shared view lights
    assert "cache[0, 2, …, 30]" in F.describe(f)
    # the caption names the subscript of the event's own site (the capture plan's), the one the cells are of
    assert "tid + s" not in n.caption(f) and "read cache[tid] (every 2nd element)" in n.caption(f)
    second = next(i for i in range(f + 1, F.n_frames) if F.warp[i] == F.warp[f] and F.kind[i] == F.kind[f])
    assert list(np.unique(tr.index[F.events(second)])) == list(range(1, 32, 2))
    assert "cache[1, 3, …, 31]" in F.describe(second) and "read cache[tid + s] (every 2nd element)" in n.caption(second)


def test_a_gpu_barrier_reached_by_one_warp_lanes_apart_is_narrated():
    """numba-cuda's laplace kernel on the H200 (one block of 4x4 threads, tests/data/laplace_h200_partial_warp.gpuviz):
    its one warp's lanes reached each syncthreads in separate groups. The caption of every such frame raised
    IndexError (no other warp to name), so the round trip of that recording and the window's caption broke, and
    the count said '6 of 1 warps of block 0 are there'."""
    import re
    from pathlib import Path

    trace = gpuviz.load(Path(__file__).parent / "data" / "laplace_h200_partial_warp.gpuviz")
    narrator = Narrator.of_frames(Frames(trace))
    captions = [narrator.caption(f) for f in range(narrator.frames.n_frames)]
    at_barrier = [c for c in captions if "reaches syncthreads" in c]
    assert len(at_barrier) == 19
    assert all("no other warp of its block issues in this phase" in c for c in at_barrier)
    for c in captions:
        for n, m in re.findall(r"(\d+) of (\d+) warps", c):
            assert int(n) <= int(m), c
    assert sum("reached it lanes apart" in c for c in at_barrier) == 14  # the 2nd..6th arrivals of each phase
