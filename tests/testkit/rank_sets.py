"""Generated multi-rank runs with a planted cause, shared by the tests, rule cases and benchmarks.

    paths = write_rank_set(folder, "compute_straggler", ranks=8, straggler=5)

Kinds (each rank: one GPU, one process with its MPI rank, "init" and "solve" NVTX ranges so phases
line up by name across ranks; per iteration a kernel, then collectives):

- `compute_straggler`: the straggler's solver kernel takes SLOW_FACTOR × as long, so it arrives
  last at every MPI_Allreduce and the others wait (compute-side imbalance).
- `comm_straggler`: every rank computes the same; the straggler alone spends COMM_EXTRA_NS per
  iteration in a blocking MPI_Send before the collective (communication-side imbalance).
- `latency_bound`: balanced ranks that exchange SMALL_MESSAGES tiny (8-byte) MPI_Allreduce per
  iteration; MPI time is a large share of the run but nobody waits for anybody (mpi_latency).

Arrivals carry a small per-rank jitter (JITTER_NS × rank) so ties never decide a role.
"""

from __future__ import annotations

from pathlib import Path

from testkit.nsys_writer import write_nsys
from testkit.scenario import Device, Kernel, Marker, MpiCall, Process, Scenario

T0 = 1_000_000_000
US = 1_000
MS = 1_000_000
KERNEL_NS = 1 * MS
SLOW_FACTOR = 2.0
COMM_EXTRA_NS = 600 * US
SMALL_MESSAGES = 20
SMALL_MESSAGE_NS = 40 * US
JITTER_NS = 2 * US
INIT_NS = 5 * MS
GRID = (4096, 1, 1)      # fills the device: the planted cause is the only one
BLOCK = (256, 1, 1)
KINDS = ("compute_straggler", "comm_straggler", "latency_bound")


def rank_scenarios(kind: str = "compute_straggler", ranks: int = 8, straggler: int = 5,
                   iters: int = 40) -> list[Scenario]:
    """One Scenario per rank (index = rank) with the planted behaviour of `kind` (module docs)."""
    if kind not in KINDS:
        raise ValueError(f"unknown rank-set kind {kind!r}; choose from {', '.join(KINDS)}")
    scens = []
    for r in range(ranks):
        pid = 100 + r
        sc = Scenario(name=f"{kind}-rank{r}", description=f"rank {r} of a {kind} run",
                      devices=[Device(id=0)], processes=[Process(pid, "app", {pid: "main"}, rank=r)])
        sc.kernels.append(Kernel(pid, 0, 7, T0 + 1 * MS, T0 + 4 * MS, "init_kernel", grid=GRID, block=BLOCK))
        scens.append(sc)
    t = T0 + INIT_NS
    for _ in range(iters):
        arrive = {}
        for r, sc in enumerate(scens):
            pid = 100 + r
            dur = KERNEL_NS + r * JITTER_NS
            if kind == "compute_straggler" and r == straggler:
                dur = int(KERNEL_NS * SLOW_FACTOR)
            sc.kernels.append(Kernel(pid, 0, 7, t, t + dur, "solve_kernel", grid=GRID, block=BLOCK))
            cur = t + dur + 5 * US
            if kind == "comm_straggler" and r == straggler:
                sc.mpi_calls.append(MpiCall(pid, pid, cur, cur + COMM_EXTRA_NS, "MPI_Send", "p2p", 1 << 20, r))
                cur += COMM_EXTRA_NS + 5 * US
            arrive[r] = cur
        if kind == "latency_bound":
            cur_all = max(arrive.values())
            for _ in range(SMALL_MESSAGES):
                for r, sc in enumerate(scens):
                    s = cur_all + r * 100   # near-simultaneous arrivals: latency, not imbalance
                    sc.mpi_calls.append(MpiCall(100 + r, 100 + r, s, cur_all + SMALL_MESSAGE_NS,
                                                "MPI_Allreduce", "collective", 8, r))
                cur_all += SMALL_MESSAGE_NS + 2 * US
            t = cur_all + 20 * US
            continue
        done = max(arrive.values()) + 50 * US
        for r, sc in enumerate(scens):
            sc.mpi_calls.append(MpiCall(100 + r, 100 + r, arrive[r], done, "MPI_Allreduce", "collective",
                                        8 << 10, r))
        t = done + 20 * US
    for r, sc in enumerate(scens):
        pid = 100 + r
        sc.markers += [Marker(pid, pid, T0, T0 + INIT_NS, "init"), Marker(pid, pid, T0 + INIT_NS, t, "solve")]
    return scens


def write_rank_set(folder: Path, kind: str = "compute_straggler", ranks: int = 8, straggler: int = 5,
                   iters: int = 40, pattern: str = "rank_{rank}.db") -> list[Path]:
    """Write the rank files of `rank_scenarios(...)` into `folder`; returns them in rank order."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for r, sc in enumerate(rank_scenarios(kind, ranks, straggler, iters)):
        path = folder / pattern.format(rank=r)
        if path.exists():
            path.unlink()
        out.append(write_nsys(sc, path))
    return out
