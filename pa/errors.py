"""Exceptions that carry an exit code, and the decorator that turns them into one clear line.

UserError (exit 2): bad input the user can fix (not a profile, unknown schema version, bad rule pack).
InternalError (exit 3): a bug in pa (for instance a report that fails its own schema).

Whatever goes wrong, the user sees one line on stderr, never a traceback: a PaError as itself; a
SQLite error that escaped the relation layer, or an I/O error, as bad input (exit 2); anything else
as an internal error (exit 3) saying how to report it. PA_DEBUG=1 re-raises the latter with its
traceback. The line is passed through escape_controls: an error may quote a string from the
profile (a table name), and it must not drive the terminal or span lines.
"""


import functools
import os
import sqlite3
import sys
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import click

from pa.controls import escape_controls

F = TypeVar("F", bound=Callable[..., Any])


class PaError(Exception):
    """Base class for errors that the CLI reports as a single line."""

    exit_code = 1


class UserError(PaError):
    """The input cannot be used: not a profile, an unsupported version, a malformed rule pack."""

    exit_code = 2


class InternalError(PaError):
    """A bug in pa: the output failed its own validation. Never rendered half-way."""

    exit_code = 3


def _fail(message: str, code: int) -> None:
    click.echo("pa: " + escape_controls(message), err=True)
    sys.exit(code)


def nearest(name: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The names closest to a mistyped `name`, nearest first; [] when none is close (difflib ratio < 0.6).

    Only those about as close as the best one (within 0.05) are kept: "GPU-IDEL-001" gets
    GPU-IDLE-001 alone, not GPU-IDLE-002 and GPU-JIT-001 beside it. One definition for every "did
    you mean" pa prints (commands, rule ids, params, pa.toml keys), so they agree on what is close.
    """
    import difflib

    scored = sorted(((difflib.SequenceMatcher(None, name, k).ratio(), k) for k in set(known)),
                    key=lambda sk: (-sk[0], sk[1]))
    if not scored or scored[0][0] < 0.6:
        return []
    return [k for ratio, k in scored[:n] if ratio >= scored[0][0] - 0.05]


def closest(name: str, known: Iterable[str], listing: str = "") -> str:
    """How an error names the right spelling: the nearest few, else the whole list when short, else `listing`.

    A list of 31 rule ids or 43 params after a typo buries the one the user meant ("did you mean
    GPU-IDLE-001?" is what git and pip say).
    """
    names = sorted(set(known))
    near = nearest(name, names)
    if near:
        return "did you mean " + " or ".join(near) + "?"
    if len(names) <= 8 or not listing:
        return "known: " + ", ".join(names)
    return listing


def _check_config_paths() -> None:
    """Stop with one line naming pa.toml and its key when a path it gives this command is missing.

    Here, in the one wrapper every command has, because only the click context knows that a value
    came from the file (its default map) and not from a flag (pa.config.missing_config_path).
    """
    from click.core import ParameterSource

    ctx = click.get_current_context(silent=True)
    # The root context's obj is the pa.config.Config the `pa` group loaded (not imported here: config
    # imports this module for its errors); any other obj (a test's, none) has nothing to check.
    check = getattr(ctx.find_root().obj, "missing_path", None) if ctx is not None else None
    if ctx is None or check is None:
        return
    given = {name: value for name, value in ctx.params.items()
             if ctx.get_parameter_source(name) is ParameterSource.DEFAULT_MAP}
    problem = check(given)
    if problem is not None:
        raise UserError(problem)


def one_line_errors(func: F) -> F:
    """Report any failure as a single stderr line with an exit code (module docs); a broken pipe goes up to pa.cli.

    Every CLI command uses this one decorator; nothing below the CLI prints or exits.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            _check_config_paths()
            return func(*args, **kwargs)
        except PaError as exc:
            _fail(f"error: {exc}", exc.exit_code)
        except (BrokenPipeError,   # the reader went away: pa.cli ends such a run with 0, in one place
                click.exceptions.Exit, click.ClickException, click.Abort, SystemExit, KeyboardInterrupt):
            raise
        except sqlite3.DatabaseError as exc:   # a profile statement outside the relation layer
            _fail(f"error: cannot read the profile: {exc}", UserError.exit_code)
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            _fail(f"error: {where}{exc.strerror or exc}", UserError.exit_code)
        except RecursionError:
            _fail("error: input nested too deeply to process", UserError.exit_code)
        except MemoryError:
            _fail("error: out of memory (an input far larger than it should be?)", UserError.exit_code)
        except Exception as exc:
            if os.environ.get("PA_DEBUG"):
                raise
            first = (str(exc).strip().splitlines() or [""])[0]
            _fail(f"internal error: {type(exc).__name__}: {first} (a bug in pa: run again with PA_DEBUG=1 "
                  "for the traceback and report it, see docs/security.md)", InternalError.exit_code)
        return None

    return wrapper  # type: ignore[return-value]
