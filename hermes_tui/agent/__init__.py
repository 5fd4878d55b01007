"""The conversation: providers, tool declarations, tool-call parsing, and the turn loop.

Like the runtime, nothing here imports Textual: the app listens to :class:`Agent` events.
"""

from hermes_tui.agent.loop import Agent, AgentEvent
from hermes_tui.agent.providers import ProviderError, ProviderSettings, resolve_provider

__all__ = ["Agent", "AgentEvent", "ProviderError", "ProviderSettings", "resolve_provider"]
