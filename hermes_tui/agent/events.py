"""What the agent tells a front end, as plain data: every event is sent only after it is stored.

Front ends (the app's conversation pane, headless runners, tests) import these types and
nothing else of the agent: they never reach into the loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from hermes_tui.agent.usage import CallUsage, Totals
from hermes_tui.runtime.models import ExecResult, Origin

SHELL_PREFIX = "!"
"""How a ``!cmd`` turn is stored and shown: the text the user typed."""
TurnKind = Literal["message", "python", "shell"]
"""A message to the model, Python typed with no model, or a ``!cmd`` typed by the user."""
TurnStatus = Literal["done", "interrupted", "error", "stopped", "budget", "paused"]
"""How a turn ended; ``stopped``: agent.max_steps or too many malformed calls; ``budget``: the
next model call would have passed a cost ceiling (the turn can be retried after ``/budget``);
``paused``: a headless run stopped at a request for approval (``hermes-tui resume`` goes on)."""
ReplyStatus = Literal["done", "interrupted", "error", "streaming"]
ToolStatus = Literal["success", "error", "timeout", "interrupted", "blocked", "invalid"]
NoticeLevel = Literal["info", "warning", "error"]


@dataclass
class AgentEvent:
    """Something the conversation shows. Sent only after it is stored."""

    turn_id: str


@dataclass
class TurnStarted(AgentEvent):
    text: str
    origin: Origin
    queued: int = 0
    """Turns still waiting after this one."""
    kind: TurnKind = "message"


@dataclass
class TurnQueued(AgentEvent):
    text: str
    origin: Origin
    position: int


@dataclass
class ReplyText(AgentEvent):
    """More of the assistant's reply (``delta``) for the reply block ``reply_id``."""

    reply_id: int
    delta: str


@dataclass
class ReplyDone(AgentEvent):
    reply_id: int
    text: str
    status: ReplyStatus


@dataclass
class ToolStarted(AgentEvent):
    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass
class ToolFinished(AgentEvent):
    call_id: str
    name: str
    result: dict[str, Any]
    exec_result: ExecResult | None = None


@dataclass
class Notice(AgentEvent):
    text: str
    level: NoticeLevel = "error"


@dataclass
class UsageUpdated(AgentEvent):
    """A model call's usage was stored (``call`` is None when only a limit or the model changed)."""

    call: CallUsage | None
    totals: Totals
    """The session's totals now (and the context the last call filled)."""


@dataclass
class TurnEnded(AgentEvent):
    status: TurnStatus


Listener = Callable[[AgentEvent], object]
"""Receives every event, in order, on the agent's event loop (its return value is ignored)."""
