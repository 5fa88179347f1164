"""Benchmark: `pa summary --json` on a large generated rocpd (rocprofv3) database.

Real rocprofv3 captures hold ~24 M regions, 400 k dispatches and 530 k copies per rank, and almost
all of pa's time on them goes into scanning `rocpd_region`. This generates (once; reuse it with
--keep DIR) a file of 20,000,000 API/marker regions, 400,000 dispatches and 500,000 copies with
`write_rocpd_bulk`, then times `pa summary --json` in a child process (so its peak RSS can be read
with RUSAGE_CHILDREN) against a floor measured in the same run: one plain SQLite pass counting the
rows of `rocpd_region`, `rocpd_kernel_dispatch` and `rocpd_memory_copy` through their views.
Floor and pa runs are interleaved (--repeat, default 3) and the best of each is compared.
Target (issue 3): summary <= 3x the floor, peak memory <= 1 GB. Prints the ratio.

Run: python benchmarks/summary_rocpd.py [--regions N] [--flavour rocprof-sys] [--keep DIR]
Develop against --regions 2000000 first: the 20 M file takes minutes to write and to read.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from floor_vs_pa import compare_with_floor


def floor_count(path: Path) -> float:
    """Seconds for one plain count of the three big tables, through the un-suffixed views."""
    t0 = time.perf_counter()
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    counts = [conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
              for t in ("rocpd_region", "rocpd_kernel_dispatch", "rocpd_memory_copy")]
    conn.close()
    assert counts[0]
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--regions", type=int, default=20_000_000)
    ap.add_argument("--dispatches", type=int, default=400_000)
    ap.add_argument("--copies", type=int, default=500_000)
    ap.add_argument("--flavour", default="rocprofv3", choices=("rocprofv3", "rocprof-sys"))
    ap.add_argument("--repeat", type=int, default=3, help="interleaved floor and pa runs; the best of each counts")
    ap.add_argument("--keep", type=Path, default=None, help="directory to keep the generated file in")
    args = ap.parse_args()

    from engine.synth.rocpd_writer import write_rocpd_bulk

    workdir = args.keep or Path(tempfile.mkdtemp(prefix="pa-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"bench_rocpd_{args.flavour}_{args.regions}_{args.dispatches}_{args.copies}.db"
    if not path.exists():
        t0 = time.perf_counter()
        tmp = path.with_suffix(".partial")
        write_rocpd_bulk(tmp, args.regions, args.dispatches, args.copies, flavour=args.flavour)
        tmp.rename(path)  # a killed run never leaves a half-written file behind to be reused
        print(f"generated {path} ({path.stat().st_size / 1e9:.2f} GB) in {time.perf_counter() - t0:.0f} s")

    label = f"plain sqlite3 count of {args.regions} regions, {args.dispatches} dispatches, {args.copies} copies"
    compare_with_floor(path, floor_count, label, args.repeat, max_ratio=3, max_mb=1024)
    return 0


if __name__ == "__main__":
    sys.exit(main())
