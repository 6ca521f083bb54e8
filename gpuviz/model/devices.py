"""Per-device limits and the occupancy calculation (how many blocks of a kernel fit on one SM).

Numbers are from NVIDIA's CUDA C++ Programming Guide, "Compute Capabilities" (table "Technical
Specifications per Compute Capability": threads/blocks/registers/shared memory per SM, per block and per
thread), the architecture tuning guides (Hopper, Ampere, Ada, Turing: shared memory capacity per SM and the
1 KB the driver reserves per block since sm_80), and the allocation rules of the CUDA occupancy calculator
(``cuda_occupancy.h`` shipped with the CUDA toolkit: registers allocated per warp in units of 256, spread over
4 SM sub-partitions; shared memory allocated in units of 128 bytes on sm_8x/sm_9x and 256 bytes on sm_7x).
SM counts are those of the named product (H100 SXM5, H200 SXM, A100 SXM4, RTX 4090, Tesla T4).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class DeviceLimits:
    name: str
    compute_capability: str
    sms: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    max_threads_per_block: int = 1024
    warp_size: int = 32
    registers_per_sm: int = 65536
    registers_per_block: int = 65536
    max_registers_per_thread: int = 255
    register_allocation_unit: int = 256  # registers per warp are rounded up to a multiple of this
    sub_partitions: int = 4  # each SM's register file is split over this many schedulers
    shared_per_sm: int = 0  # bytes, at the largest shared-memory carveout
    shared_per_block: int = 48 * 1024  # static limit without opt-in
    shared_per_block_optin: int = 48 * 1024  # with cudaFuncAttributeMaxDynamicSharedMemorySize
    shared_reserved_per_block: int = 0  # bytes the driver keeps per block (sm_80 and later: 1 KB)
    shared_allocation_unit: int = 256

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size

    def to_json(self) -> dict:
        return asdict(self)


_KB = 1024

DEVICES: dict[str, DeviceLimits] = {
    # sm_90: 2048 threads / 64 warps / 32 blocks per SM, 64K registers, 228 KB shared per SM (227 KB per block)
    "H200": DeviceLimits("NVIDIA H200", "9.0", 132, 2048, 32, shared_per_sm=228 * _KB,
                         shared_per_block_optin=227 * _KB, shared_reserved_per_block=1 * _KB, shared_allocation_unit=128),
    "H100": DeviceLimits("NVIDIA H100", "9.0", 132, 2048, 32, shared_per_sm=228 * _KB,
                         shared_per_block_optin=227 * _KB, shared_reserved_per_block=1 * _KB, shared_allocation_unit=128),
    # sm_80: 2048 threads / 32 blocks per SM, 164 KB shared per SM (163 KB per block)
    "A100": DeviceLimits("NVIDIA A100", "8.0", 108, 2048, 32, shared_per_sm=164 * _KB,
                         shared_per_block_optin=163 * _KB, shared_reserved_per_block=1 * _KB, shared_allocation_unit=128),
    # sm_89: 1536 threads / 48 warps / 24 blocks per SM, 100 KB shared per SM (99 KB per block)
    "RTX 4090": DeviceLimits("NVIDIA GeForce RTX 4090", "8.9", 128, 1536, 24, shared_per_sm=100 * _KB,
                             shared_per_block_optin=99 * _KB, shared_reserved_per_block=1 * _KB, shared_allocation_unit=128),
    # sm_75: 1024 threads / 32 warps / 16 blocks per SM, 64 KB shared per SM and per block, no reserve
    "T4": DeviceLimits("NVIDIA Tesla T4", "7.5", 40, 1024, 16, shared_per_sm=64 * _KB,
                       shared_per_block_optin=64 * _KB, shared_reserved_per_block=0, shared_allocation_unit=256),
    # A round teaching model, not a real chip: the sm_8x/sm_9x rules with 64 KB of shared memory per SM.
    "generic": DeviceLimits("generic GPU (teaching model)", "8.0", 80, 2048, 32, shared_per_sm=64 * _KB,
                            shared_per_block_optin=64 * _KB, shared_reserved_per_block=0, shared_allocation_unit=128),
}

_ALIASES = {"sm_90": "H200", "sm_80": "A100", "sm_89": "RTX 4090", "sm_75": "T4", "4090": "RTX 4090"}


def get_device(device) -> DeviceLimits:
    """A :class:`DeviceLimits` from a name (``"H200"``, ``"a100"``, ``"sm_90"``, ``"NVIDIA H200"``) or itself."""
    if isinstance(device, DeviceLimits):
        return device
    text = str(device).strip()
    key = text.lower().removeprefix("nvidia").strip().removeprefix("geforce").strip().removeprefix("tesla").strip()
    for name in DEVICES:
        if key == name.lower():
            return DEVICES[name]
    for alias, name in _ALIASES.items():
        if key == alias:
            return DEVICES[name]
    for name in DEVICES:  # e.g. "NVIDIA H200 NVL", "A100-SXM4-80GB"
        if name != "generic" and name.lower() in key:
            return DEVICES[name]
    raise KeyError(f"unknown device {text!r}; known: {', '.join(DEVICES)} (or sm_90, sm_89, sm_80, sm_75)")


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


_LIMIT_ORDER = ("threads", "blocks", "registers", "shared_memory")


def occupancy(block_threads: int, registers_per_thread: int, shared_bytes_per_block: int, device="H200") -> dict:
    """Resident blocks and warps per SM and which limit binds, as NVIDIA's occupancy calculator computes them.

    ``limits`` gives the blocks per SM each resource alone would allow; ``limited_by`` names the one that
    binds (ties: threads, then blocks, registers, shared memory), ``binding`` lists every tied one.
    """
    dev = get_device(device)
    block_threads, regs, smem = int(block_threads), int(registers_per_thread), int(shared_bytes_per_block)
    if block_threads < 1:
        raise ValueError(f"occupancy: block_threads must be positive, got {block_threads}")
    if regs < 0 or smem < 0:
        raise ValueError(f"occupancy: registers ({regs}) and shared bytes ({smem}) cannot be negative")
    warps_per_block = -(-block_threads // dev.warp_size)

    # threads (warp slots): a block occupies whole warps
    if block_threads > dev.max_threads_per_block:
        by_threads = 0
    else:
        by_threads = dev.max_warps_per_sm // warps_per_block

    # registers: per warp, rounded to the allocation unit, fitted into each of the sub-partitions
    regs_per_warp = _round_up(regs * dev.warp_size, dev.register_allocation_unit)
    regs_per_block = regs_per_warp * warps_per_block
    regs_assumed = regs_per_warp * _round_up(warps_per_block, dev.sub_partitions)  # the hardware's launch check
    if regs > dev.max_registers_per_thread or regs_per_block > dev.registers_per_block or regs_assumed > dev.registers_per_block:
        by_registers = 0
    elif regs_per_warp == 0:
        by_registers = dev.max_blocks_per_sm
    else:
        warps_per_partition = (dev.registers_per_sm // dev.sub_partitions) // regs_per_warp
        by_registers = (warps_per_partition * dev.sub_partitions) // warps_per_block

    # shared memory: the block's bytes plus the driver's reserve, rounded to the allocation unit
    smem_alloc = _round_up(smem + dev.shared_reserved_per_block, dev.shared_allocation_unit)
    if smem_alloc > dev.shared_per_block_optin + dev.shared_reserved_per_block:
        by_shared = 0
    elif smem_alloc == 0:
        by_shared = dev.max_blocks_per_sm
    else:
        by_shared = dev.shared_per_sm // smem_alloc

    limits = {"threads": by_threads, "blocks": dev.max_blocks_per_sm, "registers": by_registers, "shared_memory": by_shared}
    blocks = min(limits.values())
    binding = [name for name in _LIMIT_ORDER if limits[name] == blocks]
    warps = blocks * warps_per_block
    return {
        "device": dev.name,
        "compute_capability": dev.compute_capability,
        "block_threads": block_threads,
        "warps_per_block": warps_per_block,
        "registers_per_thread": regs,
        "shared_bytes_per_block": smem,
        "blocks_per_sm": blocks,
        "warps_per_sm": warps,
        "threads_per_sm": blocks * block_threads,
        "max_warps_per_sm": dev.max_warps_per_sm,
        "occupancy": warps / dev.max_warps_per_sm,
        "limits": limits,
        "limited_by": binding[0],
        "binding": binding,
        "registers_allocated_per_block": regs_per_block,
        "shared_allocated_per_block": smem_alloc,
        "fits": blocks > 0,
    }
