"""Stage 1 per rank in parallel: a process pool by default, or a dask.distributed cluster.

Each worker opens one rank file read-only, computes its ProfileSummary and reads its collective MPI
calls, and sends back only those (a summary is kilobytes; the relations never leave the worker), so
the parent's memory grows with the number of ranks, not with their size.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from engine.errors import UserError
from engine.metrics.model import ProfileSummary
from engine.metrics.summarize import summarize
from engine.phases import DEFAULT_MAX_PHASES
from engine.profile.detect import detect
from engine.profile.open import open_readonly
from engine.profile.queryset import resolve
from engine.profile.relations import Relations
from engine.ranks.discover import assign_ranks, discover
from engine.ranks.model import Collectives, RankResult, RankSet

VALID = 'start IS NOT NULL AND "end" IS NOT NULL AND "end" >= start'


def collective_calls(path: Path) -> Collectives:
    """Collective MPI calls of one file, per name in call (start) order."""
    conn = open_readonly(path)
    try:
        fmt = detect(conn, path)
        rel = Relations.bind(conn, resolve(fmt.format, fmt.schema_version))
        if not rel.available("mpi_calls"):
            return Collectives()
        rows = rel.query(f"SELECT name, start, \"end\" FROM pa_mpi_calls "
                         f"WHERE kind = 'collective' AND {VALID} ORDER BY name, start")
    finally:
        conn.close()
    out: dict[str, tuple[list[int], list[int]]] = {}
    for name, s, e in rows:
        lists = out.setdefault(str(name), ([], []))
        lists[0].append(int(s))
        lists[1].append(int(e))
    return Collectives({n: (np.array(s, dtype=np.int64), np.array(e, dtype=np.int64))
                        for n, (s, e) in out.items()})


def stage1(path: Path, max_phases: int = DEFAULT_MAX_PHASES) -> Stage1:
    """Summary and collectives of one rank file (runs in a worker)."""
    return summarize(path, max_phases=max_phases), collective_calls(path)


Stage1 = tuple[ProfileSummary, Collectives]


def _run_dask(paths: Sequence[Path], max_phases: int, scheduler: str | None) -> list[Stage1]:
    try:
        from dask.distributed import Client
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise UserError("--executor dask needs the optional extra: pip install 'pa[dask]'") from exc
    client = Client(scheduler) if scheduler else Client(processes=True)
    try:
        futures = client.map(stage1, list(paths), max_phases=max_phases, pure=False)
        return list(client.gather(futures))
    finally:
        client.close()


def summarize_ranks(paths: Iterable[Path], workers: int | None = None, executor: str = "process",
                    scheduler: str | None = None, max_phases: int = DEFAULT_MAX_PHASES) -> RankSet:
    """Stage 1 of every rank file (directories expanded), in parallel; ranks assigned (discover.py).

    workers: processes (None: all cores; 1: in this process, no pool). executor: process or dask
    (scheduler: a dask.distributed address; None starts a local cluster).
    """
    files = discover(paths)
    if not files:
        raise UserError("no profile files given")
    if executor == "dask":
        results = _run_dask(files, max_phases, scheduler)
    elif executor != "process":
        raise UserError(f"unknown executor {executor!r}; choose from process, dask")
    elif workers == 1 or len(files) == 1:
        results = [stage1(f, max_phases) for f in files]
    else:
        n = min(workers or os.cpu_count() or 1, len(files))
        with ProcessPoolExecutor(max_workers=n) as pool:
            results = list(pool.map(stage1, files, [max_phases] * len(files)))
    ranks, sources, warnings = assign_ranks(files, [s.profile.rank for s, _ in results])
    out = [RankResult(rank=r, rank_source=src, summary=s, collectives=c)
           for r, src, (s, c) in zip(ranks, sources, results, strict=True)]
    out.sort(key=lambda x: x.rank)
    return RankSet(out, warnings)
