"""Per-kernel statistics grouped by full demangled name.

Timing statistics are computed in numpy from the columns fetched once for interval merging: count,
total, min, max, mean, the population standard deviation with the two-pass formula
std = sqrt(Σ(d − mean)² / n) (never E[d²] − E[d]², which loses precision and can go negative).
The most frequent launch configuration per name comes from `launch_configs`: a DISTINCT over the
configuration columns (a kernel name nearly always has one configuration, and SQLite finds the few
distinct rows in a fraction of the time it takes to ship nine more integers per kernel to Python);
only names with several configurations have their rows' configurations fetched and counted.
Names come from the small kernel_names relation.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Any

import numpy as np

from pa.metrics.grouping import stable_order, unique_inverse
from pa.metrics.model import HardwareLimits, KernelStats
from pa.profile.relations import VALID, Relations

CONFIG_COLUMNS = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "registers_per_thread",
                  "static_shared_bytes", "dynamic_shared_bytes")


def pack_configs(c: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A launch configuration as three integers (grid x; grid y and z; block, registers, shared).

    Inputs use -1 for unknown. Field widths cover every legal value: grid y and z < 2**31 (HIP
    work-item grids are 32-bit), block dimensions <= 1024 < 2**11, registers per thread <= 255
    (CUDA) / 512 VGPRs (AMD) < 2**10, shared memory / LDS per block <= 227 KiB < 2**19. A part with
    any field unknown packs to -1.
    """
    gy, gz = c["grid_y"].astype(np.int64), c["grid_z"].astype(np.int64)
    bx, by, bz = (c[k].astype(np.int64) for k in ("block_x", "block_y", "block_z"))
    regs = c["registers_per_thread"].astype(np.int64)
    shared = np.maximum(c["static_shared_bytes"], 0) + np.maximum(c["dynamic_shared_bytes"], 0)
    gyz = np.where((gy < 0) | (gz < 0), -1, (gy << 32) | np.maximum(gz, 0))
    known = (bx >= 0) & (by >= 0) & (bz >= 0) & (regs >= 0)
    blk = np.where(known, (bx << 51) | (by << 40) | (bz << 29) | (regs << 19) | shared, -1)
    return c["grid_x"].astype(np.int64), gyz, blk


def unpack_config(gx: int, gyz: int, blk: int) -> dict[str, Any]:
    """Inverse of pack_configs for one row."""
    grid = None if gx < 0 or gyz < 0 else [gx, gyz >> 32, gyz & 0xFFFFFFFF]
    if blk < 0:
        return {"grid": grid, "block": None, "regs": None, "shared": None}
    return {"grid": grid, "block": [(blk >> 51) & 0x7FF, (blk >> 40) & 0x7FF, (blk >> 29) & 0x7FF],
            "regs": (blk >> 19) & 0x3FF, "shared": blk & 0x7FFFF}


def launch_configs(rel: Relations) -> dict[int, tuple[dict[str, Any], int]]:
    """name_id (-1: none) -> (most frequent launch configuration, number of distinct configurations).

    Over the well-formed kernel rows, like every other kernel statistic. Ties between equally
    frequent configurations go to the smallest packed value.
    """
    # NULL becomes -1 on the few distinct rows in Python, not on every kernel row in SQL: a NULL
    # and a -1 of the same name then arrive as two rows and fall into one set entry below.
    rows = rel.query(f"SELECT DISTINCT {', '.join(('name_id', *CONFIG_COLUMNS))} FROM pa_kernels WHERE {VALID}")
    if not rows:
        return {}
    arr = np.array([[-1 if v is None else v for v in row] for row in rows],
                   dtype=np.int64).reshape(len(rows), 1 + len(CONFIG_COLUMNS))
    packed = pack_configs({c: arr[:, i + 1] for i, c in enumerate(CONFIG_COLUMNS)})
    distinct: dict[int, set[tuple[int, int, int]]] = defaultdict(set)
    for nid, gx, gyz, blk in zip(arr[:, 0].tolist(), *(p.tolist() for p in packed), strict=True):
        distinct[nid].add((gx, gyz, blk))
    out = {nid: (unpack_config(*next(iter(cfgs))), 1) for nid, cfgs in distinct.items() if len(cfgs) == 1}
    multi = sorted(nid for nid, cfgs in distinct.items() if len(cfgs) > 1)
    if multi:
        where = f"coalesce(name_id, -1) IN ({', '.join(str(n) for n in multi)})"
        k = rel.intervals("kernels", ("name_id", *CONFIG_COLUMNS), where=where)[0]
        out.update(_modal_configs(k["name_id"], *pack_configs(k)))
    return out


def kernel_stats(names: dict[int, tuple[str | None, str | None]], name_ids: np.ndarray, durations: np.ndarray,
                 devices_of_kernel: np.ndarray, configs: dict[int, tuple[dict[str, Any], int]],
                 hardware: dict[int, HardwareLimits],
                 communication_ids: frozenset[int] = frozenset(),
                 graph_ids: frozenset[int] = frozenset()) -> list[KernelStats]:
    """Statistics for every kernel name, largest total time first.

    `communication_ids`: NCCL/RCCL names; `graph_ids`: names of whole CUDA graph executions.
    """
    if len(name_ids) == 0:
        return []
    uniq, idx = unique_inverse(name_ids)
    counts = np.bincount(idx)
    order = stable_order(idx)
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
    total_gpu = int(durations.sum())
    out = []
    for i, nid in enumerate(uniq.tolist()):
        name, short = names.get(nid, (None, None))
        cfg, n_cfg = configs.get(nid, (unpack_config(-1, -1, -1), 0))
        devs = sorted(kdevs.get(i, set()))
        hw = hardware.get(devs[0]) if devs else None
        m = float(mean[i])
        total = int(totals[i])
        grid, block = cfg["grid"], cfg["block"]
        out.append(KernelStats(
            name=name or f"<name id {nid}>", short_name=short, devices=devs,
            kernel_class="communication" if nid in communication_ids else "graph" if nid in graph_ids
            else "compute",
            count=int(counts[i]), total_ns=total, mean_ns=m, min_ns=int(mins[i]), max_ns=int(maxs[i]),
            std_ns=float(std[i]), cv=(float(std[i]) / m) if m > 0 else None,
            share_of_gpu_time_pct=(100.0 * total / total_gpu) if total_gpu else None,
            grid=grid, block=block, launch_configs=n_cfg,
            registers_per_thread=cfg["regs"], shared_bytes=cfg["shared"],
            wave_fill_ratio=wave_fill(grid, block, hw) if grid and block and hw else None))
    out.sort(key=lambda k: (-k.total_ns, k.name))
    return with_display_names(out)


def with_display_names(kernels: list[KernelStats]) -> list[KernelStats]:
    """Give every kernel a display name that tells it apart from the others (kernels in rank order).

    A short name is enough when only one kernel has it. Templates that shorten to the same name
    (`par_ranged2d_kernel` nine times, one per functor; PyTorch's `elementwise_kernel` once per op)
    keep what tells them apart: the first identifier of their template arguments that the others of
    the group do not all share (`par_ranged2d_kernel<PdV_kernel>`, `elementwise_kernel<MulFunctor>`),
    and where even that repeats, a number in rank order (`par_ranged2d_kernel<PdV_kernel> #2`).
    """
    short = [k.short_name or k.name for k in kernels]
    groups: dict[str, list[int]] = defaultdict(list)
    for i, sname in enumerate(short):
        groups[sname].append(i)
    labels = list(short)
    for sname, members in groups.items():
        if len(members) < 2:
            continue
        tokens = [_tokens(kernels[i].name) for i in members]
        common = set.intersection(*(set(t) for t in tokens))
        for i, toks in zip(members, tokens, strict=True):
            tell = next((t for t in toks if t not in common), None)
            if tell:
                labels[i] = f"{sname}<{tell}>"
    twice = {lb for lb, n in Counter(labels).items() if n > 1}
    seen: Counter[str] = Counter()
    out = []
    for k, label in zip(kernels, labels, strict=True):
        if label in twice:
            seen[label] += 1
            label = f"{label} #{seen[label]}"
        out.append(k.model_copy(update={"display_name": label}))
    return out


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Words of C++ signatures that never tell two specialisations apart.
_GENERIC = frozenset({"void", "int", "unsigned", "long", "short", "char", "bool", "float", "double", "half",
                      "const", "volatile", "struct", "class", "typename", "auto", "lambda", "instance", "T",
                      "std", "at", "native", "c10", "detail", "cuda", "cub", "thrust", "cutlass", "anonymous",
                      "namespace", "signed", "size_t", "int64_t", "int32_t", "uint32_t", "uint64_t"})
_TYPE_PARAM = re.compile(r"T\d*")


def _tokens(name: str) -> list[str]:
    """Identifiers of the template arguments and parameters, in order, without generic words."""
    lt = name.find("<")
    paren = name.find("(")
    tail = name[lt + 1:] if lt >= 0 else (name[paren + 1:] if paren >= 0 else "")
    return [t for t in _IDENT.findall(tail) if t not in _GENERIC and not _TYPE_PARAM.fullmatch(t)]


def _modal_configs(name_ids: np.ndarray, gx: np.ndarray, gyz: np.ndarray,
                   blk: np.ndarray) -> dict[int, tuple[dict[str, Any], int]]:
    """Per name id: the most frequent packed configuration and the number of distinct ones."""
    order = np.lexsort((blk, gyz, gx, name_ids))
    k, a, b, c = name_ids[order], gx[order], gyz[order], blk[order]
    new = np.ones(len(k), dtype=bool)
    new[1:] = (k[1:] != k[:-1]) | (a[1:] != a[:-1]) | (b[1:] != b[:-1]) | (c[1:] != c[:-1])
    starts = np.flatnonzero(new)
    run_len = np.diff(np.append(starts, len(k)))
    best: dict[int, tuple[int, int]] = {}   # name id -> (run length, start position)
    n_cfg: dict[int, int] = defaultdict(int)
    for pos, length in zip(starts.tolist(), run_len.tolist(), strict=True):
        nid = int(k[pos])
        n_cfg[nid] += 1
        if nid not in best or length > best[nid][0]:
            best[nid] = (length, pos)
    return {nid: (unpack_config(int(a[pos]), int(b[pos]), int(c[pos])), n_cfg[nid]) for nid, (_, pos) in best.items()}


def kernel_names(rel: Relations) -> dict[int, tuple[str | None, str | None]]:
    """name_id -> (full name, short name) for the kernels relation."""
    if rel.available("kernel_names"):
        rows = rel.read_whole("kernel_names")   # (name_id, name, short_name), counted as read
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
