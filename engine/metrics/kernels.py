"""Per-kernel statistics grouped by full demangled name.

count, total, min, max, mean and the population standard deviation are computed in numpy from the
integer durations fetched once for interval merging; the standard deviation uses the two-pass
formula std = sqrt(Σ(d − mean)² / n), never E[d²] − E[d]² (which loses precision and can go
negative). Names and launch configurations come from one grouped SQL scan.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from engine.metrics.model import HardwareLimits, KernelStats
from engine.profile.relations import Relations

VALID = 'start IS NOT NULL AND "end" IS NOT NULL AND "end" >= start'


def kernel_stats(rel: Relations, name_ids: np.ndarray, durations: np.ndarray,
                 devices_of_kernel: np.ndarray, hardware: dict[int, HardwareLimits]) -> list[KernelStats]:
    """Statistics for every kernel name, largest total time first."""
    if len(name_ids) == 0:
        return []
    uniq, idx = np.unique(name_ids, return_inverse=True)
    idx = idx.reshape(-1)
    counts = np.bincount(idx)
    totals = np.bincount(idx, weights=durations).astype(np.int64)
    # exact integer totals (float weights are exact below 2**53 ns ≈ 104 days per kernel name)
    order = np.argsort(idx, kind="stable")
    bounds = np.r_[0, np.cumsum(counts)[:-1]]
    sorted_d = durations[order]
    mins = np.minimum.reduceat(sorted_d, bounds)
    maxs = np.maximum.reduceat(sorted_d, bounds)
    n = counts.astype(np.float64)
    mean = np.bincount(idx, weights=durations.astype(np.float64)) / n
    dev = durations.astype(np.float64) - mean[idx]
    std = np.sqrt(np.bincount(idx, weights=dev * dev) / n)

    kdevs: dict[int, set[int]] = defaultdict(set)
    pair_keys = np.unique((name_ids << 16) | (devices_of_kernel & 0xFFFF))
    for key in pair_keys.tolist():
        kdevs[key >> 16].add(key & 0xFFFF)

    info = _names_and_configs(rel)
    total_gpu = int(durations.sum())
    out = []
    for i, nid in enumerate(uniq.tolist()):
        cfg = info.get(nid, {})
        devs = sorted(kdevs.get(nid, set()))
        hw = hardware.get(devs[0]) if devs else None
        m = float(mean[i])
        total = int(totals[i])
        grid, block = cfg.get("grid"), cfg.get("block")
        out.append(KernelStats(
            name=cfg.get("name") or f"<name id {nid}>", short_name=cfg.get("short_name"), devices=devs,
            count=int(counts[i]), total_ns=total, mean_ns=m, min_ns=int(mins[i]), max_ns=int(maxs[i]),
            std_ns=float(std[i]), cv=(float(std[i]) / m) if m > 0 else None,
            share_of_gpu_time_pct=(100.0 * total / total_gpu) if total_gpu else None,
            grid=grid, block=block, launch_configs=cfg.get("n", 1),
            registers_per_thread=cfg.get("regs"), shared_bytes=cfg.get("shared"),
            wave_fill_ratio=wave_fill(grid, block, hw) if grid and block and hw else None))
    out.sort(key=lambda k: (-k.total_ns, k.name))
    return out


_CONFIG = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "registers_per_thread",
           "coalesce(static_shared_bytes, 0) + coalesce(dynamic_shared_bytes, 0)")


def _names_and_configs(rel: Relations) -> dict[int, dict[str, Any]]:
    """Name, short name, most frequent launch configuration and number of configurations per kernel.

    One scan grouped by (name, configuration). Cheaper-looking variants (min/max per column, a
    configuration fingerprint) measured slower in SQLite's VM on a 1 M-kernel profile.
    """
    cols = ", ".join(_CONFIG)
    best: dict[int, dict[str, Any]] = {}
    counts: dict[int, int] = {}
    for row in rel.query(f"SELECT name_id, max(name), max(short_name), {cols}, count(*) FROM pa_kernels "
                         f"WHERE {VALID} GROUP BY name_id, 4, 5, 6, 7, 8, 9, 10, 11"):
        nid, n = int(row[0]), row[-1]
        entry = best.setdefault(nid, {"name": row[1], "short_name": row[2], "n": 0})
        entry["n"] += 1
        if n > counts.get(nid, 0):
            counts[nid] = n
            entry.update(_config(row[3:11]))
    return best


def _config(values: Any) -> dict[str, Any]:
    gx, gy, gz, bx, by, bz, regs, shared = values
    return {"grid": [gx, gy, gz], "block": [bx, by, bz], "regs": regs, "shared": shared}


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
