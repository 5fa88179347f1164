"""The marker names compile_ranges and device_reads read from scan_markers' kept rows.

They used to be two more scans of the markers relation with SQL LIKE filters; the Python test that
replaced them must keep exactly the names SQLite's LIKE kept (ASCII-only case folding, `_` as any
one character), checked here against SQLite itself.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from pa.metrics.host import NamedRanges
from pa.metrics.host_work import compile_ranges, marker_name_read
from pa.metrics.marker_names import DEVICE_READ_RANGES, MarkerNaming

NAMES = ["compile_inner", "COMPILE kernels", "Torch-Compiled Region", "recompile", "nvrtcCompileProgram",
         "NVRTC foo", "xnvrtc", "hiprtcLink", "run ptxas", "PTXAS", "aten::item", "ATEN::ITEM, seq = 3",
         "aten::Xlocal_scalar_dense", "aten::_local_scalar_dense", "aten::itemx", "xaten::item", "",
         "ÉCOMPIL", "line\ncompile", "aten::equal", "aten::allclosE", "naten::nonzero", "aten:nonzero",
         "Compilation", "precompiled", "compiler pass", "comp il"]


def _sqlite_like(names: list[str], reads: tuple[str, ...] = DEVICE_READ_RANGES) -> set[str]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE m(name TEXT)")
    conn.executemany("INSERT INTO m VALUES (?)", [(n,) for n in names])
    # device-read prefixes are text (an underscore is an underscore), compared with ASCII case folding
    like = ["name LIKE '%compil%'", "name LIKE '%nvrtc%'", "name LIKE '%hiprtc%'", "name LIKE '%ptx%'",
            *(f"lower(substr(name, 1, {len(n)})) = lower('{n}')" for n in reads)]
    return {r[0] for r in conn.execute(f"SELECT name FROM m WHERE {' OR '.join(like)}")}


def test_kept_names_are_the_ones_sqlite_like_kept() -> None:
    expected = _sqlite_like(NAMES)
    assert {"ATEN::ITEM, seq = 3", "line\ncompile"} <= expected               # case folding, any character
    assert "aten::Xlocal_scalar_dense" not in expected                        # a prefix's "_" is text
    keep = marker_name_read()
    assert {n for n in NAMES if keep(n)} == expected


def test_a_packs_device_read_names_replace_the_default_ones() -> None:
    reads = ("cupy.asnumpy", "jax.device_get")
    names = [*NAMES, "CuPy.asnumpy(x)", "jax.device_get", "jax.device_put"]
    keep = marker_name_read(MarkerNaming(device_reads=reads))
    expected = _sqlite_like(names, reads)
    assert {"CuPy.asnumpy(x)", "jax.device_get"} <= expected and "aten::item" not in expected
    assert {n for n in names if keep(n)} == expected
    # none at all: only the compiling names are kept
    assert {n for n in names if marker_name_read(MarkerNaming(device_reads=()))(n)} == _sqlite_like(names, ())


def test_compile_ranges_keep_compiling_names_with_a_duration() -> None:
    names = ["compile kernels", "Torch-Compiled Region", "aten::item", "nvrtcCompileProgram"]
    kept = NamedRanges(pid=np.array([1, 1, 2, 3, 4]), start=np.array([10, 20, 30, 40, 50]),
                       end=np.array([15, 25, 35, 40, 58]), code=np.array([0, 1, 2, 0, 3]), names=names)
    pid, start, end = compile_ranges(kept)
    # "Compiled" runs compiled code; aten::item is a device read; the zero-length range has no time
    assert pid.tolist() == [1, 4] and start.tolist() == [10, 50] and end.tolist() == [15, 58]


@pytest.mark.parametrize(("name", "compiles"), [
    # nvFuser's ranges (nvfuser_h100node, nvfuser_h200): camelCase and NVRTC anywhere in the name
    ("KernelExecutor::compileFusion", True), ("FusionKernelRuntime::compileKernel", True),
    ("executor_utils::NVRTC", True), ("executor_utils::Nvrtc::CompileProgram", True),
    ("executor_utils::NvrtcCreateProgram", True), ("executor_utils::Nvrtc::LoadPTX", True),
    ("compile_inner", True), ("async_compile", True), ("Compile", True), ("hiprtcCreateProgram", True),
    ("recompile", True), ("ptxas", True),
    # running compiled code, or asking about compile-time facts, is not compiling
    ("ReductionScheduler::canScheduleCompileTime", False), ("CompiledKernel::CompiledKernel", False),
    ("Torch-Compiled Region", False), ("CompiledFunction", False), ("jit(train_step)", False),
    ("precompiled", False), ("decompile", False),
])
def test_compile_range_names(name: str, compiles: bool) -> None:
    kept = NamedRanges(pid=np.array([1]), start=np.array([0]), end=np.array([10]), code=np.array([0]), names=[name])
    assert marker_name_read()(name) or not compiles      # the cheap first test keeps every compiling name
    assert (compile_ranges(kept)[0].size == 1) == compiles


def test_a_wildcard_laden_device_read_prefix_is_text_and_cannot_hang() -> None:
    """Issue 26.7: a 41-wildcard entry (within the schema's 128 characters) hung the LIKE-as-regex match."""
    import time

    hostile = "%_" * 41 + "#"
    keep = marker_name_read(MarkerNaming(device_reads=(hostile,)))
    started = time.monotonic()
    assert not keep("a" * 200 + "b") and keep(hostile + " tail")
    assert time.monotonic() - started < 1.0
    default = marker_name_read()
    assert default("aten::_local_scalar_dense") and not default("aten::Xlocal_scalar_dense")
