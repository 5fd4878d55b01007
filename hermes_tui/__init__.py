"""hermes-tui: a terminal workstation for agents that program their own tool calls."""

__version__ = "0.1.0"
