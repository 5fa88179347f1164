"""Versioned query sets: pick the SQL files that fit a profile's schema version.

Layout: `queries/<format>/<version>/<relation>.sql`, plus `queries/nsys/base/`: the base set every
Nsight Systems version inherits from, which also reads the files too old to carry a version table
(schema version "legacy"). The set for a file is the highest version directory <= the file's schema
version; a relation file missing there is inherited from the next lower directory, and so on down to
the lowest ("base" sorts below every numbered version, level with a "legacy" file). Supporting a new
profiler version therefore means dropping a directory holding only the files that changed.

A format may list the schema versions pa has been checked against in `queries/<format>/versions.txt`
(one per line, `#` comments). A file of a version not listed there is still read, with the set
chosen as above, and the query set carries one warning saying so (a newer rocpd 3.0.x or 4.x is read
with the newest set that fits). Without that list, only a newer major version than every set warns.

Each file starts with a header of `-- key: value` lines:

    -- relation: kernels
    -- requires: CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId), StringIds(id, value)
    -- requires_any: MPI_P2P_EVENTS, MPI_COLLECTIVES_EVENTS   (at least one must exist; one that
                     exists must have the columns listed with it, as in `requires`)
    -- optional: ENUM_CUDA_MEMCPY_OPER(id, label)
    -- description: one line saying what the query reads
    -- when_empty: MPI was not traced   (optional: a file where the query returns no row did not
                                        record the relation; it is skipped with this reason)

The body is a SELECT producing the relation's canonical columns (pa.profile.canonical). It is a
Jinja template evaluated against the file's schema only: `has_table(name)` and
`has_column(table, column)` are the only names it sees, so optional tables and columns can be
handled without one query directory per small drift. No value from the profile enters the SQL text.
A query file is data: it is rendered in pa's Jinja sandbox (pa.sandbox) with a time budget, and
a file that is not a regular UTF-8 text file of at most MAX_QUERY_FILE_BYTES is refused.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pa.errors import UserError
from pa.inputs import read_text_file
from pa.paths import data_dir
from pa.profile.canonical import RELATIONS
from pa.profile.domain import DomainLog

LEGACY = "legacy"   # the schema version detect.py gives an Nsight Systems file with no version table
BASE = "base"       # the directory every version inherits from; it reads LEGACY files itself
BUNDLED = "bundled"  # the query root shipped with pa (QueryFile.source)
MAX_QUERY_FILE_BYTES = 1 << 20
KNOWN_VERSIONS_FILE = "versions.txt"
_HEADER = re.compile(r"^--\s*(\w+)\s*:\s*(.*)$")
_TABLE_SPEC = re.compile(r"(\w+)\s*(?:\(([^)]*)\))?")


def version_key(version: str) -> tuple[int, ...]:
    """Sort key for a version or directory name: 'base' = 'legacy' < '2.9' < '3.1' < '3.13'."""
    if version in (BASE, LEGACY):
        return (-1,)
    parts = []
    for part in version.split("."):
        digits = re.match(r"\d+", part)
        parts.append(int(digits.group(0)) if digits else 0)
    return tuple(parts)


def parse_table_specs(text: str) -> dict[str, tuple[str, ...]]:
    """Parse 'T1(a, b), T2' into {'T1': ('a', 'b'), 'T2': ()}."""
    specs: dict[str, tuple[str, ...]] = {}
    for match in _TABLE_SPEC.finditer(text):
        name, cols = match.group(1), match.group(2)
        if not name:
            continue
        specs[name] = tuple(c.strip() for c in cols.split(",") if c.strip()) if cols else ()
    return specs


@dataclass(frozen=True)
class QueryFile:
    """One relation's SQL file with its parsed header."""

    relation: str
    path: Path
    version_dir: str            # the directory it was found in (after inheritance)
    requires: dict[str, tuple[str, ...]]
    # at least one of these tables must exist, and each one that exists must have its listed columns
    requires_any: dict[str, tuple[str, ...]]
    optional: dict[str, tuple[str, ...]]
    description: str
    body: str
    sha256: str
    when_empty: str | None = None   # reason the relation is skipped when the query returns no row
    source: str = "bundled"         # "bundled", or the user query directory it came from

    @property
    def display_path(self) -> str:
        """Path under its query root as reports show it, e.g. nsys/3.24/kernels.sql.

        A user file is prefixed by its directory's own name (site-queries/nsys/3.24/kernels.sql).
        """
        rel = f"{self.path.parent.parent.name}/{self.version_dir}/{self.path.name}"
        return rel if self.source == BUNDLED else f"{Path(self.source).name}/{rel}"


@dataclass(frozen=True)
class QueryRoot:
    """A directory holding <format>/<version>/<relation>.sql files, and how `pa queries` names it."""

    path: Path
    source: str   # BUNDLED or the directory as the user gave it


def load_query_file(path: Path, version_dir: str, source: str = "bundled") -> QueryFile:
    """Parse one query file; a malformed header is a UserError naming the file."""
    text = read_text_file(path, MAX_QUERY_FILE_BYTES, "query file")
    header: dict[str, str] = {}
    body_lines = []
    in_header = True
    for line in text.splitlines():
        m = _HEADER.match(line) if in_header else None
        if m:
            header[m.group(1).lower()] = m.group(2).strip()
            continue
        if in_header and line.strip().startswith("--"):
            continue
        in_header = False
        body_lines.append(line)
    relation = header.get("relation")
    if relation is None:
        raise UserError(f"{path}: query file has no '-- relation:' header line")
    if relation != path.stem:
        raise UserError(f"{path}: header says relation {relation!r} but the file is named {path.name}")
    if relation not in RELATIONS:
        raise UserError(f"{path}: unknown relation {relation!r} (known: {', '.join(RELATIONS)})")
    return QueryFile(
        relation=relation,
        path=path,
        version_dir=version_dir,
        requires=parse_table_specs(header.get("requires", "")),
        requires_any=parse_table_specs(header.get("requires_any", "")),
        optional=parse_table_specs(header.get("optional", "")),
        description=header.get("description", ""),
        body="\n".join(body_lines).strip().rstrip(";"),
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        when_empty=header.get("when_empty") or None,
        source=source,
    )


@dataclass
class QuerySet:
    """The resolved query files for one format and version."""

    format: str
    version: str                  # the directory chosen (highest <= file version)
    files: dict[str, QueryFile] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # Rows dropped by the relations' domain checks on every connection bound to this set (one
    # summary's worth: the main thread's and its worker's connections share it).
    domain_log: DomainLog = field(default_factory=DomainLog, compare=False, repr=False)

    @property
    def name(self) -> str:
        """Name as reports show it, e.g. 'nsys/3.13'."""
        return f"{self.format}/{self.version}"


def _trimmed(key: tuple[int, ...]) -> tuple[int, ...]:
    """A version key without trailing zero components: 3, 3.0 and 3.0.0 are one version."""
    out = list(key)
    while len(out) > 1 and out[-1] == 0:
        out.pop()
    return tuple(out)


def query_roots(query_dirs: Sequence[Path] = (), root: Path | None = None) -> list[QueryRoot]:
    """The query directories to search, highest priority first: the user's, then the bundled one.

    `root` replaces the bundled directory (tests); a user directory that does not exist is an error
    (a typo must not silently mean "the bundled files").
    """
    roots = []
    for d in query_dirs:
        d = Path(d)
        if not d.is_dir():
            raise UserError(f"query directory {d}: not a directory")
        roots.append(QueryRoot(d, str(d)))
    roots.append(QueryRoot(root or data_dir("queries"), BUNDLED))
    return roots


def known_versions(fmt: str, root: Path | None = None, query_dirs: Sequence[Path] = ()) -> list[str] | None:
    """The schema versions listed in any <root>/<fmt>/versions.txt, or None when no root has a list."""
    found: list[str] | None = None
    for qr in query_roots(query_dirs, root):
        listing = qr.path / fmt / KNOWN_VERSIONS_FILE
        if not listing.is_file():
            continue
        text = read_text_file(listing, MAX_QUERY_FILE_BYTES, "version list")
        lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
        found = [*(found or []), *(v for v in lines if v and v not in (found or []))]
    return found


def available_versions(fmt: str, root: Path | None = None, query_dirs: Sequence[Path] = ()) -> list[str]:
    """Version directories present for `fmt` in any root, lowest first."""
    dirs: set[str] = set()
    for qr in query_roots(query_dirs, root):
        base = qr.path / fmt
        if base.is_dir():
            dirs |= {d.name for d in base.iterdir() if d.is_dir() and any(d.glob("*.sql"))}
    return sorted(dirs, key=version_key)


def resolve(fmt: str, file_version: str, root: Path | None = None, query_dirs: Sequence[Path] = ()) -> QuerySet:
    """Pick the query set for a file of `fmt` at `file_version`, inheriting missing files.

    Versions are searched highest first and, within a version, the user's directories before the
    bundled one: a user directory holding only `nsys/3.24/kernels.sql` replaces that one file.
    """
    roots = query_roots(query_dirs, root)
    versions = available_versions(fmt, root, query_dirs)
    if not versions:
        raise UserError(f"no query sets installed for format {fmt!r}")
    target = version_key(file_version)
    eligible = [v for v in versions if version_key(v) <= target]
    warnings: list[str] = []
    if not eligible:
        raise UserError(f"{fmt} schema {file_version} is older than every query set "
                        f"({', '.join(versions)})")
    chosen = eligible[-1]
    known = known_versions(fmt, root, query_dirs)
    if known is not None and file_version != LEGACY:
        if _trimmed(target) not in {_trimmed(version_key(v)) for v in known}:
            warnings.append(f"{fmt} schema {file_version} is not a version pa has been checked against "
                            f"(known: {', '.join(known)}); read with the {fmt}/{chosen} queries, which "
                            "assume that layout")
    elif file_version != LEGACY and chosen == versions[-1] and \
            _trimmed(target)[:2] > _trimmed(version_key(chosen))[:2]:
        # Any newer major or minor (a patch release keeps the layout): the set may not fit.
        warnings.append(f"{fmt} schema {file_version} is newer than every query set (newest: "
                        f"{chosen}); results rest on the {fmt}/{chosen} queries")
    qs = QuerySet(format=fmt, version=chosen, warnings=warnings)
    for version in reversed(eligible):  # highest first: the first file found wins
        for qr in roots:
            for path in sorted((qr.path / fmt / version).glob("*.sql")):
                if path.stem not in qs.files:
                    qs.files[path.stem] = load_query_file(path, version, qr.source)
    return qs
