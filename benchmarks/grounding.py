"""The grounding check against a battery of planted false numbers: python benchmarks/grounding.py.

Prints the false-accept rate (target ≤ 5 %) and the true-pass rate of the unit- and kind-aware,
scoped check (pa.llm.grounding), beside the old check (any number of the scope within 1 %,
units ignored) on the same battery, as the baseline.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from grounding_battery import rates, run_battery

from pa.llm.grounding import ungrounded
from pa.llm.output import ungrounded_numbers


def main() -> int:
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        claims = run_battery(Path(tmp))
    built = time.perf_counter() - t0
    t0 = time.perf_counter()
    new = rates(claims, lambda c: ungrounded(c.text, c.facts))
    checked = time.perf_counter() - t0
    old = rates(claims, lambda c: ungrounded_numbers(c.text, list(c.raw)))
    print(f"battery: {new['false_claims']} planted false and {new['true_claims']} true claims "
          f"(built in {built:.1f} s, checked in {checked * 1000:.0f} ms)")
    for label, r in (("typed, scoped check", new), ("old 1 % check (baseline)", old)):
        print(f"{label}: false accepts {r['false_accept_rate']:.1%}, true claims passed {r['true_pass_rate']:.1%}")
        print("  by family: " + ", ".join(f"{f} {v:.0%}" for f, v in r["by_family"].items()))
    if new["accepted_false"]:
        print("  accepted false (first): " + "; ".join(new["accepted_false"][:5]))
    ok = new["false_accept_rate"] <= 0.05
    print(f"target false accepts ≤ 5 %: {'met' if ok else 'NOT MET'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
