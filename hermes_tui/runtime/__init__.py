"""The headless engine: session kernels, execute_code, events. Never imports Textual.

Every name is imported on first use (module ``__getattr__``): ``hermes_tui.runtime.hardening``
is the CLI's very first import, and the app's first screen needs neither the engine (executor,
rpc, the danger checker) nor its records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_tui.base.lazy import exports

_WHERE = {
    "EventBus": "events", "ExecFinished": "events", "ExecOutput": "events", "ExecStarted": "events",
    "KernelDied": "events", "KernelEvicted": "events", "KernelReaped": "events", "KernelStarted": "events",
    "KernelStateChanged": "events", "RuntimeEvent": "events", "Subscription": "events", "ToolCallMade": "events",
    "ExecResult": "models", "KernelInfo": "models", "KernelRef": "models",
    "Runtime": "runtime",
}

if TYPE_CHECKING:
    from hermes_tui.runtime.events import (
        EventBus, ExecFinished, ExecOutput, ExecStarted, KernelDied, KernelEvicted, KernelReaped, KernelStarted,
        KernelStateChanged, RuntimeEvent, Subscription, ToolCallMade,
    )
    from hermes_tui.runtime.models import ExecResult, KernelInfo, KernelRef
    from hermes_tui.runtime.runtime import Runtime


__getattr__ = exports(__name__, _WHERE, globals())

__all__ = sorted(_WHERE)
