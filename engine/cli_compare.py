"""`pa compare BEFORE AFTER`: a structural diff of two captures (profiles or `pa summary --json` files)."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from engine.errors import PaError, UserError

F = TypeVar("F", bound=Callable[..., Any])


def _one_line_errors(func: F) -> F:
    """PaError -> one stderr line and its exit code (as engine.cli; not imported to avoid a cycle)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except PaError as exc:
            click.echo(f"pa: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except BrokenPipeError:
            sys.exit(0)

    return wrapper  # type: ignore[return-value]


def _load(path: Path, max_phases: int) -> Any:
    from pydantic import ValidationError

    from engine.metrics.model import ProfileSummary
    from engine.metrics.summarize import summarize

    if path.suffix == ".json":
        try:
            return ProfileSummary.model_validate_json(path.read_text())
        except (OSError, ValidationError) as exc:
            raise UserError(f"{path}: not a pa summary JSON file ({str(exc).splitlines()[0]})") from exc
    return summarize(path, max_phases=max_phases)


@click.command()
@click.argument("before", type=click.Path(path_type=Path))
@click.argument("after", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option("--noise-floor", type=click.FloatRange(0, 100), default=2.0, show_default=True,
              help="Changes smaller than this % of the larger value are noise.")
@click.option("--max-phases", type=click.IntRange(1, 64), default=8, show_default=True,
              help="Most phases per capture (1 disables phase detection).")
@click.option("--no-rules", is_flag=True, help="Do not run the rules (no hypothesis comparison).")
@_one_line_errors
def compare(before: Path, after: Path, as_json: bool, noise_floor: float, max_phases: int, no_rules: bool) -> None:
    """Compare BEFORE with AFTER: what got faster or slower, and which findings went away."""
    from engine.compare import compare as do_compare
    from engine.compare.render import render_text

    sb, sa = _load(before, max_phases), _load(after, max_phases)
    hb = ha = None
    if not no_rules:
        from engine.rules.engine import evaluate, load_ruleset

        rules = load_ruleset()
        hb, ha = evaluate(sb, rules).hypotheses, evaluate(sa, rules).hypotheses
    result = do_compare(sb, sa, noise_floor, hb, ha)
    click.echo(result.model_dump_json(indent=2) if as_json else render_text(result))
