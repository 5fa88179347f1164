"""The `claude` command-line fallback: one single-shot `claude -p` call, no tools.

Used only when asked for (`--model claude-cli[:MODEL]`, see pa.llm.providers). The
pre-seeded prompt (system prompt, the redacted context, the final-answer instruction and the JSON
Schema of `LlmAnswer`) goes to the client on stdin, never in argv (process lists are world-readable);
`--output-format json` wraps the reply in a JSON envelope whose `result` is the model's text, from
which the one JSON object is read and validated by the same pydantic model as the SDK path. No tool
calls, so the model works from the pre-seeded context only, and new hypotheses (which must cite a
tool call) are always dropped by the re-checks. `--max-turns 1` stops the client from running an
agent loop; it runs in an empty temporary directory so it sees no project files. Anything that goes
wrong (not found, non-zero exit, timeout, no JSON, invalid answer) raises `ClaudeCliError`.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from pa.llm.agent import Usage
from pa.llm.context import FINAL_INSTRUCTION
from pa.llm.output import LlmAnswer
from pa.llm.providers import LlmSettings, Target
from pa.llm.secrets import env_secrets, scrub
from pa.llm.transport import Deadline, JsonlLog

M = TypeVar("M", bound=BaseModel)

CLI_INSTRUCTION = """\
No tools are available in this call: answer from the data above only. Reply with exactly one JSON \
object that validates against the JSON Schema below: no prose, no code fences.
<answer-schema>
{schema}
</answer-schema>"""


class ClaudeCliError(RuntimeError):
    """The `claude` client failed or its answer was unusable."""


def cli_prompt(system: str, user: str, instruction: str = FINAL_INSTRUCTION,
               response_model: type[BaseModel] = LlmAnswer) -> str:
    """The whole single-shot prompt sent on stdin."""
    schema = json.dumps(response_model.model_json_schema(), separators=(",", ":"))
    return "\n\n".join([system, user, instruction, CLI_INSTRUCTION.format(schema=schema)])


def cli_argv(target: Target) -> list[str]:
    """The command line (the prompt itself goes on stdin)."""
    argv = [target.cli or "claude", "-p", "--output-format", "json", "--max-turns", "1"]
    if target.model and target.model != "default":
        argv += ["--model", target.model]
    return argv


def _json_object(text: str) -> str:
    """The JSON object inside `text` (code fences and surrounding prose tolerated)."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise ClaudeCliError(f"the reply contains no JSON object: {text[:200]!r}")
    return text[start:end + 1]


def parse_reply(stdout: str, usage: Usage, response_model: type[M] = LlmAnswer) -> M:  # type: ignore[assignment]
    """Validate the client's stdout: the JSON envelope's `result`, or the bare answer."""
    text = stdout.strip()
    try:
        envelope: Any = json.loads(text)
    except ValueError:
        envelope = None
    if isinstance(envelope, dict) and "result" in envelope:
        if envelope.get("is_error"):
            raise ClaudeCliError(f"the client reported an error: {str(envelope.get('result'))[:300]}")
        u = envelope.get("usage") or {}
        usage.input_tokens += int(u.get("input_tokens") or 0)
        usage.output_tokens += int(u.get("output_tokens") or 0)
        text = str(envelope["result"])
    try:
        return response_model.model_validate_json(_json_object(text))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first.get("loc", ()))) or "answer"
        raise ClaudeCliError(f"invalid answer ({exc.error_count()} error(s); {where}: {first.get('msg')})") from exc


def run_claude_cli(target: Target, settings: LlmSettings, system: str, user: str, log: JsonlLog,
                   usage: Usage, response_model: type[M] = LlmAnswer,  # type: ignore[assignment]
                   instruction: str = FINAL_INSTRUCTION, deadline: Deadline | None = None) -> M:
    """One `claude -p` call; the validated answer (`response_model`) or ClaudeCliError.

    The prompt is scrubbed of secret-looking values (pa.llm.secrets) like every HTTP body, and
    the call is bounded by the stage deadline as well as `timeout_s`.
    """
    argv = cli_argv(target)
    prompt = scrub(cli_prompt(system, user, instruction, response_model), env_secrets())
    timeout = settings.timeout_s if deadline is None else max(0.1, min(settings.timeout_s, deadline.remaining()))
    log.write({"kind": "request", "command": argv[1:], "stdin": prompt})
    with tempfile.TemporaryDirectory(prefix="pa-claude-") as cwd:
        try:
            proc = subprocess.run(argv, input=prompt, capture_output=True, text=True, cwd=cwd,
                                  timeout=timeout, env=dict(os.environ), check=False)
        except subprocess.TimeoutExpired as exc:
            raise ClaudeCliError(f"`claude` timed out after {timeout:g} s") from exc
        except OSError as exc:
            raise ClaudeCliError(f"`claude` could not be run: {exc}") from exc
    log.write({"kind": "response", "exit_code": proc.returncode, "stdout": proc.stdout,
               "stderr": proc.stderr[-2000:]})
    usage.turns += 1
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise ClaudeCliError(f"`claude` exited with code {proc.returncode}"
                             + (f": {detail[-1][:300]}" if detail else ""))
    return parse_reply(proc.stdout, usage, response_model)
