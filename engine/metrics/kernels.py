"""Per-kernel statistics grouped by full demangled name.

Everything is computed in numpy from the integer columns fetched once for interval merging: count,
total, min, max, mean, the population standard deviation with the two-pass formula
std = sqrt(Σ(d − mean)² / n) (never E[d²] − E[d]², which loses precision and can go negative), and
the most frequent launch configuration, carried as three packed integer columns (see CONFIG_SQL).
Names come from the small kernel_names relation.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from engine.metrics.model import HardwareLimits, KernelStats
from engine.profile.relations import VALID, Relations

# The launch configuration packed into three integers per kernel row, so that it travels in the one
# fetch of the kernels relation instead of a grouped scan over nine columns (seconds on 1 M rows).
# Field widths cover every legal value: grid y and z < 2**31 (HIP work-item grids are 32-bit),
# block dimensions <= 1024 < 2**11, registers per thread <= 255 (CUDA) / 512 VGPRs (AMD) < 2**10,
# shared memory / LDS per block <= 227 KiB < 2**19. A row with any part unknown packs to -1.
CONFIG_SQL = {
    "cfg_grid_x": "grid_x",
    "cfg_grid_yz": "(grid_y << 32) | grid_z",
    "cfg_block": (
        "CASE WHEN block_x IS NULL OR block_y IS NULL OR block_z IS NULL OR registers_per_thread IS NULL "
        "THEN -1 ELSE (block_x << 51) | (block_y << 40) | (block_z << 29) | (registers_per_thread << 19) "
        "| (coalesce(static_shared_bytes, 0) + coalesce(dynamic_shared_bytes, 0)) END"),
}


def unpack_config(gx: int, gyz: int, blk: int) -> dict[str, Any]:
    """Inverse of CONFIG_SQL for one row."""
    grid = None if gx < 0 or gyz < 0 else [gx, gyz >> 32, gyz & 0xFFFFFFFF]
    if blk < 0:
        return {"grid": grid, "block": None, "regs": None, "shared": None}
    return {"grid": grid, "block": [(blk >> 51) & 0x7FF, (blk >> 40) & 0x7FF, (blk >> 29) & 0x7FF],
            "regs": (blk >> 19) & 0x3FF, "shared": blk & 0x7FFFF}


def kernel_stats(names: dict[int, tuple[str | None, str | None]], name_ids: np.ndarray, durations: np.ndarray,
                 devices_of_kernel: np.ndarray, configs: dict[str, np.ndarray],
                 hardware: dict[int, HardwareLimits]) -> list[KernelStats]:
    """Statistics for every kernel name, largest total time first."""
    if len(name_ids) == 0:
        return []
    uniq, idx = np.unique(name_ids, return_inverse=True)
    idx = idx.reshape(-1)
    counts = np.bincount(idx)
    order = np.argsort(idx, kind="stable")
    bounds = np.r_[0, np.cumsum(counts)[:-1]]
    sorted_d = durations[order]
    totals = np.add.reduceat(sorted_d, bounds)  # exact int64 sums
    mins = np.minimum.reduceat(sorted_d, bounds)
    maxs = np.maximum.reduceat(sorted_d, bounds)
    n = counts.astype(np.float64)
    mean = totals / n
    dev = durations.astype(np.float64) - mean[idx]
    std = np.sqrt(np.bincount(idx, weights=dev * dev) / n)

    kdevs: dict[int, set[int]] = defaultdict(set)
    for key in np.unique((idx.astype(np.int64) << 16) | (devices_of_kernel & 0xFFFF)).tolist():
        kdevs[key >> 16].add(key & 0xFFFF)
    modes = _modal_configs(idx, configs)
    total_gpu = int(durations.sum())
    out = []
    for i, nid in enumerate(uniq.tolist()):
        name, short = names.get(nid, (None, None))
        cfg, n_cfg = modes[i]
        devs = sorted(kdevs.get(i, set()))
        hw = hardware.get(devs[0]) if devs else None
        m = float(mean[i])
        total = int(totals[i])
        grid, block = cfg["grid"], cfg["block"]
        out.append(KernelStats(
            name=name or f"<name id {nid}>", short_name=short, devices=devs,
            count=int(counts[i]), total_ns=total, mean_ns=m, min_ns=int(mins[i]), max_ns=int(maxs[i]),
            std_ns=float(std[i]), cv=(float(std[i]) / m) if m > 0 else None,
            share_of_gpu_time_pct=(100.0 * total / total_gpu) if total_gpu else None,
            grid=grid, block=block, launch_configs=n_cfg,
            registers_per_thread=cfg["regs"], shared_bytes=cfg["shared"],
            wave_fill_ratio=wave_fill(grid, block, hw) if grid and block and hw else None))
    out.sort(key=lambda k: (-k.total_ns, k.name))
    return out


def _modal_configs(idx: np.ndarray, configs: dict[str, np.ndarray]) -> list[tuple[dict[str, Any], int]]:
    """Per kernel index: the most frequent configuration and the number of distinct configurations.

    Ties between equally frequent configurations go to the smallest packed value.
    """
    gx, gyz, blk = configs["cfg_grid_x"], configs["cfg_grid_yz"], configs["cfg_block"]
    order = np.lexsort((blk, gyz, gx, idx))
    k, a, b, c = idx[order], gx[order], gyz[order], blk[order]
    new = np.ones(len(k), dtype=bool)
    new[1:] = (k[1:] != k[:-1]) | (a[1:] != a[:-1]) | (b[1:] != b[:-1]) | (c[1:] != c[:-1])
    starts = np.flatnonzero(new)
    run_len = np.diff(np.append(starts, len(k)))
    out: list[tuple[dict[str, Any], int]] = []
    best: dict[int, tuple[int, int]] = {}   # kernel index -> (run length, start position)
    n_cfg: dict[int, int] = defaultdict(int)
    for pos, length in zip(starts.tolist(), run_len.tolist(), strict=True):
        kid = int(k[pos])
        n_cfg[kid] += 1
        if kid not in best or length > best[kid][0]:
            best[kid] = (length, pos)
    for kid in range(int(idx.max()) + 1):
        pos = best[kid][1]
        out.append((unpack_config(int(a[pos]), int(b[pos]), int(c[pos])), n_cfg[kid]))
    return out


def kernel_names(rel: Relations) -> dict[int, tuple[str | None, str | None]]:
    """name_id -> (full name, short name) for the kernels relation."""
    if rel.available("kernel_names"):
        rows = rel.query("SELECT name_id, name, short_name FROM pa_kernel_names")
    else:
        rows = rel.query(f"SELECT name_id, max(name), max(short_name) FROM pa_kernels WHERE {VALID} GROUP BY 1")
    return {int(r[0]): (r[1], r[2]) for r in rows if r[0] is not None}


def wave_fill(grid: list[int | None], block: list[int | None], hw: HardwareLimits) -> float | None:
    """Blocks / (SMs × resident blocks per SM), capped at 1: how much of one full wave a launch fills.

    Resident blocks per SM are limited here only by the thread and block-count limits (registers and
    shared memory are ignored), so this is a wave-fill ratio, not occupancy.
    """
    if any(v is None for v in (*grid, *block)) or not hw.sm_count:
        return None
    blocks = int(grid[0]) * int(grid[1]) * int(grid[2])  # type: ignore[arg-type]
    threads = int(block[0]) * int(block[1]) * int(block[2])  # type: ignore[arg-type]
    if blocks <= 0 or threads <= 0:
        return None
    per_sm = hw.max_blocks_per_sm or 0
    if hw.max_warps_per_sm and hw.threads_per_warp:
        by_threads = (hw.max_warps_per_sm * hw.threads_per_warp) // threads
        per_sm = min(per_sm, by_threads) if per_sm else by_threads
    per_sm = max(per_sm, 1)
    return min(1.0, blocks / (hw.sm_count * per_sm))
