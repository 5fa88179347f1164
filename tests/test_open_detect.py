"""Bad input gets one clear line on stderr and exit code 2; good input is detected correctly."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from pa.cli import main
from pa.profile.detect import detect
from pa.profile.open import open_readonly, sha256_of


def _run(path: Path):
    return CliRunner().invoke(main, ["summary", str(path)])


def _assert_one_line_error(result, needle: str):
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1, result.output
    assert needle in lines[0]
    assert "Traceback" not in result.output


def test_missing_file(tmp_path):
    _assert_one_line_error(_run(tmp_path / "nope.sqlite"), "no such file")


def test_directory(tmp_path):
    # a directory is a multi-rank run (issue 7): an empty one has no profile files
    _assert_one_line_error(_run(tmp_path), "no profile files")


def test_empty_file(tmp_path):
    p = tmp_path / "empty.sqlite"
    p.write_bytes(b"")
    _assert_one_line_error(_run(p), "empty file")


def test_not_sqlite(tmp_path, monkeypatch):
    p = tmp_path / "report.bin"
    p.write_bytes(b"QDSTRM\x00" + b"x" * 100)
    _assert_one_line_error(_run(p), "not a SQLite database")
    # named as a report, it is exported first (tests/test_nsys_report.py); without nsys, the command to run
    rep = tmp_path / "report.nsys-rep"
    rep.write_bytes(p.read_bytes())
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    _assert_one_line_error(_run(rep), "nsys export --type sqlite")


def test_sqlite_of_another_program(tmp_path):
    p = tmp_path / "other.db"
    conn = sqlite3.connect(p)
    conn.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    conn.execute("CREATE TABLE rocpd_foo (x)")
    conn.commit()
    conn.close()
    _assert_one_line_error(_run(p), "another program")


def test_truncated_file(tmp_path, real_profile):
    data = real_profile.read_bytes()
    p = tmp_path / "truncated.sqlite"
    p.write_bytes(data[: len(data) // 3])
    result = _run(p)
    # A truncated database is either refused as unreadable, or (if the schema pages survived)
    # summarised from what is readable; never a traceback.
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 2), result.output


@pytest.mark.parametrize("table", ["META_DATA_EXPORT", "EXPORT_META_DATA"])
def test_nsys_version_tables(tmp_path, table):
    p = tmp_path / "v.sqlite"
    conn = sqlite3.connect(p)
    conn.execute(f"CREATE TABLE {table} (name TEXT, value TEXT)")
    conn.execute(f"INSERT INTO {table} VALUES ('EXPORT_SCHEMA_VERSION', '3.16.1'), "
                 "('EXPORT_PRODUCT_VERSION', '2025.1.1')")
    conn.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    conn.commit()
    conn.close()
    c = open_readonly(p)
    fmt = detect(c, p)
    assert (fmt.format, fmt.schema_version, fmt.product_version) == ("nsys", "3.16.1", "2025.1.1")


def test_real_profiles_detected(real_profile):
    c = open_readonly(real_profile)
    fmt = detect(c, real_profile)
    assert fmt.format == "nsys"
    expected = "legacy" if "legacy" in real_profile.name else None
    if expected:
        assert fmt.schema_version == "legacy"
    else:
        assert fmt.schema_version[0] in "23"


def test_summary_text_says_not_captured_instead_of_zero(tmp_path):
    from testkit import scenarios
    from testkit.nsys_writer import write_nsys

    p = tmp_path / "degraded.sqlite"
    # the host launched work, but the kernel and copy tables are absent (GPU tracing off)
    write_nsys(scenarios.launch_bound(), p, omit_tables=["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY"])
    result = CliRunner().invoke(main, ["summary", str(p)])
    assert result.exit_code == 0, result.output
    assert "not captured" in result.output
    assert "0 kernels" not in result.output


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 4097, 3 * 4096 + 17])
def test_sha256_of_equals_hashlib_over_the_whole_file(tmp_path: Path, size: int) -> None:
    """The digest reads the file through one reused buffer; every byte must count once, whatever
    the last block's length (a 4 KiB block here, so sizes straddle block boundaries)."""
    data = bytes((i * 7 + 3) % 251 for i in range(size))
    f = tmp_path / "x.bin"
    f.write_bytes(data)
    assert sha256_of(f, chunk=4096) == hashlib.sha256(data).hexdigest()
    assert sha256_of(f) == hashlib.sha256(data).hexdigest()
