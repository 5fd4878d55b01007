"""What the agent tells a front end, as plain data: every event is sent only after it is stored.

Front ends (the app's conversation pane, headless runners, tests) import these types and
nothing else of the agent: they never reach into the loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from hermes_tui.agent.usage import CallUsage, Totals

if TYPE_CHECKING:  # annotations only: the first frame does not wait for pydantic (issue 20)
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


# -- sub-agents (delegate_task, hermes_tui.agent.subagents) ---------------------------------------


@dataclass
class ChildState:
    """What the parent shows of one child, live."""

    name: str
    goal: str
    session: str
    status: str = "waiting"
    """waiting, running, done, error, budget, interrupted."""
    steps: int = 0
    tool_calls: int = 0
    cost_usd: float = 0.0
    unpriced: bool = False
    started_at: float | None = None
    ended_at: float | None = None
    summary: str = ""
    note: str = ""
    """The last warning or error the child was told, for the person (never the parent's model:
    it may advise ``/budget``)."""
    stopped: str = ""
    """Why it ended before finishing, in words for the parent's model (see :mod:`.subagents`)."""

    @classmethod
    def from_result(cls, row: dict[str, Any]) -> ChildState:
        """A child as its parent's stored result tells it (``results`` / ``partial`` rows)."""
        cost, seconds = row.get("cost_usd"), row.get("seconds")
        state = cls(str(row.get("name") or "?"), str(row.get("goal") or ""), str(row.get("session") or ""),
                    status=str(row.get("status") or "done"), steps=int(row.get("model_calls") or 0),
                    tool_calls=int(row.get("tool_calls") or 0),
                    cost_usd=float(cost) if isinstance(cost, (int, float)) else 0.0, unpriced=cost is None,
                    summary=str(row.get("summary") or ""), stopped=str(row.get("stopped") or ""))
        if isinstance(seconds, (int, float)):
            state.started_at, state.ended_at = 0.0, float(seconds)
        return state

    def result(self, summary_chars: int) -> dict[str, Any]:
        """What the parent's model reads of this child."""
        summary = self.summary
        if len(summary) > summary_chars:
            summary = summary[:summary_chars] + f"\n[... summary cut at {summary_chars} characters]"
        seconds = 0.0 if self.started_at is None else (self.ended_at or time.time()) - self.started_at
        found = {"name": self.name, "goal": self.goal[:500], "status": self.status, "summary": summary,
                 "model_calls": self.steps, "tool_calls": self.tool_calls,
                 "cost_usd": None if self.unpriced and not self.cost_usd else round(self.cost_usd, 6),
                 "seconds": round(max(seconds, 0.0), 2), "session": self.session}
        if self.stopped:
            found["stopped"] = self.stopped
        return found


@dataclass
class DelegateProgress(AgentEvent):
    """The children of one ``delegate_task`` call, as they stand now (sent on every change)."""

    call_id: str
    children: list[ChildState] = field(default_factory=list)


@dataclass
class ChildEvent(AgentEvent):
    """An event of a child's own conversation (for its live transcript)."""

    child_session: str
    event: AgentEvent
