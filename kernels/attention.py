"""Self-attention O = softmax(Q K^T / sqrt(d)) V: a naive kernel that writes the score matrix to global
memory, and a fused FlashAttention-style kernel that never does."""

import math

import numba
import numpy as np
from numba import cuda

from . import KernelSpec
from ._launch import launch_1d

HEAD_DIM = 16  # d: the length of each query, key and value row
BLOCK_Q = 32  # queries per block (one thread each) in the default launch
TILE_K = 32  # fused kernel: keys (and values) per shared-memory tile


@cuda.jit
def attention_naive(Q, K, V, S, O, seq_len):
    i = cuda.grid(1)  # this thread's query row
    if i >= seq_len:
        return
    scale = 1.0 / math.sqrt(HEAD_DIM)

    # 1. scores of query i against every key, written to global memory
    for j in range(seq_len):
        dot = 0.0
        for c in range(HEAD_DIM):
            dot += Q[i, c] * K[j, c]
        S[i, j] = dot * scale

    # 2. read the row back for its maximum (subtracting it keeps exp() from overflowing)
    row_max = S[i, 0]
    for j in range(1, seq_len):
        row_max = max(row_max, S[i, j])

    # 3. read it again: exponentiate, store, and sum
    total = 0.0
    for j in range(seq_len):
        e = math.exp(S[i, j] - row_max)
        S[i, j] = e
        total += e

    # 4. and once more: the output row is the softmax-weighted average of the value rows
    for c in range(HEAD_DIM):
        acc = 0.0
        for j in range(seq_len):
            acc += S[i, j] * V[j, c]
        O[i, c] = acc / total


@cuda.jit(device=True)
def load_tile(src, tile, first_row, n_rows):
    """The block copies rows first_row .. first_row + len(tile) - 1 of src into a shared tile, threads
    taking every blockDim-th element; rows past the end of src become zeros."""
    for e in range(cuda.threadIdx.x, tile.shape[0] * HEAD_DIM, cuda.blockDim.x):
        r = e // HEAD_DIM
        c = e % HEAD_DIM
        if first_row + r < n_rows:
            tile[r, c] = src[first_row + r, c]
        else:
            tile[r, c] = 0.0


@cuda.jit
def attention_fused(Q, K, V, O, seq_len):
    k_tile = cuda.shared.array(shape=(TILE_K, HEAD_DIM), dtype=numba.float32)
    v_tile = cuda.shared.array(shape=(TILE_K, HEAD_DIM), dtype=numba.float32)
    q = cuda.local.array(shape=HEAD_DIM, dtype=numba.float32)  # this thread's query row, in registers
    acc = cuda.local.array(shape=HEAD_DIM, dtype=numba.float32)  # its output row, not yet divided by the sum
    scores = cuda.local.array(shape=TILE_K, dtype=numba.float32)  # its scores against the current tile
    i = cuda.grid(1)  # this thread's query row: a block takes blockDim.x queries
    scale = 1.0 / math.sqrt(HEAD_DIM)

    for c in range(HEAD_DIM):
        if i < seq_len:
            q[c] = Q[i, c]
        else:
            q[c] = 0.0  # a thread past the end still helps load the tiles, with a harmless zero query
        acc[c] = 0.0
    running_max = -math.inf
    running_sum = 0.0

    for k_first in range(0, seq_len, TILE_K):
        load_tile(K, k_tile, k_first, seq_len)
        load_tile(V, v_tile, k_first, seq_len)
        cuda.syncthreads()  # the tiles are complete

        # scores of this query against the tile's keys, kept in registers, never in global memory
        tile_max = -math.inf
        for j in range(TILE_K):
            s = -math.inf  # a key past the end gets weight exp(-inf) = 0
            if k_first + j < seq_len:
                dot = 0.0
                for c in range(HEAD_DIM):
                    dot += q[c] * k_tile[j, c]
                s = dot * scale
            scores[j] = s
            tile_max = max(tile_max, s)

        # online softmax: if the maximum grew, shrink what was summed so far by exp(old max - new max)
        new_max = max(running_max, tile_max)
        correction = math.exp(running_max - new_max)
        running_sum *= correction
        for c in range(HEAD_DIM):
            acc[c] *= correction
        for j in range(TILE_K):
            p = math.exp(scores[j] - new_max)
            running_sum += p
            for c in range(HEAD_DIM):
                acc[c] += p * v_tile[j, c]
        running_max = new_max
        cuda.syncthreads()  # everyone is done with the tiles before the next ones overwrite them

    if i < seq_len:
        for c in range(HEAD_DIM):
            O[i, c] = acc[c] / running_sum


def _inputs(size, rng):
    Q = rng.standard_normal((size, HEAD_DIM)).astype(np.float32)
    K = rng.standard_normal((size, HEAD_DIM)).astype(np.float32)
    V = rng.random((size, HEAD_DIM), dtype=np.float32)  # positive values: outputs are averages, far from 0
    O = np.zeros((size, HEAD_DIM), dtype=np.float32)
    return Q, K, V, O


def make_args_naive(size, rng):
    Q, K, V, O = _inputs(size, rng)
    S = np.zeros((size, size), dtype=np.float32)
    return [Q, K, V, S, O, size]


def make_args_fused(size, rng):
    Q, K, V, O = _inputs(size, rng)
    return [Q, K, V, O, size]


def _softmax_parts(Q, K, V):
    """(exp(scores - row max), softmax(scores) @ V) in float64."""
    scores = Q.astype(np.float64) @ K.astype(np.float64).T / math.sqrt(HEAD_DIM)
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    out = (weights @ V.astype(np.float64)) / weights.sum(axis=1, keepdims=True)
    return weights, out


def reference_naive(args):
    Q, K, V, _, _, _ = args
    weights, out = _softmax_parts(Q, K, V)
    return {3: weights.astype(np.float32), 4: out.astype(np.float32)}


def reference_fused(args):
    Q, K, V, _, _ = args
    _, out = _softmax_parts(Q, K, V)
    return {3: out.astype(np.float32)}


SPECS = [
    KernelSpec(
        name="attention_naive",
        kernel=attention_naive,
        description="attention with one thread per query, storing the whole score matrix in global memory",
        note=(
            "The formula written out literally: each thread scores its query against every key, stores the "
            "scores in a seq_len x seq_len matrix in global memory, then reads that row back three times (max, "
            "exponentials and sum, weighted sum of V). The score matrix grows with the square of the sequence "
            "length and all of it travels to memory and back: look at how the global traffic dwarfs the inputs. "
            "This memory traffic, not the arithmetic, is what limits attention on long sequences."
        ),
        default_size=64,
        small_size=40,
        default_block=(32,),
        make_args=make_args_naive,
        launch=lambda size, block: launch_1d(size, block, "attention_naive"),
        reference=reference_naive,
        rtol=1e-4,
        group="attention",
        rank=0,
        size_label="sequence length",
    ),
    KernelSpec(
        name="attention_fused",
        kernel=attention_fused,
        description="FlashAttention-style attention: K/V tiles in shared memory, online softmax, no score matrix",
        note=(
            "FlashAttention's idea in miniature: a block takes a tile of queries, walks over K and V a tile at a "
            "time through shared memory, and keeps per query a running maximum, running sum and running output. "
            "When a new tile raises the maximum, what was summed so far is scaled down by exp(old - new), so the "
            "softmax comes out exact without ever storing the scores. Compare the global-memory views: each K "
            "and V row is fetched once per block, and nothing but O is written."
        ),
        default_size=64,
        small_size=40,
        default_block=(BLOCK_Q,),
        make_args=make_args_fused,
        launch=lambda size, block: launch_1d(size, block, "attention_fused"),
        reference=reference_fused,
        rtol=1e-4,
        group="attention",
        rank=1,
        size_label="sequence length",
        tile=TILE_K,
    ),
]
