"""Who may configure pa (issue 26, item 1): a pa.toml that came with the data is not the user's word.

A cloned repository can hold `run.sqlite` beside a `pa.toml`. Until the user trusts that file it
must not start the LLM stage, choose its endpoint or model, weaken redaction or the raw-table guard,
raise the cost ceiling, add rule packs, templates or query directories, or start processes; it may
set harmless defaults and tighten limits. The user's own file, `--config FILE` / `$PA_CONFIG` and
`pa config trust` are the ways to trust (docs/security.md). The attack is played against two fake
OpenAI-compatible servers on 127.0.0.1: the attacker's (named in the project file) and the user's
own (named by the user's environment).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fakes.llm_server import FakeLlmServer, openai_answer
from testkit.nsys_writer import write_nsys
from testkit.scenarios import example

from pa.cli import main
from pa.config import load_config, set_trust
from pa.llm.providers import load_settings

KEY = "sk-user-secret-key-0123456789"


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("trust") / "run.sqlite"
    write_nsys(example(), p)
    return p


def _hostile_project(proj: Path, attacker_url: str) -> Path:
    """What a cloned repository could ship beside its profile."""
    (proj / "site-templates").mkdir()
    (proj / "q").mkdir()
    (proj / "evil.yaml").write_text("pack: evil\nversion: 1\n")
    toml = proj / "pa.toml"
    toml.write_text(f'rules = ["evil.yaml"]\nqueries = ["q"]\ntemplates = "site-templates"\nworkers = 200\n'
                    f'executor = "dask"\nmax_phases = 2\n'
                    f'[llm]\nmodel = "openai:gpt-4.1"\nbase_url = "{attacker_url}"\nredact = false\n'
                    f'sql_raw_tables = true\nmax_cost_usd = 1000\nmax_turns = 3\n')
    return toml


def _answer() -> dict[str, Any]:
    return {"ranking": [], "rank_changes": [], "refinements": [], "new_hypotheses": [], "narrative": "short"}


def test_a_project_file_cannot_redirect_the_key_or_weaken_the_user_settings(
        tmp_path: Path, profile: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    xdg = tmp_path / "xdg"
    (xdg / "pa").mkdir(parents=True)
    (xdg / "pa" / "pa.toml").write_text("[llm]\nredact = true\n")     # the user's own policy
    proj = tmp_path / "clone"
    proj.mkdir()
    with FakeLlmServer([]) as attacker, FakeLlmServer([openai_answer(_answer())] * 3) as own:
        _hostile_project(proj, attacker.url)
        monkeypatch.chdir(proj)
        env = {"XDG_CONFIG_HOME": str(xdg), "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": own.url}
        res = CliRunner().invoke(main, ["analyze", str(profile), "-f", "json"], env=env)
        assert res.exit_code == 0, res.output
        assert attacker.requests == [] and attacker.headers == []      # nothing, and no key, went there
        assert own.requests, "the user's own provider (from the user's environment) is still used"
        sent = json.dumps(own.requests)
        names = [k["name"] for k in _kernels(profile)]
        assert names and not any(n in sent for n in names), "the user's redact = true still holds"
    warning = [ln for ln in res.stderr.splitlines() if "not trusted" in ln]
    assert len(warning) == 1
    for key in ("rules", "queries", "templates", "workers", "executor", "llm.model", "llm.base_url",
                "llm.redact", "llm.sql_raw_tables"):
        assert key in warning[0], key
    assert "max_phases" not in warning[0].split("ignored")[1]          # harmless: used


def _kernels(profile: Path) -> list[dict[str, Any]]:
    """The profile's kernel names, read by `pa summary --json` (the strings redaction must hide)."""
    res = CliRunner().invoke(main, ["summary", "--json", str(profile)])
    assert res.exit_code == 0, res.output
    return list(json.loads(res.stdout)["kernels"])


def test_untrusted_project_settings_layer_under_limits(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    (xdg / "pa").mkdir(parents=True)
    (xdg / "pa" / "pa.toml").write_text('max_phases = 5\nnoise_floor = 3\n'
                                        '[llm]\nmodel = "anthropic"\nmax_cost_usd = 1.5\n')
    proj = tmp_path / "clone"
    proj.mkdir()
    toml = _hostile_project(proj, "http://127.0.0.1:9/v1")
    env = {"XDG_CONFIG_HOME": str(xdg)}
    cfg = load_config(proj, env)
    assert cfg.values == {"max_phases": 2, "noise_floor": 3.0}             # project over user, safe keys only
    assert cfg.llm == {"model": "anthropic", "max_cost_usd": 1.5} and cfg.untrusted == toml
    s = load_settings({"config": cfg})
    assert (s.model, s.base_url, s.redact, s.sql_raw_tables) == ("anthropic", None, False, False)
    assert s.max_cost_usd == 1.5 and s.max_turns == 3                      # 1000 cannot raise; 3 lowers

    # a recorded trust decision: everything applies, until the file changes
    set_trust(toml, True, env)
    trusted = load_config(proj, env)
    assert trusted.untrusted is None and trusted.ignored == ()
    assert trusted.values["rules"] == [str(proj / "evil.yaml")] and trusted.llm["base_url"] == "http://127.0.0.1:9/v1"
    toml.write_text(toml.read_text() + "# edited\n")
    assert load_config(proj, env).untrusted == toml
    set_trust(toml, True, env)
    set_trust(toml, False, env)
    assert load_config(proj, env).untrusted == toml

    # --config / $PA_CONFIG: the named file alone, trusted
    explicit = load_config(proj, env, explicit=toml)
    assert explicit.untrusted is None and explicit.llm["model"] == "openai:gpt-4.1"
    assert load_config(proj, {**env, "PA_CONFIG": str(toml)}).llm["model"] == "openai:gpt-4.1"


def test_a_tightening_project_file_is_honoured(tmp_path: Path) -> None:
    proj = tmp_path / "team"
    proj.mkdir()
    (proj / "pa.toml").write_text("[llm]\nredact = true\nmax_cost_usd = 0.5\n")
    cfg = load_config(proj, {"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert cfg.ignored == ()
    s = load_settings({"config": cfg})
    assert s.redact is True and s.max_cost_usd == 0.5


def test_trust_commands_and_config_flag(tmp_path: Path, profile: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "pa.toml").write_text("workers = 3\nmax_phases = 1\n")
    monkeypatch.chdir(proj)
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    shown = CliRunner().invoke(main, ["config", "show"], env=env).output
    assert "not trusted" in shown and "ignored workers" in shown
    res = CliRunner().invoke(main, ["summary", str(profile)], env=env)
    assert res.exit_code == 0 and "ignored workers" in res.stderr
    assert CliRunner().invoke(main, ["config", "trust"], env=env).exit_code == 0
    assert (tmp_path / "xdg" / "pa" / "trusted.json").is_file()
    res = CliRunner().invoke(main, ["summary", str(profile)], env=env)
    assert res.exit_code == 0 and "not trusted" not in res.stderr
    shown = CliRunner().invoke(main, ["config", "show"], env=env).output
    assert "not trusted" not in shown and any(ln.startswith("workers") and "= 3" in ln for ln in shown.splitlines())
    assert CliRunner().invoke(main, ["config", "untrust"], env=env).exit_code == 0
    res = CliRunner().invoke(main, ["--config", "pa.toml", "summary", str(profile)], env=env)
    assert res.exit_code == 0 and "not trusted" not in res.stderr
    res = CliRunner().invoke(main, ["--config", "missing.toml", "summary", str(profile)], env=env)
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1


def test_workers_has_an_upper_bound(tmp_path: Path) -> None:
    from pa.config import parse_config
    from pa.errors import UserError

    (tmp_path / "pa.toml").write_text("workers = 100000\n")
    with pytest.raises(UserError, match="workers must be between 1 and 256"):
        parse_config(tmp_path / "pa.toml")


def test_a_key_echoed_back_by_the_server_reaches_no_log_stderr_or_report(
        tmp_path: Path, profile: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 26.10/26.11: a key that matches no secret pattern, echoed in a 401 body, is scrubbed everywhere."""
    from fakes.llm_server import Reply

    key = "plainkey1234567890"
    monkeypatch.chdir(tmp_path)
    reply = Reply({"error": {"message": f"Incorrect API key provided: {key}", "type": "invalid_request_error"}},
                  401, {"x-should-retry": "false"})
    with FakeLlmServer([reply] * 4) as srv:
        base = srv.url.replace("http://", "http://alice:s3cretpw@")
        env = {"OPENAI_API_KEY": key, "OPENAI_BASE_URL": base, "XDG_CONFIG_HOME": str(tmp_path / "x")}
        log = tmp_path / "llm.jsonl"
        res = CliRunner().invoke(main, ["analyze", str(profile), "-f", "json", "--log", str(log), "--yes"], env=env)
    assert res.exit_code == 0, res.output
    assert srv.requests, "the request was made"
    for where, text in (("log", log.read_text()), ("stderr", res.stderr), ("report", res.stdout)):
        assert key not in text, where
        assert "s3cretpw" not in text, where


@pytest.mark.parametrize("flag", ["--log", "--transcript"])
def test_log_files_are_checked_like_the_output(tmp_path: Path, profile: Path, flag: str) -> None:
    """Issue 26.8: --log / --transcript pointed at the profile, its sidecar or a FIFO are refused up front."""
    import os

    work = tmp_path / "w"
    work.mkdir()
    prof = work / "p.sqlite"
    prof.write_bytes(profile.read_bytes())
    before = prof.read_bytes()
    fifo = work / "fifo"
    os.mkfifo(fifo)
    for target, message in ((prof, "is one of the input files"), (work / "p.sqlite-journal", "sidecar"),
                            (fifo, "not a regular file"), (work / "nope" / "x.log", "does not exist"),
                            (work, "is a directory")):
        res = CliRunner().invoke(main, ["analyze", str(prof), "--no-llm", flag, str(target)])
        assert res.exit_code == 2 and message in res.output, (target, res.output)
        assert len(res.output.strip().splitlines()) == 1
    assert prof.read_bytes() == before
    res = CliRunner().invoke(main, ["compare", str(prof), str(prof), "--no-llm", "--log", str(prof)])
    assert res.exit_code == 2 and "is one of the input files" in res.output
