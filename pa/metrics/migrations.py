"""Unified (managed) memory migrations: pages the driver moved on demand, and what prefetching wins.

With managed memory (cudaMallocManaged / hipMallocManaged) the driver moves pages between host and
device when they are touched: a GPU page fault stalls the kernel that touched the page, a CPU fault
the host thread. Nsight Systems records each migration as a copy of a "Unified" kind with its cause
(pa: copies.migration). Fault-driven migrations move small groups of pages at a fraction of the
link's bandwidth; prefetching (cudaMemPrefetchAsync / hipMemPrefetchAsync), memory advice or
explicit copies move the same bytes in bulk, ahead of the kernel that needs them.

Fault-driven migrations are those whose cause is a page fault and the speculative prefetch the
driver issues *because of* faults (it moves the neighbouring pages of a faulting access: in
Nsight Systems exports it is most of the migrated bytes when managed memory is touched on demand).
A user prefetch (cudaMemPrefetchAsync) is the fix, not the problem; evictions and access-counter
migrations are counted by cause but not as fault-driven.

Per device, over the fault-driven migrations:
- busy: their union; exposed: the part no kernel overlaps (the GPU does nothing else); overlapped:
  the part under kernels (the kernels are stalled by faults for an unknown share of it, so it is
  reported and never claimed);
- recoverable: the exposed time minus the time the same bytes take at the host link's assumed peak
  (what a bulk prefetch still costs when no compute hides it): max(0, exposed − bytes / peak).
  Without a known link peak nothing is claimed.
"""

from __future__ import annotations

import numpy as np

from pa.metrics import intervals as iv
from pa.metrics.activity import Ops
from pa.metrics.model import HardwareLimits, MigrationCause, MigrationSummary
from pa.profile.canonical import DIRECTIONS, MIGRATION_CAUSES

_FAULT_DRIVEN = [MIGRATION_CAUSES.index("page_fault"), MIGRATION_CAUSES.index("speculative_prefetch")]


def host_read_migrations(copies: Ops, cx: dict[str, np.ndarray]) -> dict[int, iv.Merged]:
    """Per device, the fault-driven device-to-host migrations: the host touching managed pages the GPU wrote.

    Such a migration proves the host work around it reads the GPU's results, so that host work cannot
    run beside the GPU work that produced them (pa.metrics.gaps).
    """
    code = cx.get("migration_code")
    if code is None or not len(code):
        return {}
    reads = np.isin(code, _FAULT_DRIVEN) & (cx["direction_code"] == DIRECTIONS.index("DtoH"))
    return {int(d): iv.merge(copies.start[reads & (copies.device == d)], copies.end[reads & (copies.device == d)])
            for d in np.unique(copies.device[reads]).tolist()}


def migration_summary(copies: Ops, cx: dict[str, np.ndarray], kernels: dict[int, iv.Merged],
                      hardware: dict[int, HardwareLimits]) -> MigrationSummary | None:
    """The migrations among `copies` (cx["migration_code"] ≥ 0); None when there are none."""
    code = cx["migration_code"]
    moved = code >= 0
    if not moved.any():
        return None
    nbytes = np.where(cx["bytes"] < 0, 0, cx["bytes"])
    dur = copies.end - copies.start
    by_cause = {}
    for i, cause in enumerate(MIGRATION_CAUSES):
        m = code == i
        if m.any():
            by_cause[cause] = MigrationCause(count=int(m.sum()), bytes=int(nbytes[m].sum()), total_ns=int(dur[m].sum()))
    busy = exposed = recoverable = fault_bytes = 0
    driven = np.isin(code, _FAULT_DRIVEN)
    for d in np.unique(copies.device[driven]).tolist():
        f = driven & (copies.device == d)
        merged = iv.merge(copies.start[f], copies.end[f])
        k = kernels.get(int(d), iv.EMPTY)
        dev_busy, dev_exposed = iv.length(merged), iv.subtract_length(merged, k)
        dev_bytes = int(nbytes[f].sum())
        peak = hardware[d].host_link_bandwidth_bps if d in hardware else None
        busy += dev_busy
        exposed += dev_exposed
        fault_bytes += dev_bytes
        if peak:
            recoverable += max(0, dev_exposed - int(dev_bytes * 1e9 / peak))
    return MigrationSummary(count=int(moved.sum()), bytes=int(nbytes[moved].sum()), total_ns=int(dur[moved].sum()),
                            by_cause=by_cause, fault_bytes=fault_bytes, fault_busy_ns=busy, fault_exposed_ns=exposed,
                            fault_overlapped_ns=busy - exposed, fault_recoverable_ns=recoverable)
