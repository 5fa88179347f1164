"""Per-kernel statistics grouped by full demangled name.

count, total, min and max come from SQL over the canonical kernels relation (exact integers); mean
and the population standard deviation are computed in numpy with the two-pass formula
std = sqrt(Σ(d − mean)² / n), never E[d²] − E[d]² (which loses precision and can go negative).
"""

from __future__ import annotations

from collections import defaultdict

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
    n = np.bincount(idx).astype(np.float64)
    d = durations.astype(np.float64)
    mean = np.bincount(idx, weights=d) / n
    dev = d - mean[idx]
    std = np.sqrt(np.bincount(idx, weights=dev * dev) / n)
    pos = {int(u): i for i, u in enumerate(uniq)}

    kdevs: dict[int, set[int]] = defaultdict(set)
    for nid, dv in set(zip(name_ids.tolist(), devices_of_kernel.tolist(), strict=True)):
        kdevs[nid].add(dv)

    rows = rel.query(f"""
        SELECT name_id, max(name), max(short_name), count(*), sum("end" - start),
               min("end" - start), max("end" - start)
        FROM pa_kernels WHERE {VALID} GROUP BY name_id""")
    configs = _launch_configs(rel)
    total_gpu = int(durations.sum())
    out = []
    for name_id, name, short, count, total, mn, mx in rows:
        i = pos[int(name_id)]
        cfg = configs.get(int(name_id))
        devs = sorted(kdevs.get(int(name_id), set()))
        hw = hardware.get(devs[0]) if devs else None
        m = float(mean[i])
        out.append(KernelStats(
            name=name if name is not None else f"<name id {name_id}>",
            short_name=short, devices=devs, count=int(count), total_ns=int(total), mean_ns=m,
            min_ns=int(mn), max_ns=int(mx), std_ns=float(std[i]),
            cv=(float(std[i]) / m) if m > 0 else None,
            share_of_gpu_time_pct=(100.0 * int(total) / total_gpu) if total_gpu else None,
            grid=cfg["grid"] if cfg else None, block=cfg["block"] if cfg else None,
            launch_configs=cfg["n"] if cfg else 1,
            registers_per_thread=cfg["regs"] if cfg else None,
            shared_bytes=cfg["shared"] if cfg else None,
            wave_fill_ratio=wave_fill(cfg["grid"], cfg["block"], hw) if cfg and hw else None))
    out.sort(key=lambda k: (-k.total_ns, k.name))
    return out


def _launch_configs(rel: Relations) -> dict[int, dict]:
    """Most frequent launch configuration per kernel name and the number of distinct ones."""
    rows = rel.query(f"""
        SELECT name_id, grid_x, grid_y, grid_z, block_x, block_y, block_z,
               registers_per_thread, coalesce(static_shared_bytes, 0) + coalesce(dynamic_shared_bytes, 0),
               count(*) AS n
        FROM pa_kernels WHERE {VALID}
        GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9""")
    best: dict[int, dict] = {}
    for name_id, gx, gy, gz, bx, by, bz, regs, shared, n in rows:
        entry = best.get(name_id)
        cfg = {"grid": [gx, gy, gz], "block": [bx, by, bz], "regs": regs, "shared": shared, "count": n}
        if entry is None:
            best[name_id] = {**cfg, "n": 1}
        else:
            entry["n"] += 1
            if n > entry["count"]:
                best[name_id] = {**cfg, "n": entry["n"]}
    return best


def wave_fill(grid: list[int | None], block: list[int | None], hw: HardwareLimits) -> float | None:
    """blocks / (SMs × resident blocks per SM), capped at 1: how much of one full wave a launch fills.

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
