"""Benchmark: `pa summary --json` on a large generated Nsight Systems profile.

Generates 1,000,000 kernels, 100,000 copies, 200,000 API calls and 50,000 NVTX ranges, then times
`pa summary --json` (in a child process, so its peak RSS can be read) against a floor measured in
the same run: plain sqlite3 fetching start, end, device, stream and name id of every kernel row.
Floor and pa runs are interleaved (--repeat, default 3) and the best of each is compared.
Target (issue 16, was 3x in issue 2): summary <= 2x the floor, start-up included, peak memory <= 400 MB.
Prints the ratio.

Run: python benchmarks/summary_nsys.py [--kernels N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from pathlib import Path

from floor_vs_pa import compare_with_floor, work_dir


def floor_fetch(path: Path) -> float:
    """Seconds for one plain fetch of the kernel columns interval merging needs."""
    t0 = time.perf_counter()
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    rows = conn.execute('SELECT start, "end", deviceId, streamId, demangledName '
                        "FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchall()
    conn.close()
    assert rows
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", type=int, default=1_000_000)
    ap.add_argument("--copies", type=int, default=100_000)
    ap.add_argument("--api-calls", type=int, default=200_000)
    ap.add_argument("--nvtx", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=3, help="interleaved floor and pa runs; the best of each counts")
    ap.add_argument("--keep", type=Path, default=None, help="directory to keep the generated file in")
    args = ap.parse_args()

    workdir = work_dir(args.keep, "pa-bench-")
    from testkit.nsys_writer import write_nsys
    from testkit.scenarios import scaled

    path = workdir / "bench_nsys.sqlite"
    if not path.exists():
        t0 = time.perf_counter()
        write_nsys(scaled(args.kernels, args.copies, args.api_calls, args.nvtx), path)
        print(f"generated {path} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s")

    compare_with_floor(path, floor_fetch, f"plain sqlite3 fetch of {args.kernels} kernel rows", args.repeat,
                       max_ratio=2, max_mb=400)
    return 0


if __name__ == "__main__":
    sys.exit(main())
