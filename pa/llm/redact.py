"""`--redact`: stable placeholders for profile strings in everything sent to the LLM, mapped back locally.

Kernel names become KERNEL_1.., marker (NVTX/rocTX) text, NVTX domains and phase labels
MARKER_1.., host names and PCI bus locations HOST_1.., paths PATH_1.., and any other string read
from the profile (API, OS and MPI call names, sampled CPU functions, device names, ...) STRING_1..
unless it is on the allow-list below. The numbering is stable within a run (first seen, first
numbered; the summary's names are registered first, in its own order), so the model can refer to
"KERNEL_2" across turns, and placeholders it writes in its answer are restored to the real names
on this machine.

Before anything is sent, `from_summary` registers every string the summary read from the profile,
found structurally: each string field of the summary's models says where its values come from
(pa.metrics.origin), and a field that says nothing counts as a profile string. So pa's prose
that quotes a name (a rule's evidence sentence naming the function the host was sampled in) is
redacted in the first request too, and a field added later cannot leak.

Two kinds of outgoing strings:

- `datum(s)`: a string read from the profile (a kernel name, a marker, a process name, a SQL
  result cell). Deny by default: a known name gets its placeholder, a string on the allow-list is
  kept, anything else becomes a new STRING_n.
- `text(s)`: prose pa wrote (rule descriptions, evidence sentences, tool notes) that may quote
  names: every registered name inside it is replaced, then any absolute path.

The allow-list (`is_public`; docs/llm.md), strings that carry no user data and that the model
needs (a sync finding is about cudaStreamSynchronize):

- pa's own vocabulary: its enumerations (copy directions, memory kinds, API, marker and MPI kinds,
  gap causes, time buckets) and the placeholders' fallbacks ("?", "(unknown function)");
- `API_FAMILIES`: the vendor runtime namespaces, as prefixes followed by the vendor's spelling
  (cudaLaunchKernel, cuMemAlloc_v2, hipMemcpyAsync, hsa_signal_wait_scacquire, ncclAllReduce,
  cublasSgemm, nvtxRangePushA, omp_get_num_threads); MPI names only in the standard's shape
  (MPI_Allreduce, PMPI_Comm_rank, MPI_File_write_at_all: one capital after MPI_, lower case after);
- `OS_CALLS`: an explicit list of libc and OS calls (read, write, ioctl, poll,
  pthread_cond_wait, ...), the names OS runtime tracing records;
- GPU product names (`NVIDIA …`, `AMD …`, `Tesla …`), version numbers and gfx targets, durations
  (histogram labels).

A kernel name, marker text or a phase label is never public, whatever it looks like. What stays
out of reach: a name that the application itself puts in a vendor's namespace (its own
`cudaAcmeSolve`) is sent as it is, and a site rule pack's template that cuts or changes a name
(a slice, `| upper`) writes text no registered name matches.

Names are matched in prose as whole tokens (not inside a longer identifier), longest first. The
matcher keeps the names sorted and finds the longest registered name at each possible start with a
binary search, so redaction costs milliseconds even with tens of thousands of distinct NVTX
ranges (a regular-expression alternation over them took seconds per call).

Without `--redact` a `Redactor(enabled=False)` is used and every method is the identity, so the
agent has one code path.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable
from typing import Any

from pa.metrics.gaps import GAP_CAUSES
from pa.metrics.origin import strings
from pa.profile.canonical import (
    API_KINDS,
    DIRECTIONS,
    KERNEL_CLASSES,
    MARKER_KINDS,
    MEMORY_KINDS,
    MIGRATION_CAUSES,
    MPI_KINDS,
    SYNC_TYPES,
)
from pa.rules.hypothesis import BUCKETS
from pa.rules.templates import kernel_arg

KINDS = ("KERNEL", "MARKER", "HOST", "PATH", "STRING")
_PLACEHOLDER = re.compile(r"\b(?:KERNEL|MARKER|HOST|PATH|STRING)_\d+\b")
# Absolute POSIX or Windows paths, and ~/ paths, that no summary field told us about.
_PATH = re.compile(r"(?<![\w.])(?:~|[A-Za-z]:)?(?:/|\\)(?:[\w.@+-]+(?:/|\\))+[\w.@+-]*")
_WORDCHAR = re.compile(r"[A-Za-z0-9_]")
_VOCABULARY = frozenset({
    *DIRECTIONS, *MEMORY_KINDS, *SYNC_TYPES, *API_KINDS, *MARKER_KINDS, *MPI_KINDS, *KERNEL_CLASSES,
    *MIGRATION_CAUSES, *GAP_CAUSES, "copy", "other_api", "nsys", "rocpd", "nvidia", "amd",
    "single", "marker", "markers", "kernel_mix", "kernels", *BUCKETS, "gaps", "copies",
    "syncs", "streams", "mpi", "phases", "ranks", "window", "idle", "os_runtime", "cpu_samples",
    "rules", "llm", "fired", "silent", "skipped", "disabled", "suppressed",
    "?", "(unknown function)",  # pa's names for an OS call or a sample the profile does not name
})
# Vendor runtime namespaces: a name starting with one of these is the vendor's API entry point.
API_FAMILIES = (
    "cuda[A-Z]", "cu[A-Z]", "cublas[A-Z]", "cudnn[A-Z]", "cufft[A-Z]", "cusparse[A-Z]", "cusolver[A-Z]",
    "curand[A-Z]", "nvtx[A-Z]", "nccl[A-Z]",                                 # NVIDIA CUDA
    "hip[A-Z]", "hsa_", "hipblas[A-Z]", "rocblas_", "roctx[A-Z]", "rccl[A-Z]",  # AMD ROCm
    "omp_", "__kmpc_",                                                        # OpenMP runtime
)
_MPI = r"P?MPI_[A-Z][a-z0-9]*(?:_[a-z0-9]+)*"  # the MPI standard's names: MPI_Allreduce, MPI_Comm_rank
# libc and OS calls (what OS runtime tracing records): public names, whatever the application.
OS_CALLS = frozenset({
    "read", "write", "pread", "pread64", "pwrite", "pwrite64", "readv", "writev", "open", "open64",
    "openat", "close", "lseek", "fsync", "fdatasync", "fopen", "fclose", "fread", "fwrite", "fflush",
    "ioctl", "mmap", "mmap64", "munmap", "stat", "fstat",                              # files, devices
    "poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait", "sleep", "usleep", "nanosleep",
    "clock_nanosleep", "sched_yield", "futex", "sem_wait", "sem_timedwait",            # waiting
    "pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_signal", "pthread_cond_broadcast",
    "pthread_mutex_lock", "pthread_mutex_trylock", "pthread_mutex_unlock", "pthread_rwlock_rdlock",
    "pthread_rwlock_wrlock", "pthread_join", "pthread_barrier_wait", "pthread_create",  # threads
    "recv", "recvfrom", "recvmsg", "send", "sendto", "sendmsg", "connect", "accept",    # sockets
    "malloc", "calloc", "realloc", "free", "memcpy", "memset", "memmove", "fork", "waitpid", "main",
})
_PUBLIC = re.compile(
    rf"(?:(?:{'|'.join(API_FAMILIES)})[A-Za-z0-9_]{{0,60}}|{_MPI}"
    r"|(?:NVIDIA|Tesla|Quadro|GeForce|AMD|Radeon|Instinct)(?: [A-Za-z0-9._()-]{1,20}){0,6}"
    r"|gfx[0-9a-f]{2,6}|v?\d+(?:\.\d+){0,4}|[<>≤≥]?\s?\d+(?:\.\d+)?\s?(?:ns|us|µs|ms|s)"
    r"(?:\s?[-–]\s?\d+(?:\.\d+)?\s?(?:ns|us|µs|ms|s))?)")


def is_public(s: str) -> bool:
    """A string on the allow-list (module docs): sent as is under --redact."""
    return s in _VOCABULARY or s in OS_CALLS or _PUBLIC.fullmatch(s) is not None


def cap(s: str, limit: int) -> str:
    """At most `limit` characters of `s`, saying how much was cut."""
    if len(s) <= limit:
        return s
    return f"{s[:limit]}…[+{len(s) - limit:,} chars]"


class Redactor:
    """Maps raw names to placeholders (outgoing) and back (incoming)."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._to_placeholder: dict[str, str] = {}
        self._to_raw: dict[str, str] = {}
        self._counters: dict[str, int] = {}
        self._sorted: list[str] = []        # registered names, sorted: longest-prefix search
        self._starts: set[str] = set()      # first characters of registered names
        self._start_re: re.Pattern[str] | None = None
        self._longest = 0

    def add(self, kind: str, raw: str | None) -> str | None:
        """Register `raw` under `kind` (KERNEL, MARKER, HOST, PATH, STRING); return its placeholder."""
        if not self.enabled or raw is None or not raw.strip():
            return raw
        if raw in self._to_placeholder:
            return self._to_placeholder[raw]
        n = self._counters.get(kind, 0) + 1
        self._counters[kind] = n
        ph = f"{kind}_{n}"
        self._to_raw[ph] = raw
        # The name as written by repr() or a JSON encoder (doubled backslashes, escaped quotes and
        # controls) is the same name: an error message quoting it must not escape the matcher.
        forms = [raw, repr(raw)[1:-1], json.dumps(raw, ensure_ascii=False)[1:-1], json.dumps(raw)[1:-1]]
        if kind == "KERNEL":  # as a rule's suggested command quotes it (`ncu -k 'regex:NAME'`, kernel_arg)
            forms += [kernel_arg(raw), kernel_arg(raw, "regex"), "regex:" + re.escape(raw), re.escape(raw)]
        for form in dict.fromkeys(forms):
            if form and form not in self._to_placeholder:
                self._to_placeholder[form] = ph
                bisect.insort(self._sorted, form)
                self._longest = max(self._longest, len(form))
                if form[0] not in self._starts:
                    self._starts.add(form[0])
                    self._start_re = None
        return ph

    def name(self, kind: str, raw: str | None) -> None:
        """Register a string read from the profile unless it is on the allow-list (module docs).

        pa's own words are never registered (a phase labelled "idle" is pa's label); a kernel or
        marker name otherwise always is, any other string unless it is public.
        """
        if not self.enabled or raw is None or not raw.strip() or raw in self._to_placeholder:
            return
        if raw in _VOCABULARY or (kind not in ("KERNEL", "MARKER") and is_public(raw)):
            return
        self.add(kind, raw)

    def add_all(self, kind: str, raws: Iterable[str | None]) -> None:
        """Register several names of one kind, in order."""
        for raw in raws:
            self.add(kind, raw)

    def placeholder(self, raw: str) -> str | None:
        """The placeholder of a registered name, else None."""
        return self._to_placeholder.get(raw)

    def _candidates(self) -> re.Pattern[str]:
        if self._start_re is None:
            word = "".join(re.escape(c) for c in sorted(self._starts) if _WORDCHAR.fullmatch(c))
            other = "".join(re.escape(c) for c in sorted(self._starts) if not _WORDCHAR.fullmatch(c))
            alts = ([f"(?<![A-Za-z0-9_])[{word}]"] if word else []) + ([f"[{other}]"] if other else [])
            self._start_re = re.compile("|".join(alts) or r"(?!)")
        return self._start_re

    def _longest_at(self, s: str, i: int) -> str | None:
        """The longest registered name that starts at s[i] and ends at a token boundary."""
        names = self._sorted
        probe = s[i:i + self._longest]
        while probe:
            k = bisect.bisect_right(names, probe) - 1
            if k < 0:
                return None
            name = names[k]
            if probe.startswith(name):
                end = i + len(name)
                if end >= len(s) or not (_WORDCHAR.match(name[-1]) and _WORDCHAR.match(s[end])):
                    return name
                probe = name[:-1]  # the same name minus one character: look for a shorter one
                continue
            common = 0
            for a, b in zip(name, probe, strict=False):
                if a != b:
                    break
                common += 1
            probe = probe[:common]
        return None

    def text(self, s: str) -> str:
        """Redact one outgoing piece of prose: registered names, then any remaining absolute path."""
        if not self.enabled or not s:
            return s
        if self._sorted:
            out: list[str] = []
            pos = 0
            scan = 0
            pat = self._candidates()
            while True:
                m = pat.search(s, scan)
                if m is None:
                    break
                i = m.start()
                name = self._longest_at(s, i)
                if name is None:
                    scan = i + 1
                    continue
                out.append(s[pos:i])
                out.append(self._to_placeholder[name])
                pos = scan = i + len(name)
            out.append(s[pos:])
            s = "".join(out)
        return _PATH.sub(lambda m: self.add("PATH", m.group(0)) or m.group(0), s)

    def datum(self, value: Any, kind: str = "STRING") -> Any:
        """Redact one string read from the profile: placeholder unless public vocabulary (module docs)."""
        if not self.enabled or not isinstance(value, str) or not value.strip():
            return value
        ph = self._to_placeholder.get(value)
        if ph is not None:
            return ph
        if _PLACEHOLDER.fullmatch(value) or (kind in ("STRING", "HOST") and is_public(value)):
            return value  # a kernel or marker name is never "public", whatever it looks like
        return self.add(kind, value)

    cell = datum  # a SQL result cell is a string read from the profile

    def obj(self, value: Any) -> Any:
        """Redact every string inside a JSON-like value as prose (dict keys are ours and are kept)."""
        if not self.enabled:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.obj(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.obj(v) for v in value]
        return value

    def data(self, value: Any) -> Any:
        """Redact every string inside a JSON-like value read from the profile (`datum`)."""
        if not self.enabled:
            return value
        if isinstance(value, str):
            return self.datum(value)
        if isinstance(value, dict):
            return {k: self.data(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.data(v) for v in value]
        return value

    def restore(self, value: Any) -> Any:
        """Map placeholders in an incoming value (answer text, tool arguments) back to the raw names."""
        if not self.enabled:
            return value
        if isinstance(value, str):
            return _PLACEHOLDER.sub(lambda m: self._to_raw.get(m.group(0), m.group(0)), value)
        if isinstance(value, dict):
            return {k: self.restore(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.restore(v) for v in value]
        return value

    def raw_names(self) -> list[str]:
        """Every raw string that was replaced (tests assert none of them left the machine)."""
        return list(self._to_placeholder)


def from_summary(summary: Any, enabled: bool, *, ranks: Iterable[Any] | None = None,
                 rule_result: Any = None) -> Redactor:
    """A redactor pre-loaded with every string the summary read from the profile (module docs).

    The summary's models are walked by their fields' origins (pa.metrics.origin), in field order;
    then the per-rank rows of a multi-rank run (`ranks`: their file names) and the strings the
    rules' hypotheses cite (their phase, string evidence values), which come from the summary.
    """
    return register(Redactor(enabled), summary, ranks=ranks, rule_result=rule_result)


def register(red: Redactor, summary: Any, *, ranks: Iterable[Any] | None = None, rule_result: Any = None) -> Redactor:
    """Register the summary's profile strings in an existing redactor (as `from_summary`), and return it.

    `pa mcp` keeps one redactor for its whole session and registers each profile as it is read, so a
    placeholder means the same name in every result the agent sees.
    """
    if not red.enabled:
        return red
    for kind, raw in strings(summary):
        red.name(kind, raw)
    for kind, raw in strings(list(ranks or []), None):  # models say where their strings come from
        red.name(kind, raw)
    for h in getattr(rule_result, "hypotheses", None) or []:
        red.name("MARKER", h.phase)
        for e in h.evidence:
            for v in e.values:
                if isinstance(v.value, str):
                    red.name("STRING", v.value)
    return red
