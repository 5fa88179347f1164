"""The pre-flight token and cost estimate shown (and confirmed on a TTY) before the stage sends anything.

Prices come from `prices.toml` next to this module (US dollars per million tokens, longest prefix
of the model name per provider); an unknown model, an OpenAI-compatible on-prem server and the
`claude` CLI (billed to its own account) give "cost unknown".

The run's size is a range, because the number of tool turns is the model's choice:
- low: the shortest run, two requests (one turn that calls no tool, then the forced final answer),
  each with the first request's input tokens, and `LOW_OUTPUT` output tokens each;
- high: `max_turns` requests where request k resends the first request plus k − 1 tool results at
  the SQL result-size cap (`sql_max_bytes` / 4 tokens each), and `HIGH_OUTPUT` output tokens each.
A run can exceed the high figure only when the model calls several tools per turn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import tomllib

from pa.llm.providers import DEFAULT_HOSTS, LlmSettings, Target

PRICES_FILE = Path(__file__).with_name("prices.toml")
LOW_OUTPUT = 300
HIGH_OUTPUT = 1_500


@dataclass(frozen=True)
class Price:
    """US dollars per million input and output tokens (cached input: `cached_factor` × input)."""

    prefix: str
    input: float
    output: float
    as_of: str
    cached_factor: float = 1.0


def load_prices(path: Path = PRICES_FILE) -> dict[str, list[Price]]:
    """Provider -> prices, longest prefix first."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    factors = data.get("cached_input_factor", {})
    out: dict[str, list[Price]] = {}
    for row in data.get("price", []):
        out.setdefault(row["provider"], []).append(
            Price(row["prefix"], float(row["input"]), float(row["output"]), str(data.get("as_of", "?")),
                  float(row.get("cached_factor", factors.get(row["provider"], 1.0)))))
    for rows in out.values():
        rows.sort(key=lambda p: -len(p.prefix))
    return out


def price_for(target: Target, prices: dict[str, list[Price]] | None = None) -> Price | None:
    """The price of the target's model, or None (unknown model, on-prem server, claude CLI)."""
    host = DEFAULT_HOSTS.get(target.provider, "\0").split("://", 1)[-1]
    if target.base_url and host not in target.base_url:
        return None  # a self-hosted or proxied endpoint: its price is not the provider's list price
    model = target.model.lower()
    for p in (prices if prices is not None else load_prices()).get(target.provider, []):
        if model.startswith(p.prefix):
            return p
    return None


@dataclass(frozen=True)
class Estimate:
    """Token range of a run and its cost range (None: cost unknown)."""

    first_input: int
    exact: bool
    input_low: int
    input_high: int
    output_low: int
    output_high: int
    cost_low: float | None
    cost_high: float | None
    price: Price | None

    def text(self, target: Target) -> str:
        """One line for stderr."""
        how = "counted by the provider" if self.exact else "estimated, ceil(chars/4)"
        toks = (f"first request {self.first_input:,} input tokens ({how}); whole run "
                f"{self.input_low:,}–{self.input_high:,} input + {self.output_low:,}–{self.output_high:,} "
                "output tokens")
        if self.cost_low is None or self.cost_high is None or self.price is None:
            why = ("billed to the claude CLI's own account" if target.cli else
                   f"no list price for {target.provider}:{target.model}"
                   + (" at this endpoint" if target.base_url else ""))
            return f"{toks}; cost unknown ({why})"
        return (f"{toks}; cost ≈ ${self.cost_low:.3f}–${self.cost_high:.3f} "
                f"(list price ${self.price.input:g}/${self.price.output:g} per M tokens as of "
                f"{self.price.as_of})")


def estimate_run(first_input: int, exact: bool, target: Target, settings: LlmSettings,
                 prices: dict[str, list[Price]] | None = None) -> Estimate:
    """The documented low/high token and cost range of one stage run."""
    n = max(1, settings.max_turns) if not target.cli else 1
    low_requests = min(2, n)
    per_result = math.ceil(settings.sql_max_bytes / 4)
    input_low = low_requests * first_input
    input_high = n * first_input + per_result * n * (n - 1) // 2
    output_low, output_high = low_requests * LOW_OUTPUT, n * HIGH_OUTPUT
    price = None if target.cli else price_for(target, prices)
    if price is None:
        return Estimate(first_input, exact, input_low, input_high, output_low, output_high, None, None, None)
    cost = lambda i, o: (i * price.input + o * price.output) / 1e6  # noqa: E731
    return Estimate(first_input, exact, input_low, input_high, output_low, output_high,
                    cost(input_low, output_low), cost(input_high, output_high), price)


def cost_of(input_tokens: int, cached_tokens: int, output_tokens: int, target: Target,
            prices: dict[str, list[Price]] | None = None) -> float | None:
    """Estimated cost in US$ of the tokens a run used (cached input at its discount); None: unknown."""
    price = None if target.cli else price_for(target, prices)
    if price is None:
        return None
    cached = min(cached_tokens, input_tokens)
    return ((input_tokens - cached) * price.input + cached * price.input * price.cached_factor
            + output_tokens * price.output) / 1e6
