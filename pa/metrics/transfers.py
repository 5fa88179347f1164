"""Copies and memsets: counts, bytes, time, effective bandwidth against the right peak.

Host and peer copies are compared with the host link (PCIe / NVLink-C2C), device-to-device copies
with device memory bandwidth. The host link is not recorded in any profile: it is assumed from the
GPU generation (pa.metrics.hardware, from hardware.yaml, with its basis reported next to every
number that uses it).
"""

from __future__ import annotations

import numpy as np

from pa.metrics.model import CopyStats, CopyTotals, HardwareLimits, MemsetStats, RoundTrip
from pa.metrics.thresholds import DEFAULT_THRESHOLDS, Thresholds
from pa.profile.canonical import DIRECTIONS, MEMORY_KINDS, MIGRATION_CAUSES
from pa.profile.relations import VALID, Relations

HOST_DIRECTIONS = ("HtoD", "DtoH", "HtoH")

def _code_of(column: str, vocabulary: tuple[str, ...], otherwise: str) -> str:
    """SQL mapping a text column of a fixed canonical vocabulary to its index (NULL: `otherwise`)."""
    whens = " ".join(f"WHEN '{v}' THEN {i}" for i, v in enumerate(vocabulary))
    return f"CASE coalesce({column}, '{otherwise}') {whens} ELSE {vocabulary.index(otherwise)} END"


# Integer codes for the text columns of the copies relation, so that copy statistics come from the
# one scan of the relation that interval merging needs instead of grouped SQL passes over it.
COPY_CODES = {
    "direction_code": _code_of("direction", DIRECTIONS, "other"),
    "src_kind_code": _code_of("src_kind", MEMORY_KINDS, "unknown"),
    "dst_kind_code": _code_of("dst_kind", MEMORY_KINDS, "unknown"),
    # -1: an explicit copy; else the index of the unified-memory migration's cause
    "migration_code": "CASE WHEN migration IS NULL THEN -1 "
                      + " ".join(f"WHEN migration = '{v}' THEN {i}" for i, v in enumerate(MIGRATION_CAUSES))
                      + f" ELSE {MIGRATION_CAUSES.index('unknown')} END",
}


def copy_stats(cols: dict[str, np.ndarray], duration: np.ndarray, device: np.ndarray,
               hardware: dict[int, HardwareLimits], thresholds: Thresholds = DEFAULT_THRESHOLDS
               ) -> tuple[list[CopyStats], list[CopyTotals]]:
    """Copies grouped by direction and memory kinds, and totals per direction.

    `cols` holds the COPY_CODES columns and `bytes` (-1 where the profile has no size, counted as
    0 like SQL's sum ignores NULL) of the well-formed copies; `duration` and `device` align.
    """
    nbytes = np.where(cols["bytes"] < 0, 0, cols["bytes"])
    # One integer key per (direction, src kind, dst kind): a 1-D unique is far cheaper than axis=0.
    nk = len(MEMORY_KINDS)
    keys = (cols["direction_code"] * nk + cols["src_kind_code"]) * nk + cols["dst_kind_code"]
    groups = []
    if len(keys):
        uniq, idx = np.unique(keys, return_inverse=True)
        idx = idx.reshape(-1)
        counts = np.bincount(idx, minlength=len(uniq))
        for g, key in enumerate(uniq.tolist()):
            d, sk, dk = key // (nk * nk), (key // nk) % nk, key % nk
            m = idx == g
            dev = device[m]
            dev = dev[dev >= 0]
            groups.append((DIRECTIONS[d], MEMORY_KINDS[sk], MEMORY_KINDS[dk], int(counts[g]),
                           int(nbytes[m].sum()), int(duration[m].sum()), int(dev.min()) if len(dev) else None))
    groups.sort(key=lambda r: (-r[5], r[0], r[1], r[2]))
    stats = []
    for direction, src, dst, count, nb, total, dev_id in groups:
        hw = hardware.get(dev_id) if dev_id is not None else None
        peak, basis = _peak(direction, hw)
        eff = nb / total * 1e9 if total > 0 else None
        pinned: tuple[int | None, float | None, str | None] = (None, None, None)
        if direction in ("HtoD", "DtoH") and "pageable" in (src, dst):
            d, sk, dk = DIRECTIONS.index(direction), MEMORY_KINDS.index(src), MEMORY_KINDS.index(dst)
            members = (cols["direction_code"] == d) & (cols["src_kind_code"] == sk) & (cols["dst_kind_code"] == dk)
            pinned = _pinned_estimate(direction, members, cols, nbytes, duration, peak, basis, thresholds)
        stats.append(CopyStats(
            direction=direction, src_kind=src, dst_kind=dst, count=count, bytes=nb,
            total_ns=total, mean_bytes=nb / count, effective_bandwidth_bps=eff,
            peak_bandwidth_bps=peak, peak_basis=basis,
            bandwidth_pct_of_peak=(100.0 * eff / peak) if eff is not None and peak else None,
            pinned_estimate_ns=pinned[0], pinned_rate_bps=pinned[1], pinned_rate_basis=pinned[2]))
    by_dir: dict[str, list[int]] = {}
    for direction, src, dst, count, nb, total, _ in groups:
        t = by_dir.setdefault(direction, [0, 0, 0, 0])
        t[0] += count
        t[1] += nb
        t[2] += total
        t[3] += nb if "pageable" in (src, dst) else 0
    totals = [CopyTotals(direction=d, count=c, bytes=b, total_ns=t, pageable_bytes=p)
              for d, (c, b, t, p) in sorted(by_dir.items(), key=lambda kv: (-kv[1][2], kv[0]))]
    return stats, totals


def _pinned_estimate(direction: str, members: np.ndarray, cols: dict[str, np.ndarray], nbytes: np.ndarray,
                     duration: np.ndarray, peak: int | None, peak_basis: str | None,
                     thresholds: Thresholds) -> tuple[int | None, float | None, str | None]:
    """Time the pageable copies `members` would take from pinned memory: (ns, rate, basis).

    The achievable pinned rate is the measured rate of this profile's own pinned copies of the same
    direction (those of at least thresholds.measured_pinned_min_bytes, 1 MiB by default), else the
    host link's peak (an upper bound on the gain). Each copy takes bytes / rate but no less than the
    fastest small (<= thresholds.latency_copy_max_bytes, 64 KiB) copy of its direction
    (per-copy latency stays), and never more than it actually took: pinning is never claimed to slow
    a copy down.
    """
    d = DIRECTIONS.index(direction)
    same_dir = cols["direction_code"] == d
    pinned_kind = cols["src_kind_code" if direction == "HtoD" else "dst_kind_code"] == MEMORY_KINDS.index("pinned")
    big = same_dir & pinned_kind & (nbytes >= thresholds.measured_pinned_min_bytes) & (duration > 0)
    if np.any(big):
        rate = float(nbytes[big].sum()) / float(duration[big].sum()) * 1e9
        basis = (f"measured: {int(big.sum())} pinned {direction} copies of at least "
                 f"{thresholds.measured_pinned_min_bytes / (1 << 20):g} MiB in this profile")
    elif peak:
        rate, basis = float(peak), f"host link peak, {peak_basis}"
    else:
        return None, None, None
    # Per-copy latency: the fastest small copy of the direction (a large copy's time is its bytes).
    small = duration[same_dir & (duration > 0) & (nbytes <= thresholds.latency_copy_max_bytes)]
    floor = int(small.min()) if len(small) else 0
    est = np.maximum(np.ceil(nbytes[members] / rate * 1e9), floor)
    return int(np.minimum(est, duration[members]).sum()), rate, basis


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


ROUND_TRIPS_LISTED = 10


def round_trips(cols: dict[str, np.ndarray], duration: np.ndarray, start: np.ndarray, end: np.ndarray,
                device: np.ndarray, kernel_span: dict[int, tuple[int, int]]) -> tuple[list[RoundTrip], int, int, int]:
    """Sizes copied host→device and back at least twice each way: (largest ones, count, time, saving).

    The trace names no buffer, only sizes: a size that goes up and comes back again and again, in a
    loop, is most likely the same buffers crossing the link every iteration (OpenMP `map(tofrom:)` in
    a loop, an explicit upload/download per step). Keeping them resident on the device leaves the
    initial uploads and the final downloads of each size. Several buffers can share a size (x and y
    of a SAXPY): every upload of that size before the device's first kernel is a distinct buffer's
    initial upload, and every download after its last kernel a distinct final one, so all of those
    are kept (at least the first upload and the last download); the saving is the other copies' time
    (issue 25, item 10: one kept per size double-counted the second buffer).

    `kernel_span` maps a device to (first kernel start, last kernel end); a device without kernels
    keeps all its copies of the size (no loop around kernels can be shown there).
    """
    nbytes = np.where(cols["bytes"] < 0, 0, cols["bytes"])
    d = cols["direction_code"]
    htod, dtoh = d == DIRECTIONS.index("HtoD"), d == DIRECTIONS.index("DtoH")
    out = []
    count = total = saving = 0
    if not np.any(htod) or not np.any(dtoh):
        return [], 0, 0, 0
    up_sizes, up_n = np.unique(nbytes[htod], return_counts=True)
    down_sizes, down_n = np.unique(nbytes[dtoh], return_counts=True)
    both, iu, idn = np.intersect1d(up_sizes, down_sizes, return_indices=True)
    for size, nu, nd in zip(both.tolist(), up_n[iu].tolist(), down_n[idn].tolist(), strict=True):
        if size <= 0 or nu < 2 or nd < 2:
            continue
        up, down = htod & (nbytes == size), dtoh & (nbytes == size)
        tu = int(duration[up].sum())
        td = int(duration[down].sum())
        count += min(nu, nd)
        total += tu + td
        for dev in np.unique(device[up | down]).tolist():
            first, last = kernel_span.get(dev, (None, None))
            if first is None or last is None:
                continue
            u = np.flatnonzero(up & (device == dev))
            w = np.flatnonzero(down & (device == dev))
            # Kept: the uploads before the first kernel (the earliest one at least), the downloads after
            # the last kernel (the latest one at least).
            keep_u = start[u] < first
            if u.size and not keep_u.any():
                keep_u[int(np.argmin(start[u]))] = True
            keep_w = end[w] > last
            if w.size and not keep_w.any():
                keep_w[int(np.argmax(end[w]))] = True
            saving += int(duration[u[~keep_u]].sum()) + int(duration[w[~keep_w]].sum())
        out.append(RoundTrip(bytes=int(size), htod_count=nu, htod_ns=tu, dtoh_count=nd, dtoh_ns=td))
    out.sort(key=lambda r: (-(r.htod_ns + r.dtoh_ns), r.bytes))
    return out[:ROUND_TRIPS_LISTED], count, total, saving
