"""Answers to approval requests, below every front end: one typed :class:`Answer` whichever
way it comes, and the requests waiting for one.

An answer reaches an open request three ways: the front end's own question (the app's dialog,
a TTY prompt), ``hermes-tui approve`` / ``deny`` through the inject socket, and a row a shell
stored in a shared sessions store (read when it NOTIFYs). :class:`AnswerBroker` holds the
open requests with their futures and takes all three through :meth:`AnswerBroker.give`: the
choice is checked against what the request offers and written to the audit log before the
gate sees it. A run resumed after a pause takes the answers stored for its pending requests
through :class:`StoredAnswers`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the app makes its broker before its first frame: the approval gate loads later
    from hermes_tui.runtime.approvals import ApprovalDecision, ApprovalRequest, AuditLog


class AnswerRefused(ValueError):
    """An answer that cannot be given (no such request waits, a choice not offered);
    ``str(err)`` is one line saying what was wrong and what is allowed."""


@dataclass(frozen=True)
class Answer:
    """One answer to one request.

    Args:
        choice: one of the request's ``choices`` (``once``, ``session``, ``always``, ``deny``).
        reason: with ``deny``, what the script or the model is told.
        who: who answered, when not the person at this front end (``user@host (pid …)`` from a shell).
        whole_run: with ``deny``, every request of the same script run is denied.
    """

    choice: str
    reason: str | None = None
    who: str | None = None
    whole_run: bool = False

    @classmethod
    def from_message(cls, message: object) -> Answer:
        """The answer of an inject-socket request ``{"answer": {"id", "choice", "reason", "who"}}``
        (``id`` is read by the caller); raises :class:`AnswerRefused` for a malformed one."""
        if not isinstance(message, dict):
            raise AnswerRefused("answer must be an object with id and choice")
        reason = message.get("reason")
        return cls(choice=str(message.get("choice")), reason=reason if isinstance(reason, str) else None,
                   who=str(message.get("who") or "a shell"))

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Answer:
        """An answer stored by ``hermes-tui approve`` / ``deny`` (``decision``, ``reason``, ``who``)."""
        return cls(choice=str(row["decision"]), reason=row.get("reason"), who=row.get("who") or "a shell")

    def check(self, request: ApprovalRequest) -> None:
        """Raise :class:`AnswerRefused` unless ``request`` offers this choice."""
        if self.choice not in request.choices:
            raise AnswerRefused(f"{self.choice!r} is not offered for this request (offered: "
                                f"{', '.join(request.choices)})")

    def decision(self) -> ApprovalDecision:
        """What the gate applies."""
        from hermes_tui.runtime.approvals import ApprovalDecision

        return ApprovalDecision(choice=self.choice, reason=self.reason, by=self.who,  # type: ignore[arg-type]
                                whole_run=self.whole_run)

    def said(self, request: ApprovalRequest) -> str:
        """One line for the conversation: who answered what, and the request's text (cut)."""
        why = f" ({self.reason[:200]})" if self.reason else ""
        return f"Answered from {(self.who or 'a shell')[:200]}: {self.choice}{why} — {request.text[:120]}"


Show = Callable[["ApprovalRequest", "asyncio.Future[ApprovalDecision]"], None]
"""How a front end puts a request in front of a person: it sets the future with the answer."""


class AnswerBroker:
    """The requests one front end is asking, each with the future its answer sets.

    It is the front end's ``ask`` (hand :meth:`ask` to the :class:`~hermes_tui.agent.workspace.Workspace`)
    and the inject socket's answerer (:meth:`serve`).

    Args:
        show: puts a request in front of a person (the app: a dialog); called on the event loop.
        withdrawn: called with a request's id when its question is withdrawn before an answer
            (the gate stopped waiting: timeout, the turn ended).
        answered: called with the request and the answer given from a shell or the store (the
            front end says so where the person looks).
    """

    def __init__(self, show: Show, withdrawn: Callable[[str], None] | None = None,
                 answered: Callable[[ApprovalRequest, Answer], None] | None = None) -> None:
        self.show = show
        self.withdrawn = withdrawn
        self.answered = answered
        self.audit: AuditLog | None = None
        """Where answers given from a shell are logged (the workspace sets the runtime's)."""
        self._open: dict[str, tuple[ApprovalRequest, asyncio.Future[ApprovalDecision]]] = {}

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        """Show ``request`` and wait for its answer, from whichever channel gives it first."""
        answer: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()
        self._open[request.id] = (request, answer)
        self.show(request, answer)
        try:
            return await answer
        except asyncio.CancelledError:
            if self.withdrawn is not None:
                self.withdrawn(request.id)
            raise
        finally:
            self._open.pop(request.id, None)

    def waiting(self) -> list[ApprovalRequest]:
        """The requests shown and not answered yet, oldest first."""
        return [request for request, _ in self._open.values()]

    async def give(self, request_id: str, answer: Answer) -> ApprovalRequest:
        """Answer an open request from a shell (the socket or the store), as the person would in
        its dialog: checked, audited, then applied. Raises :class:`AnswerRefused`."""
        found = self._open.get(request_id)
        if found is None:
            raise AnswerRefused(f"no request {request_id} is waiting in the app")
        request, future = found
        answer.check(request)
        if not future.done():
            future.set_result(answer.decision())
        if self.audit is not None:
            await self.audit.write(event="answer_from_shell", id=request.id, session=request.session,
                                   decision=answer.choice, why=answer.reason, who=answer.who, text=request.text)
        if self.answered is not None:
            self.answered(request, answer)
        return request

    async def serve(self, message: dict[str, object]) -> dict[str, object]:
        """The inject socket's approvals protocol: ``{"pending": true}`` lists the open requests;
        ``{"answer": {"id", "choice", "reason", "who"}}`` answers one. The reply has ``ok``."""
        if "pending" in message:
            return {"ok": True, "requests": [request.model_dump(mode="json") for request in self.waiting()]}
        given = message.get("answer")
        try:
            answer = Answer.from_message(given)
            assert isinstance(given, dict)
            request = await self.give(str(given.get("id")), answer)
        except AnswerRefused as exc:
            return {"ok": False, "error": str(exc)}
        return {"ok": True, "answered": request.id, "choice": answer.choice}


class StoredAnswers:
    """The requests a paused run left pending, each with the answer a shell stored for it (or
    None), as a resumed run meets them again.

    Each serves once: a request asked again as it was (the same id), or asked anew by the re-run
    of its tool call — then the n-th such question of that call (same kind and text) takes the
    n-th stored request's answer.

    Args:
        waiting: ``approvals`` rows pending when the run resumed (oldest first), each with its
            ``answer`` (``decision``, ``reason``, ``who``) or None.
    """

    def __init__(self, waiting: list[dict[str, Any]] | None = None) -> None:
        self.waiting = list(waiting or ())

    def take(self, request: ApprovalRequest) -> dict[str, Any] | None:
        """The stored request ``request`` is (removed: its answer serves once), or None."""
        found = next((w for w in self.waiting if w["id"] == request.id), None)
        if found is None and request.call_id:
            found = next((w for w in self.waiting if w["tool_call_id"] == request.call_id
                          and w["kind"] == request.kind and w["text"] == request.text), None)
        if found is not None:
            self.waiting.remove(found)
        return found
