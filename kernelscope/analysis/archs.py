"""Per-compute-capability limits that the CUDA occupancy calculator needs.

Kineto's ``deviceProperties`` carry some of these (threads, registers and shared memory per SM,
the opt-in per-block maximum), but not the resident-block cap, the 1 KB the driver reserves per
block, the allocation units or the shared-memory carveout steps, so those live here.

Sources: the CUDA C++ Programming Guide's "Technical Specifications per Compute Capability",
the architecture tuning guides (Volta .. Blackwell) and the calculator in ``cuda_occupancy.h``.
The 9.0 row is checked against an H200 (``tests/data/occupancy_h200_device.json``).
"""
from __future__ import annotations

from dataclasses import dataclass

KB = 1024


@dataclass(frozen=True)
class Arch:
    """Limits of one compute capability (per SM unless named otherwise)."""

    name: str
    max_warps_per_sm: int
    max_blocks_per_sm: int
    smem_per_sm: int                 # largest shared-memory carveout, bytes
    smem_per_block_optin: int        # largest dynamic+static shared memory one block may opt into
    carveouts_kb: tuple              # supported shared-memory carveouts (KB), ascending
    smem_reserved_per_block: int     # bytes the driver keeps per block (8.0+: 1 KB)
    smem_alloc_unit: int             # shared memory is allocated per block in these steps
    regs_per_sm: int = 64 * KB
    regs_per_block: int = 64 * KB
    max_regs_per_thread: int = 255
    reg_alloc_unit: int = 256        # registers are allocated per warp in these steps
    sub_partitions: int = 4          # registers are split evenly over the SM's 4 schedulers
    max_threads_per_block: int = 1024
    smem_per_block_default: int = 48 * KB
    warp_size: int = 32
    barrier_factor: int = 0          # 9.0+: barriers per SM = factor x max blocks; 0: not modelled


_VOLTA_CARVE = (0, 8, 16, 32, 64, 96)
_A100_CARVE = (0, 8, 16, 32, 64, 100, 132, 164)
_GA10X_CARVE = (0, 8, 16, 32, 64, 100)
_HOPPER_CARVE = (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)

ARCHS: dict = {
    (7, 0): Arch("Volta", 64, 32, 96 * KB, 96 * KB, _VOLTA_CARVE, 0, 256),
    (7, 2): Arch("Volta (Xavier)", 64, 32, 96 * KB, 96 * KB, _VOLTA_CARVE, 0, 256),
    (7, 5): Arch("Turing", 32, 16, 64 * KB, 64 * KB, (32, 64), 0, 256),
    (8, 0): Arch("Ampere (A100)", 64, 32, 164 * KB, 163 * KB, _A100_CARVE, KB, 128),
    (8, 6): Arch("Ampere (GA10x)", 48, 16, 100 * KB, 99 * KB, _GA10X_CARVE, KB, 128),
    (8, 7): Arch("Ampere (Orin)", 48, 16, 164 * KB, 163 * KB, _A100_CARVE, KB, 128),
    (8, 9): Arch("Ada", 48, 24, 100 * KB, 99 * KB, _GA10X_CARVE, KB, 128),
    (9, 0): Arch("Hopper", 64, 32, 228 * KB, 227 * KB, _HOPPER_CARVE, KB, 128, barrier_factor=2),
    (10, 0): Arch("Blackwell (B200)", 64, 32, 228 * KB, 227 * KB, _HOPPER_CARVE, KB, 128, barrier_factor=2),
    (10, 3): Arch("Blackwell (B300)", 64, 32, 228 * KB, 227 * KB, _HOPPER_CARVE, KB, 128, barrier_factor=2),
    # Thor: cuda_occupancy.h (CUDA 13.0) gives 24 blocks and one barrier per block slot; the
    # warps per SM are not in the header: 48 is assumed, a recorded trace's
    # maxThreadsPerMultiprocessor takes precedence.
    (11, 0): Arch("Blackwell (Thor)", 48, 24, 228 * KB, 227 * KB, _HOPPER_CARVE, KB, 128, barrier_factor=1),
    # 12.x: cuda_occupancy.h says 24 resident blocks (the Blackwell tuning guide says 32);
    # the calculator's 24 is what cudaOccupancy* and Nsight Compute use.
    (12, 0): Arch("Blackwell (RTX 50)", 48, 24, 100 * KB, 99 * KB, _GA10X_CARVE, KB, 128, barrier_factor=1),
    (12, 1): Arch("Blackwell (GB10)", 48, 24, 100 * KB, 99 * KB, _GA10X_CARVE, KB, 128, barrier_factor=1),
}
# CUDA 12.x named Thor 10.1; CUDA 13 renamed it 11.0.
ARCHS[(10, 1)] = ARCHS[(11, 0)]


def supported() -> str:
    """The supported compute capabilities as text, e.g. ``"7.0, 7.2, ..., 12.1"``.

    >>> supported().startswith("7.0, 7.2, 7.5")
    True
    """
    return ", ".join(f"{a}.{b}" for a, b in sorted(ARCHS))


def parse_cc(compute_capability) -> tuple:
    """``(9, 0)``, ``"9.0"``, ``9.0``, ``90`` or ``"sm_90a"`` -> ``(9, 0)``.

    >>> parse_cc("sm_90a"), parse_cc(8.6), parse_cc("12.0")
    ((9, 0), (8, 6), (12, 0))
    """
    cc = compute_capability
    if isinstance(cc, (tuple, list)) and len(cc) == 2:
        return int(cc[0]), int(cc[1])
    if isinstance(cc, str):
        s = cc.strip().lower().removeprefix("sm_").removeprefix("compute_").rstrip("af")
        if "." in s:
            major, minor = s.split(".", 1)
            return int(major), int(minor)
        if s.isdigit():
            return int(s[:-1]), int(s[-1])
    if isinstance(cc, float):
        return int(cc), int(round((cc - int(cc)) * 10))
    if isinstance(cc, int) and cc >= 10:
        return cc // 10, cc % 10
    raise ValueError(f"cannot read compute capability {compute_capability!r}; "
                     f"give (major, minor), e.g. (9, 0); supported: {supported()}")


def arch(compute_capability) -> Arch:
    """The limits of one compute capability; ``ValueError`` naming the supported ones.

    >>> arch((9, 0)).max_blocks_per_sm
    32
    """
    cc = parse_cc(compute_capability)
    try:
        return ARCHS[cc]
    except KeyError:
        raise ValueError(f"compute capability {cc[0]}.{cc[1]} is not supported by the occupancy "
                         f"calculator; supported: {supported()}") from None
