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


def __getattr__(name: str) -> object:
    # The engine itself is imported on first use: `hermes_tui.runtime.hardening` (the CLI's very
    # first import) and the event types must not pull the executor, rpc and the danger checker.
    if name == "Runtime":
        from hermes_tui.runtime.runtime import Runtime

        return Runtime
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

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
