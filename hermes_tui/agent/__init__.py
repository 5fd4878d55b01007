"""The conversation: providers, tool declarations, tool-call parsing, and the turn loop.

Like the runtime, nothing here imports Textual: front ends listen to the events of
:mod:`hermes_tui.agent.events`. The parts: ``events`` (what a front end is told), ``loop``
(the :class:`Agent`: turns, model steps, tool calls), ``history`` (what the model is sent),
``restore`` (reading a stored session back), ``approvals`` (requests and answers recorded
with the session), ``workspace`` (what a front end drives: runtime, store, agent, inject).

Names are imported on first use: ``hermes_tui.agent.events`` must not pull the loop (and
through it the runtime's tools and the danger checker) into the app's first screen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_tui.base.lazy import exports

_WHERE = {"Agent": "loop", "AgentEvent": "events", "ProviderError": "providers", "ProviderSettings": "providers",
          "resolve_provider": "providers"}

if TYPE_CHECKING:
    from hermes_tui.agent.events import AgentEvent
    from hermes_tui.agent.loop import Agent
    from hermes_tui.agent.models.providers import ProviderError, ProviderSettings, resolve_provider


__getattr__ = exports(__name__, _WHERE, globals())

__all__ = sorted(_WHERE)
