"""Deterministic narrative of a Comparison: fixed sentence templates filled with its numbers.

No free text is generated: the same two summaries always give the same sentences, in the same order
(verdict, identity / noise, span, iterations, the top key differences, kernels new and vanished,
findings that appeared or went away). A key difference of the ranks block (kind "ranks") carries its
own sentence (pa.compare.ranks: who is late, who waits how long for it), used as it is, wherever
it ranks. A percentage that would mean nothing (a change from ~0) is replaced by the change's note
("new", "from ~0").
"""

from __future__ import annotations

from pa import formatting
from pa.compare.model import Comparison

TOP_KEYS = 5
_T = {
    "identical": "The two captures are identical (same sha256); there is nothing to compare.",
    "noise": "No change exceeds the {floor:g} % noise floor: the runs are the same within measurement noise.",
    "verdict": "Verdict: {verdict}. {reason}",
    "span": "The run got {dir} by {delta} ({pct}): {before} → {after}.",
    "iter": "Iterations ({name!r}, {nb} in BEFORE, {na} in AFTER): median {before} → {after} ({pct}){noise}.",
    "key": "{what}{phase}: {before} → {after} ({delta}{pct}).",
    "new": "{n} kernel(s) appear only in AFTER, {m} only in BEFORE.",
    "mode": "Compared {mode_text} ({reason}).",
    "appeared": "Finding {rule} ({title}) appeared in AFTER{frac}.",
    "disappeared": "Finding {rule} ({title}) from BEFORE is gone in AFTER{frac}.",
    "moved": "Finding {rule} ({title}) {status}{frac}.",
}


def _pair(before: float, after: float) -> dict[str, str]:
    """The two durations of a sentence (pa.formatting: units, separators, digits that tell them apart)."""
    b, a = formatting.duration_pair(before, after)
    return {"before": b, "after": a}


def _pct(pct: float | None, note: str | None) -> str:
    return f"{pct:+.1f} %" if pct is not None else (note or "n/a")


_VERDICT = {"regression": "regression", "improvement": "improvement", "within_noise": "within noise"}


def narrate(c: Comparison) -> list[str]:
    """Sentences for a Comparison, in a fixed order."""
    if c.identical:
        return [_T["identical"]]
    out: list[str] = [c.verdict_reason if c.verdict == "not_comparable"
                      else _T["verdict"].format(verdict=_VERDICT[c.verdict], reason=c.verdict_reason)]
    if c.within_noise:
        out.append(_T["noise"].format(floor=c.noise_floor_pct))
    span = next(x for x in c.overview if x.metric == "span")
    if span.significant and span.delta is not None and span.before is not None and span.after is not None:
        out.append(_T["span"].format(dir="faster" if span.delta < 0 else "slower",
                                     delta=formatting.duration(abs(span.delta)), pct=_pct(span.delta_pct, span.note),
                                     **_pair(span.before, span.after)))
    it = c.iterations
    if it is not None and it.median.before is not None and it.median.after is not None:
        out.append(_T["iter"].format(name=it.name, nb=formatting.count(it.before_count),
                                     na=formatting.count(it.after_count), **_pair(it.median.before, it.median.after),
                                     pct=_pct(it.median.delta_pct, it.median.note),
                                     noise="" if it.median.significant else ", within noise"))
    out.append(_T["mode"].format(mode_text="phase by phase" if c.mode == "per_phase" else "the whole run",
                                 reason=c.mode_reason))
    # the top key differences, and the ranks block's (who is late, who waits) wherever they rank
    for k in [k for n, k in enumerate(c.key_differences) if n < TOP_KEYS or k.kind == "ranks"]:
        if k.sentence:
            out.append(k.sentence)
            continue
        pct = f", {_pct(k.delta_pct, k.note)}" if k.delta_pct is not None or k.note else ""
        phase = f" in phase {k.phase}" if k.phase else ""
        out.append(_T["key"].format(what=_label(k.what, metric=k.kind != "kernel"), phase=phase,
                                    **_pair(k.before_ns, k.after_ns), delta=formatting.signed_duration(k.delta_ns),
                                    pct=pct))
    new = sum(1 for k in c.kernels if k.status == "new")
    gone = sum(1 for k in c.kernels if k.status == "vanished")
    if new or gone:
        out.append(_T["new"].format(n=formatting.count(new), m=formatting.count(gone)))
    for h in c.hypotheses or []:
        if h.status == "unchanged":
            continue
        if h.status == "appeared":
            frac = f" ({h.after_pct:.1f} % of the run)" if h.after_pct is not None else ""
            out.append(_T["appeared"].format(rule=h.rule_id, title=h.title, frac=frac))
        elif h.status == "disappeared":
            frac = f" (was {h.before_pct:.1f} % of the run)" if h.before_pct is not None else ""
            out.append(_T["disappeared"].format(rule=h.rule_id, title=h.title, frac=frac))
        else:
            frac = (f": {h.before_pct:.1f} % → {h.after_pct:.1f} % of the run"
                    if h.before_pct is not None and h.after_pct is not None else "")
            out.append(_T["moved"].format(rule=h.rule_id, title=h.title, status=h.status, frac=frac))
    return out


_ACRONYMS = {"gpu": "GPU", "cpu": "CPU", "mpi": "MPI", "api": "API", "nccl": "NCCL", "jit": "JIT"}


def _label(what: str, metric: bool = True) -> str:
    """A key difference as a sentence starts it: acronyms kept whole ("GPU busy", never "Gpu busy").

    Acronyms are restored in pa's metric names only: a kernel's name ("kernel void run<gpu>") is the
    profile's and is printed as it is, only pa's first word capitalised.
    """
    words = [_ACRONYMS.get(w, w) if metric else w for w in what.split(" ")]
    return words[0][:1].upper() + words[0][1:] + "".join(" " + w for w in words[1:])
