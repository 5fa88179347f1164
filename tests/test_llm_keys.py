"""Keys and data go only where the user sent them: provider resolution and the guarded transport.

Every HTTP test sets the keys of all three providers, so a key sent to the wrong place would show
up in the fake server's recorded headers or bodies.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from click.testing import CliRunner
from fakes.llm_server import FakeLlmServer, openai_answer, openai_text, redirect
from llm_world import PROVIDERS, answer, script, write_hostile

from pa.errors import UserError
from pa.llm.model import LlmFailure, LlmOptions
from pa.llm.providers import DEFAULT_HOSTS, ENABLE_HINT, LlmSettings, NoProvider, Target, resolve
from pa.llm.stage import llm_stage
from pa.llm.transport import Deadline, Guard, RequestRefused, http_client

KEYS = {"ANTHROPIC_API_KEY": "sk-ant-key-anthropic-000000000000", "OPENAI_API_KEY": "sk-key-openai-1111111111111111",
        "GOOGLE_API_KEY": "AIzaKeyGoogle22222222222222222222222222"}


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_hostile(tmp_path_factory.mktemp("keys") / "p.sqlite")


@pytest.fixture(scope="module")
def summary(profile: Path) -> Any:
    from pa.metrics.summarize import summarize

    return summarize(profile)


@pytest.fixture(scope="module")
def rules(summary: Any) -> Any:
    from pa.rules.engine import evaluate, load_ruleset

    return evaluate(summary, load_ruleset())


def _settings(**kw: Any) -> LlmSettings:
    return LlmSettings(**kw)


# ---------------------------------------------------------------- resolution (no network)


def test_base_url_without_model_is_an_error_not_a_key_sent_there() -> None:
    with pytest.raises(UserError, match=r"--base-url .* also say which model"):
        resolve(_settings(base_url="http://host/v1"), dict(KEYS))


def test_bare_model_with_base_url_is_an_openai_compatible_server_without_key() -> None:
    t = resolve(_settings(model="llama3.1", base_url="http://gpu-node:8000/v1"), dict(KEYS))
    assert isinstance(t, Target) and (t.provider, t.model, t.key_from) == ("openai", "llama3.1", None)
    assert t.api_key not in KEYS.values() and t.endpoint() == "http://gpu-node:8000/v1"
    t = resolve(_settings(model="llama3.1:8b", base_url="http://localhost:11434/v1"), dict(KEYS))  # an Ollama tag
    assert isinstance(t, Target) and t.model == "llama3.1:8b" and t.key_from is None


def test_unplaceable_model_lists_the_accepted_forms() -> None:
    with pytest.raises(UserError, match=r"cannot tell which provider serves 'llama3.1'.*provider:model"):
        resolve(_settings(model="llama3.1"), dict(KEYS))
    t = resolve(_settings(model="llama3.1"), {**KEYS, "OPENAI_BASE_URL": "http://onprem/v1"})
    assert isinstance(t, Target) and t.endpoint() == "http://onprem/v1" and t.key_from == "OPENAI_API_KEY"


def test_a_model_whose_key_is_missing_says_which_key() -> None:
    got = resolve(_settings(model="gpt-4.1"), {"ANTHROPIC_API_KEY": KEYS["ANTHROPIC_API_KEY"]})
    assert isinstance(got, NoProvider) and "no OpenAI key (OPENAI_API_KEY is not set)" in got
    got = resolve(_settings(model="gemini:gemini-2.5-pro"), {"OPENAI_API_KEY": "x" * 20})
    assert isinstance(got, NoProvider) and "GOOGLE_API_KEY or GEMINI_API_KEY" in got


def test_openai_base_url_alone_selects_that_server() -> None:
    t = resolve(_settings(), {"OPENAI_BASE_URL": "http://onprem:8000/v1"})
    assert isinstance(t, Target) and (t.provider, t.key_from, t.base_url_from) == \
        ("openai", None, "OPENAI_BASE_URL")
    got = resolve(_settings(), {})
    assert isinstance(got, NoProvider) and ENABLE_HINT in got


@pytest.mark.parametrize("provider", PROVIDERS)
def test_keys_go_to_the_default_host_or_the_providers_own_base_url(provider: str) -> None:
    key_var = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY", "gemini": "GOOGLE_API_KEY"}[provider]
    url_var = {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL", "gemini": "GOOGLE_GEMINI_BASE_URL"}
    t = resolve(_settings(model=provider), dict(KEYS))
    assert isinstance(t, Target) and t.endpoint() == DEFAULT_HOSTS[provider] and t.key_from == key_var
    # another provider's base URL never applies
    others = {v: "http://elsewhere/" for p, v in url_var.items() if p != provider}
    t = resolve(_settings(model=provider), {**KEYS, **others})
    assert isinstance(t, Target) and t.endpoint() == DEFAULT_HOSTS[provider]
    t = resolve(_settings(model=provider), {**KEYS, url_var[provider]: "http://mine/"})
    assert isinstance(t, Target) and t.endpoint() == "http://mine/" and t.key_from == key_var
    t = resolve(_settings(model=f"{provider}:m", base_url="http://explicit/"), dict(KEYS))
    assert isinstance(t, Target) and t.endpoint() == "http://explicit/" and t.key_from == key_var


def _fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    marker = tmp_path / "claude-was-run"
    exe = bindir / "claude"
    exe.write_text(f"#!{sys.executable}\nopen({str(marker)!r}, 'w').write('x')\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.delenv("PA_CLAUDE_CLI", raising=False)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    return marker


def test_claude_cli_is_never_used_unasked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, summary: Any,
                                          rules: Any) -> None:
    marker = _fake_claude(tmp_path, monkeypatch)
    assert isinstance(resolve(_settings()), NoProvider)
    assert isinstance(resolve(_settings(model="anthropic:claude-sonnet-4-6")), NoProvider)
    out = llm_stage(summary, rules, LlmOptions(extra={"yes": True}))
    assert isinstance(out, str) and not marker.exists()
    t = resolve(_settings(model="claude-cli"))
    assert isinstance(t, Target) and t.provider == "claude-cli"


# ---------------------------------------------------------------- over HTTP, three providers


def _creds(srv: FakeLlmServer) -> str:
    return "\n".join(srv.keys_seen())


@pytest.mark.parametrize("provider", PROVIDERS)
def test_only_the_chosen_providers_key_reaches_its_endpoint(provider: str, profile: Path, summary: Any, rules: Any,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in KEYS.items():
        monkeypatch.setenv(k, v)
    mine = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GOOGLE_API_KEY"}[provider]
    turns = [[("c1", "sql_query", {"sql": "SELECT count(*) AS n FROM pa_kernels"})]]
    with FakeLlmServer(script(provider, turns, answer())) as srv:
        base = srv.url if provider == "openai" else srv.root
        out = llm_stage(summary, rules, LlmOptions(model=f"{provider}:m", base_url=base, extra={
            "yes": True, "profile_path": str(profile), "max_retries": 0, "max_turns": 2}))
    assert not isinstance(out, str), out
    creds = _creds(srv)
    assert KEYS[mine] in creds
    body = srv.bodies_text()
    for var, key in KEYS.items():
        assert key not in body, var
        if var != mine:
            assert key not in creds, var


def test_bare_model_with_base_url_sends_no_key(profile: Path, summary: Any, rules: Any,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in KEYS.items():
        monkeypatch.setenv(k, v)
    with FakeLlmServer([openai_text("ok"), openai_answer(answer())]) as srv:
        out = llm_stage(summary, rules, LlmOptions(model="llama3.1", base_url=srv.url, extra={
            "yes": True, "max_retries": 0}))
    assert not isinstance(out, str), out
    assert srv.keys_seen() == ["Bearer not-needed"] * 2
    assert not any(key in srv.bodies_text() for key in KEYS.values())


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_redirect_never_carries_the_key_elsewhere(provider: str, summary: Any, rules: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in KEYS.items():
        monkeypatch.setenv(k, v)
    with FakeLlmServer([]) as elsewhere, FakeLlmServer([redirect(elsewhere.url + "/steal")] * 4) as srv:
        base = srv.url if provider == "openai" else srv.root
        out = llm_stage(summary, rules, LlmOptions(model=f"{provider}:m", base_url=base, extra={
            "yes": True, "max_retries": 0}))
    assert isinstance(out, LlmFailure), out
    assert elsewhere.requests == [] and elsewhere.headers == []


def test_the_transport_refuses_a_foreign_origin_before_sending() -> None:
    with FakeLlmServer([openai_text("x")]) as srv:
        guard = Guard(endpoint=DEFAULT_HOSTS["anthropic"], deadline=Deadline.after(10), max_request_tokens=1000)
        client = http_client(guard, 5.0)
        with pytest.raises(RequestRefused, match=r"talks only to https://api\.anthropic\.com"):
            client.post(srv.url + "/chat/completions", json={"x": 1}, headers={"x-api-key": "secret-key"})
        client.close()
        assert srv.requests == []
        guard = Guard(endpoint=srv.root, deadline=Deadline.after(10), max_request_tokens=1000,
                      literals=["sk-literal-key-12345678"])
        client = http_client(guard, 5.0)
        client.post(srv.url + "/chat/completions",
                    content=json.dumps({"m": "PMI_SHARED_SECRET=abc123 and sk-literal-key-12345678"}))
        client.close()
    assert srv.requests == [{"m": "PMI_SHARED_SECRET=[secret removed by pa] and [secret removed by pa]"}]


def test_request_size_ceiling_and_deadline_are_enforced_by_the_transport() -> None:
    with FakeLlmServer([]) as srv:
        client = http_client(Guard(srv.root, Deadline.after(10), max_request_tokens=100), 5.0)
        with pytest.raises(RequestRefused, match="above the ceiling"):
            client.post(srv.url, content=b"x" * 2000)
        client = http_client(Guard(srv.root, Deadline.after(-1), max_request_tokens=100), 5.0)
        with pytest.raises(RequestRefused, match="deadline"):
            client.post(srv.url, content=b"{}")
        assert srv.requests == []
    assert isinstance(httpx2.Client, type)


# ---------------------------------------------------------------- the command line


def test_cli_base_url_without_model_exits_2_and_sends_nothing(profile: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pa.cli import main

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEYS["ANTHROPIC_API_KEY"])
    with FakeLlmServer([]) as srv:
        res = CliRunner().invoke(main, ["analyze", str(profile), "-f", "json", "--base-url", srv.url, "--yes"])
    assert res.exit_code == 2 and "also say which model" in res.output and srv.requests == []


def test_cli_require_llm_exits_2_when_no_provider_can_be_used(profile: Path) -> None:
    from pa.cli import main

    res = CliRunner().invoke(main, ["analyze", str(profile), "-f", "json", "--require-llm"])
    assert res.exit_code == 2 and "--require-llm" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(main, ["analyze", str(profile), "-f", "json", "--model", "gpt-4.1", "--require-llm"])
    assert res.exit_code == 2 and "no OpenAI key" in res.output
    res = CliRunner().invoke(main, ["analyze", str(profile), "-f", "json", "--model", "llama3.1"])
    assert res.exit_code == 2 and "accepted forms" in res.output
    res = CliRunner().invoke(main, ["analyze", str(profile), "-f", "json", "--model", "gpt-4.1"])
    assert res.exit_code == 0 and "no OpenAI key" in json.loads(res.stdout)["provenance"]["llm"]["reason"]
