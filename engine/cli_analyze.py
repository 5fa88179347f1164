"""`pa analyze`: profile(s) → summary → rules → [LLM hook] → validated report → rendering.

The pipeline is a straight line of function calls so each step can be tested and replaced:
`summarize` (metrics), `evaluate` (rules), `run_llm_stage` (issue 6 hook, a no-op until the LLM
stage exists, and always skipped with --no-llm), `build_report`, `validate_report` (schema gate:
a failure is a bug, exit 3, nothing rendered), `render`. Also the hidden `pa schema` command that
prints the generated report / summary JSON Schemas committed under schemas/.
"""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError

from engine.cli_output import plan_output, write_output
from engine.cli_ranks import Progress, RankOptions, expand, progress_bar, rank_options
from engine.errors import InternalError, UserError, one_line_errors
from engine.llm.cli_options import llm_cli_options


@dataclass
class _NoRules:
    """Stand-in RuleResult when the rule engine is not installed: nothing fired, and it says so."""

    hypotheses: list[Any] = field(default_factory=list)
    skipped: list[Any] = field(default_factory=list)
    packs: list[Any] = field(default_factory=list)
    outcomes: list[Any] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    buckets: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _Skip:
    what: str
    reason: str


def run_rules(summary: Any, site_packs: Sequence[Path], keep_paths: bool,
              extra_facts: dict[str, Any] | None = None, ruleset: Any = None) -> Any:
    """Evaluate the built-in and site rule packs (or the `ruleset` loaded from them) on `summary`.

    extra_facts: the `cross_rank.*` facts of a multi-rank run (CrossRank.facts()), or None.
    """
    try:
        engine = importlib.import_module("engine.rules.engine")
    except ModuleNotFoundError as exc:
        if exc.name != "engine.rules.engine":
            raise
        if site_packs:
            raise UserError("--rules given but the rule engine is not available in this build") from exc
        return _NoRules(skipped=[_Skip("all rules", "rule engine not available in this build")])
    if ruleset is None:
        ruleset = engine.load_ruleset(site_packs=tuple(site_packs), keep_paths=keep_paths)
    return engine.evaluate(summary, ruleset, extra_facts=extra_facts)


def choose_format(fmt: str | None, output: Path | None) -> str:
    """--format wins; else the extension of -o; else text (the terminal default)."""
    from engine.report.render import EXTENSIONS

    if fmt:
        return fmt
    if output is not None:
        by_ext = {ext: name for name, ext in EXTENSIONS.items()}
        by_ext[".markdown"] = "markdown"
        by_ext[".htm"] = "html"
        if output.suffix.lower() in by_ext:
            return by_ext[output.suffix.lower()]
    return "text"


def analyze_profiles(profiles: Sequence[Path], *, site_packs: Sequence[Path] = (), keep_paths: bool = False,
                     llm_enabled: bool = False, model: str | None = None, base_url: str | None = None,
                     llm_extra: dict[str, Any] | None = None,
                     command_line: Sequence[str] = (), started: float | None = None,
                     ranks: RankOptions | None = None, progress: Progress | None = None) -> dict[str, Any]:
    """Run the whole pipeline and return the validated report document (a JSON-ready dict).

    Several files (directories expanded) are one multi-rank run: Stage 1 per rank in parallel
    (`ranks`), cross-rank facts, and the rules run on the primary rank's summary with those facts.
    """
    from engine.llm.model import LlmOptions
    from engine.metrics.summarize import summarize
    from engine.report.assemble import RunInfo, build_report, primary_index
    from engine.report.schema import validate_report
    from engine.rules.engine import load_ruleset

    t0 = time.monotonic() if started is None else started
    opts = ranks or RankOptions()
    files = expand(profiles)
    # The rule packs first: a bad pack fails before minutes of Stage 1, and a pack may set how
    # marker names are normalised (`marker_names:`) and tune the summary's thresholds
    # (rules/thresholds.yaml), which Stage 1 needs.
    ruleset = load_ruleset(site_packs=tuple(site_packs), keep_paths=keep_paths)
    cross = None
    if len(files) == 1:
        if opts.primary_rank is not None:
            raise UserError("--primary-rank needs the files of several ranks")
        summaries = [summarize(files[0], keep_paths=keep_paths, max_phases=opts.max_phases,
                               marker_naming=ruleset.marker_naming, thresholds=ruleset.thresholds)]
        rank_numbers = None
        primary = primary_index(summaries)
    else:
        from engine.ranks import cross_rank, summarize_ranks

        rs = summarize_ranks(files, workers=opts.workers, executor=opts.executor, scheduler=opts.scheduler,
                             max_phases=opts.max_phases, keep_paths=keep_paths, progress=progress,
                             marker_naming=ruleset.marker_naming, thresholds=ruleset.thresholds)
        cross = cross_rank(rs, primary_rank=opts.primary_rank, thresholds=ruleset.thresholds)
        summaries = [r.summary for r in rs.ranks]
        rank_numbers = [r.rank for r in rs.ranks]
        files = [r.path or Path(r.summary.profile.file_name) for r in rs.ranks]
        primary = rank_numbers.index(cross.primary_rank)
    main_summary = summaries[primary]
    rule_result = run_rules(main_summary, site_packs, keep_paths,
                            extra_facts=cross.facts() if cross is not None else None, ruleset=ruleset)
    # The LLM stage refines and re-ranks the rules' hypotheses; its clients load only when enabled.
    llm, llm_reason = None, "--no-llm given"
    if llm_enabled:
        from engine.llm.stage import run as run_llm_stage

        llm, llm_reason = run_llm_stage(main_summary, rule_result,
                                        LlmOptions(enabled=True, model=model, base_url=base_url,
                                                   extra={**(llm_extra or {}), "profile_path": str(files[primary]),
                                                          "ranks": list(cross.ranks) if cross is not None
                                                          else None}))
    try:
        report = build_report(summaries, rule_result,
                              RunInfo(command_line=list(command_line), keep_paths=keep_paths,
                                      duration_s=time.monotonic() - t0),
                              llm=llm, llm_reason=llm_reason or None, cross=cross, primary=primary,
                              rank_numbers=rank_numbers)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first.get("loc", ())))
        raise InternalError(f"bug: the report model rejected its input at {where}: {first.get('msg')}") \
            from exc
    return validate_report(report)


@click.command("analyze")
@click.argument("profiles", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-f", "--format", "fmt", type=click.Choice(["text", "markdown", "html", "json"]),
              default=None, help="Output format (default: from -o's extension, else text).")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="Write the report to FILE (the format's extension is added when FILE has none; "
                   "- is standard output).")
@click.option("--rules", "site_packs", multiple=True, type=click.Path(path_type=Path),
              help="Site rule pack (YAML), applied after the built-in packs; repeatable.")
@click.option("--templates", "templates_dir", type=click.Path(path_type=Path), default=None,
              help="Directory of site templates (report.txt.j2, report.md.j2, report.html.j2).")
@click.option("--keep-paths", is_flag=True, help="Keep absolute paths in the report.")
@click.option("--no-llm", is_flag=True, help="Rules only: skip the LLM stage.")
@click.option("--model", default=None, help="LLM: provider:model, a provider, a model name or claude-cli "
                                            "(docs/llm.md).")
@click.option("--base-url", default=None, help="LLM: endpoint for the --model provider (its key goes there; "
                                               "none for a bare model name).")
@llm_cli_options
@rank_options
@one_line_errors
def analyze(profiles: tuple[Path, ...], fmt: str | None, output: Path | None, site_packs: tuple[Path, ...],
            templates_dir: Path | None, keep_paths: bool, no_llm: bool, model: str | None,
            base_url: str | None, llm_extra: dict[str, Any], ranks: RankOptions) -> None:
    """Analyse PROFILE(s) and write a ranked, auditable report.

    Several files, or a directory of rank files (report.*.sqlite, rank_*.db), are one multi-rank run:
    the rules see the primary rank (the idle-time outlier, or --primary-rank) and the cross-rank facts.
    """
    from engine.report.render import EXTENSIONS, check_templates_dir, render

    started = time.monotonic()
    fmt = choose_format(fmt, output)
    files = expand(profiles)
    # Everything that can be checked without the profile is checked before any analysis (and any
    # LLM spend): where the report goes, and the site templates it will be rendered with.
    out = plan_output(output, EXTENSIONS[fmt], inputs=[*files, *site_packs])
    if templates_dir is not None:
        check_templates_dir(templates_dir)
    is_tty = out.is_stdout and sys.stdout.isatty()
    with progress_bar(len(files)) as progress:
        doc = analyze_profiles(profiles, site_packs=site_packs, keep_paths=keep_paths, llm_enabled=not no_llm,
                               model=model, base_url=base_url, llm_extra=llm_extra,
                               command_line=["pa", *sys.argv[1:]],
                               started=started, ranks=ranks, progress=progress)
    text = render(doc, fmt, templates_dir=templates_dir, color=is_tty)
    if out.path is None:
        click.echo(text, nl=False)
        return
    write_output(out, text)
    click.echo(f"wrote {out.path.name if not keep_paths else out.path} ({fmt})", err=True)


@click.command("schema", hidden=True)
@click.argument("which", type=click.Choice(["report", "summary", "compare"]))
@one_line_errors
def schema(which: str) -> None:
    """Print the generated JSON Schema (report, summary or compare) as committed under schemas/."""
    from engine.report.schema import build_report_schema, build_summary_schema, dump_schema

    if which == "compare":
        from engine.compare.schema import build_compare_schema

        click.echo(dump_schema(build_compare_schema()), nl=False)
        return
    click.echo(dump_schema(build_report_schema() if which == "report" else build_summary_schema()), nl=False)
