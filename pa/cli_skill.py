"""`pa skill install DIR`: write pa's agent skill (Agent Skills format) to DIR/pa/SKILL.md.

The skill ships inside the package (pa/skill/SKILL.md, package data), so an installed pa writes
the one that matches its tools. Typical DIRs: ~/.claude/skills, .claude/skills in a project.
"""

from __future__ import annotations

from pathlib import Path

import click

from pa.cli import SuggestingGroup
from pa.errors import UserError, one_line_errors

SKILL = Path(__file__).resolve().parent / "skill" / "SKILL.md"

skill_group: click.Group = SuggestingGroup(
    "skill", help="Install pa's agent skill (SKILL.md) for coding agents.")


@skill_group.command("install")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@one_line_errors
def install(directory: Path) -> None:
    """Write DIRECTORY/pa/SKILL.md (e.g. ~/.claude/skills or .claude/skills), replacing an older copy."""
    from pa.cli_output import plan_output, write_output

    if not SKILL.is_file():
        raise UserError(f"{SKILL}: the skill file is missing from this installation (reinstall pa)")
    if directory.exists() and not directory.is_dir():
        raise UserError(f"{directory}: exists and is not a directory")
    target = directory / "pa" / "SKILL.md"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create {target.parent}: {exc.strerror or exc}") from None
    write_output(plan_output(target, ".md"), SKILL.read_text(encoding="utf-8"))
    click.echo(f"wrote {target}", err=True)


@skill_group.command("show")
def show() -> None:
    """Print the skill (SKILL.md) to standard output."""
    click.echo(SKILL.read_text(encoding="utf-8"), nl=False)
