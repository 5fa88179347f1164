"""Benchmark: how long `pa` takes to start, against Python importing sqlite3 and numpy.

Prints, in one run, the best of --repeat interleaved runs of
  - the baseline `python -c "import sqlite3, numpy"`,
  - `pa --help` (target: <= 1.5x the baseline; it imports click alone),
  - `pa summary` of a ~1 MB generated Nsight Systems profile (target: <= 3x the baseline),
  - for reference (no target), Python importing only the libraries `pa summary` of that profile
    needs, without any of pa: click, pydantic (and one model class, which loads its schema
    machinery), jinja2's sandbox, yaml and rich's console and table. This is the part of the
    summary's start-up pa cannot remove while it uses those libraries;
each in a fresh interpreter (`python -m pa.cli`, the same code the `pa` script runs).
The children may cache bytecode (under a private PYTHONPYCACHEPREFIX in the work directory, never
in the checkout), as an installed wheel has it: with PYTHONDONTWRITEBYTECODE set, as on the shared
machine, every run would compile pa's modules from source (~60-100 ms), which no user pays.
A first untimed run of each case fills that cache.
Run: python benchmarks/startup.py [--repeat N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from floor_vs_pa import cached_bytecode_env, children_cpu, work_dir

# What `pa summary` imports besides pa itself (pa/cli.py, pa/metrics/model.py, pa/sandbox.py,
# pa/metrics/hardware.py, pa/summary_render.py), plus one pydantic model: the first model class
# imports pydantic's schema machinery and scans the installed distributions for plugins.
LIBRARIES_ALONE = """
import sqlite3, numpy, click, jinja2.sandbox, yaml, rich.console, rich.table
from pydantic import BaseModel
class Model(BaseModel):
    value: int
"""


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one child process (output discarded; a failure stops).

    CPU time moves much less than wall time with the load of a shared machine.
    """
    before = children_cpu()
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t0, children_cpu() - before


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7, help="interleaved runs; the best of each counts")
    ap.add_argument("--keep", type=Path, default=None, help="directory to keep the generated profile in")
    args = ap.parse_args()

    workdir = work_dir(args.keep, "pa-startup-")
    from testkit.nsys_writer import write_nsys
    from testkit.scenarios import scaled

    profile = workdir / "startup_1mb.sqlite"
    if not profile.exists():
        write_nsys(scaled(11_000, 1_100, 2_200, 550), profile)
    size_mb = profile.stat().st_size / 1e6

    py = sys.executable
    cases = {
        "baseline: python -c 'import sqlite3, numpy'": [py, "-c", "import sqlite3, numpy"],
        "pa --help": [py, "-m", "pa.cli", "--help"],
        f"pa summary ({size_mb:.1f} MB profile)": [py, "-m", "pa.cli", "summary", str(profile)],
        "reference: the libraries alone (no pa)": [py, "-c", LIBRARIES_ALONE],
    }
    targets = [None, 1.5, 3.0, None]
    env = cached_bytecode_env(workdir / "pycache")
    for argv in cases.values():
        run_once(argv, env)  # fills the bytecode cache; not timed
    best = dict.fromkeys(cases, float("inf"))
    best_cpu = dict.fromkeys(cases, float("inf"))
    for _ in range(args.repeat):
        for name, argv in cases.items():
            wall, cpu = run_once(argv, env)
            best[name] = min(best[name], wall)
            best_cpu[name] = min(best_cpu[name], cpu)
    base, base_cpu = best[next(iter(cases))], best_cpu[next(iter(cases))]
    ok = True
    for (name, secs), target in zip(best.items(), targets, strict=True):
        ratio = secs / base
        verdict = "" if target is None else (f"  target <= {target}x: " + ("met" if ratio <= target else "NOT met"))
        ok &= target is None or ratio <= target
        print(f"{name:<45} {secs * 1000:7.0f} ms  {ratio:5.2f}x  (CPU {best_cpu[name] * 1000:4.0f} ms, "
              f"{best_cpu[name] / base_cpu:5.2f}x){verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
