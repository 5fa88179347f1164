"""Run `pa` on a pseudo-terminal (isatty true), as a user sees it: for the tests of terminal output."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios


def pa_on_a_terminal(args: list[str], columns: int | None = None, env: dict[str, str] | None = None,
                     timeout: float = 120) -> bytes:
    """`pa ARGS`'s stdout on a pseudo-terminal (`columns` wide when given); the run must exit 0.

    The colour and size variables of the test's own environment are dropped (`env` may set them), so
    the terminal alone decides.
    """
    primary, secondary = pty.openpty()
    if columns is not None:
        fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "NO_COLOR")}
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from pa.cli import run; sys.argv[0] = 'pa'; run()",
                             *args], stdin=secondary, stdout=secondary, stderr=subprocess.DEVNULL,
                            env=environ | (env or {}), close_fds=True)
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:   # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(primary)
    assert proc.wait(timeout=timeout) == 0
    return b"".join(chunks)
