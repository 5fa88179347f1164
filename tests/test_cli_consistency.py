"""One command line: typos get the nearest name, every command takes -f/-o/--json and --color, a closed
pipe is no failure, errors name the closest spelling (issue 29 item 4, issue 30 items 10–13)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pa.cli import main
from pa.cli_options import use_color


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "demo.sqlite"
    assert CliRunner().invoke(main, ["example", str(path)]).exit_code == 0
    return path


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, list(args))
    return res.exit_code, res.stdout, res.stderr


def test_analyse_is_analyze_and_typos_get_the_nearest_command(demo: Path) -> None:
    code, out, _ = run("analyse", str(demo), "--no-llm", "-f", "json")
    assert code == 0 and json.loads(out)["hypotheses"]
    code, _, err = run("anlyze", str(demo))
    assert code == 2 and "No such command 'anlyze'. Did you mean 'analyze'?" in err
    code, _, err = run("summarise", str(demo), "--json")
    assert code == 0
    code, _, err = run("rules", "lsit")
    assert code == 2 and "Did you mean 'list'?" in err
    code, _, err = run("qqqq")
    assert code == 2 and "Did you mean" not in err


def test_every_command_takes_format_output_and_json(demo: Path, tmp_path: Path) -> None:
    code, out, _ = run("summary", str(demo), "-f", "json")
    assert code == 0 and json.loads(out)["span_ns"] > 0
    code, out2, _ = run("summary", str(demo), "--json")
    assert code == 0 and json.loads(out2) == json.loads(out)
    code, _, err = run("summary", str(demo), "-o", str(tmp_path / "s.json"))
    assert code == 0 and json.loads((tmp_path / "s.json").read_text())["span_ns"] == json.loads(out)["span_ns"]
    assert err.strip() == "wrote s.json (json)"
    code, _, _ = run("summary", str(demo), "-o", str(tmp_path / "s.txt"))
    text = (tmp_path / "s.txt").read_text()
    assert code == 0 and "demo.sqlite" in text and "\x1b[" not in text
    code, out, _ = run("analyze", str(demo), "--no-llm", "--json")
    assert code == 0 and json.loads(out)["hypotheses"]
    code, _, err = run("analyze", str(demo), "--no-llm", "--json", "-f", "text")
    assert code == 2 and "--json and --format text disagree" in err
    code, _, err = run("summary", str(demo), "-o", str(tmp_path / "s.html"))
    assert code == 2 and "text or json" in err


def test_a_device_output_is_named_by_its_path(demo: Path) -> None:
    code, _, err = run("analyze", str(demo), "--no-llm", "-o", os.devnull)
    assert code == 0 and err.strip() == f"wrote {os.devnull} (text)"


def test_color_follows_the_flag_then_no_color_then_the_terminal(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    assert use_color("auto", True) and not use_color("auto", False)
    assert use_color("always", False) and not use_color("never", True)
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color("auto", True) and use_color("always", True)
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert use_color("auto", False)
    monkeypatch.delenv("FORCE_COLOR")
    _, colored, _ = run("analyze", str(demo), "--no-llm", "--color", "always")
    _, plain, _ = run("analyze", str(demo), "--no-llm", "--color", "never")
    assert "\x1b[" in colored and "\x1b[" not in plain


def test_a_closed_pipe_is_no_failure(demo: Path) -> None:
    for args in (["summary", str(demo)], ["analyze", str(demo), "--no-llm"], ["summary", str(demo), "--json"]):
        pa = subprocess.Popen([sys.executable, "-m", "pa.cli", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert pa.stdout is not None and pa.stderr is not None
        pa.stdout.readline()
        pa.stdout.close()          # the reader goes away, as `| head -1` does
        err = pa.stderr.read().decode()
        assert pa.wait(timeout=60) == 0, (args, err)
        assert "Exception" not in err and "Broken pipe" not in err, err


def test_errors_name_the_closest_spelling_not_every_name(tmp_path: Path) -> None:
    code, _, err = run("rules", "show", "GPU-IDEL-001")
    assert code == 2 and "did you mean GPU-IDLE-001" in err and "MPI-TIME-001" not in err
    code, _, err = run("rules", "show", "NOPE")
    assert code == 2 and "`pa rules list` lists them" in err and "GPU-IDLE-001" not in err
    cfg = tmp_path / "pa.toml"
    cfg.write_text('max_phasess = 3\n')
    code, _, err = run("--config", str(cfg), "rules", "list")
    assert code == 2 and "unknown key 'max_phasess'; did you mean max_phases?" in err and "workers" not in err


def test_the_compare_narrative_keeps_acronyms_and_gap_buckets_say_microseconds(demo: Path, tmp_path: Path) -> None:
    from pa.compare.narrative import _label
    from pa.metrics.gaps import GAP_BUCKETS

    assert _label("gpu busy") == "GPU busy" and _label("kernel time") == "Kernel time"
    assert [b[0] for b in GAP_BUCKETS][:3] == ["<10 µs", "10–100 µs", "100 µs–1 ms"]
    assert not any("us" in b[0].replace("µs", "") for b in GAP_BUCKETS)
