"""Nsight Systems reports (.nsys-rep) as input: exported once to SQLite by `nsys`, then cached.

pa reads SQLite exports. Given a report, it runs

    nsys export --type sqlite --force-overwrite true --output <cache>/<hash>/<name>.sqlite <report>

as an argument list (no shell), with a timeout, into the XDG cache directory
(`$XDG_CACHE_HOME/pa/nsys-export`, default `~/.cache/pa/nsys-export`) under the SHA-256 of the
report's content, so the same report is exported once however it is named or moved. The export
keeps the report's name (`report.3.nsys-rep` -> `report.3.sqlite`) so rank numbers in file names
still work. Without `nsys` on PATH the command is one error line giving the export to run.
The report itself is only read. Both paths reach nsys absolute (a report named `--stats=true.nsys-rep`
is a file, not an option); the cache directories are 0700 and an export 0600 (an export holds what
the report holds); an export that is not an SQLite file is refused and never cached, and the error
says where the cache is, to delete an entry and export again.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pa.errors import UserError

REPORT_SUFFIXES = (".nsys-rep", ".qdrep")
EXPORT_TIMEOUT_S = 1800.0   # a multi-GB report takes minutes; a hung nsys must not hang pa
_CHUNK = 1 << 20


def is_report(path: Path) -> bool:
    """True for an Nsight Systems report file name (.nsys-rep, or the older .qdrep)."""
    return path.name.lower().endswith(REPORT_SUFFIXES)


def cache_root(env: Mapping[str, str] | None = None) -> Path:
    """Where exports are kept: $XDG_CACHE_HOME/pa/nsys-export, default ~/.cache/pa/nsys-export."""
    environ = os.environ if env is None else env
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pa" / "nsys-export"


def export_command(report: Path, output: Path, nsys: str = "nsys") -> list[str]:
    """The `nsys export` argument list that writes `report` as SQLite to `output`."""
    # absolute paths: a report named `--stats=true.nsys-rep` must reach nsys as a file, never as an option
    return [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(output.absolute()),
            str(report.absolute())]


def _content_hash(report: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with report.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _stem(report: Path) -> str:
    name = report.name
    for suffix in REPORT_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)] or "report"
    return report.stem


def sqlite_for(report: Path, env: Mapping[str, str] | None = None, timeout_s: float = EXPORT_TIMEOUT_S) -> Path:
    """The SQLite export of `report`: from the cache, else exported now with `nsys` (module docs).

    subprocess and shutil are imported here: every `pa summary` passes through `exported`, few with a report.
    """
    import shutil
    import subprocess

    environ = dict(os.environ if env is None else env)
    target = cache_root(environ) / _content_hash(report)[:32] / f"{_stem(report)}.sqlite"
    if target.is_file():
        return target
    nsys = shutil.which("nsys", path=environ.get("PATH"))
    if nsys is None:
        hint = " ".join(export_command(report, report.with_name(_stem(report) + ".sqlite")))
        raise UserError(f"{report}: an Nsight Systems report and nsys is not on PATH; export it with "
                        f"`{hint}` and give pa the .sqlite file")
    # the cache is private to the user (an export holds what the report holds, a report is often 0600)
    cache_root(environ).mkdir(parents=True, exist_ok=True, mode=0o700)
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = target.with_name(f".{target.stem}.{os.getpid()}.sqlite")
    try:
        proc = subprocess.run(export_command(report, partial, nsys), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout_s, env=environ)
    except subprocess.TimeoutExpired:
        partial.unlink(missing_ok=True)
        raise UserError(f"{report}: nsys export did not finish within {timeout_s:g} s") from None
    except OSError as exc:
        raise UserError(f"{report}: cannot run {nsys}: {exc.strerror or exc}") from None
    if proc.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        last = (proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or ["no output"])[-1]
        raise UserError(f"{report}: nsys export failed (exit {proc.returncode}): {last[:300]}")
    with partial.open("rb") as fh:
        header = fh.read(16)
    if header != b"SQLite format 3\x00":
        partial.unlink(missing_ok=True)
        raise UserError(f"{report}: nsys export exited 0 but did not write an SQLite file; nothing was cached "
                        f"(exports are kept in {cache_root(environ)}; delete a directory there to export again)")
    os.chmod(partial, 0o600)
    os.replace(partial, target)
    return target


def exported(paths: list[Path]) -> list[Path]:
    """`paths` with every Nsight Systems report replaced by its SQLite export."""
    return [sqlite_for(p) if is_report(p) else p for p in paths]
