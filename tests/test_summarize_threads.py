"""The summary is the same whether its two threads overlap or not.

summarize() scans the kernel table and detects phases in a worker thread; on captures with
millions of API calls, phases run after the other metrics instead (OVERLAP_PHASES_MAX_CALLS).
Both schedules, and a fully sequential one, must give byte-identical summaries.
"""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import pytest
from rocpd_ddl import rocpd_flavours  # tests/ is on sys.path
from testkit.nsys_writer import write_nsys
from testkit.rocpd_writer import write_rocpd
from testkit.scenarios import mixed_sync_and_idle, nvtx_nested

import pa.metrics.summarize as summarize_module


class _InlinePool:
    """An executor that runs each job at once in the calling thread."""

    def __init__(self, max_workers: int = 1) -> None:
        pass

    def __enter__(self) -> _InlinePool:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def submit(self, fn, *args, **kwargs) -> Future:
        f: Future = Future()
        f.set_result(fn(*args, **kwargs))
        return f


@pytest.mark.parametrize("fmt", ["nsys", *rocpd_flavours("rocprofv3")])
@pytest.mark.parametrize("make", [mixed_sync_and_idle, nvtx_nested])
def test_schedules_give_identical_summaries(tmp_path: Path, monkeypatch, fmt, make):
    path = tmp_path / f"p.{fmt}.db"
    if fmt == "nsys":
        write_nsys(make(), path)
    else:
        write_rocpd(make(), path, flavour=fmt)
    overlapped = summarize_module.summarize(path).model_dump_json()
    assert '"phases":null' not in overlapped and '"phases":[' in overlapped
    monkeypatch.setattr(summarize_module, "OVERLAP_PHASES_MAX_CALLS", -1)
    phases_after = summarize_module.summarize(path).model_dump_json()
    monkeypatch.setattr(summarize_module, "ThreadPoolExecutor", _InlinePool)
    sequential = summarize_module.summarize(path).model_dump_json()
    assert overlapped == phases_after == sequential
