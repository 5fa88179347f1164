"""ProfileSummary: every metric `pa summary` computes, as a typed, JSON-serialisable model.

Times are integer nanoseconds and sizes integer bytes throughout; percentages and ratios are floats
computed from those integers and rounded only when rendered. A field that could not be computed is
None (never 0) and the reason is in `skipped`. `schemas/summary.schema.json` is generated from this
model (`pa schema summary`) and checked by a test.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from pa.metrics.origin import HostStr, KernelStr, MarkerStr, OwnStr, PathStr, ProfileStr
from pa.metrics.phases.model import PhaseSummary

SUMMARY_SCHEMA_VERSION = "1.6"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class QueryFileRef(_Model):
    """A query file that produced one relation, for provenance."""

    relation: OwnStr
    path: PathStr = Field(description="path under queries/, e.g. nsys/base/kernels.sql")
    sha256: OwnStr


class ProfileInfo(_Model):
    """Which file was read and how."""

    file_name: PathStr
    path: PathStr | None = Field(None, description="absolute path; only kept when asked (--keep-paths)")
    sha256: OwnStr
    size_bytes: int
    format: OwnStr = Field(description="nsys or rocpd")
    vendor: OwnStr = Field(description="nvidia or amd")
    schema_version: ProfileStr
    product_version: ProfileStr | None = None
    query_set: OwnStr = Field(description="query set used, e.g. nsys/3.24")
    query_files: list[QueryFileRef] = Field(default_factory=list)
    host_name: HostStr | None = None
    rank: int | None = Field(None, description="MPI rank of this file when known")
    pid: int | None = Field(None, description="the one process this summary covers when an export of several "
                                              "GPU processes is analysed as ranks (pa.ranks.processes); None: "
                                              "the whole file")


class SkippedItem(_Model):
    """An analysis that was not done, and why ("could not look" is never "healthy")."""

    what: OwnStr
    reason: OwnStr


class HardwareLimits(_Model):
    """Hardware facts of one device as the profile records them (None: not recorded)."""

    sm_count: int | None = None
    memory_bandwidth_bps: int | None = None
    clock_hz: int | None = None
    l2_bytes: int | None = None
    memory_bytes: int | None = None
    threads_per_warp: int | None = None
    max_warps_per_sm: int | None = None
    max_threads_per_block: int | None = None
    max_blocks_per_sm: int | None = None
    max_registers_per_sm: int | None = None
    max_shared_per_sm: int | None = None
    max_shared_per_block: int | None = None
    compute_capability: ProfileStr | None = None
    simd_per_cu: int | None = None
    host_link: OwnStr | None = Field(None, description="assumed host link, e.g. 'PCIe 4.0 x16'")
    host_link_bandwidth_bps: int | None = Field(
        None, description="assumed peak of the host link per direction (not in the profile)")


class DeviceSummary(_Model):
    """Per-device activity. busy = union of kernel, copy and memset intervals on this device."""

    id: int = Field(description="device number as the profile numbers it")
    name: ProfileStr | None = None
    bus_location: HostStr | None = None
    used: bool = Field(description="true when the profile has GPU activity on this device")
    kernel_count: int = 0
    kernel_time_ns: int = Field(0, description="sum of kernel durations (may exceed busy with streams)")
    kernel_busy_ns: int = Field(0, description="union of kernel intervals")
    copy_time_ns: int = 0
    memset_time_ns: int = 0
    busy_ns: int = 0
    utilization_pct: float | None = Field(None, description="busy / span × 100")
    kernel_concurrency: float | None = Field(
        None, description="kernel_time / kernel_busy: mean number of kernels running while any runs")
    exposed_copy_ns: int | None = Field(
        None, description="copy union not overlapped by kernels on this device; None when copies were not read")
    kernel_only_ns: int = Field(
        0, description="kernel union not overlapped by copies on this device: the compute a copy could hide behind")
    compute_busy_ns: int = Field(0, description="union of the compute kernels (communication kernels excluded)")
    communication_kernel_count: int = Field(0, description="NCCL/RCCL kernels (kernel_classes: communication)")
    communication_time_ns: int = Field(0, description="sum of communication kernel durations")
    communication_busy_ns: int = Field(0, description="union of the communication kernels")
    communication_exposed_ns: int = Field(
        0, description="communication union not overlapped by compute kernels (waiting for peers included)")
    communication_recoverable_ns: int = Field(
        0, description="exposed communication that compute not already overlapping communication could hide: "
                       "min(exposed, compute busy − overlapped communication)")
    first_activity_ns: int | None = None
    last_activity_ns: int | None = None
    hardware: HardwareLimits = Field(default_factory=HardwareLimits)


class GpuTotals(_Model):
    """Totals over the devices with activity. Devices are never merged into one timeline.

    Sums over devices are device time: on several GPUs they add up to span × devices, not the span.
    """

    device_count: int = Field(description="devices with GPU activity")
    kernel_count: int
    kernel_time_ns: int
    graph_execution_count: int = Field(
        0, description="kernel records that are whole CUDA graph executions (traced at graph granularity: "
                       "what ran inside is not recorded), counted in kernel_count and kernel_time_ns")
    kernel_busy_ns: int = Field(0, description="sum over used devices of the union of kernel intervals")
    busy_ns: int = Field(description="sum over used devices of per-device busy time (kernels, copies, memsets)")
    utilization_pct: float | None = Field(
        None, description="busy / (span × device_count) × 100: any GPU activity, copies and memsets included")
    kernel_utilization_pct: float | None = Field(
        None, description="kernel busy / (span × device_count) × 100: kernels alone")
    copy_time_ns: int | None = Field(0, description="sum of copy durations; None when copies were not read")
    memset_time_ns: int | None = Field(0, description="sum of memset durations; None when memsets were not read")
    exposed_copy_ns: int | None = Field(
        0, description="copy time not overlapped by kernels on the same device; None when copies were not read")
    window_ns: int = Field(0, description="sum over devices of the active window (first to last GPU operation)")
    leading_idle_ns: int = Field(0, description="sum over devices of span start → first GPU operation")
    trailing_idle_ns: int = Field(0, description="sum over devices of last GPU operation → span end")
    idle_in_window_ns: int = Field(0, description="sum over devices of idle time inside the active window")
    idle_by_cause: dict[OwnStr, int] = Field(
        default_factory=dict, description="idle_in_window_ns partitioned by gap cause (see DeviceGaps)")
    recoverable_by_cause: dict[OwnStr, int] = Field(
        default_factory=dict, description="per gap cause, the idle time its fix can recover (see DeviceGaps)")
    critical_busy_ns: int = Field(0, description="sum over devices of the busy time the host waited on (DeviceGaps)")
    wind_down_host_work_ns: int = Field(
        0, description="sum over devices of the host-work idle after each device's last kernel (DeviceGaps)")
    compute_busy_ns: int = Field(0, description="sum over used devices of the union of compute kernels "
                                                "(communication kernels excluded)")
    communication_kernel_count: int = 0
    communication_time_ns: int = Field(0, description="sum of NCCL/RCCL kernel durations")
    communication_busy_ns: int = Field(0, description="sum over devices of the union of communication kernels")
    communication_exposed_ns: int = Field(0, description="sum over devices of communication not overlapped by compute")
    communication_recoverable_ns: int = Field(
        0, description="what overlapping communication with compute recovers, device time: the smallest per-device "
                       "gain (DeviceSummary) times the devices that communicate, since the collectives tie them "
                       "together and the run shortens by the slowest GPU's gain at most")
    communication_devices: int = Field(0, description="devices that ran communication kernels")
    compute_imbalance_ns: int | None = Field(
        None, description="over the devices that ran communication kernels (two or more): the largest compute "
                          "busy minus their mean, the time the slowest device keeps the others waiting in "
                          "collectives; None with fewer than two")
    first_operation_ns: int | None = Field(
        None, description="offset from the span start of the first GPU operation on any device")
    last_operation_ns: int | None = Field(
        None, description="offset from the span start of the end of the last GPU operation on any device")


class GapBucket(_Model):
    """One bucket of the idle-gap histogram."""

    label: OwnStr
    lower_ns: int
    upper_ns: int | None
    count: int
    total_ns: int


class Gap(_Model):
    """One idle interval of a device and what the host was doing meanwhile."""

    device: int
    start_ns: int = Field(description="offset from the span start")
    duration_ns: int
    host_activity: OwnStr = Field(
        description="the gap's cause: sync, copy_wait, launch, alloc, compile, mpi, dispatch, cpu_stall, "
                    "overhead or unknown")
    host_cover_pct: dict[OwnStr, float] = Field(
        default_factory=dict, description="share of the gap covered by each kind of host call "
                                          "(sync, copy, launch, alloc, mpi)")
    recoverable_ns: int = Field(0, description="what the fix of its cause can recover of this gap")


class HostWork(_Model):
    """What the host was doing in a device's host-work gaps (cause cpu_stall), from one source."""

    source: OwnStr = Field(description="os_runtime (OS calls, outermost only) or cpu_samples (leaf function)")
    name: ProfileStr
    ns: int | None = Field(None, description="os_runtime: gap time its calls cover")
    samples: int | None = Field(None, description="cpu_samples: samples taken inside the gaps")
    share_pct: float = Field(description="of the host-work gap time (os_runtime) or of the samples in it")


class DeviceRead(_Model):
    """A framework call site that reads a device value (NVTX range such as aten::item): the host waits."""

    name: MarkerStr = Field(description="the range name without its op id / sequence suffix")
    count: int
    range_ns: int = Field(description="union of its ranges per process, summed over processes")
    host_blocked_ns: int = Field(description="time inside them the host spent blocked on the GPU (sync calls, "
                                             "copy calls that waited for their copy)")
    gpu_idle_ns: int = Field(description="in-window GPU idle gaps that start while the host is inside them, "
                                         "Σ over devices")
    recoverable_ns: int = Field(description="of those gaps that are synchronisation round trips, what running ahead "
                                            "recovers (as for gap cause sync), Σ over devices")


class DeviceReads(_Model):
    """Framework calls that read device values (DeviceRead per call site) and their totals.

    The totals are over the union of every call site's ranges, so call sites nested in one another
    (aten::item inside aten::is_nonzero) count their shared time once.
    """

    sites: list[DeviceRead]
    host_blocked_ns: int
    gpu_idle_ns: int
    recoverable_ns: int


class DeviceGaps(_Model):
    """Idle gaps of one device inside its active window (first to last GPU operation).

    Each gap has one cause (pa/metrics/gaps.py): overhead (the part profiler overhead covers),
    cpu_stall (host work outside the GPU API: most of the gap and at least 1 ms, or most of a gap no
    wait explains), sync / copy_wait (the host blocked on the GPU when it ran dry, and running ahead
    would hide most of the gap: a round trip), dispatch (the host's own time in a gap under 100 µs:
    per-operation dispatch between small operations), launch, alloc, compile, load (lazy module
    loading), mpi (the call kind covering most of the gap), unknown (no host calls captured).
    `recoverable_by_cause` is what each cause's fix can recover as the trace proves it: min(gap, busy
    interval before it) for round trips; for host work and MPI together at most the device's busy
    time (work overlapped with GPU work can hide only behind GPU work); for launch the part the
    launch calls cover; the gap minus the device's shortest gap for dispatch; the calls' own time
    for alloc and compile; nothing for load (start-up, paid once) and overhead.
    """

    device: int
    window_ns: int
    busy_ns: int
    idle_ns: int = Field(description="window − busy")
    gap_count: int
    leading_idle_ns: int = Field(description="span start → first GPU operation on this device")
    trailing_idle_ns: int = Field(description="last GPU operation → span end")
    idle_by_cause: dict[OwnStr, int] = Field(default_factory=dict, description="idle_ns partitioned by gap cause")
    recoverable_by_cause: dict[OwnStr, int] = Field(
        default_factory=dict, description="per cause, the idle time its fix can recover")
    critical_busy_ns: int = Field(
        0, description="busy time the host waited on (busy intervals ending while it was blocked in a sync, "
                       "copy or MPI call, and the last one): faster GPU work shortens the run only there")
    wind_down_host_work_ns: int = Field(
        0, description="the host-work idle (idle_by_cause.cpu_stall) of the gaps after this device's last kernel: "
                       "the run's output and clean-up, with no GPU computation after it")
    host_work: list[HostWork] = Field(
        default_factory=list, description="what the host was doing in the host-work gaps, where the export "
                                          "has OS runtime calls or CPU samples (largest share first)")
    histogram: list[GapBucket]
    largest: list[Gap]


class KernelStats(_Model):
    """Statistics of one kernel, grouped by full demangled name."""

    name: KernelStr
    short_name: KernelStr | None = None
    display_name: KernelStr | None = Field(
        None, description="the short name, plus what tells it apart when several kernels share it "
                          "(first template argument, then a number in rank order)")
    devices: list[int] = Field(default_factory=list)
    kernel_class: OwnStr = Field("compute", description="compute, communication (an NCCL/RCCL kernel), or graph "
                                                        "(whole executions of one CUDA graph, traced at graph "
                                                        "granularity: no launch configuration)")
    count: int
    total_ns: int
    mean_ns: float
    min_ns: int
    max_ns: int
    std_ns: float = Field(description="population standard deviation, two-pass (stable)")
    cv: float | None = Field(None, description="std / mean")
    share_of_gpu_time_pct: float | None = None
    grid: list[int] | None = Field(None, description="most frequent grid, blocks (x, y, z)")
    block: list[int] | None = Field(None, description="most frequent block, threads (x, y, z)")
    launch_configs: int = Field(1, description="number of distinct grid/block configurations")
    registers_per_thread: int | None = None
    shared_bytes: int | None = Field(None, description="static + dynamic shared memory (LDS) per block")
    wave_fill_ratio: float | None = Field(
        None, description="blocks / (SMs × resident blocks per SM by thread and block limits), capped "
                          "at 1; a wave-fill ratio, not occupancy")


class CopyStats(_Model):
    """Copies of one direction and memory-kind pair."""

    direction: OwnStr
    src_kind: OwnStr
    dst_kind: OwnStr
    count: int
    bytes: int
    total_ns: int
    mean_bytes: float
    effective_bandwidth_bps: float | None = Field(None, description="bytes / total time")
    peak_bandwidth_bps: int | None = Field(
        None, description="host link for host/peer copies, device memory for DtoD")
    peak_basis: OwnStr | None = None
    bandwidth_pct_of_peak: float | None = None
    pinned_estimate_ns: int | None = Field(
        None, description="pageable host copies only: time the same copies would take from pinned memory, "
                          "each at the achievable pinned rate but no faster than the fastest copy of its "
                          "direction, never more than it took")
    pinned_rate_bps: float | None = Field(None, description="the achievable pinned rate used for the estimate")
    pinned_rate_basis: OwnStr | None = Field(None, description="where that rate comes from")


class RoundTrip(_Model):
    """Copies of one size that go to the device and come back, again and again."""

    bytes: int
    htod_count: int
    htod_ns: int
    dtoh_count: int
    dtoh_ns: int


class CopyTotals(_Model):
    """Copies summed by direction."""

    direction: OwnStr
    count: int
    bytes: int
    total_ns: int
    pageable_bytes: int = 0


class MigrationCause(_Model):
    """Unified-memory migrations of one cause."""

    count: int
    bytes: int
    total_ns: int


class MigrationSummary(_Model):
    """Unified (managed) memory migrations (pa.metrics.migrations); explicit copies are elsewhere."""

    count: int
    bytes: int
    total_ns: int
    by_cause: dict[OwnStr, MigrationCause] = Field(
        default_factory=dict, description="page_fault, user_prefetch, speculative_prefetch, eviction, "
                                          "access_counters, unknown")
    fault_bytes: int = Field(0, description="bytes moved by fault-driven migrations (page faults and the "
                                                        "speculative prefetch the driver issues on them)")
    fault_busy_ns: int = Field(0, description="union of fault-driven migrations, summed over devices")
    fault_exposed_ns: int = Field(0, description="that union where no kernel runs on the device")
    fault_overlapped_ns: int = Field(
        0, description="that union under kernels: faults stall the kernels for an unknown share of it (not claimed)")
    fault_recoverable_ns: int = Field(
        0, description="what prefetching recovers: per device max(0, exposed − fault bytes / host-link peak), "
                       "summed; 0 where the link peak is unknown")


class CopySummary(_Model):
    """All copy facts."""

    count: int
    bytes: int
    total_ns: int
    busy_ns: int = Field(description="union of copy intervals, summed over devices")
    exposed_ns: int = Field(description="copy union not overlapped by kernels on the same device")
    pageable_bytes: int
    pageable_share_pct: float | None = Field(None, description="pageable / host-side bytes × 100")
    by_direction: list[CopyTotals]
    by_kind: list[CopyStats]
    round_trips: list[RoundTrip] = Field(
        default_factory=list, description="sizes copied host→device and back at least twice each way, the "
                                          "largest by time first (at most 10; round_trip_* are totals over all)")
    round_trip_count: int = Field(0, description="Σ over those sizes of min(HtoD count, DtoH count)")
    round_trip_ns: int = Field(0, description="time of all their copies")
    round_trip_resident_saving_ns: int = Field(
        0, description="what keeping those buffers resident on the device would save: all their copies but "
                       "the initial uploads (before the device's first kernel; the first at least) and the "
                       "final downloads (after its last kernel; the last at least) of each size")
    migrations: MigrationSummary | None = Field(
        None, description="unified-memory migrations (None: none recorded); by_direction, by_kind and the "
                          "round trips count explicit copies only")


class MemsetStats(_Model):
    """Memsets by memory kind."""

    mem_kind: OwnStr
    count: int
    bytes: int | None = Field(description="None when the profile does not record memset sizes (rocpd)")
    total_ns: int


class ApiBlocked(_Model):
    """CPU time blocked in one synchronising API (merged over threads of a process)."""

    name: ProfileStr
    count: int
    total_ns: int = Field(description="sum of call durations")
    union_ns: int = Field(description="union over threads, summed over processes")


class SyncSummary(_Model):
    """CPU blocked in synchronisation and GPU-side sync records."""

    cpu_blocked_ns: int = Field(description="union over threads per process, summed over processes")
    process_count: int = Field(1, description="processes that made GPU API calls")
    cpu_blocked_pct_of_span: float | None = Field(
        None, description="per process: cpu_blocked_ns / (span × process_count) × 100, never above 100")
    call_count: int
    by_api: list[ApiBlocked]
    gpu_sync_events: dict[OwnStr, int] = Field(default_factory=dict, description="count by sync type")
    gpu_sync_time_ns: dict[OwnStr, int] = Field(default_factory=dict, description="time by sync type")
    blocking_copy_calls: int = Field(
        0, description="synchronous copy calls (cudaMemcpy, hipMemcpy: they wait for the GPU by contract), and "
                       "copy and memset calls that returned only after their GPU operation ended: the host "
                       "waited like in a sync call, whatever the call's name (a pageable cudaMemcpyAsync does)")
    blocking_copy_ns: int = Field(0, description="host time in those calls: union per process, summed over processes")
    blocking_copy_pct_of_span: float | None = Field(None, description="per process, like cpu_blocked_pct_of_span")
    free_wait_calls: int = Field(
        0, description="free calls (cudaFree, cuMemFree, hipFree; not the stream-ordered *Async ones) during "
                       "which a GPU of the calling process was busy: a free synchronises with the device "
                       "implicitly, so the host waited in them like in a sync call")
    free_wait_ns: int = Field(
        0, description="host time in those calls while the process's GPUs were busy (the wait), union per "
                       "process, summed over processes")


class AllocSummary(_Model):
    """Device memory allocation and free calls (cudaMalloc/cudaFree, cuMemAlloc, hipMalloc, ...)."""

    calls: int
    time_ns: int = Field(description="union per process of the calls, summed over processes")
    calls_in_window: int = Field(description="calls inside the GPUs' active window (steady state)")
    time_in_window_ns: int = Field(description="their time, union per process, summed over processes")
    allocs_in_window: int = Field(0, description="of calls_in_window, the allocation calls")
    frees_in_window: int = Field(0, description="of calls_in_window, the free calls (fewer frees than "
                                                "allocations in a loop: memory is leaked or kept)")


class StartupCall(_Model):
    """The longest GPU API call before the first GPU operation: usually what start-up is made of."""

    name: ProfileStr
    start_ns: int = Field(description="offset from the span start")
    duration_ns: int
    before_first_operation_ns: int = Field(description="the span start to the first GPU operation, for scale")


class LaunchApiStats(_Model):
    """Launch overhead of one launch API name."""

    name: ProfileStr
    count: int
    api_mean_ns: float
    idle_queue_launches: int = Field(description="launches whose stream was idle when the call ended")
    latency_mean_ns: float | None = Field(None, description="API end → kernel start, idle queue only")
    latency_median_ns: float | None = None
    latency_p95_ns: float | None = None


class LaunchSummary(_Model):
    """Launch overhead: API end → kernel start where the queue was empty."""

    launch_count: int = Field(description="kernel and graph launch calls")
    launches_per_s: float | None = None
    correlated_kernels: int = Field(description="kernels matched to their launch call (one per graph launch: "
                                                "the first of its records to start)")
    small_kernel_count: int = Field(description="kernels shorter than the API call that launched them "
                                                "(kernel launches only: a graph launch issues a whole graph)")
    started_before_return: int = Field(
        0, description="kernels that started before their launch call returned: queued behind the call, "
                       "not a launch latency (left out of the latency statistics)")
    small_kernel_fraction: float | None = Field(
        None, description="small_kernel_count over the kernels matched to kernel launch calls")
    api_time_ns: int = Field(description="sum of launch call durations")
    by_api: list[LaunchApiStats]
    graph_launch_count: int = Field(0, description="graph launch calls (cudaGraphLaunch, hipGraphLaunch), "
                                                   "counted in launch_count")
    graph_launched_kernels: int = Field(
        0, description="kernel records issued by graph launch calls: whole graph executions (graph-granularity "
                       "trace) or the graphs' own kernels (nsys --cuda-graph-trace=node, HIP graphs); each "
                       "launch pairs with the first of them to start, the others have no launch latency")


class StreamStats(_Model):
    """One (device, stream) pair: stream ids are only unique per device."""

    device: int
    stream: int
    kernel_count: int
    copy_count: int
    memset_count: int
    busy_ns: int
    share_of_span_pct: float | None = None


class MarkerStats(_Model):
    """NVTX / rocTX ranges of one name."""

    name: MarkerStr
    domain: MarkerStr | None = None
    count: int
    total_ns: int
    mean_ns: float
    max_depth: int = 0
    name_variants: int = Field(1, description="raw names aggregated under this normalised name "
                                              "(pa.metrics.marker_names)")


class TopLevelRange(_Model):
    """A range at nesting depth 0 on its thread and domain (start/end ranges are always depth 0)."""

    pid: int
    tid: int
    name: MarkerStr
    start_ns: int = Field(description="offset from the span start")
    duration_ns: int


class IterationStats(_Model):
    """The repeated same-named top-level range taken as the run's iteration (pa.metrics.iterations)."""

    name: MarkerStr = Field(description="normalised range name, e.g. 'Iteration #'")
    pid: int
    tid: int
    count: int = Field(description="top-level ranges of this name on that thread")
    total_ns: int
    median_ns: int = Field(description="median duration of one iteration")
    min_ns: int
    max_ns: int
    start_ns: int | None = Field(None, description="the first iteration's start (from the span start)")
    end_ns: int | None = Field(None, description="the last iteration's end (from the span start)")


class SteadyWindow(_Model):
    """The marked loop taken as the run's steady state (pa.metrics.steady): findings are judged from its start on."""

    start_ns: int = Field(description="the first iteration's start (from the span start)")
    end_ns: int = Field(description="the last GPU operation's end (from the span start): the judged range's end")
    name: MarkerStr = Field(description="the iteration range's normalised name")
    count: int = Field(description="iterations in the window")
    kernel_share_pct: float = Field(description="share of the run's kernel time (per-device union) inside the window")


class MarkerSummary(_Model):
    """NVTX / rocTX markers."""

    count: int
    open_ranges: int = Field(description="ranges still open at the end of the capture (ignored in sums)")
    by_name: list[MarkerStats]
    top_level_count: int = Field(0, description="ranges at depth 0, all threads")
    top_level: list[TopLevelRange] = Field(
        description="the longest top-level ranges, at most 50 (see top_level_count for the total)")
    merged_names: int = Field(0, description="raw names that normalisation merged into another (ids, "
                                             "sequence numbers, addresses dropped)")
    iterations: IterationStats | None = Field(
        None, description="the repeated top-level range taken as one iteration; None when no name repeats "
                          "at least 3 times at the top level")


class MpiOpStats(_Model):
    """One MPI operation name."""

    name: ProfileStr
    kind: OwnStr
    count: int
    total_ns: int = Field(description="merged per thread, summed over threads")
    mean_ns: float
    max_ns: int
    bytes: int | None = None


class CollectiveStats(_Model):
    """NCCL/RCCL kernels of one collective type on one device (pa.metrics.collectives).

    The type comes from the kernel name (AllReduce, AllGather, ReduceScatter, Broadcast, Reduce,
    SendRecv, AllToAll, Send, Recv, Generic: a kernel that runs any collective, unknown: a name no
    naming scheme fits). Small kernels are those shorter than the threshold collective_latency_ns.
    """

    device: int = Field(description="device number as the profile numbers it")
    type: OwnStr = Field(description="collective type the kernel names state")
    count: int
    total_ns: int = Field(description="sum of the kernels' durations")
    mean_ns: float
    median_ns: float
    min_ns: int
    max_ns: int
    busy_ns: int = Field(description="union of these kernels")
    exposed_ns: int = Field(
        description="that union minus the union of the device's compute kernels (no compute beside them; "
                    "waiting for peers included)")
    small_count: int = Field(description="kernels shorter than collective_latency_ns")
    small_time_ns: int = Field(description="sum of the small kernels' durations")
    small_min_ns: int | None = Field(None, description="the shortest small kernel; null without one")
    small_median_ns: float | None = Field(None, description="median small kernel; null without one")
    small_busy_ns: int = Field(description="union of the small kernels")
    small_exposed_ns: int = Field(description="union of the small kernels minus the union of the compute kernels")
    bytes: int | None = Field(
        None, description="message bytes; null: unknown (the SQLite export keeps no NCCL NVTX payload)")
    ranks: int | None = Field(None, description="ranks in the communicator; null: unknown")
    algbw_bps: float | None = Field(None, description="bytes / total time (nccl-tests algbw); null without bytes")
    busbw_bps: float | None = Field(
        None, description="algbw × the nccl-tests bus factor of the type (2(n−1)/n AllReduce, (n−1)/n "
                          "AllGather/ReduceScatter/AllToAll, 1 SendRecv/Broadcast/Reduce); null without bytes or ranks")
    kernel_names: list[KernelStr] = Field(
        default_factory=list, description="distinct kernel names (identifier only) of this type on this device")


class MpiSummary(_Model):
    """MPI calls of this file."""

    ranks: list[int] = Field(default_factory=list)
    call_count: int = Field(description="MPI calls, MPI_Init / MPI_Init_thread / MPI_Finalize not included")
    total_ns: int = Field(description="union over threads per process, summed over processes; without "
                                      "MPI_Init / MPI_Finalize (start-up and tear-down: setup_ns)")
    process_count: int = Field(1, description="processes with MPI calls")
    pct_of_span: float | None = Field(None, description="per process: total / (span × process_count) × 100")
    by_kind: dict[OwnStr, int] = Field(default_factory=dict, description="union time by p2p/collective/wait/other "
                                                                         "(without MPI_Init / MPI_Finalize)")
    by_op: list[MpiOpStats] = Field(description="every MPI operation, MPI_Init / MPI_Finalize included")
    setup_call_count: int = Field(0, description="MPI_Init, MPI_Init_thread and MPI_Finalize calls")
    setup_ns: int = Field(0, description="their time (union per process, summed): start-up and tear-down")


class OverheadSummary(_Model):
    """Profiler overhead, kept apart from the application's time."""

    count: int
    total_ns: int = Field(description="union over threads per process, summed over processes")
    process_count: int = Field(1, description="processes with overhead records")
    pct_of_span: float | None = Field(None, description="per process: total / (span × process_count) × 100")


class ProcessSummary(_Model):
    """A process that did GPU work or called MPI (pa.metrics.processes): a candidate rank of the run."""

    pid: int
    name: ProfileStr | None = None
    devices: list[int] = Field(default_factory=list, description="devices its GPU operations ran on")
    gpu_ops: int = Field(0, description="its kernels, copies and memsets")
    mpi_calls: int = 0
    mpi_rank: int | None = Field(None, description="the one MPI rank its calls carry; None: none or several")


class ProfileSummary(_Model):
    """Everything `pa summary` knows about one profile."""

    summary_schema_version: OwnStr = SUMMARY_SCHEMA_VERSION
    pa_version: OwnStr
    profile: ProfileInfo
    span_start_ns: int | None = Field(None, description="first event of any kind, profile clock")
    span_end_ns: int | None = None
    span_ns: int = Field(description="first to last event of any kind")
    gpu: GpuTotals
    devices: list[DeviceSummary]
    idle_gaps: list[DeviceGaps]
    kernels: list[KernelStats] = Field(description="all kernels, largest total first")
    copies: CopySummary | None = None
    memsets: list[MemsetStats] | None = None
    sync: SyncSummary | None = None
    device_reads: DeviceReads | None = Field(
        None, description="framework calls that read device values, by call site; None when no markers")
    allocations: AllocSummary | None = None
    startup_call: StartupCall | None = Field(
        None, description="the longest GPU API call ending before the first GPU operation (the first "
                          "cudaMalloc / cudaMemsetAsync creating the context takes seconds): null without one")
    launch: LaunchSummary | None = None
    streams: list[StreamStats]
    markers: MarkerSummary | None = None
    steady_window: SteadyWindow | None = Field(
        None, description="the marked loop `pa analyze` judges the findings on (pa.metrics.steady); None: the "
                          "GPU's active window")
    judged_range: SteadyWindow | None = Field(
        None, description="set on the summary the rules read when the run is judged on its steady window: its "
                          "GPU, host and gap metrics count only the events overlapping that range; span, "
                          "start-up, markers and phases are the whole capture's")
    mpi: MpiSummary | None = None
    processes: list[ProcessSummary] = Field(
        default_factory=list, description="processes with GPU operations or MPI calls, by pid: an export of "
                                          "several is analysed as a rank set (pa.ranks.processes)")
    collectives: list[CollectiveStats] | None = Field(
        None, description="NCCL/RCCL kernels per (device, collective type), largest total first per device; "
                          "[] without communication kernels, null when the kernels or their classes were not read")
    overhead: OverheadSummary | None = None
    phases: list[PhaseSummary] | None = Field(
        None, description="non-overlapping phases of the timeline (markers or kernel mix); None: no kernels")
    captured: dict[OwnStr, bool] = Field(
        default_factory=dict, description="which kinds of data the export holds (relation name -> rows "
                                          "present), so that nothing asks to capture what is already there")
    host_side: dict[OwnStr, int] | None = Field(
        None, description="facts recovered from host API arguments when GPU activity tables are empty "
                          "(degraded capture); host-side, never GPU activity")
    skipped: list[SkippedItem] = Field(default_factory=list)
    warnings: list[OwnStr] = Field(default_factory=list)
