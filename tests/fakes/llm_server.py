"""A scripted fake of the OpenAI Chat Completions, Anthropic Messages and Gemini generateContent APIs.

The real SDKs (and instructor on top of them) talk HTTP to it, so requests are serialised and
responses parsed exactly as in production. Each POST pops the next scripted reply; every request
body is recorded for assertions. Replies are built with the helpers below in the wire shape of
each API (Gemini: `models/{model}:generateContent` and `:countTokens`; Anthropic also
`/v1/messages/count_tokens`). Request headers are recorded too (`headers`, lower-cased names), so a
test can assert which key reached which host. The server binds 127.0.0.1 on a random port, serves
in a daemon thread and is shut down by `close()` (or the context manager); a missing script entry
answers 500 so a test can never hang. `redirect(url)` answers 307 to another place.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Reply:
    """One scripted HTTP reply."""

    def __init__(self, body: Any, status: int = 200, headers: dict[str, str] | None = None,
                 delay_s: float = 0.0) -> None:
        self.body = body
        self.status = status
        self.headers = headers or {}
        self.delay_s = delay_s


class FakeLlmServer:
    """Serves scripted replies in order and records request bodies."""

    def __init__(self, script: list[Reply]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    fake.requests.append(json.loads(raw))
                except ValueError:
                    fake.requests.append({"_raw": raw.decode("utf-8", "replace")})
                fake.paths.append(self.path)
                fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                reply = fake.script.pop(0) if fake.script else Reply({"error": "script exhausted"}, 500,
                                                                    {"x-should-retry": "false"})
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                data = json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """Base URL of the server (OpenAI style, with /v1)."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def root(self) -> str:
        """Base URL without /v1 (Anthropic style)."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def close(self) -> None:
        """Stop serving and free the port."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeLlmServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def bodies_text(self) -> str:
        """All recorded request bodies as one string (for 'no raw name was sent' checks)."""
        return "\n".join(json.dumps(r, ensure_ascii=False) for r in self.requests)

    def keys_seen(self) -> list[str]:
        """Every credential header value received (authorization, x-api-key, x-goog-api-key)."""
        return [h[k] for h in self.headers for k in ("authorization", "x-api-key", "x-goog-api-key") if k in h]


# ---- OpenAI Chat Completions wire shapes ----

_USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}


def openai_tool_calls(*calls: tuple[str, str, dict[str, Any] | str]) -> Reply:
    """An assistant message calling tools: (call id, tool name, arguments)."""
    tool_calls = [{"id": cid, "type": "function",
                   "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
                  for cid, name, args in calls]
    return Reply({"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "fake",
                  "choices": [{"index": 0, "finish_reason": "tool_calls",
                               "message": {"role": "assistant", "content": None, "tool_calls": tool_calls}}],
                  "usage": _USAGE})


def openai_text(text: str) -> Reply:
    """An assistant message without tool calls."""
    return Reply({"id": "chatcmpl-2", "object": "chat.completion", "created": 0, "model": "fake",
                  "choices": [{"index": 0, "finish_reason": "stop",
                               "message": {"role": "assistant", "content": text}}], "usage": _USAGE})


def openai_answer(answer: dict[str, Any], tool_name: str = "LlmAnswer") -> Reply:
    """The final structured answer as instructor's TOOLS mode expects it (a forced tool call)."""
    return openai_tool_calls(("call_final", tool_name, answer))


# ---- Anthropic Messages wire shapes ----

_A_USAGE = {"input_tokens": 100, "output_tokens": 20}


def anthropic_tool_use(*calls: tuple[str, str, dict[str, Any]], text: str = "") -> Reply:
    """An assistant message with tool_use blocks."""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "tool_use", "id": cid, "name": name, "input": args} for cid, name, args in calls]
    return Reply({"id": "msg_1", "type": "message", "role": "assistant", "model": "fake",
                  "content": content, "stop_reason": "tool_use", "stop_sequence": None, "usage": _A_USAGE})


def anthropic_text(text: str) -> Reply:
    """An assistant message with text only."""
    return Reply({"id": "msg_2", "type": "message", "role": "assistant", "model": "fake",
                  "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                  "stop_sequence": None, "usage": _A_USAGE})


def anthropic_answer(answer: dict[str, Any], tool_name: str = "LlmAnswer") -> Reply:
    """The final structured answer as instructor's ANTHROPIC_TOOLS mode expects it."""
    return anthropic_tool_use(("toolu_final", tool_name, answer))


def redirect(url: str) -> Reply:
    """A 307 redirect to `url` (a client must not follow it with the key)."""
    return Reply({}, 307, {"location": url})


def error(status: int, message: str = "fake error", retry_after_ms: int | None = 1) -> Reply:
    """An API error reply (429 / 5xx are retried by the SDKs; retry-after-ms keeps tests fast)."""
    headers = {"retry-after-ms": str(retry_after_ms)} if retry_after_ms is not None else {}
    return Reply({"error": {"type": "error", "message": message}}, status, headers)


def anthropic_count(tokens: int) -> Reply:
    """A `/v1/messages/count_tokens` reply."""
    return Reply({"input_tokens": tokens})


# ---- Gemini generateContent wire shapes (models/{model}:generateContent) ----

_G_USAGE = {"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120}


def _gemini(parts: list[dict[str, Any]], finish: str = "STOP") -> Reply:
    return Reply({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish,
                                  "index": 0}],
                  "usageMetadata": _G_USAGE, "modelVersion": "fake", "responseId": "resp-1"})


def gemini_malformed() -> Reply:
    """A turn that ends with MALFORMED_FUNCTION_CALL (no content), as Gemini sends it."""
    return Reply({"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL", "index": 0}],
                  "usageMetadata": _G_USAGE, "modelVersion": "fake", "responseId": "resp-m"})


def gemini_function_calls(*calls: tuple[str | None, str, dict[str, Any]], text: str = "") -> Reply:
    """A model turn with functionCall parts: (call id or None, function name, args)."""
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    for cid, name, args in calls:
        call: dict[str, Any] = {"name": name, "args": args}
        if cid is not None:
            call["id"] = cid
        parts.append({"functionCall": call})
    return _gemini(parts)


def gemini_text(text: str) -> Reply:
    """A model turn with text only."""
    return _gemini([{"text": text}])


def gemini_answer(answer: dict[str, Any], name: str = "LlmAnswer") -> Reply:
    """The final structured answer as instructor's GenAI TOOLS mode expects it (a forced function call)."""
    return _gemini([{"functionCall": {"name": name, "args": answer}}])


def gemini_count(tokens: int) -> Reply:
    """A `models/{model}:countTokens` reply."""
    return Reply({"totalTokens": tokens})


def gemini_error(status: int, message: str = "fake error") -> Reply:
    """A Google API error body (429 RESOURCE_EXHAUSTED, 5xx INTERNAL/UNAVAILABLE are retried)."""
    names = {429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 400: "INVALID_ARGUMENT"}
    return Reply({"error": {"code": status, "message": message, "status": names.get(status, "UNKNOWN")}}, status)


def with_cached(reply: Reply, cached: int) -> Reply:
    """The same reply, reporting `cached` input tokens read from the provider's prompt cache."""
    body = json.loads(json.dumps(reply.body))
    if "usageMetadata" in body:  # Gemini
        body["usageMetadata"]["cachedContentTokenCount"] = cached
    elif "choices" in body:  # OpenAI
        body["usage"]["prompt_tokens_details"] = {"cached_tokens": cached}
    else:  # Anthropic: cached tokens come on top of input_tokens
        body["usage"]["cache_read_input_tokens"] = cached
    return Reply(body, reply.status, reply.headers, reply.delay_s)
