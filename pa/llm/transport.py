"""The one HTTP path of the LLM stage: every request passes the guard below before it leaves.

The provider SDKs (openai, anthropic, google-genai) all run on the `httpx2.Client` built here. Its
transport checks, for every request, retries and token counts included:

1. **origin**: the request goes to the target's endpoint (its base URL, else the provider's default
   host) and nowhere else. A redirect, a base URL an SDK picked up by itself, or any other host is
   refused, so a key can only travel to where pa.llm.providers decided it may;
2. **deadline**: the stage has one overall deadline (`--llm-timeout`); a request after it is refused
   and every request's connect/read/write timeouts are cut to the time left, so a hung server costs
   at most the deadline, not `timeout_s × (retries + 1)` per request;
3. **size**: a request whose body is estimated above `max_request_tokens` (ceil(bytes / 4)) is
   refused: a profile string cannot turn into a multi-megabyte, unconfirmed request;
4. **secrets**: the body is scrubbed (pa.llm.secrets) of secret-looking values and of the
   literal provider keys of the environment, whatever else is enabled.

A refusal raises `RequestRefused`, which the openai and anthropic SDKs propagate without retrying
(it subclasses their base errors) and google-genai does not retry (not an HTTP or transport error).
`--log` records the body as sent (after scrubbing) and every response body; headers, and so keys,
are never logged.
"""

from __future__ import annotations

import json
import math
import os
import ssl
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anthropic
import httpx2
import openai

from pa.llm.secrets import scrub

_DEFAULT_PORTS = {"http": 80, "https": 443}


class RequestRefused(openai.OpenAIError, anthropic.AnthropicError):
    """pa refused to send a request (foreign host, deadline passed, request too large)."""


class JsonlLog:
    """`--log FILE`: one JSON object per HTTP request/response, flushed as it happens.

    Thread-safe, and writes after `close()` are dropped (a conversation abandoned at the deadline
    may still be finishing in its thread).
    """

    def __init__(self, path: Path | None) -> None:
        self._fh = path.open("a", encoding="utf-8") if path else None
        self.path = path
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        """Append one record (no-op without --log or after close)."""
        with self._lock:
            if self._fh is not None:
                # bodies are logged as sent and received, less any key (a server may echo one back)
                self._fh.write(scrub(json.dumps({"t": round(time.time(), 3), **record}, default=str)) + "\n")
                self._fh.flush()

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None


@dataclass
class Deadline:
    """The stage's overall deadline (time.monotonic() seconds)."""

    at: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        """A deadline `seconds` from now."""
        return cls(time.monotonic() + seconds)

    def remaining(self) -> float:
        """Seconds left (≤ 0 once passed)."""
        return self.at - time.monotonic()


def origin(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a URL, the default port filled in."""
    parts = urlsplit(url)
    scheme = (parts.scheme or "https").lower()
    return scheme, (parts.hostname or "").lower(), parts.port or _DEFAULT_PORTS.get(scheme, 0)


@dataclass
class Guard:
    """What the transport enforces (module docs)."""

    endpoint: str
    deadline: Deadline
    max_request_tokens: int
    literals: list[str] = field(default_factory=list)
    log: JsonlLog | None = None
    requests: int = 0

    def check(self, request: httpx2.Request) -> bytes:
        """Refuse the request or return its scrubbed body."""
        if origin(str(request.url)) != origin(self.endpoint):
            raise RequestRefused(f"refused to send a request to {request.url.scheme}://{request.url.host}: the "
                                 f"stage talks only to {self.endpoint}")
        if self.deadline.remaining() <= 0:
            raise RequestRefused("the LLM stage deadline (--llm-timeout) has passed")
        body = request.read()
        text = body.decode("utf-8", "replace")
        clean = scrub(text, self.literals)
        tokens = math.ceil(len(clean) / 4)
        if tokens > self.max_request_tokens:
            raise RequestRefused(f"a request of about {tokens:,} tokens is above the ceiling of "
                                 f"{self.max_request_tokens:,} (max_request_tokens in pa.toml)")
        return clean.encode("utf-8") if clean != text else body


class GuardedTransport(httpx2.BaseTransport):
    """An HTTP transport that applies `Guard` to every request (module docs)."""

    def __init__(self, guard: Guard, inner: httpx2.BaseTransport | None = None) -> None:
        self.guard = guard
        self.inner = inner or httpx2.HTTPTransport()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        """Check, scrub and time-limit one request, then send it."""
        body = self.guard.check(request)
        left = max(0.001, self.guard.deadline.remaining())
        timeouts = dict(request.extensions.get("timeout") or {})
        for k in ("connect", "read", "write", "pool"):
            v = timeouts.get(k)
            timeouts[k] = left if v is None else min(float(v), left)
        if body is not request.content:
            headers = [(k, v) for k, v in request.headers.multi_items() if k.lower() != "content-length"]
            request = httpx2.Request(request.method, request.url, headers=headers, content=body,
                                     extensions={**request.extensions, "timeout": timeouts})
        else:
            request.extensions = {**request.extensions, "timeout": timeouts}
        self.guard.requests += 1
        if self.guard.log is not None:
            self.guard.log.write({"kind": "request", "method": request.method, "url": str(request.url),
                                  "body": _body(body)})
        return self.inner.handle_request(request)

    def close(self) -> None:
        """Close the inner transport."""
        self.inner.close()


def _body(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def http_client(guard: Guard, timeout_s: float) -> httpx2.Client:
    """An httpx2 client on the guarded transport; its hook logs response bodies (never headers)."""

    def on_response(response: httpx2.Response) -> None:
        if guard.log is not None:
            response.read()
            guard.log.write({"kind": "response", "status": response.status_code,
                             "url": str(response.request.url), "body": _body(response.content)})

    # trust_env=False: proxies from the environment would get transports of their own (mounts) that
    # bypass the guard, so the environment's proxy for the endpoint (and SSL_CERT_FILE / SSL_CERT_DIR)
    # are given to the inner transport instead.
    scheme, host, _ = origin(guard.endpoint)
    proxy = None if urllib.request.proxy_bypass(host) else urllib.request.getproxies().get(scheme)
    cafile, capath = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
    verify: Any = ssl.create_default_context(cafile=cafile, capath=capath) if cafile or capath else True
    inner = httpx2.HTTPTransport(proxy=proxy, verify=verify) if proxy or verify is not True else None
    return httpx2.Client(timeout=timeout_s, transport=GuardedTransport(guard, inner), follow_redirects=False,
                         trust_env=False, event_hooks={"response": [on_response]})
