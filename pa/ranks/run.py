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
from typing import Any, TypeVar

import numpy as np

from pa.errors import UserError
from pa.metrics.marker_names import DEFAULT_NAMING, MarkerNaming
from pa.metrics.model import ProcessSummary, ProfileSummary
from pa.metrics.phases.detect import DEFAULT_MAX_PHASES
from pa.metrics.summarize import summarize
from pa.metrics.thresholds import DEFAULT_THRESHOLDS, Thresholds
from pa.profile.detect import detect
from pa.profile.open import open_readonly
from pa.profile.queryset import resolve
from pa.profile.relations import VALID, Relations
from pa.ranks.discover import assign_ranks, discover
from pa.ranks.gpu_collectives import gpu_collective_calls
from pa.ranks.model import Collectives, GpuCollectives, RankResult, RankSet
from pa.ranks.processes import rank_processes

T = TypeVar("T")


def collective_calls(path: Path, query_dirs: Sequence[Path] = (),
                     pid: int | None = None) -> tuple[Collectives, GpuCollectives]:
    """Collective MPI calls of one file (or one process of it), and its NCCL/RCCL collective kernels.

    MPI calls per name in call (start) order; the kernels as pa.ranks.gpu_collectives reads them.
    """
    conn = open_readonly(path)
    try:
        fmt = detect(conn, path)
        rel = Relations.bind(conn, resolve(fmt.format, fmt.schema_version, query_dirs=query_dirs))
        if pid is not None:
            rel = rel.of_process(pid)
        gpu = gpu_collective_calls(rel)
        if not rel.available("mpi_calls"):
            return Collectives(), gpu
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
                        for n, (s, e) in out.items()}), gpu


def stage1(path: Path, pid: int | None = None, *, max_phases: int = DEFAULT_MAX_PHASES, keep_paths: bool = False,
           marker_naming: MarkerNaming = DEFAULT_NAMING, thresholds: Thresholds = DEFAULT_THRESHOLDS,
           query_dirs: Sequence[Path] = ()) -> Stage1:
    """Summary and collectives of one rank: a file, or one process of a file (runs in a worker)."""
    mpi, gpu = collective_calls(path, query_dirs, pid)
    return (summarize(path, keep_paths=keep_paths, max_phases=max_phases, marker_naming=marker_naming,
                      thresholds=thresholds, query_dirs=query_dirs, process=pid), mpi, gpu)


Stage1 = tuple[ProfileSummary, Collectives, GpuCollectives]
Unit = tuple[Path, int | None]   # a rank: a file, or one process (pid) of a file


Progress = Callable[[int, int], None]   # (files done, files in all), called as each file finishes


def _run_dask(fn: Callable[..., T], args: Sequence[tuple[Any, ...]], scheduler: str | None,
              progress: Progress | None, kwargs: dict[str, Any]) -> list[T]:
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
        futures = [client.submit(fn, *a, **kwargs, pure=False) for a in args]
        for done, _ in enumerate(dask_completed(futures), start=1):
            if progress:
                progress(done, len(futures))
        return list(client.gather(futures))
    finally:
        client.close()


def _run_pool(fn: Callable[..., T], args: Sequence[tuple[Any, ...]], workers: int | None,
              progress: Progress | None, kwargs: dict[str, Any]) -> list[T]:
    n = min(workers or os.cpu_count() or 1, len(args))
    with ProcessPoolExecutor(max_workers=n) as pool:
        futures = [pool.submit(fn, *a, **kwargs) for a in args]
        for done, _ in enumerate(as_completed(futures), start=1):
            if progress:
                progress(done, len(args))
        return [f.result() for f in futures]   # in argument order, whatever order they finished in


def _run(fn: Callable[..., T], args: Sequence[tuple[Any, ...]], workers: int | None, executor: str,
         scheduler: str | None, progress: Progress | None, **kwargs: Any) -> list[T]:
    """fn(*a, **kwargs) for every a of args, in parallel as the options say; results in argument order."""
    if executor == "dask":
        return _run_dask(fn, args, scheduler, progress, kwargs)
    if executor != "process":
        raise UserError(f"unknown executor {executor!r}; choose from process, dask")
    if workers == 1 or len(args) == 1:
        results = []
        for i, a in enumerate(args, start=1):
            results.append(fn(*a, **kwargs))
            if progress:
                progress(i, len(args))
        return results
    return _run_pool(fn, args, workers, progress, kwargs)


def rank_units(files: Sequence[Path], processes: Sequence[Sequence[ProcessSummary]]) -> list[Unit]:
    """The ranks of the given files: a file, or each rank process of a file that holds several."""
    units: list[Unit] = []
    for f, procs in zip(files, processes, strict=True):
        ranks = rank_processes(procs)
        units += [(f, p.pid) for p in ranks] if ranks else [(f, None)]
    return units


def summarize_ranks(paths: Iterable[Path], workers: int | None = None, executor: str = "process",
                    scheduler: str | None = None, max_phases: int = DEFAULT_MAX_PHASES,
                    keep_paths: bool = False, progress: Progress | None = None,
                    marker_naming: MarkerNaming = DEFAULT_NAMING,
                    thresholds: Thresholds = DEFAULT_THRESHOLDS, query_dirs: Sequence[Path] = (),
                    processes: Sequence[Sequence[ProcessSummary]] | None = None) -> RankSet:
    """Stage 1 of every rank (directories expanded), in parallel; ranks assigned (discover.py, processes.py).

    Each file is summarised whole first; a file whose summary shows several rank processes
    (pa.ranks.processes) is then summarised once per process, each a rank, in a second parallel
    pass. workers: processes (None: all cores; 1: in this process, no pool). executor: process or
    dask (scheduler: a dask.distributed address; None starts a local cluster). progress(done, total)
    is called in the parent as each task finishes. query_dirs: user query directories over the
    bundled sets. processes: each file's process table when the caller has it (its whole-file
    summary), so the first pass is skipped.
    """
    files = discover(paths)
    if not files:
        raise UserError("no profile files given")
    kwargs: dict[str, Any] = {"max_phases": max_phases, "keep_paths": keep_paths, "marker_naming": marker_naming,
                              "thresholds": thresholds, "query_dirs": tuple(query_dirs)}
    whole: dict[Path, Stage1] = {}
    if processes is None:
        done = _run(stage1, [(f, None) for f in files], workers, executor, scheduler, progress, **kwargs)
        whole = dict(zip(files, done, strict=True))
        processes = [whole[f][0].processes for f in files]
    units = rank_units(files, processes)
    todo = [u for u in units if u[1] is not None or u[0] not in whole]
    split = dict(zip(todo, _run(stage1, todo, workers, executor, scheduler, progress, **kwargs), strict=True)) \
        if todo else {}
    results = [split[u] if u in split else whole[u[0]] for u in units]
    by_pid: dict[Unit, ProcessSummary] = {(f, p.pid): p for f, procs in zip(files, processes, strict=True)
                                          for p in procs}
    ranks, sources, warnings = assign_unit_ranks(
        units, [by_pid[u].mpi_rank if u[1] is not None else s.profile.rank
                for u, (s, _, _) in zip(units, results, strict=True)])
    out = [RankResult(rank=r, rank_source=src, summary=s, collectives=c, gpu_collectives=g, path=f, pid=pid)
           for r, src, (s, c, g), (f, pid) in zip(ranks, sources, results, units, strict=True)]
    out.sort(key=lambda x: x.rank)
    return RankSet(out, warnings)


def assign_unit_ranks(units: Sequence[Unit], mpi_ranks: Sequence[int | None]
                      ) -> tuple[list[int], list[str], list[str]]:
    """(ranks, sources, warnings) of the ranks of a run: files, or the processes of exports.

    MPI metadata when it numbers every rank distinctly; else, for files of one process each,
    discover.assign_ranks (file names, then order); else the file and process order.
    """
    if all(pid is None for _, pid in units):
        return assign_ranks([f for f, _ in units], mpi_ranks)
    if all(r is not None for r in mpi_ranks) and len(set(mpi_ranks)) == len(mpi_ranks):
        return [int(r) for r in mpi_ranks if r is not None], ["mpi"] * len(units), []
    single_file = len({f for f, _ in units}) == 1
    source = "process_order" if single_file else "file_process_order"
    return list(range(len(units))), [source] * len(units), []
