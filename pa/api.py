"""The notebook API: `import pa; pa.summarize(path)`, `pa.analyze(path)`, `pa.compare_captures(a, b)`, `pa.render(doc)`.

A thin layer over pa/pipeline.py (the same functions the CLI calls), with keyword arguments
instead of command-line flags and Python objects instead of printed text. Nothing here prints,
exits or reaches the network unless `llm=True` is passed to `analyze`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pa import pipeline
from pa.compare import DEFAULT_NOISE_FLOOR_PCT
from pa.errors import UserError
from pa.metrics.phases.detect import DEFAULT_MAX_PHASES

if TYPE_CHECKING:
    from pa.metrics.model import ProfileSummary

PathLike = str | Path


def _paths(profiles: PathLike | Sequence[PathLike]) -> list[Path]:
    if isinstance(profiles, (str, Path)):
        return [Path(profiles)]
    return [Path(p) for p in profiles]


def summarize(profile: PathLike, *, max_phases: int = DEFAULT_MAX_PHASES, keep_paths: bool = False,
              rules: Sequence[PathLike] = ()) -> ProfileSummary:
    """The ProfileSummary of one profile (what `pa summary --json` prints for a file of one process).

    An export of several GPU processes gives its whole-file summary (every process together; its
    `processes` table lists them); `summarize_ranks` gives each process as a rank, as
    `pa summary --json` prints it. `rules`: site rule packs whose `marker_names:` setting decides
    how marker names are grouped.
    """
    ruleset = pipeline.load_rules([Path(r) for r in rules], keep_paths=keep_paths) if rules else None
    files = pipeline.expand_profiles([Path(profile)])
    if len(files) != 1:
        raise UserError(f"{profile}: holds {len(files)} profiles; use summarize_ranks for the files of several ranks")
    run = pipeline.summarize_run(files, ruleset,
                                 pipeline.RunOptions(max_phases=max_phases, keep_paths=keep_paths, steady=False))
    if run.cross is not None:   # one export of several processes: the whole file, every process together
        from pa.metrics.marker_names import DEFAULT_NAMING
        from pa.metrics.summarize import summarize as summarize_file

        return summarize_file(files[0], keep_paths=keep_paths, max_phases=max_phases,
                              marker_naming=ruleset.marker_naming if ruleset is not None else DEFAULT_NAMING)
    return run.main


def summarize_ranks(profiles: PathLike | Sequence[PathLike], *, max_phases: int = DEFAULT_MAX_PHASES,
                    workers: int | None = None, primary_rank: int | None = None) -> pipeline.RunSummaries:
    """Stage 1 of a multi-rank run (several files or a directory of rank files): summaries and cross-rank facts.

    Calling it says the files are one run's ranks (as `--rank-set` does), so they are taken as one.
    """
    files = pipeline.expand_profiles(_paths(profiles))
    return pipeline.summarize_run(files, None, pipeline.RunOptions(max_phases=max_phases, workers=workers,
                                                                   primary_rank=primary_rank, rank_set=True))


def analyze(profiles: PathLike | Sequence[PathLike], *, rules: Sequence[PathLike] = (),
            max_phases: int = DEFAULT_MAX_PHASES, keep_paths: bool = False, workers: int | None = None,
            primary_rank: int | None = None, llm: bool = False, model: str | None = None,
            base_url: str | None = None, rank_set: bool = False) -> dict[str, Any]:
    """The validated report document of `pa analyze` (schemas/report.schema.json) as a dict.

    Rules only unless `llm=True` (then `model`/`base_url` as `pa analyze --model/--base-url`).
    Several files must be one run's ranks (MPI rank metadata, the same kernels, or `rank_set=True`,
    as `--rank-set`); unrelated files are a UserError, as on the command line.
    """
    from pa.llm.model import LlmOptions

    request = pipeline.AnalyzeRequest(
        site_packs=tuple(Path(r) for r in rules),
        run=pipeline.RunOptions(max_phases=max_phases, keep_paths=keep_paths, workers=workers,
                                primary_rank=primary_rank, rank_set=rank_set),
        llm=LlmOptions(enabled=llm, model=model, base_url=base_url),
        command_line=("pa.analyze",))
    return pipeline.analyze(pipeline.expand_profiles(_paths(profiles)), request)


def render(doc: dict[str, Any], fmt: str = "markdown", evidence: bool = False) -> str:
    """A report document from `analyze` as text, markdown, html or json (text: `evidence` adds the values)."""
    return pipeline.render_report(doc, fmt, evidence=evidence)


def compare_captures(before: PathLike, after: PathLike, *, noise_floor_pct: float = DEFAULT_NOISE_FLOOR_PCT,
                     rules: bool = True, max_phases: int = DEFAULT_MAX_PHASES) -> dict[str, Any]:
    """The validated comparison document of `pa compare` (schemas/compare.schema.json), without the LLM."""
    request = pipeline.CompareRequest(noise_floor_pct=noise_floor_pct, max_phases=max_phases, rules=rules)
    return pipeline.compare(Path(before), Path(after), request)
