"""The LLM explanation of a comparison: one validated call, then the engine's re-checks.

`pa compare` calls `explain(comparison, enabled, options)` once, after the deterministic diff
and narrative. It returns (None, reason) when there is nothing to explain, the LLM is off or not
configured, or the call failed; the output then keeps only the deterministic narrative, saying why.

Contract of `pa.llm.compare.explain_comparison(doc, options=None) -> LlmExplanation | str | None`:

- input: the validated comparison document (`Comparison.model_dump(mode="json")`), nothing else:
  no profile access, no tools; the explanation may use only the numbers in that document;
- exactly one model call, its answer validated by pydantic;
- return a str to say why it stayed deterministic (no key, failure), None when not configured.

The engine re-checks the answer here:
- `ungrounded` (pa.llm.compare): every number of the text must match a number of the comparison, as given, as
  shown to the model (rounded to 1 and 3 decimals; ns in ms to 3 decimals), or in ms / µs / s for
  ns fields (any value / 1e6, 1e3, 1e9), within the tolerance of
  `pa.llm.output.grounded` (1 % relative), signs ignored, integers 0..16 not checked; the others
  are flagged in `LlmExplanation.ungrounded_numbers` and a warning (the text is kept);
- key-difference ids the text claims to discuss must exist (K1, ...); unknown ones are dropped with
  a warning.
"""

from __future__ import annotations

from typing import Any

from pa.compare.model import Comparison
from pa.llm.model import LlmExplanation


def explain(c: Comparison, enabled: bool,
            options: dict[str, Any] | None = None) -> tuple[LlmExplanation | None, str | None]:
    """The LLM explanation of `c`, or (None, reason); re-check warnings go to `c.warnings` (`llm: ...`)."""
    if not enabled:
        return None, "--no-llm given"
    if c.identical or c.within_noise:
        return None, "nothing to explain: no change above the noise floor"
    from pa.llm.compare import explain_comparison, ungrounded  # the LLM clients load only when asked

    doc = c.model_dump(mode="json")
    answer = explain_comparison(doc) if options is None else explain_comparison(doc, options=options)
    if answer is None or isinstance(answer, str):
        return None, answer or "LLM explanation skipped (no API key or provider configured)"
    answer = LlmExplanation.model_validate(answer.model_dump() if hasattr(answer, "model_dump") else answer)
    known = {k.id for k in c.key_differences}
    unknown = [i for i in answer.key_differences if i not in known]
    if unknown:
        c.warnings.append(f"llm: unknown key-difference ids dropped: {', '.join(unknown)}")
    ids = list(dict.fromkeys(i for i in answer.key_differences if i in known))
    loose = ungrounded(answer.text, doc)
    if loose:
        c.warnings.append(f"llm: numbers not found in the comparison: {', '.join(loose)}")
    return answer.model_copy(update={"ungrounded_numbers": loose, "key_differences": ids}), None
