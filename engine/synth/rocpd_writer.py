"""Write a `Scenario` as a rocpd (schema_version 3) SQLite database, as rocprofv3 or rocprof-sys would.

No real rocpd file can be shipped with pa, so the rocpd query set is tested against databases built
here from the format facts in the project's reference notes: every concrete table carries the file's
GUID suffix (`rocpd_string_<uuid>`) and a `guid` column, an un-suffixed view sits over each, and the
convenience views (`kernels`, `regions`, ...) join them on id *and* guid as the real ones do.

What the two writers (`flavour`) differ in, and why it matters to pa:

- rocprofv3 names region categories `HIP_RUNTIME_API_EXT`, `HSA_CORE_API`, `MARKER_CORE_API`, fills
  the agents' `extdata` with hardware facts, and never records MPI.
- rocprof-sys uses `rocm_hip_api`, `rocm_hsa_api`, `rocm_marker_api` (user rocTX ranges *and* one
  marker duplicating every HIP call), `mpi`, plus `timer_sampling`/`pthread` noise, and writes `{}`
  as agent `extdata`.

Mapping decisions (see also queries/rocpd/README.md):

- GPU agents: the scenario's device id is the agent's `type_index` (its number among GPU agents,
  the number users see as HIP device / `ROCR_VISIBLE_DEVICES` index); extra unused GPUs take the
  lowest free numbers. `logical_index` and `absolute_index` count all agents, CPU first.
- Grids: `grid_size_*` counts work-items (blocks × workgroup size), as HIP does.
- LDS: dispatch `group_segment_size` = static + dynamic LDS; the symbol's = static LDS.
- Copies: host-side memory kind (pageable/pinned) is not recorded by rocpd; not written.
- Memsets: rocpd has no memset table: ROCm runs hipMemset as a blit kernel,
  `__amd_rocclr_fillBufferAligned`, so scenario memsets are written as dispatches of that kernel
  (one work-item per 16 bytes, 256-wide workgroups). GPU-side sync records: rocpd has none; syncs are
  host API regions only.
- API call names: a scenario `ApiCall.name` override is used only when it is a HIP/HSA name
  (`hip*`/`hsa*`); CUDA spellings meant for the Nsight writer fall back to the HIP default.
- `degraded=True` leaves `rocpd_kernel_dispatch` and `rocpd_memory_copy` empty (tables present): a
  job killed while the writer flushed.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, TypeVar

from engine.synth.scenario import ApiCall, Copy, Device, Kernel, Scenario

FLAVOURS = ("rocprofv3", "rocprof-sys")
CHUNK = 50_000

# Concrete tables (base name without the `rocpd_` prefix) and their columns besides id and guid,
# as the reference lists them. `extdata` defaults to '{}' as in the real files.
_EXT = "extdata JSONB DEFAULT '{}'"
_TABLES: dict[str, tuple[str, ...]] = {
    "string": ("string TEXT",),
    "info_node": ("hash BIGINT", "machine_id TEXT", "system_name TEXT", "hostname TEXT", "release TEXT",
                  "version TEXT", "hardware_name TEXT", "domain_name TEXT"),
    "info_process": ("nid INTEGER", "ppid INTEGER", "pid INTEGER", "init BIGINT", "fini BIGINT",
                     "start BIGINT", '"end" BIGINT', "command TEXT", "environment JSONB DEFAULT '{}'",
                     _EXT),
    "info_thread": ("nid INTEGER", "ppid INTEGER", "pid INTEGER", "tid INTEGER", "name TEXT",
                    "start BIGINT", '"end" BIGINT', _EXT),
    "info_agent": ("nid INTEGER", "pid INTEGER", "type TEXT", "absolute_index INTEGER",
                   "logical_index INTEGER", "type_index INTEGER", "uuid INTEGER", "name TEXT",
                   "model_name TEXT", "vendor_name TEXT", "product_name TEXT", "user_name TEXT", _EXT),
    "info_queue": ("nid INTEGER", "pid INTEGER", "name TEXT", _EXT),
    "info_stream": ("nid INTEGER", "pid INTEGER", "name TEXT", _EXT),
    "info_pmc": ("nid INTEGER", "pid INTEGER", "agent_id INTEGER", "target_arch TEXT", "event_code INT",
                 "instance_id INTEGER", "name TEXT", "symbol TEXT", "description TEXT",
                 "long_description TEXT", "component TEXT", "units TEXT", "value_type TEXT", "block TEXT",
                 "expression TEXT", "is_constant INTEGER", "is_derived INTEGER", _EXT),
    "info_code_object": ("nid INTEGER", "pid INTEGER", "agent_id INTEGER", "uri TEXT", "load_base BIGINT",
                         "load_size BIGINT", "load_delta BIGINT", "storage_type TEXT", _EXT),
    "info_kernel_symbol": ("nid INTEGER", "pid INTEGER", "code_object_id INTEGER", "kernel_name TEXT",
                           "display_name TEXT", "kernel_object INTEGER", "kernarg_segment_size INTEGER",
                           "kernarg_segment_alignment INTEGER", "group_segment_size INTEGER",
                           "private_segment_size INTEGER", "sgpr_count INTEGER", "arch_vgpr_count INTEGER",
                           "accum_vgpr_count INTEGER", _EXT),
    "track": ("nid INTEGER", "pid INTEGER", "tid INTEGER", "name_id INTEGER", _EXT),
    "event": ("category_id INTEGER", "stack_id INTEGER DEFAULT 0", "parent_stack_id INTEGER DEFAULT 0",
              "correlation_id INTEGER DEFAULT 0", "call_stack JSONB DEFAULT '{}'",
              "line_info JSONB DEFAULT '{}'", _EXT),
    "arg": ("event_id INTEGER", "position INTEGER", "type TEXT", "name TEXT", "value TEXT", _EXT),
    "pmc_event": ("event_id INTEGER", "pmc_id INTEGER", "value REAL", _EXT),
    "region": ("nid INTEGER", "pid INTEGER", "tid INTEGER", "start BIGINT", '"end" BIGINT',
               "name_id INTEGER", "event_id INTEGER", _EXT),
    "sample": ("track_id INTEGER", "timestamp BIGINT", "event_id INTEGER", _EXT),
    "kernel_dispatch": ("nid INTEGER", "pid INTEGER", "tid INTEGER", "agent_id INTEGER", "kernel_id INTEGER",
                        "dispatch_id INTEGER", "queue_id INTEGER", "stream_id INTEGER", "start BIGINT",
                        '"end" BIGINT', "private_segment_size INTEGER", "group_segment_size INTEGER",
                        "workgroup_size_x INTEGER", "workgroup_size_y INTEGER", "workgroup_size_z INTEGER",
                        "grid_size_x INTEGER", "grid_size_y INTEGER", "grid_size_z INTEGER",
                        "region_name_id INTEGER", "event_id INTEGER", _EXT),
    "memory_copy": ("nid INTEGER", "pid INTEGER", "tid INTEGER", "start BIGINT", '"end" BIGINT',
                    "name_id INTEGER", "dst_agent_id INTEGER", "dst_address INTEGER",
                    "src_agent_id INTEGER", "src_address INTEGER", "size INTEGER", "queue_id INTEGER",
                    "stream_id INTEGER", "region_name_id INTEGER", "event_id INTEGER", _EXT),
    "memory_allocate": ("nid INTEGER", "pid INTEGER", "tid INTEGER", "agent_id INTEGER", "type TEXT",
                        "level TEXT", "start BIGINT", '"end" BIGINT', "address INTEGER", "size INTEGER",
                        "queue_id INTEGER", "stream_id INTEGER", "event_id INTEGER", _EXT),
}

# Convenience views over the un-suffixed views; every join also matches on guid, as in real files.
_AGENT_COLS = ("{p}.absolute_index AS {n}agent_abs_index, {p}.logical_index AS {n}agent_log_index, "
               "{p}.type_index AS {n}agent_type_index, {p}.type AS {n}agent_type")
_VIEWS: dict[str, str] = {
    "regions": """
SELECT R.id, R.guid, C.string AS category, N.string AS name, R.nid, R.pid, R.tid, R.start, R."end",
       (R."end" - R.start) AS duration, R.event_id, E.stack_id, E.parent_stack_id,
       E.correlation_id AS corr_id, R.extdata, E.call_stack, E.line_info
FROM rocpd_region R
JOIN rocpd_event E ON E.id = R.event_id AND E.guid = R.guid
JOIN rocpd_string C ON C.id = E.category_id AND C.guid = E.guid
JOIN rocpd_string N ON N.id = R.name_id AND N.guid = R.guid""",
    "region_args": """
SELECT R.id, R.guid, R.nid, R.pid, A.type, A.name, A.value
FROM rocpd_region R JOIN rocpd_arg A ON A.event_id = R.event_id AND A.guid = R.guid""",
    "events_args": """
SELECT E.id AS event_id, C.string AS category, E.stack_id, E.parent_stack_id, E.correlation_id,
       A.position AS arg_position, A.type AS arg_type, A.name AS arg_name, A.value AS arg_value,
       E.call_stack, E.line_info, E.extdata
FROM rocpd_event E JOIN rocpd_arg A ON A.event_id = E.id AND A.guid = E.guid
JOIN rocpd_string C ON C.id = E.category_id AND C.guid = E.guid""",
    "kernels": f"""
SELECT K.id, K.guid, K.tid, C.string AS category, RN.string AS region, S.display_name AS name, K.nid,
       K.pid, {_AGENT_COLS.format(p="A", n="")}, S.code_object_id, K.kernel_id, K.dispatch_id,
       K.stream_id, K.queue_id, Q.name AS queue, ST.name AS stream, K.start, K."end",
       (K."end" - K.start) AS duration, K.grid_size_x AS grid_x, K.grid_size_y AS grid_y,
       K.grid_size_z AS grid_z, K.workgroup_size_x AS workgroup_x, K.workgroup_size_y AS workgroup_y,
       K.workgroup_size_z AS workgroup_z, K.group_segment_size AS lds_size,
       K.private_segment_size AS scratch_size, S.arch_vgpr_count AS vgpr_count, S.accum_vgpr_count,
       S.sgpr_count, S.group_segment_size AS static_lds_size,
       S.private_segment_size AS static_scratch_size, E.stack_id, E.parent_stack_id,
       E.correlation_id AS corr_id
FROM rocpd_kernel_dispatch K
JOIN rocpd_info_agent A ON A.id = K.agent_id AND A.guid = K.guid
JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid
LEFT JOIN rocpd_event E ON E.id = K.event_id AND E.guid = K.guid
LEFT JOIN rocpd_string C ON C.id = E.category_id AND C.guid = E.guid
LEFT JOIN rocpd_string RN ON RN.id = K.region_name_id AND RN.guid = K.guid
LEFT JOIN rocpd_info_queue Q ON Q.id = K.queue_id AND Q.guid = K.guid
LEFT JOIN rocpd_info_stream ST ON ST.id = K.stream_id AND ST.guid = K.guid""",
    "memory_copies": f"""
SELECT M.id, M.guid, C.string AS category, M.nid, M.pid, M.tid, M.start, M."end",
       (M."end" - M.start) AS duration, N.string AS name, RN.string AS region_name, M.stream_id,
       M.queue_id, ST.name AS stream_name, Q.name AS queue_name, M.size, DA.name AS dst_device,
       {_AGENT_COLS.format(p="DA", n="dst_")}, M.dst_address, SA.name AS src_device,
       {_AGENT_COLS.format(p="SA", n="src_")}, M.src_address, E.stack_id, E.parent_stack_id,
       E.correlation_id AS corr_id
FROM rocpd_memory_copy M
JOIN rocpd_string N ON N.id = M.name_id AND N.guid = M.guid
LEFT JOIN rocpd_info_agent DA ON DA.id = M.dst_agent_id AND DA.guid = M.guid
LEFT JOIN rocpd_info_agent SA ON SA.id = M.src_agent_id AND SA.guid = M.guid
LEFT JOIN rocpd_event E ON E.id = M.event_id AND E.guid = M.guid
LEFT JOIN rocpd_string C ON C.id = E.category_id AND C.guid = E.guid
LEFT JOIN rocpd_string RN ON RN.id = M.region_name_id AND RN.guid = M.guid
LEFT JOIN rocpd_info_queue Q ON Q.id = M.queue_id AND Q.guid = M.guid
LEFT JOIN rocpd_info_stream ST ON ST.id = M.stream_id AND ST.guid = M.guid""",
    "processes": """
SELECT N.id AS nid, N.machine_id, N.system_name, N.hostname, N.release AS system_release,
       N.version AS system_version, P.guid, P.ppid, P.pid, P.init, P.start, P."end", P.fini, P.command
FROM rocpd_info_process P JOIN rocpd_info_node N ON N.id = P.nid AND N.guid = P.guid""",
    "threads": """
SELECT N.id AS nid, N.machine_id, N.system_name, N.hostname, N.release AS system_release,
       N.version AS system_version, T.guid, T.ppid, T.pid, T.tid, T.start, T."end", T.name
FROM rocpd_info_thread T JOIN rocpd_info_node N ON N.id = T.nid AND N.guid = T.guid""",
    "top_kernels": """
SELECT name, count(*) AS total_calls, sum(duration) AS total_duration, avg(duration) AS average,
       100.0 * sum(duration) / (SELECT sum(duration) FROM kernels) AS percentage
FROM kernels GROUP BY name ORDER BY total_duration DESC""",
}

# Region categories per writer.
_CATEGORIES: dict[str, dict[str, str]] = {
    "rocprofv3": {"hip": "HIP_RUNTIME_API_EXT", "hsa": "HSA_CORE_API", "hsa_ext": "HSA_AMD_EXT_API",
                  "marker": "MARKER_CORE_API", "dispatch": "KERNEL_DISPATCH", "copy": "MEMORY_COPY"},
    "rocprof-sys": {"hip": "rocm_hip_api", "hsa": "rocm_hsa_api", "hsa_ext": "rocm_hsa_api",
                    "marker": "rocm_marker_api", "mpi": "mpi", "sampling": "timer_sampling",
                    "pthread": "pthread", "dispatch": "KERNEL_DISPATCH", "copy": "MEMORY_COPY"},
}

HIP_NAMES: dict[str, str] = {
    "launch": "hipLaunchKernel", "graph_launch": "hipGraphLaunch", "memcpy": "hipMemcpy",
    "memcpy_async": "hipMemcpyAsync", "memset": "hipMemsetAsync", "device_sync": "hipDeviceSynchronize",
    "stream_sync": "hipStreamSynchronize", "event_sync": "hipEventSynchronize", "malloc": "hipMalloc",
    "free": "hipFree", "other": "hipGetLastError",
}
COPY_NAMES: dict[str, str] = {
    "HtoD": "MEMORY_COPY_HOST_TO_DEVICE", "DtoH": "MEMORY_COPY_DEVICE_TO_HOST",
    "DtoD": "MEMORY_COPY_DEVICE_TO_DEVICE", "PtoP": "MEMORY_COPY_PEER_TO_PEER",
    "HtoH": "MEMORY_COPY_HOST_TO_HOST",
}
_MEMCPY_KIND_ARG = {"HtoD": "hipMemcpyHostToDevice", "DtoH": "hipMemcpyDeviceToHost",
                    "DtoD": "hipMemcpyDeviceToDevice", "PtoP": "hipMemcpyDeviceToDevice",
                    "HtoH": "hipMemcpyHostToHost"}
_SYNC_KINDS = ("device_sync", "stream_sync", "event_sync")

# (position, type, name, value) of one call parameter.
Arg = tuple[int, str, str, str]


class RegionRec(NamedTuple):
    """One host region (API call, marker, MPI call) before ids are assigned."""

    pid: int
    tid: int
    start: int
    end: int
    name: str
    category: str
    correlation_id: int = 0
    args: tuple[Arg, ...] = ()


class DispatchRec(NamedTuple):
    """One kernel dispatch with every id already resolved except its event."""

    pid: int
    tid: int
    agent_id: int
    kernel_id: int
    queue_id: int
    stream_id: int
    start: int
    end: int
    private_segment_size: int
    group_segment_size: int
    workgroup: tuple[int, int, int]
    grid: tuple[int, int, int]      # work-items, HIP convention
    region_name: str | None
    correlation_id: int


class CopyRec(NamedTuple):
    """One memory copy with agent ids resolved."""

    pid: int
    tid: int
    start: int
    end: int
    name: str
    dst_agent_id: int
    src_agent_id: int
    size: int
    stream_id: int
    region_name: str | None
    correlation_id: int


def _uuid_suffix(guid: str) -> str:
    """The table suffix rocpd derives from the GUID: '_' + guid with '-' turned into '_'."""
    return "_" + guid.replace("-", "_")


@dataclass
class _File:
    """An open rocpd database being written: names, interned strings and the event id counter."""

    conn: sqlite3.Connection
    guid: str
    nid: int = 1
    strings: dict[str, int] = field(default_factory=dict)
    next_event: int = 1
    next_region: int = 1
    next_arg: int = 1
    next_dispatch: int = 1
    next_copy: int = 1

    def table(self, base: str) -> str:
        """Concrete (GUID-suffixed) name of rocpd table `base`."""
        return f"rocpd_{base}{_uuid_suffix(self.guid)}"

    def sid(self, text: str) -> int:
        """Interned string id of `text` (rocpd_string is written at the end)."""
        found = self.strings.get(text)
        if found is None:
            found = self.strings[text] = len(self.strings) + 1
        return found

    def insert(self, base: str, cols: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
        """Insert rows into the concrete table with executemany; `rows` may be a generator."""
        names = ", ".join(f'"{c}"' for c in cols)
        marks = ", ".join("?" * len(cols))
        self.conn.executemany(f"INSERT INTO {self.table(base)} ({names}) VALUES ({marks})", rows)


def _open(path: Path, guid: str) -> _File:
    """Create an empty database with the rocpd layout (tables, views, metadata)."""
    for sidecar in (path, path.with_name(path.name + "-journal")):
        if sidecar.exists():
            sidecar.unlink()
    conn = sqlite3.connect(path, isolation_level=None)
    for pragma in ("journal_mode=OFF", "synchronous=OFF", "locking_mode=EXCLUSIVE", "temp_store=MEMORY",
                   "cache_size=-262144"):
        conn.execute(f"PRAGMA {pragma}")
    conn.execute("BEGIN")
    db = _File(conn=conn, guid=guid)
    for base, cols in _TABLES.items():
        body = ", ".join(("id INTEGER PRIMARY KEY", f"guid TEXT NOT NULL DEFAULT '{guid}'", *cols))
        conn.execute(f"CREATE TABLE {db.table(base)} ({body})")
        conn.execute(f"CREATE VIEW rocpd_{base} AS SELECT * FROM {db.table(base)}")
    conn.execute(f"CREATE TABLE {db.table('metadata')} (id INTEGER PRIMARY KEY, tag TEXT, value TEXT)")
    conn.execute(f"CREATE VIEW rocpd_metadata AS SELECT * FROM {db.table('metadata')}")
    db.insert("metadata", ("tag", "value"),
              [("schema_version", "3"), ("uuid", _uuid_suffix(guid)), ("guid", guid)])
    for name, sql in _VIEWS.items():
        conn.execute(f"CREATE VIEW {name} AS {sql}")
    return db


def _close(db: _File) -> None:
    """Write the interned strings and commit."""
    db.insert("string", ("id", "string"), ((i, s) for s, i in db.strings.items()))
    db.conn.execute("COMMIT")
    db.conn.close()


T = TypeVar("T")


def _chunks(items: Iterable[T], size: int = CHUNK) -> Iterator[list[T]]:
    """Split a (possibly huge) iterable into lists so rows never all sit in memory."""
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _event_rows(db: _File, n: int, category: str, corrs: Iterable[int]) -> tuple[int, list[tuple]]:
    """Allocate `n` consecutive event ids; return the first id and the rocpd_event rows."""
    first = db.next_event
    db.next_event += n
    cat = db.sid(category)
    return first, [(first + i, cat, corr) for i, corr in enumerate(corrs)]


_EVENT_COLS = ("id", "category_id", "correlation_id")


def write_regions(db: _File, regions: Iterable[RegionRec]) -> None:
    """Insert regions, their events and their args, a chunk at a time."""
    for chunk in _chunks(regions):
        events, rows, args = [], [], []
        for rec in chunk:
            eid = db.next_event
            db.next_event += 1
            events.append((eid, db.sid(rec.category), rec.correlation_id))
            rows.append((db.next_region, db.nid, rec.pid, rec.tid, rec.start, rec.end, db.sid(rec.name), eid))
            db.next_region += 1
            for pos, typ, name, value in rec.args:
                args.append((db.next_arg, eid, pos, typ, name, value))
                db.next_arg += 1
        db.insert("event", _EVENT_COLS, events)
        db.insert("region", ("id", "nid", "pid", "tid", "start", "end", "name_id", "event_id"), rows)
        db.insert("arg", ("id", "event_id", "position", "type", "name", "value"), args)


_DISPATCH_COLS = ("id", "nid", "pid", "tid", "agent_id", "kernel_id", "dispatch_id", "queue_id",
                  "stream_id", "start", "end", "private_segment_size", "group_segment_size",
                  "workgroup_size_x", "workgroup_size_y", "workgroup_size_z", "grid_size_x",
                  "grid_size_y", "grid_size_z", "region_name_id", "event_id")


def write_dispatches(db: _File, dispatches: Iterable[DispatchRec], category: str) -> None:
    """Insert kernel dispatches and their events, a chunk at a time."""
    for chunk in _chunks(dispatches):
        recs = chunk
        first, events = _event_rows(db, len(recs), category, (r.correlation_id for r in recs))
        rows = []
        for i, r in enumerate(recs):
            region = db.sid(r.region_name) if r.region_name else None
            rows.append((db.next_dispatch, db.nid, r.pid, r.tid, r.agent_id, r.kernel_id, db.next_dispatch,
                         r.queue_id, r.stream_id, r.start, r.end, r.private_segment_size,
                         r.group_segment_size, *r.workgroup, *r.grid, region, first + i))
            db.next_dispatch += 1
        db.insert("event", _EVENT_COLS, events)
        db.insert("kernel_dispatch", _DISPATCH_COLS, rows)


_COPY_COLS = ("id", "nid", "pid", "tid", "start", "end", "name_id", "dst_agent_id", "dst_address",
              "src_agent_id", "src_address", "size", "queue_id", "stream_id", "region_name_id", "event_id")


def write_copies(db: _File, copies: Iterable[CopyRec], category: str) -> None:
    """Insert memory copies and their events, a chunk at a time."""
    for chunk in _chunks(copies):
        recs = chunk
        first, events = _event_rows(db, len(recs), category, (r.correlation_id for r in recs))
        rows = []
        for i, r in enumerate(recs):
            region = db.sid(r.region_name) if r.region_name else None
            # Copies run on SDMA engines, not on an HSA queue: queue_id stays NULL.
            rows.append((db.next_copy, db.nid, r.pid, r.tid, r.start, r.end, db.sid(r.name), r.dst_agent_id,
                         0x7F0000000000 + 4096 * db.next_copy, r.src_agent_id,
                         0x7E0000000000 + 4096 * db.next_copy, r.size, None, r.stream_id, region, first + i))
            db.next_copy += 1
        db.insert("event", _EVENT_COLS, events)
        db.insert("memory_copy", _COPY_COLS, rows)


# --------------------------------------------------------------------------------------------------
# Node, agents, processes


@dataclass(frozen=True)
class Agents:
    """Agent ids of one file: the CPU agent and the GPU agent of every device number (type_index)."""

    cpu: int
    gpu_by_device: dict[int, int]


_CPU_NAME = "AMD EPYC 7A53 64-Core Processor"


def _gpu_extdata(dev: Device | None, flavour: str) -> str:
    """Agent extdata JSON: hardware facts for rocprofv3, '{}' for rocprof-sys (as the real writers)."""
    if flavour != "rocprofv3":
        return "{}"
    dev = dev or Device(id=-1)
    major, minor, step = _gfx_version(dev.gfx_target)
    return json.dumps({
        "cu_count": dev.sm_count, "simd_per_cu": dev.simd_per_cu, "wave_front_size": dev.threads_per_warp,
        "max_waves_per_cu": dev.max_warps_per_sm,
        "max_engine_clk_fcompute": dev.clock_hz // 1_000_000,  # MHz, as rocprofiler-sdk reports it
        "gfx_target_version": major * 10000 + minor * 100 + step,
        "lds_size_in_kb": dev.max_shared_per_sm // 1024, "workgroup_max_size": dev.max_threads_per_block,
    })


def _gfx_version(target: str) -> tuple[int, int, int]:
    """'gfx90a' -> (9, 0, 10), 'gfx942' -> (9, 4, 2): the HSA gfx_target_version digits."""
    digits = target.removeprefix("gfx")
    if len(digits) < 3:
        return (0, 0, 0)
    return int(digits[:-2]), int(digits[-2], 16), int(digits[-1], 16)


def write_agents(db: _File, devices: Sequence[Device], extra_gpus: int, flavour: str, pid: int) -> Agents:
    """Insert the node's CPU agent and every GPU (scenario devices plus `extra_gpus` unused ones)."""
    numbers = {d.id: d for d in devices}
    extra: list[int] = []
    candidate = 0
    while len(extra) < extra_gpus:
        if candidate not in numbers:
            extra.append(candidate)
        candidate += 1
    template = devices[0] if devices else None
    gpus: list[tuple[int, Device | None]] = [(n, numbers[n]) for n in numbers] + [(n, None) for n in extra]
    gpus.sort(key=lambda g: g[0])
    rows: list[tuple] = [(1, db.nid, pid, "CPU", 0, 0, 0, 0, _CPU_NAME, "", "CPU", _CPU_NAME, "", "{}")]
    by_device: dict[int, int] = {}
    for pos, (number, dev) in enumerate(gpus, start=1):
        like = dev or template or Device(id=number)
        by_device[number] = pos + 1
        rows.append((pos + 1, db.nid, pid, "GPU", pos, pos, number, 0xA000 + number, like.gfx_target,
                     like.gfx_target, "AMD", _product(like), "", _gpu_extdata(like, flavour)))
    db.insert("info_agent", ("id", "nid", "pid", "type", "absolute_index", "logical_index", "type_index",
                             "uuid", "name", "model_name", "vendor_name", "product_name", "user_name",
                             "extdata"), rows)
    return Agents(cpu=1, gpu_by_device={n: a for n, a in by_device.items() if n in numbers})


def _product(dev: Device) -> str:
    """Product name for an AMD agent; an NVIDIA default name becomes a plausible Instinct name."""
    return dev.name if "AMD" in dev.name or "Instinct" in dev.name else "AMD Instinct MI250X"


def write_node_and_processes(db: _File, sc: Scenario, pids: set[int]) -> dict[int, int]:
    """Insert node, processes and threads; return each pid's main thread id (for GPU activity)."""
    db.insert("info_node", ("id", "hash", "machine_id", "system_name", "hostname", "release", "version",
                            "hardware_name", "domain_name"),
              [(db.nid, zlib.crc32(sc.host_name.encode()), "0" * 32, "Linux", sc.host_name,
                "5.14.21", "#1 SMP", "x86_64", "")])
    start, end = sc.span()
    main_tid: dict[int, int] = {}
    procs, threads = [], []
    for proc in sc.processes:
        if proc.pid not in pids:
            continue
        procs.append((db.nid, 1, proc.pid, start, end, start, end, proc.name))
        tids = dict(proc.threads)
        for group in (sc.api_calls, sc.markers, sc.mpi_calls):
            for ev in group:
                if ev.pid == proc.pid:
                    tids.setdefault(ev.tid, "")
        tids = tids or {proc.pid: proc.name}
        main_tid[proc.pid] = proc.pid if proc.pid in tids else min(tids)
        threads += [(db.nid, 1, proc.pid, tid, name or None, start, end)
                    for tid, name in sorted(tids.items())]
    db.insert("info_process", ("nid", "ppid", "pid", "init", "fini", "start", "end", "command"), procs)
    db.insert("info_thread", ("nid", "ppid", "pid", "tid", "name", "start", "end"), threads)
    return main_tid


# --------------------------------------------------------------------------------------------------
# Scenario events -> records


def _hip_name(call: ApiCall) -> str:
    """HIP spelling of a call; CUDA-specific overrides fall back to the HIP default."""
    if call.name and call.name.startswith(("hip", "hsa")):
        return call.name
    return HIP_NAMES[call.kind]


def _dim3(v: tuple[int, int, int]) -> str:
    return f"{{{v[0]}, {v[1]}, {v[2]}}}"


def _call_args(call: ApiCall, kernel: Kernel | None, copy: Copy | None) -> tuple[Arg, ...]:
    """Call parameters as rocpd_arg rows (position, type, name, value)."""
    if call.kind == "launch" and kernel is not None:
        return ((0, "const void*", "function_address", "0x7f00deadbeef"),
                (1, "dim3", "numBlocks", _dim3(kernel.grid)), (2, "dim3", "dimBlocks", _dim3(kernel.block)),
                (3, "void**", "args", "0x7ffc00000000"),
                (4, "size_t", "sharedMemBytes", str(kernel.dynamic_shared_bytes)),
                (5, "hipStream_t", "stream", str(kernel.stream)))
    if call.kind in ("memcpy", "memcpy_async") and copy is not None:
        args: tuple[Arg, ...] = ((0, "void*", "dst", "0x7f0000001000"),
                                 (1, "const void*", "src", "0x7e0000001000"),
                                 (2, "size_t", "sizeBytes", str(copy.bytes)),
                                 (3, "hipMemcpyKind", "kind", _MEMCPY_KIND_ARG[copy.direction]))
        if call.kind == "memcpy_async":
            args += ((4, "hipStream_t", "stream", str(copy.stream)),)
        return args
    return ()


def _nested_hsa(call: ApiCall, cats: dict[str, str]) -> RegionRec | None:
    """The HSA call a HIP call makes inside itself (a wait for syncs, a pool allocation for malloc)."""
    if call.end - call.start < 4:
        return None
    inner = (call.start + (call.end - call.start) // 4, call.end - (call.end - call.start) // 4)
    if call.kind in _SYNC_KINDS:
        return RegionRec(call.pid, call.tid, *inner, "hsa_signal_wait_scacquire", cats["hsa"])
    if call.kind == "malloc":
        return RegionRec(call.pid, call.tid, *inner, "hsa_amd_memory_pool_allocate", cats["hsa_ext"])
    return None


def scenario_regions(sc: Scenario, flavour: str, pids: set[int]) -> list[RegionRec]:
    """Every host region the chosen writer would record for the scenario's processes."""
    cats = _CATEGORIES[flavour]
    kernels = {k.correlation_id: k for k in sc.kernels if k.correlation_id}
    copies = {c.correlation_id: c for c in sc.copies if c.correlation_id}
    out: list[RegionRec] = []
    for call in sc.api_calls:
        if call.pid not in pids:
            continue
        name = _hip_name(call)
        args = _call_args(call, kernels.get(call.correlation_id), copies.get(call.correlation_id))
        out.append(RegionRec(call.pid, call.tid, call.start, call.end, name, cats["hip"],
                             call.correlation_id, args))
        nested = _nested_hsa(call, cats)
        if nested:
            out.append(nested)
        if flavour == "rocprof-sys":  # rocprof-sys mirrors every HIP call as a marker region
            out.append(RegionRec(call.pid, call.tid, call.start, call.end, name, cats["marker"]))
    out += [RegionRec(m.pid, m.tid, m.start, m.end, m.text, cats["marker"])
            for m in sc.markers if m.pid in pids]
    if flavour == "rocprof-sys":
        out += [RegionRec(m.pid, m.tid, m.start, m.end, m.name, cats["mpi"], 0,
                          ((0, "size_t", "bytes", str(m.bytes)),) if m.bytes else ())
                for m in sc.mpi_calls if m.pid in pids]
        out += _sys_noise(sc, cats, pids)
    return out


def _sys_noise(sc: Scenario, cats: dict[str, str], pids: set[int]) -> list[RegionRec]:
    """rocprof-sys background regions (sampling, pthread) that pa must not mistake for API calls."""
    start, end = sc.span()
    step = max((end - start) // 4, 1)
    out = []
    for proc in sc.processes:
        if proc.pid not in pids:
            continue
        out.append(RegionRec(proc.pid, proc.pid, start, start + 1, "pthread_create", cats["pthread"]))
        out += [RegionRec(proc.pid, proc.pid, start + i * step, start + i * step + 1, "main",
                          cats["sampling"]) for i in range(1, 4)]
    return out


@dataclass
class _GpuIds:
    """Symbol, queue and stream ids handed out while converting kernels and copies."""

    db: _File
    agents: Agents
    code_objects: dict[int, int] = field(default_factory=dict)            # agent -> code object
    symbols: dict[tuple, int] = field(default_factory=dict)               # (agent, name, ...) -> id
    queues: dict[tuple[int, int], int] = field(default_factory=dict)      # (agent, stream) -> id
    streams: set[int] = field(default_factory=set)

    def symbol(self, k: Kernel, agent: int) -> int:
        """Symbol id: one per kernel per agent's code object, as the loader registers them."""
        key = (agent, k.name, k.registers_per_thread, k.static_shared_bytes, k.local_bytes_per_thread)
        if key not in self.symbols:
            self.code_objects.setdefault(agent, len(self.code_objects) + 1)
            self.symbols[key] = len(self.symbols) + 1
        return self.symbols[key]

    def queue(self, agent: int, stream: int) -> int:
        """HSA queue id for a (agent, HIP stream) pair."""
        self.streams.add(stream)
        return self.queues.setdefault((agent, stream), len(self.queues) + 1)

    def flush(self, pid: int) -> None:
        """Insert code objects, kernel symbols, queues and streams seen so far."""
        db = self.db
        db.insert("info_code_object", ("id", "nid", "pid", "agent_id", "uri", "load_base", "load_size",
                                       "load_delta", "storage_type"),
                  [(co, db.nid, pid, agent, f"file:///app/a.out#offset=8192&size=65536&agent={agent}",
                    0x7F1000000000 + co * 0x100000, 65536, 0, "FILE")
                   for agent, co in self.code_objects.items()])
        db.insert("info_kernel_symbol", ("id", "nid", "pid", "code_object_id", "kernel_name", "display_name",
                                         "kernel_object", "kernarg_segment_size", "kernarg_segment_alignment",
                                         "group_segment_size", "private_segment_size", "sgpr_count",
                                         "arch_vgpr_count", "accum_vgpr_count"),
                  [(sid, db.nid, pid, self.code_objects[key[0]], _mangle(key[1]), key[1],
                    0x7F2000000000 + sid * 64, 64, 8, key[3], key[4], sgpr_count(key[2]), key[2], 0)
                   for key, sid in self.symbols.items()])
        db.insert("info_queue", ("id", "nid", "pid", "name"),
                  [(q, db.nid, pid, f"queue {q}") for q in self.queues.values()])
        db.insert("info_stream", ("id", "nid", "pid", "name"),
                  [(s, db.nid, pid, f"stream {s}") for s in sorted(self.streams)])


def sgpr_count(vgprs: int) -> int:
    """Scalar registers written for a kernel (the scenario has none): a deterministic plausible value."""
    return 16 + 8 * (vgprs % 8)


def _mangle(name: str) -> str:
    """Mangled-looking symbol name with the `.kd` descriptor suffix, as the code object lists it."""
    base = name.split("(")[0].split("<")[0].strip().split(" ")[-1] or "kernel"
    return f"_Z{len(base)}{base}v.kd"


FILL_KERNEL = "__amd_rocclr_fillBufferAligned"


def scenario_dispatches(sc: Scenario, ids: _GpuIds, pids: set[int], main_tid: dict[int, int]
                        ) -> list[DispatchRec]:
    """Kernel dispatch records in HIP conventions (work-item grids, combined LDS)."""
    calls = {c.correlation_id: c for c in sc.api_calls if c.correlation_id}
    out = []
    for k in sc.kernels:
        if k.pid not in pids:
            continue
        agent = ids.agents.gpu_by_device[k.device]
        call = calls.get(k.correlation_id)
        out.append(DispatchRec(
            pid=k.pid, tid=call.tid if call else main_tid.get(k.pid, k.pid), agent_id=agent,
            kernel_id=ids.symbol(k, agent), queue_id=ids.queue(agent, k.stream), stream_id=k.stream,
            start=k.start, end=k.end, private_segment_size=k.local_bytes_per_thread,
            group_segment_size=k.static_shared_bytes + k.dynamic_shared_bytes, workgroup=k.block,
            grid=(k.grid[0] * k.block[0], k.grid[1] * k.block[1], k.grid[2] * k.block[2]),
            region_name=_hip_name(call) if call else None, correlation_id=k.correlation_id))
    for m in sc.memsets:
        if m.pid not in pids:
            continue
        agent = ids.agents.gpu_by_device[m.device]
        call = calls.get(m.correlation_id)
        fill = Kernel(pid=m.pid, device=m.device, stream=m.stream, start=m.start, end=m.end,
                      name=FILL_KERNEL, registers_per_thread=16)
        work_items = max(256, -(-m.bytes // 16) // 256 * 256)
        out.append(DispatchRec(
            pid=m.pid, tid=call.tid if call else main_tid.get(m.pid, m.pid), agent_id=agent,
            kernel_id=ids.symbol(fill, agent), queue_id=ids.queue(agent, m.stream), stream_id=m.stream,
            start=m.start, end=m.end, private_segment_size=0, group_segment_size=0, workgroup=(256, 1, 1),
            grid=(work_items, 1, 1), region_name=_hip_name(call) if call else None,
            correlation_id=m.correlation_id))
    return out


def scenario_copies(sc: Scenario, ids: _GpuIds, pids: set[int], main_tid: dict[int, int]) -> list[CopyRec]:
    """Memory copy records; the host side of a copy is the CPU agent."""
    calls = {c.correlation_id: c for c in sc.api_calls if c.correlation_id}
    gpu, cpu = ids.agents.gpu_by_device, ids.agents.cpu
    out = []
    for c in sc.copies:
        if c.pid not in pids:
            continue
        here = gpu[c.device]
        other = gpu[c.dst_device] if c.dst_device is not None else here
        src, dst = {"HtoD": (cpu, here), "DtoH": (here, cpu), "DtoD": (here, here), "PtoP": (here, other),
                    "HtoH": (cpu, cpu)}[c.direction]
        ids.streams.add(c.stream)
        call = calls.get(c.correlation_id)
        out.append(CopyRec(c.pid, call.tid if call else main_tid.get(c.pid, c.pid), c.start, c.end,
                           COPY_NAMES[c.direction], dst, src, c.bytes, c.stream,
                           _hip_name(call) if call else None, c.correlation_id))
    return out


def write_rocpd(scenario: Scenario, path: Path, flavour: str = "rocprofv3", guid: str | None = None,
                degraded: bool = False, extra_gpus: int = 0, pid: int | None = None) -> Path:
    """Write `scenario` as one rocpd database and return `path`.

    `pid` restricts the file to one process, as rocprofv3 writes one database per rank; None writes
    every process into this one file. Each call draws a fresh GUID unless `guid` is given, so two
    ranks of one job never share one.
    """
    if flavour not in FLAVOURS:
        raise ValueError(f"unknown rocpd flavour {flavour!r} (known: {', '.join(FLAVOURS)})")
    pids = {p.pid for p in scenario.processes} if pid is None else {pid}
    db = _open(Path(path), guid or str(uuid.uuid4()))
    cats = _CATEGORIES[flavour]
    main_tid = write_node_and_processes(db, scenario, pids)
    agents = write_agents(db, scenario.devices, extra_gpus, flavour, min(pids, default=0))
    write_regions(db, scenario_regions(scenario, flavour, pids))
    ids = _GpuIds(db, agents)
    dispatches = scenario_dispatches(scenario, ids, pids, main_tid)
    copies = scenario_copies(scenario, ids, pids, main_tid)
    ids.flush(min(pids, default=0))
    if not degraded:
        write_dispatches(db, dispatches, cats["dispatch"])
        write_copies(db, copies, cats["copy"])
    _close(db)
    return Path(path)


# --------------------------------------------------------------------------------------------------
# Bulk generator for benchmarks: streams rows without building a Scenario


_BULK_PID = 4242
_BULK_STEP = 1000  # ns between region starts; a region lasts at most 900 ns


def _bulk_names(flavour: str) -> list[tuple[str, str]]:
    """(name, category key) cycle of bulk regions: mostly HIP calls, as in a real capture."""
    names = [("hipLaunchKernel", "hip"), ("hipMemcpyAsync", "hip"), ("hipLaunchKernel", "hip"),
             ("hipGetLastError", "hip"), ("hipLaunchKernel", "hip"), ("hsa_signal_store_screlease", "hsa"),
             ("hipStreamSynchronize", "hip"), ("hsa_amd_memory_async_copy", "hsa_ext")]
    if flavour == "rocprof-sys":
        names += [("hipLaunchKernel", "marker"), ("MPI_Allreduce", "mpi"), ("solver step", "marker")]
    else:
        names += [("solver step", "marker")]
    return names


def _bulk_regions(n: int, seed: int, flavour: str) -> Iterator[RegionRec]:
    cats = _CATEGORIES[flavour]
    cycle = [(name, cats[key]) for name, key in _bulk_names(flavour)]
    for i in range(n):
        name, cat = cycle[(i + seed) % len(cycle)]
        start = i * _BULK_STEP
        end = start + 100 + (i * 2654435761 + seed) % 800
        args: tuple[Arg, ...] = ()
        if name == "hipMemcpyAsync":
            args = ((0, "void*", "dst", "0x7f0000001000"), (1, "const void*", "src", "0x7e0000001000"),
                    (2, "size_t", "sizeBytes", str(4096 << (i % 8))),
                    (3, "hipMemcpyKind", "kind", "hipMemcpyHostToDevice"), (4, "hipStream_t", "stream", "0"))
        yield RegionRec(_BULK_PID, _BULK_PID, start, end, name, cat, i + 1, args)


def _bulk_dispatches(n: int, n_regions: int, seed: int, kernels: int) -> Iterator[DispatchRec]:
    step = max(n_regions * _BULK_STEP // max(n, 1), 1)
    for j in range(n):
        start = j * step
        k = (j * 7 + seed) % kernels
        block = 64 << (k % 3)
        yield DispatchRec(_BULK_PID, _BULK_PID, 2, k + 1, 1 + j % 4, j % 4, start, start + 1 + step // 2,
                          0, 1024 * (k % 4), (block, 1, 1), (block * (1 + k * 37), 1, 1),
                          "hipLaunchKernel", 0)


def _bulk_copies(n: int, n_regions: int, seed: int) -> Iterator[CopyRec]:
    step = max(n_regions * _BULK_STEP // max(n, 1), 1)
    dirs = ("HtoD", "DtoH", "DtoD", "HtoD")
    for j in range(n):
        direction = dirs[(j + seed) % len(dirs)]
        src, dst = {"HtoD": (1, 2), "DtoH": (2, 1), "DtoD": (2, 2)}[direction]
        start = j * step + step // 3
        yield CopyRec(_BULK_PID, _BULK_PID, start, start + 1 + step // 4, COPY_NAMES[direction], dst, src,
                      4096 << (j % 10), j % 4, "hipMemcpyAsync", 0)


def write_rocpd_bulk(path: Path, n_regions: int, n_dispatches: int, n_copies: int, seed: int = 0,
                     flavour: str = "rocprofv3", guid: str | None = None) -> Path:
    """Write a large rocpd file (one process, one GPU) from streamed rows, for the benchmarks.

    Rows are produced by generators and inserted a chunk at a time, so memory stays flat whatever
    the counts; 20 M regions, 400 k dispatches and 500 k copies take a few minutes.
    """
    if flavour not in FLAVOURS:
        raise ValueError(f"unknown rocpd flavour {flavour!r} (known: {', '.join(FLAVOURS)})")
    from engine.synth.scenario import Process  # local: only the bulk path needs a placeholder process

    span_end = max(n_regions, 1) * _BULK_STEP
    sc = Scenario(name="bulk", description="bulk rocpd benchmark", devices=[Device(
        id=0, name="AMD Instinct MI250X", sm_count=110, clock_hz=1_700_000_000, threads_per_warp=64,
        max_warps_per_sm=32, max_shared_per_sm=65536, max_shared_per_block=65536, gfx_target="gfx90a")],
        processes=[Process(pid=_BULK_PID, name="bulk_app", threads={_BULK_PID: "bulk_app"})],
        markers=[], api_calls=[ApiCall(_BULK_PID, _BULK_PID, 0, span_end, "other")])
    db = _open(Path(path), guid or str(uuid.uuid4()))
    write_node_and_processes(db, sc, {_BULK_PID})
    agents = write_agents(db, sc.devices, 0, flavour, _BULK_PID)
    ids = _GpuIds(db, agents)
    n_kernels = 8
    for k in range(n_kernels):
        ids.symbol(Kernel(_BULK_PID, 0, 0, 0, 0, f"bulk_kernel_{k}(float*, int)", registers_per_thread=32 + k,
                          static_shared_bytes=1024 * (k % 4)), agents.gpu_by_device[0])
    for q in range(4):
        ids.queue(agents.gpu_by_device[0], q)
    ids.flush(_BULK_PID)
    cats = _CATEGORIES[flavour]
    write_regions(db, _bulk_regions(n_regions, seed, flavour))
    write_dispatches(db, _bulk_dispatches(n_dispatches, n_regions, seed, n_kernels), cats["dispatch"])
    write_copies(db, _bulk_copies(n_copies, n_regions, seed), cats["copy"])
    _close(db)
    return Path(path)


__all__ = ["COPY_NAMES", "FLAVOURS", "HIP_NAMES", "write_rocpd", "write_rocpd_bulk"]
