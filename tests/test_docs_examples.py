"""Every YAML, TOML and shell example in the docs runs (issue 30, item 2; datasette tests its docs so).

The examples are read from README.md and docs/*.md, fenced block by fenced block:

- every fenced block names its language (`yaml`, `toml`, `bash`, `console`, `text`, `sql`,
  `python`), so no shell example can hide in an unlabelled block;
- `yaml`: a rule pack, checked by `pa rules validate` (a complete pack: copied as it is, it loads);
  a block marked `<!-- doc-test: rule-cases -->` is a list of rule cases, whose inline inputs the
  test kit must be able to write;
- `toml`: parsed by pa's own pa.toml reader, which refuses an unknown key or a wrong type;
- `bash` / `console`: each line invoking `pa` (in `console`, the lines after `$ `) runs in a fresh
  directory holding generated profiles under the names the docs use (run.sqlite, new.sqlite,
  before.sqlite, after.sqlite, prof.sqlite, p.sqlite, baseline.json, run/ with four ranks,
  torchrun.sqlite: one export of four GPU processes), an
  empty site-queries/ and the user guide's site.yaml, and must exit 0. `mkdir` lines run too;
  other programs (nsys, pip, rocprofv3, export) do not.

Markers, an HTML comment on the line before a block (invisible on the rendered page):

- `<!-- doc-test: skip "SUBSTRING" needs WHAT -->`: lines containing SUBSTRING are not run (an LLM
  key, Nsight Systems, a dask cluster, a real capture); several `skip "..."` may follow each other;
- `<!-- doc-test: file NAME -->`: the block is also written as NAME into every directory the shell
  examples of that page run in (the user guide's site.yaml), before they run;
- `<!-- doc-test: not-run REASON -->`: the whole block is not run (a fragment that cannot stand alone).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from testkit.nccl_runs import write_nccl_run

from pa.cli import main
from pa.config import parse_config

ROOT = Path(__file__).parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = ("bash", "sh", "shell", "console")
LANGUAGES = {"yaml", "toml", "text", "sql", "python", *SHELL}
_FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
_MARK = re.compile(r"<!--\s*doc-test:(.*?)-->")
_ENV = re.compile(r"^[A-Z_][A-Z0-9_]*=")


@dataclass
class Block:
    """One fenced block of a page, with its doc-test marker."""

    page: Path
    line: int              # 1-based line of the opening fence
    lang: str
    body: list[str]
    skips: list[str] = field(default_factory=list)
    file: str | None = None
    not_run: str | None = None

    @property
    def id(self) -> str:
        return f"{self.page.name}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page, in order (an indented fence inside a list item counts too)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2)
        j = i + 1
        while not re.match(rf"^{re.escape(indent)}```\s*$", lines[j]):
            j += 1
        block = Block(page, i + 1, lang, [ln[len(indent):] for ln in lines[i + 1:j]])
        mark = _MARK.search(lines[i - 1]) if i else None
        if mark:
            text = mark.group(1).strip()
            block.skips = re.findall(r'skip "([^"]+)"', text)
            if text.startswith("file "):
                block.file = text.split()[1]
            if text.startswith("not-run"):
                block.not_run = text[len("not-run"):].strip() or "marked not-run"
            if text.startswith("rule-cases"):
                block.lang = "rule-cases"
        out.append(block)
        i = j + 1
    return out


ALL = [b for p in PAGES for b in blocks(p)]


def test_every_fenced_block_names_its_language() -> None:
    unnamed = [f"{b.id} ({b.lang or 'no language'})" for b in ALL if b.lang not in LANGUAGES | {"rule-cases"}]
    assert not unnamed, f"fenced blocks without a known language: {unnamed}"


# --- YAML and TOML ------------------------------------------------------------------------------

YAML = [b for b in ALL if b.lang == "yaml" and b.not_run is None]
TOML = [b for b in ALL if b.lang == "toml"]
CASES = [b for b in ALL if b.lang == "rule-cases" and b.not_run is None]


@pytest.mark.parametrize("block", YAML, ids=lambda b: b.id)
def test_yaml_example_is_a_valid_rule_pack(block: Block, tmp_path: Path) -> None:
    pack = tmp_path / (block.file or "example.yaml")
    pack.write_text("\n".join(block.body) + "\n", encoding="utf-8")
    r = CliRunner().invoke(main, ["rules", "validate", str(pack)])
    warnings = [ln for ln in r.output.splitlines() if ln.startswith("warning")]
    assert r.exit_code == 0 and not warnings and r.output.startswith("ok: "), f"{block.id}: {r.output}"


@pytest.mark.parametrize("block", CASES, ids=lambda b: b.id)
def test_rule_case_example_inputs_can_be_written(block: Block) -> None:
    from testkit.facts import scenario_from_facts

    cases = yaml.safe_load("\n".join(block.body))
    assert isinstance(cases, list) and cases
    for case in cases:
        assert {"name", "input", "expect"} <= set(case), f"{block.id}: {case}"
        assert case["expect"] in ("fires", "silent", "skipped", "suppressed", "below_noise_floor")
        assert scenario_from_facts(case["input"]).kernels or scenario_from_facts(case["input"]).api


@pytest.mark.parametrize("block", TOML, ids=lambda b: b.id)
def test_toml_example_is_a_valid_pa_toml(block: Block, tmp_path: Path) -> None:
    path = tmp_path / "pa.toml"
    path.write_text("\n".join(block.body) + "\n", encoding="utf-8")
    config = parse_config(path)    # an unknown key, a wrong type or bad TOML is a UserError
    assert config.values or config.llm


# --- shell --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The files the docs' commands name, generated once and copied into each example's directory."""
    d = tmp_path_factory.mktemp("docs_workspace")
    runner = CliRunner()
    assert runner.invoke(main, ["example", str(d / "run.sqlite")]).exit_code == 0
    for name in ("new.sqlite", "before.sqlite", "after.sqlite", "prof.sqlite", "p.sqlite"):
        shutil.copy(d / "run.sqlite", d / name)
    assert runner.invoke(main, ["example", "--ranks", "4", str(d / "run")]).exit_code == 0
    write_nccl_run(d / "torchrun.sqlite", "dp_straggler")   # one export of four GPU processes
    r = runner.invoke(main, ["summary", "--json", str(d / "before.sqlite")])
    (d / "baseline.json").write_text(r.stdout, encoding="utf-8")
    (d / "site-queries").mkdir()
    site = next(b for b in ALL if b.file == "site.yaml")   # the user guide's pack, for every page
    (d / "site.yaml").write_text("\n".join(site.body) + "\n", encoding="utf-8")
    return d


def commands(block: Block) -> list[str]:
    """The command lines of a shell block (in a console transcript, the lines after `$ `)."""
    if block.lang == "console":
        return [ln[2:] for ln in block.body if ln.startswith("$ ")]
    return [ln for ln in block.body if ln.strip() and not ln.lstrip().startswith("#")]


def run_line(line: str, cwd: Path) -> list[tuple[list[str], int, str]]:
    """Run the `pa` and `mkdir` commands of one line (joined by &&) in cwd; (args, exit code, output) each."""
    tokens = shlex.split(line, comments=True)
    out = []
    segments: list[list[str]] = [[]]
    for t in tokens:
        if t == "&&":
            segments.append([])
        else:
            segments[-1].append(t)
    for seg in segments:
        env = {}
        while seg and _ENV.match(seg[0]):
            k, v = seg.pop(0).split("=", 1)
            env[k] = v
        if not seg:
            continue
        if seg[0] == "mkdir":
            for p in seg[1:]:
                if not p.startswith("-"):
                    (cwd / p).mkdir(parents=True, exist_ok=True)
            continue
        if seg[0] != "pa":
            continue
        redirect = None
        if ">" in seg:
            k = seg.index(">")
            redirect, seg = seg[k + 1], seg[:k]
        args = []
        for a in seg[1:]:
            matched = sorted(str(p.relative_to(cwd)) for p in cwd.glob(a)) if any(c in a for c in "*?[") else []
            args += matched or [a]
        r = CliRunner().invoke(main, args, env=env or None)
        if redirect is not None:
            (cwd / redirect).write_text(r.stdout, encoding="utf-8")
        out.append((args, r.exit_code, r.output))
    return out


SHELL_BLOCKS = [b for b in ALL if b.lang in SHELL and b.not_run is None
                and any(re.search(r"(^|&&\s*|=\S+\s+)pa\s", c) for c in commands(b))]


@pytest.mark.parametrize("block", SHELL_BLOCKS, ids=lambda b: b.id)
def test_shell_example_runs(block: Block, workspace: Path, tmp_path: Path,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    cwd = tmp_path / "work"
    shutil.copytree(workspace, cwd)
    for b in ALL:
        if b.page == block.page and b.file:
            (cwd / b.file).write_text("\n".join(b.body) + "\n", encoding="utf-8")
    # A block that writes an example itself starts as its reader does, without that file or rank set:
    # `pa example` never replaces one without --force.
    for line in commands(block):
        for target in re.findall(r"\bpa example (?:--ranks \d+ )?([^\s-]\S*)", line):
            if (cwd / target).is_dir():
                shutil.rmtree(cwd / target)
            else:
                (cwd / target).unlink(missing_ok=True)
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("COLUMNS", "200")
    ran = 0
    for line in commands(block):
        if any(s in line for s in block.skips):
            continue
        for args, code, output in run_line(line, cwd):
            ran += 1
            assert code == 0, f"{block.id}: `pa {' '.join(args)}` exited {code}: {output[-1500:]}"
            assert "Traceback" not in output
    assert ran, f"{block.id}: every pa line is skipped; mark the block not-run instead"


def test_skip_markers_name_what_is_needed() -> None:
    """A skip marker says why (an LLM key, nsys, a cluster, a real capture): never a bare skip."""
    for p in PAGES:
        for m in _MARK.finditer(p.read_text(encoding="utf-8")):
            for reason in re.findall(r'skip "[^"]+"\s*([^"]*)', m.group(1)):
                assert reason.strip().startswith("needs"), f"{p.name}: {m.group(0)}"


def test_the_workspace_names_are_the_docs_names() -> None:
    """The profiles the docs' commands name exist in the workspace (a new name needs a fixture)."""
    names = {"run.sqlite", "new.sqlite", "before.sqlite", "after.sqlite", "prof.sqlite", "p.sqlite",
             "baseline.json", "run/", "demo.sqlite", "torchrun.sqlite"}
    for b in SHELL_BLOCKS:
        for line in commands(b):
            if any(s in line for s in b.skips):
                continue
            for word in re.findall(r"[\w./-]+\.(?:sqlite|db|json)\b", line):
                if os.sep in word or word.startswith(("report.", "rank_", "run/")):
                    continue
                produced = re.search(rf">\s*\S*{re.escape(word)}|-o\s+{re.escape(word)}|example\s+{re.escape(word)}",
                                     line)
                assert word in names or produced, f"{b.id}: {word} is not generated for the examples"


# --- facts the docs state about the code ----------------------------------------------------------


def test_query_sets_page_lists_every_relation_of_the_registry() -> None:
    """docs/query-sets.md's relation list is the code's registry, no more and no fewer (issue 30.5)."""
    from pa.profile.canonical import RELATIONS

    page = (ROOT / "docs" / "query-sets.md").read_text(encoding="utf-8")
    listed = page.split("**canonical relations**", 1)[1].split(". (", 1)[0]
    assert re.findall(r"`(\w+)`", listed) == list(RELATIONS)


def test_findings_chart_axis_is_described_as_drawn() -> None:
    """docs/report.md said 0–100 %; the chart runs from 0 to the largest claim (pa.report.charts)."""
    from pa.report.charts import speedup_ranges

    doc = {"hypotheses": [{"id": "H1", "title": "a", "claim": "recoverable", "runtime_fraction_pct": 40.0},
                          {"id": "H2", "title": "b", "claim": "recoverable", "runtime_fraction_pct": 10.0}]}
    chart = speedup_ranges(doc)
    assert chart["max"] == 40.0
    assert chart["rows"][0]["x"] + chart["rows"][0]["w"] == pytest.approx(chart["width"])   # the largest fills it
    report_md = (ROOT / "docs" / "report.md").read_text(encoding="utf-8")
    assert "0–100 % time axis" not in report_md and "from 0 to the largest claim" in report_md


def test_stale_pointers_are_gone() -> None:
    """No "issue 7" in a user page, and no "(below)" whose target the page shows above (issue 30.5)."""
    prc = (ROOT / "docs" / "phases-ranks-compare.md").read_text(encoding="utf-8")
    assert "issue 7" not in prc
    rules = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert "`rank_set:` (below)" not in rules and "`phased:` (below)" not in rules
    assert "GPU-PHASE-001 (below)" not in prc


def test_user_guide_says_how_many_largest_gaps_each_output_holds() -> None:
    """The summary keeps LARGEST_GAPS gaps; the guide said the table lists 10 where it lists 5."""
    from pa.metrics.gaps import LARGEST_GAPS

    guide = (ROOT / "docs" / "user-guide.md").read_text(encoding="utf-8")
    row = next(ln for ln in guide.splitlines() if ln.startswith("| idle gaps |"))
    assert f"the {LARGEST_GAPS} largest kept" in row and "the 5 largest listed in its table" in row
    src = (ROOT / "pa" / "summary_render.py").read_text(encoding="utf-8")
    assert "g.largest[:5]" in src    # what `pa summary` prints (a change there must change the guide)
