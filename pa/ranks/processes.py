"""One export holding several GPU processes: each process is a rank of the run.

`nsys profile torchrun --nproc_per_node=8 …` and `nsys profile mpirun -np 4 …` write one file for
every process of the job. pa analyses such a file as a rank set, one rank per process that drives a
GPU (a kernel, copy or memset of its own): each rank's summary reads only that process's rows
(Relations.of_process), and the cross-rank facts (pa.ranks.cross) compare them as they compare the
files of a rank directory. A process with no GPU work (a launcher, a data-loader helper, a
`python -c` that never touched CUDA) is no rank: it is named in the report, not invented as one.

A process's rank number comes from the MPI metadata the export holds (the rank its MPI calls carry,
when every GPU process has exactly one and they are distinct); else from the process order
(ascending pid: torchrun and mpirun start local ranks in order), said in the report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pa.profile.detect import detect
from pa.profile.open import open_readonly
from pa.profile.queryset import resolve
from pa.profile.relations import Relations


@dataclass(frozen=True)
class GpuProcess:
    """A process of one export that drove a GPU or called MPI: its devices, GPU operations and MPI rank."""

    pid: int
    name: str | None
    devices: tuple[int, ...]
    gpu_ops: int
    mpi_rank: int | None = None
    mpi_calls: int = 0


def gpu_processes_of(rel: Relations) -> list[GpuProcess]:
    """The processes with GPU work of their own (kernels, copies or memsets) or MPI calls, by ascending pid.

    One GROUP BY over each GPU activity relation and the MPI calls; NULL pids (a writer that records
    none) are no process and are never split out.
    """
    counts: dict[int, dict[int, int]] = {}
    for relation in ("kernels", "copies", "memsets"):   # one statement each: an error names its relation
        if not rel.available(relation):
            continue
        for pid, device, n in rel.query(f"SELECT pid, device, count(*) FROM pa_{relation} "
                                        "WHERE pid IS NOT NULL GROUP BY pid, device"):
            per = counts.setdefault(int(pid), {})
            key = int(device) if device is not None else -1
            per[key] = per.get(key, 0) + int(n)
    names: dict[int, str] = {}
    if rel.available("processes"):
        for pid, name in rel.query("SELECT pid, name FROM pa_processes WHERE pid IS NOT NULL"):
            if name is not None:
                names.setdefault(int(pid), str(name))
    ranks: dict[int, int | None] = {}
    mpi_calls: dict[int, int] = {}
    if rel.available("mpi_calls"):
        for pid, lo, hi, n in rel.query("SELECT pid, min(rank), max(rank), count(*) FROM pa_mpi_calls "
                                        "WHERE pid IS NOT NULL GROUP BY pid"):
            ranks[int(pid)] = int(lo) if lo is not None and lo == hi else None
            mpi_calls[int(pid)] = int(n)
    return [GpuProcess(pid=pid, name=names.get(pid), devices=tuple(sorted(d for d in counts.get(pid, {}) if d >= 0)),
                       gpu_ops=sum(counts.get(pid, {}).values()), mpi_rank=ranks.get(pid),
                       mpi_calls=mpi_calls.get(pid, 0))
            for pid in sorted(set(counts) | set(mpi_calls))]


def rank_processes(processes: Sequence[GpuProcess]) -> list[GpuProcess]:
    """The processes of one export that are the ranks of its run; [] when it holds fewer than two.

    The processes that drive a GPU when there are several; else, for a CPU-only MPI job captured in
    one file, the processes that call MPI. A launcher or a helper with neither is never a rank.
    """
    gpu = [p for p in processes if p.gpu_ops]
    if len(gpu) >= 2:
        return gpu
    mpi = [p for p in processes if p.mpi_calls]
    return mpi if len(mpi) >= 2 and not gpu else []


def gpu_processes(path: Path, query_dirs: Sequence[Path] = ()) -> list[GpuProcess]:
    """`gpu_processes_of` the profile at `path` (opened read-only)."""
    conn = open_readonly(path)
    try:
        fmt = detect(conn, path)
        return gpu_processes_of(Relations.bind(conn, resolve(fmt.format, fmt.schema_version, query_dirs=query_dirs)))
    finally:
        conn.close()


def process_ranks(processes: Sequence[GpuProcess]) -> tuple[list[int], str]:
    """Rank numbers of an export's GPU processes (in their order) and where they came from (module docs)."""
    mpi = [p.mpi_rank for p in processes]
    if all(r is not None for r in mpi) and len(set(mpi)) == len(mpi):
        return [int(r) for r in mpi if r is not None], "mpi"
    return list(range(len(processes))), "process_order"
