"""Copies and memsets: counts, bytes, time, effective bandwidth against the right peak.

Host and peer copies are compared with the host link (PCIe / NVLink-C2C), device-to-device copies
with device memory bandwidth. The host link is not recorded in any profile: it is assumed from the
GPU generation (table below, with its basis reported next to every number that uses it).
"""

from __future__ import annotations

from engine.metrics.model import CopyStats, CopyTotals, HardwareLimits, MemsetStats
from engine.profile.relations import VALID, Relations

HOST_DIRECTIONS = ("HtoD", "DtoH", "HtoH")

# Peak per direction of a x16 link, bytes/s (PCI-SIG: 3.0 = 8 GT/s ×16 ≈ 15.75 GB/s, 4.0 ≈ 31.5 GB/s,
# 5.0 ≈ 63 GB/s; NVLink-C2C on Grace Hopper/Blackwell: 450 GB/s per direction, NVIDIA GH200 sheet).
PCIE3 = ("PCIe 3.0 x16 (assumed from GPU generation)", 15_750_000_000)
PCIE4 = ("PCIe 4.0 x16 (assumed from GPU generation)", 31_500_000_000)
PCIE5 = ("PCIe 5.0 x16 (assumed from GPU generation)", 63_000_000_000)
C2C = ("NVLink-C2C (assumed from product name)", 450_000_000_000)


def host_link(name: str | None, compute_capability: str | None) -> tuple[str | None, int | None]:
    """Assumed host link of a GPU from its product name and architecture; (None, None) if unknown."""
    n = (name or "").upper()
    cc = compute_capability or ""
    if "GH200" in n or "GB200" in n or "GB300" in n:
        return C2C
    if cc.startswith("gfx"):
        if cc.startswith(("gfx908", "gfx90a")):
            return PCIE4
        if cc.startswith(("gfx942", "gfx950")):
            return (None, None) if "MI300A" in n else PCIE5
        return (None, None)
    try:
        major = int(cc.split(".")[0])
    except ValueError:
        return (None, None)
    if major <= 7:
        return PCIE3
    if major == 8:
        return PCIE4
    return PCIE5


def copy_stats(rel: Relations, hardware: dict[int, HardwareLimits]) -> tuple[list[CopyStats], list[CopyTotals]]:
    """Copies grouped by direction and memory kinds, and totals per direction."""
    rows = rel.query(f"""
        SELECT direction, coalesce(src_kind, 'unknown'), coalesce(dst_kind, 'unknown'),
               count(*), sum(bytes), sum("end" - start), min(device)
        FROM pa_copies WHERE {VALID} GROUP BY 1, 2, 3 ORDER BY 6 DESC, 1, 2, 3""")
    stats = []
    for direction, src, dst, count, nbytes, total, device in rows:
        nbytes = int(nbytes or 0)
        total = int(total or 0)
        hw = hardware.get(int(device)) if device is not None else None
        peak, basis = _peak(direction, hw)
        eff = nbytes / total * 1e9 if total > 0 else None
        stats.append(CopyStats(
            direction=direction, src_kind=src, dst_kind=dst, count=int(count), bytes=nbytes,
            total_ns=total, mean_bytes=nbytes / int(count), effective_bandwidth_bps=eff,
            peak_bandwidth_bps=peak, peak_basis=basis,
            bandwidth_pct_of_peak=(100.0 * eff / peak) if eff is not None and peak else None))
    totals = [
        CopyTotals(direction=d, count=int(c), bytes=int(b or 0), total_ns=int(t or 0), pageable_bytes=int(p or 0))
        for d, c, b, t, p in rel.query(f"""
            SELECT direction, count(*), sum(bytes), sum("end" - start),
                   sum(CASE WHEN src_kind = 'pageable' OR dst_kind = 'pageable' THEN bytes ELSE 0 END)
            FROM pa_copies WHERE {VALID} GROUP BY 1 ORDER BY 4 DESC, 1""")
    ]
    return stats, totals


def _peak(direction: str, hw: HardwareLimits | None) -> tuple[int | None, str | None]:
    if hw is None:
        return None, None
    if direction == "DtoD":
        if hw.memory_bandwidth_bps:
            return hw.memory_bandwidth_bps, "device memory bandwidth (profile)"
        return None, None
    if direction in ("HtoD", "DtoH") and hw.host_link_bandwidth_bps:
        return hw.host_link_bandwidth_bps, hw.host_link
    return None, None


def memset_stats(rel: Relations) -> list[MemsetStats]:
    """Memsets grouped by memory kind."""
    return [
        MemsetStats(mem_kind=k, count=int(c), bytes=None if known == 0 else int(b or 0), total_ns=int(t or 0))
        for k, c, b, t, known in rel.query(f"""
            SELECT coalesce(mem_kind, 'unknown'), count(*), sum(bytes), sum("end" - start), count(bytes)
            FROM pa_memsets WHERE {VALID} GROUP BY 1 ORDER BY 4 DESC, 1""")
    ]
