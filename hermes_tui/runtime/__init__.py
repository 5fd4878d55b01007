"""The headless engine: session kernels, execute_code, events. Never imports Textual."""

from hermes_tui.runtime.events import (
    EventBus,
    ExecFinished,
    ExecOutput,
    ExecStarted,
    KernelDied,
    KernelEvicted,
    KernelReaped,
    KernelStarted,
    KernelStateChanged,
    RuntimeEvent,
    Subscription,
    ToolCallMade,
)
from hermes_tui.runtime.models import ExecResult, KernelInfo, KernelRef
from hermes_tui.runtime.runtime import Runtime

__all__ = [
    "EventBus",
    "ExecFinished",
    "ExecOutput",
    "ExecResult",
    "ExecStarted",
    "KernelDied",
    "KernelEvicted",
    "KernelInfo",
    "KernelReaped",
    "KernelRef",
    "KernelStarted",
    "KernelStateChanged",
    "Runtime",
    "RuntimeEvent",
    "Subscription",
    "ToolCallMade",
]
