"""One tool turn with and without --redact on an NVTX-heavy profile: python benchmarks/redact_speed.py [PROFILE].

Default profile: ../shared/profiles/nsys/nsys2026.2_h100_2proc_nvtx_slice.sqlite (16,582 distinct
NVTX names), when present. The turn is what a model typically asks first: the markers and kernels
tables and a SQL query over the markers view. Target: --redact within 3× the unredacted turn (it
took 30 s against 0.1 s when every new placeholder recompiled one regular expression over all names).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the testkit lives in tests/

from conftest import real_nsys_profile  # the one way to find ../shared/profiles

from pa.llm.redact import from_summary
from pa.llm.sql_tool import SqlSandbox
from pa.llm.tools import ToolBox
from pa.metrics.summarize import summarize
from pa.rules.engine import evaluate, load_ruleset

DEFAULT = real_nsys_profile("nsys2026.2_h100_2proc_nvtx_slice.sqlite")
CALLS = [("summary_table", {"table": "markers"}), ("summary_table", {"table": "kernels"}),
         ("sql_query", {"sql": "SELECT name, count(*) AS calls_count, sum(\"end\" - start) AS total_ns "
                               "FROM pa_markers GROUP BY name ORDER BY total_ns DESC LIMIT 200"})]


def turn(path: Path, summary: object, rules: object, redact: bool) -> float:
    red = from_summary(summary, redact)
    with SqlSandbox(path, redactor=red) as sb:
        box = ToolBox(summary, rules, red, sb)
        t0 = time.perf_counter()
        for i, (name, args) in enumerate(CALLS):
            box.run(f"c{i}", name, args)
        return time.perf_counter() - t0


def main() -> int:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    if not path.is_file():
        print(f"no profile at {path}; pass one")
        return 2
    summary = summarize(path)
    rules = evaluate(summary, load_ruleset())
    names = len(summary.markers.by_name) if summary.markers else 0
    plain = min(turn(path, summary, rules, False) for _ in range(3))
    redacted = min(turn(path, summary, rules, True) for _ in range(3))
    ratio = redacted / plain if plain else float("inf")
    print(f"{path.name}: {names:,} distinct marker names; one tool turn {plain * 1000:.0f} ms, "
          f"with --redact {redacted * 1000:.0f} ms ({ratio:.1f}×)")
    print(f"target ≤ 3×: {'met' if ratio <= 3 else 'NOT MET'}")
    return 0 if ratio <= 3 else 1


if __name__ == "__main__":
    sys.exit(main())
