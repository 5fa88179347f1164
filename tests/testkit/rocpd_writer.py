"""Write a `Scenario` as a rocpd SQLite database the way rocprofv3 or rocprof-sys fill one.

pa's rocpd reading is only as good as the files it is tested on, and no real rocpd capture can be
shipped with pa. So the layout is not written here: every table, index and view is created by
executing the writers' own DDL (ROCm/rocm-systems `rocprofiler-sdk-rocpd` SQL, kept outside the
project in `../shared/reference/rocpd-ddl/`, or wherever `PA_ROCPD_DDL` points) with the
writer's `{{uuid}}` / `{{guid}}` substitution, and the rows are filled as the reference notes
(`../shared/reference/rocpd-v3-format.md`, `rocpd-v4-format.md`) say each writer fills them. When
the DDL is absent, writing a rocpd file fails with `RocpdDdlMissing` (a one-line UserError); the
Nsight Systems writer never needs it.

Conventions reproduced, each one a trap a reader can fall into:

- **Identity.** rocprofv3: guid a 36-character UUID; process and thread rows keyed by the OS pid
  and tid (`rocpd_info_process.id = pid`, `rocpd_info_thread.id = tid`); agent ids are the HSA node
  numbers (CPUs first, so agent 0 exists). rocprof-sys: guid 32 hex digits without dashes plus an
  `upid` metadata tag; agent ids count 1..N in insertion order; a region's `tid` is the
  `rocpd_info_thread` primary key (1..N), never the OS tid; process times are 0.
- **Correlation.** `rocpd_event.correlation_id` is the *external* id (0 unless the application sets
  one; `external_correlation` plants a shared non-zero one). The internal correlation id, assigned
  to every host API record in start order, is the API event's `stack_id` (and, for rocprofv3, the
  region's id); a kernel dispatch's or copy's event carries the enqueuing call's id as `stack_id`
  and `parent_stack_id`. A call nested in another (the HSA wait inside hipStreamSynchronize) has
  the outer call's id as `parent_stack_id`.
- **rocTX.** rocprofv3 records a push/pop range as a `MARKER_CORE_RANGE_API` region named
  `roctxThreadRangeA` (start/stop ranges `roctxProcessRangeA`) with the user's text in the event's
  `extdata` `$.message`; every record of zero duration (an instant `roctxMarkA`, and any API call
  that took no measurable time) goes to `rocpd_sample` on a track (node, pid, tid, category) instead
  of `rocpd_region`. rocprof-sys names its `rocm_marker_api` regions by the text (a mark is a
  region from its entry to its exit) and adds one `rocm_marker_api` region duplicating every HIP
  call, under the call's name and with the call's `stack_id`.
- **Copies.** Directions are the copy's name; there is no peer-to-peer name: a copy between two GPU
  agents (two GCDs of one MI250X package are two agents) is `MEMORY_COPY_DEVICE_TO_DEVICE`.
  rocprofv3 leaves a copy's `queue_id` NULL, rocprof-sys writes 0.
- **Kernels.** `grid_size_*` count work-items; dispatch `group_segment_size` is static + dynamic LDS;
  one kernel symbol per kernel per agent's code object; `region_name_id` points at the empty string
  unless an external correlation id renames the kernel. hipMemset runs as the blit kernel
  `__amd_rocclr_fillBufferAligned` (rocpd has no memset table).
- **Categories.** rocprofv3 (schema 3): `HIP_RUNTIME_API_EXT`, `HSA_CORE_API`, `HSA_AMD_EXT_API`,
  `MARKER_CORE_RANGE_API`, `RCCL_API`, `KERNEL_DISPATCH`, `MEMORY_COPY`, `MEMORY_ALLOCATION`,
  `SCRATCH_MEMORY`; rocprof-sys `rocm_hip_api`, `rocm_hsa_api`, `rocm_marker_api`, `rocm_rccl_api`,
  `mpi` (rocprofv3 never records MPI), `timer_sampling`, `pthread`, `rocm_kernel_dispatch`, ...
- **Schema 4.0.0** (rocprofv3 only): times in `rocpd_timestamp` (phase 1/2, 0 for instants) referenced
  by `start_id`/`end_id`/`timestamp_id`; identity on `rocpd_track` (host thread tracks, GPU queue
  tracks, copy stream tracks); categories in `rocpd_info_category` under lower-case names with
  repeats (`hsa_api` twice); `correlation_id` 0 everywhere; `schema_version_major/_minor/_patch`
  rows left as unsubstituted template text, as a real 4.0.0 file has them.

Scenario files are written with SQLite's foreign keys enforced (the rocprofv3 DDL turns them on), so a
row that points at a missing process, thread, queue, string or event fails here. The bulk generator
for benchmarks turns them off after the DDL, for speed.
"""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pa.errors import UserError
from testkit.scenario import ApiCall, Copy, Device, Kernel, Scenario

FLAVOURS = ("rocprofv3", "rocprof-sys")
# Schema versions the writer can produce: 3 and the additive 3.0.x share the schema-3 DDL (the
# metadata row differs); 4.0.0 has its own DDL and layout.
SCHEMA_VERSIONS = ("3", "3.0.1", "3.0.2", "3.0.3", "3.0.4", "3.0.5", "4.0.0")
CHUNK = 50_000

DDL_ENV = "PA_ROCPD_DDL"
_DEFAULT_DDL = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "rocpd-ddl"

# DDL scripts per (major, flavour), in the order the writers execute them (indexes last, after the rows).
_V3_COMMON = ("3/rocprofv3_rocpd_tables.sql", "3/rocprofv3_rocpd_views.sql")
_DDL_SCRIPTS: dict[tuple[str, str], tuple[str, ...]] = {
    ("3", "rocprofv3"): (*_V3_COMMON, "3/rocprofv3_data_views.sql", "3/rocprofv3_summary_views.sql",
                         "3/rocprofv3_marker_views.sql"),
    ("3", "rocprof-sys"): (*_V3_COMMON, "3/rocprofsys_data_views.sql", "3/rocprofsys_summary_views.sql"),
    ("4", "rocprofv3"): ("4/rocprofv3_4.0.0_schema.sql",),
}
_INDEX_SCRIPTS = {"3": ("3/rocprofv3_rocpd_indexes.sql",), "4": ()}


class RocpdDdlMissing(UserError):
    """The writers' DDL (needed to build a rocpd file) is not where pa looks for it."""


def ddl_dir() -> Path:
    """Directory holding the writers' rocpd DDL: $PA_ROCPD_DDL, else ../shared/reference/rocpd-ddl."""
    env = os.environ.get(DDL_ENV)
    return Path(env) if env else _DEFAULT_DDL


def ddl_available() -> bool:
    """True when every DDL script the writer executes is present."""
    base = ddl_dir()
    return all((base / s).is_file() for scripts in (*_DDL_SCRIPTS.values(), *_INDEX_SCRIPTS.values())
               for s in scripts)


def _require_ddl() -> Path:
    if not ddl_available():
        raise RocpdDdlMissing(
            f"the rocpd writers' DDL is not at {ddl_dir()}: pa builds rocpd files (examples, tests) by "
            f"executing it; point {DDL_ENV} at a copy of rocprofiler-sdk-rocpd's SQL (3/, 4/)")
    return ddl_dir()


def render_ddl(text: str, guid: str) -> str:
    """The writers' substitution: {{uuid}} -> '_' + guid with '-' as '_', {{guid}} -> guid."""
    return text.replace("{{uuid}}", uuid_suffix(guid)).replace("{{guid}}", guid)


def uuid_suffix(guid: str) -> str:
    """The table suffix rocpd derives from the GUID: '_' + guid with '-' turned into '_'."""
    return "_" + guid.replace("-", "_")


def major_of(schema_version: str) -> str:
    """'3' for 3 and 3.0.x, '4' for 4.0.0."""
    return schema_version.split(".")[0]


# --------------------------------------------------------------------------------------------------
# Vocabulary of the two writers

# Category names per writer and layout. Keys are pa's own; values what the writer interns.
_CATEGORIES: dict[tuple[str, str], dict[str, str]] = {
    ("rocprofv3", "3"): {
        "hip": "HIP_RUNTIME_API_EXT", "hsa": "HSA_CORE_API", "hsa_ext": "HSA_AMD_EXT_API",
        "marker": "MARKER_CORE_RANGE_API", "rccl": "RCCL_API", "dispatch": "KERNEL_DISPATCH",
        "copy": "MEMORY_COPY", "alloc": "MEMORY_ALLOCATION", "scratch": "SCRATCH_MEMORY"},
    ("rocprof-sys", "3"): {
        "hip": "rocm_hip_api", "hsa": "rocm_hsa_api", "hsa_ext": "rocm_hsa_api", "marker": "rocm_marker_api",
        "rccl": "rocm_rccl_api", "mpi": "mpi", "sampling": "timer_sampling", "pthread": "pthread",
        "dispatch": "rocm_kernel_dispatch", "copy": "rocm_memory_copy", "alloc": "rocm_memory_allocate",
        "scratch": "rocm_scratch_memory"},
    # 4.0.0: rocpd_info_category names; core and AMD-extension HSA calls are two rows named hsa_api.
    ("rocprofv3", "4"): {
        "hip": "hip_api", "hsa": "hsa_api", "hsa_ext": "hsa_api", "marker": "marker_api", "rccl": "rccl_api",
        "dispatch": "kernel_dispatch", "copy": "memory_copy", "alloc": "memory_allocation",
        "scratch": "scratch_memory"},
}
# rocpd_info_category rows of a 4.0.0 file (id order as the writer registers the tracing kinds), and
# the pa key each one serves; the upper-case kind names are interned as strings too.
_V4_CATEGORY_ROWS: tuple[tuple[str, str, str | None], ...] = (
    ("hsa_api", "HSA_CORE_API", "hsa"), ("hsa_api", "HSA_AMD_EXT_API", "hsa_ext"),
    ("hip_api", "HIP_RUNTIME_API_EXT", "hip"), ("hip_api", "HIP_COMPILER_API_EXT", None),
    ("marker_api", "MARKER_CORE_RANGE_API", "marker"), ("kernel_dispatch", "KERNEL_DISPATCH", "dispatch"),
    ("memory_copy", "MEMORY_COPY", "copy"), ("memory_allocation", "MEMORY_ALLOCATION", "alloc"),
    ("scratch_memory", "SCRATCH_MEMORY", "scratch"), ("rccl_api", "RCCL_API", "rccl"),
    ("openmp", "OMPT", None), ("kfd_events", "KFD_EVENT_PAGE_MIGRATE", None), ("none", "NONE", None),
)

HIP_NAMES: dict[str, str] = {
    "launch": "hipLaunchKernel", "graph_launch": "hipGraphLaunch", "memcpy": "hipMemcpy",
    "memcpy_async": "hipMemcpyAsync", "memset": "hipMemsetAsync", "device_sync": "hipDeviceSynchronize",
    "stream_sync": "hipStreamSynchronize", "event_sync": "hipEventSynchronize", "malloc": "hipMalloc",
    "free": "hipFree", "module_load": "hipModuleLoadData", "other": "hipGetLastError",
}
# There is no MEMORY_COPY_PEER_TO_PEER operation in rocprofiler-sdk: a peer copy is DEVICE_TO_DEVICE
# between two GPU agents.
COPY_NAMES: dict[str, str] = {
    "HtoD": "MEMORY_COPY_HOST_TO_DEVICE", "DtoH": "MEMORY_COPY_DEVICE_TO_HOST",
    "DtoD": "MEMORY_COPY_DEVICE_TO_DEVICE", "PtoP": "MEMORY_COPY_DEVICE_TO_DEVICE",
    "HtoH": "MEMORY_COPY_HOST_TO_HOST",
}
_MEMCPY_KIND_ARG = {"HtoD": "hipMemcpyHostToDevice", "DtoH": "hipMemcpyDeviceToHost",
                    "DtoD": "hipMemcpyDeviceToDevice", "PtoP": "hipMemcpyDeviceToDevice",
                    "HtoH": "hipMemcpyHostToHost"}
_SYNC_KINDS = ("device_sync", "stream_sync", "event_sync")
# rocprofv3's operation names for rocTX records of MARKER_CORE_RANGE_API.
ROCTX_THREAD_RANGE = "roctxThreadRangeA"    # roctxRangePushA .. roctxRangePop
ROCTX_PROCESS_RANGE = "roctxProcessRangeA"  # roctxRangeStartA .. roctxRangeStop
ROCTX_MARK = "roctxMarkA"
FILL_KERNEL = "__amd_rocclr_fillBufferAligned"

# (position, type, name, value) of one call parameter.
Arg = tuple[int, str, str, str]


@dataclass(frozen=True)
class Allocation:
    """One memory allocation event (hipMalloc's pool allocation, a free, scratch memory).

    `kind`: ALLOC / FREE / REALLOC / RECLAIM; `level`: REAL / VIRTUAL / SCRATCH, as rocpd spells them.
    `correlation_id` is the scenario id of the API call that made it (0: none).
    """

    pid: int
    tid: int
    device: int | None
    start: int
    end: int
    size: int
    kind: str = "ALLOC"
    level: str = "REAL"
    address: int = 0x7F4000000000
    correlation_id: int = 0


@dataclass(eq=False)
class HostRec:
    """One host record (API call, marker, MPI call) before ids are assigned.

    `corr` is the internal correlation id (the event's stack_id), assigned in start order once every
    record is known; `parent` is the enclosing call whose id becomes `parent_stack_id`.
    """

    pid: int
    tid: int
    start: int
    end: int
    name: str
    category: str               # pa key into _CATEGORIES
    args: tuple[Arg, ...] = ()
    message: str | None = None  # rocprofv3 rocTX text, written to the event's extdata
    parent: HostRec | None = None
    scenario_corr: int = 0      # the scenario's correlation id, to link GPU work to this call
    external: int = 0
    same_stack_as: HostRec | None = None  # rocprof-sys marker copy of a HIP call: same stack_id
    corr: int = 0


@dataclass
class DispatchRec:
    """One kernel dispatch with every id resolved except its event."""

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
    stack_id: int                   # internal correlation id of the enqueuing call (0: none)
    external: int = 0


@dataclass
class CopyRec:
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
    stack_id: int
    external: int = 0
    track_agent: int = 0


# --------------------------------------------------------------------------------------------------
# The file being written


@dataclass
class _File:
    """An open rocpd database being written: layout, flavour, interned strings and id counters."""

    conn: sqlite3.Connection
    guid: str
    flavour: str
    layout: str                         # "3" or "4"
    nid: int = 1
    strings: dict[str, int] = field(default_factory=dict)
    categories: dict[str, int] = field(default_factory=dict)   # pa key -> category id (layout 4)
    threads: dict[tuple[int, int], int] = field(default_factory=dict)  # (pid, OS tid) -> row id
    tracks: dict[tuple, int] = field(default_factory=dict)
    next_event: int = 1
    next_arg: int = 1
    next_region: int = 1
    next_copy: int = 1
    next_sample: int = 1
    next_alloc: int = 1
    next_timestamp: int = 1

    def table(self, base: str) -> str:
        """Concrete (GUID-suffixed) name of rocpd table `base`."""
        return f"rocpd_{base}{uuid_suffix(self.guid)}"

    def sid(self, text: str) -> int:
        """Interned string id of `text`, inserted on first use (rows referencing it come after)."""
        found = self.strings.get(text)
        if found is None:
            found = self.strings[text] = len(self.strings) + 1
            self.conn.execute(f"INSERT INTO {self.table('string')} (id, string) VALUES (?, ?)", (found, text))
        return found

    def category(self, key: str) -> int:
        """Category id of pa key `key`: a string id (layout 3) or a rocpd_info_category id (layout 4)."""
        if self.layout == "4":
            return self.categories[key]
        return self.sid(_CATEGORIES[(self.flavour, self.layout)][key])

    def thread(self, pid: int, tid: int) -> int:
        """The value a row's `tid` column holds for OS thread `tid` of `pid`."""
        return self.threads[(pid, tid)]

    def insert(self, base: str, cols: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
        """Insert rows into the concrete table with executemany; `rows` may be a generator."""
        names = ", ".join(f'"{c}"' for c in cols)
        marks = ", ".join("?" * len(cols))
        self.conn.executemany(f"INSERT INTO {self.table(base)} ({names}) VALUES ({marks})", rows)

    def track(self, pid: int | None, tid: int | None, name: str, agent: int | None = None,
              queue: int | None = None, stream: int | None = None) -> int:
        """Track id for an identity, inserted on first use."""
        key = (pid, tid, name, agent, queue, stream)
        found = self.tracks.get(key)
        if found is None:
            found = self.tracks[key] = len(self.tracks) + 1
            if self.layout == "4":
                self.insert("track", ("id", "nid", "ppid", "pid", "tid", "agent_id", "queue_id", "stream_id",
                                      "name_id"),
                            [(found, self.nid, 1 if pid is not None else None, pid, tid, agent, queue, stream,
                              self.sid(name))])
            else:
                self.insert("track", ("id", "nid", "pid", "tid", "name_id"),
                            [(found, self.nid, pid, tid, self.sid(name))])
        return found

    def timestamps(self, values: Sequence[tuple[int, int, int]]) -> int:
        """Insert (value, phase, track) timestamp rows (layout 4); return the first id."""
        first = self.next_timestamp
        self.next_timestamp += len(values)
        self.insert("timestamp", ("id", "value", "phase", "track_id"),
                    [(first + i, v, p, t) for i, (v, p, t) in enumerate(values)])
        return first


def new_guid(flavour: str) -> str:
    """A fresh GUID as the writer forms it: 36-char UUID (rocprofv3), 32 hex digits (rocprof-sys)."""
    return uuid.uuid4().hex if flavour == "rocprof-sys" else str(uuid.uuid4())


def _open(path: Path, guid: str, flavour: str, schema_version: str, enforce_keys: bool = True) -> _File:
    """Create a database and run the writer's DDL in it, then its metadata rows."""
    base = _require_ddl()
    layout = major_of(schema_version)
    for sidecar in (path, path.with_name(path.name + "-journal")):
        if sidecar.exists():
            sidecar.unlink()
    conn = sqlite3.connect(path, isolation_level=None)
    for pragma in ("journal_mode=OFF", "synchronous=OFF", "locking_mode=EXCLUSIVE", "temp_store=MEMORY",
                   "cache_size=-262144"):
        conn.execute(f"PRAGMA {pragma}")
    for script in _DDL_SCRIPTS[(layout, flavour)]:
        conn.executescript(render_ddl((base / script).read_text(encoding="utf-8"), guid))
    conn.execute(f"PRAGMA foreign_keys = {'ON' if enforce_keys else 'OFF'}")
    conn.execute("BEGIN")
    db = _File(conn=conn, guid=guid, flavour=flavour, layout=layout)
    meta = db.table("metadata")
    if layout == "3":
        # the tables DDL inserted schema_version '3', uuid and guid itself
        conn.execute(f"UPDATE {meta} SET value = ? WHERE tag = 'schema_version'", (schema_version,))
        if flavour == "rocprof-sys":
            conn.execute(f"INSERT INTO {meta} (tag, value) VALUES ('upid', ?)", (guid,))
    else:
        rows = [("schema_version", schema_version), ("uuid", uuid_suffix(guid)), ("guid", guid)]
        # a real 4.0.0 file holds these unsubstituted: they must never be parsed
        rows += [(f"schema_version_{p}", f"{{{{schema_version_{p}}}}}") for p in ("major", "minor", "patch")]
        conn.executemany(f"INSERT INTO {meta} (tag, value) VALUES (?, ?)", rows)
    db.sid("")  # the writer interns the empty string first (kernels' region_name when none)
    if layout == "4":
        cats = []
        for i, (name, kind, key) in enumerate(_V4_CATEGORY_ROWS, start=1):
            cats.append((i, name))
            db.sid(kind)
            if key is not None:
                db.categories[key] = i
        db.insert("info_category", ("id", "name"), cats)
    return db


def _close(db: _File) -> None:
    """Commit the rows, then create the writer's indexes (last, as the writers do)."""
    db.conn.execute("COMMIT")
    for script in _INDEX_SCRIPTS[db.layout]:
        db.conn.executescript(render_ddl((_require_ddl() / script).read_text(encoding="utf-8"), db.guid))
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


# --------------------------------------------------------------------------------------------------
# Node, processes, threads, agents


@dataclass(frozen=True)
class Agents:
    """Agent ids of one file: the host CPU agent and the GPU agent of every device number (type_index)."""

    cpu: int
    gpu_by_device: dict[int, int]


_CPU_NAME = "AMD EPYC 7A53 64-Core Processor"
_N_CPU_AGENTS = 2  # two CPU agents (NUMA nodes) come first in HSA node order


def _gpu_extdata(dev: Device, flavour: str, layout: str) -> str:
    """Agent extdata JSON: the full agent record for rocprofv3, '{}' for rocprof-sys."""
    if flavour != "rocprofv3":
        return "{}"
    major, minor, step = _gfx_version(dev.gfx_target)
    info = {
        "cu_count": dev.sm_count, "simd_per_cu": dev.simd_per_cu, "wave_front_size": dev.threads_per_warp,
        "max_waves_per_cu": dev.max_warps_per_sm,
        "max_engine_clk_fcompute": dev.clock_hz // 1_000_000,  # MHz, as rocprofiler-sdk reports it
        "gfx_target_version": major * 10000 + minor * 100 + step,
        "lds_size_in_kb": dev.max_shared_per_sm // 1024, "workgroup_max_size": dev.max_threads_per_block,
    }
    if layout == "4":
        info.update({"simd_count": dev.sm_count * dev.simd_per_cu, "num_xcc": 1})
    return json.dumps(info)


def _gfx_version(target: str) -> tuple[int, int, int]:
    """'gfx90a' -> (9, 0, 10), 'gfx942' -> (9, 4, 2): the HSA gfx_target_version digits."""
    digits = target.removeprefix("gfx")
    if len(digits) < 3:
        return (0, 0, 0)
    return int(digits[:-2]), int(digits[-2], 16), int(digits[-1], 16)


def _product(dev: Device) -> str:
    """Product name for an AMD agent; an NVIDIA default name becomes a plausible Instinct name."""
    return dev.name if "AMD" in dev.name or "Instinct" in dev.name else "AMD Instinct MI250X"


def write_agents(db: _File, devices: Sequence[Device], extra_gpus: int, pid: int) -> Agents:
    """Insert the node's CPU agents and every GPU (scenario devices plus `extra_gpus` unused ones).

    Device numbers are GPU `type_index` values (the HIP device number); extra GPUs take the lowest
    free numbers. Agent ids: HSA node numbers for rocprofv3 (CPUs 0..), 1..N for rocprof-sys.
    """
    numbers = {d.id: d for d in devices}
    extra: list[int] = []
    candidate = 0
    while len(extra) < extra_gpus:
        if candidate not in numbers:
            extra.append(candidate)
        candidate += 1
    template = devices[0] if devices else Device(id=0, name="AMD Instinct MI250X")
    gpus = sorted([(n, numbers[n]) for n in numbers] + [(n, template) for n in extra], key=lambda g: g[0])
    rows: list[tuple] = []
    by_device: dict[int, int] = {}
    node = 0
    for c in range(_N_CPU_AGENTS):
        rows.append((node, "CPU", node, node, c, _CPU_NAME, "", "AuthenticAMD", _CPU_NAME, "{}"))
        node += 1
    for number, dev in gpus:
        by_device[number] = len(rows)
        rows.append((node, "GPU", node, node, number, dev.gfx_target,
                     "aldebaran" if dev.gfx_target == "gfx90a" else "", "AMD", _product(dev),
                     _gpu_extdata(dev, db.flavour, db.layout)))
        node += 1
    sys_ids = db.flavour == "rocprof-sys"
    ids = [i + 1 if sys_ids else r[0] for i, r in enumerate(rows)]
    if db.layout == "4":
        cols = ("id", "nid", "pid", "type", "absolute_index", "logical_index", "type_index", "uuid", "name",
                "generic_name", "model_name", "vendor_name", "product_name", "extdata")
        db.insert("info_agent", cols, [
            (ids[i], db.nid, pid, r[1], r[2], r[3], r[4], 0xA000 + i,
             r[8] if r[1] == "GPU" else r[5], r[5] if r[1] == "GPU" else "", r[6], r[7], r[8], r[9])
            for i, r in enumerate(rows)])
    else:
        cols = ("id", "nid", "pid", "type", "absolute_index", "logical_index", "type_index", "uuid", "name",
                "model_name", "vendor_name", "product_name", "user_name", "extdata")
        db.insert("info_agent", cols, [
            (ids[i], db.nid, pid, r[1], r[2], r[3], r[4], 0xA000 + i, r[5], r[6], r[7], r[8],
             r[8] if db.flavour == "rocprofv3" else "", r[9]) for i, r in enumerate(rows)])
    return Agents(cpu=ids[0], gpu_by_device={n: ids[i] for n, i in by_device.items() if n in numbers})


def write_node_and_processes(db: _File, sc: Scenario, pids: set[int]) -> dict[int, int]:
    """Insert node, processes and threads; return each pid's main thread (OS tid, for GPU activity)."""
    node_cols = ("id", "hash", "machine_id", "system_name", "hostname", "release", "version", "hardware_name",
                 "domain_name")
    db.insert("info_node", node_cols, [(db.nid, zlib.crc32(sc.host_name.encode()), "0" * 32, "Linux",
                                        sc.host_name, "5.14.21", "#1 SMP", "x86_64", "")])
    start, end = sc.span()
    zero = db.flavour == "rocprof-sys"  # rocprof-sys writes 0 for every process time
    main_tid: dict[int, int] = {}
    thread_rows: list[tuple[int, int, str]] = []
    for proc in sc.processes:
        if proc.pid not in pids:
            continue
        t0, t1 = (0, 0) if zero else (start, end)
        db.insert("info_process", ("id", "nid", "ppid", "pid", "init", "fini", "start", "end", "command"),
                  [(proc.pid, db.nid, 1, proc.pid, t0, t1, t0, t1, proc.name)])
        tids = dict(proc.threads)
        for group in (sc.api_calls, sc.markers, sc.mpi_calls):
            for ev in group:
                if ev.pid == proc.pid:
                    tids.setdefault(ev.tid, "")
        tids = tids or {proc.pid: proc.name}
        main_tid[proc.pid] = proc.pid if proc.pid in tids else min(tids)
        thread_rows += [(proc.pid, tid, name) for tid, name in sorted(tids.items())]
    add_threads(db, thread_rows, start, end)
    return main_tid


def add_threads(db: _File, rows: Sequence[tuple[int, int, str]], start: int, end: int) -> None:
    """Insert (pid, OS tid, name) threads: rocprofv3 keys them by the OS tid, rocprof-sys by 1..N."""
    out = []
    for pid, tid, name in rows:
        key = len(db.threads) + 1 if db.flavour == "rocprof-sys" else tid
        db.threads[(pid, tid)] = key
        out.append((key, db.nid, 1, pid, tid, name or None, start, end))
    db.insert("info_thread", ("id", "nid", "ppid", "pid", "tid", "name", "start", "end"), out)


# --------------------------------------------------------------------------------------------------
# Scenario events -> host records


def _api_name(call: ApiCall) -> tuple[str, str]:
    """(name, category key) of a call; CUDA-specific overrides fall back to the HIP default."""
    if call.name and call.name.startswith(("nccl", "rccl")):
        return call.name, "rccl"
    if call.name and call.name.startswith(("hip", "hsa")):
        return call.name, "hsa" if call.name.startswith("hsa") else "hip"
    return HIP_NAMES[call.kind], "hip"


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


def _nested_hsa(call: ApiCall, outer: HostRec) -> HostRec | None:
    """The HSA call a HIP call makes inside itself (a wait for syncs, a pool allocation for malloc)."""
    if call.end - call.start < 4:
        return None
    inner = (call.start + (call.end - call.start) // 4, call.end - (call.end - call.start) // 4)
    if call.kind in _SYNC_KINDS:
        return HostRec(call.pid, call.tid, *inner, "hsa_signal_wait_scacquire", "hsa", parent=outer)
    if call.kind == "malloc":
        return HostRec(call.pid, call.tid, *inner, "hsa_amd_memory_pool_allocate", "hsa_ext", parent=outer)
    return None


def scenario_host_records(sc: Scenario, flavour: str, pids: set[int], main_tid: dict[int, int],
                          external_correlation: int = 0) -> list[HostRec]:
    """Every host record the chosen writer would make for the scenario's processes, ids assigned."""
    kernels = {k.correlation_id: k for k in sc.kernels if k.correlation_id}
    copies = {c.correlation_id: c for c in sc.copies if c.correlation_id}
    out: list[HostRec] = []
    for call in sc.api_calls:
        if call.pid not in pids:
            continue
        name, cat = _api_name(call)
        rec = HostRec(call.pid, call.tid, call.start, call.end, name, cat,
                      _call_args(call, kernels.get(call.correlation_id), copies.get(call.correlation_id)),
                      scenario_corr=call.correlation_id, external=external_correlation)
        out.append(rec)
        nested = _nested_hsa(call, rec)
        if nested:
            out.append(nested)
        if flavour == "rocprof-sys" and cat == "hip":  # one marker region duplicating every HIP call
            out.append(HostRec(call.pid, call.tid, call.start, call.end, name, "marker", same_stack_as=rec))
    for m in sc.markers:
        if m.pid not in pids:
            continue
        if flavour == "rocprofv3":
            op = ROCTX_MARK if m.start == m.end else (
                ROCTX_PROCESS_RANGE if m.kind == "start_end" else ROCTX_THREAD_RANGE)
            out.append(HostRec(m.pid, m.tid, m.start, m.end, op, "marker", message=m.text))
        else:
            out.append(HostRec(m.pid, m.tid, m.start, m.end, m.text, "marker"))
    if flavour == "rocprof-sys":
        out += [HostRec(m.pid, m.tid, m.start, m.end, m.name, "mpi",
                        ((0, "size_t", "bytes", str(m.bytes)),) if m.bytes else ())
                for m in sc.mpi_calls if m.pid in pids]
        out += _sys_noise(sc, main_tid)
    # Internal correlation ids are handed out as calls begin (an enclosing call before its inner one).
    out.sort(key=lambda r: (r.start, r.parent is not None, -r.end))
    for i, rec in enumerate(out, start=1):
        rec.corr = i
    return out


def _sys_noise(sc: Scenario, main_tid: dict[int, int]) -> list[HostRec]:
    """rocprof-sys background regions (sampling, pthread) that pa must not mistake for API calls."""
    start, end = sc.span()
    step = max((end - start) // 4, 1)
    out = []
    for proc in sc.processes:
        if proc.pid not in main_tid:
            continue
        tid = main_tid[proc.pid]
        out.append(HostRec(proc.pid, tid, start, start + 1, "pthread_create", "pthread"))
        out += [HostRec(proc.pid, tid, start + i * step, start + i * step + 1, "main", "sampling")
                for i in range(1, 4)]
    return out


def _message(rec: HostRec) -> str:
    return json.dumps({"message": rec.message}) if rec.message is not None else "{}"


def _stack(rec: HostRec) -> int:
    return rec.same_stack_as.corr if rec.same_stack_as is not None else rec.corr


def write_host_records(db: _File, recs: Iterable[HostRec]) -> None:
    """Insert events, args, and regions or samples (zero duration, rocprofv3), a chunk at a time."""
    instants_as_samples = db.flavour == "rocprofv3"
    for chunk in _chunks(recs):
        events: list[tuple] = []
        args: list[tuple] = []
        regions: list = []
        samples: list = []
        times: list[tuple[int, int, int]] = []
        for rec in chunk:
            eid = db.next_event
            db.next_event += 1
            parent = rec.parent.corr if rec.parent is not None else 0
            if db.layout == "4":
                events.append((eid, db.category(rec.category), _stack(rec), parent, 1 if parent else 0, 0,
                               _message(rec)))
            else:
                events.append((eid, db.category(rec.category), _stack(rec), parent, rec.external, _message(rec)))
            for pos, typ, name, value in rec.args:
                args.append((db.next_arg, eid, pos, typ, name, value))
                db.next_arg += 1
            tid = db.thread(rec.pid, rec.tid)
            name_id = db.sid(rec.name)
            sample = instants_as_samples and rec.start == rec.end
            if db.layout == "4":
                track = db.track(rec.pid, tid, _CATEGORIES[(db.flavour, "4")][rec.category])
                if sample:
                    times.append((rec.start, 0, track))
                    samples.append([db.next_sample, track, name_id, None, eid])
                else:
                    times += [(rec.start, 1, track), (rec.end, 2, track)]
                    regions.append([rec.corr, track, name_id, None, None, eid])
            elif sample:
                track = db.track(rec.pid, tid, _CATEGORIES[(db.flavour, "3")][rec.category])
                samples.append((rec.corr, track, rec.start, eid))
            else:
                rid = rec.corr if db.flavour == "rocprofv3" else db.next_region
                db.next_region += 1
                regions.append((rid, db.nid, rec.pid, tid, rec.start, rec.end, name_id, eid))
            if sample:
                db.next_sample += 1
        if db.layout == "4":
            _assign_v4_times(regions, samples, chunk, db.timestamps(times), instants_as_samples)
            db.insert("event", ("id", "category_id", "stack_id", "parent_stack_id", "stack_depth",
                                "correlation_id", "extdata"), events)
            db.insert("arg", ("id", "event_id", "position", "type", "name", "value"), args)
            db.insert("region", ("id", "track_id", "name_id", "start_id", "end_id", "event_id"), regions)
            db.insert("sample", ("id", "track_id", "name_id", "timestamp_id", "event_id"), samples)
        else:
            db.insert("event", ("id", "category_id", "stack_id", "parent_stack_id", "correlation_id", "extdata"),
                      events)
            db.insert("arg", ("id", "event_id", "position", "type", "name", "value"), args)
            db.insert("region", ("id", "nid", "pid", "tid", "start", "end", "name_id", "event_id"), regions)
            db.insert("sample", ("id", "track_id", "timestamp", "event_id"), samples)


def _assign_v4_times(regions: list[list], samples: list[list], chunk: Sequence[HostRec], first_ts: int,
                     instants_as_samples: bool) -> None:
    """Fill the start/end (regions) and timestamp (samples) ids, in the order the timestamps went in."""
    ts = first_ts
    ri = si = 0
    for rec in chunk:
        if instants_as_samples and rec.start == rec.end:
            samples[si][3] = ts
            ts += 1
            si += 1
        else:
            regions[ri][3], regions[ri][4] = ts, ts + 1
            ts += 2
            ri += 1


# --------------------------------------------------------------------------------------------------
# GPU side


@dataclass
class _GpuIds:
    """Code objects, kernel symbols, queues and streams handed out while converting kernels and copies.

    Each carries the pid of the process that loaded or created it, as the `kernels` view finds a
    dispatch's process through its queue (`rocpd_info_process.id = rocpd_info_queue.pid`). A file of
    one process (what the writers write) is unchanged by that; a file holding several processes
    gets one code object per (process, agent) and its own queues per process. Stream ids are rows of
    one table keyed by the scenario's stream number: a stream number two processes use is one row,
    owned by the first (give each process its own numbers to keep them apart; the default stream 0
    belongs to the first process).
    """

    db: _File
    agents: Agents
    code_objects: dict[tuple[int, int], int] = field(default_factory=dict)   # (pid, agent) -> code object
    symbols: dict[tuple, int] = field(default_factory=dict)                  # (pid, agent, name, ...) -> id
    queues: dict[tuple[int, int, int], int] = field(default_factory=dict)    # (pid, agent, stream) -> id
    streams: dict[int, int] = field(default_factory=dict)                    # stream -> pid

    def symbol(self, k: Kernel, agent: int) -> int:
        """Symbol id: one per kernel per agent's code object, as the loader registers them."""
        key = (k.pid, agent, k.name, k.registers_per_thread, k.static_shared_bytes, k.local_bytes_per_thread)
        if key not in self.symbols:
            self.code_objects.setdefault((k.pid, agent), len(self.code_objects) + 1)
            self.symbols[key] = len(self.symbols) + 1
        return self.symbols[key]

    def stream(self, stream: int, pid: int) -> int:
        """Register HIP stream `stream` of process `pid`; the row belongs to the first process using it."""
        self.streams.setdefault(stream, pid)
        return stream

    def queue(self, agent: int, stream: int, pid: int) -> int:
        """HSA queue id for a (process, agent, HIP stream); 0 is the default queue."""
        self.stream(stream, pid)
        return self.queues.setdefault((pid, agent, stream), len(self.queues) + 1)

    def flush(self, pid: int) -> None:
        """Insert code objects, kernel symbols, queues and streams (with the default ones, id 0, of `pid`)."""
        db = self.db
        db.insert("info_code_object", ("id", "nid", "pid", "agent_id", "uri", "load_base", "load_size",
                                       "load_delta", "storage_type"),
                  [(co, db.nid, owner, agent, f"file:///app/a.out#offset=8192&size=65536&agent={agent}",
                    0x7F1000000000 + co * 0x100000, 65536, 0, "FILE")
                   for (owner, agent), co in self.code_objects.items()])
        db.insert("info_kernel_symbol", ("id", "nid", "pid", "code_object_id", "kernel_name", "display_name",
                                         "kernel_object", "kernarg_segment_size", "kernarg_segment_alignment",
                                         "group_segment_size", "private_segment_size", "sgpr_count",
                                         "arch_vgpr_count", "accum_vgpr_count"),
                  [(sid, db.nid, key[0], self.code_objects[key[0], key[1]], _mangle(key[2]), key[2],
                    0x7F2000000000 + sid * 64, 64, 8, key[4], key[5], sgpr_count(key[3]), key[3], 0)
                   for key, sid in self.symbols.items()])
        db.insert("info_queue", ("id", "nid", "pid", "name"),
                  [(0, db.nid, pid, "Default Queue")]
                  + [(q, db.nid, key[0], f"Queue {q}") for key, q in self.queues.items()])
        db.insert("info_stream", ("id", "nid", "pid", "name"),
                  [(0, db.nid, pid, "Default Stream")]
                  + [(s, db.nid, self.streams[s], f"Stream {s}") for s in sorted(self.streams) if s != 0])


def sgpr_count(vgprs: int) -> int:
    """Scalar registers written for a kernel (the scenario has none): a deterministic plausible value."""
    return 16 + 8 * (vgprs % 8)


def _mangle(name: str) -> str:
    """Mangled-looking symbol name with the `.kd` descriptor suffix, as the code object lists it."""
    base = name.split("(")[0].split("<")[0].strip().split(" ")[-1] or "kernel"
    return f"_Z{len(base)}{base}v.kd"


def scenario_dispatches(sc: Scenario, ids: _GpuIds, pids: set[int], main_tid: dict[int, int],
                        calls: dict[int, HostRec]) -> list[DispatchRec]:
    """Kernel dispatch records in HIP conventions (work-item grids, combined LDS)."""
    out = []
    for k in sc.kernels:
        if k.pid not in pids:
            continue
        agent = ids.agents.gpu_by_device[k.device]
        call = calls.get(k.correlation_id) if k.correlation_id else None
        out.append(DispatchRec(
            pid=k.pid, tid=call.tid if call else main_tid.get(k.pid, k.pid), agent_id=agent,
            kernel_id=ids.symbol(k, agent), queue_id=ids.queue(agent, k.stream, k.pid), stream_id=k.stream,
            start=k.start, end=k.end, private_segment_size=k.local_bytes_per_thread,
            group_segment_size=k.static_shared_bytes + k.dynamic_shared_bytes, workgroup=k.block,
            grid=(k.grid[0] * k.block[0], k.grid[1] * k.block[1], k.grid[2] * k.block[2]),
            stack_id=call.corr if call else 0, external=call.external if call else 0))
    for m in sc.memsets:
        if m.pid not in pids:
            continue
        agent = ids.agents.gpu_by_device[m.device]
        call = calls.get(m.correlation_id) if m.correlation_id else None
        fill = Kernel(pid=m.pid, device=m.device, stream=m.stream, start=m.start, end=m.end,
                      name=FILL_KERNEL, registers_per_thread=16)
        work_items = max(256, -(-m.bytes // 16) // 256 * 256)
        out.append(DispatchRec(
            pid=m.pid, tid=call.tid if call else main_tid.get(m.pid, m.pid), agent_id=agent,
            kernel_id=ids.symbol(fill, agent), queue_id=ids.queue(agent, m.stream, m.pid), stream_id=m.stream,
            start=m.start, end=m.end, private_segment_size=0, group_segment_size=0, workgroup=(256, 1, 1),
            grid=(work_items, 1, 1), stack_id=call.corr if call else 0))
    return out


def scenario_copies(sc: Scenario, ids: _GpuIds, pids: set[int], main_tid: dict[int, int],
                    calls: dict[int, HostRec]) -> list[CopyRec]:
    """Memory copy records; the host side of a copy is the first CPU agent."""
    gpu, cpu = ids.agents.gpu_by_device, ids.agents.cpu
    out = []
    for c in sc.copies:
        if c.pid not in pids:
            continue
        here = gpu[c.device]
        other = gpu[c.dst_device] if c.dst_device is not None else here
        src, dst = {"HtoD": (cpu, here), "DtoH": (here, cpu), "DtoD": (here, here), "PtoP": (here, other),
                    "HtoH": (cpu, cpu)}[c.direction]
        ids.stream(c.stream, c.pid)
        call = calls.get(c.correlation_id) if c.correlation_id else None
        out.append(CopyRec(c.pid, call.tid if call else main_tid.get(c.pid, c.pid), c.start, c.end,
                           COPY_NAMES[c.direction], dst, src, c.bytes, c.stream, call.corr if call else 0,
                           call.external if call else 0, here))
    return out


def write_dispatches(db: _File, dispatches: Iterable[DispatchRec]) -> None:
    """Insert kernel dispatches and their events, a chunk at a time (dispatch ids count from 1)."""
    region_none = db.sid("")
    next_dispatch = 1
    for chunk in _chunks(dispatches):
        events: list[tuple] = []
        rows: list[Sequence[object]] = []
        times: list[tuple[int, int, int]] = []
        cat = db.category("dispatch")
        for r in chunk:
            eid = db.next_event
            db.next_event += 1
            if db.layout == "4":
                events.append((eid, cat, r.stack_id, r.stack_id, 0, 0, "{}"))
                track = db.track(r.pid, None, f"GPU queue {r.queue_id}", agent=r.agent_id, queue=r.queue_id)
                times += [(r.start, 1, track), (r.end, 2, track)]
                rows.append((next_dispatch, track, r.kernel_id, next_dispatch, None, None,
                             r.private_segment_size, r.group_segment_size, *r.workgroup, *r.grid, region_none, eid))
            else:
                events.append((eid, cat, r.stack_id, r.stack_id, r.external, "{}"))
                rows.append((next_dispatch, db.nid, r.pid, db.thread(r.pid, r.tid), r.agent_id, r.kernel_id,
                             next_dispatch, r.queue_id, r.stream_id, r.start, r.end, r.private_segment_size,
                             r.group_segment_size, *r.workgroup, *r.grid, region_none, eid))
            next_dispatch += 1
        if db.layout == "4":
            first = db.timestamps(times)
            rows = [(*row[:4], first + 2 * i, first + 2 * i + 1, *row[6:]) for i, row in enumerate(rows)]
            db.insert("event", ("id", "category_id", "stack_id", "parent_stack_id", "stack_depth",
                                "correlation_id", "extdata"), events)
            db.insert("kernel_dispatch", ("id", "track_id", "kernel_id", "dispatch_id", "start_id", "end_id",
                                          "private_segment_size", "group_segment_size", "workgroup_size_x",
                                          "workgroup_size_y", "workgroup_size_z", "grid_size_x", "grid_size_y",
                                          "grid_size_z", "region_name_id", "event_id"), rows)
        else:
            db.insert("event", ("id", "category_id", "stack_id", "parent_stack_id", "correlation_id", "extdata"),
                      events)
            db.insert("kernel_dispatch", _DISPATCH_COLS, rows)


_DISPATCH_COLS = ("id", "nid", "pid", "tid", "agent_id", "kernel_id", "dispatch_id", "queue_id",
                  "stream_id", "start", "end", "private_segment_size", "group_segment_size",
                  "workgroup_size_x", "workgroup_size_y", "workgroup_size_z", "grid_size_x",
                  "grid_size_y", "grid_size_z", "region_name_id", "event_id")
_COPY_COLS = ("id", "nid", "pid", "tid", "start", "end", "name_id", "dst_agent_id", "dst_address",
              "src_agent_id", "src_address", "size", "queue_id", "stream_id", "region_name_id", "event_id")


def write_copies(db: _File, copies: Iterable[CopyRec]) -> None:
    """Insert memory copies and their events, a chunk at a time."""
    # Copies run on SDMA engines, not on an HSA queue: rocprofv3 leaves queue_id NULL, rocprof-sys 0.
    queue = 0 if db.flavour == "rocprof-sys" else None
    for chunk in _chunks(copies):
        events: list[tuple] = []
        rows: list = []
        times: list[tuple[int, int, int]] = []
        cat = db.category("copy")
        for r in chunk:
            eid = db.next_event
            db.next_event += 1
            cid = db.next_copy
            db.next_copy += 1
            addr = (0x7F0000000000 + 4096 * cid, 0x7E0000000000 + 4096 * cid)
            if db.layout == "4":
                events.append((eid, cat, r.stack_id, r.stack_id, 0, 0, "{}"))
                track = db.track(r.pid, None, f"copy stream {r.stream_id}", agent=r.track_agent, stream=r.stream_id)
                times += [(r.start, 1, track), (r.end, 2, track)]
                rows.append([cid, track, None, None, db.sid(r.name), r.dst_agent_id, addr[0], r.src_agent_id,
                             addr[1], r.size, None, eid])
            else:
                events.append((eid, cat, r.stack_id, r.stack_id, r.external, "{}"))
                rows.append((cid, db.nid, r.pid, db.thread(r.pid, r.tid), r.start, r.end, db.sid(r.name),
                             r.dst_agent_id, addr[0], r.src_agent_id, addr[1], r.size, queue, r.stream_id, None,
                             eid))
        if db.layout == "4":
            first = db.timestamps(times)
            for i, row in enumerate(rows):
                row[2], row[3] = first + 2 * i, first + 2 * i + 1
            db.insert("event", ("id", "category_id", "stack_id", "parent_stack_id", "stack_depth",
                                "correlation_id", "extdata"), events)
            db.insert("memory_copy", ("id", "track_id", "start_id", "end_id", "name_id", "dst_agent_id",
                                      "dst_address", "src_agent_id", "src_address", "size", "region_name_id",
                                      "event_id"), rows)
        else:
            db.insert("event", ("id", "category_id", "stack_id", "parent_stack_id", "correlation_id", "extdata"),
                      events)
            db.insert("memory_copy", _COPY_COLS, rows)


def write_allocations(db: _File, allocations: Sequence[Allocation], agents: Agents,
                      calls: dict[int, HostRec]) -> None:
    """Insert memory allocation records (rocpd_memory_allocate) and their events."""
    events: list[tuple] = []
    rows: list = []
    times: list[tuple[int, int, int]] = []
    running = 0
    for a in allocations:
        eid = db.next_event
        db.next_event += 1
        call = calls.get(a.correlation_id) if a.correlation_id else None
        stack = call.corr if call else 0
        cat = db.category("scratch" if a.level == "SCRATCH" else "alloc")
        agent = agents.gpu_by_device[a.device] if a.device is not None else None
        # rocprofv3 records the agent of an ALLOC only; scratch memory belongs to a queue
        agent = agent if a.kind == "ALLOC" or a.level == "SCRATCH" else None
        queue = 0 if a.level == "SCRATCH" else None
        aid = db.next_alloc
        db.next_alloc += 1
        if db.layout == "4":
            running += a.size if a.kind == "ALLOC" else -a.size if a.kind == "FREE" else 0
            events.append((eid, cat, stack, stack, 0, 0, "{}"))
            track = db.track(a.pid, db.thread(a.pid, a.tid), "memory", agent=agent)
            times += [(a.start, 1, track), (a.end, 2, track)]
            rows.append([aid, track, a.kind, a.level, None, None, db.sid(f"MEMORY_ALLOCATION_{a.kind}"), a.address,
                         a.size, running, eid])
        else:
            events.append((eid, cat, stack, stack, 0, "{}"))
            rows.append((aid, db.nid, a.pid, db.thread(a.pid, a.tid), agent, a.kind, a.level, a.start, a.end,
                         a.address, a.size, queue, None, eid))
    if db.layout == "4":
        first = db.timestamps(times)
        for i, row in enumerate(rows):
            row[4], row[5] = first + 2 * i, first + 2 * i + 1
        db.insert("event", ("id", "category_id", "stack_id", "parent_stack_id", "stack_depth", "correlation_id",
                            "extdata"), events)
        db.insert("memory_allocate", ("id", "track_id", "type", "level", "start_id", "end_id", "name_id",
                                      "address", "size", "running_total_bytes", "event_id"), rows)
    else:
        db.insert("event", ("id", "category_id", "stack_id", "parent_stack_id", "correlation_id", "extdata"),
                  events)
        db.insert("memory_allocate", ("id", "nid", "pid", "tid", "agent_id", "type", "level", "start", "end",
                                      "address", "size", "queue_id", "stream_id", "event_id"), rows)


def write_rocpd(scenario: Scenario, path: Path, flavour: str = "rocprofv3", guid: str | None = None,
                degraded: bool = False, extra_gpus: int = 0, pid: int | None = None,
                schema_version: str = "3", allocations: Sequence[Allocation] = (),
                external_correlation: int = 0) -> Path:
    """Write `scenario` as one rocpd database and return `path`.

    `pid` restricts the file to one process, as the writers write one database per process; None
    writes every process into this one file. Each call draws a fresh GUID unless `guid` is given,
    so two ranks of one job never share one. `degraded` leaves the dispatch and copy tables empty
    (a job killed while the writer flushed). `external_correlation` sets the external correlation id
    of every API call and its GPU work (as an application's own ids or a kernel-rename range would).
    """
    if flavour not in FLAVOURS:
        raise ValueError(f"unknown rocpd flavour {flavour!r} (known: {', '.join(FLAVOURS)})")
    if schema_version not in SCHEMA_VERSIONS:
        raise ValueError(f"unknown rocpd schema version {schema_version!r} (known: {', '.join(SCHEMA_VERSIONS)})")
    if major_of(schema_version) == "4" and flavour != "rocprofv3":
        raise ValueError("schema 4.0.0 is written by rocprofv3 only; rocprof-sys writes schema 3")
    if scenario.graph_executions:
        raise ValueError("rocpd has no whole-graph records: a HIP graph's kernels are dispatches (write them as "
                         "kernels correlated to the graph launch call)")
    pids = {p.pid for p in scenario.processes} if pid is None else {pid}
    db = _open(Path(path), guid or new_guid(flavour), flavour, schema_version)
    main_tid = write_node_and_processes(db, scenario, pids)
    agents = write_agents(db, scenario.devices, extra_gpus, min(pids, default=0))
    host = scenario_host_records(scenario, flavour, pids, main_tid, external_correlation)
    calls = {r.scenario_corr: r for r in host if r.scenario_corr}
    ids = _GpuIds(db, agents)
    dispatches = scenario_dispatches(scenario, ids, pids, main_tid, calls)
    copies = scenario_copies(scenario, ids, pids, main_tid, calls)
    ids.flush(min(pids, default=0))
    write_host_records(db, host)
    if not degraded:
        write_dispatches(db, dispatches)
        write_copies(db, copies)
    if allocations:
        write_allocations(db, [a for a in allocations if a.pid in pids], agents, calls)
    _close(db)
    return Path(path)


# --------------------------------------------------------------------------------------------------
# Bulk generator for benchmarks: streams rows without building a Scenario


_BULK_PID = 4242
_BULK_STEP = 1000  # ns between region starts; a region lasts at most 900 ns
_BULK_KERNELS = 8
_BULK_QUEUES = 4


def _bulk_plan(n_regions: int, n_dispatches: int, n_copies: int) -> tuple[int, int, int]:
    """Region slots between GPU operations: (launch every a-th slot, memcpy every b-th, marker every c-th).

    A real rocprofv3 capture makes one launch call per dispatch and one memcpy call per copy, and
    most of its regions are the HSA calls the HIP runtime makes around them (the MILC rank of the
    reference: 24 M regions for 400 k dispatches and 530 k copies). One region in ten is a rocTX range.
    """
    launch_every = max(n_regions // max(n_dispatches, 1), 2)
    copy_every = max(n_regions // max(n_copies, 1), 2)
    return launch_every, copy_every, 10


_BULK_OTHER = (("hsa_queue_load_read_index_scacquire", "hsa"), ("hsa_signal_store_screlease", "hsa"),
               ("hsa_amd_signal_async_handler", "hsa_ext"), ("hipGetLastError", "hip"),
               ("hsa_signal_load_relaxed", "hsa"), ("hsa_queue_add_write_index_screlease", "hsa"),
               ("hsa_amd_memory_async_copy_on_engine", "hsa_ext"), ("hipPeekAtLastError", "hip"))


@dataclass
class _BulkLinks:
    """Internal correlation ids of the bulk launch and memcpy calls, in order, for the GPU records."""

    launches: list[int] = field(default_factory=list)
    copies: list[int] = field(default_factory=list)


def _bulk_host(n: int, seed: int, flavour: str, n_dispatches: int, n_copies: int,
               links: _BulkLinks) -> Iterator[HostRec]:
    launch_every, copy_every, marker_every = _bulk_plan(n, n_dispatches, n_copies)
    for i in range(n):
        start = i * _BULK_STEP
        end = start + 100 + (i * 2654435761 + seed) % 800
        slot = i + seed
        args: tuple[Arg, ...] = ()
        message = None
        if slot % launch_every == 0 and len(links.launches) < n_dispatches:
            name, cat = "hipLaunchKernel", "hip"
            links.launches.append(i + 1)
        elif slot % copy_every == 1 and len(links.copies) < n_copies:
            name, cat = "hipMemcpyAsync", "hip"
            links.copies.append(i + 1)
            args = ((0, "void*", "dst", "0x7f0000001000"), (1, "const void*", "src", "0x7e0000001000"),
                    (2, "size_t", "sizeBytes", str(4096 << (i % 8))),
                    (3, "hipMemcpyKind", "kind", "hipMemcpyHostToDevice"), (4, "hipStream_t", "stream", "0"))
        elif slot % marker_every == 3:
            if flavour == "rocprofv3":
                name, cat, message = ROCTX_THREAD_RANGE, "marker", f"solver step {i % 50}"
            else:
                name, cat = f"solver step {i % 50}", "marker"
        elif slot % 200 == 7:
            name, cat = "hipStreamSynchronize", "hip"
        elif flavour == "rocprof-sys" and slot % 97 == 5:
            name, cat = "MPI_Allreduce", "mpi"
        else:
            name, cat = _BULK_OTHER[slot % len(_BULK_OTHER)]
        yield HostRec(_BULK_PID, _BULK_PID, start, end, name, cat, args, message, corr=i + 1)


def _bulk_dispatches(n: int, seed: int, links: _BulkLinks, gpu: int) -> Iterator[DispatchRec]:
    for j in range(n):
        call = links.launches[j] if j < len(links.launches) else 0
        start = (call - 1) * _BULK_STEP + 950 if call else j * _BULK_STEP
        k = (j * 7 + seed) % _BULK_KERNELS
        block = 64 << (k % 3)
        queue = 1 + j % _BULK_QUEUES
        yield DispatchRec(_BULK_PID, _BULK_PID, gpu, k + 1, queue, queue - 1, start, start + 2000 + 37 * (j % 50),
                          0, 1024 * (k % 4), (block, 1, 1), (block * (1 + k * 37), 1, 1), call)


def _bulk_copies(n: int, seed: int, links: _BulkLinks, cpu: int, gpu: int) -> Iterator[CopyRec]:
    dirs = ("HtoD", "DtoH", "DtoD", "HtoD")
    for j in range(n):
        call = links.copies[j] if j < len(links.copies) else 0
        direction = dirs[(j + seed) % len(dirs)]
        src, dst = {"HtoD": (cpu, gpu), "DtoH": (gpu, cpu), "DtoD": (gpu, gpu)}[direction]
        start = (call - 1) * _BULK_STEP + 960 if call else j * _BULK_STEP
        yield CopyRec(_BULK_PID, _BULK_PID, start, start + 1500, COPY_NAMES[direction], dst, src, 4096 << (j % 10),
                      j % _BULK_QUEUES, call)


def write_rocpd_bulk(path: Path, n_regions: int, n_dispatches: int, n_copies: int, seed: int = 0,
                     flavour: str = "rocprofv3", guid: str | None = None) -> Path:
    """Write a large rocpd file (one process, one GPU) from streamed rows, for the benchmarks.

    Laid out as rocprofv3 (or rocprof-sys) writes it: the writer's DDL, one launch call per
    dispatch and one memcpy call per copy linked through stack_id, rocTX ranges with their text in
    extdata (one region in ten), HSA calls for the rest. Rows are produced by generators and
    inserted a chunk at a time, so memory stays flat whatever the counts. Foreign keys are not
    enforced here (they are for scenario files), for speed.
    """
    if flavour not in FLAVOURS:
        raise ValueError(f"unknown rocpd flavour {flavour!r} (known: {', '.join(FLAVOURS)})")
    from testkit.scenario import Process  # local: only the bulk path needs a placeholder process

    span_end = max(n_regions, 1) * _BULK_STEP
    sc = Scenario(name="bulk", description="bulk rocpd benchmark", devices=[Device(
        id=0, name="AMD Instinct MI250X", sm_count=110, clock_hz=1_700_000_000, threads_per_warp=64,
        max_warps_per_sm=32, max_shared_per_sm=65536, max_shared_per_block=65536, gfx_target="gfx90a")],
        processes=[Process(pid=_BULK_PID, name="bulk_app", threads={_BULK_PID: "bulk_app"})],
        markers=[], api_calls=[ApiCall(_BULK_PID, _BULK_PID, 0, span_end, "other")])
    db = _open(Path(path), guid or new_guid(flavour), flavour, "3", enforce_keys=False)
    write_node_and_processes(db, sc, {_BULK_PID})
    agents = write_agents(db, sc.devices, 0, _BULK_PID)
    gpu = agents.gpu_by_device[0]
    ids = _GpuIds(db, agents)
    for k in range(_BULK_KERNELS):
        ids.symbol(Kernel(_BULK_PID, 0, 0, 0, 0, f"bulk_kernel_{k}(float*, int)", registers_per_thread=32 + k,
                          static_shared_bytes=1024 * (k % 4)), gpu)
    for q in range(_BULK_QUEUES):
        ids.queue(gpu, q, _BULK_PID)
    ids.flush(_BULK_PID)
    links = _BulkLinks()
    write_host_records(db, _bulk_host(n_regions, seed, flavour, n_dispatches, n_copies, links))
    write_dispatches(db, _bulk_dispatches(n_dispatches, seed, links, gpu))
    write_copies(db, _bulk_copies(n_copies, seed, links, agents.cpu, gpu))
    _close(db)
    return Path(path)



__all__ = ["COPY_NAMES", "FLAVOURS", "HIP_NAMES", "SCHEMA_VERSIONS", "Allocation", "RocpdDdlMissing",
           "ddl_available", "ddl_dir", "write_rocpd", "write_rocpd_bulk"]
