"""Every case of pa's bad-input corpus (tests/corpus): right exit code, one error line, nothing
executed, nothing written beside the inputs, the inputs unchanged."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from corpus import cases
from corpus.run import problems, run_case


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = tmp_path_factory.mktemp("corpus")
    cases.build(workdir)
    return workdir


def test_corpus_is_as_large_as_the_issue_asks():
    groups = [c.group for c in cases.CASES]
    assert groups.count("profile") >= 82
    assert groups.count("rules") >= 61
    assert groups.count("query") >= 10 and groups.count("template") >= 10
    assert len({c.name for c in cases.CASES}) == len(cases.CASES)


@pytest.mark.slow  # 225 cases, each a full pa run in-process
@pytest.mark.parametrize("case", cases.CASES, ids=lambda c: c.name)
def test_case(case: cases.Case, corpus_dir: Path) -> None:
    if case.skip_as_root and os.geteuid() == 0:
        pytest.skip("permission bits do not stop root")
    d = corpus_dir / case.name
    if (d / cases.UNBUILT).is_file():
        pytest.skip((d / cases.UNBUILT).read_text())
    out = run_case(case, d)
    found = problems(case, out, d)
    assert not found, f"{case.name}: " + "; ".join(found) + f"\nstdout: {out.stdout[-600:]}\nstderr: {out.stderr}"


def test_no_finding_rests_on_a_skipped_relation(corpus_dir: Path) -> None:
    import json

    from click.testing import CliRunner

    from pa.cli import main

    profile = corpus_dir / "stringids_dropped" / "p.sqlite"
    r = CliRunner().invoke(main, ["analyze", "--no-llm", "-f", "json", str(profile)])
    doc = json.loads(r.stdout)
    skipped = {s["what"] for s in doc["skipped"]}
    assert {"kernels", "api_calls"} <= skipped
    # without the host's API calls nothing can be said of what the host did in a GPU gap: no gap is
    # host work, and no finding reads the host's share of the idle time
    for d in doc["summary"]["devices"]:
        assert "cpu_stall" not in d["idle_by_cause"], d["idle_by_cause"]
    host_rules = {"GPU-IDLE-001", "GPU-IDLE-002", "GPU-SYNC-001", "GPU-LAUNCH-001", "GPU-PHASE-001"}
    for h in doc["hypotheses"]:
        assert h["rule_id"] not in host_rules, h["rule_id"]
        cited = {v["name"] for e in h["evidence"] for v in e["values"]}
        assert not cited & {"host_stall_idle_frac", "host_stall_recoverable_frac", "sync_recoverable_frac",
                            "launch_recoverable_frac"}, h["rule_id"]
