"""The canonical relations: the vendor-neutral columns every query set must produce.

A query file `queries/<format>/<version>/<relation>.sql` is one SELECT whose output columns are
exactly the ones listed here, in any order. Metrics only ever see these names, so no metric knows
whether it reads Nsight Systems or rocpd. `tests/test_query_sets.py` runs every query set against a
generated profile and checks the column lists against this table; docs/relations.md is generated
from it.

Units: integer nanoseconds for times, bytes for sizes, Hz for clocks, bytes/s for bandwidth.
Grids count blocks (HIP work-item grids are divided by the workgroup size in the rocpd queries), and
blocks count threads per block. Enumerations use the fixed vocabularies below.

Each relation also has a *domain* (DOMAINS): checks every row must pass, such as "start and end are
integers in [0, 2^62) ns". A row that fails one is dropped before any metric or rule sees it, and
counted: the summary's warnings say how many rows of which relation failed which check (see
pa.profile.relations). Text columns are read as text whatever the profile stored (a BLOB name
becomes its UTF-8 reading, undecodable bytes U+FFFD).
"""

from __future__ import annotations

from dataclasses import dataclass

DIRECTIONS = ("HtoD", "DtoH", "DtoD", "PtoP", "HtoH", "other")
MEMORY_KINDS = ("pageable", "pinned", "device", "managed", "array", "unknown")
# why the driver migrated managed (unified) memory pages
MIGRATION_CAUSES = ("page_fault", "user_prefetch", "speculative_prefetch", "eviction", "access_counters", "unknown")
SYNC_TYPES = ("event", "stream_wait", "stream", "context", "unknown")
API_KINDS = ("launch", "graph_launch", "memcpy", "memcpy_async", "memset", "sync", "alloc", "free",
             "module", "communication", "other")
# instant: a point in time (rocTX roctxMarkA, recorded with start == end); never nests, never top-level
MARKER_KINDS = ("push_pop", "start_end", "instant")
ALLOCATION_KINDS = ("alloc", "free", "realloc", "reclaim")
ALLOCATION_LEVELS = ("real", "virtual", "scratch")
# graph: one whole CUDA graph execution traced as a single record (its kernels not recorded one by one)
KERNEL_CLASSES = ("compute", "communication", "graph")
MPI_KINDS = ("p2p", "collective", "wait", "other")


@dataclass(frozen=True)
class Column:
    """One output column of a canonical relation."""

    name: str
    type: str  # "int", "text" or "real"; every column may be NULL where the profile lacks it
    meaning: str


def _cols(*spec: tuple[str, str, str]) -> tuple[Column, ...]:
    return tuple(Column(*s) for s in spec)


# Large relations also give row_id: the rowid of the one table that drives the scan, unique,
# non-NULL and increasing in scan order, so pa can read them in chunks by keyset (row_id > last
# ORDER BY row_id LIMIT n) without a sort. A relation with no such table (a UNION over several
# tables) gives NULL and is read in one piece.
_ROW_ID = ("row_id", "int", "rowid of the table driving the scan, for chunked reading; NULL when none")

_ACTIVITY = (
    _ROW_ID,
    ("pid", "int", "process id"),
    ("device", "int", "device number as the profile's activity records carry it"),
    ("stream", "int", "stream (queue) id; unique only together with device"),
    ("start", "int", "start, ns"),
    ("end", "int", "end, ns (NULL or < start for records still open: filtered and counted)"),
    ("correlation_id", "int", "links GPU work to the API call that issued it; NULL when unknown"),
)

RELATIONS: dict[str, tuple[Column, ...]] = {
    "kernels": _cols(
        *_ACTIVITY,
        ("name_id", "int", "integer key of the full kernel name, unique per distinct name in this file"),
        ("name", "text", "full demangled kernel name"),
        ("short_name", "text", "display name (function name without arguments)"),
        ("grid_x", "int", "blocks per grid in x"),
        ("grid_y", "int", "blocks per grid in y"),
        ("grid_z", "int", "blocks per grid in z"),
        ("block_x", "int", "threads per block in x"),
        ("block_y", "int", "threads per block in y"),
        ("block_z", "int", "threads per block in z"),
        ("registers_per_thread", "int", "registers (NVIDIA) or arch VGPRs (AMD) per thread"),
        ("sgpr_per_wave", "int", "scalar registers per wave (AMD); NULL on NVIDIA"),
        ("static_shared_bytes", "int", "static shared memory / LDS the kernel declares, bytes"),
        ("dynamic_shared_bytes", "int", "dynamic shared memory / LDS requested at launch, bytes"),
        ("local_bytes_per_thread", "int", "local memory (NVIDIA) or scratch (AMD) per thread, bytes"),
        ("graph_id", "int", "for a row that is one whole CUDA graph execution (traced at graph granularity, "
                            "the default of nsys --cuda-graph-trace: the kernels inside are not recorded, "
                            "launch configuration columns NULL), the graph's id; NULL for a kernel, a kernel "
                            "launched as a node of a graph included"),
    ),
    "kernel_names": _cols(
        ("name_id", "int", "the kernels relation's name_id"),
        ("name", "text", "full demangled kernel name"),
        ("short_name", "text", "display name (function name without arguments)"),
    ),
    "kernel_classes": _cols(
        ("name_id", "int", "the kernels relation's name_id"),
        ("class", "text", "what the kernel does: " + "/".join(KERNEL_CLASSES)
         + " (communication: an RCCL/NCCL kernel moving data between GPUs; graph: a whole CUDA graph "
           "execution, a kernels row with a graph_id)"),
    ),
    "copies": _cols(
        *_ACTIVITY,
        ("bytes", "int", "bytes transferred"),
        ("direction", "text", "one of " + "/".join(DIRECTIONS)),
        ("src_kind", "text", "source memory kind: " + "/".join(MEMORY_KINDS)),
        ("dst_kind", "text", "destination memory kind: " + "/".join(MEMORY_KINDS)),
        ("src_device", "int", "source device for device-side memory, else NULL"),
        ("dst_device", "int", "destination device for device-side memory, else NULL"),
        ("migration", "text", "for a unified-memory migration, its cause: " + "/".join(MIGRATION_CAUSES)
         + "; NULL for an explicit copy"),
    ),
    "memsets": _cols(
        *_ACTIVITY,
        ("bytes", "int", "bytes set"),
        ("mem_kind", "text", "memory kind: " + "/".join(MEMORY_KINDS)),
    ),
    "api_calls": _cols(
        _ROW_ID,
        ("pid", "int", "process id"),
        ("tid", "int", "thread id"),
        ("start", "int", "start, ns"),
        ("end", "int", "end, ns"),
        ("name_id", "int", "integer key of the API name"),
        ("name", "text", "API function name as the runtime spells it"),
        ("kind", "text", "what the call does: " + "/".join(API_KINDS)
         + " (communication: a collective-communication library call, RCCL/NCCL)"),
        ("correlation_id", "int", "links to GPU work it issued; NULL when none"),
    ),
    "api_names": _cols(
        ("name_id", "int", "the api_calls relation's name_id"),
        ("name", "text", "API function name"),
    ),
    "syncs": _cols(
        *_ACTIVITY,
        ("sync_type", "text", "one of " + "/".join(SYNC_TYPES)),
    ),
    "markers": _cols(
        _ROW_ID,
        ("pid", "int", "process id"),
        ("tid", "int", "thread id the range was opened on"),
        ("start", "int", "start, ns"),
        ("end", "int", "end, ns"),
        ("name", "text", "range text (inline or registered string resolved)"),
        ("domain", "text", "NVTX domain / rocTX category; NULL for the default domain"),
        ("kind", "text", "one of " + "/".join(MARKER_KINDS)),
    ),
    "mpi_calls": _cols(
        _ROW_ID,
        ("pid", "int", "process id"),
        ("tid", "int", "thread id"),
        ("rank", "int", "MPI rank when the profile records it, else NULL"),
        ("start", "int", "start, ns"),
        ("end", "int", "end, ns"),
        ("name", "text", "MPI function name, e.g. MPI_Allreduce"),
        ("kind", "text", "one of " + "/".join(MPI_KINDS)),
        ("bytes", "int", "payload bytes when recorded, else NULL"),
    ),
    "driver_jit": _cols(
        ("pid", "int", "process id"),
        ("tid", "int", "thread id"),
        ("start", "int", "start, ns"),
        ("end", "int", "end, ns"),
        ("name", "text", "what the driver did: JIT compilation, module loading, lazy function loading"),
    ),
    "os_calls": _cols(
        _ROW_ID,
        ("pid", "int", "process id"),
        ("tid", "int", "thread id"),
        ("start", "int", "start, ns"),
        ("end", "int", "end, ns"),
        ("name", "text", "OS runtime function, e.g. read, pthread_mutex_lock, nanosleep"),
        ("depth", "int", "nesting level, 0 for the outermost call; NULL when not recorded"),
    ),
    "cpu_samples": _cols(
        _ROW_ID,
        ("pid", "int", "process id"),
        ("tid", "int", "thread id"),
        ("time", "int", "sample time, ns"),
        ("function", "text", "function the sample was taken in (leaf of the call chain); NULL when unknown"),
    ),
    "allocations": _cols(
        _ROW_ID,
        ("pid", "int", "process id"),
        ("tid", "int", "thread id"),
        ("device", "int", "device whose memory it is (as the activity records number it); NULL: host or unknown"),
        ("start", "int", "start, ns"),
        ("end", "int", "end, ns"),
        ("kind", "text", "one of " + "/".join(ALLOCATION_KINDS)),
        ("level", "text", "one of " + "/".join(ALLOCATION_LEVELS) + " (scratch: kernel scratch memory)"),
        ("bytes", "int", "bytes allocated or freed (NULL when not recorded)"),
        ("address", "int", "start address, when recorded"),
        ("correlation_id", "int", "links to the API call that made it; NULL when none"),
    ),
    # rocpd only (HIP call arguments have no Nsight Systems counterpart in pa's relations): read when
    # the copy table is empty, so a degraded capture still says what the host asked for.
    "memcpy_requests": _cols(
        ("name", "text", "the memcpy call (hipMemcpy, hipMemcpyAsync, hipMemcpyHtoD, ...)"),
        ("direction", "text", "HtoD/DtoH/DtoD/PtoP/HtoH from the call's kind argument or its name; "
                              "'unknown' when the runtime infers it (hipMemcpyDefault)"),
        ("bytes", "int", "bytes the call asked to copy (its size argument); NULL when not recorded"),
    ),
    "devices": _cols(
        ("device", "int", "device number as the activity records carry it"),
        ("name", "text", "product name"),
        ("bus_location", "text", "PCI bus location when recorded"),
        ("sm_count", "int", "streaming multiprocessors (NVIDIA) or compute units (AMD)"),
        ("memory_bandwidth_bps", "int", "peak device memory bandwidth, bytes/s (NULL: unknown)"),
        ("clock_hz", "int", "peak core clock, Hz"),
        ("l2_bytes", "int", "L2 cache size, bytes"),
        ("memory_bytes", "int", "device memory size, bytes"),
        ("threads_per_warp", "int", "warp size / wavefront size"),
        ("max_warps_per_sm", "int", "resident warps (waves) per SM (CU)"),
        ("max_threads_per_block", "int", "threads per block limit"),
        ("max_blocks_per_sm", "int", "resident blocks per SM limit"),
        ("max_registers_per_sm", "int", "registers per SM"),
        ("max_shared_per_sm", "int", "shared memory / LDS per SM (CU), bytes"),
        ("max_shared_per_block", "int", "shared memory / LDS per block, bytes"),
        ("compute_capability", "text", "e.g. '8.0' (NVIDIA) or gfx target (AMD)"),
        ("simd_per_cu", "int", "SIMDs per CU (AMD); NULL on NVIDIA"),
    ),
    "processes": _cols(
        ("pid", "int", "process id"),
        ("name", "text", "process name or command"),
    ),
    "threads": _cols(
        ("pid", "int", "process id"),
        ("tid", "int", "thread id"),
        ("name", "text", "thread name"),
    ),
    "overhead": _cols(
        ("pid", "int", "process id"),
        ("tid", "int", "thread id"),
        ("start", "int", "start, ns"),
        ("end", "int", "end, ns"),
        ("name", "text", "what the profiler was doing"),
    ),
    "meta": _cols(
        ("key", "text", "host_name, product_version, capture_start_utc, ..."),
        ("value", "text", "value as text"),
    ),
}


# Timestamps pa accepts: numbers in [0, 2^62) ns (about 146 years from the clock's zero, so no sum
# or difference of two of them overflows a 64-bit integer), and no single record lasting longer than
# 2^48 ns (about 3.3 days: longer than any capture pa has been asked to read).
MAX_TIMESTAMP_NS = 1 << 62
MAX_DURATION_NS = 1 << 48
_M = MAX_TIMESTAMP_NS - 1


@dataclass(frozen=True)
class Check:
    """One domain check: the condition (SQL over canonical columns) a row must meet, and its label."""

    label: str   # what a failing row is, as the summary's warning says it
    sql: str     # true for rows in the domain (never NULL)


@dataclass(frozen=True)
class Domain:
    """A relation's domain: its checks, and `fast`, a cheaper condition that implies all of them.

    Most rows pass `fast` (three comparisons), so the per-check conditions run only for the rare
    row that does not: NULL ends of records still open, end < start, or a row about to be dropped.
    tests/test_domains.py checks that `fast` never accepts a row some check rejects.

    counted_apart: the relation is small and its readers filter it further (`WHERE start IS NOT
    NULL AND ...`), which SQLite may apply before the domain checks; its dropped rows are counted by
    one query of their own instead of while it is read (pa.profile.domain).
    """

    checks: tuple[Check, ...] = ()
    fast: str | None = None
    counted_apart: bool = False


_TIMES = (
    Check("start or end is not a number",
          "typeof(start) IN ('integer', 'real', 'null') AND typeof(\"end\") IN ('integer', 'real', 'null')"),
    Check("start or end outside [0, 2^62) ns",
          f"(start IS NULL OR start BETWEEN 0 AND {_M}) AND (\"end\" IS NULL OR \"end\" BETWEEN 0 AND {_M})"),
    Check("lasting longer than 2^48 ns (3.3 days)",
          f"start IS NULL OR \"end\" IS NULL OR \"end\" - start <= {MAX_DURATION_NS}"),
)
_FAST_TIMES = f'start BETWEEN 0 AND {_M - MAX_DURATION_NS} AND "end" BETWEEN start AND start + {MAX_DURATION_NS}'
_DEVICE = Check("device missing, not a number or negative", f"device IS NOT NULL AND device BETWEEN 0 AND {_M}")
_FAST_DEVICE = f"device BETWEEN 0 AND {_M}"
_BYTES = Check("bytes negative or not a number", f"bytes IS NULL OR bytes BETWEEN 0 AND {_M}")
# The check itself, NULL included: rocpd's memsets (fill kernels) carry no size, and a fast
# condition false on every row sends every row through the checks.
_FAST_BYTES = f"({_BYTES.sql})"
# CUPTI writes start = end = 0 for a graph execution whose timing it could not collect
# (CUpti_ActivityGraphTrace2); no kernel really runs at the clock's zero for no time either.
_TIMED = Check("start and end both 0 (timing not collected)", 'NOT (start IS 0 AND "end" IS 0)')
_NAME_ID = Check("name_id missing or not a number", f"name_id IS NOT NULL AND name_id BETWEEN {-_M} AND {_M}")

DOMAINS: dict[str, Domain] = {
    "kernels": Domain((*_TIMES, _TIMED, _DEVICE), f'{_FAST_TIMES} AND "end" > 0 AND {_FAST_DEVICE}'),
    "kernel_names": Domain((_NAME_ID,), counted_apart=True),
    # A host-to-host copy involves no GPU: its device may be NULL.
    "copies": Domain((*_TIMES, Check(_DEVICE.label + " (other than a host-to-host copy)",
                                     f"({_DEVICE.sql}) OR (device IS NULL AND direction = 'HtoH')"), _BYTES),
                     f"{_FAST_TIMES} AND {_FAST_DEVICE} AND {_FAST_BYTES}"),
    "memsets": Domain((*_TIMES, _DEVICE, _BYTES), f"{_FAST_TIMES} AND {_FAST_DEVICE} AND {_FAST_BYTES}"),
    "api_calls": Domain(_TIMES, _FAST_TIMES),
    "api_names": Domain((_NAME_ID,), counted_apart=True),
    "syncs": Domain(_TIMES, _FAST_TIMES, counted_apart=True),
    "markers": Domain(_TIMES, _FAST_TIMES),
    "mpi_calls": Domain((*_TIMES, _BYTES), _FAST_TIMES, counted_apart=True),
    "devices": Domain((_DEVICE,), counted_apart=True),
    "processes": Domain(),
    "threads": Domain(),
    "overhead": Domain(_TIMES, _FAST_TIMES, counted_apart=True),
    "driver_jit": Domain(_TIMES, _FAST_TIMES, counted_apart=True),
    # OS runtime calls can number in the millions (every read, poll and lock): checked while read.
    "os_calls": Domain(_TIMES, _FAST_TIMES),
    "cpu_samples": Domain((Check("time is not a number or outside [0, 2^62) ns",
                                 f"typeof(time) IN ('integer', 'real') AND time BETWEEN 0 AND {_M}"),),
                          f"time BETWEEN 0 AND {_M}"),
    "allocations": Domain((*_TIMES, _BYTES), f"{_FAST_TIMES} AND {_FAST_BYTES}", counted_apart=True),
    "memcpy_requests": Domain((_BYTES,), counted_apart=True),
    "kernel_classes": Domain((_NAME_ID,), counted_apart=True),
    "meta": Domain((Check("key is missing", "key IS NOT NULL"),), counted_apart=True),
}


def column_names(relation: str) -> tuple[str, ...]:
    """Return the canonical column names of `relation` in declaration order."""
    return tuple(c.name for c in RELATIONS[relation])
