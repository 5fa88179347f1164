"""The one pipeline of pa: profile → summary → rule result → optional LLM outcome → report → rendering.

Every entry point walks these functions in this order: the CLI (`pa analyze`, `pa summary`,
`pa compare`), the notebook API (`pa.api`) and the tests. Each step takes the previous step's
typed result and returns its own, so a newcomer can read the data flow top to bottom:

    ruleset  = load_rules(site_packs)                       # rule packs first: a bad pack costs no analysis
    run      = summarize_run(files, ruleset, options)       # Stage 1: per file, then the cross-rank facts
    result   = evaluate_rules(run, ruleset)                 # hypotheses with their recoverable time
    llm      = explain_with_llm(run, result, llm_options)   # optional; (None, reason) when off
    report   = build_validated_report(run, result, llm, …)  # JSON-Schema validated dict
    text     = render_report(report, "markdown")

`analyze` chains them. Nothing here parses options or prints: the CLI does that.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pa.compare import DEFAULT_NOISE_FLOOR_PCT
from pa.errors import InternalError, UserError
from pa.metrics.phases import DEFAULT_MAX_PHASES

if TYPE_CHECKING:
    from pa.llm.model import LlmOptions, LlmOutcome
    from pa.metrics.marker_names import MarkerNaming
    from pa.metrics.model import ProfileSummary
    from pa.metrics.thresholds import Thresholds
    from pa.ranks.model import CrossRank, RankSet
    from pa.rules.engine import RuleResult, RuleSet

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class RunOptions:
    """How Stage 1 runs: the phase limit, and for several rank files the workers and primary rank."""

    max_phases: int = DEFAULT_MAX_PHASES
    keep_paths: bool = False
    workers: int | None = None
    executor: str = "process"
    scheduler: str | None = None
    primary_rank: int | None = None
    query_dirs: tuple[Path, ...] = ()   # user query directories over the bundled sets (first wins)
    steady: bool = True   # judge a single file on its marked loop when it has one (pa.metrics.steady)
    rank_set: bool = False   # the user says several files are one run's ranks (--rank-set)


@dataclass
class RunSummaries:
    """Stage 1 of one run: a summary per file; for several files the ranks and cross-rank facts.

    `primary` indexes the summary the rules and the LLM read (the only one for a single file; the
    outlier or --primary-rank for several). Several files that are not one run's ranks
    (pa.ranks.discover.one_run_evidence) have no rank set and no cross-rank facts: `separate` then
    says why, and each summary stands alone, in the order the files were given.
    """

    files: list[Path]
    summaries: list[ProfileSummary]
    primary: int
    rank_set: RankSet | None = None
    cross: CrossRank | None = None
    rank_numbers: list[int] | None = None
    # A single file whose markers show its loop: the summary of that steady window the rules read
    # (pa.metrics.steady); None: the rules read `main`.
    judged: ProfileSummary | None = None
    separate: str | None = None

    @property
    def main(self) -> ProfileSummary:
        """The summary of the primary file: the report's key metrics, the LLM's view."""
        return self.summaries[self.primary]

    @property
    def for_rules(self) -> ProfileSummary:
        """The summary the rules read: the steady window's when there is one, else `main`."""
        return self.judged if self.judged is not None else self.main

    def extra_facts(self) -> dict[str, Any] | None:
        """The `cross_rank.*` facts the rules may cite (None for a single file)."""
        return self.cross.facts() if self.cross is not None else None


@dataclass(frozen=True)
class AnalyzeRequest:
    """Everything `analyze` needs besides the profiles: packs, Stage 1 options, the LLM and provenance."""

    site_packs: tuple[Path, ...] = ()
    run: RunOptions = field(default_factory=RunOptions)
    llm: LlmOptions | None = None
    command_line: tuple[str, ...] = ()
    started: float | None = None


def expand_profiles(profiles: Sequence[Path]) -> list[Path]:
    """The profile files named by PROFILE arguments (directories of rank files expanded).

    An Nsight Systems report (.nsys-rep) stands for its SQLite export (pa.nsys_report).
    """
    from pa.nsys_report import exported
    from pa.ranks.discover import discover

    return exported(discover(profiles))


def load_rules(site_packs: Sequence[Path] = (), keep_paths: bool = False) -> RuleSet:
    """The built-in rule packs and the site packs after them (validated; a bad pack is a UserError)."""
    from pa.rules.engine import load_ruleset

    return load_ruleset(site_packs=tuple(site_packs), keep_paths=keep_paths)


def summarize_run(files: Sequence[Path], ruleset: RuleSet | None = None, options: RunOptions = RunOptions(),
                  progress: Progress | None = None) -> RunSummaries:
    """Stage 1: summarise each file; several files are the ranks of one run, with cross-rank facts.

    The rule set matters here because a pack may say how marker names are normalised and tune the
    summary's analysis thresholds (rules/thresholds.yaml, `override_params`).
    """
    from pa.metrics.marker_names import DEFAULT_NAMING
    from pa.metrics.thresholds import DEFAULT_THRESHOLDS

    naming = ruleset.marker_naming if ruleset is not None else DEFAULT_NAMING
    thresholds = ruleset.thresholds if ruleset is not None else DEFAULT_THRESHOLDS
    paths = list(files)
    if not paths:
        raise UserError("no profile files given")
    from pa.ranks.processes import rank_processes

    # One export of several GPU processes (torchrun, mpirun under one nsys) is a rank set of its own:
    # its processes are read first (a GROUP BY, not a summary the ranks would repeat).
    one_export = _processes_of(paths[0], options.query_dirs) if len(paths) == 1 else []
    if len(paths) == 1 and not rank_processes(one_export):
        if options.primary_rank is not None:
            raise UserError("--primary-rank needs several ranks: the files of several ranks, or one export "
                            "of several GPU processes")
        from pa.metrics.summarize import summarize

        s = summarize(paths[0], keep_paths=options.keep_paths, max_phases=options.max_phases, marker_naming=naming,
                      thresholds=thresholds, query_dirs=options.query_dirs)
        return RunSummaries(files=paths, primary=0, summaries=[s],
                            judged=_judged(paths[0], s, None, options, naming, thresholds))
    from pa.ranks import cross_rank, summarize_ranks
    from pa.ranks.discover import not_one_run_reason, one_run_evidence

    rs = summarize_ranks(paths, workers=options.workers, executor=options.executor, scheduler=options.scheduler,
                         max_phases=options.max_phases, keep_paths=options.keep_paths, progress=progress,
                         marker_naming=naming, thresholds=thresholds, query_dirs=options.query_dirs,
                         processes=[one_export] if rank_processes(one_export) else None)
    one_capture = len({r.path for r in rs.ranks}) == 1   # the processes of one export: one run by construction
    if not options.rank_set and not one_capture and one_run_evidence([r.summary for r in rs.ranks]) is None:
        reason = not_one_run_reason([r.summary for r in rs.ranks])
        if options.primary_rank is not None:
            raise UserError(f"--primary-rank needs the files of several ranks; {reason} (--rank-set says they are)")
        order = {p.resolve(): i for i, p in enumerate(paths)}
        alone = sorted(rs.ranks, key=lambda r: order.get(r.path.resolve(), len(order)) if r.path else len(order))
        return RunSummaries(files=[r.path or Path(r.summary.profile.file_name) for r in alone],
                            summaries=[r.summary for r in alone], primary=0, separate=reason)
    cross = cross_rank(rs, primary_rank=options.primary_rank, thresholds=thresholds)
    numbers = [r.rank for r in rs.ranks]
    primary = numbers.index(cross.primary_rank)
    # The rules read the primary rank: on its marked loop when its markers show one, as for one file.
    p = rs.ranks[primary]
    return RunSummaries(files=[r.path or Path(r.summary.profile.file_name) for r in rs.ranks],
                        summaries=[r.summary for r in rs.ranks], primary=primary,
                        rank_set=rs, cross=cross, rank_numbers=numbers,
                        judged=_judged(p.path, p.summary, p.pid, options, naming, thresholds) if p.path else None)


def _judged(path: Path, summary: ProfileSummary, pid: int | None, options: RunOptions, naming: MarkerNaming,
            thresholds: Thresholds) -> ProfileSummary | None:
    """The summary of `summary`'s steady window (its marked loop, pa.metrics.steady) the rules read, or None.

    None when `options.steady` is off or the markers show no loop. `pid`: the process of a rank of a
    multi-process export. The file's digest is reused, not hashed again.
    """
    w = summary.steady_window
    if not options.steady or w is None or summary.span_start_ns is None or summary.span_end_ns is None:
        return None
    from pa.metrics.steady import judged_summary
    from pa.metrics.summarize import summarize

    start, end = summary.span_start_ns, summary.span_end_ns
    return judged_summary(summary, summarize(
        path, keep_paths=options.keep_paths, max_phases=options.max_phases, marker_naming=naming,
        thresholds=thresholds, query_dirs=options.query_dirs, within=((start + w.start_ns, end), (start, end)),
        digest=summary.profile.sha256, process=pid))


def _processes_of(path: Path, query_dirs: Sequence[Path]) -> list[Any]:
    """The processes of one profile with GPU work or MPI calls (pa.metrics.processes.probe_processes)."""
    from pa.metrics.processes import probe_processes
    from pa.metrics.summarize import bound

    with bound(path, query_dirs) as (_, rel):
        return probe_processes(rel)


def evaluate_rules(run: RunSummaries, ruleset: RuleSet) -> RuleResult:
    """The rules on the primary summary, with the cross-rank facts of a multi-rank run."""
    from pa.rules.engine import evaluate

    return evaluate(run.for_rules, ruleset, extra_facts=run.extra_facts())


def explain_with_llm(run: RunSummaries, rule_result: RuleResult, options: LlmOptions | None,
                     query_dirs: Sequence[Path] = ()) -> tuple[LlmOutcome | None, str]:
    """The optional LLM stage: (outcome, "") when it ran, (None, why not) otherwise.

    The provider clients are imported only when the stage is enabled. query_dirs: the user query
    directories Stage 1 read with; the stage's SQL workspace binds the same relations.
    """
    if options is None or not options.enabled:
        return None, "--no-llm given"
    from dataclasses import replace

    from pa.llm.stage import run as run_llm_stage

    extra = {**options.extra, "profile_path": str(run.files[run.primary]),
             "ranks": list(run.cross.ranks) if run.cross is not None else None,
             "query_dirs": [str(d) for d in query_dirs]}
    return run_llm_stage(run.main, rule_result, replace(options, extra=extra))


def build_validated_report(run: RunSummaries, rule_result: RuleResult, llm: LlmOutcome | None, llm_reason: str,
                           *, keep_paths: bool = False, command_line: Sequence[str] = (),
                           started: float | None = None) -> dict[str, Any]:
    """The report document (a JSON-ready dict), validated against schemas/report.schema.json.

    A model or schema rejection is a bug in pa (InternalError, exit 3), never the user's input.
    """
    from pydantic import ValidationError

    from pa.report.assemble import RunInfo, build_report
    from pa.report.schema import validate_report

    t0 = time.monotonic() if started is None else started
    try:
        report = build_report(run.summaries, rule_result,
                              RunInfo(command_line=list(command_line), keep_paths=keep_paths,
                                      duration_s=time.monotonic() - t0),
                              llm=llm, llm_reason=llm_reason or None, cross=run.cross, primary=run.primary,
                              rank_numbers=run.rank_numbers, judged=run.judged)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first.get("loc", ())))
        raise InternalError(f"bug: the report model rejected its input at {where}: {first.get('msg')}") \
            from exc
    return validate_report(report)


def analyze(files: Sequence[Path], request: AnalyzeRequest = AnalyzeRequest(),
            progress: Progress | None = None) -> dict[str, Any]:
    """The whole pipeline up to the validated report document (render it with `render_report`).

    `files`: profile files as `expand_profiles` gives them (the caller expands once: the CLI needs
    the list before any analysis, to check -o against the inputs).
    """
    t0 = time.monotonic() if request.started is None else request.started
    # The rule packs first: a bad pack fails before minutes of Stage 1, and a pack may set how
    # marker names are normalised (`marker_names:`), which Stage 1 needs.
    ruleset = load_rules(request.site_packs, keep_paths=request.run.keep_paths)
    run = summarize_run(files, ruleset, request.run, progress)
    if run.separate is not None:
        # One report judges one run: the rules of unrelated captures would mix (pa summary shows them apart).
        raise UserError(f"{run.separate}; analyze them one at a time, or pass --rank-set if they are one run")
    result = evaluate_rules(run, ruleset)
    llm, reason = explain_with_llm(run, result, request.llm, request.run.query_dirs)
    return build_validated_report(run, result, llm, reason, keep_paths=request.run.keep_paths,
                                  command_line=request.command_line, started=t0)


def render_report(doc: dict[str, Any], fmt: str, templates_dir: Path | None = None, color: bool = False,
                  evidence: bool = False, width: int | None = None) -> str:
    """The report in text, markdown, html or json (site templates from `templates_dir` when given).

    Text only: `evidence` adds the values under each evidence sentence, `width` wraps to a terminal.
    """
    from pa.report.render import render

    return render(doc, fmt, templates_dir=templates_dir, color=color, evidence=evidence, width=width)


@dataclass(frozen=True)
class CompareRequest:
    """What `compare` needs: the noise floor, the phase limit, whether rules run, and the LLM."""

    noise_floor_pct: float = DEFAULT_NOISE_FLOOR_PCT
    max_phases: int = DEFAULT_MAX_PHASES
    rules: bool = True
    llm_enabled: bool = False
    llm_options: dict[str, Any] = field(default_factory=dict)
    query_dirs: tuple[Path, ...] = ()   # user query directories over the bundled sets (first wins)
    steady: bool = True   # judge a single file on its marked loop when it has one (pa.metrics.steady)


MAX_SUMMARY_JSON_BYTES = 256 << 20


def load_capture(path: Path, max_phases: int = DEFAULT_MAX_PHASES, query_dirs: Sequence[Path] = ()) -> ProfileSummary:
    """A capture for `compare`: a profile (summarised) or a `pa summary --json` file (validated).

    An Nsight Systems report (.nsys-rep) is read through its cached SQLite export.
    """
    from pydantic import ValidationError

    from pa.inputs import read_text_file
    from pa.metrics.model import ProfileSummary
    from pa.metrics.summarize import summarize
    from pa.nsys_report import exported

    if path.suffix == ".json":
        try:
            summary = ProfileSummary.model_validate_json(read_text_file(path, MAX_SUMMARY_JSON_BYTES,
                                                                       "summary JSON file"))
        except ValidationError as exc:
            raise UserError(f"{path}: not a pa summary JSON file ({str(exc).splitlines()[0]})") from exc
        where = _out_of_range(summary.model_dump(mode="python"))
        if where:
            raise UserError(f"{path}: not a pa summary JSON file ({where} is out of range: a summary's numbers "
                            "are nanoseconds, bytes and counts below 2^63)")
        return summary
    return summarize(exported([path])[0], max_phases=max_phases, query_dirs=query_dirs)


def load_ranks(path: Path, summary: ProfileSummary, max_phases: int = DEFAULT_MAX_PHASES,
               query_dirs: Sequence[Path] = ()) -> CrossRank | None:
    """The cross-rank facts of a capture that is a rank set (an export of several rank processes), else None.

    `summary`: the capture's whole-file summary (load_capture), whose process table says whether it
    holds several ranks. A `pa summary --json` file stays a single summary (None), as does an export
    of one process. The ranks are summarised in this process.
    """
    if path.suffix == ".json":
        return None
    from pa.nsys_report import exported
    from pa.ranks import cross_rank, summarize_ranks
    from pa.ranks.processes import rank_processes

    if not rank_processes(summary.processes):
        return None
    rs = summarize_ranks([exported([path])[0]], workers=1, max_phases=max_phases, query_dirs=query_dirs,
                         processes=[summary.processes])
    return cross_rank(rs)


def _out_of_range(value: Any, where: str = "summary") -> str | None:
    """The path of the first number a summary cannot hold (|int| ≥ 2^63, or a float beyond it), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return where if not -(2 ** 63) < value < 2 ** 63 else None
    if isinstance(value, dict):
        return next((w for k, v in value.items() if (w := _out_of_range(v, f"{where}.{k}"))), None)
    if isinstance(value, list):
        return next((w for i, v in enumerate(value) if (w := _out_of_range(v, f"{where}[{i}]"))), None)
    return None


def compare(before: Path, after: Path, request: CompareRequest = CompareRequest()) -> dict[str, Any]:
    """Two captures → summaries → (rules on each) → structural diff → optional LLM explanation.

    A capture that is a rank set (an export of several rank processes) is also summarised per rank
    (`load_ranks`): the comparison's `ranks` block. The verdict reads the whole capture (pa.compare.model).
    Returns the comparison document, validated against schemas/compare.schema.json (render it with
    `render_comparison`).
    """
    from pa.compare import compare as diff
    from pa.compare.explain import explain
    from pa.compare.schema import validate_comparison

    sb = load_capture(before, request.max_phases, request.query_dirs)
    sa = load_capture(after, request.max_phases, request.query_dirs)
    hb = ha = None
    if request.rules:
        from pa.rules.engine import evaluate

        ruleset = load_rules()
        hb, ha = evaluate(sb, ruleset).hypotheses, evaluate(sa, ruleset).hypotheses
    rb = load_ranks(before, sb, request.max_phases, request.query_dirs)
    ra = load_ranks(after, sa, request.max_phases, request.query_dirs)
    result = diff(sb, sa, request.noise_floor_pct, hb, ha, rb, ra)
    result.llm, result.llm_reason = explain(result, enabled=request.llm_enabled, options=request.llm_options)
    return validate_comparison(result)


def render_comparison(doc: dict[str, Any], fmt: str, templates_dir: Path | None = None, color: bool = False) -> str:
    """The comparison in text, markdown, html or json (site templates from `templates_dir` when given).

    `color`: ANSI styles in the text (headings, the verdict), for a terminal.
    """
    from pa.compare.render import render_comparison as render

    return render(doc, fmt, templates_dir=templates_dir, color=color)
