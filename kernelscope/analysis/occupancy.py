"""Theoretical occupancy, computed the way the CUDA occupancy calculator does.

``occupancy()`` mirrors ``cudaOccMaxActiveBlocksPerMultiprocessor`` (``cuda_occupancy.h``):
warps rounded up per block; registers allocated per warp in units of 256 within the SM's four
sub-partitions; shared memory allocated per block in 128 B units (256 B before 8.0) plus the
1 KB the driver reserves per block on 8.0+; the per-architecture warp and block caps; and the
shared-memory carveout rounded up to a step the architecture supports.

The carveout: with no preference the calculator gives each SM its largest carveout, and that is
our ``block_limit_shared_mem``. The driver, when it launches, picks a carveout by rules it does
not document; Nsight Compute's "Block Limit Shared Mem" is computed from that pick (its
"Shared Memory Configuration Size"). Pass that size as ``shared_mem_config_bytes`` to reproduce
Nsight Compute's figure exactly; ``driver_carveout_estimate()`` guesses it when it is unknown.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from kernelscope.analysis.archs import KB, Arch, arch, parse_cc

# What can limit the blocks per SM, in the order limiters are listed, with the short form the
# kernel table shows (the browser gets this table in the view's payload).
LIMITERS = {"registers": "regs", "shared_mem": "smem", "warps": "warps", "blocks": "blocks", "barriers": "barriers"}
UNLIMITED = 1 << 30          # "no limit" (the calculator's INT_MAX), kept an int


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _round_up(a: int, b: int) -> int:
    return _ceil_div(a, b) * b


@dataclass(frozen=True)
class Occupancy:
    """The result of :func:`occupancy`: one launch configuration on one architecture.

    ``block_limit_*`` is how many blocks per SM each resource alone allows; the smallest wins
    (``active_blocks_per_sm``) and every resource at that minimum is in ``limiters``.
    ``reason`` says why a launch is impossible (then ``occupancy`` is 0).

    >>> o = occupancy((9, 0), 256, 254, 67584)
    >>> o.occupancy, o.limiters, o.block_limit_registers
    (0.125, ('registers',), 1)
    """

    compute_capability: tuple
    threads_per_block: int
    registers_per_thread: int
    shared_mem_per_block: int
    warps_per_block: int
    active_blocks_per_sm: int
    active_warps_per_sm: int
    max_warps_per_sm: int
    occupancy: float
    limiters: tuple
    block_limit_registers: int
    block_limit_shared_mem: int
    block_limit_warps: int
    block_limit_blocks: int
    block_limit_barriers: int | None
    allocated_registers_per_block: int
    allocated_shared_mem_per_block: int
    shared_mem_config_bytes: int
    shared_mem_config_source: str       # "calculator" (largest carveout), "given", "preference"
    reason: str | None = None
    grid_blocks: int | None = None
    num_sms: int | None = None
    _arch: Arch | None = field(default=None, repr=False, compare=False)
    # The keyword inputs of occupancy() besides the launch (device, carveout, barriers), so that
    # next_steps can recompute the launch with one value changed.
    _options: dict | None = field(default=None, repr=False, compare=False)

    @property
    def limiter(self) -> str:
        """The limiters as one readable string, e.g. ``"registers+shared_mem"``; for an
        impossible launch, the resource that makes it impossible.

        >>> occupancy((9, 0), 384, 168, 213220).limiter
        'registers+shared_mem'
        """
        return "+".join(self.limiters)

    def waves(self, grid_blocks: int | None = None, num_sms: int | None = None) -> float:
        """Grid blocks / (active blocks per SM x SMs): how many full-GPU rounds the grid needs
        (Nsight Compute's "Waves Per SM"). NaN for an impossible launch.

        >>> occupancy((9, 0), 384, 168, 213220).waves(128, 132)
        0.9696969696969697
        """
        g = self.grid_blocks if grid_blocks is None else grid_blocks
        n = self.num_sms if num_sms is None else num_sms
        if g is None or n is None:
            raise ValueError("waves needs grid_blocks and num_sms (pass them here or to occupancy())")
        if self.active_blocks_per_sm <= 0 or n <= 0:
            return math.nan
        return g / (self.active_blocks_per_sm * n)

    def advice(self) -> tuple:
        """What would raise occupancy, per binding limiter, in words (the texts of
        :meth:`next_steps`; the report's details panel shows these).

        Occupancy rises only when every binding limiter is relieved; a step that gains nothing
        alone says so.

        >>> occupancy((9, 0), 256, 128, 0).advice()[0]
        'registers: 128/thread allow 2 blocks (16 warps) per SM; use <= 80 registers/thread for 3 blocks (37.5% occupancy)'
        """
        return tuple(s["text"] for s in self.next_steps())

    def next_steps(self) -> list:
        """Structured :meth:`advice`: one dict per binding limiter with ``limiter``,
        ``change`` (the value to reach: registers/thread, bytes/block or threads/block),
        ``target_blocks`` and ``target_occupancy`` (what the calculator gives with that change;
        with every binding limiter's change when they bind together), ``alone`` (whether this
        change alone raises occupancy) and ``text``.

        >>> [(s["change"], s["target_occupancy"]) for s in occupancy((9, 0), 128, 39, 24).next_steps()]
        [(32, 1.0)]
        """
        a = self._arch
        if a is None or self.reason is not None:
            return [] if self.reason is None else [{"limiter": self.limiter, "target_blocks": None,
                                                    "target_occupancy": None, "change": None,
                                                    "alone": None, "text": self.reason}]
        out = []
        b = self.active_blocks_per_sm + 1
        occ_next = min(b * self.warps_per_block, self.max_warps_per_sm) / self.max_warps_per_sm
        if self.active_warps_per_sm >= self.max_warps_per_sm:
            return []
        # The register and shared-memory changes, applied alone and together, through the
        # calculator: the occupancy they give is what the step promises.
        changes = {}
        if "registers" in self.limiters:
            changes["registers_per_thread"] = _max_regs_for_blocks(a, self.warps_per_block, b, a.regs_per_sm)
        if "shared_mem" in self.limiters:
            s = (self.shared_mem_config_bytes // b) // a.smem_alloc_unit * a.smem_alloc_unit
            changes["shared_mem_per_block"] = max(s - a.smem_reserved_per_block, 0)
        known = {k: v for k, v in changes.items() if v is not None}
        both = self._changed(**known) if len(known) == len(changes) else None
        for lim in self.limiters:
            step = {"limiter": lim, "target_blocks": b, "target_occupancy": occ_next, "alone": None}
            if lim in ("registers", "shared_mem"):
                key = "registers_per_thread" if lim == "registers" else "shared_mem_per_block"
                step["change"] = changes[key]
                result = self._changed(**{key: changes[key]}) if changes[key] is not None else None
                result, step["alone"] = _promise(self, result, both)
                if result is not None and result.occupancy <= self.occupancy + 1e-12:
                    # Advice only where it changes the outcome: 32 registers/thread at 96 threads
                    # already give 21 blocks, and 24 would give the same 21 (the warps bind).
                    continue
                if result is not None:
                    step["target_blocks"], step["target_occupancy"] = result.active_blocks_per_sm, result.occupancy
                gives = (f"for {step['target_blocks']} blocks ({step['target_occupancy'] * 100:.4g}% occupancy)"
                         + ("" if step["alone"] or len(known) < 2 else
                            f" together with the {' and '.join(x for x in self.limiters if x != lim)} step; "
                            "alone it gains nothing"))
            if lim == "registers":
                r = changes["registers_per_thread"]
                if r is None:
                    text = (f"registers: {self.registers_per_thread}/thread allow {self.block_limit_registers} "
                            f"block(s) per SM; no register count fits {b} blocks of {self.threads_per_block} threads")
                else:
                    text = (f"registers: {self.registers_per_thread}/thread allow {self.block_limit_registers} "
                            f"blocks ({self.block_limit_registers * self.warps_per_block} warps) per SM; "
                            f"use <= {r} registers/thread {gives}")
            elif lim == "shared_mem":
                s = changes["shared_mem_per_block"]
                text = (f"shared_mem: {self.shared_mem_per_block} B/block ({self.allocated_shared_mem_per_block} B "
                        f"allocated) allow {self.block_limit_shared_mem} blocks in a "
                        f"{self.shared_mem_config_bytes // KB} KB carveout; use <= {s} B/block {gives}")
            elif lim == "warps":
                t = (self.max_warps_per_sm // b) * a.warp_size
                step["change"] = t
                text = (f"warps: {self.warps_per_block} warps/block allow {self.block_limit_warps} blocks per SM; "
                        f"blocks of <= {t} threads fit {b} (occupancy only rises if they fill more warps)")
            elif lim == "blocks":
                t = _ceil_div(self.max_warps_per_sm, self.block_limit_blocks) * a.warp_size
                step["change"] = min(t, a.max_threads_per_block)
                text = (f"blocks: at most {self.block_limit_blocks} blocks per SM; blocks of >= "
                        f"{min(t, a.max_threads_per_block)} threads would fill the SM's "
                        f"{self.max_warps_per_sm} warps")
            else:
                step["change"] = None
                text = (f"barriers: the named barriers each block uses allow {self.block_limit_barriers} "
                        f"blocks per SM; use fewer named barriers")
            step["text"] = text
            out.append(step)
        return out

    def _changed(self, **launch) -> Occupancy | None:
        """This launch with some of threads_per_block/registers_per_thread/shared_mem_per_block
        changed, through the calculator (None if it cannot tell)."""
        args = {"threads_per_block": self.threads_per_block, "registers_per_thread": self.registers_per_thread,
                "shared_mem_per_block": self.shared_mem_per_block, **launch}
        try:
            return occupancy(self.compute_capability, **args, **(self._options or {}))
        except ValueError:
            return None


def _promise(o: Occupancy, alone, both):
    """(what a step gives, whether it gives it alone): its own result when that raises
    occupancy, else the result of every binding change together."""
    if alone is not None and alone.occupancy > o.occupancy + 1e-12:
        return alone, True
    return (both if both is not None else alone), False


def _regs_limit(a: Arch, warps_per_block: int, regs: int, regs_per_sm: int):
    """(block limit, allocated registers per block, reason) for the register file."""
    if regs > a.max_regs_per_thread:
        return 0, 0, f"{regs} registers/thread exceed the maximum of {a.max_regs_per_thread}"
    per_warp = _round_up(regs * a.warp_size, a.reg_alloc_unit)
    per_block = per_warp * warps_per_block
    # The launch check assumes every sub-partition gets the same warps (cuda_occupancy.h).
    assumed = per_warp * _round_up(warps_per_block, a.sub_partitions)
    if assumed > a.regs_per_block or per_block > a.regs_per_block:
        return 0, per_block, (f"{regs} registers x {warps_per_block * a.warp_size} threads need "
                              f"{max(assumed, per_block)} registers per block; the limit is {a.regs_per_block}")
    if per_warp == 0:
        return UNLIMITED, 0, None
    warps = (regs_per_sm // a.sub_partitions) // per_warp * a.sub_partitions
    return warps // warps_per_block, per_block, None


def _max_regs_for_blocks(a: Arch, warps_per_block: int, blocks: int, regs_per_sm: int):
    """Largest registers/thread that still allow ``blocks`` blocks per SM, or None."""
    for r in range(a.max_regs_per_thread, -1, -1):
        if r * a.warp_size % a.reg_alloc_unit and r != a.max_regs_per_thread:
            continue
        lim, _, why = _regs_limit(a, warps_per_block, r, regs_per_sm)
        if why is None and lim >= blocks:
            # report the largest count that allocates the same as r (allocation unit)
            while r + 1 <= a.max_regs_per_thread and _regs_limit(a, warps_per_block, r + 1, regs_per_sm)[0] >= blocks:
                r += 1
            return r
    return None


def _carveout_at_least(a: Arch, nbytes: int) -> int | None:
    """The smallest supported carveout (bytes) holding ``nbytes``, None if none does."""
    for kb in a.carveouts_kb:
        if kb * KB >= nbytes:
            return kb * KB
    return None


def _warps_limit(a: Arch, threads: int, warps: int, reasons: list) -> int:
    """The block limit of the SM's warps; a block of no threads or too many gives 0 and its
    reason (appended to ``reasons``)."""
    if threads == 0:
        reasons.append(("warps", "a block needs at least one thread"))
        return 0
    if threads > a.max_threads_per_block:
        reasons.append(("warps", f"a block of {threads} threads exceeds the maximum of "
                                 f"{a.max_threads_per_block} threads per block"))
        return 0
    return a.max_warps_per_sm // warps


def _smem_limit(a: Arch, smem: int, config_bytes, carveout_percent, reasons: list) -> tuple[int, int, int, str]:
    """(block limit, allocated bytes per block, the carveout, where the carveout came from) of
    shared memory: the carveout given (``config_bytes``), or the one the calculator picks for a
    carveout preference (``carveout_percent``), else the largest. A block over the opt-in
    maximum gives 0 and its reason (appended to ``reasons``)."""
    alloc = _round_up(smem + a.smem_reserved_per_block, a.smem_alloc_unit)
    limit_block = a.smem_per_block_optin + a.smem_reserved_per_block
    if alloc > limit_block:
        reasons.append(("shared_mem", f"{smem} B shared memory per block exceed the opt-in maximum of "
                                      f"{a.smem_per_block_optin} B"))
        return 0, alloc, a.smem_per_sm, "calculator"
    if config_bytes is not None:
        config, source = int(config_bytes), "given"
    else:
        if carveout_percent is None or carveout_percent < 0:
            pref = a.smem_per_sm
            source = "calculator"
        else:
            pref = _ceil_div(int(carveout_percent) * a.smem_per_sm, 100)
            source = "preference"
        config = _carveout_at_least(a, pref)
        if config is None:
            config = a.smem_per_sm
        if config < alloc:   # a preference too small for one block is overridden
            config = _carveout_at_least(a, alloc) or a.smem_per_sm
    return (config // alloc if alloc > 0 else UNLIMITED), alloc, config, source


def _barriers_limit(a: Arch, barriers_per_block) -> tuple[int | None, int]:
    """(block limit of the SM's block barriers, capped at the block limit, or None where the
    architecture has none to count; the same uncapped).

    Barriers (9.0+): the SM holds barrier_factor x max-blocks block barriers; a block uses
    __syncthreads' one plus each named barrier. Kineto does not record the count, so the
    calculator's default of 1 applies unless given (ncu's "Block Limit Barriers" caps at the
    block limit, and so do we)."""
    if not a.barrier_factor:
        return None, UNLIMITED
    lim_blocks = a.max_blocks_per_sm
    nb = 1 if barriers_per_block is None else _nonneg_int(barriers_per_block, "barriers_per_block")
    bar_uncapped = a.barrier_factor * lim_blocks // nb if nb else UNLIMITED
    return min(bar_uncapped, lim_blocks), bar_uncapped


def occupancy(compute_capability, threads_per_block, registers_per_thread, shared_mem_per_block=0, *,
              grid_blocks=None, num_sms=None, shared_mem_config_bytes=None, carveout_percent=None,
              barriers_per_block=None, device=None) -> Occupancy:
    """Theoretical occupancy of one launch, as the CUDA occupancy calculator computes it.

    ``threads_per_block`` is a count or an ``(x, y, z)`` block; ``shared_mem_per_block`` is
    static plus dynamic shared memory in bytes (what Kineto records). Optional:
    ``grid_blocks``/``num_sms`` (for :meth:`Occupancy.waves`), ``shared_mem_config_bytes``
    (the carveout the driver used, e.g. Nsight Compute's "Shared Memory Configuration Size"),
    ``carveout_percent`` (``cudaFuncAttributePreferredSharedMemoryCarveout``),
    ``barriers_per_block`` (named barriers a block uses) and ``device`` (a mapping of
    recorded device properties: ``max_threads_per_sm``, ``regs_per_sm``, ``smem_per_sm``,
    ``smem_per_block_optin``, ``max_threads_per_block``, ``regs_per_block``) which take
    precedence over the architecture table.

    Impossible launches give occupancy 0 and a ``reason``; an unknown compute capability
    raises ``ValueError`` naming the supported ones.

    >>> o = occupancy((9, 0), 256, 254, 67584, grid_blocks=1024, num_sms=132)
    >>> o.active_blocks_per_sm, o.occupancy, o.limiter, round(o.waves(), 2)
    (1, 0.125, 'registers', 7.76)
    """
    cc = parse_cc(compute_capability)
    a = with_device(arch(cc), device)
    threads = _threads(threads_per_block)
    regs = _nonneg_int(registers_per_thread, "registers_per_thread")
    smem = _nonneg_int(shared_mem_per_block, "shared_mem_per_block")
    warps = _ceil_div(threads, a.warp_size)
    max_warps = a.max_warps_per_sm
    reasons: list[tuple[str, str]] = []
    lim_warps = _warps_limit(a, threads, warps, reasons)
    lim_regs, regs_alloc, why = _regs_limit(a, max(warps, 1), regs, a.regs_per_sm)
    if why:
        reasons.append(("registers", why))
    lim_smem, alloc, config, source = _smem_limit(a, smem, shared_mem_config_bytes, carveout_percent, reasons)
    lim_blocks = a.max_blocks_per_sm
    lim_bar, bar_uncapped = _barriers_limit(a, barriers_per_block)
    limits = {"registers": lim_regs, "shared_mem": lim_smem, "warps": lim_warps, "blocks": lim_blocks}
    active = min(*limits.values(), bar_uncapped)
    if bar_uncapped <= active:
        limits["barriers"] = lim_bar
    if reasons:
        active = 0
        limiters = tuple(dict.fromkeys(r for r, _ in reasons))
        reason = "; ".join(t for _, t in reasons)
    else:
        limiters = tuple(k for k in LIMITERS if k in limits and limits[k] == active)
        reason = None
    active_warps = active * warps
    return Occupancy(
        compute_capability=cc, threads_per_block=threads, registers_per_thread=regs,
        shared_mem_per_block=smem, warps_per_block=warps, active_blocks_per_sm=active,
        active_warps_per_sm=active_warps, max_warps_per_sm=max_warps,
        occupancy=active_warps / max_warps, limiters=limiters,
        block_limit_registers=lim_regs, block_limit_shared_mem=lim_smem,
        block_limit_warps=lim_warps, block_limit_blocks=lim_blocks, block_limit_barriers=lim_bar,
        allocated_registers_per_block=regs_alloc, allocated_shared_mem_per_block=alloc,
        shared_mem_config_bytes=config, shared_mem_config_source=source, reason=reason,
        grid_blocks=None if grid_blocks is None else int(grid_blocks),
        num_sms=None if num_sms is None else int(num_sms), _arch=a,
        _options={"shared_mem_config_bytes": shared_mem_config_bytes, "carveout_percent": carveout_percent,
                  "barriers_per_block": barriers_per_block, "device": device},
    )


def driver_carveout_estimate(o: Occupancy) -> int:
    """An estimate of the shared-memory carveout (bytes) the driver picks for a launch.

    The driver's rule is not documented; Nsight Compute reports the carveout it saw as
    "Shared Memory Configuration Size". This fit to H200 recordings takes ``need`` = the
    active blocks (at the largest carveout) x the shared memory each allocates, and picks the
    smallest supported carveout of at least ``min(2 x need, max(need, 132 KB))``: the driver
    keeps the calculator's occupancy but leaves L1 room. It matches the driver for
    192 of 313 launches recorded on an H200 (counted in tests/test_occupancy.py); call the
    result an estimate.

    >>> driver_carveout_estimate(occupancy((9, 0), 128, 32, 2048)) // 1024   # H200 used 100 KB
    100
    """
    a = o._arch
    if a is None:
        raise ValueError("an Occupancy made by occupancy() is needed (it holds the architecture's carveouts)")
    need = o.active_blocks_per_sm * o.allocated_shared_mem_per_block
    want = min(2 * need, max(need, 132 * KB))
    c = _carveout_at_least(a, want)
    return a.smem_per_sm if c is None else c


def occupancy_curves(compute_capability, threads_per_block, registers_per_thread, shared_mem_per_block=0,
                     **kwargs) -> pd.DataFrame:
    """Occupancy as block size, registers per thread and shared memory per block vary, the
    others held (Nsight Compute's occupancy graphs). One row per point: ``vary`` (which
    input varies), ``value``, ``active_blocks_per_sm``, ``active_warps_per_sm``,
    ``occupancy``, ``limiter``, ``current`` (the launch's own value).

    >>> c = occupancy_curves((9, 0), 256, 64, 0)
    >>> float(c[c.vary == "registers_per_thread"].set_index("value").loc[128, "occupancy"])
    0.25
    """
    cc = parse_cc(compute_capability)
    a = with_device(arch(cc), kwargs.get("device"))
    threads = _threads(threads_per_block)
    rows = []
    axes = {
        "threads_per_block": range(a.warp_size, a.max_threads_per_block + 1, a.warp_size),
        "registers_per_thread": range(1, a.max_regs_per_thread + 1),
        "shared_mem_per_block": range(0, a.smem_per_block_optin + 1, 512),
    }
    base = {"threads_per_block": threads, "registers_per_thread": registers_per_thread,
            "shared_mem_per_block": shared_mem_per_block}
    kw = {k: v for k, v in kwargs.items() if k in ("shared_mem_config_bytes", "carveout_percent",
                                                   "barriers_per_block", "device")}
    for vary, values in axes.items():
        values = sorted(set(values) | {int(base[vary])})
        for v in values:
            args = dict(base, **{vary: v})
            o = occupancy(cc, args["threads_per_block"], args["registers_per_thread"],
                          args["shared_mem_per_block"], **kw)
            rows.append((vary, v, o.active_blocks_per_sm, o.active_warps_per_sm, o.occupancy, o.limiter,
                         v == int(base[vary])))
    return pd.DataFrame(rows, columns=["vary", "value", "active_blocks_per_sm", "active_warps_per_sm",
                                       "occupancy", "limiter", "current"])


_DEVICE_FIELDS = {"max_threads_per_sm": "max_warps_per_sm", "regs_per_sm": "regs_per_sm",
                  "smem_per_sm": "smem_per_sm", "smem_per_block_optin": "smem_per_block_optin",
                  "max_threads_per_block": "max_threads_per_block", "regs_per_block": "regs_per_block"}


def with_device(a: Arch, device) -> Arch:
    """The architecture row with recorded device properties taking precedence."""
    if not device:
        return a
    changes: dict = {}
    for key, attr in _DEVICE_FIELDS.items():
        v = device.get(key) if hasattr(device, "get") else None
        if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) or int(v) <= 0:
            continue
        v = int(v)
        changes[attr] = v // a.warp_size if key == "max_threads_per_sm" else v
    return replace(a, **changes) if changes else a


def _threads(t) -> int:
    if isinstance(t, (tuple, list)):
        n = 1
        for d in t:
            n *= _nonneg_int(d, "block dimension")
        return n
    return _nonneg_int(t, "threads_per_block")


def _nonneg_int(v, what) -> int:
    if isinstance(v, (bool, np.bool_)) or v is None:
        raise ValueError(f"{what} must be a non-negative integer, got {v!r}")
    try:
        i = int(v)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a non-negative integer, got {v!r}") from None
    if i != v or i < 0:
        raise ValueError(f"{what} must be a non-negative integer, got {v!r}")
    return i
