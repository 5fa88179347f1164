"""Exceptions that carry an exit code, so the CLI can turn them into one clear line.

UserError (exit 2): bad input the user can fix (not a profile, unknown schema version, bad rule pack).
InternalError (exit 3): a bug in pa (for instance a report that fails its own schema).
"""


class PaError(Exception):
    """Base class for errors that the CLI reports as a single line."""

    exit_code = 1


class UserError(PaError):
    """The input cannot be used: not a profile, an unsupported version, a malformed rule pack."""

    exit_code = 2


class InternalError(PaError):
    """A bug in pa: the output failed its own validation. Never rendered half-way."""

    exit_code = 3
