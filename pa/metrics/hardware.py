"""Hardware facts no profile records: host-link peaks and spec-sheet memory bandwidths.

The facts live in one data file, `hardware.yaml` beside this module (shipped as package data), each
with its source; this module is its only reader. Copies between host and device are compared with
the host link a GPU is assumed to sit on (PCIe generation from the GPU's architecture, NVLink-C2C
from the product name), and the basis of that assumption is reported next to every number that
uses it. A GPU whose profile records no memory bandwidth (rocpd stores none) takes its product's
spec-sheet figure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

HARDWARE_FILE = Path(__file__).resolve().parent / "hardware.yaml"


@dataclass(frozen=True)
class Link:
    """A host link: its name and peak bandwidth per direction (bytes/s)."""

    name: str
    bandwidth_bps: int


@dataclass(frozen=True)
class _LinkRule:
    """One `host_link_rules` entry: conditions that must all hold, and the link they assume."""

    product_contains: tuple[str, ...]
    arch_prefix: tuple[str, ...]
    cuda_major: tuple[int | None, int | None]
    link: str | None
    basis: str

    def matches(self, product: str, arch: str) -> bool:
        if self.product_contains and not any(p in product for p in self.product_contains):
            return False
        if self.arch_prefix and not arch.startswith(self.arch_prefix):
            return False
        if self.cuda_major != (None, None):
            try:
                major = int(arch.split(".")[0])
            except ValueError:
                return False  # not a CUDA compute capability
            lo, hi = self.cuda_major
            if (lo is not None and major < lo) or (hi is not None and major > hi):
                return False
        return True


@dataclass(frozen=True)
class HardwareFacts:
    """The parsed hardware.yaml."""

    links: Mapping[str, Link]
    rules: tuple[_LinkRule, ...]
    memory_bandwidth_bps: Mapping[str, int]


@lru_cache(maxsize=1)
def hardware_facts() -> HardwareFacts:
    """hardware.yaml, parsed once; a rule naming an unknown link is an error of the shipped file.

    yaml is imported here, when a GPU's facts are first needed (a profile without devices never
    gets here), and parsed with libyaml's safe loader where PyYAML has it (the same documents, about
    10 ms less of `pa summary`'s start-up than the pure-Python loader; benchmarks/startup.py).
    """
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    data: dict[str, Any] = yaml.load(HARDWARE_FILE.read_text(encoding="utf-8"), Loader=loader)
    links = {key: Link(str(v["name"]), int(v["bandwidth_bps"])) for key, v in data["links"].items()}
    rules = []
    for r in data["host_link_rules"]:
        if r.get("link") is not None and r["link"] not in links:
            raise ValueError(f"{HARDWARE_FILE}: host_link_rules names unknown link {r['link']!r}")
        major = r.get("cuda_major") or {}
        rules.append(_LinkRule(tuple(p.upper() for p in r.get("product_contains", ())),
                               tuple(r.get("arch_prefix", ())), (major.get("min"), major.get("max")),
                               r.get("link"), str(r.get("basis", ""))))
    bandwidth = {str(k): int(v) for k, v in data["memory_bandwidth_bps"].items()}
    return HardwareFacts(links, tuple(rules), bandwidth)


def host_link(name: str | None, compute_capability: str | None) -> tuple[str | None, int | None]:
    """Assumed host link of a GPU: ('PCIe 4.0 x16 (assumed from GPU generation)', bytes/s), or (None, None)."""
    facts = hardware_facts()
    product, arch = (name or "").upper(), compute_capability or ""
    for rule in facts.rules:
        if rule.matches(product, arch):
            if rule.link is None:
                return None, None
            link = facts.links[rule.link]
            return f"{link.name} ({rule.basis})", link.bandwidth_bps
    return None, None


def spec_memory_bandwidth(name: str | None) -> int | None:
    """Spec-sheet peak memory bandwidth of the product `name` (longest key contained in it), or None."""
    if not name:
        return None
    table = hardware_facts().memory_bandwidth_bps
    hits = [key for key in table if key in name]
    return table[max(hits, key=len)] if hits else None
