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


@pytest.mark.parametrize("case", cases.CASES, ids=lambda c: c.name)
def test_case(case: cases.Case, corpus_dir: Path) -> None:
    if case.skip_as_root and os.geteuid() == 0:
        pytest.skip("permission bits do not stop root")
    d = corpus_dir / case.name
    out = run_case(case, d)
    found = problems(case, out, d)
    assert not found, f"{case.name}: " + "; ".join(found) + f"\nstdout: {out.stdout[-600:]}\nstderr: {out.stderr}"
