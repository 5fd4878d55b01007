"""The models ``/model`` offers: the configured providers' models, and what each endpoint lists.

A choice names a provider and a model; choosing it resolves them the way ``--provider`` and
``--model`` are resolved (:func:`hermes_tui.agent.models.resolve.resolve_provider`), so a key still
goes only where its entry says. Prices and context windows come from the price table or the
config (:mod:`.usage`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from hermes_tui.agent.models.keys import ProviderError
from hermes_tui.agent.models.providers import Provider, ProviderSettings
from hermes_tui.agent.usage import Pricing, context_window, table_prices

LIST_TIMEOUT = 5.0
"""Seconds the endpoint's model list may take before the picker shows the configured ones."""
MAX_CHOICES = 2000


@dataclass
class ModelChoice:
    """One model the picker offers."""

    provider: str
    """The name to resolve (``--provider``); None-like empty for the configured one."""
    model: str
    current: bool = False
    pricing: Pricing | None = None
    context_window: int | None = None
    source: str = "config"
    """``config`` or ``endpoint`` (listed by the provider's ``/models``)."""

    @property
    def key(self) -> str:
        return f"{self.provider}:{self.model}"


def configured_choices(config: Any, current: ProviderSettings | None) -> list[ModelChoice]:
    """The current model, its provider's other configured models, each ``providers:`` entry's
    models and the fallbacks, without repeats."""
    seen: dict[str, ModelChoice] = {}

    def add(provider: str, model: str | None, current_one: bool = False) -> None:
        if provider and model and f"{provider}:{model}" not in seen:
            seen[f"{provider}:{model}"] = ModelChoice(provider, model, current_one)

    if current is not None:
        add(current.name, current.model, True)
        for model in current.models:
            add(current.name, model)
    for name, entry in config.providers.items():
        if not getattr(entry, "enabled", True):
            continue
        for model in [entry.model, *entry.models]:
            add(name, model)
    for fallback in config.fallback_providers:
        add(fallback.provider, fallback.model)
    return list(seen.values())


async def endpoint_choices(provider: Provider, settings: ProviderSettings) -> tuple[list[ModelChoice], str | None]:
    """The models the current endpoint lists, and why there are none when it cannot say."""
    try:
        ids = await asyncio.wait_for(provider.list_models(MAX_CHOICES + 1), LIST_TIMEOUT)
    except asyncio.TimeoutError:
        return [], f"{settings.name} did not list its models within {LIST_TIMEOUT:.0f} s"
    except ProviderError as exc:
        return [], f"{settings.name} did not list its models: {exc.short or exc}"
    note = None
    if len(ids) > MAX_CHOICES:
        ids = ids[:MAX_CHOICES]
        note = (f"{settings.name} lists more than {MAX_CHOICES:,} models: the first {MAX_CHOICES:,} are here; "
                "/model NAME picks any other")
    return [ModelChoice(settings.name, model_id, model_id == settings.model, source="endpoint")
            for model_id in ids], note


def describe(choices: list[ModelChoice], settings_by_provider: dict[str, ProviderSettings]) -> None:
    """Fill each choice's price and context window (reads the price table: call in a thread)."""
    for choice in choices:
        settings = settings_by_provider.get(choice.provider)
        base_url = settings.base_url if settings else None
        configured = settings.pricing if settings and choice.model == settings.model else None
        choice.pricing = configured or table_prices(choice.model, choice.provider, base_url)
        choice.context_window = context_window(choice.model, choice.provider, base_url,
                                               settings.context_length if settings and choice.current else None)


def merge(configured: list[ModelChoice], listed: list[ModelChoice]) -> list[ModelChoice]:
    """Configured choices first, then the listed ones not already there (at most :data:`MAX_CHOICES`)."""
    keys = {c.key for c in configured}
    return [*configured, *(c for c in listed if c.key not in keys)][:MAX_CHOICES]


def parse_choice(text: str, current: ProviderSettings | None, known: set[str]) -> tuple[str | None, str] | str:
    """``/model NAME`` or ``/model PROVIDER:NAME`` as (provider, model); the provider is None
    for the current one. ``PROVIDER`` counts only when it is a provider name in ``known``
    (``llama3:8b`` is a model of Ollama's). Returns the error to show for text that names nothing."""
    text = text.strip()
    if not text or any(ch.isspace() for ch in text):
        return ("/model takes one name: /model NAME, or /model PROVIDER:NAME "
                "(for example /model openrouter:anthropic/claude-sonnet-4).")
    provider, sep, model = text.partition(":")
    if sep and model and provider.lower() in known:
        return provider, model
    if current is None:
        return "No model is configured, so /model NAME has no provider: use /model PROVIDER:NAME."
    return None, text
