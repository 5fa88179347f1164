"""HOOK (issue 7, for the LLM engineer): one validated LLM call that explains a comparison.

`pa compare` calls `explain(comparison, enabled)` once, after the deterministic diff and narrative.
Until `engine.llm.compare.explain_comparison` exists this returns (None, reason) and the output
keeps only the deterministic narrative, saying why.

Contract for `engine.llm.compare.explain_comparison(doc: dict) -> LlmExplanation | str | None`:

- input: the validated comparison document (`Comparison.model_dump(mode="json")`), nothing else:
  no profile access, no tools; the explanation may use only the numbers in that document;
- exactly one model call, its answer validated by pydantic (LlmExplanation);
- return a str to say why it stayed deterministic (no key, failure), None when not configured.

The engine re-checks the answer here (`ungrounded`): every number of the text must match a number
of the comparison (as given, in ms for ns fields, or as a percentage), else it is flagged in
`LlmExplanation.ungrounded_numbers` and a warning.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from typing import Any

from engine.compare.model import Comparison, LlmExplanation

_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?")


def _numbers(node: Any) -> Iterator[float]:
    if isinstance(node, bool):
        return
    if isinstance(node, (int, float)):
        yield float(node)
        yield float(node) / 1e6            # ns shown in ms
        yield float(node) / 1e3            # ns shown in µs
        yield float(node) / 1e9            # ns shown in s
    elif isinstance(node, dict):
        for v in node.values():
            yield from _numbers(v)
    elif isinstance(node, list):
        for v in node:
            yield from _numbers(v)


def ungrounded(text: str, doc: dict[str, Any], rel: float = 0.01) -> list[str]:
    """Numbers in `text` that match no number of `doc` within `rel` (or its rounding), in text order."""
    known = sorted({abs(x) for x in _numbers(doc)})
    out = []
    for tok in _NUMBER.findall(text):
        v = abs(float(tok.replace(",", "")))
        digits = len(tok.split(".")[1]) if "." in tok else 0
        tol = max(rel * v, 0.5 * 10 ** -digits)
        if not any(abs(v - k) <= tol for k in known):
            out.append(tok)
    return out


def explain(c: Comparison, enabled: bool) -> tuple[LlmExplanation | None, str | None]:
    """HOOK: the LLM explanation of `c`, or (None, reason)."""
    if not enabled:
        return None, "--no-llm given"
    if c.identical or c.within_noise:
        return None, "nothing to explain: no change above the noise floor"
    try:
        module = importlib.import_module("engine.llm.compare")
    except ImportError:
        return None, "LLM explanation of comparisons not available in this version of pa"
    fn = getattr(module, "explain_comparison", None)
    if not callable(fn):
        return None, "LLM explanation of comparisons not available in this version of pa"
    doc = c.model_dump(mode="json")
    answer = fn(doc)
    if answer is None or isinstance(answer, str):
        return None, answer or "LLM explanation skipped (no API key or provider configured)"
    answer = LlmExplanation.model_validate(answer.model_dump() if hasattr(answer, "model_dump") else answer)
    return answer.model_copy(update={"ungrounded_numbers": ungrounded(answer.text, doc)}), None
