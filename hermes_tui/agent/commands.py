"""What ``/budget`` and ``/model`` do, for any front end: each takes the words typed and
returns what to say (notes with their level); the front end only shows them and opens its
own picker.
"""

from __future__ import annotations

import asyncio

from hermes_tui.agent.budget import parse_amount
from hermes_tui.agent.events import NoticeLevel
from hermes_tui.agent.loop import Agent
from hermes_tui.agent.models import choices
from hermes_tui.agent.models.catalog import PROVIDERS
from hermes_tui.agent.models.keys import ProviderError
from hermes_tui.agent.models.providers import ProviderSettings
from hermes_tui.agent.models.resolve import resolve_provider
from hermes_tui.agent.usage import dollars
from hermes_tui.agent.workspace import Workspace
from hermes_tui.config import Config

Note = tuple[str, NoticeLevel]

NO_MODEL_TO_PICK = ("No model is configured, so there is nothing to pick from: /model PROVIDER:NAME uses one "
                    "(e.g. /model openrouter:anthropic/claude-sonnet-4), or set model.provider and model.default in "
                    "config.yaml (docs/providers.md).")


async def budget_command(agent: Agent, argument: str) -> list[Note]:
    """``/budget``: the ceilings; ``/budget 5.00`` sets the session's, ``/budget turn 1.00`` the
    turn's, ``/budget off`` removes the session's."""
    if agent.settings is None:
        return [("No model is configured: nothing is spent, so there is no budget to set.", "info")]
    words = argument.split()
    turn = bool(words) and words[0].lower() == "turn"
    amount = " ".join(words[1:] if turn else words)
    if not amount:
        if turn:
            return [("/budget turn needs an amount in US dollars, like /budget turn 1.00 (or /budget turn off).",
                     "info")]
        return [(agent.budget.describe(agent.totals.cost_usd, agent.totals.unpriced_calls), "info")]
    if amount.lower() in ("off", "none"):
        await agent.set_budget(None, turn=turn)
        return [(f"The {'turn' if turn else 'session'} has no cost ceiling now.", "info")]
    value = parse_amount(amount)
    if isinstance(value, str):
        return [(value, "info")]
    await agent.set_budget(value, turn=turn)
    spent = agent.totals.cost_usd
    if turn:
        return [(f"Each turn may cost up to {dollars(value)} now (for this session).", "info")]
    if value <= spent:
        return [(f"This session has already spent {dollars(spent)}, more than {dollars(value)}: no model call will "
                 "be made until the ceiling is raised.", "warning")]
    return [(f"This session may cost up to {dollars(value)} now ({dollars(spent)} spent). /retry goes on with a "
             "turn the ceiling stopped.", "info")]


def model_argument(argument: str, config: Config, settings: ProviderSettings | None) -> tuple[str | None, str] | str:
    """``/model NAME`` or ``/model PROVIDER:NAME``: the (provider, model) meant, or why not."""
    known = {p.name for p in PROVIDERS} | set(config.providers) | {"custom"}
    return choices.parse_choice(argument, settings, known)


async def model_choices(config: Config, settings: ProviderSettings | None,
                        agent: Agent | None) -> tuple[list[choices.ModelChoice], str | None]:
    """What the ``/model`` picker offers: the configured models and those the provider lists
    (asked over the network), described; and why the provider's list is missing, if it is."""
    configured = choices.configured_choices(config, settings)
    listed: list[choices.ModelChoice] = []
    why = None
    if agent is not None and agent.provider is not None and settings is not None:
        listed, why = await choices.endpoint_choices(agent.provider, settings)
    every = choices.merge(configured, listed)
    if every:
        known = {settings.name: settings} if settings else {}
        await asyncio.to_thread(choices.describe, every, known)
    return every, why


async def use_model(workspace: Workspace, provider: str | None, model: str) -> tuple[ProviderSettings | None, list[Note]]:
    """Resolve a choice as ``--provider`` / ``--model`` are and use it from the open session's
    next model call: the settings now in use (None: unchanged) and what to say."""
    try:
        settings = resolve_provider(workspace.config, workspace.home, workspace.host_env, provider=provider,
                                    model=model)
    except ProviderError as exc:
        return None, [(f"Cannot use that model: {exc}", "info")]
    if settings is None or workspace.agent is None:
        return None, [("Cannot use that model: no provider is configured (set model.provider in config.yaml).", "info")]
    await workspace.agent.use_model(settings)
    workspace.settings = settings
    workspace.provider_problem = None
    notes: list[Note] = [(f"Model: {settings.label} from the next model call.", "info")]
    return settings, notes + [(problem, "warning") for problem in settings.withheld]
