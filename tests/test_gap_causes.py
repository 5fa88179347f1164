"""Gap causes and recoverable time (pa/metrics/gaps.py): hand-built cases and real profiles.

The hand-built cases pin each ownership rule on intervals small enough to count by hand. On the real
exports, a reference written here in plain Python over raw SQL rows (per gap, one call at a time; no
numpy, no engine code) must give the same idle and recoverable time per cause, to the nanosecond.
"""

from __future__ import annotations

import bisect
import itertools
import re
import sqlite3
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from reference import reference_merge, reference_union

from pa.metrics import intervals as iv
from pa.metrics.gaps import HostSets, classify_gaps
from pa.metrics.summarize import summarize

Z = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))


def merged(*pairs: tuple[int, int]) -> iv.Merged:
    return iv.merge(np.array([p[0] for p in pairs], dtype=np.int64), np.array([p[1] for p in pairs], dtype=np.int64))


def host(**sets: iv.Merged) -> HostSets:
    return HostSets(**{k: sets.get(k, Z) for k in ("sync", "copy", "launch", "alloc", "mpi", "overhead")})


def owners(table) -> list[str]:
    from pa.metrics.gaps import GAP_CAUSES

    return [GAP_CAUSES[int(c)] for c in table.owner]


def test_sync_round_trip_owns_the_gap_and_recovers_at_most_the_busy_interval_before_it() -> None:
    # kernel [0, 100); the host is blocked in a sync [50, 104) when the GPU drains at 100, then launches
    # [106, 111); the next kernel starts at 114. Gap 100→114 = 14: the host's own time is 2 + 3 = 5 < 7.
    busy = merged((0, 100), (114, 200))
    t = classify_gaps(0, busy, host(sync=merged((50, 104)), launch=merged((106, 111))))
    assert owners(t) == ["sync"]
    assert t.recoverable_ns.tolist() == [14]           # min(gap 14, busy before it 100)
    # the same round trip after a 6-long kernel: running ahead hides at most 6 of the 14
    t = classify_gaps(0, merged((94, 100), (114, 200)), host(sync=merged((95, 104)), launch=merged((106, 111))))
    assert owners(t) == ["launch"]                      # 6 < 14 / 2: not a round trip; launch covers most
    assert t.recoverable_ns.tolist() == [5]             # graphs remove the launch call [106, 111), not the wait


def test_host_work_after_a_sync_owns_the_gap_only_when_running_ahead_cannot_hide_it() -> None:
    # the host waits [50, 102), then works on its own until 190 and launches [190, 195): own 88 of 95.
    # Running ahead, that work would have overlapped the 100 of GPU work it waited for: a round trip.
    t = classify_gaps(0, merged((0, 100), (198, 300)), host(sync=merged((50, 102)), launch=merged((190, 195))))
    assert owners(t) == ["sync"] and t.recoverable_ns.tolist() == [98]
    assert t.critical_busy_ns == 100 + 102               # the host waited on [0, 100); [198, 300) ends the window
    # A millisecond of the host's own work after the wait is host work of its own (a checkpoint written
    # after a read-back), whatever wait came before it.
    ms = 1_000_000
    t = classify_gaps(0, merged((0, 10 * ms), (10 * ms + 2 * ms, 20 * ms)),
                      host(sync=merged((9 * ms, 10 * ms + 10)), launch=merged((12 * ms - 10, 12 * ms - 5))))
    assert owners(t) == ["cpu_stall"]
    # After 20 of GPU work the same host work cannot hide: the host, not the wait, sets the pace.
    # (in these ns-sized sketches no gap is short enough to be per-operation dispatch: dispatch_max_ns=0)
    t = classify_gaps(0, merged((80, 100), (198, 300)), host(sync=merged((90, 102)), launch=merged((190, 195))),
                      dispatch_max_ns=0)
    assert owners(t) == ["cpu_stall"]
    assert t.recoverable_ns.tolist() == [98]           # host work can hide behind the 122 of busy time, anywhere
    # a kernel that ends while the host is launching is not on the critical path
    t = classify_gaps(0, merged((0, 10), (20, 30)), host(launch=merged((9, 19))))
    assert t.critical_busy_ns == 10                      # only the last interval


def test_short_gaps_of_host_time_are_dispatch_and_recover_down_to_the_shortest_gap() -> None:
    us = 1_000
    # three gaps of the host's own time between kernels: 4 µs (the shortest), 30 µs and 90 µs (per-operation
    # dispatch, under 100 µs), then a 2 ms host phase (host work); each gap ends in a 2 µs launch call
    kernels = merged((0, 50 * us), (54 * us, 100 * us), (130 * us, 200 * us), (290 * us, 400 * us),
                     (2_400 * us, 2_500 * us))
    launches = merged((52 * us, 54 * us), (128 * us, 130 * us), (288 * us, 290 * us), (2_398 * us, 2_400 * us))
    t = classify_gaps(0, kernels, host(launch=launches))
    # the 4 µs gap is half launch call: not the host's own time, so launch
    assert owners(t) == ["launch", "dispatch", "dispatch", "cpu_stall"]
    assert t.recoverable_ns.tolist()[1:3] == [30 * us - 4 * us, 90 * us - 4 * us]
    # a site that calls 20 µs the longest dispatch gap: the 30 µs gap is host work
    t = classify_gaps(0, kernels, host(launch=launches), dispatch_max_ns=20 * us)
    assert owners(t) == ["launch", "cpu_stall", "cpu_stall", "cpu_stall"]
    # a short gap in which the host issues nothing (between two operations it did not launch, such as
    # unified-memory migrations while it reads managed memory) is host work, not dispatch
    t = classify_gaps(0, merged((0, 10 * us), (40 * us, 50 * us)), host(launch=merged((60 * us, 62 * us))))
    assert owners(t) == ["cpu_stall"]
    # a 3 µs gap with no host call in it is the device's own latency between queued operations: dispatch,
    # and nothing to recover below the device's shortest gap
    t = classify_gaps(0, merged((0, 10 * us), (13 * us, 20 * us), (50 * us, 60 * us)),
                      host(launch=merged((45 * us, 47 * us))))
    assert owners(t) == ["dispatch", "dispatch"] and t.recoverable_ns.tolist() == [0, 30 * us - 3 * us]


def test_host_work_recovers_at_most_the_busy_time_of_the_device() -> None:
    # 10 of busy time, two host-work gaps of 40 and 60: together they can hide behind 10 only
    t = classify_gaps(0, merged((0, 5), (45, 50), (110, 115)), host(launch=merged((44, 45), (109, 110))),
                      dispatch_max_ns=0)
    assert owners(t) == ["cpu_stall", "cpu_stall"]
    assert int(t.recoverable_ns.sum()) <= 15 and t.recoverable_ns.tolist() == [15 * 40 // 100, 15 * 60 // 100]


def test_profiler_overhead_takes_its_part_and_the_rest_keeps_its_cause() -> None:
    # gap 100→200; profiler overhead covers [100, 170): 70 is the profiler's; the host is in a launch
    # call [170, 199) for most of the remaining 30
    t = classify_gaps(0, merged((0, 100), (200, 300)), host(overhead=merged((100, 170)), launch=merged((170, 199))))
    idle, rec = t.totals()
    assert idle["overhead"] == 70 and idle["launch"] == 30 and rec["overhead"] == 0 and rec["launch"] == 29


def test_copy_wait_alloc_mpi_and_unknown() -> None:
    busy = merged((0, 100), (140, 200))
    assert owners(classify_gaps(0, busy, host(copy=merged((90, 139))))) == ["copy_wait"]
    t = classify_gaps(0, busy, host(alloc=merged((110, 135))))
    assert owners(t) == ["alloc"] and t.recoverable_ns.tolist() == [25]   # the calls' own time
    t = classify_gaps(0, busy, host(mpi=merged((101, 138))))
    assert owners(t) == ["mpi"] and t.recoverable_ns.tolist() == [40]
    t = classify_gaps(0, busy, None)                   # no host calls captured: nothing can be said
    assert owners(t) == ["unknown"] and t.recoverable_ns.tolist() == [0]


def test_ranges_named_as_compiling_own_their_gaps_and_compiled_code_does_not(tmp_path: Path) -> None:
    from testkit.nsys_writer import write_nsys
    from testkit.scenario import ApiCall, Device, Kernel, Marker, Process, Scenario

    ms = 1_000_000
    # kernels [0,1), [4,5), [8,9) ms, each launched just before it starts; between them the host sits in
    # a 2.5 ms range: "compile_inner" (PyTorch compiling a graph) in the first gap, "CompiledFunction"
    # (running what was compiled earlier) in the second. Only the first gap is compilation.
    ks = [Kernel(pid=100, device=0, stream=7, start=t * ms, end=(t + 1) * ms, name="k", correlation_id=i + 1)
          for i, t in enumerate((0, 4, 8))]
    calls = [ApiCall(pid=100, tid=100, start=k.start - 20_000, end=k.start - 10_000, kind="launch",
                     correlation_id=k.correlation_id) for k in ks]
    marks = [Marker(pid=100, tid=100, start=1 * ms + 100_000, end=3 * ms + 600_000, text="compile_inner"),
             Marker(pid=100, tid=100, start=5 * ms + 100_000, end=7 * ms + 600_000, text="CompiledFunction")]
    scen = Scenario(name="compile_ranges", description="hand-built", devices=[Device(id=0)],
                    processes=[Process(pid=100, name="app", threads={100: "main"})],
                    kernels=ks, api_calls=calls, markers=marks)
    write_nsys(scen, tmp_path / "c.sqlite")
    g = summarize(tmp_path / "c.sqlite").idle_gaps[0]
    assert g.idle_by_cause == {"compile": 3 * ms, "cpu_stall": 3 * ms}
    assert g.recoverable_by_cause["compile"] == 2_500_000   # the range's own length inside the gap


# ---- real profiles: a plain-Python reference over raw SQL --------------------------------------------

SYNC = re.compile(r"^cu(da)?(Device|Stream|Event|Ctx|Thread)Synchronize")
KINDS = (("sync", lambda n: bool(SYNC.match(n))),
         ("copy", lambda n: n.startswith(("cudaMemcpy", "cuMemcpy", "cudaMemset", "cuMemset"))),
         ("compile", lambda n: n.startswith(("cuModuleLoad", "cuLibraryLoad", "cudaLibraryLoad", "cuLinkComplete",
                                             "cuLinkAdd", "nvrtcCompileProgram"))),
         ("load", lambda n: False),   # lazy loading: the driver's loading records and slow first launches
         ("launch", lambda n: n.startswith(("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchCooperativeKernel",
                                            "cudaGraphLaunch", "cuGraphLaunch", "cuLaunchCooperativeKernel"))),
         ("alloc", lambda n: n.startswith(("cudaMalloc", "cudaHostAlloc", "cuMemAlloc", "cuMemHostAlloc",
                                           "cudaFree", "cuMemFree"))))
OWNER_OF = {"sync": "sync", "copy": "copy_wait", "compile": "compile", "load": "load", "launch": "launch",
            "alloc": "alloc", "mpi": "mpi"}
LAZY_LOAD_MIN_NS = 1_000_000   # a launch call this long loads its kernel's module (rules/thresholds.yaml)


def _merge(pairs):
    return _Merged(reference_merge(pairs))


class _Merged(list):
    """A merged, sorted interval list with prefix sums, so a coverage query is two bisections."""

    def __init__(self, pairs):
        super().__init__(pairs)
        self.starts = [s for s, _ in self]
        self.ends = [e for _, e in self]
        self.cum = [0]
        for s, e in self:
            self.cum.append(self.cum[-1] + e - s)


def _cover(m, lo, hi):
    """Length of `m` inside [lo, hi): whole intervals by prefix sums, the two partial ends by hand."""
    if not isinstance(m, _Merged):
        m = _Merged(m)
    i = bisect.bisect_right(m.ends, lo)          # first interval ending after lo
    j = bisect.bisect_left(m.starts, hi)         # intervals [i, j) start before hi
    if i >= j:
        return 0
    total = m.cum[j] - m.cum[i]
    total -= max(0, lo - m.starts[i])
    total -= max(0, m.ends[j - 1] - hi)
    return total


def _intersect(a, b):
    """The intersection of two merged, sorted interval lists (a two-pointer sweep)."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo < hi:
            out.append([lo, hi])
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return _Merged(out)


def _inside(m, t):
    i = bisect.bisect_right([s for s, _ in m], t) - 1
    return i >= 0 and m[i][1] > t


def _names_compiling(text: str) -> bool:
    """Split the name into words (camelCase humps and runs of capitals count as words), then look for a
    compiling word not followed by "time" (a scheduler's canScheduleCompileTime), a runtime compiler's
    name, or "load" followed by "ptx"."""
    words = [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+", text)]
    stems = {"compile", "compiler", "compiles", "compiling", "compilation"}
    stems |= {"re" + x for x in stems}
    following = [*words[1:], ""]
    return any((w in stems and nxt != "time") or w in {"nvrtc", "hiprtc", "ptxas", "loadptx"}
               or (w == "load" and nxt == "ptx") for w, nxt in zip(words, following, strict=True))


def reference_causes(path: Path) -> dict[int, tuple[dict[str, int], dict[str, int], int]]:
    """Per device: (idle by cause, recoverable by cause, host work after the last kernel), gap by gap from raw rows."""
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    ops = []
    for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
        if t in tables:
            ops += conn.execute(f'SELECT start, "end", deviceId, (globalPid >> 24) & 16777215 FROM {t} '
                                f'WHERE "end" >= start').fetchall()
    names = dict(conn.execute("SELECT id, value FROM StringIds"))
    calls = conn.execute('SELECT start, "end", nameId, (globalTid >> 24) & 16777215, correlationId '
                         'FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE "end" >= start').fetchall()
    # each process's first launch of each kernel (by its full name): the only launches that can load
    first = set()
    if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
        seen = set()
        for pid, name, corr in conn.execute('SELECT (globalPid >> 24) & 16777215, demangledName, correlationId '
                                            'FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start'):
            if (pid, name) not in seen:
                seen.add((pid, name))
                first.add((pid, corr))
    over = conn.execute('SELECT start, "end", (globalTid >> 24) & 16777215 FROM PROFILER_OVERHEAD').fetchall() \
        if "PROFILER_OVERHEAD" in tables else []
    driver = conn.execute(
        'SELECT c.start, c."end", (c.globalTid >> 24) & 16777215, t.label FROM CUPTI_ACTIVITY_KIND_OVERHEAD c '
        "JOIN ENUM_CUPTI_OVERHEAD_TYPE t ON t.id = c.overheadType WHERE t.label LIKE '%(CUDA)%' "
        "AND (t.label LIKE '%JIT%' OR t.label LIKE '%compil%' OR t.label LIKE '%loading%')").fetchall() \
        if {"CUPTI_ACTIVITY_KIND_OVERHEAD", "ENUM_CUPTI_OVERHEAD_TYPE"} <= tables else []
    # the driver's module loading is start-up (load), its JIT compiler's work is compile
    jit = [(a, b, p) for a, b, p, label in driver if "loading" not in label.lower()]
    loads = [(a, b, p) for a, b, p, label in driver if "loading" in label.lower()]
    if "NVTX_EVENTS" in tables:  # ranges the application names as compiling
        texts = conn.execute('SELECT n.start, n."end", (n.globalTid >> 24) & 16777215, coalesce(n.text, s.value) '
                             'FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId '
                             'WHERE n."end" > n.start').fetchall()
        jit += [(a, b, p) for a, b, p, text in texts if _names_compiling(text or "")]
    mpi = []
    if "NVTX_EVENTS" in tables:  # MPI traced as NVTX ranges MPI_* in a domain named "MPI" (older Nsight Systems)
        domains = set(conn.execute(
            "SELECT (d.globalTid >> 24) & 16777215, d.domainId FROM NVTX_EVENTS d LEFT JOIN StringIds ds "
            "ON ds.id = d.textId WHERE d.eventType = 75 AND coalesce(d.text, ds.value) = 'MPI'").fetchall())
        if domains:
            mpi = [(a, b, p) for a, b, p, dom in conn.execute(
                'SELECT n.start, n."end", (n.globalTid >> 24) & 16777215, n.domainId FROM NVTX_EVENTS n '
                "LEFT JOIN StringIds s ON s.id = n.textId WHERE coalesce(n.text, s.value) GLOB 'MPI_*' "
                'AND n."end" > n.start') if (p, dom) in domains]
    reads: list[tuple[int, int, int]] = []   # fault-driven device-to-host migrations: the host reading GPU results
    if {"ENUM_CUDA_UNIF_MEM_MIGRATION", "ENUM_CUDA_MEMCPY_OPER"} <= tables:
        reads = conn.execute(
            'SELECT m.start, m."end", m.deviceId FROM CUPTI_ACTIVITY_KIND_MEMCPY m '
            "JOIN ENUM_CUDA_UNIF_MEM_MIGRATION c ON c.id = m.migrationCause "
            "JOIN ENUM_CUDA_MEMCPY_OPER k ON k.id = m.copyKind "
            "WHERE k.label = 'Unified Device-to-Host' AND (c.label = 'Page fault' OR c.label LIKE 'Speculative%') "
            'AND m."end" >= m.start').fetchall()
    kernel_ends = dict(conn.execute('SELECT deviceId, max("end") FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY deviceId')) \
        if "CUPTI_ACTIVITY_KIND_KERNEL" in tables else {}
    conn.close()
    out = {}
    for dev in sorted({o[2] for o in ops}):
        pids = {o[3] for o in ops if o[2] == dev}
        busy = _merge([(o[0], o[1]) for o in ops if o[2] == dev])
        def slow_launch(s: int, e: int, n: int, p: int, c: int) -> bool:
            return e - s >= LAZY_LOAD_MIN_NS and (p, c) in first and dict(KINDS)["launch"](names.get(n, "")) \
                and not names.get(n, "").startswith(("cudaGraphLaunch", "cuGraphLaunch"))

        sets = {k: _merge([(s, e) for s, e, n, p, c in calls if p in pids and test(names.get(n, ""))
                           and not (k == "launch" and slow_launch(s, e, n, p, c))]
                          + ([(s, e) for s, e, p in jit if p in pids] if k == "compile" else [])
                          + ([(s, e) for s, e, p in loads if p in pids] if k == "load" else [])
                          + ([(s, e) for s, e, n, p, c in calls if p in pids and slow_launch(s, e, n, p, c)]
                             if k == "load" else []))
                for k, test in KINDS}
        ov = _merge([(s, e) for s, e, p in over if p in pids])
        mpi_set = _merge([(s, e) for s, e, p in mpi if p in pids])
        api_set = _merge([tuple(x) for m in sets.values() for x in m])
        every = _merge([tuple(x) for m in (*sets.values(), ov, mpi_set) for x in m])
        alloc_in_lc = _intersect(sets["alloc"], _merge([tuple(x) for k in ("launch", "compile", "load", "sync", "copy")
                                                        for x in sets[k]]))
        mpi_in_api = _intersect(mpi_set, api_set)
        idle: dict[str, int] = defaultdict(int)
        rec: dict[str, int] = defaultdict(int)
        stall_rec = []
        wind_down = 0
        dev_reads = _merge([(a, b) for a, b, d in reads if d == dev])
        touched = [_cover(dev_reads, b0, b1) > 0 for b0, b1 in busy]
        shortest = min((busy[i + 1][0] - busy[i][1] for i in range(len(busy) - 1)), default=0)
        for i in range(len(busy) - 1):
            g0, g1 = busy[i][1], busy[i + 1][0]
            length = g1 - g0
            o = min(_cover(ov, g0, g1), length)
            rest = length - o
            idle["overhead"] += o
            if rest <= 0:
                continue
            own = length - _cover(every, g0, g1)
            prev = busy[i][1] - busy[i][0]
            round_trip = 2 * min(rest, prev) >= rest
            cover = {k: min(_cover(sets[k], g0, g1), rest) for k, _ in KINDS}
            cover["mpi"] = min(_cover(mpi_set, g0, g1), rest)
            # MPI only (no GPU API call at the same time): inside a host-work gap, MPI's own part
            mpi_only = min(max(_cover(mpi_set, g0, g1) - _cover(mpi_in_api, g0, g1), 0), rest)
            round_trip = round_trip and 2 * cover["mpi"] < rest   # a wait handing results to MPI is no round trip
            if 2 * own > rest and own >= 1_000_000:
                owner, r = "cpu_stall", rest
            elif round_trip and _inside(sets["sync"], g0):
                owner, r = "sync", min(rest, prev)
            elif round_trip and _inside(sets["copy"], g0):
                owner, r = "copy_wait", min(rest, prev)
            elif 2 * own > rest and length < 100_000 and (cover["launch"] or cover["copy"] or length < 10_000):
                owner, r = "dispatch", max(rest - shortest, 0)
            elif 2 * own > rest:
                owner, r = "cpu_stall", rest
            elif 2 * cover["compile"] >= rest:
                owner, r = "compile", cover["compile"]
            elif 2 * cover["load"] >= rest:
                owner, r = "load", 0   # module loading is start-up: nothing recovered
            else:
                order = [k for k, _ in KINDS] + ["mpi"]
                kind = max(cover, key=lambda k: (cover[k], -order.index(k)))
                owner = OWNER_OF[kind]
                r = {"sync": min(rest, prev), "copy_wait": min(rest, prev), "launch": cover["launch"],
                     "alloc": cover["alloc"], "compile": cover["compile"], "load": 0, "mpi": rest}[owner]
            part = mpi_only if owner == "cpu_stall" else 0
            if owner in ("launch", "compile", "load", "sync", "copy_wait"):
                # the allocation calls' own part (outside launch, compile, sync and copy calls) is the
                # allocation's; in a round trip its recoverable share comes out of the owner's
                alloc_only = max(cover["alloc"] - _cover(alloc_in_lc, g0, g1), 0)
                if owner in ("launch", "compile", "load"):
                    alloc_part = min(alloc_only, max(rest - r, 0))
                    rec["alloc"] += alloc_part
                else:
                    alloc_part = min(alloc_only, rest)
                    taken = min(alloc_part, r)
                    rec["alloc"] += taken
                    r -= taken
                idle[owner] -= alloc_part
                idle["alloc"] += alloc_part
            idle[owner] += rest - part
            idle["mpi"] += part
            if owner == "cpu_stall" and (touched[i] or touched[i + 1]):
                # host work reading the GPU's results hides only behind GPU work after it
                later = sum(b1 - max(b0, g1) for b0, b1 in busy if b1 > g1) - _cover(dev_reads, g1, busy[-1][1])
                r = min(r, max(later, 0))
            if owner == "cpu_stall" and dev in kernel_ends and g0 >= kernel_ends[dev]:
                wind_down += rest - part
            if owner in ("cpu_stall", "mpi"):
                stall_rec.append((owner, r, part, rest))
            else:
                rec[owner] += r
        busy_len = reference_union([tuple(b) for b in busy])
        want = sum(r for _, r, _, _ in stall_rec)
        for owner, r, part, rest in stall_rec:
            r = r * busy_len // want if want > busy_len else r
            moved = int(r * (part / rest)) if part else 0   # the MPI part's share of the gap's recoverable time
            rec[owner] += r - moved
            rec["mpi"] += moved
        out[dev] = ({k: v for k, v in idle.items() if v}, {k: v for k, v in rec.items() if v}, wind_down)
    return out


def test_gap_causes_match_a_plain_reference_on_real_profiles(real_profile: Path, summary_of) -> None:
    s = summary_of(real_profile)
    if s.host_side is not None or not s.idle_gaps:
        pytest.skip("no GPU activity in this capture")
    ref = reference_causes(real_profile)
    for g in s.idle_gaps:
        idle, rec, wind_down = ref[g.device]
        assert g.idle_by_cause == idle, g.device
        assert g.wind_down_host_work_ns == wind_down, g.device
        assert sum(g.idle_by_cause.values()) == g.idle_ns
        # the proportional share of the busy time may round each gap down by < 1 ns
        assert set(g.recoverable_by_cause) <= set(rec) | {"cpu_stall"}
        for cause, ns in rec.items():
            assert abs(g.recoverable_by_cause.get(cause, 0) - ns) <= max(1, g.gap_count), (cause, ns)


def test_host_work_that_reads_the_gpus_results_hides_only_behind_later_gpu_work() -> None:
    # Kernels [0, 40 ms) and [50, 60 ms); then the host writes output [60, 100 ms) touching managed
    # pages, whose fault migrations to the host are the busy intervals [70, 72) and [100, 101).
    ms = 1_000_000
    busy = merged((0, 40 * ms), (45 * ms, 60 * ms), (70 * ms, 72 * ms), (100 * ms, 101 * ms))
    reads = merged((70 * ms, 72 * ms), (100 * ms, 101 * ms))
    t = classify_gaps(0, busy, host(), host_reads=reads)
    assert owners(t) == ["cpu_stall"] * 3
    # 40→45 ms sits between kernels: it may hide behind any GPU work (5 ms, all of it);
    # 60→70 and 72→100 border a host read: after them only the host's own migrations follow, so nothing.
    assert t.recoverable_ns.tolist() == [5 * ms, 0, 0]
    # without the migrations' proof of the read, every gap may hide behind the 58 ms of busy time
    t = classify_gaps(0, busy, host())
    assert t.recoverable_ns.tolist() == [5 * ms, 10 * ms, 28 * ms]


def test_host_work_after_the_last_kernel_is_the_runs_wind_down() -> None:
    from pa.metrics.gaps import device_gaps

    ms = 1_000_000
    busy = merged((0, 40 * ms), (45 * ms, 60 * ms), (70 * ms, 72 * ms), (100 * ms, 101 * ms))
    t = classify_gaps(0, busy, host())
    g = device_gaps(busy, t, 0, 110 * ms, last_kernel_end=60 * ms)
    assert g.idle_by_cause == {"cpu_stall": 43 * ms}
    assert g.wind_down_host_work_ns == 38 * ms          # 60→70 and 72→100: after the last kernel
    assert device_gaps(busy, t, 0, 110 * ms).wind_down_host_work_ns == 0   # no kernel known: nothing is wind-down


def test_a_launch_that_loads_its_module_is_start_up_not_launch_overhead(scenario_profiles) -> None:
    """Issue 25, item 3: the first launch of each kernel pays lazy module loading (3 ms here).

    A launch costs microseconds and, while the GPU idles, no full queue can block it: a launch call
    of a millisecond or more is loading. Its gap is `load`, recovering nothing (the module is loaded
    once per process, eagerly or lazily), never launch overhead a graph would remove.
    """
    path = scenario_profiles.path("warmup_dominated", "nsys")
    g = summarize(path).idle_gaps[0]
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    kernels = conn.execute('SELECT start, "end" FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start').fetchall()
    slow = conn.execute('SELECT r.start, r."end" FROM CUPTI_ACTIVITY_KIND_RUNTIME r '
                        "JOIN StringIds s ON s.id = r.nameId "
                        "WHERE s.value LIKE 'cudaLaunchKernel%' AND r.\"end\" - r.start >= 1000000").fetchall()
    conn.close()
    # by hand: the gaps between kernels that a slow launch call covers for more than half
    loading = sum(b[0] - a[1] for a, b in itertools.pairwise(kernels)
                  if any(2 * (min(e, b[0]) - max(s, a[1])) > b[0] - a[1] for s, e in slow))
    assert loading > 0 and g.idle_by_cause.get("load") == loading
    assert "load" not in g.recoverable_by_cause and "launch" not in g.idle_by_cause
