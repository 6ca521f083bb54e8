"""Monte Carlo pi with numba.cuda.random: each thread throws darts at the unit square with its own xoroshiro128p
generator and counts those inside the quarter circle.

    python examples/monte_carlo_pi.py [THREADS_PER_BLOCK BLOCKS ITERATIONS]   (NUMBA_ENABLE_CUDASIM=1 without a GPU)
    gpuviz run examples/monte_carlo_pi.py                               every launch captured -> monte_carlo_pi.gpuviz

The generators' states are an array of aligned records (two uint64 fields, s0 and s1): each thread reads and
writes its own record on every draw. With the same seed the estimate is the same under gpuviz as without it.
"""

import sys

import numpy as np
from numba import cuda
from numba.cuda.random import create_xoroshiro128p_states, xoroshiro128p_uniform_float32


@cuda.jit
def compute_pi(rng_states, iterations, out):
    thread_id = cuda.grid(1)
    inside = 0
    for _ in range(iterations):
        x = xoroshiro128p_uniform_float32(rng_states, thread_id)
        y = xoroshiro128p_uniform_float32(rng_states, thread_id)
        if x * x + y * y <= 1.0:
            inside += 1
    out[thread_id] = 4.0 * inside / iterations


def main(threads_per_block: int = 32, blocks: int = 2, iterations: int = 20, seed: int = 1) -> float:
    rng_states = create_xoroshiro128p_states(threads_per_block * blocks, seed=seed)
    out = np.zeros(threads_per_block * blocks, dtype=np.float32)
    compute_pi[blocks, threads_per_block](rng_states, iterations, out)
    estimate = float(out.mean())
    print(f"pi is about {estimate!r} ({threads_per_block * blocks} threads x {iterations} darts, seed {seed})")
    return estimate


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:4]))
