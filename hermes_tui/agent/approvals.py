"""Approvals recorded beside the session they belong to.

The policy (what must ask) is the runtime's gate; asking a person is the front end's (the
app's dialog, a TTY prompt); :class:`ApprovalRecorder` sits between the two. It is the
runtime's ``Approver``: each request of an open session is stored — under the tool call that
caused it, carried on the request — before the person is asked, and the answer after, so a
pending approval survives a crash of the front end and is asked again on resume.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from hermes_tui.storage import sessions as db
from hermes_tui.storage.writer import SessionStore
from hermes_tui.agent.restore import PendingCall
from hermes_tui.runtime.approvals import ApprovalDecision, ApprovalRequest, Approver, blocked

if TYPE_CHECKING:
    from hermes_tui.runtime import Runtime


class ApprovalRecorder:
    """Stores requests and answers, and hands the asking to ``ask``.

    Args:
        ask: the front end's way to ask a person (it records nothing itself).
    """

    def __init__(self, ask: Approver) -> None:
        self.ask = ask
        self.closing = False
        """Set when the front end is closing: a request it leaves unanswered stays pending
        (asked again on resume) instead of being recorded as withdrawn."""
        self._stores: dict[str, SessionStore] = {}

    def attach(self, session_id: str, store: SessionStore) -> None:
        """Record the approvals of ``session_id`` in ``store`` from now on."""
        self._stores[session_id] = store

    def detach(self, session_id: str) -> None:
        """Stop recording for ``session_id``."""
        self._stores.pop(session_id, None)

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        store = self._stores.get(request.session)
        if store is not None:
            await store.call(db.add_approval, request.session, request.call_id, request.model_dump(mode="json"))
        try:
            decision = await self.ask(request)
        except asyncio.CancelledError:  # the gate stopped waiting (approvals.timeout, or the turn ended)
            if store is not None and not self.closing:
                store.submit(db.answer_approval, request.id, "deny", "no answer in time", "withdrawn")
            raise
        if store is not None:
            await store.call(db.answer_approval, request.id, decision.choice, decision.reason, by=decision.by)
        return decision


async def ask_again(runtime: Runtime, store: SessionStore, pending: PendingCall) -> dict[str, object] | None:
    """Ask again the approval a restored tool call waited for.

    Returns None if it is allowed (its call then runs from the start without asking twice),
    else the blocked result the call ends with. The answer is stored either way (the recorder
    stores it when a person answered; a refusal with no one to ask is stored here).
    """
    assert pending.request is not None
    # Asked under the same call: if the app stops again, it is pending again for that call.
    request = pending.request.model_copy(update={"call_id": pending.call.id})
    refusal = await runtime.ask_again(request)
    if pending.approval_id is not None:
        await store.call(db.answer_approval, pending.approval_id, "allow" if refusal is None else "deny", refusal)
    return None if refusal is None else blocked(refusal)
