"""User query directories layered over the bundled sets: --queries, $PA_QUERIES, pa.toml, the LLM
workspace; `pa queries --profile`, `pa queries check`, `pa queries show`; the newer-version warning."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from testkit.nsys_writer import write_nsys
from testkit.scenarios import example

from pa.cli import main
from pa.errors import UserError
from pa.paths import data_dir
from pa.profile.queryset import resolve

BUNDLED_KERNELS = data_dir("queries") / "nsys" / "base" / "kernels.sql"


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("qd") / "ex.sqlite"
    write_nsys(example(), p)
    return p


def _schema(profile: Path) -> str:
    conn = sqlite3.connect(profile)
    try:
        from pa.profile.detect import detect

        return detect(conn, profile).schema_version
    finally:
        conn.close()


def _even_rows_only(tmp_path: Path, profile: Path, name: str = "site-queries") -> Path:
    """A user directory holding one changed file: only the kernels of even row ids."""
    qdir = tmp_path / name
    version = resolve("nsys", _schema(profile)).version
    target = qdir / "nsys" / version
    target.mkdir(parents=True)
    (target / "kernels.sql").write_text(even_row_ids(BUNDLED_KERNELS.read_text()))
    return qdir


def even_row_ids(query_file: str) -> str:
    """`query_file` (header, then its Jinja SELECT) keeping only the rows of even row_id."""
    lines = query_file.rstrip().rstrip(";").splitlines()
    n = next(i for i, line in enumerate(lines) if not line.startswith("--"))
    return "\n".join([*lines[:n], "SELECT * FROM (", *lines[n:], ") WHERE row_id % 2 = 0", ""])


def _kernel_count(profile: Path, streams: str = "") -> int:
    conn = sqlite3.connect(profile)
    try:
        return conn.execute(f"SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL {streams}").fetchone()[0]
    finally:
        conn.close()


def _summary(args: list[str], **env: str) -> dict:
    res = CliRunner().invoke(main, ["summary", "--json", *args], env=env or None)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_one_changed_file_overrides_only_that_relation(tmp_path, profile):
    qdir = _even_rows_only(tmp_path, profile)
    qs = resolve("nsys", _schema(profile), query_dirs=[qdir])
    assert qs.files["kernels"].source == str(qdir)
    assert qs.files["copies"].source == "bundled"
    assert qs.files["kernels"].display_path.startswith("site-queries/nsys/")
    stream7 = _kernel_count(profile, "WHERE rowid % 2 = 0")
    assert 0 < stream7 < _kernel_count(profile)
    for args, env in ((["--queries", str(qdir)], {}), ([], {"PA_QUERIES": str(qdir)})):
        doc = _summary([*args, str(profile)], **env)
        assert doc["gpu"]["kernel_count"] == stream7, (args, env)
        paths = {q["relation"]: q["path"] for q in doc["profile"]["query_files"]}
        assert paths["kernels"].startswith("site-queries/") and not paths["copies"].startswith("site-queries/")
    assert _summary([str(profile)])["gpu"]["kernel_count"] == _kernel_count(profile)


def test_first_directory_wins_and_a_missing_one_is_an_error(tmp_path, profile):
    first = _even_rows_only(tmp_path, profile, "first")
    second = tmp_path / "second"
    shutil.copytree(first, second)
    (next(second.glob("nsys/*/kernels.sql"))).write_text("-- relation: kernels\nSELECT broken")
    qs = resolve("nsys", _schema(profile), query_dirs=[first, second])
    assert qs.files["kernels"].source == str(first)
    with pytest.raises(UserError, match="not a directory"):
        resolve("nsys", _schema(profile), query_dirs=[tmp_path / "nope"])
    res = CliRunner().invoke(main, ["summary", "--queries", str(tmp_path / "nope"), str(profile)])
    assert res.exit_code == 2 and "not a directory" in res.output and "Traceback" not in res.output


def test_pa_toml_queries_relative_to_the_file_and_flag_overrides(tmp_path, profile, monkeypatch):
    qdir = _even_rows_only(tmp_path, profile)
    (tmp_path / "pa.toml").write_text('queries = ["site-queries"]\n')
    monkeypatch.chdir(tmp_path)
    assert _summary([str(profile)])["gpu"]["kernel_count"] == _kernel_count(profile)  # untrusted: not used
    assert CliRunner().invoke(main, ["config", "trust"]).exit_code == 0
    stream7 = _kernel_count(profile, "WHERE rowid % 2 = 0")
    assert _summary([str(profile)])["gpu"]["kernel_count"] == stream7
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _summary(["--queries", str(empty), str(profile)])["gpu"]["kernel_count"] == _kernel_count(profile)
    out = CliRunner().invoke(main, ["queries", "--profile", str(profile)]).output
    assert any(ln.split()[0] == "kernels" and f"[{qdir}]" in ln for ln in out.splitlines()[1:])
    assert any(ln.split()[0] == "copies" and "[bundled]" in ln for ln in out.splitlines()[1:])


def test_queries_check_reports_resolved_inherited_skipped_and_failed(tmp_path, profile):
    qdir = _even_rows_only(tmp_path, profile)
    res = CliRunner().invoke(main, ["queries", "check", str(qdir), "--profile", str(profile)])
    assert res.exit_code == 0, res.output
    lines = {ln.split()[0]: ln.split()[1] for ln in res.output.splitlines()[1:] if not ln.startswith("  warning")}
    assert lines["kernels"] == "resolved" and lines["copies"] == "inherited"
    assert lines["os_calls"] == "skipped"     # the example profile records no OS runtime calls
    assert f"{_kernel_count(profile, 'WHERE rowid % 2 = 0'):,} rows" in res.output
    bad = next(qdir.glob("nsys/*"))
    (bad / "copies.sql").write_text("-- relation: copies\nSELECT x FROM nowhere\n")
    (bad / "syncs.sql").write_text(BUNDLED_KERNELS.read_text().replace("kernels", "syncs", 1))
    res = CliRunner().invoke(main, ["queries", "check", str(qdir), "--profile", str(profile)])
    assert res.exit_code == 1
    status = {ln.split()[0]: ln for ln in res.output.splitlines()[1:]}
    assert "failed" in status["copies"] and "no such table: nowhere" in status["copies"]
    assert "failed" in status["syncs"] and "output columns differ" in status["syncs"]
    assert status["kernels"].split()[1] == "resolved"
    (bad / "memsets.sql").write_text("no header\n")
    res = CliRunner().invoke(main, ["queries", "check", str(qdir), "--profile", str(profile)])
    assert res.exit_code == 1 and "no '-- relation:' header" in res.output


def test_queries_show_prints_sql_sqlite3_runs(tmp_path, profile):
    res = CliRunner().invoke(main, ["queries", "show", "kernels", "--profile", str(profile)])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("-- relation: kernels\n")
    conn = sqlite3.connect(profile)
    try:
        rows = conn.execute(res.stdout.strip().rstrip(";")).fetchall()
    finally:
        conn.close()
    assert len(rows) == _kernel_count(profile)
    # a templated file: rendered (no Jinja left) for this profile's schema
    templated = [p.stem for p in (data_dir("queries") / "nsys").glob("*/*.sql") if "{%" in p.read_text()]
    assert templated
    res = CliRunner().invoke(main, ["queries", "show", templated[0], "--profile", str(profile)])
    assert "{%" not in res.output and "{{" not in res.output
    res = CliRunner().invoke(main, ["queries", "show", "nosuch", "--profile", str(profile)])
    assert res.exit_code == 2 and "unknown relation" in res.output


@pytest.mark.parametrize(("version", "warns"), [("3.24.14", False), ("3.24.99", False), ("3.25.0", True),
                                                ("4.0", True), ("3.13.2", False)])
def test_newer_minor_than_every_set_warns_once_naming_the_set(version, warns):
    qs = resolve("nsys", version)
    newest = [w for w in qs.warnings if "newer than every query set" in w]
    assert len(newest) == (1 if warns else 0), qs.warnings
    if warns:
        assert "nsys/3.24" in newest[0]


def test_llm_sql_workspace_reads_the_user_directories(tmp_path, profile):
    from pa.llm.sql_tool import SqlSandbox

    qdir = _even_rows_only(tmp_path, profile)
    plain = SqlSandbox(profile)
    layered = SqlSandbox(profile, query_dirs=[qdir])
    try:
        count = "SELECT count(*) AS n FROM pa_kernels"
        assert plain.query(count)["rows"][0][0] == _kernel_count(profile)
        assert layered.query(count)["rows"][0][0] == _kernel_count(profile, "WHERE rowid % 2 = 0")
    finally:
        plain.close()
        layered.close()


def test_the_llm_stage_gets_the_same_directories(tmp_path, profile, monkeypatch):
    from pa import pipeline
    from pa.llm import stage
    from pa.llm.model import LlmOptions

    qdir = _even_rows_only(tmp_path, profile)
    seen = {}

    def fake_run(summary, rule_result, options):
        seen.update(options.extra)
        return None, "fake stage"

    monkeypatch.setattr(stage, "run", fake_run)
    run = pipeline.summarize_run([profile], options=pipeline.RunOptions(query_dirs=(qdir,)))
    assert run.main.gpu.kernel_count == _kernel_count(profile, "WHERE rowid % 2 = 0")
    request = pipeline.AnalyzeRequest(run=pipeline.RunOptions(query_dirs=(qdir,)), llm=LlmOptions(enabled=True))
    pipeline.analyze([profile], request)
    assert seen["query_dirs"] == [str(qdir)] and seen["profile_path"] == str(profile)
    assert stage.settings_from_options(LlmOptions(enabled=True, extra=seen)).model is None


def test_compare_and_rules_explain_read_the_user_directories(tmp_path, profile):
    """pa compare and pa rules explain read profiles through the same layered query sets."""
    qdir = _even_rows_only(tmp_path, profile)
    even = _kernel_count(profile, "WHERE rowid % 2 = 0")
    res = CliRunner().invoke(main, ["compare", "--no-rules", "--no-llm", "-f", "json", "--queries", str(qdir),
                                    str(profile), str(profile)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    counts = [r["before"] for r in doc["overview"] if r["metric"] == "kernel count"]
    assert counts == [even], doc["overview"]
    res = CliRunner().invoke(main, ["rules", "explain", "GPU-KERN-001", str(profile), "--json",
                                    "--queries", str(qdir)])
    assert res.exit_code == 0, res.output
    res_plain = CliRunner().invoke(main, ["rules", "explain", "GPU-KERN-001", str(profile), "--json"])
    assert res.output != res_plain.output   # half the kernels: the rule saw different values


def test_queries_show_redirected_is_a_drop_in_file_check_accepts(tmp_path, profile):
    """Issue 30.3, the user guide's workflow: `show > dir/<set>/kernels.sql`, then `check` resolves it.

    The redirected file lacked its `-- relation:` header, so `check` failed ("query set nsys/?").
    Where the file came from goes to stderr: the redirected file holds the query only.
    """
    listed = CliRunner().invoke(main, ["queries", "--profile", str(profile)]).stdout
    version = listed.splitlines()[0].rsplit("query set nsys/", 1)[1].strip()
    res = CliRunner().invoke(main, ["queries", "show", "kernels", "--profile", str(profile)])
    assert res.exit_code == 0, res.output
    bundled = Path(res.stderr.split("bundled with pa: ", 1)[1].split(")", 1)[0])
    assert bundled.is_file() and bundled.name == "kernels.sql" and str(bundled) not in res.stdout
    header = [ln for ln in bundled.read_text().splitlines() if ln.startswith("-- ")][:2]
    assert res.stdout.splitlines()[:2] == header       # the bundled file's own header, first
    target = tmp_path / "site-queries" / "nsys" / version / "kernels.sql"
    target.parent.mkdir(parents=True)
    target.write_text(res.stdout)
    check = CliRunner().invoke(main, ["queries", "check", str(tmp_path / "site-queries"), "--profile", str(profile)])
    assert check.exit_code == 0, check.output
    assert "nsys/?" not in check.output
    assert any(ln.split()[:2] == ["kernels", "resolved"] for ln in check.output.splitlines())
    summary = CliRunner().invoke(main, ["summary", "--json", "--queries", str(tmp_path / "site-queries"),
                                        str(profile)])
    assert json.loads(summary.stdout)["gpu"]["kernel_count"] == _kernel_count(profile)
