"""The seven tools a script may call, and the one function that runs any of them.

Each tool is an async handler taking a :class:`ToolContext` and a validated pydantic args
model, returning a dict. A failure is a dict with ``error``: :func:`call_tool` turns invalid
arguments and unexpected exceptions into one, so nothing a script sends can crash the host.
The parts live in :mod:`.base` (what a tool is), :mod:`.args` (the base of argument models:
pydantic, imported on first use) and :mod:`.dispatch` (running one); the tools themselves in
one module each kind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_tui.base.lazy import exports
from hermes_tui.runtime.tools.base import TOOL_NAMES, Tool, ToolContext
from hermes_tui.runtime.tools.dispatch import call_tool, call_tool_blocking, get_tool, registry

if TYPE_CHECKING:
    from hermes_tui.runtime.tools.args import Args, describe_validation

# pydantic's part on first use (it comes with the tools, not with the runtime's start: .args).
__getattr__ = exports(__name__, {"Args": "args", "describe_validation": "args"}, globals())

__all__ = [
    "TOOL_NAMES", "Args", "Tool", "ToolContext", "call_tool", "call_tool_blocking", "describe_validation",
    "get_tool", "registry",
]
