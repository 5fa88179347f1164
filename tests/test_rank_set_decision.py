"""Several files are one run's ranks only when they are one (issue 30, item 8).

Rank metadata, the same kernels, or --rank-set make a rank set; two unrelated captures are
summarised one by one (as `nsys stats a b`), whatever digits their names hold, and `pa analyze`
refuses to judge them as one run. No reader ever sees a Python None.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import needs_real_profile, real_nsys_profile, real_nsys_profiles
from testkit.cache import ScenarioProfiles
from testkit.rank_sets import write_rank_set

from pa.cli import main

NONE = re.compile(r"\bNone\b")
OPENMP_T4 = real_nsys_profile("nsys2023.3_openmp_t4.sqlite")
QCU = real_nsys_profile("nsys2024.1_qcu_no_gpu_activity.sqlite")


def _run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, list(args), env={"COLUMNS": "200"})
    return r.exit_code, r.stdout, r.stderr


def _mpi_ranks(path: Path) -> int:
    """Independent: rows of the export's MPI rank table (0 when there is none)."""
    with sqlite3.connect(path) as con:
        if not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'MPI_RANKS'").fetchone():
            return 0
        return int(con.execute("SELECT COUNT(*) FROM MPI_RANKS").fetchone()[0])


@pytest.fixture(scope="module")
def unrelated(tmp_path_factory: pytest.TempPathFactory, scenario_profiles: ScenarioProfiles) -> list[Path]:
    """Two unrelated planted captures with digits in their names (no MPI metadata, no shared kernel)."""
    d = tmp_path_factory.mktemp("unrelated")
    a = Path(shutil.copy(scenario_profiles.path("launch_bound", "nsys"), d / "app_t4.sqlite"))
    b = Path(shutil.copy(scenario_profiles.path("dominant_kernel", "nsys"), d / "report1.sqlite"))
    return [a, b]


def test_unrelated_files_are_summarised_one_by_one(unrelated: list[Path]) -> None:
    assert [_mpi_ranks(p) for p in unrelated] == [0, 0]
    code, out, err = _run("summary", *map(str, unrelated))
    assert code == 0, err
    assert "not the ranks of one run" in err and "--rank-set" in err
    assert "Ranks (" not in out and "imbalance" not in out and "straggler" not in out
    heads = [out.index(p.name) for p in unrelated]
    assert heads == sorted(heads)      # in the order given, not by the digit in the name
    code, out, _ = _run("summary", "--json", *map(str, reversed(unrelated)))
    docs = json.loads(out)
    assert code == 0 and [d["profile"]["file_name"] for d in docs] == [p.name for p in reversed(unrelated)]


def test_analyze_of_unrelated_files_is_one_line_and_exit_2(unrelated: list[Path]) -> None:
    code, out, err = _run("analyze", *map(str, unrelated), "--no-llm")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "not the ranks of one run" in err and "Traceback" not in err


def test_rank_set_flag_makes_them_one_run_and_prints_no_none(unrelated: list[Path]) -> None:
    code, out, err = _run("summary", "--rank-set", *map(str, unrelated))
    assert code == 0, err
    assert "Ranks (2)" in out and not NONE.search(out), out


def test_same_kernels_without_rank_metadata_are_one_run(tmp_path: Path,
                                                        scenario_profiles: ScenarioProfiles) -> None:
    src = scenario_profiles.path("launch_bound", "nsys")
    files = [Path(shutil.copy(src, tmp_path / f"copy{i}.sqlite")) for i in range(2)]
    assert _mpi_ranks(files[0]) == 0
    code, out, err = _run("summary", *map(str, files))
    assert code == 0 and "Ranks (2)" in out and "not the ranks" not in err


def test_a_planted_rank_set_is_still_one_run(tmp_path: Path) -> None:
    paths = write_rank_set(tmp_path / "run", ranks=3, straggler=1, iters=5)
    assert [_mpi_ranks(p) for p in paths] == [1, 1, 1]
    code, out, err = _run("summary", str(tmp_path / "run"))
    assert code == 0 and "Ranks (3)" in out and "not the ranks" not in err


@needs_real_profile(OPENMP_T4, QCU)
def test_two_real_unrelated_captures_are_not_a_rank_set() -> None:
    """The issue's case: openmp_t4 became "rank 4" of a set with qcu, imbalance 200 %."""
    code, out, err = _run("summary", str(OPENMP_T4), str(QCU))
    assert code == 0 and "not the ranks of one run" in err
    assert "200.0 %" not in out and "Ranks (" not in out and not NONE.search(out)
    assert out.index(OPENMP_T4.name) < out.index(QCU.name)


@pytest.mark.slow
@pytest.mark.skipif(not real_nsys_profiles(), reason="no shared real profiles")
@pytest.mark.parametrize("rank_set", [False, True], ids=["separate", "rank-set"])
def test_no_none_in_summary_text_of_every_shared_profile(rank_set: bool) -> None:
    """Every shared profile's `pa summary` text, one by one and forced into one rank set: no None."""
    code, out, err = _run("summary", *(["--rank-set", "--workers", "1"] if rank_set else []),
                          *map(str, real_nsys_profiles()))
    assert code == 0, err
    hits = [out[max(0, m.start() - 80):m.end() + 20] for m in NONE.finditer(out)]
    assert not hits, hits[:3]
