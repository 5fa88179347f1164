"""Stage 1 per rank in parallel: a process pool by default, or a dask.distributed cluster.

Each worker opens one rank file read-only, computes its ProfileSummary and reads its collective MPI
calls, and sends back only those (a summary is kilobytes; the relations never leave the worker), so
the parent's memory grows with the number of ranks, not with their size.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np

from pa.errors import UserError
from pa.metrics.marker_names import DEFAULT_NAMING, MarkerNaming
from pa.metrics.model import ProfileSummary
from pa.metrics.phases.detect import DEFAULT_MAX_PHASES
from pa.metrics.summarize import summarize
from pa.metrics.thresholds import DEFAULT_THRESHOLDS, Thresholds
from pa.profile.detect import detect
from pa.profile.open import open_readonly
from pa.profile.queryset import resolve
from pa.profile.relations import VALID, Relations
from pa.ranks.discover import assign_ranks, discover
from pa.ranks.model import Collectives, RankResult, RankSet


def collective_calls(path: Path, query_dirs: Sequence[Path] = ()) -> Collectives:
    """Collective MPI calls of one file, per name in call (start) order."""
    conn = open_readonly(path)
    try:
        fmt = detect(conn, path)
        rel = Relations.bind(conn, resolve(fmt.format, fmt.schema_version, query_dirs=query_dirs))
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


def stage1(path: Path, max_phases: int = DEFAULT_MAX_PHASES, keep_paths: bool = False,
           marker_naming: MarkerNaming = DEFAULT_NAMING, thresholds: Thresholds = DEFAULT_THRESHOLDS,
           query_dirs: Sequence[Path] = ()) -> Stage1:
    """Summary and collectives of one rank file (runs in a worker)."""
    return (summarize(path, keep_paths=keep_paths, max_phases=max_phases, marker_naming=marker_naming,
                      thresholds=thresholds, query_dirs=query_dirs),
            collective_calls(path, query_dirs))


Stage1 = tuple[ProfileSummary, Collectives]


Progress = Callable[[int, int], None]   # (files done, files in all), called as each file finishes


def _run_dask(paths: Sequence[Path], max_phases: int, keep_paths: bool, scheduler: str | None,
              progress: Progress | None, naming: MarkerNaming, thresholds: Thresholds,
              query_dirs: Sequence[Path]) -> list[Stage1]:
    try:
        from dask.distributed import Client
        from dask.distributed import as_completed as dask_completed
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise UserError("--executor dask needs the optional extra: pip install 'pa[dask]'") from exc
    try:
        client = Client(scheduler) if scheduler else Client(processes=True)
    except (OSError, TimeoutError) as exc:
        raise UserError(f"--scheduler {scheduler}: cannot connect to the dask scheduler ({exc})") from exc
    try:
        futures = client.map(stage1, list(paths), max_phases=max_phases, keep_paths=keep_paths,
                             marker_naming=naming, thresholds=thresholds, query_dirs=tuple(query_dirs), pure=False)
        for done, _ in enumerate(dask_completed(futures), start=1):
            if progress:
                progress(done, len(futures))
        return list(client.gather(futures))
    finally:
        client.close()


def _run_pool(files: Sequence[Path], workers: int | None, max_phases: int, keep_paths: bool,
              progress: Progress | None, naming: MarkerNaming, thresholds: Thresholds,
              query_dirs: Sequence[Path]) -> list[Stage1]:
    n = min(workers or os.cpu_count() or 1, len(files))
    with ProcessPoolExecutor(max_workers=n) as pool:
        futures = [pool.submit(stage1, f, max_phases, keep_paths, naming, thresholds, tuple(query_dirs))
                   for f in files]
        for done, _ in enumerate(as_completed(futures), start=1):
            if progress:
                progress(done, len(files))
        return [f.result() for f in futures]   # in file order, whatever order they finished in


def summarize_ranks(paths: Iterable[Path], workers: int | None = None, executor: str = "process",
                    scheduler: str | None = None, max_phases: int = DEFAULT_MAX_PHASES,
                    keep_paths: bool = False, progress: Progress | None = None,
                    marker_naming: MarkerNaming = DEFAULT_NAMING,
                    thresholds: Thresholds = DEFAULT_THRESHOLDS, query_dirs: Sequence[Path] = ()) -> RankSet:
    """Stage 1 of every rank file (directories expanded), in parallel; ranks assigned (discover.py).

    workers: processes (None: all cores; 1: in this process, no pool). executor: process or dask
    (scheduler: a dask.distributed address; None starts a local cluster). progress(done, total) is
    called in the parent as each file finishes. query_dirs: user query directories over the bundled sets.
    """
    files = discover(paths)
    if not files:
        raise UserError("no profile files given")
    if executor == "dask":
        results = _run_dask(files, max_phases, keep_paths, scheduler, progress, marker_naming, thresholds,
                            query_dirs)
    elif executor != "process":
        raise UserError(f"unknown executor {executor!r}; choose from process, dask")
    elif workers == 1 or len(files) == 1:
        results = []
        for i, f in enumerate(files, start=1):
            results.append(stage1(f, max_phases, keep_paths, marker_naming, thresholds, query_dirs))
            if progress:
                progress(i, len(files))
    else:
        results = _run_pool(files, workers, max_phases, keep_paths, progress, marker_naming, thresholds,
                            query_dirs)
    ranks, sources, warnings = assign_ranks(files, [s.profile.rank for s, _ in results])
    out = [RankResult(rank=r, rank_source=src, summary=s, collectives=c, path=f)
           for r, src, (s, c), f in zip(ranks, sources, results, files, strict=True)]
    out.sort(key=lambda x: x.rank)
    return RankSet(out, warnings)
