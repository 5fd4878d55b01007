"""What each model call used and cost: tokens as the provider reported them, the price from
a maintained table, and the context window.

Prices come from ``genai-prices`` (kept by the pydantic team), matched by the endpoint's URL
first, then by the provider's name; ``model.pricing`` (or a provider entry's ``pricing``)
overrides the table, and a cost the provider reports itself (OpenRouter's ``usage.cost``)
wins over both. A model no table knows has tokens and no cost: it is shown as "?", never
guessed.

Token counts are the provider's. When a server sends none (some OpenAI-compatible servers
never do), they are estimated from the characters sent and received (:func:`tokens_for_chars`:
one token per 4 characters, the usual rule for English and code) and marked ``estimated``.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4
"""How many characters make a token, for estimates (text and code in English average ~4)."""


@dataclass(frozen=True)
class Pricing:
    """Prices in US dollars per million tokens (``model.pricing``)."""

    input_per_mtok: float
    output_per_mtok: float
    cache_read_per_mtok: float | None = None
    """Cached input read (default: the input price)."""
    cache_write_per_mtok: float | None = None
    """Input written to the cache (default: the input price)."""

    def cost(self, usage: CallUsage) -> float:
        """The cost of ``usage`` in US dollars."""
        read = usage.cache_read_tokens
        write = usage.cache_write_tokens
        plain = max(usage.input_tokens - read - write, 0)
        total = (plain * self.input_per_mtok + usage.output_tokens * self.output_per_mtok
                 + read * _or(self.cache_read_per_mtok, self.input_per_mtok)
                 + write * _or(self.cache_write_per_mtok, self.input_per_mtok))
        return total / 1_000_000


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


@dataclass
class CallUsage:
    """One model call: tokens, cost and time.

    ``input_tokens`` counts every token sent, cached ones included (``cache_read_tokens`` and
    ``cache_write_tokens`` are parts of it), as OpenAI reports it; Anthropic's counts are
    added up to match.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    """Part of ``output_tokens`` the model spent thinking (when reported)."""
    estimated: bool = False
    """The server sent no counts: they are estimated from characters."""
    reported_cost: float | None = None
    """A cost the provider reported itself (OpenRouter), in US dollars."""
    cost_usd: float | None = None
    """The cost in US dollars; None when no price is known."""
    cost_source: str = "unknown"
    """``provider`` (reported), ``config`` (``pricing``), ``table`` (genai-prices) or ``unknown``."""
    model: str = ""
    provider: str = ""
    latency_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> CallUsage:
        """A stored ``usage`` row back as a call."""
        return cls(row.get("input_tokens") or 0, row.get("output_tokens") or 0, row.get("cache_read_tokens") or 0,
                   row.get("cache_write_tokens") or 0, row.get("reasoning_tokens") or 0, bool(row.get("estimated")),
                   cost_usd=row.get("cost_usd"), cost_source=row.get("cost_source") or "unknown",
                   model=row.get("model") or "", provider=row.get("provider") or "",
                   latency_s=row.get("latency_s") or 0.0)


def tokens_for_chars(chars: int) -> int:
    """Tokens in ``chars`` characters by the characters rule (at least 1 for any text)."""
    return (max(chars, 0) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def request_chars(system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    """Characters of a request as sent (system prompt, messages, tool declarations)."""
    return len(system) + len(json.dumps(messages, ensure_ascii=False)) + len(json.dumps(tools, ensure_ascii=False))


# -- reading what providers report -----------------------------------------------------------


MAX_TOKENS = 100_000_000
"""More tokens than any model takes or gives in one call: a count above it is not believed."""
MAX_PRICE_PER_MTOK = 1000.0
"""US dollars per million tokens no model costs: a reported cost above this rate is not believed."""


class _Impossible(ValueError):
    """A count a server cannot mean (not finite, or beyond :data:`MAX_TOKENS`)."""


def _int(value: Any) -> int:
    """A reported count: 0 when absent or not a number; :class:`_Impossible` when it cannot be."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return 0
    if value != value or value in (float("inf"), float("-inf")) or value > MAX_TOKENS:
        raise _Impossible(value)
    return int(value) if value > 0 else 0


def _field(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(name)
    value = getattr(obj, name, None)
    if value is None:  # fields the SDK's model does not declare (OpenRouter's cost) are extras
        extra = getattr(obj, "model_extra", None) or {}
        value = extra.get(name)
    return value


def from_openai(usage: Any) -> CallUsage | None:
    """OpenAI-compatible ``usage`` (chat completions): prompt, completion, cached and
    reasoning tokens; DeepSeek's cache hits; OpenRouter's ``cost``. None when absent or when a
    count cannot be true (then the call is estimated)."""
    if usage is None:
        return None
    try:
        return _openai(usage)
    except _Impossible:
        return None


def _openai(usage: Any) -> CallUsage | None:
    prompt = _int(_field(usage, "prompt_tokens"))
    completion = _int(_field(usage, "completion_tokens"))
    details = _field(usage, "prompt_tokens_details")
    cached = _int(_field(details, "cached_tokens")) or _int(_field(usage, "prompt_cache_hit_tokens"))
    written = _int(_field(details, "cache_write_tokens"))
    reasoning = _int(_field(_field(usage, "completion_tokens_details"), "reasoning_tokens"))
    cost = _field(usage, "cost")
    if not (prompt or completion):
        return None
    believable = isinstance(cost, (int, float)) and not isinstance(cost, bool) and \
        0 <= cost <= (prompt + completion) * MAX_PRICE_PER_MTOK / 1_000_000  # NaN fails both
    return CallUsage(prompt, completion, min(cached, prompt), min(written, prompt), reasoning,
                     reported_cost=float(cost) if believable else None)


def from_anthropic(usage: Any) -> CallUsage | None:
    """Anthropic's message ``usage``: its ``input_tokens`` leaves out the cache reads and
    writes, which are added here. None when absent or impossible."""
    if usage is None:
        return None
    try:
        return _anthropic(usage)
    except _Impossible:
        return None


def _anthropic(usage: Any) -> CallUsage | None:
    read = _int(_field(usage, "cache_read_input_tokens"))
    write = _int(_field(usage, "cache_creation_input_tokens"))
    plain = _int(_field(usage, "input_tokens"))
    output = _int(_field(usage, "output_tokens"))
    if not (plain or read or write or output):
        return None
    return CallUsage(plain + read + write, output, read, write)


# -- prices ----------------------------------------------------------------------------------

_PROVIDER_IDS = {"xai": "x-ai", "gemini": "google", "zai": "zai", "kimi": "moonshotai", "moonshot": "moonshotai"}
"""Our provider names whose genai-prices id differs."""

_load_lock = threading.Lock()
_table: Any = None


def _snapshot() -> Any:
    """genai-prices' table (imported on first use: ~0.1 s, kept off the first frame)."""
    global _table
    with _load_lock:
        if _table is None:
            from genai_prices import data_snapshot

            _table = data_snapshot.get_snapshot()
        return _table


def warm_prices() -> None:
    """Load the price table now (call in a thread, so the first model call does not wait)."""
    try:
        _snapshot()
    except Exception as exc:  # a broken install: costs show "?"
        log.warning("the price table could not be loaded: %s", exc)


def _table_model(model: str, provider: str, base_url: str | None) -> tuple[Any, Any] | None:
    """(provider, model) of genai-prices for this call, or None when the table has no match.

    The endpoint's URL decides first: the same model name served by a local server or an
    unknown host gets no price of the vendor's.
    """
    try:
        snapshot = _snapshot()
    except Exception:
        return None
    attempts: list[dict[str, str]] = []
    if base_url:
        attempts.append({"provider_api_url": base_url})
    if provider:
        attempts.append({"provider_id": _PROVIDER_IDS.get(provider, provider)})
    for where in attempts:
        try:
            return snapshot.find_provider_model(model, None, where.get("provider_id"), where.get("provider_api_url"))
        except LookupError:
            continue
        except Exception as exc:  # the table's own bug must not end a turn
            log.debug("price lookup failed: %s", exc)
            return None
    return None


def table_price(usage: CallUsage, model: str, provider: str, base_url: str | None) -> float | None:
    """The table's price of ``usage`` (None when the table does not know the model)."""
    found = _table_model(model, provider, base_url)
    if found is None:
        return None
    from genai_prices import Usage

    table_provider, table_model = found
    try:
        calculation = table_model.calc_price(
            Usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                  cache_read_tokens=usage.cache_read_tokens, cache_write_tokens=usage.cache_write_tokens),
            table_provider, genai_request_timestamp=datetime.now(tz=timezone.utc))
        return float(calculation.total_price)
    except Exception as exc:  # a price the table cannot compute for this usage: unknown
        log.debug("price calculation failed: %s", exc)
        return None


def context_window(model: str, provider: str, base_url: str | None, configured: int | None) -> int | None:
    """The model's context window in tokens: ``model.context_window`` (``context_length``),
    else the table's, else None."""
    if configured:
        return configured
    found = _table_model(model, provider, base_url)
    if found is not None and getattr(found[1], "context_window", None):
        return int(found[1].context_window)
    if "/" in model:  # an aggregator's vendor/model: the vendor's own entry knows the window
        vendor, _, name = model.partition("/")
        found = _table_model(name, vendor, None)
        if found is not None and getattr(found[1], "context_window", None):
            return int(found[1].context_window)
    return None


def table_prices(model: str, provider: str, base_url: str | None) -> Pricing | None:
    """The table's per-million prices for a model now (for the model picker), None if unknown."""
    found = _table_model(model, provider, base_url)
    if found is None:
        return None
    try:
        prices = found[1].get_prices(datetime.now(tz=timezone.utc))
        return Pricing(_base(prices.input_mtok), _base(prices.output_mtok),
                       None if prices.cache_read_mtok is None else _base(prices.cache_read_mtok),
                       None if prices.cache_write_mtok is None else _base(prices.cache_write_mtok))
    except Exception:  # a price of a shape this does not read: not shown
        return None


def _base(value: Any) -> float:
    """A price per million tokens; for tiered prices (more per token past 200k) the first tier."""
    return float(getattr(value, "base", value))


def price(usage: CallUsage, model: str, provider: str, base_url: str | None, configured: Pricing | None) -> None:
    """Fill ``usage.cost_usd`` and ``cost_source``: the provider's reported cost, else the
    configured prices, else the table's; unknown stays None."""
    usage.model, usage.provider = model, provider
    if usage.reported_cost is not None:
        usage.cost_usd, usage.cost_source = usage.reported_cost, "provider"
    elif configured is not None:
        usage.cost_usd, usage.cost_source = configured.cost(usage), "config"
    else:
        cost = table_price(usage, model, provider, base_url)
        usage.cost_usd, usage.cost_source = (cost, "table") if cost is not None else (None, "unknown")


def estimate_cost(input_tokens: int, output_tokens: int, model: str, provider: str, base_url: str | None,
                  configured: Pricing | None) -> float | None:
    """What a call of this many tokens would cost at most (no cache discount), or None."""
    usage = CallUsage(input_tokens, output_tokens)
    if configured is not None:
        return configured.cost(usage)
    return table_price(usage, model, provider, base_url)


# -- a session's totals ----------------------------------------------------------------------


@dataclass
class Tally:
    """What some model calls used: tokens, cost (of the priced ones) and time."""

    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    """The cost of the priced calls."""
    calls: int = 0
    unpriced_calls: int = 0
    """Calls with no known price: their cost is not in ``cost_usd``."""
    estimated_calls: int = 0
    cached: int = 0
    """Input tokens read from the provider's cache."""
    seconds: float = 0.0
    """Time spent waiting for the model."""

    def add(self, usage: CallUsage) -> None:
        """Count one call."""
        self.calls += 1
        self.tokens_in += usage.input_tokens
        self.tokens_out += usage.output_tokens
        self.cached += usage.cache_read_tokens
        self.seconds += usage.latency_s
        if usage.cost_usd is None:
            self.unpriced_calls += 1
        else:
            self.cost_usd += usage.cost_usd
        self.estimated_calls += usage.estimated

    @property
    def cost_known(self) -> bool:
        """True when every call so far was priced."""
        return self.unpriced_calls == 0

    @property
    def cost(self) -> str:
        """The cost as shown: ``$0.04``, ``?`` when nothing was priced, ``$0.04+?`` in between."""
        if self.calls and self.unpriced_calls == self.calls:
            return "?"
        return dollars(self.cost_usd) + ("" if self.cost_known else "+?")


@dataclass
class Totals(Tally):
    """A session's tally, and how full the context is."""

    context_tokens: int | None = None
    """Tokens the last call filled (its input and output): the context in use."""
    context_window: int | None = None
    max_cost_usd: float | None = None
    """The session's cost ceiling now (None: none)."""

    def add(self, usage: CallUsage) -> None:
        super().add(usage)
        self.context_tokens = usage.input_tokens + usage.output_tokens

    @property
    def context_fraction(self) -> float | None:
        """How full the context window is (0-1), when both are known."""
        if not self.context_tokens or not self.context_window:
            return None
        return min(self.context_tokens / self.context_window, 1.0)


def dollars(value: float | None) -> str:
    """``$0.0042``, ``$1.27``; ``?`` for an unknown cost."""
    if value is None:
        return "?"
    if value == 0:
        return "$0.00"
    if value < 0.0001:
        return "<$0.0001"
    if value < 1:  # small amounts keep 4 decimals ($0.0135), trailing zeros dropped down to cents
        shown = f"{value:.4f}".rstrip("0")
        return "$" + (shown + "0" * (2 - len(shown.split(".")[1])) if len(shown.split(".")[1]) < 2 else shown)
    return f"${value:,.2f}"


def tokens(value: int) -> str:
    """``812``, ``12.4k``, ``1.2M``."""
    if value < 1000:
        return str(value)
    if value < 1_000_000:
        return f"{value / 1000:.1f}k".replace(".0k", "k")
    return f"{value / 1_000_000:.1f}M".replace(".0M", "M")


# -- breakdowns (``/usage``) -------------------------------------------------------------------


@dataclass
class Line(Tally):
    """One row of a breakdown: a turn or a model, and what its calls used."""

    label: str = ""


def by_turn(rows: list[dict[str, Any]]) -> list[Line]:
    """The calls grouped by turn, in order (a sub-agent's calls carry their parent's turn)."""
    lines: dict[str, Line] = {}
    for row in rows:
        key = row.get("turn_id") or ""
        if key not in lines:
            first = (row.get("turn_text") or "").strip().splitlines()
            lines[key] = Line(label=f"{len(lines) + 1}. {first[0][:60] if first else '(no text)'}")
        lines[key].add(CallUsage.from_row(row))
    return list(lines.values())


def by_model(rows: list[dict[str, Any]]) -> list[Line]:
    """The calls grouped by provider and model, the most expensive first."""
    lines: dict[tuple[str, str], Line] = {}
    for row in rows:
        key = (row.get("provider") or "?", row.get("model") or "?")
        lines.setdefault(key, Line(label=f"{key[0]} · {key[1]}")).add(CallUsage.from_row(row))
    return sorted(lines.values(), key=lambda line: (-line.cost_usd, -line.tokens_in))
