"""Options shared by `pa summary` and `pa analyze` for multi-rank runs and phases, and the progress bar.

One definition of each option (STYLE: never the same option in three places):

    @rank_options            # --workers, --executor, --scheduler, --primary-rank, --rank-set, --max-phases
    def cmd(..., run: RunOptions) -> None: ...   # pa.pipeline's Stage 1 options (keep_paths, query_dirs unset)

A run is multi-rank when its PROFILE arguments (directories expanded) name more than one file and
they are one run's ranks (MPI rank metadata, the same kernels, or --rank-set; pa.ranks.discover).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from pa.cli_options import max_phases_option
from pa.pipeline import Progress, RunOptions

F = TypeVar("F", bound=Callable[..., Any])


def rank_options(func: F) -> F:
    """Add the multi-rank and phase options; the command receives them as `run: RunOptions`.

    The command adds what its own options say (--keep-paths, --queries) with `dataclasses.replace`.
    """

    @max_phases_option
    @click.option("--rank-set", is_flag=True,
                  help="Several files are the ranks of one run, even without MPI rank metadata or shared kernels "
                       "(by default such files are summarised one by one).")
    @click.option("--primary-rank", type=int, default=None,
                  help="Rank for the detailed analysis (default: the outlier by GPU idle time).")
    @click.option("--scheduler", default=None, metavar="ADDRESS",
                  help="dask.distributed scheduler address for --executor dask (default: a local cluster).")
    @click.option("--executor", type=click.Choice(["process", "dask"]), default="process", show_default=True,
                  help="Run Stage 1 per rank in local processes or on a dask cluster (pip install 'pa[dask]').")
    @click.option("--workers", type=click.IntRange(1, 256), default=None,
                  help="Processes for Stage 1 of several ranks (default: all cores).")
    @functools.wraps(func)
    def wrapper(*args: Any, workers: int | None, executor: str, scheduler: str | None,
                primary_rank: int | None, rank_set: bool, max_phases: int, **kwargs: Any) -> Any:
        if scheduler and executor != "dask":
            raise click.BadParameter("--scheduler needs --executor dask", param_hint="--scheduler")
        opts = RunOptions(workers=workers, executor=executor, scheduler=scheduler,
                          primary_rank=primary_rank, max_phases=max_phases, rank_set=rank_set)
        return func(*args, run=opts, **kwargs)

    return wrapper  # type: ignore[return-value]


@contextmanager
def progress_bar(total: int, label: str = "Stage 1") -> Iterator[Progress | None]:
    """A rich progress bar on stderr while files are summarised; None when stderr is not a TTY."""
    if total < 2 or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(f"{label}: {total} rank files", total=total)

        def update(done: int, _total: int) -> None:
            bar.update(task, completed=done)

        yield update


LARGE_FILE_BYTES = 64 << 20   # a profile this large takes seconds: say what pa is doing


@contextmanager
def working_on(path: Path | None, what: str = "Summarising") -> Iterator[None]:
    """A spinner on stderr while one large profile is read; nothing when stderr is not a TTY (or no path).

    Progress is for people at a terminal: a log file or CI job must not fill with spinner frames.
    """
    try:
        large = path is not None and path.stat().st_size >= LARGE_FILE_BYTES
    except OSError:
        large = False   # the summary itself reports the unreadable file
    if path is None or not large or not sys.stderr.isatty():
        yield
        return
    from rich.console import Console
    from rich.markup import escape

    from pa.controls import escape_controls

    size_mb = path.stat().st_size / 1e6
    # the file name is data: no rich markup ([link=...]) and no terminal escape (OSC 8/52, CSI) in it
    name = escape(escape_controls(path.name))
    with Console(stderr=True).status(f"{what} {name} ({size_mb:,.0f} MB)"):
        yield
