"""The processes of one profile that did GPU work or called MPI: who could be a rank of the run.

An export of a whole job (`nsys profile torchrun …`, `nsys profile mpirun …`) holds every process;
pa.ranks.processes decides from this table which of them are the run's ranks. The GPU side is
counted from the activity arrays the summary has already read (no second pass over the kernels);
the MPI side is one GROUP BY over the MPI calls, a small relation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pa.metrics.model import ProcessSummary
from pa.profile.relations import Relations


def process_table(rel: Relations, pids: Sequence[np.ndarray], devices: Sequence[np.ndarray]) -> list[ProcessSummary]:
    """Processes with GPU operations (from the activity arrays: pid and device per operation) or MPI calls.

    NULL pids (read as -1: a writer that records none) are no process. By ascending pid.
    """
    gpu: dict[int, dict[int, int]] = {}
    for pid, dev in zip(pids, devices, strict=True):
        if not len(pid):
            continue
        pairs, counts = np.unique(np.stack([pid, dev]), axis=1, return_counts=True)
        for (p, d), n in zip(pairs.T.tolist(), counts.tolist(), strict=True):
            if p >= 0:
                per = gpu.setdefault(int(p), {})
                per[int(d)] = per.get(int(d), 0) + int(n)
    mpi: dict[int, tuple[int, int | None]] = {}
    if rel.available("mpi_calls"):
        for pid, lo, hi, n in rel.query("SELECT pid, min(rank), max(rank), count(*) FROM pa_mpi_calls "
                                        "WHERE pid IS NOT NULL GROUP BY pid"):
            mpi[int(pid)] = (int(n), int(lo) if lo is not None and lo == hi else None)
    names: dict[int, str] = {}
    if (gpu or mpi) and rel.available("processes"):
        for pid, name in rel.query("SELECT pid, name FROM pa_processes WHERE pid IS NOT NULL AND name IS NOT NULL"):
            names.setdefault(int(pid), str(name))
    return [ProcessSummary(pid=pid, name=names.get(pid),
                           devices=sorted(d for d in gpu.get(pid, {}) if d >= 0),
                           gpu_ops=sum(gpu.get(pid, {}).values()), mpi_calls=mpi.get(pid, (0, None))[0],
                           mpi_rank=mpi.get(pid, (0, None))[1])
            for pid in sorted(set(gpu) | set(mpi))]


def probe_processes(rel: Relations) -> list[ProcessSummary]:
    """`process_table` from SQL alone, before any summary: one GROUP BY per GPU activity relation.

    How `pa analyze FILE` decides whether one export holds several ranks without summarising the
    whole file first (which a multi-process export would then summarise again per process): a scan
    of two columns, a few percent of a summary's reads. Same table as process_table (tested).
    """
    pids: list[np.ndarray] = []
    devices: list[np.ndarray] = []
    for relation in ("kernels", "copies", "memsets"):   # one statement each: an error names its relation
        if rel.available(relation):
            rows = rel.fetch_ints(f"SELECT coalesce(pid, -1), coalesce(device, -1), count(*) FROM pa_{relation} "
                                  "GROUP BY 1, 2", 3)
            pids.append(np.repeat(rows[:, 0], rows[:, 2]))
            devices.append(np.repeat(rows[:, 1], rows[:, 2]))
    return process_table(rel, pids, devices)
