"""The process heap on glibc: keep large freed blocks for reuse, and give freed memory back on request.

The summary of a large profile allocates and frees arrays and transport strings of a few to tens
of MB again and again (a column per chunk of every scan, the sorts of millions of rows). glibc
serves blocks above its mmap threshold (128 KiB, raised as blocks are freed, up to 32 MiB) with a
fresh mapping each, and returns freed heap above 128 KiB to the system: every such block then costs
its page faults again. Measured on a 20 M-region rocpd file, keeping blocks up to 32 MiB in the
heap cut the summary's page faults from ~250 k to ~150 k and its CPU time by ~1 s of ~28 s
(system time 5.4 → 4.7 s), with a lower peak RSS (798 → 771 MB); on a 1 M-kernel Nsight Systems
file the change is within noise.

Only the `pa` executable's profile commands call `keep_freed_blocks`, and only for large inputs:
it is a setting of the whole process, which a library caller (pa.api in a notebook) keeps as it
was. ctypes is imported here, not at start-up (~3 ms), and nothing happens on other C libraries.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

# glibc's mallopt parameters (malloc.h) and the largest mmap threshold it accepts on 64-bit.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD_MAX = 32 << 20
_KEEP_FREED = 1 << 30
# Below this total input size the setting is not worth its ~3 ms.
LARGE_INPUT_BYTES = 64 << 20


def keep_freed_blocks(files: Sequence[Path]) -> bool:
    """On glibc, keep blocks up to 32 MiB and freed memory in the heap when `files` are large.

    True when the setting was made. `return_freed_heap` still gives freed memory back where a
    caller decides it should (the marker scan, for the peak).
    """
    total = 0
    for f in files:
        with contextlib.suppress(OSError):
            total += Path(f).stat().st_size
    if total < LARGE_INPUT_BYTES:
        return False
    import ctypes

    with contextlib.suppress(OSError, AttributeError):   # not glibc: nothing to do
        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX)) and \
            bool(libc.mallopt(_M_TRIM_THRESHOLD, _KEEP_FREED))
    return False


def return_freed_heap() -> None:
    """Give freed heap memory back to the operating system (glibc only).

    The marker transport (SQLite grows each group_concat text by doubling) and the numpy sorts of
    millions of rocTX ranges free hundreds of MB that glibc keeps in the process heap. Python
    allocates its objects elsewhere and cannot reuse it, so without this the later work (the
    top-level marker runs, phases) stacks on top of it in the peak RSS: measured on a 20 M-region
    file, 340 MB returned here.
    """
    import ctypes  # here, not at the top: ~5 ms of start-up for a call only large marker sets make

    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to do
        ctypes.CDLL(None).malloc_trim(0)
