"""`pa mcp`: serve pa's tools to a coding agent over the Model Context Protocol (stdio, or HTTP on loopback).

Options in, pa.mcp_server out. The `mcp` package is optional (`pip install 'pa[mcp]'`): it is
looked for before anything else, and its absence is one line on stderr (exit 2), never a traceback.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import click

from pa.errors import UserError, one_line_errors

# The help `pa mcp --help` prints; "\b" keeps click from re-wrapping the set-up lines.
HELP = """Serve pa's tools to coding agents over the Model Context Protocol (stdio).

\b
Tools: summarize, analyze, explain_rule, compare, relations, query, window (read-only; docs/agents.md).
Set-up (pip install 'pa[mcp]'), run from the project that holds the profiles:
  Claude Code:  claude mcp add pa -- pa mcp
  Codex:        ~/.codex/config.toml: [mcp_servers.pa] command = "pa", args = ["mcp"]
  Cursor, VS Code: mcp.json: {"servers": {"pa": {"command": "pa", "args": ["mcp"]}}}
Profiles are read only under the roots; nothing is written; every call is bounded in time and size.
--http 127.0.0.1:PORT serves Streamable HTTP on loopback instead, with a bearer token.
"""


@click.command("mcp", help=HELP)
@click.option("--root", "roots", multiple=True, type=click.Path(file_okay=False, path_type=Path),
              help="A directory profiles may be read from (repeatable). Given: these alone, whatever roots the "
                   "client declares. Default: the client's roots, else the current directory.")
@click.option("--redact", is_flag=True, help="Replace kernel, marker, file and other profile names with placeholders "
                                             "(KERNEL_n, ...) in every result, as the LLM stage's --redact "
                                             "(also when pa.toml's [llm] sets redact = true).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0.001), default=120.0, show_default=True,
              help="Seconds one tool call may take before it is answered with an error.")
@click.option("--max-result-bytes", type=click.IntRange(min=1_000), default=1_000_000, show_default=True,
              help="A result larger than this (JSON, after redaction) is refused with an error.")
@click.option("--sql-time-limit", "sql_time_limit_s", type=click.FloatRange(min=0.01), default=None,
              help="Seconds one `query` may run. Default: pa.toml's [llm] sql_time_limit_s, else 2 (the LLM stage's).")
@click.option("--http", "http", default=None, metavar="HOST:PORT",
              help="Serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio; loopback only (127.0.0.1, "
                   "localhost, ::1); every request needs `Authorization: Bearer TOKEN`, TOKEN from $PA_MCP_TOKEN "
                   "or generated and printed on stderr.")
@one_line_errors
def mcp(roots: tuple[Path, ...], redact: bool, timeout_s: float, max_result_bytes: int,
        sql_time_limit_s: float | None, http: str | None) -> None:
    """Serve pa's tools to coding agents over MCP on stdio until the client closes the session."""
    if importlib.util.find_spec("mcp") is None:
        raise UserError("pa mcp needs the MCP SDK: pip install 'pa[mcp]' (or pip install mcp)")
    for r in roots:
        if not r.is_dir():
            raise UserError(f"--root {r}: not a directory")
    try:
        from pa.mcp_server import serve_stdio
    except ImportError as exc:
        raise UserError(f"pa mcp cannot load the MCP SDK ({exc}); reinstall it: pip install -U 'pa[mcp]'") from None
    from pa.agent_tools import Bounds, Workspace

    # An abandoned call's profile statements stop by the same limit (pa.profile.open reads it per statement).
    os.environ.setdefault("PA_QUERY_TIMEOUT", f"{timeout_s:g}")
    # The SQL limits and redaction of the LLM stage's settings (pa.toml [llm], an untrusted project file only
    # tightening them), so `query` is bounded as the model's sql_query is; the flags win.
    from pa.llm.providers import load_settings
    from pa.llm.sql_tool import SqlLimits

    llm = load_settings({"config": click.get_current_context().find_root().obj, "redact": redact or None,
                         "sql_time_limit_s": sql_time_limit_s})
    bounds = Bounds(roots=tuple(roots) or (Path.cwd(),), roots_explicit=bool(roots), redact=llm.redact,
                    timeout_s=timeout_s, max_result_bytes=max_result_bytes,
                    sql=SqlLimits(llm.sql_time_limit_s, llm.sql_max_rows, llm.sql_max_bytes, llm.max_string_chars))
    if http is None:
        serve_stdio(Workspace(bounds))
        return
    host, port = _host_port(http)
    from pa.mcp_server import serve_http

    token = os.environ.get("PA_MCP_TOKEN") or ""
    if not token:
        import secrets

        token = secrets.token_urlsafe(32)
        click.echo(f"pa mcp: bearer token for this server (set PA_MCP_TOKEN to choose it): {token}", err=True)
    click.echo(f"pa mcp: serving http://{'[' + host + ']' if ':' in host else host}:{port}/mcp", err=True)
    serve_http(Workspace(bounds), host, port, token)


def _host_port(value: str) -> tuple[str, int]:
    """HOST:PORT (or [::1]:PORT) with a loopback HOST; UserError otherwise."""
    from pa.mcp_server import LOOPBACK

    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError(f"--http {value}: give HOST:PORT, e.g. 127.0.0.1:8765")
    if host not in LOOPBACK:
        raise UserError(f"--http {value}: pa mcp serves HTTP on a loopback address only ({', '.join(LOOPBACK)}); "
                        "anything else would expose the profiles to the network")
    return host, int(port)
