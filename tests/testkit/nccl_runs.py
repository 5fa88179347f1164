"""Generated multi-process training runs with NCCL/RCCL collectives, ONE profile file per run (issue 28).

    run = write_nccl_run(tmp_path / "dp.sqlite", "dp_straggler")      # nsys; rocpd for rccl_* kinds
    run.truth.straggler_pid, run.truth.collective_wait_ns[pid], ...

Unlike `testkit.rank_sets` (one file per MPI rank), every run here is one export holding several
GPU-driving processes: each rank is a process with its own pid, its own device (rank r drives device
r), its own streams (numbered 10·(r+1) + s, so no two processes share a stream number) and threads (a
main thread that issues every kernel through a launch call with a correlation id, and an idle NCCL
proxy thread). Ranks are the processes in ascending pid order unless `mpi_ranks=True`, which hands the
pids out in a shuffled order and records MPI metadata (one short MPI_Comm_rank-like call per process,
MPI_RANKS in Nsight Systems) so that only the metadata gives the rank order.

Collectives behave as NCCL's do: every rank's collective kernel starts when that rank reaches it and
all of them end together, at the latest start + the transfer time; a rank that arrives early waits
inside its kernel. Arrivals carry a per-rank jitter of JITTER_NS · ((rank + instance) mod ranks), so
no two ranks ever start one collective at the same instant and, on balanced runs, every rank arrives
last equally often.

Kinds (`KINDS`):

- `dp_straggler` (4 ranks): per iteration a forward and a backward GEMM kernel, then an
  `ncclDevKernel_AllReduce_Sum_bf16_RING_LL` on the same stream, then the optimizer step. Rank
  `straggler` (default 2) computes SLOW × longer, starts its all-reduce last at every iteration, and
  the others' all-reduce kernels last longer by their wait.
- `dp_balanced`: the same with equal compute (control).
- `overlapped` (2 ranks): the all-reduce runs on a second stream beside the backward kernels (quiet).
- `exposed` (2 ranks): the all-reduce runs after the backward kernels on the same stream, with
  nothing beside it (exposed communication).
- `tiny_allreduce` (2 ranks by default, 2–4): TINY_PER_ITER tiny all-reduces (10–20 µs) per iteration
  after the compute, exposed (latency-bound).
- `bucketed`: the same gradient volume in BUCKETS large all-reduces (control).
- `pipeline` (4 ranks): 4 pipeline stages, MICRO_BATCHES micro-batches flow stage 0 → 3 through
  `ncclDevKernel_SendRecv` kernels. A stage posts its receive as soon as it is free, so stage k's
  recv kernel starts before stage k−1's send and waits in it; later stages have longer fill bubbles
  (no compute from the iteration start to their first micro-batch) and stage 0 the longest drain.
- `rccl_dp_straggler`: `dp_straggler` on AMD GPUs with RCCL's kernel name, written as a rocpd database
  (rocprofv3 layout) holding the four processes.

Every kind can be written in either format (`fmt=`); NVIDIA names go to Nsight Systems files, RCCL
names to rocpd files (`vendor=` overrides). Sizes stay small (a few thousand rows, well under a second).

The ground truth (`NcclTruth`) is computed from the construction (the kernels the generator made),
never from pa.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from testkit.nsys_writer import write_nsys
from testkit.scenario import ApiCall, Device, Expected, Kernel, MpiCall, Process, Scenario

KINDS = ("dp_straggler", "dp_balanced", "overlapped", "exposed", "tiny_allreduce", "bucketed", "pipeline",
         "rccl_dp_straggler")

T0 = 1_000_000_000
US = 1_000
MS = 1_000_000

PIDS = (41017, 41023, 41031, 41042)      # ascending: without MPI metadata, rank r is PIDS[r]
MPI_SHUFFLE = (2, 0, 3, 1)               # mpi_ranks=True: rank r is process PIDS[MPI_SHUFFLE[r]]
JITTER_NS = 2 * US
LAUNCH_LEAD_NS = 12 * US                 # a launch call starts this long before its kernel (or later if busy)
LAUNCH_NS = 4 * US                       # duration of one launch call
GAP_NS = 2 * US                          # between dependent kernels on one stream

# data parallel (dp_*, rccl_dp_straggler)
DP_ITERS = 16
FWD_NS = 400 * US
BWD_NS = 800 * US
SLOW = 1.5                               # the straggler's compute factor
ALLREDUCE_XFER_NS = 300 * US             # all-reduce transfer time (after the last rank arrives)
OPT_NS = 60 * US                         # optimizer step after the all-reduce
# overlapped / exposed
OX_ITERS = 12
OX_LAYERS = 4
OX_LAYER_NS = 300 * US
OX_XFER_NS = 600 * US
OX_OVERLAP_START_NS = 150 * US           # overlapped: the all-reduce starts this long into the backward pass
# tiny_allreduce / bucketed
TINY_ITERS = 3
TINY_COMPUTE_NS = 2 * MS
TINY_PER_ITER = 200
TINY_GAP_NS = 3 * US
BUCKETS = 4
BUCKET_XFER_NS = 450 * US
SMALL_COLLECTIVE_NS = 50 * US            # ground truth: a collective kernel shorter than this is "small"
# pipeline
PP_ITERS = 2
MICRO_BATCHES = 8
PP_FWD_NS = 300 * US
PP_XFER_NS = 40 * US

GRID = (4096, 1, 1)                      # compute kernels fill the device: the planted cause is the only one
BLOCK = (256, 1, 1)
NCCL_GRID = (16, 1, 1)                   # NCCL: one block per channel
NCCL_BLOCK = (512, 1, 1)

NAMES = {
    "nvidia": {
        "fwd": "sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel",
        "bwd": "sm80_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel",
        "opt": "void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float>(long, int*, "
               "TensorListMetadata<4>, AdamFunctor<float>, float)",
        "allreduce": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)",
        "sendrecv": "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)",
    },
    "amd": {
        "fwd": "Cijk_Alik_Bljk_BBS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_GRVW8_K1_WG32_8_1",
        "bwd": "Cijk_Ailk_Bjlk_BBS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_GRVW8_K1_WG32_8_1",
        "opt": "void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float>(long, int*, "
               "TensorListMetadata<4>, AdamFunctor<float>, float)",
        "allreduce": "ncclKernel_AllReduce_RING_LL_Sum_bf16(ncclDevComm*, unsigned long, ncclWork*)",
        "sendrecv": "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
    },
}
NVIDIA_DEVICE = {"name": "NVIDIA A100-SXM4-80GB"}
AMD_DEVICE = {"name": "AMD Instinct MI250X", "sm_count": 110, "clock_hz": 1_700_000_000, "threads_per_warp": 64,
              "max_warps_per_sm": 32, "max_shared_per_sm": 65536, "max_shared_per_block": 65536,
              "memory_bandwidth_bps": 1_638_400_000_000, "gfx_target": "gfx90a"}


def is_comm(name: str) -> bool:
    """A collective-communication kernel (NCCL on NVIDIA, RCCL on AMD, which keeps NCCL's names)."""
    return name.startswith(("nccl", "rccl"))


def short_name(name: str) -> str:
    """The kernel name up to its argument list (what matching by collective type groups on)."""
    return name.split("(")[0]


# --------------------------------------------------------------------------------------------------
# Ground truth


@dataclass
class NcclTruth:
    """What a run plants, computed from the kernels the generator built (dicts keyed by pid).

    Matching as issue 28 defines it: the k-th kernel of one collective type (short name) on each rank is
    the same collective; instances = the smallest count over the ranks; a rank's wait at one instance =
    latest start − its start. Exposed communication = |union of the rank's NCCL kernels − union of its
    compute kernels| on its device. A collective is small when its kernel is shorter than
    SMALL_COLLECTIVE_NS.
    """

    kind: str
    vendor: str                                   # nvidia or amd
    pids: list[int]                               # in rank order
    device_of: dict[int, int]                     # pid -> device number its kernels carry
    streams_of: dict[int, list[int]]              # pid -> stream numbers it uses
    mpi_ranks: bool                               # rank numbers recorded as MPI metadata
    straggler_pid: int | None                     # the planted late rank (None: none planted)
    span_ns: int                                  # first start to last end over every event
    nccl_time_ns: dict[int, int]                  # Σ NCCL/RCCL kernel durations
    nccl_kernels: dict[int, int]                  # number of NCCL/RCCL kernels
    compute_time_ns: dict[int, int]               # Σ compute kernel durations
    exposed_comm_ns: dict[int, int]
    collective_wait_ns: dict[int, int]            # Σ over matched instances of latest start − own start
    last_arrivals: dict[int, int]                 # matched instances at which this rank started last
    collective_types: list[str]                   # short names of the collective kernels
    collective_instances: int                     # matched instances, summed over types
    small_collectives: dict[int, int]
    straggler_lead_ns: int = 0                    # Σ over instances of straggler start − next-latest start
    bubble_ns: dict[int, int] = field(default_factory=dict)   # pipeline: fill + drain bubbles per stage
    fill_bubble_ns: dict[int, int] = field(default_factory=dict)   # pipeline: iteration start -> first compute
    p2p_wait_ns: dict[int, int] = field(default_factory=dict)  # pipeline: Σ over its SendRecv kernels of
    #                                                             partner's start − own start, when positive
    notes: str = ""

    @property
    def rank_count(self) -> int:
        return len(self.pids)

    @property
    def straggler_rank(self) -> int | None:
        return None if self.straggler_pid is None else self.pids.index(self.straggler_pid)

    @property
    def straggler_lead_pct(self) -> float:
        """The planted straggler's lead over the next-latest rank, summed over instances, % of the span:
        an upper bound on what making the straggler as fast as the next-latest rank recovers."""
        return 100.0 * self.straggler_lead_ns / self.span_ns if self.span_ns else 0.0

    def rank_of(self, pid: int) -> int:
        return self.pids.index(pid)


@dataclass
class NcclRun:
    """A written run: the file, the scenario behind it and its ground truth."""

    path: Path
    fmt: str
    scenario: Scenario
    truth: NcclTruth


def union_ns(intervals: Iterable[tuple[int, int]]) -> int:
    """Total length of the union of half-open [start, end) intervals."""
    total = 0
    cur_s = cur_e = None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def match_collectives(starts: dict[int, dict[str, list[int]]], pids: Sequence[int]
                      ) -> tuple[dict[int, int], dict[int, int], int, list[list[int]]]:
    """(wait per pid, last arrivals per pid, matched instances, per-instance start lists in rank order)
    from each pid's kernel starts per collective type (k-th kernel of a type on each rank matched)."""
    wait = dict.fromkeys(pids, 0)
    last = dict.fromkeys(pids, 0)
    instances: list[list[int]] = []
    types = sorted({t for p in pids for t in starts[p]})
    for t in types:
        lists = [sorted(starts[p].get(t, [])) for p in pids]
        n = min(len(x) for x in lists)
        for k in range(n):
            row = [x[k] for x in lists]
            latest = max(row)
            for p, s in zip(pids, row, strict=True):
                wait[p] += latest - s
            last[pids[row.index(latest)]] += 1
            instances.append(row)
    return wait, last, len(instances), instances


# --------------------------------------------------------------------------------------------------
# Building a run


class _Builder:
    """One scenario with a rank per process; launch calls issued on each rank's main thread."""

    def __init__(self, kind: str, ranks: int, vendor: str, mpi_ranks: bool) -> None:
        if not 2 <= ranks <= len(PIDS):
            raise ValueError(f"{kind}: ranks must be 2..{len(PIDS)}")
        self.kind, self.vendor, self.ranks = kind, vendor, ranks
        if mpi_ranks:
            order = [i for i in MPI_SHUFFLE if i < ranks]
            self.pids = [PIDS[i] for i in order]
        else:
            self.pids = list(PIDS[:ranks])
        self.mpi_ranks = mpi_ranks
        dev_kw = AMD_DEVICE if vendor == "amd" else NVIDIA_DEVICE
        devices = [Device(id=r, bus_location=f"0000:{0x11 + 0x20 * r:02x}:00.0", **dev_kw) for r in range(ranks)]
        procs = [Process(pid, "python", {pid: "python", pid + 3: "ncclProxy"},
                         rank=r if mpi_ranks else None) for r, pid in enumerate(self.pids)]
        self.sc = Scenario(name=f"nccl-{kind}", description=f"{kind}: {ranks} processes, one GPU each",
                           devices=devices, processes=procs, host_name="gpu-node07")
        self.names = NAMES[vendor]
        self.host = dict.fromkeys(self.pids, T0)   # each main thread's next free instant

    def stream(self, rank: int, s: int = 0) -> int:
        return 10 * (rank + 1) + s

    def kernel(self, rank: int, key: str, start: int, end: int, stream: int = 0) -> Kernel:
        """A kernel on rank `rank`'s device (its launch call is added by `launches`)."""
        comm = key in ("allreduce", "sendrecv")
        k = Kernel(self.pids[rank], rank, self.stream(rank, stream), start, end, self.names[key],
                   grid=NCCL_GRID if comm else GRID, block=NCCL_BLOCK if comm else BLOCK,
                   registers_per_thread=96 if comm else 128)
        self.sc.kernels.append(k)
        return k

    def launches(self) -> None:
        """Give every kernel its launch call (cudaLaunchKernel / hipLaunchKernel) on its rank's main thread.

        Calls run in kernel start order, LAUNCH_LEAD_NS before the kernel or as soon as the thread is
        free; correlation ids count up in kernel start order across the file.
        """
        self.sc.kernels.sort(key=lambda k: (k.start, k.pid, k.stream))
        for corr, k in enumerate(self.sc.kernels, start=1):
            call_start = max(self.host[k.pid], k.start - LAUNCH_LEAD_NS)
            if call_start > k.start:
                raise AssertionError(f"{self.kind}: process {k.pid} cannot launch a kernel at {k.start} (host busy)")
            k.correlation_id = corr
            self.sc.api_calls.append(ApiCall(k.pid, k.pid, call_start, call_start + LAUNCH_NS, "launch", corr))
            self.host[k.pid] = call_start + LAUNCH_NS + US
        self.sc.api_calls.sort(key=lambda c: (c.start, c.pid))

    def collective(self, key: str, starts: dict[int, int], xfer: int, stream: int = 0) -> int:
        """One collective: each rank's kernel from its own start to latest start + xfer; returns the end."""
        end = max(starts.values()) + xfer
        for r, s in starts.items():
            self.kernel(r, key, s, end, stream)
        return end

    def mpi_metadata(self) -> None:
        """One short MPI call per process, so that the export records every process's MPI rank."""
        for r, pid in enumerate(self.pids):
            s = T0 - 200 * US + r * 3 * US
            self.sc.mpi_calls.append(MpiCall(pid, pid, s, s + 20 * US, "MPI_Comm_rank", "other", 0, r))
            self.host[pid] = max(self.host[pid], s + 21 * US)

    def truth(self, straggler_rank: int | None, notes: str, pipe: dict[str, dict[int, int]] | None = None
              ) -> NcclTruth:
        sc = self.sc
        span = sc.span()
        comm = {p: [(k.start, k.end) for k in sc.kernels if k.pid == p and is_comm(k.name)] for p in self.pids}
        comp = {p: [(k.start, k.end) for k in sc.kernels if k.pid == p and not is_comm(k.name)] for p in self.pids}
        starts: dict[int, dict[str, list[int]]] = {p: {} for p in self.pids}
        for k in sc.kernels:
            if is_comm(k.name):
                starts[k.pid].setdefault(short_name(k.name), []).append(k.start)
        wait, last, n_inst, instances = match_collectives(starts, self.pids)
        lead = 0
        if straggler_rank is not None:
            for row in instances:
                others = [s for i, s in enumerate(row) if i != straggler_rank]
                lead += max(0, row[straggler_rank] - max(others))
        return NcclTruth(
            kind=self.kind, vendor=self.vendor, pids=list(self.pids),
            device_of={p: r for r, p in enumerate(self.pids)},
            streams_of={p: sorted({k.stream for k in sc.kernels if k.pid == p}) for p in self.pids},
            mpi_ranks=self.mpi_ranks,
            straggler_pid=None if straggler_rank is None else self.pids[straggler_rank],
            span_ns=span[1] - span[0],
            nccl_time_ns={p: sum(e - s for s, e in comm[p]) for p in self.pids},
            nccl_kernels={p: len(comm[p]) for p in self.pids},
            compute_time_ns={p: sum(e - s for s, e in comp[p]) for p in self.pids},
            exposed_comm_ns={p: union_ns(comm[p] + comp[p]) - union_ns(comp[p]) for p in self.pids},
            collective_wait_ns=wait, last_arrivals=last,
            collective_types=sorted({t for p in self.pids for t in starts[p]}),
            collective_instances=n_inst,
            small_collectives={p: sum(1 for s, e in comm[p] if e - s < SMALL_COLLECTIVE_NS) for p in self.pids},
            straggler_lead_ns=lead, notes=notes, **(pipe or {}))


def _jitter(rank: int, instance: int, ranks: int) -> int:
    return JITTER_NS * ((rank + instance) % ranks)


def _dp(b: _Builder, straggler: int | None, iters: int) -> str:
    t = T0 + LAUNCH_LEAD_NS
    for it in range(iters):
        arrive = {}
        for r in range(b.ranks):
            slow = SLOW if r == straggler else 1.0
            j = _jitter(r, it, b.ranks)
            fwd = b.kernel(r, "fwd", t, t + int(FWD_NS * slow) + j)
            bwd = b.kernel(r, "bwd", fwd.end + GAP_NS, fwd.end + GAP_NS + int(BWD_NS * slow))
            arrive[r] = bwd.end + GAP_NS
        end = b.collective("allreduce", arrive, ALLREDUCE_XFER_NS)
        for r in range(b.ranks):
            b.kernel(r, "opt", end + GAP_NS, end + GAP_NS + OPT_NS)
        t = end + GAP_NS + OPT_NS + GAP_NS
    if straggler is None:
        return (f"{b.ranks} balanced data-parallel ranks: compute {FWD_NS + BWD_NS} ns (+ rotating jitter) per "
                f"iteration, then an all-reduce on the same stream; no straggler")
    return (f"rank {straggler} computes {SLOW}x longer ({int((FWD_NS + BWD_NS) * SLOW)} vs {FWD_NS + BWD_NS} ns) "
            f"before each of {iters} all-reduces and arrives last at every one; the others wait inside their "
            f"all-reduce kernels")


def _overlap(b: _Builder, exposed: bool, iters: int) -> str:
    t = T0 + LAUNCH_LEAD_NS
    for it in range(iters):
        ends = {}
        arrive = {}
        for r in range(b.ranks):
            cur = t
            for layer in range(OX_LAYERS):
                k = b.kernel(r, "bwd", cur, cur + OX_LAYER_NS + (_jitter(r, it, b.ranks) if layer == 0 else 0))
                cur = k.end + GAP_NS
                if not exposed and layer == 0:
                    # gradient bucket of the last layer reduced on the comm stream while backward goes on
                    arrive[r] = t + OX_OVERLAP_START_NS + _jitter(r, it, b.ranks)
            ends[r] = cur
            if exposed:
                arrive[r] = cur
        xfer = OX_XFER_NS
        end = b.collective("allreduce", arrive, xfer, stream=0 if exposed else 1)
        if not exposed:
            assert end <= min(ends.values()), "overlapped all-reduce must end before the backward pass"
            end = max(ends.values())
        for r in range(b.ranks):
            b.kernel(r, "opt", end + GAP_NS, end + GAP_NS + OPT_NS)
        t = end + GAP_NS + OPT_NS + GAP_NS
    if exposed:
        return (f"the all-reduce ({OX_XFER_NS} ns) runs after {OX_LAYERS} backward kernels on the same stream "
                f"with nothing beside it: exposed communication")
    return (f"the all-reduce ({OX_XFER_NS} ns) runs on a second stream while the backward kernels run "
            f"(only the {GAP_NS} ns gaps between backward kernels are not covered)")


def _tiny(b: _Builder, bucketed: bool, iters: int) -> str:
    t = T0 + LAUNCH_LEAD_NS
    inst = 0
    for _ in range(iters):
        cur = {}
        for r in range(b.ranks):
            k = b.kernel(r, "bwd", t, t + TINY_COMPUTE_NS)
            cur[r] = k.end + GAP_NS
        n = BUCKETS if bucketed else TINY_PER_ITER
        for i in range(n):
            xfer = BUCKET_XFER_NS if bucketed else (10 + (7 * i) % 9) * US
            arrive = {r: cur[r] + (_jitter(r, inst, b.ranks) // 4) for r in range(b.ranks)}
            end = b.collective("allreduce", arrive, xfer)
            inst += 1
            cur = dict.fromkeys(range(b.ranks), end + TINY_GAP_NS)
        end = max(cur.values())
        for r in range(b.ranks):
            b.kernel(r, "opt", end, end + OPT_NS)
        t = end + OPT_NS + GAP_NS
    if bucketed:
        return f"gradients reduced in {BUCKETS} large all-reduces ({BUCKET_XFER_NS} ns each) per iteration"
    return (f"{TINY_PER_ITER} tiny all-reduces (10-20 us kernels, {TINY_GAP_NS} ns apart) per iteration after the "
            f"compute, exposed: latency-bound")


def _pipeline(b: _Builder, iters: int) -> tuple[str, dict[str, dict[int, int]]]:
    stages = b.ranks
    t = T0 + LAUNCH_LEAD_NS
    bubbles = dict.fromkeys(b.pids, 0)
    fill = dict.fromkeys(b.pids, 0)
    p2p_wait = dict.fromkeys(b.pids, 0)
    for it in range(iters):
        free = dict.fromkeys(range(stages), t)
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        ready = {}   # stage -> when its activation for the current micro-batch has arrived (recv end)
        for m in range(MICRO_BATCHES):
            for k in range(stages):
                begin = ready[k] if k > 0 else free[k]
                fwd = b.kernel(k, "fwd", begin + GAP_NS, begin + GAP_NS + PP_FWD_NS + _jitter(k, m + it, stages))
                first.setdefault(k, fwd.start)
                last[k] = fwd.end
                free[k] = fwd.end + GAP_NS
                if k + 1 < stages:
                    # the next stage posted its receive as soon as it was free: it starts first and waits
                    send_start = free[k]
                    recv_start = free[k + 1]
                    end = max(send_start, recv_start) + PP_XFER_NS
                    b.kernel(k, "sendrecv", send_start, end)
                    b.kernel(k + 1, "sendrecv", recv_start, end)
                    free[k] = free[k + 1] = end + GAP_NS
                    ready[k + 1] = end
                    p2p_wait[b.pids[k]] += max(0, recv_start - send_start)
                    p2p_wait[b.pids[k + 1]] += max(0, send_start - recv_start)
        stop = max(free.values())
        for k in range(stages):
            bubbles[b.pids[k]] += (first[k] - t) + (stop - last[k])
            fill[b.pids[k]] += first[k] - t
        t = stop + GAP_NS
    return (f"{stages} pipeline stages, {MICRO_BATCHES} micro-batches per iteration ({PP_FWD_NS} ns forward each) "
            f"flowing stage 0 -> {stages - 1} through ncclDevKernel_SendRecv; stage k posts its receive when "
            f"free, so its recv kernel starts before stage k-1's send and waits; later stages have longer "
            f"fill bubbles"), {"bubble_ns": bubbles, "fill_bubble_ns": fill, "p2p_wait_ns": p2p_wait}


def nccl_run(kind: str = "dp_straggler", ranks: int | None = None, straggler: int = 2, iters: int | None = None,
             vendor: str | None = None, mpi_ranks: bool = False) -> tuple[Scenario, NcclTruth]:
    """The scenario of `kind` (module docs) and its ground truth."""
    if kind not in KINDS:
        raise ValueError(f"unknown NCCL run kind {kind!r}; choose from {', '.join(KINDS)}")
    vendor = vendor or ("amd" if kind.startswith("rccl_") else "nvidia")
    default_ranks = {"overlapped": 2, "exposed": 2, "tiny_allreduce": 2, "bucketed": 2}.get(kind, 4)
    n = ranks or default_ranks
    b = _Builder(kind, n, vendor, mpi_ranks)
    if mpi_ranks:
        b.mpi_metadata()
    pipe = None
    planted: int | None = None
    bottlenecks: list[str] = []
    if kind in ("dp_straggler", "rccl_dp_straggler", "dp_balanced"):
        planted = straggler if kind != "dp_balanced" else None
        if planted is not None and not 0 <= planted < n:
            raise ValueError(f"straggler {planted} is not a rank of {n}")
        notes = _dp(b, planted, iters or DP_ITERS)
        bottlenecks = ["communication"] if planted is not None else []
    elif kind in ("overlapped", "exposed"):
        notes = _overlap(b, kind == "exposed", iters or OX_ITERS)
        bottlenecks = ["communication"] if kind == "exposed" else []
    elif kind in ("tiny_allreduce", "bucketed"):
        notes = _tiny(b, kind == "bucketed", iters or TINY_ITERS)
        bottlenecks = ["communication"] if kind == "tiny_allreduce" else []
    else:
        notes, pipe = _pipeline(b, iters or PP_ITERS)
        bottlenecks = ["communication"]
    b.launches()
    b.sc.expected = Expected(bottlenecks=bottlenecks, notes=notes)
    return b.sc, b.truth(planted, notes, pipe)


def write_nccl_run(path: Path, kind: str = "dp_straggler", fmt: str | None = None, **params: object) -> NcclRun:
    """Write the run of `kind` to `path` (one file, every process in it) and return it with its ground truth.

    `fmt`: "nsys" or "rocpd"; by default rocpd for the rccl_* kinds, nsys otherwise. `params` go to `nccl_run`.
    """
    fmt = fmt or ("rocpd" if kind.startswith("rccl_") else "nsys")
    if fmt not in ("nsys", "rocpd"):
        raise ValueError(f"unknown format {fmt!r}")
    if fmt == "rocpd" and params.get("mpi_ranks"):
        # rocprofv3 records no MPI at all, and rocprof-sys records MPI calls but no rank table
        raise ValueError("a rocpd database records no MPI rank: mpi_ranks=True needs fmt='nsys'")
    if fmt == "rocpd":
        params.setdefault("vendor", "amd")
    sc, truth = nccl_run(kind, **params)  # type: ignore[arg-type]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "nsys":
        write_nsys(sc, path)
    else:
        from testkit.rocpd_writer import write_rocpd  # needs the writers' DDL
        write_rocpd(sc, path)
    return NcclRun(path, fmt, sc, truth)


__all__ = ["KINDS", "NcclRun", "NcclTruth", "is_comm", "match_collectives", "nccl_run", "union_ns",
           "write_nccl_run"]
