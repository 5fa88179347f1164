"""One export holding several processes of a job: each process is a rank of the run.

`nsys profile torchrun --nproc_per_node=8 …` and `nsys profile mpirun -np 4 …` write one file for
every process of the job. pa analyses such a file as a rank set, one rank per process that drives a
GPU (a kernel, copy or memset of its own): each rank's summary reads only that process's rows
(Relations.of_process), and the cross-rank facts (pa.ranks.cross) compare them as they compare the
files of a rank directory. A process with no GPU work (a launcher, a data-loader helper, a
`python -c` that never touched CUDA) is no rank: it is named in the summary's process table, not
invented as one. A CPU-only MPI job in one file has its MPI processes as ranks.

The processes come from pa.metrics.processes: for one file given alone, from one GROUP BY before
any summary (probe_processes); in a rank directory, from each file's whole summary
(`ProfileSummary.processes`), which a file of one process needs anyway. A process's rank number
comes from the MPI metadata (the rank its MPI calls carry, when every rank process has exactly one
and they are distinct); else from the process order (ascending pid: torchrun and mpirun start local
ranks in order), said in the report.
"""

from __future__ import annotations

from collections.abc import Sequence

from pa.metrics.model import ProcessSummary


def rank_processes(processes: Sequence[ProcessSummary]) -> list[ProcessSummary]:
    """The processes of one export that are the ranks of its run; [] when it holds fewer than two.

    The processes that drive a GPU when there are several; else, for a CPU-only MPI job captured in
    one file, the processes that call MPI. A launcher or a helper with neither is never a rank.
    """
    gpu = [p for p in processes if p.gpu_ops]
    if len(gpu) >= 2:
        return gpu
    mpi = [p for p in processes if p.mpi_calls]
    return mpi if len(mpi) >= 2 and not gpu else []
