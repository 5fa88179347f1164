"""Reading the files a user hands pa (query files, rule packs, templates) without trusting them.

A FIFO would block a read forever, /dev/zero would never end, a 50 MB rule pack would take
minutes to validate, and a non-UTF-8 byte would surface as a traceback: each gets one UserError
line naming the file instead.
"""

from __future__ import annotations

import stat
from pathlib import Path

from pa.errors import UserError


def read_text_file(path: Path, max_bytes: int, what: str) -> str:
    """The UTF-8 text of a regular file of at most `max_bytes`, or one UserError line saying why not.

    The size and kind are checked before reading: a FIFO would block the read forever and
    /dev/zero would never end.
    """
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            raise UserError(f"{path}: {what} is not a regular file")
        if st.st_size > max_bytes:
            raise UserError(f"{path}: {what} of {st.st_size} bytes is larger than the {max_bytes} bytes "
                            "pa accepts")
        with path.open("rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise UserError(f"{path}: cannot read {what} ({exc.strerror})") from None
    if len(data) > max_bytes:
        raise UserError(f"{path}: {what} is larger than the {max_bytes} bytes pa accepts")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: {what} is not UTF-8 text (byte {exc.start})") from None
