"""Shared by the benchmarks: their work directory and the testkit, pa's children with cached
bytecode, and (summary benchmarks) `pa summary --json` timed against a floor measured in the same run.

The machine is shared and its speed drifts by tens of percent within a minute, so floor and pa
runs are interleaved and the best of each is compared, as timeit does. pa runs in a child process
so that its peak RSS can be read with RUSAGE_CHILDREN.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def work_dir(keep: Path | None, prefix: str) -> Path:
    """The directory for the generated profile (`--keep`, else a fresh temporary one), with the
    testkit (tests/testkit, outside the product) importable."""
    sys.path.insert(0, str(ROOT / "tests"))
    workdir = keep or Path(tempfile.mkdtemp(prefix=prefix))
    workdir.mkdir(parents=True, exist_ok=True)
    return workdir


def cached_bytecode_env(cache_dir: Path) -> dict[str, str]:
    """The environment for pa's children, with their bytecode cached under `cache_dir`.

    As an installed wheel has it, and never in the checkout: with PYTHONDONTWRITEBYTECODE set, as on
    the shared machine, every run compiled pa's modules from source (~60-100 ms of start-up no user
    pays).
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache_dir)
    return env


def children_cpu() -> float:
    """CPU seconds (user + system) of the children waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def compare_with_floor(path: Path, floor: Callable[[Path], float], floor_label: str, repeat: int,
                       max_ratio: float, max_mb: int) -> None:
    """Print every run, the best floor, the best pa time, its peak RSS, and both against their targets.

    Also the CPU seconds of each (the floor's in this process, pa's in its child): on a loaded
    machine the wall-clock ratio mostly measures the load, the CPU ratio much less so (pa runs on
    two threads, so its CPU time exceeds its wall time on an idle machine).
    """
    floor(path)  # warm the page cache so both measurements read from memory
    env = cached_bytecode_env(path.parent / "pycache")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "pa")],
                   check=True, stdout=subprocess.DEVNULL, env=env)
    floors, runs, floor_cpu, pa_cpu = [], [], [], []
    for _ in range(repeat):
        c0 = time.process_time()
        floors.append(floor(path))
        floor_cpu.append(time.process_time() - c0)
        c0 = children_cpu()
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pa.cli", "summary", "--json", str(path)],
                       check=True, stdout=subprocess.DEVNULL, env=env)
        runs.append(time.perf_counter() - t0)
        pa_cpu.append(children_cpu() - c0)
    best_floor, elapsed = min(floors), min(runs)
    print("floor runs: " + ", ".join(f"{t:.2f}" for t in floors) + " s; pa runs: "
          + ", ".join(f"{t:.2f}" for t in runs) + " s")
    print("floor CPU: " + ", ".join(f"{t:.2f}" for t in floor_cpu) + " s; pa CPU: "
          + ", ".join(f"{t:.2f}" for t in pa_cpu) + f" s (best {min(pa_cpu) / min(floor_cpu):.2f}x the floor's)")
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    ratio = elapsed / best_floor
    print(f"floor ({floor_label}): {best_floor:.2f} s")
    print(f"pa summary --json: {elapsed:.2f} s, peak RSS {peak_mb:.0f} MB")
    print(f"ratio: {ratio:.2f}x the floor (target <= {max_ratio:g}x: {'met' if ratio <= max_ratio else 'NOT met'}); "
          f"peak {peak_mb:.0f} MB (target <= {max_mb} MB: {'met' if peak_mb <= max_mb else 'NOT met'})")
    # pa's CPU time spread perfectly over the machine's cores is the least wall time any schedule of
    # the same work could reach: when that alone is above the target, only less work can meet it.
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    bound = min(pa_cpu) / cores
    print(f"{cores}-core bound: pa's least CPU time / {cores} = {bound:.2f} s = {bound / best_floor:.2f}x the floor "
          "(no schedule of this work on these cores finishes sooner)")
