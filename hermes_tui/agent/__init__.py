"""The conversation: providers, tool declarations, tool-call parsing, and the turn loop.

Like the runtime, nothing here imports Textual: front ends listen to the events of
:mod:`hermes_tui.agent.events`. The parts: ``events`` (what a front end is told), ``loop``
(the :class:`Agent`: turns, model steps, tool calls), ``history`` (what the model is sent),
``restore`` (reading a stored session back), ``approvals`` (requests and answers recorded
with the session), ``workspace`` (what a front end drives: runtime, store, agent, inject).
"""

from hermes_tui.agent.events import AgentEvent
from hermes_tui.agent.loop import Agent
from hermes_tui.agent.providers import ProviderError, ProviderSettings, resolve_provider

__all__ = ["Agent", "AgentEvent", "ProviderError", "ProviderSettings", "resolve_provider"]
