"""Communication kernels (NCCL, RCCL): GPU time that moves data between GPUs, not compute.

A collective or send/receive runs as a kernel on the GPU. It keeps the device busy, so it is never
idle time, but it is no compute either: counting it as compute would call a communication-bound run
compute-bound and make an `ncclDevKernel_SendRecv` the "dominant kernel" to optimise. The kernels
relation's name ids are split by the `kernel_classes` relation (names starting with nccl/rccl).

Per device:
- communication busy: the union of the communication kernels;
- exposed communication: that union minus the union of the compute kernels (no compute runs
  meanwhile; the time includes waiting inside the kernel for slower peers);
- recoverable: what overlapping communication with independent compute can win back, as the trace
  proves it: the exposed time, but no more than the compute time not already overlapping
  communication (work can hide only behind compute that exists). Over several GPUs the collectives
  tie them together, so the run shortens by at most the smallest of their gains
  (pa.metrics.summarize, GpuTotals.communication_recoverable_ns).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pa.metrics import intervals as iv
from pa.metrics.activity import Ops
from pa.profile.canonical import KERNEL_CLASSES
from pa.profile.relations import Relations


@dataclass(frozen=True)
class DeviceCommunication:
    """Communication and compute kernel time of one device (ns)."""

    kernel_count: int
    time_ns: int
    busy_ns: int
    exposed_ns: int
    recoverable_ns: int
    compute_busy_ns: int


def class_name_ids(rel: Relations) -> dict[str, np.ndarray]:
    """Kernel name ids of each class but compute: communication and graph (empty when unavailable).

    graph: whole CUDA graph executions (pa.profile.canonical.KERNEL_CLASSES); they count as GPU
    work that is not communication, since what ran inside them is not recorded.
    """
    ids: dict[str, list[int]] = {c: [] for c in KERNEL_CLASSES if c != "compute"}
    if rel.available("kernel_classes"):
        # Read whole (one row per kernel name), so its domain count comes from the same statement.
        for name_id, cls in rel.read_whole("kernel_classes"):   # (name_id, class)
            if name_id is not None and cls in ids:
                ids[cls].append(int(name_id))
    return {c: np.array(v, dtype=np.int64) for c, v in ids.items()}


def device_communication(kernels: Ops, is_comm: np.ndarray, device: int) -> DeviceCommunication:
    """Communication facts of `device`; `is_comm` marks the communication kernels of `kernels`."""
    on = kernels.device == device
    comm, compute = on & is_comm, on & ~is_comm
    comm_set = iv.merge(kernels.start[comm], kernels.end[comm])
    compute_set = iv.merge(kernels.start[compute], kernels.end[compute])
    compute_busy = iv.length(compute_set)
    exposed = iv.subtract_length(comm_set, compute_set)
    overlapped = iv.length(comm_set) - exposed
    return DeviceCommunication(
        kernel_count=int(comm.sum()), time_ns=int((kernels.end[comm] - kernels.start[comm]).sum()),
        busy_ns=iv.length(comm_set), exposed_ns=exposed,
        recoverable_ns=min(exposed, compute_busy - overlapped), compute_busy_ns=compute_busy)
