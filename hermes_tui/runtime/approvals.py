"""The approval gate every terminal() call passes through.

An :data:`Approver` is an async callable the runtime is given: it receives an
:class:`ApprovalRequest` and returns an :class:`ApprovalDecision`. The app's approver shows a
dialog; the CLI's asks on the terminal; without one, everything that needs asking is denied.
No answer within ``approvals.timeout`` seconds is a deny.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Literal

from pydantic import BaseModel, Field

Choice = Literal["once", "session", "always", "deny"]


class ApprovalRequest(BaseModel):
    """What the user is asked to allow."""

    id: str = Field(default_factory=lambda: secrets.token_hex(6))
    kind: Literal["script", "terminal"]
    text: str
    """The full command (or script)."""
    cwd: str
    session: str
    kernel: str | None = None
    exec_id: str | None = None
    origin: Literal["user", "injected", "automation"] = "user"
    reasons: list[str] = Field(default_factory=list)
    """Why it is flagged (empty when it only asks because of the mode)."""
    choices: list[Choice] = Field(default_factory=lambda: ["once", "session", "always", "deny"])
    created_at: float = Field(default_factory=time.time)
    deadline: float
    """``time.time()`` after which no answer means deny."""


class ApprovalDecision(BaseModel):
    """The user's answer."""

    choice: Choice
    reason: str | None = None
    """With ``deny``: goes back to the script / model."""


Approver = Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]


def blocked(error: str) -> dict[str, object]:
    """What a denied terminal() returns to the script (SPEC §4)."""
    return {"output": "", "exit_code": -1, "status": "blocked", "error": f"BLOCKED: {error}"}


class ApprovalGate:
    """Asks the approver about terminal commands and remembers "session" answers.

    Args:
        approver: who answers (None: nobody; every request is denied).
        timeout: seconds to wait for an answer.
    """

    def __init__(self, approver: Approver | None, timeout: float) -> None:
        self.approver = approver
        self.timeout = timeout
        self._session_allowed: dict[str, set[str]] = {}

    async def check_terminal(
        self, command: str, *, cwd: str, session: str, kernel: str | None, exec_id: str | None
    ) -> str | None:
        """None if ``command`` may run; otherwise the ``BLOCKED:`` reason (without prefix)."""
        if command in self._session_allowed.get(session, set()):
            return None
        if self.approver is None:
            return "no one to approve this command (no approver / no terminal to ask on); it was not run"
        request = ApprovalRequest(
            kind="terminal", text=command, cwd=cwd, session=session, kernel=kernel, exec_id=exec_id,
            deadline=time.time() + self.timeout,
        )
        try:
            decision = await asyncio.wait_for(self.approver(request), self.timeout)
        except TimeoutError:
            return f"no answer within {self.timeout:g}s (approvals.timeout); denied"
        except Exception as exc:  # a broken approver denies; it never runs the command
            return f"the approver failed ({exc}); denied"
        if decision.choice == "deny":
            return "denied by the user" + (f": {decision.reason}" if decision.reason else "")
        if decision.choice in ("session", "always"):
            self._session_allowed.setdefault(session, set()).add(command)
        return None

    def forget_session(self, session: str) -> None:
        """Drop the "session" answers of ``session``."""
        self._session_allowed.pop(session, None)
