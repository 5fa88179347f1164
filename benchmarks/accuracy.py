"""Accuracy of the built-in rules on every planted scenario, both vendors: python benchmarks/accuracy.py."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the testkit lives in tests/

from testkit.accuracy import FORMATS, rates, run


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in FORMATS:
            scores = run(Path(tmp), formats=(fmt,))
            print(f"== {fmt}")
            for s in scores:
                mark = {True: "ok ", False: "MISS", None: "   "}[s.hit_at_1]
                top = ", ".join(f"{rid}:{t}:{imp}" for rid, t, imp in s.ranked[:3]) or "(none)"
                fp = f" FP={s.false_positives}" if s.false_positives else ""
                print(f"  {mark} {s.scenario:<26} expected={s.expected} top3=[{top}]{fp}")
            for k, v in rates(scores).items():
                print(f"  {k}: {v if not isinstance(v, float) else f'{v:.0%}'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
