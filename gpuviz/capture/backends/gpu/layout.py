"""The GPU recorder's buffers and state, as the device writes them and the host reads them back: site kinds,
the trace buffers and their columns, the recording kernel's scalar parameters, the per-thread recording state."""

from __future__ import annotations

from ..rewrite import PREFIX

# site kinds: what a recorder call records; the host turns LD/ST into global or shared by the array's space
SITE_START, SITE_END, SITE_LD, SITE_ST, SITE_AT, SITE_BAR, SITE_WARP = range(7)
SITE_KIND_NAMES = ("start", "end", "load", "store", "atomic", "barrier", "warp")
#: site kinds whose events carry a timestamp and SM id in the default ``timestamps="sync"``
TIMED_SITE_KINDS = (SITE_START, SITE_END, SITE_BAR, SITE_WARP)

#: the trace buffers, extra parameters of the recording kernels, in this order
BUFFERS = (
    "code",  # int32[n_events]: site << 8 | (array id + 1); per-warp mode: [n_diverged_records], the number of
    #          converged records of the warp before each diverged record (their order)
    "idx",  # int32 or int64 [n_events]: flat element index (memory events); per-warp mode: [n_records * 4]
    #         rows of (code, active mask, base index, stride or SLAB_MARK)
    "stride",  # 1 element: kept in the signature (per-warp strides are in idx)
    "mask",  # 1 element: kept in the signature (per-warp masks are in idx)
    "slab",  # like idx, [n_rows * 32] (per-warp mode only): each lane's index where they are irregular
    "time",  # int64[n_timed]: %globaltimer of each timed event
    "sm",  # int16[n_timed]: %smid of each timed event
    "slot",  # int64[n_blocks]: ordinal of each recorded block, -1 for a block that is not recorded
    "off",  # int64[n_slots, 5]: where each slot's first event, timed event, slab row, diverged row (per-warp
    #         mode) and diverged order entry (``code``, per-warp mode) go (table layout)
    "cap",  # int32[n_slots, 5]: how many each slot may write (its warp's largest count; uniform layout: row 0)
    "cnt",  # int32[n_slots, 4]: how many each slot produced (count pass) or wrote (record pass): events
    #         (per-warp mode: converged records), timed events, slab rows, diverged records (per-warp mode);
    #         the per-thread record pass writes what it produced, fitted or not, in the last two columns
    "drop",  # int64[4]: events, timed events, slab rows that found their slot full; per-warp mode: lane events
    #          run while diverged from lane 0 (not recorded). Reported, never silent
)
#: columns of ``off`` and ``cap`` (the count columns of ``cnt``, then the diverged order entries)
OFF_COLUMNS = 5
CNT_COLUMNS = 4
BUF_NAMES = tuple(PREFIX + "b_" + b for b in BUFFERS)
#: scalar parameters of the recording kernel itself (not of its device functions), after the buffers: the
#: recorded blocks as a range (first, end, step of linear block ids; used when ``blocks="range"``) and the
#: uniform layout's per-warp capacities (events, timed events, slab rows, diverged records). Scalars live in the kernel's
#: parameter bank, so the test "is this block recorded" and the first positions need no memory load at
#: entry: the user's first loads are not queued behind one.
PARAMS = ("first", "end", "step", "cap0", "cap1", "cap2", "cap3")
PARAM_NAMES = tuple(PREFIX + "p_" + p for p in PARAMS)
#: how the device tells recorded blocks: every block, a range in scalar parameters, or the ``slot`` table
BLOCK_SETS = ("all", "range", "table")
STATE = PREFIX + "s"
# pos, end, timed pos, timed end, on, slot, start, timed start, slab pos, slab end, slab start, lane,
# events this lane ran while diverged from lane 0 (per-warp mode: not recorded, reported in drop[3]),
# and in per-warp mode: the staged record (code, -1: none; base; first record of the stage; stride), the
# diverged records so far, their capacity, their first row and their first ``code`` entry. Per-warp mode
# counts converged records (pos) from 0 in every lane; end is their capacity, start their first row. Per-thread
# mode keeps in 13 and 14 the events and timestamps that found the slot full (pos stops at end).
STATE_LEN = 21
MAX_INDEX_DIMS = 4
#: ``stride`` of a per-warp record whose lanes' indices are in ``slab`` (no arithmetic progression)
SLAB_MARK = -(2**31)

MODES = ("thread", "warp")
RECORDS = ("all", "global")
