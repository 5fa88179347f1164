"""Exceptions that carry an exit code, and the decorator that turns them into one clear line.

UserError (exit 2): bad input the user can fix (not a profile, unknown schema version, bad rule pack).
InternalError (exit 3): a bug in pa (for instance a report that fails its own schema).
"""


import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

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


def one_line_errors(func: F) -> F:
    """Report PaError (and a broken pipe) as a single stderr line with the error's exit code.

    Every CLI command uses this one decorator; nothing below the CLI prints or exits.
    """

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
