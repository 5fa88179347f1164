"""Marker names without their one-off ids, so ranges of one operation aggregate under one name.

Frameworks put ids into NVTX/rocTX range names: PyTorch's `aten::mm, seq = 1234, op_id = 77`, a
training loop's `Iteration 57`, an allocator's `free 0x7f3a12c04000`. Aggregated by raw name, a
marker table shows thousands of one-off rows and phase detection sees no repeated step. A name is
normalised by three fixed, documented steps (each can be turned off or extended in a rule pack's
`marker_names:` section, docs/rules.md):

1. `strip_after`: from the first of these substrings on, the name is dropped (PyTorch's
   `, seq = N`, `, op_id = N`, `, sequenceNr = N`, `, stashed seq = N` suffixes);
2. `hex_addresses`: `0x` followed by at least 6 hex digits becomes `0x…`;
3. `number_words`: a number standing as a word of its own (between spaces, or after `#`, `:` or
   `=`) becomes `#` (`Iteration 57` → `Iteration #`, `step=12` → `step=#`); numbers inside a word
   (`conv2d`, `layer_3`, `fp16`) are part of the name and stay.

No regular expression from a rule pack is ever run: the steps are fixed code, linear in the name's
length, so no pack can make normalisation hang.
"""

from __future__ import annotations

from dataclasses import dataclass

PYTORCH_SUFFIXES = (", seq = ", ", op_id = ", ", sequenceNr = ", ", stashed seq = ")
# Framework calls whose NVTX/rocTX range means "the host reads a value computed on the device": the
# call returns only once the GPU has produced it, so the host waits (pa.metrics.host_work.device_reads;
# PyTorch writes these ranges with `, op_id = N` or `, seq = N` suffixes). A range counts when its
# raw name starts with one of these, case-insensitively; a rule pack adds others (`device_reads`).
DEVICE_READ_RANGES = ("aten::item", "aten::_local_scalar_dense", "aten::is_nonzero", "aten::nonzero",
                      "aten::equal", "aten::allclose")
_HEX = frozenset("0123456789abcdefABCDEF")
_WORD_BEFORE = frozenset(" #:=")
_WORD_AFTER = frozenset(" ,;)]")


@dataclass(frozen=True)
class MarkerNaming:
    """How marker names are normalised (pa.metrics.marker_names), and which mean a device read."""

    strip_after: tuple[str, ...] = PYTORCH_SUFFIXES
    hex_addresses: bool = True
    number_words: bool = True
    device_reads: tuple[str, ...] = DEVICE_READ_RANGES
    # Substrings (text, case-insensitive) that make a range a compilation beside the built-in word
    # test (pa.metrics.host_work.COMPILE_RANGE): a site's own JIT or code-generation ranges (issue 25,
    # item 3: compile names are knowledge, kept in rule-pack data).
    compile_ranges: tuple[str, ...] = ()

    def normalise(self, name: str) -> str:
        """`name` without the ids the three steps remove."""
        cut = min((i for i in (name.find(s) for s in self.strip_after if s) if i >= 0), default=-1)
        if cut >= 0:
            name = name[:cut]
        if self.hex_addresses and "0x" in name:
            name = _hex_addresses(name)
        if self.number_words:
            name = _number_words(name)
        return name.rstrip()


DEFAULT_NAMING = MarkerNaming()
RAW_NAMING = MarkerNaming(strip_after=(), hex_addresses=False, number_words=False)


def _hex_addresses(name: str) -> str:
    out, i, n = [], 0, len(name)
    while i < n:
        if name.startswith("0x", i):
            j = i + 2
            while j < n and name[j] in _HEX:
                j += 1
            if j - i - 2 >= 6:
                out.append("0x…")
                i = j
                continue
        out.append(name[i])
        i += 1
    return "".join(out)


def _number_words(name: str) -> str:
    out, i, n = [], 0, len(name)
    while i < n:
        c = name[i]
        if c.isdigit() and (i == 0 or name[i - 1] in _WORD_BEFORE):
            j = i
            while j < n and name[j].isdigit():
                j += 1
            out.append("#" if j == n or name[j] in _WORD_AFTER else name[i:j])
            i = j
            continue
        out.append(c)
        i += 1
    return "".join(out)
