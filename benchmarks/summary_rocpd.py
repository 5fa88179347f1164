"""Benchmark: `pa summary --json` on a large generated rocpd (rocprofv3) database.

Real rocprofv3 captures hold ~24 M regions, 400 k dispatches and 530 k copies per rank. This
generates (once; reuse it with --keep DIR) a file of 20,000,000 regions, 400,000 dispatches and
500,000 copies with `write_rocpd_bulk`, laid out as rocprofv3 writes it (the writer's DDL, one
launch call per dispatch and one memcpy call per copy linked through stack_id, one region in ten a
rocTX range with its text in extdata, HSA calls for the rest), then times `pa summary --json` in a
child process (so its peak RSS can be read with RUSAGE_CHILDREN) against a floor measured in the
same run.

The floor (issue 16) is what any reader of these facts must at least do: one SQLite statement that
reads every region's start, end and name id and its event's category (regions joined to their
events on id and guid, as pa must, aggregated with sum/max: no GROUP BY, so no sort), plus sums
over every dispatch's and copy's start and end. Floor and pa runs are interleaved (--repeat,
default 3) and the best of each is compared. Targets: summary <= 3x the floor, peak memory <= 1 GB.
Prints both.

Run: python benchmarks/summary_rocpd.py [--regions N] [--flavour rocprof-sys] [--keep DIR]
Develop against --regions 2000000 first: the 20 M file takes minutes to write and to read. Needs
the writers' DDL (../shared/reference/rocpd-ddl or $PA_ROCPD_DDL) to generate the file.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from pathlib import Path

from floor_vs_pa import compare_with_floor, work_dir

FLOOR_SQL = """
SELECT
    (SELECT sum(r.start) + sum(r."end") + max(r.name_id) + max(e.category_id)
     FROM rocpd_region r JOIN rocpd_event e ON e.id = r.event_id AND e.guid = r.guid),
    (SELECT sum(start) + sum("end") FROM rocpd_kernel_dispatch),
    (SELECT sum(start) + sum("end") FROM rocpd_memory_copy)
"""


def floor_read(path: Path) -> float:
    """Seconds for the floor statement, through the file's un-suffixed views."""
    t0 = time.perf_counter()
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    row = conn.execute(FLOOR_SQL).fetchone()
    conn.close()
    assert row[0] is not None
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

    workdir = work_dir(args.keep, "pa-bench-")
    from testkit.rocpd_writer import write_rocpd_bulk

    path = workdir / f"bench_rocpd16_{args.flavour}_{args.regions}_{args.dispatches}_{args.copies}.db"
    if not path.exists():
        t0 = time.perf_counter()
        tmp = path.with_suffix(".partial")
        write_rocpd_bulk(tmp, args.regions, args.dispatches, args.copies, flavour=args.flavour)
        tmp.rename(path)  # a killed run never leaves a half-written file behind to be reused
        print(f"generated {path} ({path.stat().st_size / 1e9:.2f} GB) in {time.perf_counter() - t0:.0f} s")

    label = (f"one statement over {args.regions} regions joined to their events, {args.dispatches} dispatches, "
             f"{args.copies} copies")
    compare_with_floor(path, floor_read, label, args.repeat, max_ratio=3, max_mb=1024)
    return 0


if __name__ == "__main__":
    sys.exit(main())
