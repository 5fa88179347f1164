"""The agent skill shipped with pa (pa/skill/SKILL.md): Agent Skills format, size, and `pa skill install`."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from click.testing import CliRunner

from pa.cli import main
from pa.cli_skill import SKILL

ROOT = Path(__file__).resolve().parents[1]


def _front_matter(text: str) -> tuple[dict, str]:
    m = re.match(r"---\n(.*?)\n---\n(.*)", text, re.S)
    assert m, "SKILL.md must open with a YAML front matter block between --- lines"
    return yaml.safe_load(m.group(1)), m.group(2)


def test_the_skill_has_the_front_matter_and_size_of_the_agent_skills_format():
    text = SKILL.read_text(encoding="utf-8")
    meta, body = _front_matter(text)
    assert set(meta) == {"name", "description"}
    assert meta["name"] == "pa" and re.fullmatch(r"[a-z0-9-]{1,64}", meta["name"])
    assert 50 < len(meta["description"]) <= 1024 and "<" not in meta["description"]
    assert len(text) < 5_000, len(text)
    for tool in ("summarize", "analyze", "explain_rule", "window", "query", "relations", "compare"):
        assert f"`{tool}" in body, tool      # every MCP tool is named
    assert "What not to claim" in body


def test_the_wheel_ships_the_skill():
    assert '"pa" = ["skill/SKILL.md"]' in (ROOT / "pyproject.toml").read_text()   # [tool.setuptools.package-data]
    assert SKILL == ROOT / "pa" / "skill" / "SKILL.md"


def test_install_writes_dir_pa_skill_md_and_replaces_an_older_copy(tmp_path):
    target = tmp_path / "skills" / "pa" / "SKILL.md"
    target.parent.mkdir(parents=True)
    target.write_text("old")
    result = CliRunner().invoke(main, ["skill", "install", str(tmp_path / "skills")])
    assert result.exit_code == 0, result.output
    assert target.read_text(encoding="utf-8") == SKILL.read_text(encoding="utf-8")
    assert sorted(p.name for p in target.parent.iterdir()) == ["SKILL.md"]   # no temporary file left


def test_install_where_pa_is_a_file_is_a_one_line_error(tmp_path):
    (tmp_path / "pa").write_text("x")
    result = CliRunner().invoke(main, ["skill", "install", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stderr.startswith("pa: error: cannot create ") and len(result.stderr.strip().splitlines()) == 1
    assert (tmp_path / "pa").read_text() == "x"
