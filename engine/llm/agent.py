"""The conversation: tool-calling turns through the provider's SDK, then one validated answer.

Loop (`converse`): the model gets the pre-seeded context and the read-only tools; each turn it may
call tools, whose (redacted) results are sent back. Before the last tool turn a wrap-up note is
added; the final turn is forced and has no tools: the whole exchange (context plus every tool call
and result) is sent once more as plain text and the answer is requested through `instructor`
(`response_model=LlmAnswer`), which validates it and retries with the validation errors.
Flattening the tool exchange into text for the final turn keeps that turn identical across
providers (no provider-specific rules about tool blocks in a request without tools).

Transport: the official SDKs (openai, anthropic, google-genai) on an `httpx2.Client` whose event
hooks write `--log` JSON lines for every request and response as they happen (bodies only, never
headers, so never the API key). Timeouts, 429 and 5xx are retried by the SDK with exponential
backoff (`max_retries`; openai and anthropic honour retry-after, google-genai backs off from
`retry_initial_s`); anything still failing raises, and the stage turns it into the rules-only report
with a warning.

`count_tokens` asks the provider's token-counting endpoint (`--exact-token-count`): Anthropic
`messages.count_tokens`, Gemini `models.count_tokens`; OpenAI has none (None: use the estimate).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx2
from pydantic import BaseModel

from engine.llm.context import FINAL_INSTRUCTION, WRAP_UP
from engine.llm.output import LlmAnswer
from engine.llm.providers import LlmSettings, Target
from engine.llm.tools import TOOL_SPECS, ToolBox

M = TypeVar("M", bound=BaseModel)


@dataclass
class Usage:
    """Token use and counts, for provenance."""

    turns: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class ToolCall:
    """One tool call requested by the model."""

    id: str
    name: str
    arguments: Any


@dataclass
class Turn:
    """One model response of the tool phase."""

    text: str
    calls: list[ToolCall] = field(default_factory=list)


class JsonlLog:
    """`--log FILE`: one JSON object per HTTP request/response, flushed as it happens."""

    def __init__(self, path: Path | None) -> None:
        self._fh = path.open("a", encoding="utf-8") if path else None
        self.path = path

    def write(self, record: dict[str, Any]) -> None:
        """Append one record (no-op without --log)."""
        if self._fh is not None:
            self._fh.write(json.dumps({"t": round(time.time(), 3), **record}, default=str) + "\n")
            self._fh.flush()

    def close(self) -> None:
        """Close the file."""
        if self._fh is not None:
            self._fh.close()


def _body(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def http_client(log: JsonlLog, timeout_s: float) -> httpx2.Client:
    """An httpx2 client whose hooks log every request and response body (never headers)."""

    def on_request(request: httpx2.Request) -> None:
        log.write({"kind": "request", "method": request.method, "url": str(request.url),
                   "body": _body(request.content)})

    def on_response(response: httpx2.Response) -> None:
        response.read()
        log.write({"kind": "response", "status": response.status_code, "url": str(response.request.url),
                   "body": _body(response.content)})

    return httpx2.Client(timeout=timeout_s, event_hooks={"request": [on_request], "response": [on_response]})


class OpenAIAdapter:
    """OpenAI Chat Completions (also vLLM, llama.cpp, Ollama through their compatible endpoint)."""

    def __init__(self, target: Target, settings: LlmSettings, http: httpx2.Client) -> None:
        import instructor
        import openai

        self.target = target
        self.client = openai.OpenAI(api_key=target.api_key, base_url=target.base_url, http_client=http,
                                    timeout=settings.timeout_s, max_retries=settings.max_retries)
        self.instructor = instructor.from_openai(self.client, mode=instructor.Mode.TOOLS)
        self.messages: list[dict[str, Any]] = []
        self.tools = [{"type": "function", "function": t} for t in TOOL_SPECS]

    def start(self, system: str, user: str) -> None:
        """Seed the conversation."""
        self.messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def count_tokens(self, system: str, user: str) -> int | None:
        """OpenAI has no token-counting endpoint: None (the caller uses the estimate)."""
        return None

    def step(self, usage: Usage) -> Turn:
        """One model turn with tools available."""
        resp = self.client.chat.completions.create(model=self.target.model, messages=self.messages,  # type: ignore[arg-type]
                                                   tools=self.tools)  # type: ignore[arg-type]
        if resp.usage is not None:
            usage.input_tokens += resp.usage.prompt_tokens
            usage.output_tokens += resp.usage.completion_tokens
        msg = resp.choices[0].message
        self.messages.append(msg.model_dump(exclude_none=True))
        calls = [ToolCall(c.id, c.function.name, c.function.arguments)  # type: ignore[union-attr]
                 for c in msg.tool_calls or [] if getattr(c, "function", None) is not None]
        return Turn(text=msg.content or "", calls=calls)

    def tool_results(self, results: list[tuple[ToolCall, str]], note: str | None) -> None:
        """Send tool results back (and the wrap-up note, if any)."""
        for call, text in results:
            self.messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
        if note:
            self.messages.append({"role": "user", "content": note})

    def final(self, system: str, user: str, retries: int, usage: Usage,
              response_model: type[M] = LlmAnswer) -> M:  # type: ignore[assignment]
        """The forced final turn: validated structured output (`response_model`), no tools."""
        answer, completion = self.instructor.create_with_completion(
            model=self.target.model, response_model=response_model, max_retries=retries,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}])
        u = getattr(completion, "usage", None)
        if u is not None:
            usage.input_tokens += u.prompt_tokens or 0
            usage.output_tokens += u.completion_tokens or 0
        return answer


class AnthropicAdapter:
    """Anthropic Messages API."""

    max_tokens = 4096

    def __init__(self, target: Target, settings: LlmSettings, http: httpx2.Client) -> None:
        import anthropic
        import instructor

        self.target = target
        self.client = anthropic.Anthropic(api_key=target.api_key, base_url=target.base_url, http_client=http,
                                          timeout=settings.timeout_s, max_retries=settings.max_retries)
        self.instructor = instructor.from_anthropic(self.client, mode=instructor.Mode.TOOLS)
        self.system = ""
        self.messages: list[dict[str, Any]] = []
        self.tools = [{"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
                      for t in TOOL_SPECS]

    def start(self, system: str, user: str) -> None:
        """Seed the conversation."""
        self.system = system
        self.messages = [{"role": "user", "content": user}]

    def count_tokens(self, system: str, user: str) -> int | None:
        """Exact input tokens of the first request (`messages.count_tokens`, free of charge)."""
        res = self.client.messages.count_tokens(model=self.target.model, system=system,
                                                messages=[{"role": "user", "content": user}],
                                                tools=self.tools)  # type: ignore[arg-type]
        return int(res.input_tokens)

    def step(self, usage: Usage) -> Turn:
        """One model turn with tools available."""
        resp = self.client.messages.create(model=self.target.model, system=self.system,
                                           messages=self.messages,  # type: ignore[arg-type]
                                           tools=self.tools, max_tokens=self.max_tokens)  # type: ignore[arg-type]
        usage.input_tokens += resp.usage.input_tokens
        usage.output_tokens += resp.usage.output_tokens
        blocks = [b.model_dump(exclude_none=True) for b in resp.content]
        self.messages.append({"role": "assistant", "content": blocks})
        calls = [ToolCall(b["id"], b["name"], b.get("input") or {})
                 for b in blocks if b.get("type") == "tool_use"]
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        return Turn(text=text, calls=calls)

    def tool_results(self, results: list[tuple[ToolCall, str]], note: str | None) -> None:
        """Tool results go back in one user message, with the wrap-up note as a text block."""
        content: list[dict[str, Any]] = [{"type": "tool_result", "tool_use_id": c.id, "content": t}
                                         for c, t in results]
        if note:
            content.append({"type": "text", "text": note})
        self.messages.append({"role": "user", "content": content})

    def final(self, system: str, user: str, retries: int, usage: Usage,
              response_model: type[M] = LlmAnswer) -> M:  # type: ignore[assignment]
        """The forced final turn: validated structured output (`response_model`), no tools."""
        answer, completion = self.instructor.create_with_completion(
            model=self.target.model, response_model=response_model, max_retries=retries, system=system,
            max_tokens=self.max_tokens, messages=[{"role": "user", "content": user}])
        u = getattr(completion, "usage", None)
        if u is not None:
            usage.input_tokens += getattr(u, "input_tokens", 0) or 0
            usage.output_tokens += getattr(u, "output_tokens", 0) or 0
        return answer


class GeminiAdapter:
    """Google Gemini (`generateContent`) through the official google-genai SDK.

    Tools go out as function declarations (their JSON schema as `parameters_json_schema`); the
    model's `functionCall` parts come back with an id (or get one here), and the results go back as
    `functionResponse` parts, `{"output": ...}`, in one user turn with the wrap-up note as a text
    part. The SDK's automatic function calling is disabled: pa runs the tools itself.
    """

    def __init__(self, target: Target, settings: LlmSettings, http: httpx2.Client) -> None:
        import instructor
        from google import genai
        from google.genai import types

        self.types = types
        self.target = target
        retry = types.HttpRetryOptions(attempts=settings.max_retries + 1, initial_delay=settings.retry_initial_s,
                                       jitter=settings.retry_initial_s)
        self.client = genai.Client(api_key=target.api_key, http_options=types.HttpOptions(
            base_url=target.base_url, httpx_client=http, timeout=int(settings.timeout_s * 1000),
            retry_options=retry))
        self.instructor = instructor.from_genai(self.client, mode=instructor.Mode.TOOLS)
        self.system = ""
        self.contents: list[Any] = []
        self.tools = [types.Tool(function_declarations=[
            types.FunctionDeclaration(name=t["name"], description=t["description"],
                                      parameters_json_schema=t["parameters"]) for t in TOOL_SPECS])]
        self._made_up: set[str] = set()  # ids pa gave to calls that came without one

    def start(self, system: str, user: str) -> None:
        """Seed the conversation."""
        self.system = system
        self.contents = [self.types.Content(role="user", parts=[self.types.Part.from_text(text=user)])]

    def count_tokens(self, system: str, user: str) -> int | None:
        """Exact tokens of system prompt, first message and tool schemas (`models.count_tokens`).

        The Gemini Developer API counts `contents` only, so the system prompt and the tool schemas
        are counted as text parts next to the first message.
        """
        t = self.types
        res = self.client.models.count_tokens(model=self.target.model, contents=[t.Content(
            role="user", parts=[t.Part.from_text(text=system), t.Part.from_text(text=user),
                                t.Part.from_text(text=json.dumps(TOOL_SPECS))])])
        return None if res.total_tokens is None else int(res.total_tokens)

    def _usage(self, resp: Any, usage: Usage) -> None:
        meta = getattr(resp, "usage_metadata", None)
        if meta is not None:
            usage.input_tokens += meta.prompt_token_count or 0
            usage.output_tokens += (meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0)

    def step(self, usage: Usage) -> Turn:
        """One model turn with tools available."""
        t = self.types
        config = t.GenerateContentConfig(
            system_instruction=self.system, tools=self.tools,
            automatic_function_calling=t.AutomaticFunctionCallingConfig(disable=True))
        resp = self.client.models.generate_content(model=self.target.model, contents=self.contents,
                                                   config=config)
        self._usage(resp, usage)
        if not resp.candidates or resp.candidates[0].content is None:
            reason = resp.candidates[0].finish_reason if resp.candidates else getattr(
                resp.prompt_feedback, "block_reason", None)
            raise RuntimeError(f"Gemini returned no content (finish/block reason: {reason})")
        content = resp.candidates[0].content
        self.contents.append(content)
        calls, text = [], []
        for part in content.parts or []:
            fc = part.function_call
            if fc is not None and fc.name:
                cid = fc.id
                if not cid:
                    cid = f"pa_call_{len(self._made_up) + 1}"
                    self._made_up.add(cid)
                calls.append(ToolCall(cid, fc.name, dict(fc.args or {})))
            elif part.text and not part.thought:
                text.append(part.text)
        return Turn(text="".join(text), calls=calls)

    def tool_results(self, results: list[tuple[ToolCall, str]], note: str | None) -> None:
        """Function responses in one user turn (ids echoed), the wrap-up note as a text part."""
        t = self.types
        parts = [t.Part(function_response=t.FunctionResponse(
            id=None if c.id in self._made_up else c.id, name=c.name,
            response={"output": json.loads(text)})) for c, text in results]
        if note:
            parts.append(t.Part.from_text(text=note))
        self.contents.append(t.Content(role="user", parts=parts))

    def final(self, system: str, user: str, retries: int, usage: Usage,
              response_model: type[M] = LlmAnswer) -> M:  # type: ignore[assignment]
        """The forced final turn: validated structured output (a forced function call), no tools."""
        answer, completion = self.instructor.create_with_completion(
            model=self.target.model, response_model=response_model, max_retries=retries,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}])
        self._usage(completion, usage)
        return answer


Adapter = OpenAIAdapter | AnthropicAdapter | GeminiAdapter


def make_adapter(target: Target, settings: LlmSettings, http: httpx2.Client) -> Adapter:
    """The SDK adapter for the target's provider."""
    if target.provider == "openai":
        return OpenAIAdapter(target, settings, http)
    if target.provider == "anthropic":
        return AnthropicAdapter(target, settings, http)
    if target.provider == "gemini":
        return GeminiAdapter(target, settings, http)
    raise ValueError(f"provider {target.provider!r} has no SDK adapter")


def converse(adapter: Adapter, system: str, user: str, tools: ToolBox, settings: LlmSettings,
             usage: Usage, transcript: Callable[[dict[str, Any]], None]) -> LlmAnswer:
    """Run the tool turns, then the forced final turn; return the validated answer.

    max_turns counts model requests including the final one, so at most max_turns − 1 tool turns.
    """
    adapter.start(system, user)
    exchange: list[str] = []
    tool_turns = max(0, settings.max_turns - 1)
    for n in range(tool_turns):
        turn = adapter.step(usage)
        usage.turns += 1
        transcript({"turn": usage.turns, "role": "assistant", "text": turn.text,
                    "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments}
                                   for c in turn.calls]})
        if turn.text:
            exchange.append(f"[assistant] {turn.text}")
        if not turn.calls:
            break
        results = []
        for call in turn.calls:
            text = tools.run(call.id, call.name, call.arguments)
            usage.tool_calls += 1
            results.append((call, text))
            args = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
            exchange.append(f"[tool call {call.id}] {call.name}({tools.redactor.text(args)}) -> {text}")
            transcript({"turn": usage.turns, "role": "tool", "id": call.id, "name": call.name,
                        "result": text})
        note = WRAP_UP if n == tool_turns - 2 else None
        adapter.tool_results(results, note)
    final_user = user
    if exchange:
        final_user += "\n<tool-exchange>\n" + "\n".join(exchange) + "\n</tool-exchange>"
    final_user += "\n" + FINAL_INSTRUCTION
    answer = adapter.final(system, final_user, settings.validation_retries, usage, LlmAnswer)
    usage.turns += 1
    transcript({"turn": usage.turns, "role": "final", "answer": answer.model_dump()})
    return answer
