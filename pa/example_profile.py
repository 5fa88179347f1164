"""The profile `pa example` writes: a small Nsight Systems SQLite export with planted behaviour.

Why it exists: a new user (and the CI's wheel check) needs a profile to try `pa summary` and
`pa analyze` on without a GPU. The test world (both vendors' writers, every schema version, dozens
of planted scenarios) lives in tests/testkit and does not ship; this module writes one layout only
(Nsight Systems 2024.5, export schema 3.13.2), with only the tables and columns pa reads, and one
scenario whose planted causes are stated in `EXAMPLE_PLANTED`.

The scenario: a heat-equation solver on one of two GPUs, in three NVTX phases. `init` uploads
four 48 MiB arrays from pageable host memory; `solve` runs 40 iterations of stencil, reduction
and 20 tiny axpy kernels, each iteration ending in cudaStreamSynchronize; `io` downloads three
arrays to pageable memory and writes a checkpoint on the host for 8 ms after each, with the GPU idle.

`pa example --ranks N DIR` writes the same solver as N MPI ranks (report.<rank>.sqlite, as
`nsys profile -o report.%q{OMPI_COMM_WORLD_RANK}` names them), each with its MPI rank recorded
(MPI_RANKS) and an MPI_Allreduce after every iteration; one straggler rank's stencil kernels take
STRAGGLER_SLOWDOWN x as long, so every other rank waits for it at each collective. Why: the README's
multi-rank commands need a rank set to try them on.
"""

from __future__ import annotations

import random
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

#: Scenario name -> what it plants (listed by `pa example --list`).
EXAMPLE_PLANTED = {
    "example": "pageable host copies (GPU-COPY-001) and a host-bound io phase (GPU-PHASE-001)",
}
STRAGGLER_SLOWDOWN = 1.5
RANK_ITERATIONS = 20
#: What `pa example --ranks N DIR` plants (listed by `pa example --list`).
RANKS_PLANTED = ("one report.<rank>.sqlite per MPI rank; the straggler rank's stencil kernels take "
                 f"{STRAGGLER_SLOWDOWN:g}x as long, so the others wait for it at every MPI_Allreduce (MPI-IMB-002)")

US = 1_000
MS = 1_000_000
MIB = 1 << 20
T0 = 1_000_000_000
PID = 24_513
VM = 1 << 48  # Nsight Systems' VM id: globalPid = VM | pid << 24, globalTid = globalPid | tid
LAUNCH_LATENCY = 3 * US

# The tables written, with the columns pa reads (names and types as the real 3.13 export has them).
_TABLES = {
    "META_DATA_EXPORT": "name TEXT NOT NULL, value TEXT",
    "StringIds": "id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL",
    "ENUM_CUDA_MEMCPY_OPER": "id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT",
    "ENUM_CUDA_MEM_KIND": "id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT",
    "ENUM_CUPTI_SYNC_TYPE": "id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT",
    "ENUM_NSYS_EVENT_TYPE": "id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT",
    "TARGET_INFO_SYSTEM_ENV": "globalVid INTEGER, devStateName TEXT NOT NULL, name TEXT NOT NULL, "
                              "nameEnum INTEGER NOT NULL, value TEXT NOT NULL",
    "TARGET_INFO_GPU": "vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT, "
                       "l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER, "
                       "smCount INTEGER, cuDevice INTEGER, maxShmemPerBlock INTEGER, maxShmemPerSm INTEGER, "
                       "maxRegistersPerSm INTEGER, threadsPerWarp INTEGER, maxWarpsPerSm INTEGER, "
                       "maxBlocksPerSm INTEGER, maxThreadsPerBlock INTEGER, computeMajor INTEGER, "
                       "computeMinor INTEGER",
    "PROCESSES": "globalPid INTEGER, pid INTEGER, name TEXT",
    "ThreadNames": "nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER",
    "CUPTI_ACTIVITY_KIND_KERNEL": "start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
                                  "contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, "
                                  "globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, "
                                  "registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, "
                                  "gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, "
                                  "blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, "
                                  "staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL, "
                                  "localMemoryPerThread INTEGER NOT NULL",
    "CUPTI_ACTIVITY_KIND_MEMCPY": "start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
                                  "contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, "
                                  "globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, "
                                  "srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER, dstDeviceId INTEGER",
    "CUPTI_ACTIVITY_KIND_MEMSET": "start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
                                  "contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, "
                                  "globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL",
    "CUPTI_ACTIVITY_KIND_RUNTIME": "start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, "
                                   "globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, "
                                   "returnValue INTEGER NOT NULL",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": "start INTEGER NOT NULL, end INTEGER NOT NULL, "
                                           "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, "
                                           "streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, "
                                           "syncType INTEGER NOT NULL, eventId INTEGER NOT NULL",
    "NVTX_EVENTS": "start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, text TEXT, "
                   "globalTid INTEGER, textId INTEGER, domainId INTEGER",
    "PROFILER_OVERHEAD": "start INTEGER NOT NULL, end INTEGER NOT NULL, globalTid INTEGER, "
                         "nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL",
}
# Enum rows (id, name, label) as the real ENUM_* tables have them; only the ones used here.
_ENUMS = {
    "ENUM_CUDA_MEMCPY_OPER": ((1, "CUDA_MEMCPY_KIND_HTOD", "Host-to-Device"),
                              (2, "CUDA_MEMCPY_KIND_DTOH", "Device-to-Host")),
    "ENUM_CUDA_MEM_KIND": ((0, "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE", "Pageable"),
                           (1, "CUDA_MEMOPR_MEMORY_KIND_PINNED", "Pinned"),
                           (2, "CUDA_MEMOPR_MEMORY_KIND_DEVICE", "Device")),
    "ENUM_CUPTI_SYNC_TYPE": ((3, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE", "Stream sync"),),
    "ENUM_NSYS_EVENT_TYPE": ((59, "NvtxPushPopRange", "NvtxPushPopRange"),),
}
_HTOD, _DTOH, _PAGEABLE, _DEVICE, _STREAM_SYNC, _PUSH_POP = 1, 2, 0, 2, 3, 59
_RUNTIME_CLASS = 0  # ENUM_NSYS_EVENT_CLASS "CUDA runtime"
_META = (("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"), ("EXPORT_PRODUCT_VERSION", "2024.5.1.113"),
         ("EXPORT_SCHEMA_VERSION", "3.13.2"), ("EXPORT_SCHEMA_VERSION_MAJOR", "3"),
         ("EXPORT_SCHEMA_VERSION_MINOR", "13"), ("EXPORT_SCHEMA_VERSION_MICRO", "2"),
         ("EXPORT_HOST", "pa-example"))
# Two A100s in the machine (only device 0 is used): id, bus location.
_GPUS = ((0, "0000:07:00.0"), (1, "0000:0b:00.0"))
_STREAM = 7


@dataclass
class _Events:
    """Rows of the profile as they accumulate; text columns hold Python strings until written."""

    kernels: list[tuple[int, int, str, int, int]] = field(default_factory=list)  # start, end, name, corr, grid
    copies: list[tuple[int, int, int, int, int, int, int]] = field(default_factory=list)  # +bytes, kind, src, dst
    api: list[tuple[int, int, str, int]] = field(default_factory=list)           # start, end, name, corr
    syncs: list[tuple[int, int, int]] = field(default_factory=list)              # start, end, corr
    ranges: list[tuple[int, int, str]] = field(default_factory=list)             # start, end, text
    collectives: list[tuple[int, int, str]] = field(default_factory=list)        # start, end, MPI call
    stream_free: int = 0
    corr: int = 0

    def call(self, t: int, dur: int, name: str) -> tuple[int, int]:
        """A runtime API call at `t`; returns (its end, its fresh correlation id)."""
        self.corr += 1
        self.api.append((t, t + dur, name, self.corr))
        return t + dur, self.corr

    def launch(self, t: int, api_dur: int, k_dur: int, name: str, grid: int) -> int:
        """CudaLaunchKernel at `t`; the kernel starts once the stream is free. Returns the API end."""
        end, corr = self.call(t, api_dur, "cudaLaunchKernel_v7000")
        start = max(end + LAUNCH_LATENCY, self.stream_free)
        self.stream_free = start + k_dur
        self.kernels.append((start, start + k_dur, name, corr, grid))
        return end

    def pageable_copy(self, t: int, nbytes: int, bw_bps: float, kind: int) -> int:
        """A synchronous cudaMemcpy of pageable host memory at `t`; returns when the call returns."""
        start = max(t + 4 * US, self.stream_free)
        end = start + int(nbytes / bw_bps * 1e9)
        self.stream_free = end
        src, dst = (_PAGEABLE, _DEVICE) if kind == _HTOD else (_DEVICE, _PAGEABLE)
        _, corr = self.call(t, end + 3 * US - t, "cudaMemcpy_v3020")
        self.copies.append((start, end, corr, nbytes, kind, src, dst))
        return end + 3 * US

    def stream_sync(self, t: int) -> int:
        """CudaStreamSynchronize at `t` until the stream drains; returns its end."""
        end = max(t + 2 * US, self.stream_free + 4 * US)
        _, corr = self.call(t, end - t, "cudaStreamSynchronize_v3020")
        self.syncs.append((t, end, corr))
        return end


def example_events(seed: int = 17) -> _Events:
    """The planted example run (see the module docstring); deterministic for a given seed."""
    rng = random.Random(seed)
    ev = _Events()
    t = ev.call(T0, 18 * MS, "cudaFree_v3020")[0]  # cudaFree(0): context creation
    for _ in range(6):
        t = ev.call(t + 10 * US, rng.randint(300, 600) * US, "cudaMalloc_v3020")[0]
    for _ in range(4):
        t = ev.pageable_copy(t + 10 * US, 48 * MIB, rng.uniform(5.0e9, 6.0e9), _HTOD)
    ev.ranges.append((T0, t, "init"))
    solve = t
    for _ in range(40):
        for name in ("stencil3d_kernel", "stencil3d_kernel", "reduce_sum_kernel"):
            dur = rng.randint(900, 1300) * US if name == "stencil3d_kernel" else 150 * US
            t = ev.launch(t + 2 * US, 6 * US, dur, name, grid=1728)
        for _ in range(20):
            t = ev.launch(t + 2 * US, rng.randint(8, 11) * US, rng.randint(3, 5) * US, "axpy_kernel", grid=64)
        t = ev.stream_sync(t + US) + rng.randint(80, 150) * US
    ev.ranges.append((solve, t, "solve"))
    io = t
    for _ in range(3):
        t = ev.pageable_copy(t + 10 * US, 32 * MIB, rng.uniform(5.0e9, 6.0e9), _DTOH)
        t += 8 * MS  # the host writes the checkpoint: no GPU work, no API call
    ev.ranges.append((io, t, "io"))
    return ev


def rank_events(ranks: int, straggler: int, seed: int = 17) -> list[_Events]:
    """The solver as `ranks` MPI ranks in lockstep (module docs); index = rank. Deterministic for a seed.

    Each iteration every rank launches its kernels, synchronises its stream and enters MPI_Allreduce;
    the collective ends on every rank 40 µs after the last rank enters it, so a rank's wait is the
    last arrival minus its own.
    """
    if ranks < 2 or not 0 <= straggler < ranks:
        raise ValueError(f"a rank set needs at least 2 ranks and a straggler among them (got {ranks}, {straggler})")
    rng = random.Random(seed)
    evs = [_Events() for _ in range(ranks)]
    t = [ev.call(T0, 18 * MS, "cudaFree_v3020")[0] for ev in evs]
    t = [ev.pageable_copy(ti + 10 * US, 16 * MIB, 5.5e9, _HTOD) for ev, ti in zip(evs, t, strict=True)]
    for ev, ti in zip(evs, t, strict=True):
        ev.ranges.append((T0, ti, "init"))
    solve = list(t)
    for _ in range(RANK_ITERATIONS):
        durs = [rng.randint(900, 1100) * US for _ in range(2)]
        arrive = []
        for r, ev in enumerate(evs):
            ti = t[r]
            for d in durs:
                d = int(d * STRAGGLER_SLOWDOWN) if r == straggler else d + r * 2 * US  # no ties among the others
                ti = ev.launch(ti + 2 * US, 6 * US, d, "stencil3d_kernel", grid=1728)
            ti = ev.launch(ti + 2 * US, 6 * US, 150 * US, "reduce_sum_kernel", grid=1728)
            arrive.append(ev.stream_sync(ti + US) + 5 * US)
        done = max(arrive) + 40 * US
        for r, ev in enumerate(evs):
            ev.collectives.append((arrive[r], done, "MPI_Allreduce"))
        t = [done + 20 * US] * ranks
    for r, ev in enumerate(evs):
        ev.ranges.append((solve[r], t[r], "solve"))
    return evs


def write_rank_set(folder: Path, ranks: int = 4, straggler: int | None = None) -> list[Path]:
    """Write `ranks` rank files report.<rank>.sqlite into `folder` (which must exist); returns their paths.

    `straggler`: the slow rank (default ranks // 2).
    """
    slow = ranks // 2 if straggler is None else straggler
    paths = []
    for r, ev in enumerate(rank_events(ranks, slow)):
        path = folder / f"report.{r}.sqlite"
        if path.exists():
            path.unlink()
        _write(path, ev, pid=PID + r, rank=r)
        paths.append(path)
    return paths


def write_example(path: Path, scenario: str = "example") -> None:
    """Write the planted `scenario` (a key of EXAMPLE_PLANTED) as an Nsight Systems export at `path`."""
    if scenario not in EXAMPLE_PLANTED:
        raise ValueError(f"unknown example {scenario!r}; choose from {', '.join(sorted(EXAMPLE_PLANTED))}")
    _write(path, example_events(), pid=PID, rank=None)


# MPI tables as the real 3.13 export has them (only with --ranks).
_MPI_TABLES = {
    "MPI_RANKS": "globalTid INTEGER, rank INTEGER",
    "MPI_COLLECTIVES_EVENTS": "start INTEGER NOT NULL, end INTEGER NOT NULL, globalTid INTEGER, textId INTEGER, "
                              "commHandle INTEGER, rootRank INTEGER, size INTEGER, recvSize INTEGER, "
                              "requestHandle INTEGER",
}
_COMM_WORLD = 0x44000000
_ALLREDUCE_BYTES = 8


def _write(path: Path, ev: _Events, pid: int, rank: int | None) -> None:
    """Write one process's events as an Nsight Systems export (with its MPI rank and calls when `rank` is set)."""
    strings: dict[str, int] = {}

    def sid(text: str) -> int:
        return strings.setdefault(text, len(strings) + 1)

    gpid = VM | pid << 24
    gtid = gpid | pid
    conn = sqlite3.connect(path)
    try:
        tables = {**_TABLES, **(_MPI_TABLES if rank is not None else {})}
        for table, columns in tables.items():
            conn.execute(f"CREATE TABLE {table} ({columns})")
        if rank is not None:
            conn.execute("INSERT INTO MPI_RANKS VALUES (?, ?)", (gtid, rank))
            conn.executemany("INSERT INTO MPI_COLLECTIVES_EVENTS VALUES (?, ?, ?, ?, ?, -1, ?, ?, NULL)",
                             [(s, e, gtid, sid(name), _COMM_WORLD, _ALLREDUCE_BYTES, _ALLREDUCE_BYTES)
                              for s, e, name in ev.collectives])
        for table, rows in _ENUMS.items():
            conn.executemany(f"INSERT INTO {table} VALUES (?, ?, ?)", rows)
        conn.executemany("INSERT INTO META_DATA_EXPORT VALUES (?, ?)", _META)
        conn.execute("INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (?, 'Local (CLI)', 'Hostname', 619, ?)",
                     (VM, "gpu-node-017"))
        conn.executemany(
            "INSERT INTO TARGET_INFO_GPU VALUES (?, ?, 'NVIDIA A100-SXM4-80GB', ?, 41943040, 85899345920, "
            "2039000000000, 1410000000, 108, ?, 49152, 167936, 65536, 32, 64, 32, 1024, 8, 0)",
            [(VM, gpu, bus, gpu) for gpu, bus in _GPUS])
        conn.execute("INSERT INTO PROCESSES VALUES (?, ?, 'heat3d')", (gpid, pid))
        conn.execute("INSERT INTO ThreadNames VALUES (?, 20, ?)", (sid("heat3d"), gtid))
        conn.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES "
            "(?, ?, 0, 1, ?, ?, ?, ?, ?, 32, ?, 1, 1, 256, 1, 1, 0, 0, 0)",
            [(s, e, _STREAM, corr, gpid, sid(name), sid(name), grid)
             for s, e, name, corr, grid in ev.kernels])
        conn.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, 0, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(s, e, _STREAM, corr, gpid, nbytes, kind, src, dst,
              None if kind == _HTOD else 0, 0 if kind == _HTOD else None)
             for s, e, corr, nbytes, kind, src, dst in ev.copies])
        conn.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, ?, ?, 0)",
                         [(s, e, _RUNTIME_CLASS, gtid, corr, sid(name)) for s, e, name, corr in ev.api])
        conn.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (?, ?, 0, 1, ?, ?, ?, ?, 4294967295)",
            [(s, e, _STREAM, corr, gpid, _STREAM_SYNC) for s, e, corr in ev.syncs])
        conn.executemany("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?, ?, NULL, 0)",
                         [(s, e, _PUSH_POP, text, gtid) for s, e, text in ev.ranges])
        if rank is None:
            flush = ev.ranges[1][0] + 30 * MS  # one CUPTI buffer flush during the solve phase
            conn.execute("INSERT INTO PROFILER_OVERHEAD VALUES (?, ?, ?, ?, 0)",
                         (flush, flush + MS, gpid | (pid + 3), sid("CUPTI buffer flush")))
            conn.execute("INSERT INTO ThreadNames VALUES (?, 20, ?)", (sid("cuda-EvtHandlr"), gpid | (pid + 3)))
        conn.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, s) for s, i in strings.items()])
        conn.commit()
    finally:
        conn.close()
