"""`pa mcp` end to end: the server started as a subprocess, spoken to with the MCP SDK's own stdio client.

Three server processes, each one conversation:
- `session`: no --root, the client declares its roots (a work directory and the shared profiles); every
  tool on a generated profile and on a real one, resources, the prompt, a hostile kernel name, and the
  refusals that need no special bounds (a path outside the roots, a symlink leading out, an Nsight
  Systems report, writes and ATTACH through `query`);
- `bounded`, over Streamable HTTP on loopback: --root given (it wins over the client's roots), a short SQL
  time limit, a small result cap, and a request without the bearer token refused;
- `redacted`: redaction (and a row cap) from pa.toml's [llm], as for the LLM stage, on the hostile profile
  of the LLM tests: no planted string in any result or error;
and, in this process through the SDK's in-memory client, a call-wide time limit no comparison can meet.
The results are compared with `pa summary --json`, `pa analyze -f json` and `pa compare -f json` run on
the same files (click's runner, in this process).
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import sys
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import NSYS_PROFILES, missing_reason, real_nsys_profile

from pa.cli import main

pytestmark = pytest.mark.skipif(find_spec("mcp") is None, reason="the mcp package is not installed "
                                                                 "(pip install -e '.[test]')")
REAL = real_nsys_profile("nvtx_groupby_legacy.sqlite")   # small, four findings
INFINITE = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c"


def _converse(cwd: Path, args: list[str], script: Any, roots: list[Path], config_home: Path) -> dict[str, Any]:
    """Start `pa mcp ARGS` in `cwd`, initialise a client session declaring `roots`, run `script(session, out)`."""
    import anyio
    import mcp_types as types
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def list_roots(_ctx: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=r.as_uri(), name=r.name) for r in roots])

    async def run() -> dict[str, Any]:
        out: dict[str, Any] = {}
        params = StdioServerParameters(command=sys.executable, args=["-m", "pa.cli", "mcp", *args], cwd=str(cwd),
                                       env={"XDG_CONFIG_HOME": str(config_home), "PA_CLAUDE_CLI": ""})
        with (cwd / "server-stderr.txt").open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), \
                    ClientSession(read, write, list_roots_callback=list_roots) as session:
                await session.initialize()
                await script(session, out)
        out["stderr"] = (cwd / "server-stderr.txt").read_text()
        return out

    return anyio.run(run)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _converse_http(cwd: Path, args: list[str], script: Any, roots: list[Path], config_home: Path) -> dict[str, Any]:
    """As `_converse`, with `pa mcp --http 127.0.0.1:PORT ARGS` and the SDK's Streamable HTTP client."""
    import subprocess
    import time

    import anyio
    import httpx2
    import mcp_types as types
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    port, token = _free_port(), "test-token-q7z"
    url = f"http://127.0.0.1:{port}/mcp"
    env = {**os.environ, "XDG_CONFIG_HOME": str(config_home), "PA_MCP_TOKEN": token}
    with (cwd / "server-stderr.txt").open("w") as errlog:
        proc = subprocess.Popen([sys.executable, "-m", "pa.cli", "mcp", "--http", f"127.0.0.1:{port}", *args],
                                cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=errlog, stderr=errlog)

    async def list_roots(_ctx: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=r.as_uri(), name=r.name) for r in roots])

    async def run() -> dict[str, Any]:
        out: dict[str, Any] = {}
        deadline = time.monotonic() + 30
        async with httpx2.AsyncClient() as bare:
            while True:   # until the server listens
                try:
                    out["no_token"] = await bare.post(url, json={})
                    break
                except httpx2.TransportError:
                    assert time.monotonic() < deadline and proc.poll() is None, "pa mcp --http did not start"
                    await anyio.sleep(0.1)
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http, \
                streamable_http_client(url, http_client=http) as (read, write), \
                ClientSession(read, write, list_roots_callback=list_roots) as session:
            await session.initialize()
            await script(session, out)
        return out

    try:
        out = anyio.run(run)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    out["stderr"] = (cwd / "server-stderr.txt").read_text()
    return out


def _result(res: Any) -> Any:
    """The structured result of a successful call, after checking the data envelope and the text copy."""
    assert not res.is_error, res.content[0].text
    body = res.structured_content
    assert set(body) == {"note", "tool", "result"} and "never an instruction" in body["note"]
    assert json.loads(res.content[0].text) == body       # the text content is the same JSON, escaped
    return copy.deepcopy(body["result"])                  # tests may edit it; the session is shared


def _error(res: Any) -> str:
    assert res.is_error
    text = res.content[0].text
    assert text.startswith("pa: error: ") and "\n" not in text and "Traceback" not in text, text
    return text


def _cli_json(*args: str) -> Any:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _listing(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "server-stderr.txt"}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A work directory (the root) with two generated profiles, and a file and a symlink leading outside it."""
    from pa.example_profile import write_example

    base = tmp_path_factory.mktemp("mcp")
    work, outside = base / "work", base / "outside"
    work.mkdir()
    outside.mkdir()
    write_example(work / "demo.sqlite")
    _slower(work / "demo.sqlite", work / "other.sqlite")
    shutil.copy(work / "demo.sqlite", outside / "secret.sqlite")
    (work / "link.sqlite").symlink_to(outside / "secret.sqlite")
    (work / "run.nsys-rep").write_bytes(b"not read")
    from llm_world import write_hostile

    write_hostile(work / "hostile.sqlite")
    (base / "config").mkdir()
    return {"base": base, "work": work, "outside": outside, "config": base / "config"}


def _slower(src: Path, dst: Path) -> None:
    """A copy of `src` whose kernels all take twice as long (a regression for compare to find)."""
    import sqlite3

    shutil.copy(src, dst)
    conn = sqlite3.connect(dst)
    with conn:
        conn.execute('UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = "end" + ("end" - start)')
    conn.close()


@pytest.fixture(scope="module")
def session(world: dict[str, Path]) -> dict[str, Any]:
    work = world["work"]
    profiles = {"demo": "demo.sqlite"} | ({"real": str(REAL)} if REAL.is_file() else {})
    before = _listing(work)

    async def script(s: Any, out: dict[str, Any]) -> None:
        out["tools"] = (await s.list_tools()).tools
        out["resources"] = (await s.list_resources()).resources
        out["summary_schema"] = await s.read_resource("pa://schemas/summary")
        out["prompt"] = await s.get_prompt("diagnose", {"profile": "demo.sqlite"})
        for key, prof in profiles.items():
            out[key, "summarize"] = await s.call_tool("summarize", {"profile": prof})
            out[key, "analyze"] = analyzed = await s.call_tool("analyze", {"profiles": [prof]})
            top = analyzed.structured_content["result"]["hypotheses"][0]["rule_id"]
            out[key, "explain_rule"] = await s.call_tool("explain_rule", {"profile": prof, "rule_id": top})
            out[key, "rule_doc"] = await s.read_resource(f"pa://rules/{top}")
            out[key, "relations"] = await s.call_tool("relations", {"profile": prof})
            out[key, "query"] = await s.call_tool("query", {"profile": prof, "sql": (
                "SELECT count(*) AS kernels_count, sum(\"end\" - start) AS kernel_time_ns FROM pa_kernels")})
            out[key, "window"] = await s.call_tool("window", {"profile": prof, "start_offset_ns": 0,
                                                              "end_offset_ns": 10**18})
            if key == "real":   # the same capture on both sides: every change within the noise floor
                out[key, "compare"] = await s.call_tool("compare", {"before": prof, "after": prof})
        out["compare"] = await s.call_tool("compare", {"before": "demo.sqlite", "after": "other.sqlite"})
        out["hostile"] = await s.call_tool("query", {"profile": "hostile.sqlite",
                                                     "sql": "SELECT DISTINCT short_name FROM pa_kernels"})
        out["outside"] = await s.call_tool("summarize", {"profile": str(world["outside"] / "secret.sqlite")})
        out["dotdot"] = await s.call_tool("summarize", {"profile": "../outside/secret.sqlite"})
        out["symlink"] = await s.call_tool("summarize", {"profile": "link.sqlite"})
        out["rules_outside"] = await s.call_tool("analyze", {"profiles": ["demo.sqlite"], "rules": ["/etc/hostname"]})
        out["report"] = await s.call_tool("summarize", {"profile": "run.nsys-rep"})
        out["bad_args"] = await s.call_tool("window", {"profile": "demo.sqlite", "start_offset_ns": -5})
        for verb, sql in (("write", "DELETE FROM pa_kernels"), ("create", "CREATE TABLE t (x)"),
                          ("attach", f"ATTACH DATABASE '{work / 'new.db'}' AS x"),
                          ("cte_write", "WITH x AS (SELECT 1) INSERT INTO pa_kernels SELECT * FROM x"),
                          ("pragma", "SELECT * FROM pragma_table_info('pa_kernels')"),
                          ("raw_table", "SELECT value FROM StringIds")):
            out["sql", verb] = await s.call_tool("query", {"profile": "demo.sqlite", "sql": sql})

    roots = [work] + ([NSYS_PROFILES] if REAL.is_file() else [])
    out = _converse(work, [], script, roots, world["config"])
    out["before"], out["after"] = before, _listing(work)
    out["profiles"] = profiles
    return out


def test_lists_every_tool_with_an_input_schema_and_the_resources_and_prompt(session):
    tools = {t.name: t for t in session["tools"]}
    assert set(tools) == {"summarize", "analyze", "explain_rule", "compare", "relations", "query", "window"}
    for t in tools.values():
        assert t.input_schema["type"] == "object" and t.description and t.annotations.read_only_hint
        assert t.output_schema["required"] == ["note", "tool"]
    assert "profile" in tools["window"].input_schema["required"]
    assert {"phase", "start_offset_ns", "end_offset_ns"} <= set(tools["window"].input_schema["properties"])
    uris = {str(r.uri) for r in session["resources"]}
    assert {"pa://schemas/summary", "pa://schemas/report", "pa://schemas/compare"} <= uris
    assert any(u.startswith("pa://rules/") for u in uris)
    assert json.loads(session["summary_schema"].contents[0].text)["type"] == "object"
    steps = session["prompt"].messages[0].content.text
    assert all(w in steps for w in ("summarize", "analyze", "explain_rule", "code"))


@pytest.mark.parametrize("key", ["demo", "real"])
def test_summarize_and_analyze_equal_the_cli_json(session, world, key):
    if key not in session["profiles"]:
        pytest.skip(missing_reason(REAL))
    path = world["work"] / session["profiles"][key] if key == "demo" else REAL
    assert _result(session[key, "summarize"]) == _cli_json("summary", str(path), "--json")
    served = _result(session[key, "analyze"])
    cli = _cli_json("analyze", str(path), "--no-llm", "-f", "json")
    assert served["hypotheses"], "no finding: the check below would be empty"
    for part in (served, cli):
        part.pop("provenance")   # the command line and the wall-clock duration differ by nature
    assert served == cli


@pytest.mark.parametrize("key", ["demo", "real"])
def test_explain_rule_relations_query_window_answer_on_the_same_numbers(session, key):
    if key not in session["profiles"]:
        pytest.skip(missing_reason(REAL))
    summary = _result(session[key, "summarize"])
    top = _result(session[key, "analyze"])["hypotheses"][0]
    explained = _result(session[key, "explain_rule"])
    assert explained["rule_id"] == top["rule_id"] and explained["status"] == "fired"
    assert top["id"] in explained["hypotheses"] and explained["definition"]["docs"] == f"pa://rules/{top['rule_id']}"
    assert top["rule_id"] in session[key, "rule_doc"].contents[0].text
    relations = {r["relation"]: r for r in _result(session[key, "relations"])["relations"]}
    assert relations["kernels"]["view"] == "pa_kernels" and relations["kernels"]["query_file"].endswith(".sql")
    assert "start" in relations["kernels"]["columns"]
    rows = _result(session[key, "query"])
    kernels_count, kernel_time_ns = rows["rows"][0]
    assert (kernels_count, kernel_time_ns) == (summary["gpu"]["kernel_count"], summary["gpu"]["kernel_time_ns"])
    window = _result(session[key, "window"])
    assert window["kernels"]["kernel_count"] == kernels_count


def test_compare_equals_the_cli_json(session, world):
    served = _result(session["compare"])
    cli = _cli_json("compare", str(world["work"] / "demo.sqlite"), str(world["work"] / "other.sqlite"),
                    "--no-llm", "-f", "json")
    assert served == cli
    assert served["identical"] is False                    # the kernels of `other` take twice as long


def test_compare_of_a_real_profile_equals_the_cli_json(session):
    if "real" not in session["profiles"]:
        pytest.skip(missing_reason(REAL))
    served = _result(session["real", "compare"])
    assert served == _cli_json("compare", str(REAL), str(REAL), "--no-llm", "-f", "json")


def test_paths_outside_the_roots_are_refused_and_nothing_is_written(session):
    for key in ("outside", "dotdot", "symlink", "rules_outside"):
        assert "outside the roots" in _error(session[key]), key
    assert "reads SQLite exports only" in _error(session["report"])
    assert "invalid arguments for window: start_offset_ns" in _error(session["bad_args"])
    assert session["before"] == session["after"]          # no file appeared or changed in the root
    assert "Traceback" not in session["stderr"]


def test_query_refuses_writes_attach_pragma_and_the_export_tables(session):
    for verb in ("write", "create", "attach", "cte_write"):
        assert "only a single SELECT or WITH statement" in _error(session["sql", verb]) \
            or "not authorized" in _error(session["sql", verb]), verb
    assert "not authorized" in _error(session["sql", "pragma"])
    assert "StringIds" in _error(session["sql", "raw_table"])


@pytest.fixture(scope="module")
def bounded(world: dict[str, Path]) -> dict[str, Any]:
    async def script(s: Any, out: dict[str, Any]) -> None:
        out["slow_sql"] = await s.call_tool("query", {"profile": "demo.sqlite", "sql": INFINITE})
        out["big"] = await s.call_tool("summarize", {"profile": "demo.sqlite"})
        out["small"] = await s.call_tool("query", {"profile": "demo.sqlite", "sql": "SELECT 1 AS one"})
        out["client_root"] = await s.call_tool("summarize", {"profile": str(world["outside"] / "secret.sqlite")})

    # the client declares `outside` as a root, but --root was given: the user's roots win. Over Streamable
    # HTTP: the bounds live in the tool layer, the same for both transports
    return _converse_http(world["work"], ["--root", str(world["work"]), "--sql-time-limit", "0.3",
                                          "--max-result-bytes", "5000"], script, [world["outside"]], world["config"])


def test_http_on_loopback_needs_the_bearer_token(bounded):
    assert bounded["no_token"].status_code == 401
    assert "pa mcp: serving http://127.0.0.1:" in bounded["stderr"] and "token" not in bounded["stderr"]


def test_http_elsewhere_than_loopback_is_refused_in_one_line():
    result = CliRunner().invoke(main, ["mcp", "--http", "0.0.0.0:8765"])
    assert result.exit_code == 2
    assert result.stderr.startswith("pa: error: --http 0.0.0.0:8765: pa mcp serves HTTP on a loopback address only")


def test_a_query_past_its_time_limit_and_a_result_past_its_cap_are_refused(bounded):
    assert "time limit hit: query interrupted after 0.3 s" in _error(bounded["slow_sql"])
    assert "above the cap of 5,000" in _error(bounded["big"])
    assert _result(bounded["small"])["rows"] == [[1]]
    assert "outside the roots" in _error(bounded["client_root"])


def test_redact_hides_every_planted_string_of_a_hostile_profile(tmp_path):
    from llm_world import write_hostile

    write_hostile(tmp_path / "hostile.sqlite")

    async def script(s: Any, out: dict[str, Any]) -> None:
        out["summarize"] = await s.call_tool("summarize", {"profile": "hostile.sqlite"})
        label = out["summarize"].structured_content["result"]["phases"][0]["label"]   # a placeholder
        for name, args in (("analyze", None), ("window", {"phase": label}),
                           ("query", {"sql": "SELECT name, domain FROM pa_markers LIMIT 20"}),
                           ("explain_rule", {"rule_id": "H1"}), ("relations", {}),
                           ("error", {"phase": "no such phase"}),   # the error lists the phase labels
                           ("bad_arg", {"start_offset_ns": label})):  # the error quotes the restored value
            call = {"profile": "hostile.sqlite", **args} if args is not None else {"profiles": ["hostile.sqlite"]}
            out[name] = await s.call_tool("window" if name in ("error", "bad_arg") else name, call)
        out["label"] = label

    # redaction and the SQL limits come from the user's pa.toml [llm], as for the LLM stage (no --redact flag)
    (tmp_path / "config" / "pa").mkdir(parents=True)
    (tmp_path / "config" / "pa" / "pa.toml").write_text("[llm]\nredact = true\nsql_max_rows = 3\n")
    out = _converse(tmp_path, [], script, [tmp_path], tmp_path / "config")
    assert out["label"].startswith("MARKER_")
    assert len(_result(out["query"])["rows"]) == 3 and "row cap hit" in _result(out["query"])["truncated"]
    for name in ("summarize", "analyze", "window", "query", "explain_rule", "relations", "error", "bad_arg"):
        res = out[name]
        text = res.content[0].text + json.dumps(res.structured_content)
        assert "q7z" not in text, (name, text[text.find("q7z") - 80:text.find("q7z") + 80])
        if name not in ("error", "bad_arg"):
            _result(res)
    assert "is not of type 'integer'" in _error(out["bad_arg"])
    assert _result(out["window"])["scope"] == f"phase {out['label']}"   # the placeholder was mapped back
    assert "no phase" in _error(out["error"]) and "MARKER_" in out["error"].content[0].text
    assert "MARKER_" in json.dumps(out["query"].structured_content)


def test_a_hostile_name_is_data_inside_the_envelope(session):
    from llm_world import INJECTION_SHORT

    res = session["hostile"]
    assert [INJECTION_SHORT] in _result(res)["rows"]                       # the exact string, as data
    assert "</profile-data>" not in res.content[0].text                    # escaped in the text copy


def test_a_call_past_the_time_limit_is_answered_with_an_error(world):
    """The server's own time limit (pa.mcp_server), run in this process through the SDK's in-memory client."""
    import time

    import anyio
    from mcp.client.client import Client

    from pa.agent_tools import Bounds, Workspace
    from pa.mcp_server import build_server

    ws = Workspace(Bounds(roots=(world["work"],), roots_explicit=True, timeout_s=0.05))

    async def run() -> tuple[Any, float]:
        async with Client(build_server(ws)) as client:
            t0 = time.monotonic()
            res = await client.call_tool("compare", {"before": "demo.sqlite", "after": "other.sqlite"})
            return res, time.monotonic() - t0

    res, took = anyio.run(run)
    assert "no answer within the time limit of 0.05 s" in _error(res)
    assert took < 1.0   # answered at the limit, not when the abandoned comparison ends


def test_without_the_mcp_package_pa_mcp_says_so_in_one_line(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a))
    result = CliRunner().invoke(main, ["mcp"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "pa: error: pa mcp needs the MCP SDK: pip install 'pa[mcp]' (or pip install mcp)"


def test_help_explains_the_setup_and_pa_help_does_not_import_mcp():
    out = CliRunner().invoke(main, ["mcp", "--help"]).output
    assert "claude mcp add pa -- pa mcp" in out and "config.toml" in out and "mcp.json" in out
    code = "import sys; from pa.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n" \
           "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'anyio', 'pa')))"
    import subprocess

    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert proc.stdout.strip().splitlines()[-1] == "['pa', 'pa.cli', 'pa.version']"
