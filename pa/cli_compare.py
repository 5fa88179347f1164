"""`pa compare BEFORE AFTER`: a structural diff of two captures (profiles or `pa summary --json` files).

Exit codes (for CI jobs that gate on a comparison): 0 the comparison was written and the verdict
does not match --fail-on; 1 it was written and the verdict matches --fail-on (regression,
improvement, or change: either of the two); 2 bad input; 3 a bug in pa.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from pa.cli_options import (
    color_option,
    format_option,
    json_option,
    max_phases_option,
    noise_floor_option,
    output_option,
    queries_option,
    templates_option,
)
from pa.errors import one_line_errors
from pa.llm.cli_options import COMPARE_OPTIONS, llm_cli_options_for

FAIL_ON = {"regression": {"regression"}, "improvement": {"improvement"}, "change": {"regression", "improvement"}}
FAIL_EXIT_CODE = 1


@click.command()
@click.argument("before", type=click.Path(path_type=Path))
@click.argument("after", type=click.Path(path_type=Path))
@format_option
@output_option
@json_option
@color_option
@noise_floor_option
@max_phases_option
@queries_option
@click.option("--no-rules", is_flag=True, help="Do not run the rules (no hypothesis comparison).")
@click.option("--no-llm", is_flag=True, help="Deterministic narrative only: no LLM explanation.")
@click.option("--model", default=None, help="LLM model for the explanation (as `pa analyze --model`).")
@click.option("--base-url", default=None, help="LLM endpoint (as `pa analyze --base-url`).")
@llm_cli_options_for(*COMPARE_OPTIONS)
@templates_option
@click.option("--fail-on", type=click.Choice(sorted(FAIL_ON)), default=None,
              help="Exit 1 (after writing the comparison) when the verdict is a regression, an improvement, "
                   "or either (change); 0 otherwise. For CI gates.")
@one_line_errors
def compare(before: Path, after: Path, fmt: str | None, output: Path | None, as_json: bool, color: str,
            noise_floor: float,
            max_phases: int, no_rules: bool, no_llm: bool, model: str | None, base_url: str | None,
            query_dirs: tuple[Path, ...], llm_extra: dict[str, Any], templates_dir: Path | None,
            fail_on: str | None) -> None:
    """Compare BEFORE with AFTER: what got faster or slower, and which findings went away.

    Output is validated against schemas/compare.schema.json before it is rendered. With an LLM
    configured (as for `pa analyze`), one validated call explains the differences from the
    comparison's numbers only; numbers it cites that the comparison lacks are flagged.

    The verdict (regression, improvement or within noise) rests on the median time per iteration
    when both captures mark the same iteration range with NVTX/rocTX, else on the span. Exit codes:
    0, or 1 when the verdict matches --fail-on; 2 bad input; 3 a bug in pa.
    """
    from pa import pipeline
    from pa.cli_options import output_format, use_color
    from pa.cli_output import check_log_file, plan_output, write_output, wrote
    from pa.compare.render import TEMPLATES
    from pa.report.render import EXTENSIONS, check_templates_dir

    fmt = output_format(fmt, as_json, output)
    out = plan_output(output, EXTENSIONS[fmt], inputs=[before, after])   # before any analysis or LLM spend
    check_log_file("--log", llm_extra.get("log"), inputs=[before, after])
    if templates_dir is not None:
        check_templates_dir(templates_dir, TEMPLATES)
    request = pipeline.CompareRequest(noise_floor_pct=noise_floor, max_phases=max_phases, rules=not no_rules,
                                      llm_enabled=not no_llm,
                                      llm_options={"model": model, "base_url": base_url, **llm_extra},
                                      query_dirs=tuple(query_dirs))
    doc = pipeline.compare(before, after, request)
    colored = use_color(color, out.is_stdout and sys.stdout.isatty())
    text = pipeline.render_comparison(doc, fmt, templates_dir=templates_dir, color=colored)
    failed = fail_on is not None and doc["verdict"] in FAIL_ON[fail_on]
    try:
        if out.path is None:
            click.echo(text, nl=not text.endswith("\n"), color=colored)   # click would strip the styles off a pipe
        else:
            write_output(out, text)
            click.echo(wrote(out, fmt), err=True)
    except BrokenPipeError:
        # A reader that stopped early is no failure (pa.cli: exit 0), but it must not hide the verdict
        # of a CI gate: `pa compare a b --fail-on regression | head -1` still exits 1 on a regression.
        if not failed:
            raise
        from pa.cli import silence_stdout

        silence_stdout()
    if failed:
        click.echo(f"pa: verdict {doc['verdict']} matches --fail-on {fail_on}: exit {FAIL_EXIT_CODE}", err=True)
        raise SystemExit(FAIL_EXIT_CODE)
