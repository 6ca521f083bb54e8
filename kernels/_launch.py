"""Launch-shape helpers shared by the kernel specs: blocks needed to cover a problem, and the check
that a kernel built around a fixed shared-memory tile is launched with the block that tile assumes."""

from __future__ import annotations


def blocks_needed(size: int, threads: int) -> int:
    """How many blocks of ``threads`` cover ``size`` items (the last block may stick out)."""
    if size < 1:
        raise ValueError(f"problem size must be at least 1, got {size}")
    if threads < 1:
        raise ValueError(f"a block needs at least 1 thread, got {threads}")
    return (size + threads - 1) // threads


def as_block(block, dims: int, kernel: str) -> tuple:
    """``block`` as a tuple of ``dims`` positive ints, or a ValueError naming the kernel."""
    if isinstance(block, int):
        block = (block,)
    block = tuple(int(b) for b in block)
    if len(block) != dims or any(b < 1 for b in block):
        raise ValueError(f"{kernel} takes a {dims}-d block of positive sizes, got {block!r}")
    return block


def require_block(block, required: tuple, kernel: str, why: str) -> tuple:
    """Refuse any block but ``required`` (a kernel whose shared tile or output size is fixed by it)."""
    block = as_block(block, len(required), kernel)
    if block != tuple(required):
        raise ValueError(f"{kernel} must be launched with block {tuple(required)} ({why}), got {block}")
    return block


def launch_1d(size: int, block, kernel: str, items_per_thread: int = 1) -> tuple[tuple, tuple]:
    block = as_block(block, 1, kernel)
    return (blocks_needed(size, block[0] * items_per_thread),), block


def launch_square(size: int, block, kernel: str) -> tuple[tuple, tuple]:
    """A 2-d grid over a ``size`` x ``size`` matrix or image: x walks columns, y walks rows."""
    block = as_block(block, 2, kernel)
    return (blocks_needed(size, block[0]), blocks_needed(size, block[1])), block
