"""Benchmark: Stage 1 of many rank files in parallel, and the cross-rank analysis.

Generates RANKS Nsight Systems files (default 256) of KERNELS kernels (20,000) and MPI MPI calls
(5,000 collectives) each, in worker processes, then in a fresh child process runs
`summarize_ranks` + `cross_rank` with 1 and with 2 workers and reports seconds per rank and the
child's (the parent of the pool's) peak RSS. Target (issue 7): parent peak memory <= 300 MB.

With --per-export 8 the same ranks are also written as exports of 8 processes each (one per node,
as `nsys profile torchrun --nproc_per_node=8` writes them) and timed against one file per rank.

Run: python benchmarks/ranks.py [--ranks N] [--kernels N] [--mpi N] [--per-export N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the testkit lives in tests/

from testkit.nsys_writer import write_nsys
from testkit.scenario import Device, Kernel, MpiCall, Process, Scenario

US = 1_000
NAMES = [f"kernel_{i}" for i in range(24)]


def _add_rank(sc: Scenario, rank: int, device: int, n_kernels: int, n_mpi: int) -> None:
    """One rank's process: kernels back to back in iterations, then an NCCL all-reduce kernel and an
    MPI_Allreduce per iteration (rank 3 computes 1.3x as long: the straggler)."""
    rng = random.Random(rank)
    pid = 1000 + rank
    sc.processes.append(Process(pid, "app", {pid: "main"}, rank=rank))
    per_iter = max(1, n_kernels // n_mpi)
    t = 1_000_000_000
    slow = 1.3 if rank == 3 else 1.0
    for _ in range(n_mpi):
        for _ in range(per_iter):
            d = int(rng.uniform(20, 60) * US * slow)
            sc.kernels.append(Kernel(pid, device, 7, t, t + d, rng.choice(NAMES)))
            t += d + 2 * US
        sc.kernels.append(Kernel(pid, device, 7, t, t + 30 * US, "ncclDevKernel_AllReduce_Sum_f32_RING_LL"))
        t += 32 * US
        sc.mpi_calls.append(MpiCall(pid, pid, t, t + 50 * US, "MPI_Allreduce", "collective", 8, rank))
        t += 60 * US


def make_rank(args: tuple[Path, int, int, int, int]) -> Path:
    """One export holding `per_export` ranks (processes) from `first` on: one file per rank when 1."""
    folder, first, per_export, n_kernels, n_mpi = args
    sc = Scenario(name=f"ranks{first}", description="bench", devices=[Device(id=d) for d in range(per_export)],
                  processes=[])
    for local in range(per_export):
        _add_rank(sc, first + local, local, n_kernels, n_mpi)
    return write_nsys(sc, folder / f"rank_{first // per_export:04d}.db")


CHILD = """
import json, resource, sys, time
from pathlib import Path
from pa.ranks import cross_rank, summarize_ranks
t = time.perf_counter()
rs = summarize_ranks([Path(sys.argv[1])], workers=int(sys.argv[2]))
cr = cross_rank(rs)
dt = time.perf_counter() - t
print(json.dumps({"seconds": dt, "ranks": len(rs.ranks), "straggler": cr.straggler_rank,
                  "gpu_late": cr.gpu_straggler_rank,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main() -> None:
    """Generate, time, report."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=256)
    ap.add_argument("--kernels", type=int, default=20_000)
    ap.add_argument("--mpi", type=int, default=5_000)
    ap.add_argument("--per-export", type=int, default=1,
                    help="ranks (processes) per export: 8 writes RANKS/8 files of 8 processes each, as "
                         "`nsys profile torchrun --nproc_per_node=8` per node does; each layout is timed "
                         "against one file per rank, measured in the same run")
    ap.add_argument("--keep", type=Path, default=None)
    a = ap.parse_args()
    root = a.keep or Path(tempfile.mkdtemp(prefix="pa_ranks_"))
    layouts = sorted({1, a.per_export})
    seconds: dict[int, float] = {}
    for per_export in layouts:
        folder = root / f"per_export_{per_export}"
        folder.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        with ProcessPoolExecutor() as pool:
            list(pool.map(make_rank, [(folder, first, per_export, a.kernels, a.mpi)
                                      for first in range(0, a.ranks, per_export)]))
        print(f"generated {a.ranks} ranks in {a.ranks // per_export} files of {per_export} process(es) in "
              f"{time.perf_counter() - t:.1f} s under {folder}")
        for workers in (1, 2):
            out = subprocess.run([sys.executable, "-c", CHILD, str(folder), str(workers)], check=True,
                                 capture_output=True, text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            ok = "ok" if r["peak_mb"] <= 300 else "OVER 300 MB"
            seconds[per_export] = r["seconds"]
            print(f"  workers={workers}: {r['seconds']:.1f} s total, {r['seconds'] / r['ranks']:.3f} s per rank "
                  f"({r['ranks']} ranks), parent peak {r['peak_mb']:.0f} MB ({ok}), MPI straggler rank "
                  f"{r['straggler']}, GPU late rank {r['gpu_late']}")
    if len(layouts) > 1:
        print(f"{a.per_export} ranks per export / one file per rank (2 workers): "
              f"{seconds[a.per_export] / seconds[1]:.2f}x the time")


if __name__ == "__main__":
    main()
