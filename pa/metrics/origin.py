"""Where the strings of pa's result models come from: field metadata that `--redact` walks.

Every string field of ProfileSummary (and of the models inside it, and of the multi-rank overview
rows) says where its values come from, as `Annotated` metadata on its type:

- read from the profile (`KernelStr`, `MarkerStr`, `HostStr`, `PathStr`, `ProfileStr`): a name
  of the user's program or machine. The kind is the placeholder pa.llm.redact gives it under
  `--redact` (KERNEL_n, MARKER_n, HOST_n, PATH_n, STRING_n for any other name: API and MPI calls,
  OS calls, sampled functions, device names, versions);
- pa's own (`OwnStr`): an enumeration, a hash, pa's version, a sentence pa wrote. Never a name;
  a sentence may quote names, and is redacted as prose.

The origin applies to every string in the field's value (list items, dict keys and values), not
to the models nested in it, which carry their own. pa.llm.redact.from_summary registers every
profile string of a summary by walking these annotations, so that prose quoting one (a rule's
evidence sentence) is redacted too; a string field without an origin counts as read from the
profile, and tests/test_llm_redact.py checks that every string field has one.
"""

from __future__ import annotations

import functools
import typing
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel


@dataclass(frozen=True)
class Origin:
    """Field metadata: `kind` is the placeholder kind of a profile string, None for pa's own strings."""

    kind: str | None


OWN = Origin(None)
KernelStr = Annotated[str, Origin("KERNEL")]    # kernel names (full, short, display)
MarkerStr = Annotated[str, Origin("MARKER")]    # NVTX / rocTX text and domains, phase labels
HostStr = Annotated[str, Origin("HOST")]        # host names, PCI bus locations
PathStr = Annotated[str, Origin("PATH")]        # file names and paths
ProfileStr = Annotated[str, Origin("STRING")]   # any other string read from the profile
OwnStr = Annotated[str, OWN]                    # pa's own: enumerations, hashes, prose


def _find(tp: Any) -> Origin | None:
    """The first Origin anywhere inside a type annotation (Annotated metadata, union and generic args)."""
    for meta in getattr(tp, "__metadata__", ()):
        if isinstance(meta, Origin):
            return meta
    for arg in typing.get_args(tp):
        found = _find(arg)
        if found is not None:
            return found
    return None


def _holds_text(tp: Any) -> bool:
    """True when a value of this type may hold a string or a model (else the walk skips the field)."""
    if tp is str or tp is Any or (isinstance(tp, type) and issubclass(tp, BaseModel)):
        return True
    return any(_holds_text(a) for a in typing.get_args(tp) if a is not Ellipsis)


@functools.cache
def text_fields(model: type[BaseModel]) -> tuple[tuple[str, Origin | None], ...]:
    """(field name, its Origin or None when it has none) for the fields of `model` that may hold strings."""
    out = []
    for name, info in model.model_fields.items():
        origin = next((m for m in info.metadata if isinstance(m, Origin)), None) or _find(info.annotation)
        if _holds_text(info.annotation):
            out.append((name, origin))
    return tuple(out)


def strings(value: Any, kind: str | None = "STRING") -> typing.Iterator[tuple[str, str]]:
    """(kind, string) for every profile string inside `value`, a model or a JSON-like value.

    `kind`: the origin of bare strings at the top (None: pa's own, skipped). Inside a model, each
    field's Origin decides; a string field without one counts as a profile string (STRING).
    """
    stack: list[tuple[Any, str | None]] = [(value, kind)]
    while stack:
        v, k = stack.pop()
        if isinstance(v, str):
            if k is not None:
                yield k, v
        elif isinstance(v, BaseModel):
            fields = text_fields(type(v))
            stack.extend((getattr(v, name), "STRING" if o is None else o.kind) for name, o in reversed(fields))
        elif isinstance(v, dict):
            for key, item in reversed(list(v.items())):
                stack.append((item, k))
                stack.append((key, k))
        elif isinstance(v, (list, tuple)):
            stack.extend((item, k) for item in reversed(v))
