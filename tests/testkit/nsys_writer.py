"""Write a `Scenario` as an Nsight Systems SQLite export, in the table layout of a real nsys version.

Why: pa must read real exports of many nsys versions, whose schemas drift (columns added, tables
renamed, enum tables present or not). Fixtures written here reproduce the DDL of real exports
(column names, order and declared types, taken from real files; the DDL comments are left out), so
a reader that works on these files works on the real ones, and the planted ground truth of the
scenario is known exactly.

Layouts (`layout=`):

- ``"3.13"``: Nsight Systems 2024.5 (`META_DATA_EXPORT`, EXPORT_SCHEMA_VERSION 3.13.2, ENUM_* tables).
- ``"3.24"``: Nsight Systems 2026.1 (EXPORT_SCHEMA_VERSION 3.24.14): SYNCHRONIZATION gains
  deprecatedSyncType/eventSyncId, KERNEL the cluster/qmd columns, MEMCPY copyCount,
  PROFILER_OVERHEAD has overheadType instead of returnValue, plus CUPTI_ACTIVITY_KIND_OVERHEAD
  (created empty: scenario overhead is host-side profiler overhead) and TARGET_INFO_CUDA_DEVICE.
- ``"2.9"``: Nsight Systems 2022.1 (`EXPORT_META_DATA`, EXPORT_SCHEMA_VERSION 2.9.1), no ENUM_*
  tables at all: enum columns hold the bare integers. The real 2022.1 export uses the same integers
  as the later ENUM tables (srcKind 0 = pageable, 2 = device; not CUPTI's own memory-kind numbering),
  so that is what is written.
- ``"legacy"``: exports from before 2021: no metadata table, `MemcpyOperationStrings(id, name)`
  ("[CUDA memcpy HtoD]"), `DomainStrings`, `TARGET_INFO_CUDA_GPU` in CUPTI's legacy units
  (coreClockRate kHz, globalMemorySize MiB, globalMemoryBandwidth kB/s) next to the short
  `TARGET_INFO_GPU(vmId, deviceId, name, busLocation, isDiscrete)`; no PROCESSES,
  TARGET_INFO_SESSION_START_TIME or TARGET_INFO_SYSTEM_ENV (so the host name is not stored).

Encoding, as in the real files: globalPid = (1 << 48) | (pid << 24) and globalTid = globalPid | tid
(the 1 << 48 is nsys's VM id, also written as TARGET_INFO_GPU.vmId and TARGET_INFO_SYSTEM_ENV.globalVid).
Times are the scenario's integer ns unchanged.

Traps planted on purpose, mirroring real files:

- `sharedMemoryExecuted` is a driver carve-out that never equals static + dynamic shared memory.
- On multi-GPU scenarios `TARGET_INFO_GPU.id` differs from `cuDevice`; the activity rows carry
  `cuDevice` (the CUDA device number), as in the real 2024.5 export.
- NVTX markers alternate between inline `text` and registered `textId` → StringIds.
- A marker whose `end < start` is written with `end` NULL: a range still open when capture stopped.
- `EXPORT_HOST` in the export metadata is the exporting machine, not the profiled host; the profiled
  host is the "Hostname" row of TARGET_INFO_SYSTEM_ENV (nameEnum 619), as nsys stores it.
- ``permute_enums=True`` (modern layouts only) writes the ENUM_* tables with the SAME labels but
  DIFFERENT integer ids (each enum's ids rotated by half its length, so every id moves), and encodes
  every activity row with those ids. A reader that hard-codes CUPTI integers then misreads pinned as
  pageable, Device-to-Device as something else, push/pop NVTX ranges as another event type; a reader
  that joins the ENUM tables by label reads the same facts as from the unpermuted file.

Tables are always created for the layout (an empty event list gives a present, empty table, meaning
"traced, no activity"), except MPI tables, which exist only when the scenario has MPI calls (as when
MPI tracing was off), CUPTI_ACTIVITY_KIND_GRAPH_TRACE, only when it has CUDA graphs traced whole
(`Scenario.graph_executions`; a kernel's `graph_node_id` is its graphNodeId at node granularity), and
the tables named in `omit_tables` (to test "table absent" handling).
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any

from testkit.scenario import ApiKind, Device, Marker, MpiCall, Scenario

LAYOUTS = ("3.13", "3.24", "2.9", "legacy")
VM_ID = 1 << 48
_ID_LIMIT = 1 << 24
INT_MAX = 2147483647  # CUPTI's "on the host" for a graph execution's device and context
EVENT_ID_NONE = 4294967295  # what nsys writes in eventId / eventSyncId when no CUDA event applies
MPI_COMM_WORLD_HANDLE = 0x44000000  # MPICH's MPI_COMM_WORLD

Row = tuple[Any, ...]

# --------------------------------------------------------------------------------------------
# Enums: (id, name, label) exactly as the real ENUM_* tables have them.
# --------------------------------------------------------------------------------------------

_MEMCPY_OPER = (
    (0, "CUDA_MEMCPY_KIND_UNKNOWN", "Unknown"),
    (1, "CUDA_MEMCPY_KIND_HTOD", "Host-to-Device"),
    (2, "CUDA_MEMCPY_KIND_DTOH", "Device-to-Host"),
    (3, "CUDA_MEMCPY_KIND_HTOA", "Host-to-Array"),
    (4, "CUDA_MEMCPY_KIND_ATOH", "Array-to-Host"),
    (5, "CUDA_MEMCPY_KIND_ATOA", "Array-to-Array"),
    (6, "CUDA_MEMCPY_KIND_ATOD", "Array-to-Device"),
    (7, "CUDA_MEMCPY_KIND_DTOA", "Device-to-Array"),
    (8, "CUDA_MEMCPY_KIND_DTOD", "Device-to-Device"),
    (9, "CUDA_MEMCPY_KIND_HTOH", "Host-to-Host"),
    (10, "CUDA_MEMCPY_KIND_PTOP", "Peer-to-Peer"),
    (11, "CUDA_MEMCPY_KIND_UVM_HTOD", "Unified Host-to-Device"),
    (12, "CUDA_MEMCPY_KIND_UVM_DTOH", "Unified Device-to-Host"),
    (13, "CUDA_MEMCPY_KIND_UVM_DTOD", "Unified Device-to-Device"),
)
_UM_MIGRATION = (
    (0, "CUDA_UNIFIED_MEMORY_MIGRATION_CAUSE_UNKNOWN", "Unknown"),
    (1, "CUDA_UNIFIED_MEMORY_MIGRATION_CAUSE_USER", "User prefetch"),
    (2, "CUDA_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE", "Page fault"),
    (3, "CUDA_UNIFIED_MEMORY_MIGRATION_CAUSE_PREFETCH", "Speculative prefecth"),   # sic, as Nsight writes it
    (4, "CUDA_UNIFIED_MEMORY_MIGRATION_CAUSE_EVICTION", "Eviction"),
    (5, "CUDA_UNIFIED_MEMORY_MIGRATION_CAUSE_ACCESS_COUNTERS", "Access counters"),
)
_UM_CAUSE_LABEL = {"page_fault": "Page fault", "user_prefetch": "User prefetch",
                   "speculative_prefetch": "Speculative prefecth", "eviction": "Eviction",
                   "access_counters": "Access counters"}
_MEM_KIND = (
    (0, "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE", "Pageable"),
    (1, "CUDA_MEMOPR_MEMORY_KIND_PINNED", "Pinned"),
    (2, "CUDA_MEMOPR_MEMORY_KIND_DEVICE", "Device"),
    (3, "CUDA_MEMOPR_MEMORY_KIND_ARRAY", "Array"),
    (4, "CUDA_MEMOPR_MEMORY_KIND_MANAGED", "Managed"),
    (5, "CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC", "Device Static"),
    (6, "CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC", "Managed Static"),
    (7, "CUDA_MEMOPR_MEMORY_KIND_UNKNOWN", "Unknown"),
)
_SYNC_TYPE = (
    (0, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN", "Unknown"),
    (1, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE", "Event sync"),
    (2, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT", "Stream wait sync"),
    (3, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE", "Stream sync"),
    (4, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE", "Context sync"),
)
_KERNEL_LAUNCH_TYPE = (
    (0, "CUDA_KERNEL_LAUNCH_TYPE_UNKNOWN", "Unknown"),
    (1, "CUDA_KERNEL_LAUNCH_TYPE_REGULAR", "Regular"),
    (2, "CUDA_KERNEL_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE", "Coop Single Device"),
    (3, "CUDA_KERNEL_LAUNCH_TYPE_COOPERATIVE_MULTI_DEVICE", "Coop Multi Device"),
)
_OVERHEAD_TYPE = (
    (0, "OVERHEAD_UNDEFINED", "Undefined"),
    (1, "OVERHEAD_UNKNOWN", "Unknown"),
    (2, "OVERHEAD_DRIVER_COMPILER", "Driver JIT compiler (CUDA)"),
    (3, "OVERHEAD_CUPTI_BUFFER_FLUSH", "Buffer flush (Profiler)"),
    (4, "OVERHEAD_CUPTI_INSTRUMENTATION", "Instrumentation (Profiler)"),
    (5, "OVERHEAD_CUPTI_RESOURCE", "Resource creation/destruction (Profiler)"),
    (6, "OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING", "Runtime module loading (CUDA)"),
    (7, "OVERHEAD_LAZY_FUNCTION_LOADING", "Lazy function loading (CUDA)"),
    (8, "OVERHEAD_COMMAND_BUFFER_FULL", "Command buffer full (CUDA)"),
)
_EVENT_CLASS_313 = (
    (0, "TRACE_PROCESS_EVENT_CUDA_RUNTIME", "CUDA runtime"),
    (1, "TRACE_PROCESS_EVENT_CUDA_DRIVER", "CUDA driver"),
    (3, "TRACE_PROCESS_EVENT_TSP_OVERHEAD", "TSP overhead"),
    (6, "TRACE_PROCESS_EVENT_NVTX_START", "NVTX start"),
    (7, "TRACE_PROCESS_EVENT_NVTX_FINISH", "NVTX finish"),
    (26, "TRACE_PROCESS_EVENT_CUDA_API", "CUDA API"),
)
_EVENT_CLASS_324 = (*_EVENT_CLASS_313, (103, "TRACE_PROCESS_EVENT_CUDA_OVERHEAD", "CUDA overhead"))
# ENUM_NSYS_EVENT_TYPE: every NVTX row of the real table plus a few neighbours (name == label there).
_EVENT_TYPE_NAMES = {
    0: "Unknown", 32: "NvtxEvents", 33: "NvtxCategory", 34: "NvtxMark", 35: "NvtxPushRange",
    36: "NvtxPopRange", 37: "NvtxStartRange", 38: "NvtxEndRange", 39: "NvtxThread", 45: "Cuda",
    46: "CudaDevice", 59: "NvtxPushPopRange", 60: "NvtxStartEndRange", 64: "NvtxtCategory",
    65: "NvtxtMark", 66: "NvtxtPushRange", 67: "NvtxtPopRange", 68: "NvtxtStartRange",
    69: "NvtxtEndRange", 70: "NvtxtPushPopRange", 71: "NvtxtStartEndRange", 72: "NvtxtMetaThread",
    73: "NvtxtMetaProcess", 74: "NvtxtMetaFileDisplay", 75: "NvtxDomainCreate",
    76: "NvtxDomainDestroy", 97: "NvtxNameCudaDevice", 98: "NvtxNameCudaContext",
    99: "NvtxNameCudaStream",
}
_EVENT_TYPE = tuple((i, n, n) for i, n in _EVENT_TYPE_NAMES.items())

_DIRECTION_LABEL = {"HtoD": "Host-to-Device", "DtoH": "Device-to-Host", "DtoD": "Device-to-Device",
                    "PtoP": "Peer-to-Peer", "HtoH": "Host-to-Host"}
_MEM_KIND_LABEL = {"pageable": "Pageable", "pinned": "Pinned", "device": "Device",
                   "managed": "Managed"}
_SYNC_LABEL = {"event": "Event sync", "stream_wait": "Stream wait sync", "stream": "Stream sync",
               "context": "Context sync"}
_MARKER_EVENT = {"push_pop": "NvtxPushPopRange", "start_end": "NvtxStartEndRange"}
_LEGACY_MEMCPY_STRINGS = (
    "[CUDA memcpy Unknown]", "[CUDA memcpy HtoD]", "[CUDA memcpy DtoH]", "[CUDA memcpy HtoA]",
    "[CUDA memcpy AtoH]", "[CUDA memcpy AtoA]", "[CUDA memcpy AtoD]", "[CUDA memcpy DtoA]",
    "[CUDA memcpy DtoD]", "[CUDA memcpy HtoH]", "[CUDA memcpy PtoP]",
    "[CUDA Unified Memory memcpy HtoD]", "[CUDA Unified Memory memcpy DtoH]",
    "[CUDA Unified Memory memcpy DtoD]",
)

#: How CUDA spells each semantic API kind in CUPTI_ACTIVITY_KIND_RUNTIME (versioned names).
CUDA_API_NAMES: dict[str, str] = {
    "launch": "cudaLaunchKernel_v7000",
    "graph_launch": "cudaGraphLaunch_v10000",
    "memcpy": "cudaMemcpy_v3020",
    "memcpy_async": "cudaMemcpyAsync_v3020",
    "memset": "cudaMemset_v3020",
    "device_sync": "cudaDeviceSynchronize_v3020",
    "stream_sync": "cudaStreamSynchronize_v3020",
    "event_sync": "cudaEventSynchronize_v3020",
    "malloc": "cudaMalloc_v3020",
    "free": "cudaFree_v3020",
    "module_load": "cuModuleLoadData",
    "other": "cudaGetLastError_v3020",
}

# --------------------------------------------------------------------------------------------
# DDL: column lists of the real exports, per layout.
# --------------------------------------------------------------------------------------------

_NN = "INTEGER NOT NULL"
_I = "INTEGER"
_T = "TEXT"


def _spec(text: str) -> tuple[tuple[str, str], ...]:
    """Parse "name TYPE, name TYPE NOT NULL, ..." into (name, declaration) pairs."""
    out = []
    for part in text.split(","):
        name, _, decl = part.strip().partition(" ")
        out.append((name, decl))
    return tuple(out)


_KERNEL_313 = _spec(
    f"start {_NN}, end {_NN}, deviceId {_NN}, contextId {_NN}, greenContextId {_I}, streamId {_NN}, "
    f"correlationId {_I}, globalPid {_I}, demangledName {_NN}, shortName {_NN}, mangledName {_I}, "
    f"launchType {_I}, cacheConfig {_I}, registersPerThread {_NN}, gridX {_NN}, gridY {_NN}, "
    f"gridZ {_NN}, blockX {_NN}, blockY {_NN}, blockZ {_NN}, staticSharedMemory {_NN}, "
    f"dynamicSharedMemory {_NN}, localMemoryPerThread {_NN}, localMemoryTotal {_NN}, gridId {_NN}, "
    f"sharedMemoryExecuted {_I}, graphNodeId {_I}, sharedMemoryLimitConfig {_I}")
_KERNEL_324 = _KERNEL_313 + _spec(
    f"qmdBulkReleaseDone {_I}, qmdPreexitDone {_I}, qmdLastCtaDone {_I}, graphId {_I}, "
    f"clusterX {_I}, clusterY {_I}, clusterZ {_I}, clusterSchedulingPolicy {_I}, "
    f"maxPotentialClusterSize {_I}, maxActiveClusters {_I}, sharedMemoryRequestedPercentage {_I}")
_KERNEL_29 = tuple(c for c in _KERNEL_313 if c[0] != "greenContextId")
_KERNEL_LEGACY = tuple(c for c in _KERNEL_29 if c[0] not in ("mangledName", "sharedMemoryLimitConfig"))

_MEMCPY_313 = _spec(
    f"start {_NN}, end {_NN}, deviceId {_NN}, contextId {_NN}, greenContextId {_I}, streamId {_NN}, "
    f"correlationId {_I}, globalPid {_I}, bytes {_NN}, copyKind {_NN}, deprecatedSrcId {_I}, "
    f"srcKind {_I}, dstKind {_I}, srcDeviceId {_I}, srcContextId {_I}, dstDeviceId {_I}, "
    f"dstContextId {_I}, migrationCause {_I}, graphNodeId {_I}, virtualAddress {_I}")
_MEMCPY_324 = (*_MEMCPY_313, ("copyCount", _I))
_MEMCPY_29 = tuple(c for c in _MEMCPY_313 if c[0] != "greenContextId")
_MEMCPY_LEGACY = tuple(c for c in _MEMCPY_29 if c[0] not in ("migrationCause", "virtualAddress"))

_MEMSET_MODERN = _spec(
    f"start {_NN}, end {_NN}, deviceId {_NN}, contextId {_NN}, greenContextId {_I}, streamId {_NN}, "
    f"correlationId {_I}, globalPid {_I}, value {_NN}, bytes {_NN}, graphNodeId {_I}, memKind {_I}")
_MEMSET_OLD = tuple(c for c in _MEMSET_MODERN if c[0] != "greenContextId")

_RUNTIME_MODERN = _spec(
    f"start {_NN}, end {_NN}, eventClass {_NN}, globalTid {_I}, correlationId {_I}, nameId {_NN}, "
    f"returnValue {_NN}, callchainId {_I}")
_RUNTIME_LEGACY = _RUNTIME_MODERN[:-1]

_SYNC_313 = _spec(
    f"start {_NN}, end {_NN}, deviceId {_NN}, contextId {_NN}, greenContextId {_I}, streamId {_NN}, "
    f"correlationId {_I}, globalPid {_I}, syncType {_NN}, eventId {_NN}")
_SYNC_324 = _spec(
    f"start {_NN}, end {_NN}, deviceId {_NN}, contextId {_NN}, greenContextId {_I}, streamId {_NN}, "
    f"correlationId {_I}, globalPid {_I}, deprecatedSyncType {_I}, syncType {_NN}, eventId {_NN}, "
    f"eventSyncId {_I}")
_SYNC_OLD = tuple(c for c in _SYNC_313 if c[0] != "greenContextId")

_NVTX_OLD = _spec(
    f"start {_NN}, end {_I}, eventType {_NN}, rangeId {_I}, category {_I}, color {_I}, text {_T}, "
    f"globalTid {_I}, endGlobalTid {_I}, textId {_I}, domainId {_I}, uint64Value {_I}, "
    f"int64Value {_I}, doubleValue REAL, uint32Value {_I}, int32Value {_I}, floatValue REAL, "
    f"jsonTextId {_I}, jsonText {_T}")
# binaryData: present in the newest real export (2026.2); assumed for both modern layouts.
_NVTX_MODERN = (*_NVTX_OLD, ("binaryData", _T))

_GPU_MODERN = _spec(
    f"vmId {_NN}, id {_NN}, name {_T}, busLocation {_T}, isDiscrete {_I}, l2CacheSize {_I}, "
    f"totalMemory {_I}, memoryBandwidth {_I}, clockRate {_I}, smCount {_I}, pwGpuId {_I}, uuid {_T}, "
    f"luid {_I}, chipName {_T}, cuDevice {_I}, ctxswDevPath {_T}, ctrlDevPath {_T}, revision {_I}, "
    f"nodeMask {_I}, constantMemory {_I}, maxIPC {_I}, maxRegistersPerBlock {_I}, "
    f"maxShmemPerBlock {_I}, maxShmemPerBlockOptin {_I}, maxShmemPerSm {_I}, maxRegistersPerSm {_I}, "
    f"threadsPerWarp {_I}, asyncEngines {_I}, maxWarpsPerSm {_I}, maxBlocksPerSm {_I}, "
    f"maxThreadsPerBlock {_I}, maxBlockDimX {_I}, maxBlockDimY {_I}, maxBlockDimZ {_I}, "
    f"maxGridDimX {_I}, maxGridDimY {_I}, maxGridDimZ {_I}, computeMajor {_I}, computeMinor {_I}, "
    f"smMajor {_I}, smMinor {_I}")
_GPU_LEGACY = _spec(f"vmId {_NN}, deviceId {_NN}, name {_T}, busLocation {_T}, isDiscrete {_I}")
_CUDA_GPU_LEGACY = _spec(
    f"vmId {_NN}, name TEXT NOT NULL, pciBusId {_T}, globalMemoryBandwidth {_NN}, "
    f"globalMemorySize {_NN}, constantMemorySize {_NN}, l2CacheSize {_NN}, numThreadsPerWarp {_NN}, "
    f"coreClockRate {_NN}, numMemcpyEngines {_NN}, numMultiprocessors {_NN}, maxIPC {_NN}, "
    f"maxWarpsPerMultiprocessor {_NN}, maxBlocksPerMultiprocessor {_NN}, maxRegistersPerBlock {_NN}, "
    f"maxSharedMemoryPerBlock {_NN}, maxThreadsPerBlock {_NN}, maxBlockDimX {_NN}, "
    f"maxBlockDimY {_NN}, maxBlockDimZ {_NN}, maxGridDimX {_NN}, maxGridDimY {_NN}, "
    f"maxGridDimZ {_NN}, computeCapabilityMajor {_NN}, computeCapabilityMinor {_NN}, "
    f"deviceId {_NN}, pid {_I}, maxSharedMemoryPerMultiprocessor {_I}, "
    f"maxRegistersPerMultiprocessor {_I}")
_CUDA_DEVICE_324 = _spec(
    f"gpuId {_I}, cudaId {_NN}, pid {_NN}, uuid {_T}, numMultiprocessors {_I}")

_OVERHEAD_313 = _spec(f"start {_NN}, end {_NN}, globalTid {_I}, nameId {_NN}, returnValue {_NN}")
_OVERHEAD_324 = _spec(f"start {_NN}, end {_NN}, globalTid {_I}, nameId {_NN}, overheadType {_NN}")
_OVERHEAD_LEGACY = _spec(
    f"start {_NN}, end {_NN}, globalTid {_I}, correlationId {_I}, nameId {_NN}, returnValue {_NN}")
_CUPTI_OVERHEAD_324 = _spec(
    f"start {_NN}, end {_NN}, eventClass {_NN}, globalTid {_I}, correlationId {_I}, nameId {_I}, "
    f"overheadType {_NN}")

_STRINGS = _spec(f"id {_NN} PRIMARY KEY, value TEXT NOT NULL")
_PROCESSES = _spec(f"globalPid {_I}, pid {_I}, name {_T}")
_THREADS = _spec(f"nameId {_NN}, priority {_I}, globalTid {_I}")
_SESSION_313 = _spec(f"utcEpochNs {_I}, utcTime {_T}, localTime {_T}")
_SESSION_324 = (*_SESSION_313, ("systemClockNs", _I))
_SYSENV = _spec(f"globalVid {_I}, devStateName TEXT NOT NULL, name TEXT NOT NULL, "
                f"nameEnum {_NN}, value TEXT NOT NULL")
_SYSENV_29 = (("globalVid", _NN), *_SYSENV[1:])
_META = _spec("name TEXT NOT NULL, value TEXT")
_ENUM = _spec(f"id {_NN} PRIMARY KEY, name {_T}, label {_T}")
_MEMCPY_STRINGS = _spec(f"id {_I}, name {_T}")
_DOMAIN_STRINGS = _spec(f"id {_I}, domainName {_T}")

_MPI_TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "MPI_RANKS": _spec(f"globalTid {_I}, rank {_I}"),
    "MPI_P2P_EVENTS": _spec(
        f"start {_NN}, end {_NN}, globalTid {_I}, textId {_I}, commHandle {_I}, tag {_I}, "
        f"remoteRank {_I}, size {_I}, requestHandle {_I}"),
    "MPI_COLLECTIVES_EVENTS": _spec(
        f"start {_NN}, end {_NN}, globalTid {_I}, textId {_I}, commHandle {_I}, rootRank {_I}, "
        f"size {_I}, recvSize {_I}, requestHandle {_I}"),
    "MPI_START_WAIT_EVENTS": _spec(
        f"start {_NN}, end {_NN}, globalTid {_I}, textId {_I}, requestHandle {_I}"),
    "MPI_OTHER_EVENTS": _spec(f"start {_NN}, end {_NN}, globalTid {_I}, textId {_I}"),
}
# CUDA graphs traced whole (nsys --cuda-graph-trace=graph): created only when the scenario has graph
# executions, as nsys creates tables lazily. The columns documented for the export
# (CUpti_ActivityGraphTrace2: start, end, deviceId, contextId, streamId, correlationId, graphId, plus
# nsys's globalPid and graphExecId); no real export holding the table was at hand, so the declared
# types follow the other activity tables.
GRAPH_TRACE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
_GRAPH_TRACE = _spec(
    f"start {_NN}, end {_NN}, deviceId {_NN}, contextId {_NN}, streamId {_NN}, correlationId {_I}, "
    f"globalPid {_I}, graphId {_NN}, graphExecId {_NN}")
_MPI_KIND_TABLE = {"p2p": "MPI_P2P_EVENTS", "collective": "MPI_COLLECTIVES_EVENTS",
                   "wait": "MPI_START_WAIT_EVENTS", "other": "MPI_OTHER_EVENTS"}

Spec = tuple[tuple[str, str], ...]
EnumRows = tuple[tuple[int, str, str], ...]


@dataclass(frozen=True)
class _Layout:
    """What one nsys version's export looks like: tables, enum tables, metadata."""

    name: str
    tables: dict[str, Spec]
    enums: dict[str, EnumRows]
    meta_table: str | None
    meta: tuple[tuple[str, str], ...]

    @property
    def modern(self) -> bool:
        """True when the layout stores ENUM_* tables (and so can be permuted)."""
        return bool(self.enums)


def _meta_rows(product: str, schema: str, prefix: str = "EXPORT_PARAM_") -> tuple[tuple[str, str], ...]:
    major, minor, micro = schema.split(".")
    return (
        ("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"),
        ("EXPORT_PRODUCT_VERSION", product),
        ("EXPORT_PRODUCT_DATE", ".".join(product.split(".")[:2])),
        ("EXPORT_SCHEMA_VERSION", schema),
        ("EXPORT_SCHEMA_VERSION_MAJOR", major),
        ("EXPORT_SCHEMA_VERSION_MINOR", minor),
        ("EXPORT_SCHEMA_VERSION_MICRO", micro),
        ("EXPORT_PLATFORM", "linux-desktop"),
        ("EXPORT_ARCH", "x64"),
        ("EXPORT_TIME_UTC", "2025-01-01T00:00:00"),
        ("EXPORT_HOST", "synth-export-host"),
        ("EXPORT_USER", "synth"),
        (f"{prefix}INPUT_FILE", "synthetic.nsys-rep"),
        (f"{prefix}OUTPUT_FILE", "synthetic.sqlite"),
    )


def _layouts() -> dict[str, _Layout]:
    common_313: dict[str, Spec] = {
        "StringIds": _STRINGS, "CUPTI_ACTIVITY_KIND_KERNEL": _KERNEL_313,
        "CUPTI_ACTIVITY_KIND_MEMCPY": _MEMCPY_313, "CUPTI_ACTIVITY_KIND_MEMSET": _MEMSET_MODERN,
        "CUPTI_ACTIVITY_KIND_RUNTIME": _RUNTIME_MODERN,
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": _SYNC_313, "NVTX_EVENTS": _NVTX_MODERN,
        "TARGET_INFO_GPU": _GPU_MODERN, "PROCESSES": _PROCESSES, "ThreadNames": _THREADS,
        "PROFILER_OVERHEAD": _OVERHEAD_313, "TARGET_INFO_SESSION_START_TIME": _SESSION_313,
        "TARGET_INFO_SYSTEM_ENV": _SYSENV, "META_DATA_EXPORT": _META,
    }
    enums_313: dict[str, EnumRows] = {
        "ENUM_CUDA_MEMCPY_OPER": _MEMCPY_OPER, "ENUM_CUDA_MEM_KIND": _MEM_KIND,
        "ENUM_CUDA_UNIF_MEM_MIGRATION": _UM_MIGRATION, "ENUM_CUPTI_SYNC_TYPE": _SYNC_TYPE,
        "ENUM_CUDA_KERNEL_LAUNCH_TYPE": _KERNEL_LAUNCH_TYPE,
        "ENUM_NSYS_EVENT_TYPE": _EVENT_TYPE, "ENUM_NSYS_EVENT_CLASS": _EVENT_CLASS_313,
    }
    common_324 = dict(common_313)
    common_324.update({
        "CUPTI_ACTIVITY_KIND_KERNEL": _KERNEL_324, "CUPTI_ACTIVITY_KIND_MEMCPY": _MEMCPY_324,
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": _SYNC_324, "PROFILER_OVERHEAD": _OVERHEAD_324,
        "CUPTI_ACTIVITY_KIND_OVERHEAD": _CUPTI_OVERHEAD_324,
        "TARGET_INFO_CUDA_DEVICE": _CUDA_DEVICE_324, "TARGET_INFO_SESSION_START_TIME": _SESSION_324,
    })
    enums_324 = dict(enums_313)
    enums_324.update({"ENUM_NSYS_EVENT_CLASS": _EVENT_CLASS_324,
                      "ENUM_CUPTI_OVERHEAD_TYPE": _OVERHEAD_TYPE})
    common_29: dict[str, Spec] = {
        "StringIds": _STRINGS, "CUPTI_ACTIVITY_KIND_KERNEL": _KERNEL_29,
        "CUPTI_ACTIVITY_KIND_MEMCPY": _MEMCPY_29, "CUPTI_ACTIVITY_KIND_MEMSET": _MEMSET_OLD,
        "CUPTI_ACTIVITY_KIND_RUNTIME": _RUNTIME_MODERN,
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": _SYNC_OLD, "NVTX_EVENTS": _NVTX_OLD,
        "TARGET_INFO_GPU": _GPU_MODERN, "PROCESSES": _PROCESSES, "ThreadNames": _THREADS,
        "PROFILER_OVERHEAD": _OVERHEAD_313, "TARGET_INFO_SESSION_START_TIME": _SESSION_313,
        "TARGET_INFO_SYSTEM_ENV": _SYSENV_29, "EXPORT_META_DATA": _META,
    }
    legacy: dict[str, Spec] = {
        "StringIds": _STRINGS, "CUPTI_ACTIVITY_KIND_KERNEL": _KERNEL_LEGACY,
        "CUPTI_ACTIVITY_KIND_MEMCPY": _MEMCPY_LEGACY, "CUPTI_ACTIVITY_KIND_MEMSET": _MEMSET_OLD,
        "CUPTI_ACTIVITY_KIND_RUNTIME": _RUNTIME_LEGACY,
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": _SYNC_OLD, "NVTX_EVENTS": _NVTX_OLD,
        "TARGET_INFO_GPU": _GPU_LEGACY, "TARGET_INFO_CUDA_GPU": _CUDA_GPU_LEGACY,
        "ThreadNames": _THREADS, "PROFILER_OVERHEAD": _OVERHEAD_LEGACY,
        "MemcpyOperationStrings": _MEMCPY_STRINGS, "DomainStrings": _DOMAIN_STRINGS,
    }
    return {
        "3.13": _Layout("3.13", common_313, enums_313, "META_DATA_EXPORT",
                        _meta_rows("2024.5.1.113", "3.13.2")),
        "3.24": _Layout("3.24", common_324, enums_324, "META_DATA_EXPORT",
                        _meta_rows("2026.1.1.204", "3.24.14")),
        "2.9": _Layout("2.9", common_29, {}, "EXPORT_META_DATA",
                       _meta_rows("2022.1.3.3", "2.9.1", prefix="EXPORT_")),
        "legacy": _Layout("legacy", legacy, {}, None, ()),
    }


def layout_tables(layout: str) -> dict[str, list[str]]:
    """Column names per table for `layout` (enum tables included), e.g. for schema tests."""
    lay = _get_layout(layout)
    out = {t: [c for c, _ in spec] for t, spec in lay.tables.items()}
    out.update({t: [c for c, _ in _ENUM] for t in lay.enums})
    return out


def _get_layout(layout: str) -> _Layout:
    layouts = _layouts()
    if layout not in layouts:
        raise ValueError(f"unknown nsys layout {layout!r}; expected one of {', '.join(LAYOUTS)}")
    return layouts[layout]


def _all_known_tables() -> set[str]:
    names: set[str] = {*_MPI_TABLES, GRAPH_TRACE}
    for lay in _layouts().values():
        names.update(lay.tables)
        names.update(lay.enums)
    return names


# --------------------------------------------------------------------------------------------
# Id encoders.
# --------------------------------------------------------------------------------------------


class _Strings:
    """Interns strings into StringIds ids (1-based, in first-use order)."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}

    def id(self, value: str) -> int:
        """The StringIds id of `value`, registering it on first use."""
        sid = self._ids.get(value)
        if sid is None:
            sid = len(self._ids) + 1
            self._ids[value] = sid
        return sid

    def rows(self) -> Iterator[Row]:
        """(id, value) rows for the StringIds table."""
        return ((i, v) for v, i in self._ids.items())


class _Enums:
    """Label -> integer id per enum table, optionally permuted (see module docstring)."""

    def __init__(self, layout: _Layout, permute: bool) -> None:
        self._tables: dict[str, EnumRows] = {}
        self._ids: dict[str, dict[str, int]] = {}
        source = layout.enums or {
            "ENUM_CUDA_MEMCPY_OPER": _MEMCPY_OPER, "ENUM_CUDA_MEM_KIND": _MEM_KIND,
            "ENUM_CUDA_UNIF_MEM_MIGRATION": _UM_MIGRATION,
            "ENUM_CUPTI_SYNC_TYPE": _SYNC_TYPE, "ENUM_CUDA_KERNEL_LAUNCH_TYPE": _KERNEL_LAUNCH_TYPE,
            "ENUM_NSYS_EVENT_TYPE": _EVENT_TYPE, "ENUM_NSYS_EVENT_CLASS": _EVENT_CLASS_313,
        }
        for table, rows in source.items():
            rows = _rotate_ids(rows) if permute else rows
            self._tables[table] = rows
            self._ids[table] = {label: i for i, _, label in rows}

    def id(self, table: str, label: str) -> int:
        """Integer written for `label` of enum `table`."""
        return self._ids[table][label]

    def rows(self, table: str) -> EnumRows:
        """The (id, name, label) rows to store for `table`."""
        return self._tables[table]


def _rotate_ids(rows: EnumRows) -> EnumRows:
    """Same names and labels, ids rotated by half the enum's length: every id changes."""
    ids = [r[0] for r in rows]
    shift = max(1, len(ids) // 2)
    return tuple((ids[(k + shift) % len(ids)], name, label) for k, (_, name, label) in enumerate(rows))


def global_pid(pid: int) -> int:
    """Serialized nsys process id: VM id in bits 48+, pid in bits 24..47."""
    if not 0 <= pid < _ID_LIMIT:
        raise ValueError(f"pid {pid} does not fit nsys's 24-bit field")
    return VM_ID | (pid << 24)


def global_tid(pid: int, tid: int) -> int:
    """Serialized nsys thread id: globalPid with the tid in the low 24 bits."""
    if not 0 <= tid < _ID_LIMIT:
        raise ValueError(f"tid {tid} does not fit nsys's 24-bit field")
    return global_pid(pid) | tid


def short_kernel_name(name: str) -> str:
    """nsys-style base name: text before the first '(' or '<', without a leading return type."""
    head = re.split(r"[(<]", name, maxsplit=1)[0].strip()
    return head.split()[-1] if head else name


def _mangled(short: str) -> str:
    return f"_Z{len(short)}{short}v"


_CARVEOUTS = (0, 8192, 16384, 32768, 65536, 102400, 135168, 167936, 233472)


def shared_carveout(used: int, device: Device) -> int:
    """Driver shared-memory carve-out for a kernel using `used` bytes: never equal to `used`.

    The driver reserves 1 KiB per block and rounds up to a supported carve-out, so a tool that
    reads sharedMemoryExecuted as "what the kernel asked for" is caught by the tests.
    """
    need = used + 1024
    for c in _CARVEOUTS:
        if c >= need:
            return c
    return max(need, device.max_shared_per_sm)


def _gpu_ids(devices: Sequence[Device]) -> dict[int, int]:
    """TARGET_INFO_GPU.id per CUDA device number: reversed order, as nsys enumerates by bus."""
    n = len(devices)
    return {d.id: n - 1 - i for i, d in enumerate(devices)}


def _uuid(device: Device) -> str:
    h = hashlib.md5(f"{device.name}|{device.bus_location}|{device.id}".encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _chip(name: str) -> str:
    for key, chip in (("A100", "GA100"), ("H100", "GH100"), ("H200", "GH100"), ("V100", "GV100"),
                      ("B200", "GB100"), ("A10", "GA102"), ("L40", "AD102"), ("T4", "TU104")):
        if key in name:
            return chip
    return "Unknown"


# --------------------------------------------------------------------------------------------
# Row producers. Each yields tuples in the order of its `_COLS_*` superset; columns that a layout
# lacks are dropped at insert time, columns a layout has beyond the superset stay NULL.
# --------------------------------------------------------------------------------------------


@dataclass
class _Ctx:
    """Per-write state shared by the producers."""

    scenario: Scenario
    layout: _Layout
    strings: _Strings
    enums: _Enums

    @property
    def v324(self) -> bool:
        """True for the 2026.1-like layout, whose extra columns get non-NULL defaults."""
        return self.layout.name == "3.24"

    def context_id(self, pid: int, device: int) -> int:
        """CUDA context id of (process, device): one primary context per device, 1-based."""
        return device + 1


_COLS_KERNEL = (
    "start", "end", "deviceId", "contextId", "greenContextId", "streamId", "correlationId",
    "globalPid", "demangledName", "shortName", "mangledName", "launchType", "cacheConfig",
    "registersPerThread", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ",
    "staticSharedMemory", "dynamicSharedMemory", "localMemoryPerThread", "localMemoryTotal",
    "gridId", "sharedMemoryExecuted", "sharedMemoryLimitConfig", "clusterX", "clusterY", "clusterZ",
    "clusterSchedulingPolicy", "maxPotentialClusterSize", "maxActiveClusters", "graphNodeId")


def _kernel_rows(ctx: _Ctx) -> Iterator[Row]:
    devices = {d.id: d for d in ctx.scenario.devices}
    default_dev = ctx.scenario.devices[0] if ctx.scenario.devices else Device(id=0)
    names: dict[tuple[str, str | None], tuple[int, int, int]] = {}
    carve: dict[tuple[int, int], int] = {}
    regular = ctx.enums.id("ENUM_CUDA_KERNEL_LAUNCH_TYPE", "Regular")
    green = 0 if ctx.v324 else None
    cluster = 0 if ctx.v324 else None
    for grid_id, k in enumerate(ctx.scenario.kernels, start=1):
        key = (k.name, k.short_name)
        ids = names.get(key)
        if ids is None:
            short = k.short_name or short_kernel_name(k.name)
            ids = (ctx.strings.id(k.name), ctx.strings.id(short), ctx.strings.id(_mangled(short)))
            names[key] = ids
        dev = devices.get(k.device, default_dev)
        used = k.static_shared_bytes + k.dynamic_shared_bytes
        ckey = (used, k.device)
        executed = carve.get(ckey)
        if executed is None:
            executed = carve[ckey] = shared_carveout(used, dev)
        local_total = k.local_bytes_per_thread * dev.max_warps_per_sm * dev.threads_per_warp * dev.sm_count
        yield (k.start, k.end, k.device, ctx.context_id(k.pid, k.device), green, k.stream,
               k.correlation_id, global_pid(k.pid), ids[0], ids[1], ids[2], regular, 0,
               k.registers_per_thread, k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1],
               k.block[2], k.static_shared_bytes, k.dynamic_shared_bytes, k.local_bytes_per_thread,
               local_total, grid_id, executed, 0, cluster, cluster, cluster, cluster, cluster, cluster,
               k.graph_node_id)


_COLS_GRAPH_TRACE = tuple(c for c, _ in _GRAPH_TRACE)


def _graph_trace_rows(ctx: _Ctx) -> Iterator[Row]:
    for g in ctx.scenario.graph_executions:
        # a graph that started on the host: INT_MAX for the context as for the device
        context = INT_MAX if g.device == INT_MAX else ctx.context_id(g.pid, g.device)
        yield (g.start, g.end, g.device, context, g.stream, g.correlation_id, global_pid(g.pid), g.graph_id,
               g.graph_exec_id)


_COLS_MEMCPY = (
    "start", "end", "deviceId", "contextId", "greenContextId", "streamId", "correlationId",
    "globalPid", "bytes", "copyKind", "srcKind", "dstKind", "srcDeviceId", "srcContextId",
    "dstDeviceId", "dstContextId", "copyCount", "migrationCause")


def _copy_endpoints(direction: str, device: int, peer: int | None) -> tuple[int | None, int | None]:
    """(srcDeviceId, dstDeviceId): the device side(s) of the copy, None for host memory."""
    if direction == "HtoD":
        return None, device
    if direction == "DtoH":
        return device, None
    if direction == "DtoD":
        return device, device
    if direction == "PtoP":
        return device, (peer if peer is not None else device)
    return None, None


def _memcpy_rows(ctx: _Ctx) -> Iterator[Row]:
    kinds = {d: ctx.enums.id("ENUM_CUDA_MEMCPY_OPER", lab) for d, lab in _DIRECTION_LABEL.items()}
    mem = {m: ctx.enums.id("ENUM_CUDA_MEM_KIND", lab) for m, lab in _MEM_KIND_LABEL.items()}
    green = 0 if ctx.v324 else None
    count = 1 if ctx.v324 else None
    for c in ctx.scenario.copies:
        src_dev, dst_dev = _copy_endpoints(c.direction, c.device, c.dst_device)
        kind, cause = kinds[c.direction], None
        if c.migration is not None:  # a migration of managed pages: "Unified" copy kind and its cause
            kind = ctx.enums.id("ENUM_CUDA_MEMCPY_OPER", "Unified " + _DIRECTION_LABEL[c.direction])
            cause = ctx.enums.id("ENUM_CUDA_UNIF_MEM_MIGRATION", _UM_CAUSE_LABEL[c.migration])
        yield (c.start, c.end, c.device, ctx.context_id(c.pid, c.device), green, c.stream,
               c.correlation_id, global_pid(c.pid), c.bytes, kind, mem[c.src_kind],
               mem[c.dst_kind], src_dev,
               None if src_dev is None else ctx.context_id(c.pid, src_dev), dst_dev,
               None if dst_dev is None else ctx.context_id(c.pid, dst_dev), count, cause)


_COLS_MEMSET = ("start", "end", "deviceId", "contextId", "greenContextId", "streamId",
                "correlationId", "globalPid", "value", "bytes", "memKind")


def _memset_rows(ctx: _Ctx) -> Iterator[Row]:
    mem = {m: ctx.enums.id("ENUM_CUDA_MEM_KIND", lab) for m, lab in _MEM_KIND_LABEL.items()}
    green = 0 if ctx.v324 else None
    for m in ctx.scenario.memsets:
        yield (m.start, m.end, m.device, ctx.context_id(m.pid, m.device), green, m.stream,
               m.correlation_id, global_pid(m.pid), 0, m.bytes, mem[m.mem_kind])


_COLS_RUNTIME = ("start", "end", "eventClass", "globalTid", "correlationId", "nameId", "returnValue")


def _runtime_rows(ctx: _Ctx) -> Iterator[Row]:
    cls = ctx.enums.id("ENUM_NSYS_EVENT_CLASS", "CUDA runtime")
    name_ids: dict[ApiKind, int] = {}
    tids: dict[tuple[int, int], int] = {}
    for a in ctx.scenario.api_calls:
        if a.name is not None:
            nid = ctx.strings.id(a.name)
        else:
            nid = name_ids.get(a.kind, 0)
            if not nid:
                nid = name_ids[a.kind] = ctx.strings.id(CUDA_API_NAMES[a.kind])
        gt = tids.get((a.pid, a.tid))
        if gt is None:
            gt = tids[(a.pid, a.tid)] = global_tid(a.pid, a.tid)
        yield (a.start, a.end, cls, gt, a.correlation_id, nid, 0)


_COLS_SYNC = ("start", "end", "deviceId", "contextId", "greenContextId", "streamId",
              "correlationId", "globalPid", "syncType", "eventId", "eventSyncId")


def _sync_rows(ctx: _Ctx) -> Iterator[Row]:
    types = {s: ctx.enums.id("ENUM_CUPTI_SYNC_TYPE", lab) for s, lab in _SYNC_LABEL.items()}
    green = 0 if ctx.v324 else None
    for s in ctx.scenario.syncs:
        yield (s.start, s.end, s.device, ctx.context_id(s.pid, s.device), green, s.stream,
               s.correlation_id, global_pid(s.pid), types[s.kind], EVENT_ID_NONE, EVENT_ID_NONE)


_COLS_NVTX = ("start", "end", "eventType", "rangeId", "text", "globalTid", "endGlobalTid", "textId",
              "domainId")


def domain_ids(markers: Iterable[Marker]) -> dict[str, int]:
    """NVTX domain id per domain name, 1-based in order of first use (0 is the default domain)."""
    out: dict[str, int] = {}
    for m in markers:
        if m.domain is not None and m.domain not in out:
            out[m.domain] = len(out) + 1
    return out


def _nvtx_rows(ctx: _Ctx) -> Iterator[Row]:
    markers = ctx.scenario.markers
    ev = {k: ctx.enums.id("ENUM_NSYS_EVENT_TYPE", lab) for k, lab in _MARKER_EVENT.items()}
    create = ctx.enums.id("ENUM_NSYS_EVENT_TYPE", "NvtxDomainCreate")
    domains = domain_ids(markers)
    # Each process creates the domains it uses (NvtxDomainCreate rows are per process, like the ids).
    first: dict[tuple[int, str], Marker] = {}
    for m in markers:
        if m.domain is not None:
            f = first.get((m.pid, m.domain))
            if f is None or m.start < f.start:
                first[(m.pid, m.domain)] = m
    for (_, name), f in sorted(first.items(), key=lambda kv: (kv[1].start, kv[0])):
        yield (f.start, None, create, None, name, global_tid(f.pid, f.tid), None, None, domains[name])
    range_id = 0
    for i, m in enumerate(markers):
        gt = global_tid(m.pid, m.tid)
        end = m.end if m.end >= m.start else None
        inline = i % 2 == 0
        rid = None
        end_gt = None
        if m.kind == "start_end":
            range_id += 1
            rid = range_id
            end_gt = gt if end is not None else None
        yield (m.start, end, ev[m.kind], rid, m.text if inline else None, gt, end_gt,
               None if inline else ctx.strings.id(m.text),
               0 if m.domain is None else domains[m.domain])


_COLS_OVERHEAD = ("start", "end", "globalTid", "correlationId", "nameId", "returnValue",
                  "overheadType")


def _overhead_type_label(name: str) -> str:
    low = name.lower()
    if "flush" in low:
        return "Buffer flush (Profiler)"
    if "instrumentation" in low:
        return "Instrumentation (Profiler)"
    if "resource" in low:
        return "Resource creation/destruction (Profiler)"
    return "Unknown" if low == "unknown" else "Undefined"


def _overhead_rows(ctx: _Ctx) -> Iterator[Row]:
    for o in ctx.scenario.overhead:
        otype = ctx.enums.id("ENUM_CUPTI_OVERHEAD_TYPE", _overhead_type_label(o.name)) \
            if ctx.v324 else None
        yield (o.start, o.end, global_tid(o.pid, o.tid), 0, ctx.strings.id(o.name), 0, otype)


def _process_rows(ctx: _Ctx) -> Iterator[Row]:
    for p in ctx.scenario.processes:
        yield (global_pid(p.pid), p.pid, p.name)


def _thread_rows(ctx: _Ctx) -> Iterator[Row]:
    for p in ctx.scenario.processes:
        threads = dict(p.threads) or {p.pid: p.name}
        for tid, name in threads.items():
            yield (ctx.strings.id(name), 20, global_tid(p.pid, tid))


_COLS_GPU = tuple(c for c, _ in _GPU_MODERN)


def _gpu_rows(ctx: _Ctx) -> Iterator[Row]:
    ids = _gpu_ids(ctx.scenario.devices)
    for d in ctx.scenario.devices:
        major, minor = d.compute_capability
        yield (VM_ID, ids[d.id], d.name, d.bus_location, 1, d.l2_bytes, d.memory_bytes,
               d.memory_bandwidth_bps, d.clock_hz, d.sm_count, ids[d.id], _uuid(d), 0, _chip(d.name),
               d.id, None, None, 161, 0, 65536, 4, 65536, d.max_shared_per_block,
               d.max_shared_per_sm - 1024, d.max_shared_per_sm, d.max_registers_per_sm,
               d.threads_per_warp, 3, d.max_warps_per_sm, d.max_blocks_per_sm, d.max_threads_per_block,
               1024, 1024, 64, 2147483647, 65535, 65535, major, minor, major, minor)


def _legacy_gpu_rows(ctx: _Ctx) -> Iterator[Row]:
    for d in ctx.scenario.devices:
        yield (VM_ID, d.id, d.name, d.bus_location, 1)


_COLS_CUDA_GPU_LEGACY = tuple(c for c, _ in _CUDA_GPU_LEGACY)


def _legacy_cuda_gpu_rows(ctx: _Ctx) -> Iterator[Row]:
    pid = ctx.scenario.processes[0].pid if ctx.scenario.processes else None
    for d in ctx.scenario.devices:
        major, minor = d.compute_capability
        yield (VM_ID, d.name, d.bus_location, d.memory_bandwidth_bps // 1000,
               d.memory_bytes // (1 << 20), 65536, d.l2_bytes, d.threads_per_warp, d.clock_hz // 1000,
               3, d.sm_count, 4, d.max_warps_per_sm, d.max_blocks_per_sm, 65536,
               d.max_shared_per_block, d.max_threads_per_block, 1024, 1024, 64, 2147483647, 65535,
               65535, major, minor, d.id, pid, d.max_shared_per_sm, d.max_registers_per_sm)


def _cuda_device_rows(ctx: _Ctx) -> Iterator[Row]:
    ids = _gpu_ids(ctx.scenario.devices)
    for p in ctx.scenario.processes:
        for d in ctx.scenario.devices:
            yield (ids[d.id], d.id, p.pid, _uuid(d), d.sm_count)


_COLS_SESSION = ("utcEpochNs", "utcTime", "localTime", "systemClockNs")


def _session_rows(ctx: _Ctx) -> Iterator[Row]:
    yield (1_735_689_600_000_000_000, "2025-01-01T00:00:00", "2025-01-01T00:00:00",
           ctx.scenario.span()[0])


_COLS_SYSENV = ("globalVid", "devStateName", "name", "nameEnum", "value")


def _sysenv_rows(ctx: _Ctx) -> Iterator[Row]:
    for name, enum, value in (("CpuCores", 1, "64"), ("CpuArchitecture", 3, "x86_64"),
                              ("OsDescription", 605, "Ubuntu 22.04.4 LTS"),
                              ("CudaDriverVersion", 611, "12040"),
                              ("Hostname", 619, ctx.scenario.host_name)):
        yield (VM_ID, "Local (CLI)", name, enum, value)


def mpi_request_handles(calls: Sequence[MpiCall]) -> list[int | None]:
    """The requestHandle of each MPI call: nonblocking calls (MPI_I*) open one, a wait closes the oldest.

    Handles are per thread, as MPI requests are; a wait with nothing pending gets a fresh handle.
    """
    pending: dict[tuple[int, int], list[int]] = {}
    out: list[int | None] = []
    counter = 0
    for c in calls:
        queue = pending.setdefault((c.pid, c.tid), [])
        if c.kind == "wait":
            if queue:
                out.append(queue.pop(0))
            else:
                counter += 1
                out.append(counter)
        elif c.kind in ("p2p", "collective") and c.name.startswith("MPI_I"):
            counter += 1
            queue.append(counter)
            out.append(counter)
        else:
            out.append(None)
    return out


_ROOTED = ("MPI_Bcast", "MPI_Reduce", "MPI_Gather", "MPI_Scatter", "MPI_Gatherv", "MPI_Scatterv")


def _mpi_rows(ctx: _Ctx, kind: str, handles: Sequence[int | None]) -> Iterator[Row]:
    nranks = max(1, len({c.rank for c in ctx.scenario.mpi_calls}))
    for c, req in zip(ctx.scenario.mpi_calls, handles, strict=True):
        if c.kind != kind:
            continue
        gt = global_tid(c.pid, c.tid)
        name_id = ctx.strings.id(c.name)
        if kind == "p2p":
            yield (c.start, c.end, gt, name_id, MPI_COMM_WORLD_HANDLE, 0, (c.rank + 1) % nranks,
                   c.bytes, req)
        elif kind == "collective":
            root = 0 if c.name in _ROOTED else None
            yield (c.start, c.end, gt, name_id, MPI_COMM_WORLD_HANDLE, root, c.bytes, c.bytes, req)
        elif kind == "wait":
            yield (c.start, c.end, gt, name_id, req)
        else:
            yield (c.start, c.end, gt, name_id)


def _mpi_rank_rows(ctx: _Ctx) -> Iterator[Row]:
    seen: dict[int, MpiCall] = {}
    for c in ctx.scenario.mpi_calls:
        seen.setdefault(c.pid, c)
    for pid, c in seen.items():
        yield (global_tid(pid, c.tid), c.rank)


def _domain_string_rows(ctx: _Ctx) -> Iterator[Row]:
    for name, did in domain_ids(ctx.scenario.markers).items():
        yield (did, name)


# --------------------------------------------------------------------------------------------
# Writing.
# --------------------------------------------------------------------------------------------

Producer = Callable[[_Ctx], Iterable[Row]]


def _plan(layout: _Layout) -> list[tuple[str, Sequence[str], Producer]]:
    """(table, superset columns, producer) in write order; StringIds is written after all of them."""
    gpu: tuple[Sequence[str], Producer] = (
        (tuple(c for c, _ in _GPU_LEGACY), _legacy_gpu_rows) if layout.name == "legacy"
        else (_COLS_GPU, _gpu_rows))
    plan: list[tuple[str, Sequence[str], Producer]] = [
        ("CUPTI_ACTIVITY_KIND_KERNEL", _COLS_KERNEL, _kernel_rows),
        ("CUPTI_ACTIVITY_KIND_MEMCPY", _COLS_MEMCPY, _memcpy_rows),
        ("CUPTI_ACTIVITY_KIND_MEMSET", _COLS_MEMSET, _memset_rows),
        ("CUPTI_ACTIVITY_KIND_RUNTIME", _COLS_RUNTIME, _runtime_rows),
        ("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", _COLS_SYNC, _sync_rows),
        ("NVTX_EVENTS", _COLS_NVTX, _nvtx_rows),
        ("PROFILER_OVERHEAD", _COLS_OVERHEAD, _overhead_rows),
        ("PROCESSES", ("globalPid", "pid", "name"), _process_rows),
        ("ThreadNames", ("nameId", "priority", "globalTid"), _thread_rows),
        ("TARGET_INFO_GPU", gpu[0], gpu[1]),
        ("TARGET_INFO_CUDA_GPU", _COLS_CUDA_GPU_LEGACY, _legacy_cuda_gpu_rows),
        ("TARGET_INFO_CUDA_DEVICE", ("gpuId", "cudaId", "pid", "uuid", "numMultiprocessors"),
         _cuda_device_rows),
        ("TARGET_INFO_SESSION_START_TIME", _COLS_SESSION, _session_rows),
        ("TARGET_INFO_SYSTEM_ENV", _COLS_SYSENV, _sysenv_rows),
        ("DomainStrings", ("id", "domainName"), _domain_string_rows),
    ]
    return [p for p in plan if p[0] in layout.tables]


def _ddl(table: str, spec: Spec) -> str:
    cols = ",\n    ".join(f"{name} {decl}".rstrip() for name, decl in spec)
    return f"CREATE TABLE {table} (\n    {cols}\n)"


def _insert(conn: sqlite3.Connection, table: str, spec: Spec, columns: Sequence[str],
            rows: Iterable[Row]) -> None:
    """Insert superset-ordered `rows`, keeping only the columns `spec` (the layout) has."""
    present = {name for name, _ in spec}
    keep = [i for i, c in enumerate(columns) if c in present]
    names = [columns[i] for i in keep]
    if len(keep) != len(columns):
        pick = itemgetter(*keep)
        rows = (pick(r) for r in rows) if len(keep) > 1 else ((pick(r),) for r in rows)
    marks = ", ".join("?" * len(names))
    conn.executemany(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})", rows)


def write_nsys(scenario: Scenario, path: Path, layout: str = "3.13", permute_enums: bool = False,
               omit_tables: Iterable[str] = ()) -> Path:
    """Write `scenario` to `path` as an Nsight Systems SQLite export in `layout`; return `path`.

    `permute_enums=True` (layouts "3.13" and "3.24" only) stores the ENUM_* tables with the same
    labels but different integer ids and encodes all activity rows with those ids, to prove that a
    reader resolves enums by label. `omit_tables` names tables to leave out entirely (a table absent
    is "not traced", unlike a present empty table); names unknown to every layout raise ValueError.
    Markers with `end < start` are written with a NULL end (range still open at end of capture).
    An existing file at `path` is replaced.
    """
    lay = _get_layout(layout)
    if permute_enums and not lay.modern:
        raise ValueError(f"layout {layout!r} has no ENUM tables to permute")
    omit = set(omit_tables)
    unknown = omit - _all_known_tables()
    if unknown:
        raise ValueError(f"unknown nsys table(s) in omit_tables: {', '.join(sorted(unknown))}")
    ctx = _Ctx(scenario, lay, _Strings(), _Enums(lay, permute_enums))
    path = Path(path)
    if path.exists():
        path.unlink()
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("BEGIN")
        _write_all(conn, ctx, omit)
        conn.execute("COMMIT")
    finally:
        conn.close()
    return path


def _write_all(conn: sqlite3.Connection, ctx: _Ctx, omit: set[str]) -> None:
    lay = ctx.layout
    tables = dict(lay.tables)
    if ctx.scenario.mpi_calls:
        tables.update(_MPI_TABLES)
    if ctx.scenario.graph_executions:
        tables[GRAPH_TRACE] = _GRAPH_TRACE
    for table, spec in tables.items():
        if table not in omit:
            conn.execute(_ddl(table, spec))
    for table in lay.enums:
        if table not in omit:
            conn.execute(_ddl(table, _ENUM))
            conn.executemany(f"INSERT INTO {table} (id, name, label) VALUES (?, ?, ?)",
                             ctx.enums.rows(table))
    for table, columns, producer in _plan(lay):
        if table not in omit:
            _insert(conn, table, lay.tables[table], columns, producer(ctx))
    if ctx.scenario.mpi_calls:
        _write_mpi(conn, ctx, omit)
    if ctx.scenario.graph_executions and GRAPH_TRACE not in omit:
        _insert(conn, GRAPH_TRACE, _GRAPH_TRACE, _COLS_GRAPH_TRACE, _graph_trace_rows(ctx))
    if lay.meta_table and lay.meta_table not in omit:
        conn.executemany(f"INSERT INTO {lay.meta_table} (name, value) VALUES (?, ?)", lay.meta)
    if "MemcpyOperationStrings" in tables and "MemcpyOperationStrings" not in omit:
        conn.executemany("INSERT INTO MemcpyOperationStrings (id, name) VALUES (?, ?)",
                         enumerate(_LEGACY_MEMCPY_STRINGS))
    if "StringIds" not in omit:
        conn.executemany("INSERT INTO StringIds (id, value) VALUES (?, ?)", ctx.strings.rows())


def _write_mpi(conn: sqlite3.Connection, ctx: _Ctx, omit: set[str]) -> None:
    if "MPI_RANKS" not in omit:
        conn.executemany("INSERT INTO MPI_RANKS (globalTid, rank) VALUES (?, ?)", _mpi_rank_rows(ctx))
    handles = mpi_request_handles(ctx.scenario.mpi_calls)
    for kind, table in _MPI_KIND_TABLE.items():
        if table in omit:
            continue
        spec = _MPI_TABLES[table]
        _insert(conn, table, spec, [c for c, _ in spec], _mpi_rows(ctx, kind, handles))
