"""`--redact`: stable placeholders for profile strings in everything sent to the LLM, mapped back locally.

Kernel names become KERNEL_1.., marker (NVTX/rocTX) text and NVTX domains MARKER_1.., host names
and PCI bus locations HOST_1.., paths PATH_1.., and any other string read from the profile
STRING_1.. The numbering is stable within a run (first seen, first numbered; the summary's names
are registered first, in its own order), so the model can refer to "KERNEL_2" across turns, and
placeholders it writes in its answer are restored to the real names on this machine.

Two kinds of outgoing strings:

- `datum(s)`: a string read from the profile (a kernel name, a marker, a process name, a SQL
  result cell). Deny by default: a known name gets its placeholder, a string of the public
  vocabulary below is kept, anything else becomes a new STRING_n. Public vocabulary: pa's own
  enumerations (copy directions, memory kinds, API and marker kinds, gap host activity, histogram
  labels), runtime API names (`cuda…`, `cu…`, `hip…`, `hsa…`, `MPI_…`, `nccl…`, `rccl…`, …), GPU
  product names (`NVIDIA …`, `AMD …`, `Tesla …`), version numbers and gfx targets. These carry
  no user data, and the model needs them (a sync finding is about cudaStreamSynchronize).
- `text(s)`: prose pa wrote (rule descriptions, evidence sentences, tool notes) that may quote
  names: every registered name inside it is replaced, then any absolute path.

Names are matched in prose as whole tokens (not inside a longer identifier), longest first. The
matcher keeps the names sorted and finds the longest registered name at each possible start with a
binary search, so redaction costs milliseconds even with tens of thousands of distinct NVTX
ranges (a regular-expression alternation over them took seconds per call).

Without `--redact` a `Redactor(enabled=False)` is used and every method is the identity, so the
agent has one code path.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from typing import Any

from pa.profile.canonical import API_KINDS, DIRECTIONS, MARKER_KINDS, MEMORY_KINDS, MPI_KINDS, SYNC_TYPES
from pa.rules.hypothesis import BUCKETS

KINDS = ("KERNEL", "MARKER", "HOST", "PATH", "STRING")
_PLACEHOLDER = re.compile(r"\b(?:KERNEL|MARKER|HOST|PATH|STRING)_\d+\b")
# Absolute POSIX or Windows paths, and ~/ paths, that no summary field told us about.
_PATH = re.compile(r"(?<![\w.])(?:~|[A-Za-z]:)?(?:/|\\)(?:[\w.@+-]+(?:/|\\))+[\w.@+-]*")
_WORDCHAR = re.compile(r"[A-Za-z0-9_]")
_VOCABULARY = frozenset({
    *DIRECTIONS, *MEMORY_KINDS, *SYNC_TYPES, *API_KINDS, *MARKER_KINDS, *MPI_KINDS,
    "sync", "copy", "launch", "other_api", "cpu_stall", "nsys", "rocpd", "nvidia", "amd",
    "single", "marker", "markers", "kernel_mix", "kernels", *BUCKETS, "gaps", "copies",
    "syncs", "streams", "mpi", "phases", "ranks", "window",
    "rules", "llm", "fired", "silent", "skipped", "disabled", "suppressed",
})
_PUBLIC = re.compile(
    r"(?:(?:cuda[A-Z]|cu[A-Z]|hip[A-Z]|hsa_|nccl[A-Z]|rccl[A-Z]|P?MPI_[A-Z]|cublas[A-Z]|cudnn[A-Z]|cufft[A-Z]|"
    r"cusparse[A-Z]|cusolver[A-Z]|curand[A-Z]|nvtx[A-Z]|roctx[A-Z]|rocblas_|hipblas[A-Z]|omp_|__kmpc_)"
    r"[A-Za-z0-9_]{0,60}"
    r"|(?:NVIDIA|Tesla|Quadro|GeForce|AMD|Radeon|Instinct)(?: [A-Za-z0-9._()-]{1,20}){0,6}"
    r"|gfx[0-9a-f]{2,6}|v?\d+(?:\.\d+){0,4}|[<>≤≥]?\s?\d+(?:\.\d+)?\s?(?:ns|us|µs|ms|s)"
    r"(?:\s?[-–]\s?\d+(?:\.\d+)?\s?(?:ns|us|µs|ms|s))?)")


def is_public(s: str) -> bool:
    """A string of the public vocabulary (module docs): sent as is under --redact."""
    return s in _VOCABULARY or _PUBLIC.fullmatch(s) is not None


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
        self._to_placeholder[raw] = ph
        self._to_raw[ph] = raw
        bisect.insort(self._sorted, raw)
        self._longest = max(self._longest, len(raw))
        if raw[0] not in self._starts:
            self._starts.add(raw[0])
            self._start_re = None
        return ph

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


def from_summary(summary: Any, enabled: bool) -> Redactor:
    """A redactor pre-loaded with the summary's kernel, marker, domain, host and path strings."""
    red = Redactor(enabled)
    if not enabled:
        return red
    for k in summary.kernels:
        red.add("KERNEL", k.name)
        red.add("KERNEL", k.short_name)
    if summary.markers is not None:
        for m in summary.markers.by_name:
            red.add("MARKER", m.name)
            red.add("MARKER", m.domain)
        red.add_all("MARKER", (r.name for r in summary.markers.top_level))
    for p in getattr(summary, "phases", None) or []:
        if not is_public(p.label):  # "idle" is pa's own label, not the profile's
            red.add("MARKER", p.label)
    red.add("HOST", summary.profile.host_name)
    red.add("PATH", summary.profile.path)
    red.add("PATH", summary.profile.file_name)
    for d in summary.devices:
        red.add("HOST", d.bus_location)
    return red
