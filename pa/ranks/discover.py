"""Find the rank files of a multi-rank run, decide whether several files are one, and each file's rank.

Several files are the ranks of one run only when something says so (`one_run_evidence`): every
file records a distinct MPI rank, or every file ran the same application (pa.metrics.same_app: the
kernels they share, by time), or the user says so (--rank-set). Two unrelated captures are not a
rank set: a digit in a name (nsys2023.3_openmp_t4 -> "rank 4") proves nothing, and cross-rank facts
of unrelated programs ("imbalance 200 %") mean nothing. Such files are summarised one by one.

A rank comes from the profile's MPI metadata when it records exactly one rank, else from the file
name (the last integer after rank/report, e.g. report.3.sqlite, rank_0012.db, out-rank7.nsys.sqlite,
else the last integer of the name), else from the position in the sorted file list.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from pa.errors import UserError
from pa.metrics.model import ProfileSummary
from pa.metrics.same_app import SAME_APP_MIN_SHARED, same_application

DIRECTORY_PATTERNS = ("report.*.sqlite", "rank_*.db", "rank*.sqlite", "*.sqlite", "*.db")
_NAMED = re.compile(r"(?:rank|report)[._\-]?(\d+)", re.IGNORECASE)
_ANY = re.compile(r"(\d+)")


def discover(paths: Iterable[Path]) -> list[Path]:
    """Expand directories to their profile files; keep files as given. Sorted, duplicates removed.

    A directory contributes the files of the first pattern of DIRECTORY_PATTERNS that matches any,
    so a directory of report.N.sqlite files does not also pick up stray *.db files.
    """
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            for pattern in DIRECTORY_PATTERNS:
                matched = sorted(p.glob(pattern))
                found = [f for f in matched if f.is_file()]
                odd = [f for f in matched if not f.is_file() and not f.is_dir()]
                if odd:     # never skipped in silence: a rank missing from the run changes every cross-rank fact
                    raise UserError(f"{odd[0]}: not a regular file (a broken symlink, a symlink loop, a FIFO or "
                                    f"a device) among the rank files of {p}; remove it, or name the rank files")
                if found:
                    out += found
                    break
            else:
                raise UserError(f"{p}: no profile files ({', '.join(DIRECTORY_PATTERNS)})")
        elif p.is_file():
            out.append(p)
        elif p.exists():
            raise UserError(f"{p}: not a regular file (a FIFO, device or socket); give the profile file itself")
        else:
            raise UserError(f"{p}: no such file or directory")
    seen: set[Path] = set()
    unique = []
    for p in out:
        key = p.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(p)
    return sorted(unique, key=lambda q: (rank_from_name(q) is None, rank_from_name(q) or 0, q.name))


def rank_from_name(path: Path) -> int | None:
    """Rank number encoded in a file name, or None."""
    name = path.name
    m = _NAMED.findall(name)
    if m:
        return int(m[-1])
    m = _ANY.findall(name)
    return int(m[-1]) if m else None


def assign_ranks(paths: Sequence[Path],
                 mpi_ranks: Sequence[int | None]) -> tuple[list[int], list[str], list[str]]:
    """(ranks, sources, warnings) using MPI metadata, else file names, else order (module docs).

    A source is used only when it gives every file a distinct rank; otherwise the next one is tried.
    """
    warnings: list[str] = []
    if all(r is not None for r in mpi_ranks) and len(set(mpi_ranks)) == len(mpi_ranks):
        return [int(r) for r in mpi_ranks if r is not None], ["mpi"] * len(paths), warnings
    if any(r is not None for r in mpi_ranks):
        warnings.append("MPI rank metadata missing or duplicated in some files; ranks taken from file names")
    by_name = [rank_from_name(p) for p in paths]
    if all(r is not None for r in by_name) and len(set(by_name)) == len(by_name):
        return [int(r) for r in by_name if r is not None], ["file_name"] * len(paths), warnings
    if len(paths) > 1:
        warnings.append("ranks could not be read from MPI metadata or file names; numbered by file order")
    return list(range(len(paths))), ["order"] * len(paths), warnings


def one_run_evidence(summaries: Sequence[ProfileSummary]) -> str | None:
    """Why several files are the ranks of one run, or None when nothing in them says so (module docs)."""
    ranks = [s.profile.rank for s in summaries]
    if all(r is not None for r in ranks) and len(set(ranks)) == len(ranks):
        return "every file records its own MPI rank"
    if len(summaries) > 1 and all(same_application(summaries[0], s) for s in summaries[1:]):
        return "every file ran the same kernels"
    return None


def not_one_run_reason(summaries: Sequence[ProfileSummary]) -> str:
    """The one line saying why the files were not taken as one run's ranks (for stderr and errors)."""
    return (f"the {len(summaries)} files are not the ranks of one run: not every file records its own MPI rank, "
            f"and they do not run the same kernels (at least {100 * SAME_APP_MIN_SHARED:.0f} % of each file's "
            "kernel time in kernels the others ran)")
