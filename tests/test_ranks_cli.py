"""`pa summary` / `pa analyze` on a generated 8-rank run with one compute straggler (issue 7 "done when")."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from testkit.rank_sets import write_rank_set

from pa.cli import main
from pa.ranks import summarize_ranks
from pa.ranks.model import MultiRankSummary
from pa.report.schema import schema_errors

STRAGGLER = 5
RANKS = 8


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("ranks8") / "run"
    write_rank_set(d, "compute_straggler", ranks=RANKS, straggler=STRAGGLER)
    return d


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _analyze(run_dir: Path, *extra: str) -> dict[str, Any]:
    r = _invoke("analyze", str(run_dir), "--no-llm", "--format", "json", *extra)
    assert r.exit_code == 0, r.output
    doc: dict[str, Any] = json.loads(r.output)
    return doc


def _numbers(doc: dict[str, Any]) -> dict[str, Any]:
    """Everything but the provenance's time stamps and command line."""
    out = {k: v for k, v in doc.items() if k != "provenance"}
    out["provenance"] = {k: v for k, v in doc["provenance"].items()
                         if k not in ("generated_at", "duration_s", "command_line")}
    return out


@pytest.fixture(scope="module")
def report(run_dir: Path) -> dict[str, Any]:
    return _analyze(run_dir, "--workers", "1")


def test_analyze_names_the_straggler_and_the_imbalance_type(report: dict[str, Any]) -> None:
    assert schema_errors(report) == []
    cr = report["cross_rank"]
    assert cr["rank_count"] == RANKS and [r["rank"] for r in cr["ranks"]] == list(range(RANKS))
    assert cr["straggler_rank"] == STRAGGLER and cr["most_waited_on_rank"] == STRAGGLER
    assert cr["imbalance_side"] == "compute"
    assert cr["primary_rank"] == STRAGGLER
    assert report["profiles"][report["primary_profile"]]["file_name"] == f"rank_{STRAGGLER}.db"
    assert [p["phase"] for p in cr["phases"]] == ["init", "solve"] and cr["phase_alignment"] == "name"
    assert cr["collective_count"] == 1 and cr["collectives"][0]["last_arrivals"] == {str(STRAGGLER): 40}
    top = report["hypotheses"][0]
    assert top["bottleneck_type"] == "mpi_imbalance" and top["rule_id"] == "MPI-IMB-002"
    assert f"Rank {STRAGGLER}" in top["title"] and "compute-side" in top["title"]
    assert f"rank {STRAGGLER}" in top["suggestion"]
    # cross-rank evidence is traced to the relations behind it
    v = next(v for e in top["evidence"] for v in e["values"] if v["name"] == "cross_rank.straggler_rank")
    assert v["value"] == STRAGGLER and v["section"] == "cross_rank" and "mpi_calls" in v["relations"]


def test_workers_two_gives_the_same_numbers(run_dir: Path, report: dict[str, Any]) -> None:
    assert _numbers(_analyze(run_dir, "--workers", "2")) == _numbers(report)


@pytest.mark.slow  # starts a local dask cluster of two worker processes (~10 s)
@pytest.mark.skipif(importlib.util.find_spec("dask") is None, reason="dask not installed (pa[dask])")
def test_dask_local_cluster_gives_the_same_numbers(run_dir: Path, report: dict[str, Any]) -> None:
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        doc = _analyze(run_dir, "--executor", "dask", "--scheduler", cluster.scheduler_address)
    assert _numbers(doc) == _numbers(report)


def test_every_format_shows_the_cross_rank_block(run_dir: Path, tmp_path: Path) -> None:
    for fmt in ("text", "markdown", "html"):
        r = _invoke("analyze", str(run_dir), "--no-llm", "--workers", "1", "-f", fmt)
        assert r.exit_code == 0, r.output
        out = r.output
        if fmt == "html":
            assert len(re.findall(r'class="bar rank-bar[ "]', out)) == RANKS
            assert out.count("rank-straggler") >= 1 and 'id="phase-imbalance"' in out
            assert "Straggler: <b>rank 5</b>" in out
        elif fmt == "markdown":
            assert "**Straggler: rank 5**" in out and "Imbalance: **compute**" in out
        else:
            assert "straggler: rank 5" in out and "imbalance: compute" in out
        assert "collective skew" in out.lower()


def test_primary_rank_option(run_dir: Path) -> None:
    doc = _analyze(run_dir, "--workers", "1", "--primary-rank", "2")
    assert doc["cross_rank"]["primary_rank"] == 2
    assert doc["profiles"][doc["primary_profile"]]["file_name"] == "rank_2.db"
    # the cross-rank rule still names the straggler, whichever rank the details come from
    assert any(h["rule_id"] == "MPI-IMB-002" and "Rank 5" in h["title"] for h in doc["hypotheses"])
    r = CliRunner().invoke(main, ["analyze", str(run_dir), "--no-llm", "--primary-rank", "99"])
    assert r.exit_code == 2 and "no such rank" in r.output


def test_option_errors(run_dir: Path) -> None:
    one = str(run_dir / "rank_0.db")
    r = CliRunner().invoke(main, ["analyze", one, "--no-llm", "--primary-rank", "0"])
    assert r.exit_code == 2 and "several ranks" in r.output
    r = CliRunner().invoke(main, ["summary", str(run_dir), "--scheduler", "tcp://x:1"])
    assert r.exit_code == 2 and "--executor dask" in r.output


def test_single_file_report_has_no_cross_rank_block_and_skips_cross_rank_rules(run_dir: Path) -> None:
    doc = _analyze(run_dir / "rank_0.db")
    assert doc["cross_rank"] is None and doc["ranks"] is None
    o = next(o for o in doc["rule_outcomes"] if o["rule_id"] == "MPI-IMB-002")
    assert o["status"] == "skipped" and "several ranks" in o["reason"]


def test_summary_multi_rank_text_and_json(run_dir: Path) -> None:
    r = _invoke("summary", str(run_dir), "--workers", "1")
    assert r.exit_code == 0, r.output
    assert "straggler rank: 5" in r.output and "imbalance: compute" in r.output
    r = _invoke("summary", *[str(run_dir / f"rank_{i}.db") for i in range(RANKS)], "--json", "--max-phases", "1")
    assert r.exit_code == 0, r.output
    doc = MultiRankSummary.model_validate_json(r.output)
    assert [x.rank for x in doc.ranks] == list(range(RANKS)) and {x.rank_source for x in doc.ranks} == {"mpi"}
    assert doc.cross_rank.straggler_rank == STRAGGLER
    assert all(x.summary.phases is not None and len(x.summary.phases) == 1 for x in doc.ranks)
    r = _invoke("summary", str(run_dir / "rank_0.db"), "--json")
    assert json.loads(r.output)["profile"]["file_name"] == "rank_0.db"


def test_progress_callback_counts_every_file(run_dir: Path) -> None:
    seen: list[tuple[int, int]] = []
    summarize_ranks([run_dir], workers=2, progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (RANKS, RANKS) and [d for d, _ in seen] == list(range(1, RANKS + 1))


@pytest.mark.parametrize("odd", ["loop", "device", "dangling"])
def test_a_rank_directory_with_an_odd_entry_says_so(tmp_path: Path, odd: str) -> None:
    """Issue 26.17: a symlink loop, a link to /dev/zero or a dangling link among the rank files is named
    (exit 2), not skipped so that the run silently has one rank less."""
    import os

    from testkit.nsys_writer import write_nsys
    from testkit.scenarios import example

    d = tmp_path / "run"
    d.mkdir()
    write_nsys(example(), d / "report.0.sqlite")
    bad = d / "report.1.sqlite"
    if odd == "loop":
        os.symlink(bad, bad)
    elif odd == "device":
        os.symlink("/dev/zero", bad)
    else:
        os.symlink(tmp_path / "missing.sqlite", bad)
    res = CliRunner().invoke(main, ["summary", str(d)])
    assert res.exit_code == 2 and "report.1.sqlite: not a regular file" in res.output
    assert len(res.output.strip().splitlines()) == 1
