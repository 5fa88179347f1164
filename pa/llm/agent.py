"""The conversation: tool-calling turns through the provider's SDK, then one validated answer.

Loop (`converse`): the model gets the pre-seeded context and the read-only tools; each turn it may
call tools, whose (redacted, capped) results are sent back. Before the last tool turn a wrap-up
note is added; the final turn is forced and has no tools: the whole exchange (context plus every
tool call and result) is sent once more as plain text inside `<tool-exchange>` (with `<` and `>`
escaped) and the answer is requested through `instructor` (`response_model=LlmAnswer`), which
validates it and retries with the validation errors. Flattening the tool exchange into text for the
final turn keeps that turn identical across providers.

Transport: the official SDKs (openai, anthropic, google-genai) on the guarded `httpx2.Client` of
pa.llm.transport (origin, deadline, size and secret checks on every request; `--log` of bodies,
never headers). Timeouts, 429 and 5xx are retried by the SDK with exponential backoff
(`max_retries`; openai and anthropic honour retry-after, google-genai backs off from
`retry_initial_s`), within the stage's deadline.

Provider specifics:
- prompt caching: Anthropic gets `cache_control` breakpoints on the system prompt and on the
  pre-seeded first message (and on the newest tool results), so later turns read them from the
  cache; OpenAI caches a repeated prompt prefix by itself, which the loop keeps intact (system
  prompt, tools and pre-seed are byte-identical in every turn); Gemini 2.5 caches a repeated
  prefix implicitly as well, and pa's prompts (a few thousand tokens, a handful of requests within
  two minutes) are too small for an explicit cached-content object to pay for its storage.
  Cached input tokens are counted (`Usage.cached_input_tokens`) and priced as such.
- Gemini: a turn that ends with `MALFORMED_FUNCTION_CALL` is asked again (at most
  `MALFORMED_RETRIES` times).
- OpenAI-compatible servers that answer the forced final turn with the JSON object as text instead
  of the forced tool call: the text's JSON object is taken as the tool call's arguments (as
  instructor's JSON modes read it) and validated like any answer.

`count_tokens` asks the provider's token-counting endpoint (`--exact-token-count`): Anthropic
`messages.count_tokens`, Gemini `models.count_tokens`; OpenAI has none (None: use the estimate).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx2
from pydantic import BaseModel

from pa.llm.context import FINAL_INSTRUCTION, WRAP_UP
from pa.llm.output import LlmAnswer
from pa.llm.providers import LlmSettings, Target
from pa.llm.tools import TOOL_SPECS, ToolBox
from pa.llm.transport import Deadline, Guard, JsonlLog, RequestRefused, http_client

M = TypeVar("M", bound=BaseModel)
MALFORMED_RETRIES = 2
_EPHEMERAL = {"type": "ephemeral"}

__all__ = ["Adapter", "JsonlLog", "RequestRefused", "ToolCall", "Turn", "Usage", "converse", "guarded_client",
           "make_adapter"]


@dataclass
class Usage:
    """Token use and counts, for provenance (kept up to date as responses arrive, so a failure keeps them)."""

    turns: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    notes: list[str] = field(default_factory=list)


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


def guarded_client(target: Target, settings: LlmSettings, deadline: Deadline, log: JsonlLog,
                   literals: list[str]) -> httpx2.Client:
    """The one HTTP client of a stage run (pa.llm.transport)."""
    secrets = list(literals)
    if target.key_from and len(target.api_key) >= 8:
        secrets.append(target.api_key)  # it travels in a header; never in a body
    guard = Guard(endpoint=target.endpoint(), deadline=deadline, max_request_tokens=settings.max_request_tokens,
                  literals=secrets, log=log)
    return http_client(guard, settings.timeout_s)


def _json_object(text: str) -> str | None:
    start, end = text.find("{"), text.rfind("}")
    return text[start:end + 1] if 0 <= start < end else None


class OpenAIAdapter:
    """OpenAI Chat Completions (also vLLM, llama.cpp, Ollama through their compatible endpoint)."""

    def __init__(self, target: Target, settings: LlmSettings, http: httpx2.Client) -> None:
        import instructor
        import openai

        self.target = target
        self.client = openai.OpenAI(api_key=target.api_key, base_url=target.base_url or None, http_client=http,
                                    timeout=settings.timeout_s, max_retries=settings.max_retries)
        completions = self.client.chat.completions
        completions.create = self._accept_text_json(completions.create)  # type: ignore[method-assign]
        self.instructor = instructor.from_openai(self.client, mode=instructor.Mode.TOOLS)
        self.messages: list[dict[str, Any]] = []
        self.tools = [{"type": "function", "function": t} for t in TOOL_SPECS]
        self.usage: Usage | None = None

    def _accept_text_json(self, create: Callable[..., Any]) -> Callable[..., Any]:
        """A forced tool call answered with the JSON object as text becomes that tool call (module docs)."""
        from openai.types.chat.chat_completion_message_function_tool_call import (
            ChatCompletionMessageFunctionToolCall,
            Function,
        )

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            resp = create(*args, **kwargs)
            choice = kwargs.get("tool_choice")
            if not (isinstance(choice, dict) and choice.get("type") == "function") or not resp.choices:
                return resp
            msg = resp.choices[0].message
            text = _json_object(msg.content or "") if not msg.tool_calls else None
            if text:
                msg.tool_calls = [ChatCompletionMessageFunctionToolCall(
                    id="pa_text_answer", type="function",
                    function=Function(name=choice["function"]["name"], arguments=text))]
                if self.usage is not None:
                    self.usage.notes.append("the server answered the forced final turn with JSON as text")
            return resp

        return wrapped

    def start(self, system: str, user: str) -> None:
        """Seed the conversation (the prefix stays byte-identical in every turn: prompt caching)."""
        self.messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def count_tokens(self, system: str, user: str) -> int | None:
        """OpenAI has no token-counting endpoint: None (the caller uses the estimate)."""
        return None

    def _usage(self, u: Any, usage: Usage) -> None:
        if u is None:
            return
        usage.input_tokens += u.prompt_tokens or 0
        usage.output_tokens += u.completion_tokens or 0
        details = getattr(u, "prompt_tokens_details", None)
        usage.cached_input_tokens += (getattr(details, "cached_tokens", 0) or 0) if details is not None else 0

    def step(self, usage: Usage) -> Turn:
        """One model turn with tools available."""
        resp = self.client.chat.completions.create(model=self.target.model, messages=self.messages,  # type: ignore[arg-type]
                                                   tools=self.tools)  # type: ignore[arg-type]
        self._usage(resp.usage, usage)
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
        self.usage = usage
        answer, completion = self.instructor.create_with_completion(
            model=self.target.model, response_model=response_model, max_retries=retries,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}])
        self._usage(getattr(completion, "usage", None), usage)
        return answer


class AnthropicAdapter:
    """Anthropic Messages API, with cache_control breakpoints (module docs)."""

    max_tokens = 4096

    def __init__(self, target: Target, settings: LlmSettings, http: httpx2.Client) -> None:
        import anthropic
        import instructor

        self.target = target
        self.client = anthropic.Anthropic(api_key=target.api_key, base_url=target.base_url or None,
                                          http_client=http, timeout=settings.timeout_s,
                                          max_retries=settings.max_retries)
        self.instructor = instructor.from_anthropic(self.client, mode=instructor.Mode.TOOLS)
        self.system: list[dict[str, Any]] = []
        self.messages: list[dict[str, Any]] = []
        self.tools = [{"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
                      for t in TOOL_SPECS]

    def start(self, system: str, user: str) -> None:
        """Seed the conversation; system prompt and pre-seed are cache breakpoints."""
        self.system = [{"type": "text", "text": system, "cache_control": _EPHEMERAL}]
        self.messages = [{"role": "user", "content": [{"type": "text", "text": user, "cache_control": _EPHEMERAL}]}]

    def count_tokens(self, system: str, user: str) -> int | None:
        """Exact input tokens of the first request (`messages.count_tokens`, free of charge)."""
        res = self.client.messages.count_tokens(model=self.target.model, system=system,
                                                messages=[{"role": "user", "content": user}],
                                                tools=self.tools)  # type: ignore[arg-type]
        return int(res.input_tokens)

    def _usage(self, u: Any, usage: Usage) -> None:
        if u is None:
            return
        read = getattr(u, "cache_read_input_tokens", 0) or 0
        written = getattr(u, "cache_creation_input_tokens", 0) or 0
        usage.input_tokens += (getattr(u, "input_tokens", 0) or 0) + read + written
        usage.cached_input_tokens += read
        usage.output_tokens += getattr(u, "output_tokens", 0) or 0

    def step(self, usage: Usage) -> Turn:
        """One model turn with tools available."""
        resp = self.client.messages.create(model=self.target.model, system=self.system,  # type: ignore[arg-type]
                                           messages=self.messages,  # type: ignore[arg-type]
                                           tools=self.tools, max_tokens=self.max_tokens)  # type: ignore[arg-type]
        self._usage(resp.usage, usage)
        blocks = [b.model_dump(exclude_none=True) for b in resp.content]
        self.messages.append({"role": "assistant", "content": blocks})
        calls = [ToolCall(b["id"], b["name"], b.get("input") or {})
                 for b in blocks if b.get("type") == "tool_use"]
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        return Turn(text=text, calls=calls)

    def tool_results(self, results: list[tuple[ToolCall, str]], note: str | None) -> None:
        """Tool results go back in one user message (the newest one a cache breakpoint), with the note."""
        for m in self.messages[1:]:  # at most 4 breakpoints: keep system, pre-seed and the newest results
            if m["role"] == "user" and isinstance(m["content"], list):
                for block in m["content"]:
                    block.pop("cache_control", None)
        content: list[dict[str, Any]] = [{"type": "tool_result", "tool_use_id": c.id, "content": t}
                                         for c, t in results]
        if content:
            content[-1]["cache_control"] = _EPHEMERAL
        if note:
            content.append({"type": "text", "text": note})
        self.messages.append({"role": "user", "content": content})

    def final(self, system: str, user: str, retries: int, usage: Usage,
              response_model: type[M] = LlmAnswer) -> M:  # type: ignore[assignment]
        """The forced final turn: validated structured output (`response_model`), no tools."""
        answer, completion = self.instructor.create_with_completion(
            model=self.target.model, response_model=response_model, max_retries=retries,
            system=[{"type": "text", "text": system, "cache_control": _EPHEMERAL}],
            max_tokens=self.max_tokens, messages=[{"role": "user", "content": user}])
        self._usage(getattr(completion, "usage", None), usage)
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
                                       jitter=settings.retry_initial_s, max_delay=8.0)
        self.client = genai.Client(api_key=target.api_key, http_options=types.HttpOptions(
            base_url=target.base_url, httpx_client=http, timeout=int(settings.timeout_s * 1000),
            retry_options=retry))
        self.instructor = instructor.from_genai(self.client, mode=instructor.Mode.TOOLS)
        self._last_response: Any = None
        self.instructor.on("completion:response", self._remember)
        self.system = ""
        self.contents: list[Any] = []
        self.tools = [types.Tool(function_declarations=[
            types.FunctionDeclaration(name=t["name"], description=t["description"],
                                      parameters_json_schema=t["parameters"]) for t in TOOL_SPECS])]
        self._made_up: set[str] = set()  # ids pa gave to calls that came without one

    def _remember(self, response: Any) -> None:
        self._last_response = response

    @staticmethod
    def _malformed(response: Any) -> bool:
        candidates = getattr(response, "candidates", None) or []
        finish = candidates[0].finish_reason if candidates else None
        return str(getattr(finish, "value", finish)) == "MALFORMED_FUNCTION_CALL"

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
            usage.cached_input_tokens += getattr(meta, "cached_content_token_count", 0) or 0
            usage.output_tokens += (meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0)

    def step(self, usage: Usage) -> Turn:
        """One model turn with tools available (a malformed function call is asked again)."""
        t = self.types
        config = t.GenerateContentConfig(
            system_instruction=self.system, tools=self.tools,
            automatic_function_calling=t.AutomaticFunctionCallingConfig(disable=True))
        for attempt in range(MALFORMED_RETRIES + 1):
            resp = self.client.models.generate_content(model=self.target.model, contents=self.contents,
                                                       config=config)
            self._usage(resp, usage)
            if not self._malformed(resp):
                break
            usage.notes.append(f"Gemini: malformed function call, turn asked again ({attempt + 1})")
        else:
            raise RuntimeError(f"Gemini returned a malformed function call {MALFORMED_RETRIES + 1} times")
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
        last: Exception | None = None
        for _attempt in range(MALFORMED_RETRIES + 1):
            self._last_response = None
            try:
                answer, completion = self.instructor.create_with_completion(
                    model=self.target.model, response_model=response_model, max_retries=retries,
                    messages=[{"role": "system", "content": system}, {"role": "user", "content": user}])
            except Exception as exc:  # instructor wraps the SDK's errors; only a malformed call is retried
                if not self._malformed(self._last_response):
                    raise
                self._usage(self._last_response, usage)
                last = exc
                usage.notes.append("Gemini: malformed function call in the final turn, asked again")
                continue
            self._usage(completion, usage)
            return answer
        raise RuntimeError(f"Gemini returned a malformed function call {MALFORMED_RETRIES + 1} times") from last


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


def _escape(text: str) -> str:
    return text.replace("<", "\\u003c").replace(">", "\\u003e")


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
            exchange.append(f"[assistant] {_escape(turn.text)}")
        if not turn.calls:
            break
        results = []
        for call in turn.calls:
            text = tools.run(call.id, call.name, call.arguments)
            usage.tool_calls += 1
            results.append((call, text))
            args = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
            exchange.append(f"[tool call {_escape(call.id)}] {_escape(call.name)}"
                            f"({_escape(tools.redactor.text(args))}) -> {text}")
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
