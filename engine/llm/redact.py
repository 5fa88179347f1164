"""`--redact`: stable placeholders for names in everything sent to the LLM, mapped back locally.

Kernel names become KERNEL_1.., marker (NVTX/rocTX) text MARKER_1.., host names HOST_1.., paths
PATH_1.., and any other string a SQL tool result returns STRING_1.. The numbering is stable within
a run (first seen, first numbered; the summary's names are registered first in its own order), so
the model can refer to "KERNEL_2" across turns, and placeholders it writes (in answers or in SQL)
are restored to the real names on this machine before use.

Without `--redact` a `Redactor(enabled=False)` is used and every method is the identity, so the
agent has one code path.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

_PLACEHOLDER = re.compile(r"\b(?:KERNEL|MARKER|HOST|PATH|STRING)_\d+\b")
# Absolute POSIX or Windows paths, and ~/ paths, that no summary field told us about.
_PATH = re.compile(r"(?<![\w.])(?:~|[A-Za-z]:)?(?:/|\\)(?:[\w.@+-]+(?:/|\\))+[\w.@+-]*")
_WORD = r"[A-Za-z0-9_]"


class Redactor:
    """Maps raw names to placeholders (outgoing) and back (incoming)."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._to_placeholder: dict[str, str] = {}
        self._to_raw: dict[str, str] = {}
        self._counters: dict[str, int] = {}
        self._pattern: re.Pattern[str] | None = None

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
        self._pattern = None
        return ph

    def add_all(self, kind: str, raws: Iterable[str | None]) -> None:
        """Register several names of one kind, in order."""
        for raw in raws:
            self.add(kind, raw)

    def _compiled(self) -> re.Pattern[str] | None:
        if self._pattern is None and self._to_placeholder:
            # Longest first, so a full demangled name wins over a short name it contains; names are
            # matched as whole tokens so a 3-letter kernel name does not eat parts of ordinary words.
            names = sorted(self._to_placeholder, key=len, reverse=True)
            alts = "|".join(f"(?<!{_WORD}){re.escape(n)}(?!{_WORD})" for n in names)
            self._pattern = re.compile(alts)
        return self._pattern

    def text(self, s: str) -> str:
        """Redact one outgoing string: known names, then any remaining absolute path."""
        if not self.enabled or not s:
            return s
        pat = self._compiled()
        if pat is not None:
            s = pat.sub(lambda m: self._to_placeholder[m.group(0)], s)
        return _PATH.sub(lambda m: self.add("PATH", m.group(0)) or m.group(0), s)

    def obj(self, value: Any) -> Any:
        """Redact every string inside a JSON-like value (dict keys are ours and are kept)."""
        if not self.enabled:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.obj(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.obj(v) for v in value]
        return value

    def cell(self, value: Any) -> Any:
        """Redact one SQL result cell: a string is data of unknown meaning, so all of it goes.

        A cell equal to a known name keeps that name's placeholder (so the model can connect a
        query result with the summary); any other string becomes a STRING_n placeholder.
        """
        if not self.enabled or not isinstance(value, str) or not value.strip():
            return value
        if value in self._to_placeholder:
            return self._to_placeholder[value]
        if _PLACEHOLDER.fullmatch(value):
            return value
        return self.add("STRING", value)

    def restore(self, value: Any) -> Any:
        """Map placeholders in an incoming value (answer text, SQL) back to the raw names."""
        if not self.enabled:
            return value
        if isinstance(value, str):
            return _PLACEHOLDER.sub(lambda m: self._to_raw.get(m.group(0), m.group(0)), value)
        if isinstance(value, dict):
            return {k: self.restore(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.restore(v) for v in value]
        return value

    def restore_sql(self, sql: str) -> str:
        """Placeholders inside SQL become quoted-safe raw names (single quotes doubled)."""
        if not self.enabled:
            return sql
        return _PLACEHOLDER.sub(
            lambda m: self._to_raw.get(m.group(0), m.group(0)).replace("'", "''"), sql)

    def raw_names(self) -> list[str]:
        """Every raw string that was replaced (tests assert none of them left the machine)."""
        return list(self._to_placeholder)


def from_summary(summary: Any, enabled: bool) -> Redactor:
    """A redactor pre-loaded with the summary's kernel, marker, host and path strings."""
    red = Redactor(enabled)
    if not enabled:
        return red
    for k in summary.kernels:
        red.add("KERNEL", k.name)
        red.add("KERNEL", k.short_name)
    if summary.markers is not None:
        red.add_all("MARKER", (m.name for m in summary.markers.by_name))
        red.add_all("MARKER", (r.name for r in summary.markers.top_level))
    red.add("HOST", summary.profile.host_name)
    red.add("PATH", summary.profile.path)
    red.add("PATH", summary.profile.file_name)
    for d in summary.devices:
        red.add("HOST", d.bus_location)
    return red
