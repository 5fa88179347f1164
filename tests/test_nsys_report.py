"""`pa summary/analyze run.nsys-rep`: exported by `nsys` (a stand-in script here) into a cache keyed
by the report's content, reused next time; without nsys, one line giving the export command."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_query_dirs import even_row_ids
from testkit.nsys_writer import write_nsys
from testkit.scenarios import example

from pa.cli import main

STAND_IN = """#!{python}
# Stand-in for Nsight Systems' `nsys export`: checks the arguments pa passes and copies a generated
# export to --output, counting its calls in a file beside it.
import shutil, sys
args = sys.argv[1:]
assert args[:3] == ["export", "--type", "sqlite"], args
out = args[args.index("--output") + 1]
assert args[-1].endswith(".nsys-rep"), args
with open({calls!r}, "a") as fh:
    fh.write(args[-1] + "\\n")
shutil.copyfile({source!r}, out)
"""


@pytest.fixture()
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    source = tmp_path / "generated.sqlite"
    write_nsys(example(), source)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    calls = tmp_path / "calls.txt"
    nsys = bindir / "nsys"
    nsys.write_text(STAND_IN.format(python=sys.executable, calls=str(calls), source=str(source)))
    nsys.chmod(nsys.stat().st_mode | stat.S_IXUSR)
    report = tmp_path / "run.nsys-rep"
    report.write_bytes(b"not really a report, but its content is hashed: " + os.urandom(16))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return {"source": source, "bin": bindir, "calls": calls, "report": report, "cache": tmp_path / "cache"}


def _kernels(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    finally:
        conn.close()


def test_summary_of_a_report_exports_once_and_reuses_the_cache(world, monkeypatch):
    monkeypatch.setenv("PATH", f"{world['bin']}{os.pathsep}{os.environ['PATH']}")
    before = world["report"].read_bytes()
    for _ in range(2):
        res = CliRunner().invoke(main, ["summary", "--json", str(world["report"])])
        assert res.exit_code == 0, res.output
        doc = json.loads(res.output)
        assert doc["gpu"]["kernel_count"] == _kernels(world["source"])
        assert doc["profile"]["file_name"] == "run.sqlite"   # the report's name, not the hash
    assert world["calls"].read_text().splitlines() == [str(world["report"])]   # exported once
    exports = list(world["cache"].rglob("*.sqlite"))
    assert len(exports) == 1 and exports[0].name == "run.sqlite"
    assert world["report"].read_bytes() == before
    res = CliRunner().invoke(main, ["analyze", "--no-llm", "-f", "json", str(world["report"])])
    assert res.exit_code == 0, res.output
    assert len(world["calls"].read_text().splitlines()) == 1


def test_a_changed_report_is_exported_again(world, monkeypatch):
    monkeypatch.setenv("PATH", f"{world['bin']}{os.pathsep}{os.environ['PATH']}")
    assert CliRunner().invoke(main, ["summary", str(world["report"])]).exit_code == 0
    world["report"].write_bytes(b"another capture")
    assert CliRunner().invoke(main, ["summary", str(world["report"])]).exit_code == 0
    assert len(world["calls"].read_text().splitlines()) == 2


def test_without_nsys_one_line_with_the_command_to_run(world, monkeypatch):
    monkeypatch.setenv("PATH", str(world["bin"].parent / "empty"))
    res = CliRunner().invoke(main, ["summary", str(world["report"])])
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert len(lines) == 1
    assert f"nsys export --type sqlite --force-overwrite true --output {world['report'].with_suffix('.sqlite')} " \
           f"{world['report']}" in lines[0]


def test_a_failing_nsys_is_one_line_and_leaves_no_partial_export(world, monkeypatch):
    (world["bin"] / "nsys").write_text(f"#!{sys.executable}\nimport sys\nprint('report is corrupt', "
                                       "file=sys.stderr)\nsys.exit(3)\n")
    monkeypatch.setenv("PATH", f"{world['bin']}{os.pathsep}{os.environ['PATH']}")
    res = CliRunner().invoke(main, ["summary", str(world["report"])])
    assert res.exit_code == 2 and "exit 3" in res.output and "report is corrupt" in res.output
    assert not list(world["cache"].rglob("*.sqlite"))


def test_a_hung_nsys_is_stopped(world, tmp_path):
    from pa.errors import UserError
    from pa.nsys_report import sqlite_for

    (world["bin"] / "nsys").write_text(f"#!{sys.executable}\nimport time\ntime.sleep(30)\n")
    env = {"PATH": str(world["bin"]), "XDG_CACHE_HOME": str(tmp_path / "c2")}
    with pytest.raises(UserError, match=r"did not finish within 0\.5 s"):
        sqlite_for(world["report"], env=env, timeout_s=0.5)


def test_compare_reads_reports_and_query_directories(world, monkeypatch, tmp_path):
    from pa import pipeline

    monkeypatch.setenv("PATH", f"{world['bin']}{os.pathsep}{os.environ['PATH']}")
    qdir = tmp_path / "q"
    from pa.paths import data_dir

    version_dir = qdir / "nsys" / "3.13"
    version_dir.mkdir(parents=True)
    (version_dir / "kernels.sql").write_text(even_row_ids((data_dir("queries") / "nsys" / "base" / "kernels.sql")
                                                          .read_text()))
    full = pipeline.load_capture(world["report"])
    half = pipeline.load_capture(world["report"], query_dirs=(qdir,))
    assert full.gpu.kernel_count == _kernels(world["source"])
    conn = sqlite3.connect(world["source"])
    even = conn.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid % 2 = 0").fetchone()[0]
    conn.close()
    assert half.gpu.kernel_count == even < full.gpu.kernel_count
    assert len(world["calls"].read_text().splitlines()) == 1   # exported once, then from the cache


def test_report_names_modes_and_junk_exports(world, monkeypatch):
    """Issue 26.14: a report named like an option is a file; the export is private; junk is never cached."""
    monkeypatch.setenv("PATH", f"{world['bin']}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(world["report"].parent)
    odd = Path("--stats=true.nsys-rep")
    odd.write_bytes(b"another report " + os.urandom(16))
    res = CliRunner().invoke(main, ["summary", "--json", "--", str(odd)])
    assert res.exit_code == 0, res.output
    passed = world["calls"].read_text().splitlines()[-1]
    assert passed == str(odd.absolute()) and not passed.startswith("-")
    exports = list(world["cache"].rglob("*.sqlite"))
    assert exports and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in exports)
    assert stat.S_IMODE((world["cache"] / "pa" / "nsys-export").stat().st_mode) == 0o700
    # a stand-in that exits 0 after writing junk: refused, nothing cached, the cache named
    junk = world["bin"] / "nsys"
    junk.write_text(f"#!{sys.executable}\nimport sys\nargs = sys.argv[1:]\n"
                    "open(args[args.index('--output') + 1], 'w').write('junk')\n")
    fresh = world["report"].with_name("fresh.nsys-rep")
    fresh.write_bytes(b"a third report " + os.urandom(16))
    before = set(world["cache"].rglob("*.sqlite"))
    res = CliRunner().invoke(main, ["summary", str(fresh)])
    assert res.exit_code == 2 and "did not write an SQLite file" in res.output and "nsys-export" in res.output
    assert set(world["cache"].rglob("*.sqlite")) == before
