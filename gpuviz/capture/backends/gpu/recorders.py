"""The GPU recorder's device functions (``__gv_r_*``): what the rewritten kernel calls at each recorded site to
count its events, or to write them into the trace buffers (see :func:`make_recorders`)."""

from __future__ import annotations

import types
from dataclasses import dataclass

from ..rewrite import PREFIX
from . import recorder_cache
from .layout import BLOCK_SETS, SLAB_MARK


# ---- the recorder device functions ---------------------------------------------------------------------
def slice_first(lo, given, step, n):
    """The first index of ``a[lo::step]`` along a dimension of ``n`` elements (``given``: lo was written), as
    Python's ``slice.indices`` gives it; the recorders jit it as a device function."""
    if not given:
        return 0 if step > 0 else n - 1
    if lo < 0:
        lo += n
        if lo < 0:
            lo = 0 if step > 0 else -1
    elif lo >= n:
        lo = n if step > 0 else n - 1
    return lo


@dataclass(frozen=True)
class _Consts:
    """One variant's compile-time constants (see :func:`_constants`). Each sub-builder below reads the ones its
    device functions use into local variables before it defines them, so that every jitted function closes
    over a plain int, bool or numba type, as numba needs to fold it (an attribute of this object would be a
    run-time value to it), and the branches it switches off are removed."""
    cuda: object
    jit: object
    COUNT: bool
    WARP: bool
    TIME_ALL: bool
    UNIFORM: bool
    ALL: bool
    RANGE: bool
    U64: object
    I32: object
    I64: object
    U32: object
    IDX: object
    NARROW: bool
    SI: object
    GRID_1D: bool
    BLOCK_DIMS: tuple | None
    BX: int
    BY: int
    BZ: int
    TPB: int
    BLOCK_1D: bool
    FULL: int
    STRIDE: int
    EMPTY: int
    MARK: int


def make_recorders(cuda, *, count: bool, warp: bool, time_all: bool, uniform: bool = False, blocks: str = "table",
                   index32: bool = False, grid: tuple | None = None, block: tuple | None = None) -> dict:
    """The ``__gv_r_*`` device functions for one variant. ``count``, ``warp``, ``time_all``, ``uniform`` (the
    layout), ``blocks`` (:data:`BLOCK_SETS`: every block, a range in scalar parameters, or the block
    table), ``index32`` (every recorded array and every buffer has fewer than 2**31 elements: index and
    position arithmetic in 32 bits, and a 32-bit recording state)
    and the launch's ``grid`` and ``block`` shapes (None: read at run time) are compile-time
    constants: the compiler removes the branches they switch off.

    Why the code below looks the way it does: a recording kernel is bound by the instructions it issues,
    not by the bytes it writes (Nsight Compute on an H200, per-warp vector add: 13.8x the plain kernel's
    instructions, 0.9% of its DRAM time in trace bytes). So every buffer index is cast to unsigned (numba
    adds negative-index wraparound, four instructions, to every signed index), divisions by 32 are shifts,
    positions are 32-bit where they fit (:func:`mad`, :func:`at_index`: numba would widen each step to 64
    bits), a warp whose 32 lanes are all converged uses warp intrinsics with the constant full mask (no
    convergence check around them) and stages its records in registers, numbered by a count every lane
    keeps (no lane asks lane 0 where to write), and an index proven to be lane 0's plus the lane needs no
    vote. Per-warp vector add went from 396 warp instructions per warp to 165 (plain: 42).
    """
    if blocks not in BLOCK_SETS:
        raise ValueError(f"blocks must be one of {', '.join(BLOCK_SETS)}, not {blocks!r}")
    # one set per process and set of constants: numba compiles a device function once per signature and keeps
    # it on its dispatcher, so every later variant (the record pass after the count pass, the next kernel of the
    # same block shape) reuses the recorders already compiled instead of compiling ~11 anew (issue 25: device
    # function compiles were 78% of a cold GPU capture, 343 of 438 s over 56 corpus launches on an H200)
    shape = _constants(cuda, count=count, warp=warp, time_all=time_all, uniform=uniform, blocks=blocks,
                       index32=index32, grid=grid, block=block)
    if not isinstance(cuda, types.ModuleType):  # a stand-in (SourceOnlyCuda): plain functions, nothing to keep
        return _build_recorders(shape)
    key = (cuda, shape.COUNT, shape.WARP, shape.TIME_ALL, shape.UNIFORM, shape.ALL, shape.RANGE,
           shape.NARROW, shape.GRID_1D, shape.BLOCK_DIMS)
    if key not in _MADE:
        _MADE[key] = _build_recorders(shape)
        # and once per machine: what numba compiled of them in an earlier process is read back from disk
        recorder_cache.attach(_MADE[key], repr(key[1:]))
    return dict(_MADE[key])


#: the recorder sets made so far in this process (numba.cuda's), by their constants (see :func:`make_recorders`)
_MADE: dict[tuple, dict] = {}


def _build_recorders(k: _Consts) -> dict:
    """The ``__gv_r_*`` device functions of one set of constants, newly jitted."""
    # later builders close over the device functions of earlier ones (numba inlines them: forceinline)
    record_pattern, mad, at_index = _lane_helpers(k)
    put_timed, count_record, put_slab, flush_staged = _stage_helpers(k, mad, at_index)
    put_warp_converged, put_warp = _warp_puts(k, record_pattern, mad, at_index, put_timed, count_record, put_slab,
                                              flush_staged)
    put = _make_put(k, mad, at_index, put_warp_converged, put_warp)
    block_ordinal = _block_ordinal(k)
    r_begin = _make_begin(k, mad, block_ordinal, put)
    r_end, r_event, r_value = _make_end_event_value(k, mad, at_index, flush_staged, put)
    wrap, r_mem1, r_mem1_lane_linear, r_mem2, r_mem3, r_mem4 = _make_mem(k, put)
    slice_start, r_view1, r_view2, r_view3, r_view4 = _make_views(k, wrap, put)
    fns = {"r_block_ordinal": block_ordinal, "r_wrap": wrap, "r_slice_start": slice_start, "r_view1": r_view1,
           "r_view2": r_view2, "r_view3": r_view3, "r_view4": r_view4, "r_begin": r_begin, "r_end": r_end, "r_event": r_event, "r_value": r_value,
           "r_mem1": r_mem1, "r_mem1_lane_linear": r_mem1_lane_linear, "r_mem2": r_mem2, "r_mem3": r_mem3, "r_mem4": r_mem4}
    return {PREFIX + name: fn for name, fn in fns.items()}


def _constants(cuda, *, count: bool, warp: bool, time_all: bool, uniform: bool, blocks: str, index32: bool,
               grid: tuple | None, block: tuple | None) -> _Consts:
    """The compile-time constants of :func:`make_recorders`'s variant."""
    import numba

    COUNT, WARP, TIME_ALL, UNIFORM = bool(count), bool(warp), bool(time_all), bool(uniform)
    ALL, RANGE = blocks == "all", blocks == "range"
    U64, I32, I64, U32 = numba.uint64, numba.int32, numba.int64, numba.uint32
    IDX = numba.int32 if index32 else numba.int64
    # 32-bit indices: the recording state (positions, per-warp mode's staged record) in 32 bits too (the host
    # builds such a variant only when every buffer has fewer than 2**31 elements)
    NARROW = bool(index32)
    SI = numba.int32 if NARROW else numba.int64
    GRID_1D = grid is not None and tuple(grid)[1:] in ((), (1,), (1, 1))
    BLOCK_DIMS = None if block is None else tuple(block) + (1,) * (3 - len(block))
    BX, BY, BZ = BLOCK_DIMS or (0, 0, 0)
    TPB = BX * BY * BZ
    BLOCK_1D = BLOCK_DIMS is not None and BY == 1 and BZ == 1
    FULL = 0xFFFFFFFF
    # Layout: in thread mode the 32 lanes of a warp interleave their events (event k of lane l at
    # warp_base + 32 k + l), so a warp's 32 stores of one event land in one 128-byte line (coalesced);
    # thread-contiguous rows made every store a separate memory transaction. In warp mode each record is a
    # row of four fields (code, mask, base index, stride) in the ``idx`` buffer, written with one vector store
    # (store_row4): 32 lanes writing their staged records write 512 contiguous bytes; the lanes together write
    # whole 32-wide slab rows.
    STRIDE = 1 if WARP else 32
    EMPTY = -1  # a staged code that means "no record here" (codes are >= 0)
    MARK = SLAB_MARK
    jit = cuda.jit(device=True, forceinline=True)
    return _Consts(cuda=cuda, jit=jit, COUNT=COUNT, WARP=WARP, TIME_ALL=TIME_ALL, UNIFORM=UNIFORM, ALL=ALL, RANGE=RANGE,
                   U64=U64, I32=I32, I64=I64, U32=U32, IDX=IDX, NARROW=NARROW, SI=SI, GRID_1D=GRID_1D,
                   BLOCK_DIMS=BLOCK_DIMS, BX=BX, BY=BY, BZ=BZ, TPB=TPB, BLOCK_1D=BLOCK_1D, FULL=FULL, STRIDE=STRIDE,
                   EMPTY=EMPTY, MARK=MARK)


def _lane_helpers(k: _Consts):
    """The lanes' index pattern (:func:`lane_pattern`, :func:`record_pattern`) and the state's arithmetic
    (:func:`mad`, :func:`at_index`): (record_pattern, mad, at_index)."""
    from .intrinsics import imad32, mad32_index

    cuda, jit, IDX, MARK, NARROW, SI, U64 = k.cuda, k.jit, k.IDX, k.MARK, k.NARROW, k.SI, k.U64

    @jit
    def lane_pattern(mask, index, lane):
        """(base, step, regular) of the lanes in ``mask``: regular when each one's index is base + lane * step
        (exact: a vote over every lane). ``mask`` is the constant full mask where it can be (no convergence
        check in the compiled code), else the active mask."""
        ix = IDX(index)
        base = cuda.shfl_sync(mask, ix, 0)
        src = 1 if (mask & 2) != 0 else 0
        step = IDX(cuda.shfl_sync(mask, ix, src) - base)
        regular = (cuda.all_sync(mask, ix == IDX(base + IDX(lane) * step)) != 0) and step != MARK
        return base, step, regular

    @jit
    def record_pattern(mask, index, lane, has_index, linear):
        """(base, step, regular) of an event: :func:`lane_pattern` for a memory event, (0, 0, True) otherwise;
        for an index known to be lane 0's plus the lane (``linear``), that without a vote."""
        if has_index:
            if linear:
                return IDX(index - lane), IDX(1), True
            return lane_pattern(mask, index, lane)
        return IDX(0), IDX(0), True

    @jit
    def mad(a, b, c):
        """``a * b + c`` in the state's width: 32-bit instructions in the narrow state (numba would widen
        each int32 step to 64 bits, two instructions apiece on the GPU)."""
        if NARROW:
            return imad32(a, b, c)
        return SI(a * b + c)

    @jit
    def at_index(a, b, c):
        """The buffer position ``a * b + c`` as an index: 32-bit arithmetic when every buffer has fewer than
        2**31 elements (the narrow state), else 64-bit."""
        if NARROW:
            return mad32_index(a, b, c)
        return U64(a * b + c)

    return record_pattern, mad, at_index


def _stage_helpers(k: _Consts, mad, at_index):
    """What a record's writers share: its timestamp, its count in the counting variant, its slab row, and the
    per-warp mode's staged record: (put_timed, count_record, put_slab, flush_staged)."""
    from .intrinsics import globaltimer, smid, store_row4

    cuda, jit, TIME_ALL, IDX, I32, FULL, EMPTY = k.cuda, k.jit, k.TIME_ALL, k.IDX, k.I32, k.FULL, k.EMPTY

    @jit
    def put_timed(s, time_a, sm_a, drop_a, starts):
        """Lane 0 stamps a timed event: %globaltimer, and %smid at START."""
        q = s[2]
        if q < s[3]:
            time_a[at_index(q, 1, 0)] = globaltimer()
            if starts:  # a block never moves between SMs: its START carries the SM for every event
                sm_a[at_index(q, 1, 0)] = smid()
        else:
            cuda.atomic.add(drop_a, 1, 1)
        s[2] = mad(q, 1, 1)

    @jit
    def count_record(s, lane, which, timed, regular):
        """The counting variant's per-warp record: lane 0 counts it (converged ones in s[0], diverged ones in
        s[17]: what r_end reports), its timestamp and its slab row."""
        if lane == 0:
            s[which] += 1
            if timed or TIME_ALL:
                s[2] += 1
            if not regular:
                s[8] += 1

    @jit
    def put_slab(s, lanes, slab_a, drop_a, index, lane):
        """An irregular record's lanes write their own indices into the warp's next slab row (lane 0 keeps
        the row count: the lanes here take it from lane 0)."""
        row = cuda.shfl_sync(lanes, s[8], 0)
        if row < s[9]:
            slab_a[at_index(row, 32, lane)] = IDX(index)  # the lanes' neighbouring words: one coalesced store
        elif lane == 0:
            cuda.atomic.add(drop_a, 2, 1)
        s[8] = mad(row, 1, 1)

    @jit
    def flush_staged(s, idx_a):
        """This lane writes the converged record it holds, if any, as one 16-byte row (each lane for
        itself: no lane needs another to be here). 32 lanes write 32 neighbouring rows: 512 bytes."""
        if s[13] != EMPTY:
            k = mad(s[15], 1, s[11])  # the record this lane holds: the stage's first, plus the lane
            if k < s[1]:  # records past the slot's capacity are counted at END (drop[0]), not written
                store_row4(idx_a, at_index(k, 1, s[6]), IDX(s[13]), IDX(I32(FULL)), IDX(s[14]), IDX(s[16]))
            s[13] = EMPTY

    return put_timed, count_record, put_slab, flush_staged


def _warp_puts(k: _Consts, record_pattern, mad, at_index, put_timed, count_record, put_slab, flush_staged):
    """Per-warp mode's record of an event, its warp converged or not: (put_warp_converged, put_warp)."""
    from .intrinsics import store_row4

    jit, COUNT, TIME_ALL, IDX, SI, I32, U32, FULL, MARK = k.jit, k.COUNT, k.TIME_ALL, k.IDX, k.SI, k.I32, k.U32, k.FULL, k.MARK

    @jit
    def put_warp_converged(s, lanes, idx_a, slab_a, time_a, sm_a, drop_a, code, index, has_index, timed, starts, linear):
        """All 32 lanes are here: the constant full mask, straight-line code that every lane runs, and the
        record staged in a lane's registers instead of stored (see the module docstring). Its number k is
        every lane's own converged count: nothing to fetch from lane 0, and known to the compiler in
        straight-line code, where the staging below folds to a few selects."""
        lane = s[11]
        base, step, regular = record_pattern(U32(FULL), index, lane, has_index, linear)
        if COUNT:
            count_record(s, lane, 0, timed, regular)
            return
        if not regular:
            put_slab(s, U32(FULL), slab_a, drop_a, index, lane)
        k = s[0]
        g = mad(s[15], -1, k)
        if g >= 32:  # every lane holds a record: write them all, start a new stage
            flush_staged(s, idx_a)
            s[15] = k
            g = SI(0)
        mine = g == lane  # selects, not a branch: the compiler keeps this straight-line
        s[13] = SI(code) if mine else s[13]
        s[14] = base if mine else s[14]
        s[16] = (step if regular else IDX(MARK)) if mine else s[16]
        s[0] = mad(k, 1, 1)
        if (timed or TIME_ALL) and lane == 0:
            put_timed(s, time_a, sm_a, drop_a, starts)

    @jit
    def put_warp(s, lanes, code_a, idx_a, slab_a, time_a, sm_a, drop_a, code, index, has_index, timed, starts, linear):
        """Some lanes are elsewhere (lane 0 is here): the active mask in every warp intrinsic, and lane 0
        stores the record at once in the slot's diverged part, with the number of converged records before
        it (in ``code``), from which the host restores the program order."""
        lane = s[11]
        base, step, regular = record_pattern(lanes, index, lane, has_index, linear)
        if COUNT:
            count_record(s, lane, 17, timed, regular)
            return
        if not regular:
            put_slab(s, lanes, slab_a, drop_a, index, lane)
        if lane == 0:
            j = s[17]
            if j < s[18]:  # past the capacity: counted at END (drop[0])
                store_row4(idx_a, at_index(j, 1, s[19]), IDX(code), IDX(I32(lanes)), base,
                           step if regular else IDX(MARK))
                code_a[at_index(j, 1, s[20])] = I32(s[0])
            s[17] = mad(j, 1, 1)
            if timed or TIME_ALL:
                put_timed(s, time_a, sm_a, drop_a, starts)

    return put_warp_converged, put_warp


def _make_put(k: _Consts, mad, at_index, put_warp_converged, put_warp):
    """:func:`put`, every recorder's record of an event, in either mode."""
    from .intrinsics import globaltimer, smid

    cuda, jit, COUNT, WARP, TIME_ALL, FULL, STRIDE = k.cuda, k.jit, k.COUNT, k.WARP, k.TIME_ALL, k.FULL, k.STRIDE

    @jit
    def put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a,
            code, index, has_index, timed, starts, linear):
        if WARP:
            lanes = cuda.activemask()  # read before any branch of ours: the lanes converged here
            if s[4] == 0:
                return
            if lanes == FULL:  # the common case: the constant mask lets the compiler drop its convergence checks
                put_warp_converged(s, lanes, idx_a, slab_a, time_a, sm_a, drop_a, code, index, has_index, timed, starts,
                                   linear)
            elif (lanes & 1) == 0:  # lanes diverged from lane 0: not recorded, but counted (reported, not silent)
                s[12] += 1
            else:
                put_warp(s, lanes, code_a, idx_a, slab_a, time_a, sm_a, drop_a, code, index, has_index, timed, starts, linear)
            return
        if s[4] == 0:
            return
        if COUNT:  # counting: positions are plain counts
            s[0] += 1
            if timed or TIME_ALL:
                s[2] += 1
            return
        # past the capacity: not written, counted in the state (s[13], s[14]) and reported once at END (r_end): no
        # atomic per event (a first run into guessed buffers may overflow by millions), and the position stops at
        # its end, so that it never wraps around 32 bits however many events a thread makes
        p = s[0]
        if p < s[1]:
            at = at_index(p, 1, 0)
            code_a[at] = code
            if has_index:
                idx_a[at] = index
            s[0] = mad(p, 1, STRIDE)
        else:
            s[13] += 1
        if timed or TIME_ALL:
            q = s[2]
            if q < s[3]:
                time_a[at_index(q, 1, 0)] = globaltimer()
                if starts:
                    sm_a[at_index(q, 1, 0)] = smid()
                s[2] = mad(q, 1, STRIDE)
            else:
                s[14] += 1

    return put


def _block_ordinal(k: _Consts):
    """:func:`block_ordinal`, which of the recorded blocks this one is."""
    cuda, jit, GRID_1D, ALL, RANGE, I64, U64 = k.cuda, k.jit, k.GRID_1D, k.ALL, k.RANGE, k.I64, k.U64

    @jit
    def block_ordinal(slot_a, first, end, step):
        """This block's ordinal among the recorded ones, -1 if it is not recorded. ``blocks="range"`` reads
        only scalar parameters (no memory load before the branch); ``"table"`` loads its ``slot`` entry."""
        if GRID_1D:
            bid = I64(cuda.blockIdx.x)
        else:
            gx = I64(cuda.gridDim.x)
            gy = I64(cuda.gridDim.y)
            bid = cuda.blockIdx.x + cuda.blockIdx.y * gx + cuda.blockIdx.z * gx * gy
        if ALL:
            return bid
        if RANGE:
            rel = bid - first
            if rel < 0 or bid >= end:
                return -1
            if step == 1:  # a contiguous range: no division
                return rel
            k = rel // step
            return k if k * step == rel else -1
        return slot_a[U64(bid)]

    return block_ordinal


# r_begin: a thread's recording state (its slot, its buffers' positions and capacities), then its START event
def _make_begin(k: _Consts, mad, block_ordinal, put):
    cuda, jit, COUNT, WARP, UNIFORM, ALL, STRIDE, EMPTY = k.cuda, k.jit, k.COUNT, k.WARP, k.UNIFORM, k.ALL, k.STRIDE, k.EMPTY
    BLOCK_DIMS, BLOCK_1D, TPB, BX, BY, I32, U64, SI = k.BLOCK_DIMS, k.BLOCK_1D, k.TPB, k.BX, k.BY, k.I32, k.U64, k.SI
    @jit
    def r_begin(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code,
                first, end, step, cap0, cap1, cap2, cap3):
        if BLOCK_DIMS is None:
            bdx = cuda.blockDim.x
            bdy = cuda.blockDim.y
            tpb = I32(bdx * bdy * cuda.blockDim.z)
            tid = I32(cuda.threadIdx.x + cuda.threadIdx.y * bdx + cuda.threadIdx.z * bdx * bdy)
        elif BLOCK_1D:  # the launch's block shape is a compile-time constant: no index arithmetic for 1-D blocks
            tpb = I32(TPB)
            tid = I32(cuda.threadIdx.x)
        else:
            tpb = I32(TPB)
            tid = I32(cuda.threadIdx.x + cuda.threadIdx.y * BX + cuda.threadIdx.z * (BX * BY))
        k = block_ordinal(slot_a, first, end, step)
        on = True if ALL else k >= 0  # every block recorded: a constant, and the checks on it fold away
        lane = I32(tid & 31)  # tid >= 0: a mask and a shift, not numba's signed floor division
        group = mad(k, (tpb + 31) >> 5, tid >> 5)  # this warp's number among the recorded warps
        slot = group if WARP else k * tpb + tid
        s[4] = 1 if on else 0
        s[5] = slot
        s[11] = lane
        s[12] = 0
        s[8] = 0
        s[9] = 0
        s[13] = 0  # per-thread mode: the events and timestamps that found the slot full (see put)
        s[14] = 0
        if WARP:  # converged records counted from 0 in every lane; the stage starts empty
            s[0] = 0
            s[13] = EMPTY
            s[14] = 0
            s[15] = 0
            s[16] = 0
            s[17] = 0
            if COUNT or not on:
                for j in (1, 2, 3, 6, 18, 19, 20):
                    s[j] = 0
            elif UNIFORM:  # every warp gets the largest counts (scalar parameters): positions are arithmetic
                s[6] = mad(group, cap0 + cap3, 0)  # the slot: cap0 converged rows, then cap3 diverged rows
                s[1] = SI(cap0)
                s[19] = mad(group, cap0 + cap3, cap0)
                s[18] = SI(cap3)
                s[20] = mad(group, cap3, 0)
                s[2] = mad(group, cap1, 0)
                s[3] = mad(group, cap1, cap1)
                s[8] = mad(group, cap2, 0)
                s[9] = mad(group, cap2, cap2)
            else:
                at = U64(slot)
                s[6] = off_a[at, 0]
                s[1] = cap_a[at, 0]
                s[2] = off_a[at, 1]
                s[3] = off_a[at, 1] + cap_a[at, 1]
                s[8] = off_a[at, 2]
                s[9] = off_a[at, 2] + cap_a[at, 2]
                s[19] = off_a[at, 3]
                s[18] = cap_a[at, 3]
                s[20] = off_a[at, 4]
        elif COUNT or not on:
            for j in range(4):
                s[j] = 0
        elif UNIFORM:  # every thread of a warp gets the warp's largest count: positions are arithmetic, no load
            s[0] = mad(group, cap0 * 32, lane)
            s[2] = mad(group, cap1 * 32, lane)
            s[1] = mad(cap0, STRIDE, s[0])
            s[3] = mad(cap1, STRIDE, s[2])
        else:
            at = U64(slot)
            s[0] = off_a[at, 0]
            s[1] = off_a[at, 0] + cap_a[at, 0] * STRIDE
            s[2] = off_a[at, 1]
            s[3] = off_a[at, 1] + cap_a[at, 1] * STRIDE
        if not WARP:
            s[6] = s[0]
        s[7] = s[2]
        s[10] = s[8]
        put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, 0, False, True,
            True, False)
    return r_begin


def _make_end_event_value(k: _Consts, mad, at_index, flush_staged, put):
    """A thread's END (its counts written, what it dropped reported), a plain event, and an event on a value:
    (r_end, r_event, r_value)."""
    from .intrinsics import store_row4

    cuda, jit, COUNT, WARP, STRIDE, I64, U64 = k.cuda, k.jit, k.COUNT, k.WARP, k.STRIDE, k.I64, k.U64

    @jit
    def r_end(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code):
        put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, 0, False, True, False, False)
        if not WARP:
            if s[4] != 0:
                slot = U64(s[5])
                cnt_a[slot, 0] = (min(s[0], s[1]) - s[6]) // STRIDE if not COUNT else s[0]
                cnt_a[slot, 1] = (min(s[2], s[3]) - s[7]) // STRIDE if not COUNT else s[2]
                if not COUNT:  # what it produced, fitted or not: a first run into guessed buffers sizes the next
                    cnt_a[slot, 2] = (s[0] - s[6]) // STRIDE + s[13]
                    cnt_a[slot, 3] = (s[2] - s[7]) // STRIDE + s[14]
                    if s[13] > 0:  # what did not fit: dropped, and said so
                        cuda.atomic.add(drop_a, 0, I64(s[13]))
                    if s[14] > 0:
                        cuda.atomic.add(drop_a, 1, I64(s[14]))
            return
        if COUNT:
            if s[4] != 0 and s[11] == 0:  # converged records, timed events, slab rows, diverged records
                store_row4(cnt_a, at_index(s[5], 1, 0), s[0], s[2], s[8], s[17])
            return
        flush_staged(s, idx_a)  # every lane, for itself: this thread is done, what it holds goes out now
        if s[4] != 0 and s[11] == 0:  # lane 0 keeps the warp's counts
            store_row4(cnt_a, at_index(s[5], 1, 0), min(s[0], s[1]), mad(s[7], -1, min(s[2], s[3])),
                       mad(s[10], -1, min(s[8], s[9])), min(s[17], s[18]))
            if s[0] > s[1]:  # records past the slot's capacity were not written: say how many
                cuda.atomic.add(drop_a, 0, I64(mad(s[1], -1, s[0])))
            if s[17] > s[18]:
                cuda.atomic.add(drop_a, 0, I64(mad(s[18], -1, s[17])))
        if s[12] > 0:
            cuda.atomic.add(drop_a, 3, I64(s[12]))

    @jit
    def r_event(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code):
        put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, 0, False, True, False, False)
        return 0

    @jit
    def r_value(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, value):
        put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, 0, False, True, False, False)
        return value

    return r_end, r_event, r_value


def _make_mem(k: _Consts, put):
    """The element accesses ``A[i0, ...]`` of an array with 1 to 4 dimensions, and the negative-index
    :func:`wrap` they share: (wrap, r_mem1, r_mem1_lane_linear, r_mem2, r_mem3, r_mem4)."""
    jit = k.jit

    @jit
    def wrap(i, n):
        return i + n if i < 0 else i

    @jit
    def r_mem1(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, A, i0):
        if code & 255:
            flat = wrap(i0, A.shape[0])
            put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, flat, True, False, False, False)
        return i0

    @jit
    def r_mem1_lane_linear(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code,
                           A, i0):
        """``A[i0]`` with i0 the thread's global index in a 1-D block (GpuRewriter.lane_linear_names)."""
        if code & 255:
            put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, i0, True, False,
                False, True)
        return i0

    @jit
    def r_mem2(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, A, i0, i1):
        if code & 255:
            flat = wrap(i0, A.shape[0]) * A.shape[1] + wrap(i1, A.shape[1])
            put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, flat, True, False, False, False)
        return (i0, i1)

    @jit
    def r_mem3(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, A, i0, i1, i2):
        if code & 255:
            flat = (wrap(i0, A.shape[0]) * A.shape[1] + wrap(i1, A.shape[1])) * A.shape[2] + wrap(i2, A.shape[2])
            put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, flat, True, False, False, False)
        return (i0, i1, i2)

    @jit
    def r_mem4(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, A, i0, i1, i2, i3):
        if code & 255:
            flat = ((wrap(i0, A.shape[0]) * A.shape[1] + wrap(i1, A.shape[1])) * A.shape[2]
                    + wrap(i2, A.shape[2])) * A.shape[3] + wrap(i3, A.shape[3])
            put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, flat, True, False, False, False)
        return (i0, i1, i2, i3)

    return wrap, r_mem1, r_mem1_lane_linear, r_mem2, r_mem3, r_mem4


def _make_views(k: _Consts, wrap, put):
    """The element accesses of a view with 1 to 4 dimensions, and :func:`slice_first` as a device function:
    (slice_start, r_view1, r_view2, r_view3, r_view4)."""
    jit = k.jit

    slice_start = jit(slice_first)

    @jit
    def r_view1(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, V, off,
                isz, i0):
        """``V[i0]`` of a view ``V`` whose first element lies ``off`` bytes into its array (items of ``isz`` bytes)."""
        if code & 255:
            flat = (off + wrap(i0, V.shape[0]) * V.strides[0]) // isz
            put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, flat, True, False, False, False)
        return i0

    @jit
    def r_view2(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, V, off,
                isz, i0, i1):
        if code & 255:
            flat = (off + wrap(i0, V.shape[0]) * V.strides[0] + wrap(i1, V.shape[1]) * V.strides[1]) // isz
            put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, flat, True, False, False, False)
        return (i0, i1)

    @jit
    def r_view3(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, V, off,
                isz, i0, i1, i2):
        if code & 255:
            flat = (off + wrap(i0, V.shape[0]) * V.strides[0] + wrap(i1, V.shape[1]) * V.strides[1]
                    + wrap(i2, V.shape[2]) * V.strides[2]) // isz
            put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, flat, True, False, False, False)
        return (i0, i1, i2)

    @jit
    def r_view4(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, V, off,
                isz, i0, i1, i2, i3):
        if code & 255:
            flat = (off + wrap(i0, V.shape[0]) * V.strides[0] + wrap(i1, V.shape[1]) * V.strides[1]
                    + wrap(i2, V.shape[2]) * V.strides[2] + wrap(i3, V.shape[3]) * V.strides[3]) // isz
            put(s, code_a, idx_a, stride_a, mask_a, slab_a, time_a, sm_a, slot_a, off_a, cap_a, cnt_a, drop_a, code, flat, True, False, False, False)
        return (i0, i1, i2, i3)

    return slice_start, r_view1, r_view2, r_view3, r_view4
