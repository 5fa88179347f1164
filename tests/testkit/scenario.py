"""A vendor-neutral description of what happened on a machine, written out as a profile by a writer.

The fixture generator plants behaviour (launch-bound tiny kernels, pageable copies, MPI waits, ...)
as a `Scenario`; `testkit.nsys_writer` turns it into a Nsight Systems SQLite export and
`testkit.rocpd_writer` into a rocpd database. Because both files come from one scenario, a
parity test can check that pa reads the same facts from either vendor's format, and the planted
ground truth (`expected`) feeds the accuracy benchmark of the rule engine.

All times are integer nanoseconds on one clock, all sizes bytes. API names here are semantic
(`ApiKind`); each writer spells them the way its vendor does (cudaLaunchKernel vs hipLaunchKernel).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Direction = Literal["HtoD", "DtoH", "DtoD", "PtoP", "HtoH"]
MemKind = Literal["pageable", "pinned", "device", "managed"]
SyncKind = Literal["event", "stream_wait", "stream", "context"]
# What a host API call does, independent of vendor spelling.
ApiKind = Literal[
    "launch",          # cudaLaunchKernel / hipLaunchKernel
    "graph_launch",    # cudaGraphLaunch / hipGraphLaunch
    "memcpy",          # cudaMemcpy (synchronous) / hipMemcpy
    "memcpy_async",    # cudaMemcpyAsync / hipMemcpyAsync
    "memset",          # cudaMemset / hipMemset
    "device_sync",     # cudaDeviceSynchronize / hipDeviceSynchronize
    "stream_sync",     # cudaStreamSynchronize / hipStreamSynchronize
    "event_sync",      # cudaEventSynchronize / hipEventSynchronize
    "malloc",          # cudaMalloc / hipMalloc
    "free",            # cudaFree / hipFree
    "module_load",     # cuModuleLoadData / hipModuleLoadData (loads and JIT-compiles a module)
    "other",           # anything else (cudaGetDevice, hipGetLastError, ...)
]
MpiKind = Literal["p2p", "collective", "wait", "other"]
MarkerKind = Literal["push_pop", "start_end"]


@dataclass
class Device:
    """One GPU. `id` is the device number the activity records carry."""

    id: int
    name: str = "NVIDIA A100-SXM4-80GB"
    sm_count: int = 108                      # SMs (NVIDIA) or CUs (AMD)
    memory_bandwidth_bps: int = 2_039_000_000_000
    clock_hz: int = 1_410_000_000
    l2_bytes: int = 41_943_040
    memory_bytes: int = 85_899_345_920
    max_threads_per_block: int = 1024
    max_warps_per_sm: int = 64
    threads_per_warp: int = 32               # wave size on AMD
    max_registers_per_sm: int = 65536
    max_shared_per_sm: int = 167_936
    max_shared_per_block: int = 49_152
    max_blocks_per_sm: int = 32
    compute_capability: tuple[int, int] = (8, 0)  # NVIDIA only; AMD writers ignore it
    simd_per_cu: int = 4                     # AMD only
    gfx_target: str = "gfx90a"               # AMD only
    bus_location: str = "0000:01:00.0"


@dataclass(slots=True)
class ApiCall:
    """A host-side runtime call. `correlation_id` links it to the GPU work it caused (0: none)."""

    pid: int
    tid: int
    start: int
    end: int
    kind: ApiKind
    correlation_id: int = 0
    name: str | None = None  # vendor-specific override (e.g. "cudaLaunchKernelExC"); None: writer default


@dataclass(slots=True)
class Kernel:
    """One kernel execution. grid is in blocks (CUDA convention), block in threads per block."""

    pid: int
    device: int
    stream: int
    start: int
    end: int
    name: str                       # full demangled name
    short_name: str | None = None   # defaults to `name` up to the first '(' or '<'
    grid: tuple[int, int, int] = (1, 1, 1)
    block: tuple[int, int, int] = (256, 1, 1)
    registers_per_thread: int = 32
    static_shared_bytes: int = 0
    dynamic_shared_bytes: int = 0
    local_bytes_per_thread: int = 0
    correlation_id: int = 0         # matches the ApiCall that launched it (0: none)
    # a node of a CUDA graph traced at node granularity (nsys --cuda-graph-trace=node): its node id,
    # with correlation_id the graph launch call's; None for a kernel launched on its own
    graph_node_id: int | None = None


@dataclass(slots=True)
class GraphExecution:
    """One CUDA graph launch traced whole (nsys --cuda-graph-trace=graph, the default).

    The kernels, copies and memsets inside are not recorded; start and end bound them all.
    CUpti_ActivityGraphTrace2 writes start = end = 0 when it could not time the execution and a
    device of INT_MAX (2147483647) when the graph started on the host.
    """

    pid: int
    device: int
    stream: int                     # the stream the graph was launched on
    start: int
    end: int
    graph_id: int
    graph_exec_id: int
    correlation_id: int = 0         # the graph launch call's (0: none)


@dataclass(slots=True)
class Copy:
    """One memory copy executed by the device's copy engines."""

    pid: int
    device: int
    stream: int
    start: int
    end: int
    bytes: int
    direction: Direction
    src_kind: MemKind
    dst_kind: MemKind
    dst_device: int | None = None   # peer copies: the other device
    correlation_id: int = 0
    # a unified-memory migration (HtoD/DtoH of managed pages) and its cause: page_fault,
    # user_prefetch, speculative_prefetch, eviction, access_counters; None for an explicit copy
    migration: str | None = None


@dataclass(slots=True)
class Memset:
    """One device memset."""

    pid: int
    device: int
    stream: int
    start: int
    end: int
    bytes: int
    mem_kind: MemKind = "device"
    correlation_id: int = 0


@dataclass(slots=True)
class Sync:
    """A GPU-side synchronisation record (CUPTI_ACTIVITY_KIND_SYNCHRONIZATION on NVIDIA)."""

    pid: int
    device: int
    stream: int
    start: int
    end: int
    kind: SyncKind
    correlation_id: int = 0


@dataclass(slots=True)
class Marker:
    """An NVTX / rocTX range on one thread."""

    pid: int
    tid: int
    start: int
    end: int
    text: str
    kind: MarkerKind = "push_pop"
    domain: str | None = None


@dataclass(slots=True)
class MpiCall:
    """One MPI call on one thread. `bytes` is the payload (0 where it does not apply)."""

    pid: int
    tid: int
    start: int
    end: int
    name: str            # "MPI_Allreduce", "MPI_Isend", "MPI_Wait", ...
    kind: MpiKind
    bytes: int = 0
    rank: int = 0


@dataclass(slots=True)
class Overhead:
    """Profiler overhead on a host thread (buffer flush, instrumentation)."""

    pid: int
    tid: int
    start: int
    end: int
    name: str = "CUPTI buffer flush"


@dataclass
class Process:
    """A profiled process and its threads (tid -> thread name)."""

    pid: int
    name: str
    threads: dict[int, str] = field(default_factory=dict)
    rank: int | None = None


@dataclass
class Expected:
    """Ground truth planted in a scenario, for the rule accuracy benchmark.

    `bottlenecks` lists the bottleneck types the scenario plants, largest first; an empty list is a
    healthy control profile on which no hypothesis above "low" impact should appear.
    """

    bottlenecks: list[str] = field(default_factory=list)
    notes: str = ""
    # the profile formats that can record what is planted (an Nsight-only layout: ("nsys",))
    formats: tuple[str, ...] = ("nsys", "rocpd")


@dataclass
class Scenario:
    """Everything a writer needs to produce one profile file."""

    name: str
    description: str
    devices: list[Device]
    processes: list[Process]
    kernels: list[Kernel] = field(default_factory=list)
    copies: list[Copy] = field(default_factory=list)
    memsets: list[Memset] = field(default_factory=list)
    api_calls: list[ApiCall] = field(default_factory=list)
    syncs: list[Sync] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    mpi_calls: list[MpiCall] = field(default_factory=list)
    overhead: list[Overhead] = field(default_factory=list)
    # Nsight Systems only (CUPTI_ACTIVITY_KIND_GRAPH_TRACE): rocpd records a HIP graph's kernels as dispatches
    graph_executions: list[GraphExecution] = field(default_factory=list)
    host_name: str = "node0001"
    expected: Expected = field(default_factory=Expected)

    def span(self) -> tuple[int, int]:
        """First start and last end over every event of the scenario (the capture window)."""
        starts: list[int] = []
        ends: list[int] = []
        for group in (self.kernels, self.copies, self.memsets, self.api_calls, self.syncs,
                      self.markers, self.mpi_calls, self.overhead, self.graph_executions):
            for ev in group:
                starts.append(ev.start)
                ends.append(ev.end)
        if not starts:
            return (0, 0)
        return (min(starts), max(ends))
