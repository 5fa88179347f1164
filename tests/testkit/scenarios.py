"""Planted scenarios: small synthetic profiles whose bottleneck is known, for tests and benchmarks.

Why: the rule engine's accuracy can only be measured against ground truth. Each builder plants one
behaviour (or two of known sizes) and records it in `expected.bottlenecks`, largest first, using the
bottleneck types compute_bound, memory_bound, mpi_latency, mpi_imbalance, cpu_launch_overhead,
synchronization, io, other (memory_bound covers host<->device transfer problems; other covers GPU
idle caused by host-side work). An empty list is a control: nothing above "low" impact may appear.

Builders are deterministic (seeded `random.Random` where randomness is used) and small (hundreds to
a few thousand events) so tests stay fast. The GPU side is physically consistent: work on one
(device, stream) never overlaps, a kernel never starts before the call that launched it, and the
calls of one host thread never overlap (tests check this).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from testkit.scenario import (
    ApiCall,
    ApiKind,
    Copy,
    Device,
    Direction,
    Expected,
    Kernel,
    Marker,
    MarkerKind,
    MemKind,
    Memset,
    MpiCall,
    MpiKind,
    Overhead,
    Process,
    Scenario,
    Sync,
    SyncKind,
)

US = 1_000
MS = 1_000_000
PID = 4242
T0 = 1_000_000_000          # capture starts 1 s after the session clock origin
LAUNCH_LATENCY = 3 * US     # API end -> kernel start when the queue is empty
MIB = 1 << 20

_SYNC_OF: dict[ApiKind, SyncKind] = {"device_sync": "context", "stream_sync": "stream",
                                     "event_sync": "event"}

K_AXPY = "void axpy_kernel<float>(int, float, const float*, float*)"
K_SCALE = "void scale_kernel<double>(int, double, double*)"
K_RESET = "reset_flags(int*, int)"
K_GEMM = "void gemm_tn_kernel<128, 128, 8>(int, int, int, const float*, const float*, float*)"
K_STENCIL = "void stencil3d_kernel<double, 4>(const double*, double*, int, int, int)"
K_REDUCE = "void reduce_sum_kernel<float, 256>(const float*, float*, int)"
K_ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
K_SPMV = "void spmv_csr_kernel<double>(int, const int*, const int*, const double*, const double*, double*)"


class _Builder:
    """Accumulates events of one scenario and hands out correlation ids and stream queue times."""

    def __init__(self, name: str, description: str, devices: list[Device] | None = None,
                 processes: list[Process] | None = None) -> None:
        self.s = Scenario(
            name=name, description=description, devices=devices or [Device(id=0)],
            processes=processes or [Process(PID, "solver", {PID: "solver"})])
        self._corr = 0
        self._free: dict[tuple[int, int], int] = {}

    def corr(self) -> int:
        """A fresh correlation id."""
        self._corr += 1
        return self._corr

    def _slot(self, device: int, stream: int, earliest: int, dur: int) -> tuple[int, int]:
        """(start, end) of GPU work queued on (device, stream) that may start at `earliest`."""
        start = max(earliest, self._free.get((device, stream), 0))
        self._free[(device, stream)] = start + dur
        return start, start + dur

    def api(self, t: int, dur: int, kind: ApiKind, *, pid: int = PID, tid: int | None = None,
            name: str | None = None, corr: int = 0) -> int:
        """A host call with no GPU work; returns its end."""
        self.s.api_calls.append(ApiCall(pid, pid if tid is None else tid, t, t + dur, kind, corr, name))
        return t + dur

    def launch(self, t: int, api_dur: int, k_dur: int, name: str, *, pid: int = PID,
               tid: int | None = None, device: int = 0, stream: int = 7,
               grid: tuple[int, int, int] = (1024, 1, 1), block: tuple[int, int, int] = (256, 1, 1),
               kind: ApiKind = "launch", smem: int = 0) -> tuple[int, int]:
        """A cudaLaunchKernel at `t` and the kernel it queues; returns (API end, kernel end)."""
        c = self.corr()
        end = self.api(t, api_dur, kind, pid=pid, tid=tid, corr=c)
        ks, ke = self._slot(device, stream, end + LAUNCH_LATENCY, k_dur)
        self.s.kernels.append(Kernel(pid, device, stream, ks, ke, name, grid=grid, block=block,
                                     static_shared_bytes=smem, correlation_id=c))
        return end, ke

    def graph_launch(self, t: int, api_dur: int, node_durs: list[int], names: list[str], *, pid: int = PID,
                     tid: int | None = None, device: int = 0, stream: int = 7) -> tuple[int, int]:
        """A cudaGraphLaunch at `t` and its graph's kernels, one after the other on the stream.

        Traced at node granularity (nsys --cuda-graph-trace=node; a HIP graph's dispatches in rocpd):
        every kernel carries the one call's correlation id and a graph node id. Returns (API end,
        end of the last kernel).
        """
        c = self.corr()
        end = self.api(t, api_dur, "graph_launch", pid=pid, tid=tid, corr=c)
        ready, ke = end + LAUNCH_LATENCY, end
        for node, (name, dur) in enumerate(zip(names, node_durs, strict=True), start=1):
            ks, ke = self._slot(device, stream, ready, dur)
            ready = ke
            self.s.kernels.append(Kernel(pid, device, stream, ks, ke, name, grid=(1024, 1, 1),
                                         correlation_id=c, graph_node_id=node))
        return end, ke

    def copy(self, t: int, nbytes: int, bw_bps: float, direction: Direction, src: MemKind,
             dst: MemKind, *, sync_api: bool, pid: int = PID, tid: int | None = None,
             device: int = 0, stream: int = 7) -> tuple[int, int]:
        """cudaMemcpy(Async) at `t` and its copy; returns (API end, copy end).

        A synchronous cudaMemcpy returns only after the copy; an async one after 4 µs.
        """
        c = self.corr()
        dur = max(1, int(nbytes / bw_bps * 1e9))
        cs, ce = self._slot(device, stream, t + 4 * US, dur)
        self.s.copies.append(Copy(pid, device, stream, cs, ce, nbytes, direction, src, dst,
                                  correlation_id=c))
        api_end = ce + 3 * US if sync_api else t + 4 * US
        self.api(t, api_end - t, "memcpy" if sync_api else "memcpy_async", pid=pid, tid=tid, corr=c)
        return api_end, ce

    def memset(self, t: int, nbytes: int, dur: int, *, pid: int = PID, device: int = 0,
               stream: int = 7) -> tuple[int, int]:
        """A cudaMemset at `t` (returns once queued) and its device memset; returns (API end, end)."""
        c = self.corr()
        end = self.api(t, 5 * US, "memset", pid=pid, corr=c)
        ms, me = self._slot(device, stream, end + LAUNCH_LATENCY, dur)
        self.s.memsets.append(Memset(pid, device, stream, ms, me, nbytes, "device", c))
        return end, me

    def sync(self, t: int, kind: ApiKind, *, pid: int = PID, tid: int | None = None,
             device: int = 0, stream: int = 7, until: int | None = None) -> int:
        """A blocking sync call from `t` until the stream drains (or `until`), plus its GPU record."""
        c = self.corr()
        drained = self._free.get((device, stream), t) if until is None else until
        end = max(t + 2 * US, drained + 4 * US)
        self.api(t, end - t, kind, pid=pid, tid=tid, corr=c)
        self.s.syncs.append(Sync(pid, device, stream, t, end, _SYNC_OF[kind], c))
        return end

    def marker(self, start: int, end: int, text: str, *, kind: MarkerKind = "push_pop",
               domain: str | None = None, pid: int = PID, tid: int | None = None) -> None:
        """An NVTX range (end < start: still open when capture stopped)."""
        self.s.markers.append(Marker(pid, pid if tid is None else tid, start, end, text, kind, domain))

    def mpi(self, start: int, end: int, name: str, kind: MpiKind, rank: int, pid: int,
            nbytes: int = 0) -> None:
        """One MPI call on the main thread of `pid`."""
        self.s.mpi_calls.append(MpiCall(pid, pid, start, end, name, kind, nbytes, rank))

    def done(self, bottlenecks: list[str], notes: str) -> Scenario:
        """The finished scenario with its ground truth."""
        self.s.expected = Expected(bottlenecks=bottlenecks, notes=notes)
        return self.s


# --------------------------------------------------------------------------------------------
# Single-cause scenarios.
# --------------------------------------------------------------------------------------------


def launch_bound() -> Scenario:
    """Thousands of 2-5 µs kernels, each launched by a longer cudaLaunchKernel: the GPU idles."""
    rng = random.Random(1)
    b = _Builder("launch_bound", "3000 tiny kernels; launch API (8-12 µs) longer than each kernel")
    t = T0
    names = (K_AXPY, K_SCALE, K_RESET)
    for i in range(3000):
        api_end, _ = b.launch(t, rng.randint(8, 12) * US, rng.randint(2, 5) * US, names[i % 3],
                              grid=(64, 1, 1))
        t = api_end + 500
    b.sync(t, "device_sync")
    return b.done(["cpu_launch_overhead"],
                  "queue always empty: kernel start = API end + 3 µs; GPU busy ~1/3 of span")


def sync_after_launch() -> Scenario:
    """Every launch is followed by a device/stream synchronize: the CPU blocks most of the span."""
    rng = random.Random(2)
    b = _Builder("sync_after_launch", "launch; synchronize; 10 µs host work; repeat (600 times)")
    t = T0
    for i in range(600):
        api_end, _ = b.launch(t, 5 * US, rng.randint(20, 60) * US, (K_STENCIL, K_REDUCE)[i % 2])
        end = b.sync(api_end + US, "device_sync" if i % 2 == 0 else "stream_sync")
        t = end + 10 * US
    return b.done(["synchronization"],
                  "each sync spans the whole kernel; CPU blocked ~75 % of span, GPU idle ~35 %")


def pageable_htod() -> Scenario:
    """Large synchronous HtoD copies from pageable memory at ~5.5 GB/s dominate the timeline."""
    rng = random.Random(3)
    b = _Builder("pageable_htod", "40 x 64 MiB pageable HtoD cudaMemcpy, short kernel after each")
    t = T0
    for _ in range(40):
        api_end, _ = b.copy(t, 64 * MIB, rng.uniform(5.0e9, 6.0e9), "HtoD", "pageable", "device",
                            sync_api=True)
        api_end, _ = b.launch(api_end + 2 * US, 5 * US, 300 * US, K_AXPY)
        end, _ = b.copy(api_end + 2 * US, 4096, 1.0e9, "DtoH", "device", "pageable", sync_api=True)
        t = end + 20 * US
    return b.done(["memory_bound"], "pageable HtoD ~95 % of span at ~5.5 GB/s (pinned would be ~25)")


def copies_not_overlapped() -> Scenario:
    """Pinned copies and kernels on one stream, serialized: copies are ~40 % of the span."""
    b = _Builder("copies_not_overlapped", "HtoD 2 ms, kernel 4.5 ms, DtoH 1 ms on stream 7, x40")
    t = T0
    bw = 24.0e9
    for _ in range(40):
        e1, _ = b.copy(t, int(2 * MS * bw / 1e9), bw, "HtoD", "pinned", "device", sync_api=False)
        e2, _ = b.launch(e1 + US, 5 * US, 4500 * US, K_STENCIL)
        e3, _ = b.copy(e2 + US, int(1 * MS * bw / 1e9), bw, "DtoH", "device", "pinned", sync_api=False)
        t = b.sync(e3 + US, "stream_sync") + 10 * US
    return b.done(["memory_bound"], "copies could overlap compute on a second stream; ~40 % of span")


def dominant_kernel() -> Scenario:
    """One long GEMM is >= 70 % of GPU time among a few small kernels; the GPU is busy."""
    b = _Builder("dominant_kernel", "per iteration: 9 ms GEMM + 5 x 0.25 ms small kernels, queued")
    t = T0
    for _ in range(30):
        t, _ = b.launch(t, 5 * US, 9 * MS, K_GEMM, grid=(864, 1, 1), smem=32768)
        for name in (K_AXPY, K_SCALE, K_REDUCE, K_AXPY, K_RESET):
            t, _ = b.launch(t + US, 5 * US, 250 * US, name)
        t = b.sync(t + US, "stream_sync") + 5 * US
    return b.done(["compute_bound"], "gemm ~88 % of GPU time; GPU busy ~99 %")


def host_idle_gaps() -> Scenario:
    """Kernel bursts separated by 1-50 ms gaps in which the host makes no GPU-related call."""
    rng = random.Random(6)
    b = _Builder("host_idle_gaps", "40 bursts of 50 x 40 µs kernels, host-side gaps of 1-50 ms")
    t = T0
    for _ in range(40):
        for _ in range(50):
            t, _ = b.launch(t, 4 * US, 40 * US, K_STENCIL)
        t = b.sync(t + US, "stream_sync")
        t += rng.randint(1, 50) * MS
    return b.done(["other"], "GPU idle ~90 % of span while the host does non-GPU work (no API calls)")


def host_bound() -> Scenario:
    """A host-bound loop: a short kernel, a sync, then 15-25 ms of host work with no GPU call.

    The GPU idles almost all of its active window and there is too little GPU work to hide the host
    work behind: only faster host code (or moving it to the GPU) helps, which the trace cannot bound.
    """
    rng = random.Random(18)
    b = _Builder("host_bound", "40 steps: one 80 µs kernel, stream sync, 15-25 ms of host work")
    t = T0
    for _ in range(40):
        t, _ = b.launch(t, 5 * US, 80 * US, K_SPMV)
        t = b.sync(t + US, "stream_sync")
        t += rng.randint(15, 25) * MS
    return b.done(["other"], "GPU idle ~99 % of its window in host work; overlap could hide < 1 %")


def multi_stream_overlap() -> Scenario:
    """Four streams whose kernels overlap on one device; union busy ~100 %, summed ~400 %.

    Expected is [] (healthy): a tool that sums kernel durations reports ~400 % utilisation.
    """
    rng = random.Random(7)
    b = _Builder("multi_stream_overlap", "4 streams x 250 kernels of 400-560 µs, launched round-robin")
    t = T0
    streams = (7, 13, 14, 15)
    for i in range(1000):
        t, _ = b.launch(t, 6 * US, rng.randint(400, 560) * US, (K_STENCIL, K_REDUCE)[i % 2],
                        stream=streams[i % 4], grid=(27, 1, 1))
        t += 114 * US
    end = max(k.end for k in b.s.kernels)
    b.sync(t, "device_sync", until=end)
    return b.done([], "healthy control with concurrency: busy time is the union of intervals")


def nvtx_nested() -> Scenario:
    """NVTX ranges nested to depth 3 on two threads, push/pop and start/end, two domains, open ranges.

    Ranges with end < start are still open at the end of capture: the writer stores end NULL.
    """
    worker = PID + 1
    b = _Builder("nvtx_nested", "depth-3 NVTX on two threads, domains 'app' and 'io', open ranges",
                 processes=[Process(PID, "solver", {PID: "solver", worker: "io-worker"})])
    t = T0
    for step in range(20):
        s0 = t
        for phase in ("assemble", "solve"):
            p0 = t
            for j in range(3):
                l0 = t
                t, _ = b.launch(t + US, 5 * US, 200 * US, K_STENCIL)
                b.marker(l0, t + US, f"launch_{j}", domain="app")
                t += 2 * US
            t = b.sync(t, "stream_sync")
            b.marker(p0, t + US, phase, domain="app")
            t += 3 * US
        b.marker(s0, t + US, f"step {step}", domain="app")
        w0 = s0 + 50 * US
        b.marker(w0, w0 + 600 * US, "prefetch", kind="start_end", domain="io", tid=worker)
        b.marker(w0 + 50 * US, w0 + 500 * US, "read", kind="start_end", domain="io", tid=worker)
        b.marker(w0 + 100 * US, w0 + 300 * US, "decode", kind="start_end", domain="io", tid=worker)
        b.marker(s0 + 10 * US, s0 + 20 * US, "tick")      # default domain
        t += 10 * US
    # Still open when capture stopped (end < start => written as NULL end).
    b.marker(t, t - 1, "shutdown", domain="app")
    b.marker(t + 5 * US, t + 5 * US - 1, "flush", domain="app")
    b.marker(t + 2 * US, t + 2 * US - 1, "final_write", kind="start_end", domain="io", tid=worker)
    t, _ = b.launch(t + 10 * US, 5 * US, 100 * US, K_AXPY)
    return b.done([], "structure fixture; kernels keep the GPU reasonably busy")


def mpi_collectives() -> Scenario:
    """Two ranks on two GPUs; rank 1 computes 2.5x longer, so rank 0 waits in every collective."""
    ranks = [(5001, 0), (5002, 1)]
    b = _Builder("mpi_collectives", "2 ranks; imbalanced compute before MPI_Allreduce/MPI_Barrier",
                 devices=[Device(id=0, bus_location="0000:07:00.0"),
                          Device(id=1, bus_location="0000:0b:00.0")],
                 processes=[Process(pid, f"rank{r}", {pid: "main"}, rank=r) for pid, r in ranks])
    t = T0
    for it in range(30):
        ready: dict[int, int] = {}
        for pid, r in ranks:
            api_end, _ = b.launch(t, 5 * US, (2 if r == 0 else 5) * MS, K_STENCIL, pid=pid, device=r)
            ready[r] = b.sync(api_end + US, "stream_sync", pid=pid, device=r)
        arrive = max(ready.values())
        done = arrive + 60 * US
        for pid, r in ranks:
            b.mpi(ready[r] + 2 * US, done, "MPI_Allreduce", "collective", r, pid, 8 * MIB)
        posted: dict[int, int] = {}
        for pid, r in ranks:
            s = done + 5 * US
            b.mpi(s, s + 10 * US, "MPI_Isend", "p2p", r, pid, 1 * MIB)
            b.mpi(s + 10 * US, s + 20 * US, "MPI_Irecv", "p2p", r, pid, 1 * MIB)
            posted[r] = s + 20 * US
        w_end = max(posted.values()) + 80 * US
        for pid, r in ranks:                 # one wait per request: Isend's, then Irecv's
            b.mpi(posted[r], w_end, "MPI_Wait", "wait", r, pid)
            b.mpi(w_end + US, w_end + 3 * US, "MPI_Wait", "wait", r, pid)
        w_end += 3 * US
        t = w_end + 10 * US
        if it % 5 == 4:
            starts = {r: t + (MS if r == 1 else 0) for _, r in ranks}
            b_end = max(starts.values()) + 10 * US
            for pid, r in ranks:
                b.mpi(starts[r], b_end, "MPI_Barrier", "collective", r, pid)
            t = b_end + 10 * US
    b.s.mpi_calls.sort(key=lambda c: (c.pid, c.start))
    return b.done(["mpi_imbalance"], "rank 0 waits ~3 ms in each MPI_Allreduce and 1 ms per barrier")


def mpi_as_nvtx() -> Scenario:
    """mpi_collectives as older Nsight Systems versions recorded it (Nsight Systems only).

    The MPI calls are NVTX ranges named MPI_* in an NVTX domain "MPI", and there are no MPI tables.
    """
    s = mpi_collectives()
    s.name, s.description = "mpi_as_nvtx", s.description + "; MPI traced as NVTX ranges in domain 'MPI'"
    s.markers += [Marker(c.pid, c.tid, c.start, c.end, c.name, domain="MPI") for c in s.mpi_calls]
    s.markers.sort(key=lambda m: (m.pid, m.tid, m.start))
    s.mpi_calls = []
    s.expected = Expected(bottlenecks=s.expected.bottlenecks, notes=s.expected.notes, formats=("nsys",))
    return s


def healthy() -> Scenario:
    """Control: big queued kernels, async pinned copies overlapped on a second stream, rare syncs."""
    rng = random.Random(10)
    b = _Builder("healthy", "2-4 ms kernels on stream 7, 16 MiB pinned HtoD on stream 8 overlapped")
    t = T0
    for _ in range(8):
        for i in range(10):
            t, _ = b.launch(t, 5 * US, rng.randint(2000, 4000) * US, (K_GEMM, K_STENCIL)[i % 2],
                            grid=(2048, 1, 1))
            t, _ = b.copy(t + US, 16 * MIB, 24.0e9, "HtoD", "pinned", "device", sync_api=False,
                          stream=8)
        t = b.sync(t + US, "device_sync", until=max(k.end for k in b.s.kernels)) + 5 * US
    return b.done([], "GPU busy > 99 %; copies fully hidden behind compute")


# --------------------------------------------------------------------------------------------
# Two planted causes of different sizes (larger first).
# --------------------------------------------------------------------------------------------


def mixed_launch_and_copies() -> Scenario:
    """Pageable copies ~35 % of span, a launch-bound phase ~15 %, big kernels the rest."""
    rng = random.Random(11)
    b = _Builder("mixed_launch_and_copies", "5 x (7 ms pageable HtoD, 3 ms tiny launches, 10 ms compute)")
    t = T0
    for _ in range(5):
        t, _ = b.copy(t, int(7 * MS * 5.5), 5.5e9, "HtoD", "pageable", "device", sync_api=True)
        phase_end = t + 3 * MS
        while t < phase_end:
            t, _ = b.launch(t, rng.randint(8, 12) * US, rng.randint(2, 5) * US, K_AXPY, grid=(32, 1, 1))
            t += 500
        for _ in range(4):
            t, _ = b.launch(t + US, 5 * US, 2500 * US, K_GEMM, grid=(1728, 1, 1))
        t = b.sync(t + US, "stream_sync") + 5 * US
    return b.done(["memory_bound", "cpu_launch_overhead"],
                  "pageable HtoD ~35 % of span; launch-bound phase ~15 % (GPU ~2/3 idle in it)")


def mixed_sync_and_idle() -> Scenario:
    """A sync-after-every-launch phase (~55 % of span) and host-side idle gaps (~10 %)."""
    rng = random.Random(12)
    b = _Builder("mixed_sync_and_idle", "6 x (sync storm 9 ms, 1.6 ms host gap, 6 ms compute)")
    t = T0
    for _ in range(6):
        phase_end = t + 9 * MS
        while t < phase_end:
            api_end, _ = b.launch(t, 5 * US, rng.randint(20, 60) * US, K_REDUCE)
            t = b.sync(api_end + US, "device_sync") + 10 * US
        t += rng.randint(1400, 1800) * US        # host work, no GPU calls
        for _ in range(3):
            t, _ = b.launch(t, 5 * US, 2 * MS, K_GEMM, grid=(1728, 1, 1))
        t = b.sync(t + US, "stream_sync") + 5 * US
    return b.done(["synchronization", "other"],
                  "CPU blocked in syncs most of the storm phase; GPU idle ~10 % in host gaps")


# --------------------------------------------------------------------------------------------
# Further single behaviours.
# --------------------------------------------------------------------------------------------


def memset_critical() -> Scenario:
    """Large device memsets on the compute stream take ~2/3 of GPU time."""
    b = _Builder("memset_critical", "per iteration: 1 GiB memset (0.8 ms) then a 0.4 ms kernel, x100")
    t = T0
    for _ in range(100):
        t, _ = b.memset(t, 1 << 30, 800 * US)
        t, _ = b.launch(t + US, 5 * US, 400 * US, K_AXPY)
        t = b.sync(t + US, "stream_sync") + 10 * US
    return b.done(["memory_bound"], "memsets ~65 % of GPU time, serialized before each kernel")


def high_variance() -> Scenario:
    """One kernel name whose durations have a coefficient of variation > 1 (lognormal, σ=1.3)."""
    rng = random.Random(14)
    b = _Builder("high_variance", "400 spmv kernels with lognormal durations + steady axpy kernels")
    t = T0
    for i in range(400):
        dur = max(5 * US, int(rng.lognormvariate(0.0, 1.3) * 150 * US))
        t, _ = b.launch(t, 5 * US, dur, K_SPMV)
        t, _ = b.launch(t + US, 5 * US, 100 * US, K_AXPY)
        if i % 20 == 19:
            t = b.sync(t + US, "stream_sync") + 5 * US
    return b.done(["compute_bound"], "GPU busy; spmv duration CV ~2 (data-dependent imbalance)")


def low_wave_fill() -> Scenario:
    """Grids of 4 blocks on a 108-SM GPU: the GPU is busy in time but ~4 % of SMs are used."""
    rng = random.Random(15)
    b = _Builder("low_wave_fill", "300 kernels of 4 x 256 threads, 1-2 ms each, queued")
    t = T0
    for i in range(300):
        t, _ = b.launch(t, 5 * US, rng.randint(1000, 2000) * US, K_REDUCE, grid=(4, 1, 1))
        if i % 30 == 29:
            t = b.sync(t + US, "stream_sync") + 5 * US
    return b.done(["compute_bound"], "wave fill 4/108 SMs; larger grids or batching would help")


def warmup_dominated() -> Scenario:
    """The first ~60 % of a short capture is initialisation: cudaMalloc, module load, first calls."""
    rng = random.Random(16)
    b = _Builder("warmup_dominated", "60 ms of init (mallocs, module load, lazy-loading first "
                 "launches) then 40 ms steady compute")
    t = T0
    t = b.api(t, 25 * MS, "free")       # cudaFree(0): context creation
    t = b.api(t + 10 * US, 6 * MS, "other", name="cuModuleLoadData")
    for _ in range(12):
        t = b.api(t + 20 * US, rng.randint(800, 1200) * US, "malloc")
    names = (K_GEMM, K_STENCIL, K_REDUCE, K_AXPY, K_SCALE)
    for name in names:                       # first launch of each kernel pays lazy loading
        t, _ = b.launch(t + 20 * US, 3 * MS, 50 * US, name)
    t = b.sync(t + US, "device_sync")
    for i in range(40):                      # steady state: 40 x 1 ms kernels, synced every 5
        t, _ = b.launch(t, 5 * US, 1 * MS, names[rng.randrange(5)], grid=(1728, 1, 1))
        if i % 5 == 4:
            t = b.sync(t + US, "stream_sync") + 5 * US
    return b.done(["other"], "initialisation is ~60 % of the capture; steady state is healthy")


def heavy_overhead() -> Scenario:
    """Profiler overhead (data flushes on the main thread) covers > 10 % of the span.

    The GPU gaps coincide with the overhead rows: expected [] because the profiler, not the
    application, caused them.
    """
    b = _Builder("heavy_overhead", "queued 1 ms kernels; a 4 ms profiler flush every 20 kernels")
    t = T0
    for i in range(200):
        t, _ = b.launch(t, 5 * US, 1 * MS, (K_GEMM, K_STENCIL)[i % 2], grid=(1728, 1, 1))
        if i % 20 == 19:
            t = b.sync(t + US, "stream_sync")
            b.s.overhead.append(Overhead(PID, PID, t + US, t + 4 * MS, "CUDA profiling data flush"))
            t += 4 * MS + 5 * US
    b.sync(t + US, "device_sync")
    return b.done([], "profiler overhead ~17 % of span; all GPU idle lies inside it")


def stream_serialization() -> Scenario:
    """Two independent kernel chains, small grids, all on one stream: they could run concurrently."""
    b = _Builder("stream_serialization", "chains A and B (8-block kernels, 500 µs) interleaved on stream 7")
    t = T0
    a = "void chainA_update<float>(float*, const float*, int)"
    c = "void chainB_update<float>(float*, const float*, int)"
    for i in range(400):
        t, _ = b.launch(t, 5 * US, 500 * US, (a, c)[i % 2], grid=(8, 1, 1))
        if i % 40 == 39:
            t = b.sync(t + US, "stream_sync") + 5 * US
    return b.done(["compute_bound"], "independent chains serialized on one stream with 8/108 wave fill")


def sync_copies() -> Scenario:
    """Each step reads a small result back with a synchronous cudaMemcpy: the GPU waits for the host."""
    rng = random.Random(19)
    b = _Builder("sync_copies", "300 x (kernel 120-180 µs, synchronous 4 KiB DtoH cudaMemcpy, 20 µs host work)")
    t = T0
    for _ in range(300):
        api_end, _ = b.launch(t, 5 * US, rng.randint(120, 180) * US, K_REDUCE)
        end, _ = b.copy(api_end + US, 4096, 2.0e9, "DtoH", "device", "pinned", sync_api=True)
        t = end + 20 * US
    return b.done(["synchronization"], "the GPU idles ~30 µs after every read-back: ~15 % of the span")


def device_reads() -> Scenario:
    """A framework loop that reads a device value every step (aten::is_nonzero around a stream sync)."""
    rng = random.Random(20)
    b = _Builder("device_reads", "200 x (kernel 250-350 µs, aten::is_nonzero waiting for it, 40 µs host work)")
    t = T0
    for op in range(200):
        api_end, _ = b.launch(t, 6 * US, rng.randint(250, 350) * US, K_REDUCE)
        r0 = api_end + US
        end = b.sync(r0 + 2 * US, "stream_sync")
        b.marker(r0, end + US, f"aten::is_nonzero, op_id = {1000 + 3 * op}")
        b.marker(r0 + US, end, f"aten::item, op_id = {1001 + 3 * op}")
        t = end + 40 * US
    return b.done(["synchronization"], "the host reads a device value each step; the GPU idles ~55 µs per step")


def alloc_churn() -> Scenario:
    """Allocation around every kernel: cudaFree waits for the kernel, the GPU idles meanwhile."""
    rng = random.Random(21)
    b = _Builder("alloc_churn", "150 x (cudaMalloc ~250 µs, kernel 500 µs, cudaFree waiting for it, +150 µs)")
    t = T0
    for _ in range(150):
        t = b.api(t, rng.randint(200, 300) * US, "malloc")
        api_end, k_end = b.launch(t + US, 5 * US, 500 * US, K_STENCIL, grid=(1728, 1, 1))
        t = b.api(api_end + US, (k_end - api_end - US) + 150 * US, "free") + 5 * US
    return b.done(["allocation"], "alloc/free cover ~400 µs of GPU idle per ~900 µs step")


def round_trip_copies() -> Scenario:
    """The same two 32 MiB buffers go to the GPU and come back around every step (map(tofrom:) in a loop)."""
    b = _Builder("round_trip_copies", "25 x (HtoD 2 x 32 MiB, kernel 1 ms, DtoH 2 x 32 MiB), pinned, one stream")
    t = T0
    bw = 24.0e9
    for _ in range(25):
        for _ in range(2):
            t, _ = b.copy(t + US, 32 * MIB, bw, "HtoD", "pinned", "device", sync_api=False)
        t, _ = b.launch(t + US, 5 * US, 1 * MS, K_STENCIL, grid=(1728, 1, 1))
        for _ in range(2):
            t, _ = b.copy(t + US, 32 * MIB, bw, "DtoH", "device", "pinned", sync_api=False)
        t = b.sync(t + US, "stream_sync") + 10 * US
    return b.done(["memory_bound"], "copies ~85 % of the span; all but the first upload and last download redundant")


def jit_in_loop() -> Scenario:
    """Kernels compiled just in time inside the steady state: module loads between kernels, GPU idle."""
    rng = random.Random(22)
    b = _Builder("jit_in_loop", "120 steps of 3 x 400 µs kernels; every 4th step loads a module (3-5 ms)")
    t = T0
    for step in range(120):
        if step % 4 == 0:
            t = b.api(t, rng.randint(3000, 5000) * US, "module_load") + 5 * US
        for _ in range(3):
            t, _ = b.launch(t, 5 * US, 400 * US, K_STENCIL, grid=(1728, 1, 1))
        t = b.sync(t + US, "stream_sync") + 10 * US
    return b.done(["compilation"], "module loading between steps: the GPU idles ~4 ms every 4th step, ~40 %")


def _collective_steps(name: str, description: str, compute: tuple[int, int], transfer: int,
                      overlapped: bool = False, steps: int = 100) -> _Builder:
    """Two GPUs driven by one process, a compute kernel then an allreduce kernel on each per step.

    The allreduce ends on both GPUs `transfer` after the later compute ends (the earlier GPU waits
    inside its allreduce kernel). `overlapped`: the allreduce runs on a second stream beside the
    compute. The host queues each step's four launches 200 µs before it starts; one device sync at
    the end.
    """
    b = _Builder(name, description, devices=[Device(id=0), Device(id=1, bus_location="0000:41:00.0")])
    t = T0 + MS
    for _ in range(steps):
        h = t - 200 * US
        if overlapped:
            ends = [t + compute[d] for d in (0, 1)]
            comm = [(t + 500 * US, t + 500 * US + transfer)] * 2
        else:
            ends = [t + compute[d] for d in (0, 1)]
            comm = [(ends[d], max(ends) + transfer) for d in (0, 1)]
        for d in (0, 1):
            for (ks, ke), kname, stream in (((t, ends[d]), K_GEMM, 7), (comm[d], K_ALLREDUCE, 8 if overlapped else 7)):
                c = b.corr()
                h = b.api(h, 10 * US, "launch", corr=c)
                b.s.kernels.append(Kernel(PID, d, stream, ks, ke, kname, grid=(1728, 1, 1), correlation_id=c))
        t = max(max(ends), max(e for _, e in comm))
    b.sync(t - 100 * US, "device_sync", until=t + 5 * US)
    return b


def nccl_exposed() -> Scenario:
    """Two GPUs: each step 3 ms of compute, then a 2 ms allreduce with nothing beside it."""
    b = _collective_steps("nccl_exposed", "2 GPUs x 100 steps: 3 ms compute, then a 2 ms allreduce kernel",
                          (3 * MS, 3 * MS), 2 * MS)
    return b.done(["communication"], "allreduce kernels 40 % of each GPU's time with no compute beside them")


def nccl_overlapped() -> Scenario:
    """Two GPUs: each step 3 ms of compute with a 2 ms allreduce on a second stream beside it (healthy)."""
    b = _collective_steps("nccl_overlapped", "2 GPUs x 100 steps: 3 ms compute, a 2 ms allreduce beside it",
                          (3 * MS, 3 * MS), 2 * MS, overlapped=True)
    return b.done([], "communication fully overlapped with compute: nothing to recover from it")


def nccl_imbalanced() -> Scenario:
    """Two GPUs: 4 ms of compute on GPU 0, 2 ms on GPU 1; GPU 1 waits 2 ms in every allreduce."""
    b = _collective_steps("nccl_imbalanced", "2 GPUs x 100 steps: 4 ms / 2 ms compute, then a 1 ms allreduce",
                          (4 * MS, 2 * MS), 1 * MS)
    return b.done(["mpi_imbalance", "communication"],
                  "GPU 0 computes 1 ms per step above the mean (20 % of the run); 1 ms of transfer exposed")


def um_page_faults() -> Scenario:
    """Managed memory touched without prefetching: page-fault migrations in and out of every step.

    Per step a 400 µs kernel, during which 8 page-fault migrations of 64 KiB come in (under the
    kernel); then the host reads the result: 32 page-fault migrations of 64 KiB go out back to back,
    12 µs each, while no kernel runs (Nsight Systems only: rocpd records no migrations as copies).
    """
    b = _Builder("um_page_faults", "100 x (400 µs kernel with 8 faults under it, then 32 x 12 µs DtoH faults)")
    t = T0
    for _ in range(100):
        api_end, k_end = b.launch(t, 5 * US, 400 * US, K_STENCIL)
        k_start = k_end - 400 * US
        for i in range(8):
            s = k_start + 20 * US + i * 45 * US
            b.s.copies.append(Copy(PID, 0, 0, s, s + 10 * US, 64 * 1024, "HtoD", "managed", "managed",
                                   migration="page_fault"))
        done = b.sync(api_end + US, "stream_sync")
        m = done + 5 * US
        for _ in range(32):
            b.s.copies.append(Copy(PID, 0, 0, m, m + 12 * US, 64 * 1024, "DtoH", "managed", "managed",
                                   migration="page_fault"))
            m += 12 * US
        t = m + 5 * US
    scen = b.done(["memory_bound"], "DtoH page faults ~45 % of each step with no kernel running; prefetch")
    scen.expected.formats = ("nsys",)
    return scen


def gpu_not_captured() -> Scenario:
    """The host launches and waits on the GPU most of the time, but no GPU records were captured."""
    b = _Builder("gpu_not_captured", "host-side only: 200 x (launch, 2 ms stream sync, 100 µs host work)")
    t = T0
    for _ in range(200):
        t = b.api(t, 6 * US, "launch", corr=b.corr())
        t = b.api(t + US, 2 * MS, "stream_sync")
        t += 100 * US
    return b.done(["other"], "no GPU records; the host is blocked ~95 % of the span: GPU-bound, capture the GPU")


# --------------------------------------------------------------------------------------------
# README demo and benchmark.
# --------------------------------------------------------------------------------------------


def example() -> Scenario:
    """A realistic mid-size profile for the README demo: NVTX phases init / solve / io.

    Two GPUs are present in the machine but only device 0 is used. init: context setup, mallocs and
    pageable HtoD uploads; solve: 40 iterations of a few kernels with a stream sync each; io:
    pageable DtoH downloads then host-side file writing with the GPU idle.
    """
    rng = random.Random(17)
    b = _Builder("example", "mid-size mixed profile: init / solve / io",
                 devices=[Device(id=0, bus_location="0000:07:00.0"),
                          Device(id=1, bus_location="0000:0b:00.0")],
                 processes=[Process(PID, "heat3d", {PID: "heat3d", PID + 3: "cuda-EvtHandlr"})])
    b.s.host_name = "gpu-node-017"
    t = T0
    i0 = t
    t = b.api(t, 18 * MS, "free")       # cudaFree(0): context creation
    for _ in range(6):
        t = b.api(t + 10 * US, rng.randint(300, 600) * US, "malloc")
    for _ in range(4):
        t, _ = b.copy(t + 10 * US, 48 * MIB, rng.uniform(5.0e9, 6.0e9), "HtoD", "pageable", "device",
                      sync_api=True)
    b.marker(i0, t, "init")
    s0 = t
    for it in range(40):
        r0 = t
        for name in (K_STENCIL, K_STENCIL, K_REDUCE):
            t, _ = b.launch(t + 2 * US, 6 * US, rng.randint(900, 1300) * US if name == K_STENCIL
                            else 150 * US, name, grid=(1728, 1, 1))
        for _ in range(20):
            t, _ = b.launch(t + 2 * US, rng.randint(8, 11) * US, rng.randint(3, 5) * US, K_AXPY,
                            grid=(64, 1, 1))
        t = b.sync(t + US, "stream_sync")
        b.marker(r0, t, f"iteration {it}", domain="solver")
        t += rng.randint(80, 150) * US
    b.marker(s0, t, "solve")
    o0 = t
    for _ in range(3):
        t, _ = b.copy(t + 10 * US, 32 * MIB, rng.uniform(5.0e9, 6.0e9), "DtoH", "device", "pageable",
                      sync_api=True)
        t += 8 * MS                      # host writes the checkpoint: no GPU work, no API
    b.marker(o0, t, "io")
    b.s.overhead.append(Overhead(PID, PID + 3, s0 + 30 * MS, s0 + 31 * MS, "CUPTI buffer flush"))
    return b.done(["memory_bound", "other"],
                  "pageable uploads/downloads ~20 %; host-side checkpoint writing with GPU idle ~15 %; "
                  "tiny axpy launches and per-iteration syncs are minor")


def scaled(kernels: int, copies: int, api_calls: int, nvtx: int, seed: int = 0) -> Scenario:
    """A large synthetic profile for the benchmark (e.g. 1e6 kernels, 1e5 copies, 2e5 calls, 5e4 ranges).

    Kernels go round-robin over 4 streams (each stream's work never overlaps); the first
    `api_calls` kernels get a cudaLaunchKernel on one of two host threads, extra calls are plain
    cudaGetLastError; copies alternate HtoD/DtoH on two copy streams; NVTX ranges tile the span.
    """
    rng = random.Random(seed)
    tid2 = PID + 1
    sc = Scenario(name=f"scaled_{kernels}", description="benchmark profile",
                  devices=[Device(id=0)], processes=[Process(PID, "bench", {PID: "bench", tid2: "w"})])
    rand = rng.random
    streams = (7, 13, 14, 15)
    launches = min(api_calls, kernels)
    ks = sc.kernels
    calls = sc.api_calls
    names = (K_AXPY, K_STENCIL, K_REDUCE, K_GEMM)
    for i in range(kernels):
        start = T0 + i * 2000
        c = i + 1 if i < launches else 0
        ks.append(Kernel(PID, 0, streams[i & 3], start, start + 1500 + int(rand() * 5500),
                         names[i & 3], correlation_id=c))
        if c:
            calls.append(ApiCall(PID, PID if i & 1 else tid2, start - 5000, start - 2000, "launch", c))
    end_k = T0 + kernels * 2000
    for j in range(api_calls - launches):
        s = end_k + j * 1000
        calls.append(ApiCall(PID, PID, s, s + 500, "other"))
    span_end = max(end_k, T0 + copies * 10_000, end_k + (api_calls - launches) * 1000) + 10_000
    for j in range(copies):
        s = T0 + j * 10_000
        htod = j % 2 == 0
        sc.copies.append(Copy(PID, 0, 20 if htod else 21, s, s + 5000 + int(rand() * 4000), MIB,
                              "HtoD" if htod else "DtoH", "pinned" if htod else "device",
                              "device" if htod else "pinned"))
    if nvtx:
        width = max(2, (span_end - T0) // nvtx)
        sc.markers.extend(Marker(PID, PID, T0 + n * width, T0 + (n + 1) * width - 1, f"iter {n % 100}")
                          for n in range(nvtx))
    sc.expected = Expected([], "benchmark load; not an accuracy fixture")
    return sc


ALL_SCENARIOS: dict[str, Callable[[], Scenario]] = {
    "launch_bound": launch_bound,
    "sync_after_launch": sync_after_launch,
    "pageable_htod": pageable_htod,
    "copies_not_overlapped": copies_not_overlapped,
    "dominant_kernel": dominant_kernel,
    "host_idle_gaps": host_idle_gaps,
    "host_bound": host_bound,
    "sync_copies": sync_copies,
    "device_reads": device_reads,
    "alloc_churn": alloc_churn,
    "round_trip_copies": round_trip_copies,
    "gpu_not_captured": gpu_not_captured,
    "jit_in_loop": jit_in_loop,
    "um_page_faults": um_page_faults,
    "nccl_exposed": nccl_exposed,
    "nccl_overlapped": nccl_overlapped,
    "nccl_imbalanced": nccl_imbalanced,
    "multi_stream_overlap": multi_stream_overlap,
    "nvtx_nested": nvtx_nested,
    "mpi_collectives": mpi_collectives,
    "mpi_as_nvtx": mpi_as_nvtx,
    "healthy": healthy,
    "mixed_launch_and_copies": mixed_launch_and_copies,
    "mixed_sync_and_idle": mixed_sync_and_idle,
    "memset_critical": memset_critical,
    "high_variance": high_variance,
    "low_wave_fill": low_wave_fill,
    "warmup_dominated": warmup_dominated,
    "heavy_overhead": heavy_overhead,
    "stream_serialization": stream_serialization,
}
