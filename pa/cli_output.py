"""Where `-o` writes: checked before any analysis (and any LLM spend), written whole or not at all.

`plan_output` decides, before the profile is even opened, what `-o` means:

- absent or `-`: standard output;
- an existing character device, FIFO or socket (`/dev/null`, `/dev/stdout`, `/dev/full`): written
  to directly, never replaced and no temporary file beside it;
- anything else: a regular file (the format's extension added when the name has none), written
  to a temporary file in the same directory and renamed over the target, so a failed or
  interrupted write never leaves half a report. A symlink is followed to its target.

Refused up front, in one line: an existing directory (`-o adir`, `-o x.html/`), a missing parent
directory, a parent pa cannot write to, and a path that is one of the inputs (a profile, a rule
pack) or a -wal/-journal/-shm name beside a profile (pa promises never to create those).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pa.errors import UserError

_SIDECARS = ("-wal", "-journal", "-shm")


@dataclass(frozen=True)
class Output:
    """Where a rendering goes: stdout (path None), a device/FIFO written in place, or a regular file."""

    path: Path | None
    direct: bool = False   # an existing non-regular file: open and write, never rename over it

    @property
    def is_stdout(self) -> bool:
        """True when the rendering goes to standard output."""
        return self.path is None


def plan_output(output: Path | None, extension: str, inputs: Sequence[Path] = ()) -> Output:
    """Check `-o` before any work; return where the rendering will go (module docs)."""
    if output is None or str(output) == "-":
        return Output(None)
    st = _stat(output)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise UserError(f"-o {output}: is a directory; give a file name (e.g. {output / ('report' + extension)})")
    if st is not None and not stat.S_ISREG(st.st_mode):
        return Output(output, direct=True)
    path = output if output.suffix else output.with_name(output.name + extension)
    st = _stat(path)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise UserError(f"-o {output}: {path} is a directory; give a file name")
    if st is not None and not stat.S_ISREG(st.st_mode):
        return Output(path, direct=True)
    target = path.resolve()
    parent = target.parent
    if not parent.is_dir():
        raise UserError(f"-o {output}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"-o {output}: cannot write in directory {parent} (permission denied)")
    _refuse_inputs(output, target, inputs)
    return Output(path)


def wrote(out: Output, fmt: str, keep_paths: bool = False) -> str:
    """The one line on stderr after `-o`: the file's name (its path with --keep-paths; a device's path always)."""
    assert out.path is not None
    shown = out.path if keep_paths or out.direct else out.path.name
    return f"wrote {shown} ({fmt})"


def check_log_file(flag: str, path: Path | None, inputs: Sequence[Path] = ()) -> None:
    """Check a file pa appends to (--log, --transcript) before any work, as strictly as `-o`.

    It must be a regular file or a new one in a writable directory: never an input or a SQLite sidecar
    of one (pa would append to the profile), nor a FIFO, device or socket (a FIFO nobody reads would
    hang the run; /dev/full would fail mid-run with a misleading error).
    """
    if path is None:
        return
    st = _stat(path)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise UserError(f"{flag} {path}: is a directory; give a file name")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise UserError(f"{flag} {path}: not a regular file (a FIFO, device or socket); give a file name")
    target = path.resolve()
    if not target.parent.is_dir():
        raise UserError(f"{flag} {path}: directory {target.parent} does not exist")
    if not os.access(target.parent, os.W_OK | os.X_OK) or (st is not None and not os.access(target, os.W_OK)):
        raise UserError(f"{flag} {path}: cannot write there (permission denied)")
    _refuse_inputs(path, target, inputs, flag)


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UserError(f"-o {path}: {exc.strerror}") from None


def _refuse_inputs(output: Path, target: Path, inputs: Sequence[Path], flag: str = "-o") -> None:
    for inp in inputs:
        try:
            resolved = Path(inp).resolve()
        except OSError:
            continue
        if resolved == target or (target.exists() and resolved.exists() and os.path.samefile(resolved, target)):
            raise UserError(f"{flag} {output}: is one of the input files; pa never writes to its input")
        if resolved.is_file() and target.parent == resolved.parent and \
                target.name in (resolved.name + s for s in _SIDECARS):
            raise UserError(f"{flag} {output}: is a SQLite sidecar name of the profile {inp}; choose another name")


def write_output(out: Output, text: str) -> None:
    """Write the whole rendering to `out` (not stdout); any OS error becomes one UserError line."""
    assert out.path is not None
    try:
        if out.direct:
            _write_direct(out.path, text)
        else:
            _write_atomically(out.path, text)
    except OSError as exc:
        raise UserError(f"cannot write {out.path}: {exc.strerror or exc}") from None


def _write_direct(path: Path, text: str) -> None:
    """Write to an existing device, FIFO or socket in place; a FIFO nobody reads is an error, not a hang."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise UserError(f"cannot write {path}: a FIFO with no reader") from None
        raise
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


def _write_atomically(path: Path, text: str) -> None:
    """Write the whole rendering or nothing: a half-written report must never be left behind."""
    target = path.resolve()   # follow a symlink: replace what it points to, not the link
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)   # mkstemp creates 0600; a report is an ordinary file
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
