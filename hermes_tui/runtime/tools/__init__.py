"""The seven tools a script may call, and the one function that runs any of them.

Each tool is an async handler taking a :class:`ToolContext` and a validated pydantic args
model, returning a dict. A failure is a dict with ``error``: :func:`call_tool` turns invalid
arguments and unexpected exceptions into one, so nothing a script sends can crash the host.
The parts live in :mod:`.base` (what a tool is) and :mod:`.dispatch` (running one); the tools
themselves in one module each kind.
"""

from hermes_tui.runtime.tools.base import TOOL_NAMES, Args, Tool, ToolContext, describe_validation
from hermes_tui.runtime.tools.dispatch import call_tool, call_tool_blocking, get_tool, registry

__all__ = [
    "TOOL_NAMES", "Args", "Tool", "ToolContext", "call_tool", "call_tool_blocking", "describe_validation",
    "get_tool", "registry",
]
