"""pa.toml: every command's defaults, flags over the file, unknown keys refused, `pa config show`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from testkit.nsys_writer import write_nsys
from testkit.scenarios import example

from pa.cli import main
from pa.config import SETTINGS, default_map, load_config, parse_config
from pa.errors import UserError


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("cfg") / "ex.sqlite"
    write_nsys(example(), p)
    return p


def _toml(tmp_path: Path, text: str) -> Path:
    (tmp_path / "pa.toml").write_text(text)
    return tmp_path / "pa.toml"


@pytest.mark.parametrize(("text", "message"), [
    ("max_phase = 3\n", "unknown key 'max_phase'"),
    ("[llm]\nmodle = 'x'\n", "unknown key 'llm.modle'"),
    ("[summary]\nmax_phases = 3\n", "unknown key 'summary'"),
    ("max_phases = 'many'\n", "max_phases must be an integer"),
    ("max_phases = 65\n", "max_phases must be between 1 and 64"),
    ("format = 'pdf'\n", "format must be one of text, markdown, html, json"),
    ("rules = [1]\n", "rules must be a list of paths"),
    ("max_phases = [\n", "not valid TOML"),
])
def test_bad_file_is_one_line_naming_file_and_key(tmp_path, monkeypatch, profile, text, message):
    path = _toml(tmp_path, text)
    with pytest.raises(UserError, match=message):
        parse_config(path)
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["summary", str(profile)])
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and message.split("'")[0] in lines[0]


def test_project_file_wins_over_user_file(tmp_path, monkeypatch):
    xdg = tmp_path / "xdg"
    (xdg / "pa").mkdir(parents=True)
    (xdg / "pa" / "pa.toml").write_text("max_phases = 5\n")
    proj = tmp_path / "proj"
    proj.mkdir()
    env = {"XDG_CONFIG_HOME": str(xdg)}
    assert load_config(proj, env).values == {"max_phases": 5}
    _toml(proj, "max_phases = 2\n")
    cfg = load_config(proj, env)
    assert cfg.values == {"max_phases": 2} and cfg.path == proj / "pa.toml"


def test_paths_are_relative_to_the_file_and_reach_every_target(tmp_path):
    cfg = parse_config(_toml(tmp_path, 'rules = ["site.yaml"]\nqueries = "q"\ntemplates = "t"\nnoise_floor = 5\n'))
    assert cfg.values["rules"] == [str(tmp_path / "site.yaml")]
    assert cfg.values["queries"] == [str(tmp_path / "q")]
    assert cfg.values["noise_floor"] == 5.0
    dm = default_map(cfg)
    assert dm["analyze"]["site_packs"] == [str(tmp_path / "site.yaml")]
    assert dm["rules"]["explain"]["site_packs"] == [str(tmp_path / "site.yaml")]
    assert dm["compare"]["noise_floor"] == 5.0 and dm["compare"]["templates_dir"] == str(tmp_path / "t")
    assert dm["summary"]["query_dirs"] == [str(tmp_path / "q")]




def test_every_target_is_a_real_option():
    import click

    ctx = click.Context(main)
    for s in SETTINGS:
        for target in s.targets:
            *names, param = target
            cmd: click.Command | None = main
            for n in names:
                assert isinstance(cmd, click.Group)
                cmd = cmd.get_command(ctx, n)
            assert cmd is not None, target
            params = {p.name for p in cmd.params}
            assert param in params, target


def test_file_sets_defaults_and_flags_override(tmp_path, monkeypatch, profile):
    _toml(tmp_path, "max_phases = 1\n")
    monkeypatch.chdir(tmp_path)
    doc = json.loads(CliRunner().invoke(main, ["summary", "--json", str(profile)]).output)
    assert len(doc["phases"]) <= 1
    doc = json.loads(CliRunner().invoke(main, ["summary", "--json", "--max-phases", "8", str(profile)]).output)
    assert len(doc["phases"]) > 1     # the example has init / solve / io phases


def test_format_from_file_unless_o_names_one(tmp_path, monkeypatch, profile):
    _toml(tmp_path, 'format = "markdown"\n')
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["analyze", "--no-llm", str(profile)])
    assert res.exit_code == 0 and res.output.startswith("#")
    res = CliRunner().invoke(main, ["analyze", "--no-llm", str(profile), "-o", str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "r.json").read_text())["schema_version"]
    res = CliRunner().invoke(main, ["analyze", "--no-llm", "-f", "text", str(profile)])
    assert not res.output.startswith("#")


def test_config_show_names_each_source(tmp_path, monkeypatch):
    _toml(tmp_path, 'max_phases = 3\n[llm]\nmodel = "anthropic"\n')
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["config", "show"], env={"PA_QUERIES": "/a:/b"})
    assert res.exit_code == 0, res.output
    assert "llm.model" not in {ln.split()[0] for ln in res.output.splitlines() if " = " in ln}
    assert "not trusted" in res.output and "ignored llm.model" in res.output
    assert CliRunner().invoke(main, ["config", "trust"]).exit_code == 0
    res = CliRunner().invoke(main, ["config", "show"], env={"PA_QUERIES": "/a:/b"})
    assert res.exit_code == 0, res.output
    lines = {ln.split()[0]: ln for ln in res.output.splitlines() if " = " in ln}
    assert "= 3" in lines["max_phases"] and str(tmp_path / "pa.toml") in lines["max_phases"]
    assert "[/a, /b]" in lines["queries"] and "$PA_QUERIES" in lines["queries"]
    assert "built-in default" in lines["noise_floor"] and "2.0" in lines["noise_floor"]
    assert "anthropic" in lines["llm.model"]
    assert set(lines) == {s.key for s in SETTINGS} | {"llm.model"}


def _guide_toml() -> str:
    """The pa.toml example of docs/user-guide.md, verbatim."""
    guide = (Path(__file__).parent.parent / "docs" / "user-guide.md").read_text(encoding="utf-8")
    return guide.split("### Configuration: pa.toml", 1)[1].split("```toml\n", 1)[1].split("```", 1)[0]


def test_guide_example_names_the_file_and_key_of_a_missing_path(tmp_path, monkeypatch, profile):
    """Issue 30.4: the user guide's pa.toml, copied verbatim, stopped `pa analyze` with "--templates
    …/site-templates: not a directory", a flag the user never typed. The error names pa.toml and the
    key; once the paths the example says must exist do, the same file runs."""
    toml = _toml(tmp_path, _guide_toml())
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["--config", str(toml), "analyze", str(profile), "--no-llm"])
    lines = res.output.strip().splitlines()
    assert res.exit_code == 2 and len(lines) == 1 and "--templates" not in lines[0] and "Traceback" not in res.output
    assert lines[0].startswith(f"pa: error: {toml}: ") and "which is not" in lines[0]
    key = lines[0].split(f"{toml}: ", 1)[1].split()[0]
    assert key in ("rules", "queries", "templates")
    # a flag replaces the file's value: then the file's (missing) templates directory is not checked
    res = CliRunner().invoke(main, ["--config", str(toml), "analyze", str(profile), "--no-llm",
                                    "--templates", str(tmp_path)])
    assert "templates names" not in res.output
    (tmp_path / "site.yaml").write_text("pack: site\ndescription: our cluster's thresholds\n")
    (tmp_path / "site-queries").mkdir()
    res = CliRunner().invoke(main, ["--config", str(toml), "analyze", str(profile), "--no-llm"])
    assert res.exit_code == 2 and f"{toml}: templates names {tmp_path / 'site-templates'}, which is not a " \
        "directory" in res.output
    (tmp_path / "site-templates").mkdir()
    res = CliRunner().invoke(main, ["--config", str(toml), "analyze", str(profile), "--no-llm"])
    assert res.exit_code == 0, res.output
    assert res.stdout.lstrip().startswith("<!DOCTYPE html") or "<html" in res.stdout[:500]  # format = "html"
