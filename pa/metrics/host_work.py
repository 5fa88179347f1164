"""What the host was doing while the GPU waited: OS runtime calls, CPU samples, device reads.

GPU idle owned by host work (gap cause `cpu_stall`, pa.metrics.gaps) says only that the host was
outside the GPU API. Where the export has more, the gaps are attributed further, so that a finding
can say *which* host code starves the GPU:

- OS runtime calls (nsys --trace=osrt): per call name, the part of the host-work gaps its calls
  (outermost only) cover;
- CPU samples: per function (the leaf of the sampled call chain), the share of the samples taken
  inside those gaps;

both on the threads that issue GPU work (launch, copy or sync calls) in the processes using the
device: helper threads that wait in poll() all run long say nothing about why the next launch came
late;
- device reads: NVTX ranges of framework calls that read a device value and so wait for the GPU
  (`aten::item`, `aten::is_nonzero`, ...: marker_names.DEVICE_READ_RANGES, or a rule pack's
  `marker_names.device_reads`): how long the host is blocked in them, and the GPU idle gaps
  that start while the host is inside one (its round trips: the host waited for the value there,
  and the rest of the gap followed from it) with what running ahead recovers of them.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable

import numpy as np

from pa.metrics import intervals as iv
from pa.metrics.gaps import GAP_CAUSES, GapTable
from pa.metrics.host import NamedRanges
from pa.metrics.marker_names import DEFAULT_NAMING, MarkerNaming
from pa.metrics.model import DeviceRead, DeviceReads, HostWork
from pa.profile.relations import VALID, Relations

HOST_WORK_LISTED = 5
# NVTX/rocTX ranges that mean "the host is compiling": a framework's compiler (PyTorch's
# compile_inner/call_user_compiler and Inductor's async_compile, XLA's "Compile", nvFuser's
# KernelExecutor::compileFusion and FusionKernelRuntime::compileKernel, a user's "compile kernels"
# range) or a runtime compiler called through a range of its own (NVRTC / hipRTC anywhere in the
# name: nvFuser's executor_utils::NVRTC, Nvrtc::CompileProgram, NvrtcCreateProgram; ptxas; loading
# PTX, which the driver compiles: Nvrtc::LoadPTX). A word starts after a non-letter or at a camelCase
# hump and ends before a lower-case letter, so compileFusion and CompileProgram are words, while
# "compiled" ranges (PyTorch's CompiledFunction, "Torch-Compiled Region", CompiledKernel's
# constructor) run code compiled earlier, JAX's jit(...) ranges run a jitted function, and a
# scheduler's canScheduleCompileTime asks about compile-time facts: none of them compiles anything.
_WORD = r"(?:^|(?<=[^A-Za-z])|(?<=[a-z])(?=[A-Z]))"
COMPILE_RANGE = re.compile(
    _WORD + r"(?:(?:[Rr]e)?[Cc]ompil(?:e|er|es|ing|ation)(?![a-z])|(?:RE)?COMPIL(?:E|ER|ES|ING|ATION)(?![A-Za-z]))"
    r"(?![-_ ]?(?:[Tt]ime|TIME))"
    r"|" + _WORD + r"(?i:nvrtc|hiprtc|ptxas)"
    r"|" + _WORD + r"(?:[Ll]oad_?PTX|load_?ptx)")
_SUFFIX = re.compile(r",\s*(?:op_id|seq|sequenceNr|stashed seq)\s*=.*$")
_STALL = GAP_CAUSES.index("cpu_stall")
_ROUND_TRIP = (GAP_CAUSES.index("sync"), GAP_CAUSES.index("copy_wait"))


def host_work(rel: Relations, table: GapTable, pids: set[int]) -> list[HostWork]:
    """OS calls and sampled functions inside the host-work gaps of one device, largest share first."""
    stall = table.owner == _STALL
    if not np.any(stall) or not pids:
        return []
    gs, ge = table.start[stall], table.end[stall]
    stall_ns = int((ge - gs).sum())
    merged_gaps = iv.merge(gs, ge)
    pid_list = ", ".join(str(int(p)) for p in sorted(pids))
    issuing = ("(pid, tid) IN (SELECT DISTINCT pid, tid FROM pa_api_calls WHERE kind IN "
               "('launch', 'graph_launch', 'memcpy', 'memcpy_async', 'memset', 'sync'))"
               if rel.available("api_calls") else "1")
    out: list[HostWork] = []
    if rel.available("os_calls"):
        by_name: dict[str, list[tuple[int, int]]] = defaultdict(list)
        lo, hi = int(gs.min()), int(ge.max())
        for name, start, end in rel.query(
                f"SELECT coalesce(name, '?'), start, \"end\" FROM pa_os_calls WHERE {VALID} "
                f"AND coalesce(depth, 0) = 0 AND pid IN ({pid_list}) AND {issuing} AND start < ? AND \"end\" > ?",
                (hi, lo)):
            by_name[str(name)].append((int(start), int(end)))
        for name, pairs in by_name.items():
            arr = np.array(pairs, dtype=np.int64)
            covered = iv.intersect_length(iv.merge(arr[:, 0], arr[:, 1]), merged_gaps)
            if covered > 0:
                out.append(HostWork(source="os_runtime", name=name, ns=covered,
                                    share_pct=100.0 * covered / stall_ns))
    if rel.available("cpu_samples"):
        counts: dict[str, int] = defaultdict(int)
        total = 0
        starts, ends = merged_gaps
        for function, time in rel.query(
                f"SELECT coalesce(function, '(unknown function)'), time FROM pa_cpu_samples "
                f"WHERE pid IN ({pid_list}) AND {issuing} AND time >= ? AND time < ?", (int(gs.min()), int(ge.max()))):
            k = int(np.searchsorted(starts, time, side="right")) - 1
            if k >= 0 and time < ends[k]:
                counts[str(function)] += 1
                total += 1
        for name, n in counts.items():
            out.append(HostWork(source="cpu_samples", name=name, samples=n, share_pct=100.0 * n / total))
    out.sort(key=lambda w: (-w.share_pct, w.source, w.name))
    return out[:2 * HOST_WORK_LISTED]


def _like(*patterns: str) -> re.Pattern[str]:
    """SQL LIKE patterns as one regex, as SQLite matches them (ASCII-only case folding, % and _)."""
    def one(p: str) -> str:
        return "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in p)
    return re.compile("|".join(f"(?:{one(p)})" for p in patterns), re.IGNORECASE | re.ASCII | re.DOTALL)


# The names compile_ranges and device_reads look at: a cheap first test, as SQLite's LIKE would
# apply it, before the exact one.
_COMPILE_LIKE = _like("%compil%", "%nvrtc%", "%hiprtc%", "%ptx%")


def _texts_like(texts: tuple[str, ...], anywhere: bool) -> re.Pattern[str]:
    """Names that start with (or, `anywhere`, contain) one of `texts`, case-insensitively (ASCII folding).

    The texts are text, not patterns: `_` in aten::_local_scalar_dense is an underscore, and a rule
    pack's text cannot become a wildcard pattern that backtracks exponentially (issue 26.7).
    """
    if not texts:
        return re.compile(r"(?!)")
    alternatives = "|".join(re.escape(n) for n in texts)
    return re.compile(f"{'.*' if anywhere else ''}(?:{alternatives}).*", re.IGNORECASE | re.ASCII | re.DOTALL)


def _device_read_like(naming: MarkerNaming) -> re.Pattern[str]:
    """The raw names that start with one of naming.device_reads."""
    return _texts_like(naming.device_reads, anywhere=False)


def _site_compile_like(naming: MarkerNaming) -> re.Pattern[str]:
    """Names containing one of naming.compile_ranges (a rule pack's compile names)."""
    return _texts_like(naming.compile_ranges, anywhere=True)


def marker_name_read(naming: MarkerNaming = DEFAULT_NAMING) -> Callable[[str], bool]:
    """The test of the raw marker names compile_ranges or device_reads may need (scan_markers keeps them)."""
    reads, site = _device_read_like(naming), _site_compile_like(naming)
    return lambda name: bool(_COMPILE_LIKE.fullmatch(name) or reads.fullmatch(name) or site.fullmatch(name))


def compile_ranges(kept: NamedRanges, naming: MarkerNaming = DEFAULT_NAMING
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pid, start, end) of the marker ranges whose name says the host is compiling.

    COMPILE_RANGE's words, or a rule pack's `marker_names.compile_ranges` texts. `kept`: the markers
    scan_markers kept for marker_name_read.
    """
    site = _site_compile_like(naming)
    rows = kept.where(lambda n: bool((_COMPILE_LIKE.fullmatch(n) and COMPILE_RANGE.search(n))
                                     or site.fullmatch(n))) & (kept.end > kept.start)
    return (kept.pid[rows].astype(np.int64), kept.start[rows].astype(np.int64), kept.end[rows].astype(np.int64))


def device_reads(kept: NamedRanges, tables: list[GapTable], pids_of: dict[int, set[int]],
                 blocked: dict[int, iv.Merged], naming: MarkerNaming = DEFAULT_NAMING) -> DeviceReads:
    """Host blocked, GPU idle and recoverable time per device-read call site, and over all of them.

    Call sites are the NVTX ranges whose names start with one of naming.device_reads (`kept`: the
    markers scan_markers kept for marker_name_read(naming); the ` op_id = N`-style suffixes are
    dropped to name the call site). `blocked` is, per process, the merged intervals in which the host
    was blocked on the GPU (sync calls and copy calls that waited for their copy).
    """
    ranges: dict[str, dict[int, list[tuple[int, int]]]] = defaultdict(lambda: defaultdict(list))
    counts: dict[str, int] = defaultdict(int)
    reads = _device_read_like(naming)
    rows = np.flatnonzero(kept.where(lambda n: bool(reads.fullmatch(n))))
    for pid, code, start, end in zip(kept.pid[rows].tolist(), kept.code[rows].tolist(),
                                     kept.start[rows].tolist(), kept.end[rows].tolist(), strict=True):
        site = _SUFFIX.sub("", kept.names[code]).strip()
        ranges[site][int(pid)].append((int(start), int(end)))
        counts[site] += 1
    sites = []
    every: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for site, by_pid in ranges.items():
        for p, v in by_pid.items():
            every[p].extend(v)
        blocked_ns, idle, rec, span_ns = _read_costs(by_pid, tables, pids_of, blocked)
        sites.append(DeviceRead(name=site, count=counts[site], range_ns=span_ns, host_blocked_ns=blocked_ns,
                                gpu_idle_ns=idle, recoverable_ns=rec))
    # The longest wait first; on a tie (calls nested in one another wait the same time) the call
    # site with the fewest calls, the outermost one (aten::is_nonzero around aten::item).
    sites.sort(key=lambda d: (-d.host_blocked_ns, d.count, d.name))
    blocked_ns, idle, rec, _ = _read_costs(every, tables, pids_of, blocked)
    return DeviceReads(sites=sites, host_blocked_ns=blocked_ns, gpu_idle_ns=idle, recoverable_ns=rec)


def _read_costs(by_pid: dict[int, list[tuple[int, int]]], tables: list[GapTable], pids_of: dict[int, set[int]],
                blocked: dict[int, iv.Merged]) -> tuple[int, int, int, int]:
    """(host blocked, GPU idle, recoverable, range time) of one set of device-read ranges per process."""
    merged = {p: iv.merge(np.array([a for a, _ in v], dtype=np.int64), np.array([b for _, b in v], dtype=np.int64))
              for p, v in by_pid.items()}
    span_ns = sum(iv.length(m) for m in merged.values())
    host_blocked = sum(iv.intersect_length(m, blocked.get(p, iv.EMPTY)) for p, m in merged.items())
    idle = rec = 0
    for t in tables:
        mine = [merged[p] for p in pids_of.get(t.device, set()) if p in merged]
        if not mine or len(t.start) == 0:
            continue
        # A gap that starts while the host is inside a device read is that read's round trip: the
        # host waited for the value there, and everything up to the next launch followed from it.
        started = iv.contains_many(iv.union_of(mine), t.start)
        idle += int((t.owned_ns[started] + t.overhead_ns[started]).sum())
        trips = started & np.isin(t.owner, _ROUND_TRIP)
        rec += int(t.recoverable_ns[trips].sum())
    return host_blocked, idle, rec, span_ns
