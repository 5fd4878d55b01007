"""Reading a stored session back: what to draw, what the model sees, and what is left to do.

:func:`load_session` marks a turn the app died in as interrupted (a reply that was streaming,
a tool call that never finished) and keeps a tool call whose approval was pending: the agent
asks it again on resume and the turn goes on from there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hermes_tui.storage import sessions as db
from hermes_tui.storage.writer import SessionStore
from hermes_tui.agent.tools import ToolCall
from hermes_tui.runtime.approvals import ApprovalRequest
from hermes_tui.runtime.models import Origin

RESTART_NOTE = "[interrupted: the app stopped before this tool call finished]"
APP_STOPPED = "the app stopped during this turn"
"""How a turn the app died in is ended when the session is read back (kept: a later read marks it too)."""


@dataclass
class PendingCall:
    """A tool call whose approval was pending when the app stopped."""

    turn_id: str
    origin: Origin
    call: ToolCall
    request: ApprovalRequest | None
    """The approval to ask again; None for a later call of the same reply (it just runs)."""
    approval_id: str | None


@dataclass
class LoadedSession:
    """What :func:`load_session` found: the stored rows to draw and what is left to do."""

    stored: db.StoredSession
    interrupted_turns: list[str] = field(default_factory=list)
    pending: list[PendingCall] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    """The messages the model sees, as stored (before trimming to the context budget)."""


async def load_session(store: SessionStore, session_id: str) -> LoadedSession | None:
    """Read ``session_id`` back (None if it is new), settling what the app left unfinished."""
    stored = await store.call(db.load_session, session_id)
    if stored is None:
        return None
    loaded = LoadedSession(stored)
    approval: dict[str, Any] | None  # the loop below also reuses the name for a lookup that may miss
    pending_by_call = {a["tool_call_id"]: a for a in stored.pending_approvals if a["tool_call_id"]}
    for approval in stored.pending_approvals:  # asked outside any tool call: nothing to resume
        if not approval["tool_call_id"] or approval["tool_call_id"] not in stored.tool_calls:
            await store.call(db.answer_approval, approval["id"], "deny", "the app stopped", "withdrawn")
    running = {t["id"]: t for t in stored.turns if t["status"] in ("running", "paused")}
    answered = {m["tool_call_id"] for m in stored.messages if m["role"] == "tool"}
    history = loaded.history
    for message in stored.messages:
        if message["status"] == "streaming":
            message["status"] = "interrupted"
            await store.call(db.update_message, message["id"], message["content"], "interrupted")
        item: dict[str, Any] = {"role": message["role"], "content": message["content"]}
        if message["tool_calls"]:
            item["tool_calls"] = message["tool_calls"]
        if message["tool_call_id"]:
            item["tool_call_id"] = message["tool_call_id"]
        if message["role"] == "assistant" and not item.get("content") and not item.get("tool_calls"):
            continue
        history.append(item)
        unanswered = [c for c in message["tool_calls"] or () if c["id"] not in answered]
        turn = running.get(message["turn_id"] or "")
        if turn is not None and any(c["id"] in pending_by_call for c in unanswered):
            # The app died while this reply's call waited for approval: it and the calls
            # after it run when the turn resumes.
            for c in unanswered:
                approval = pending_by_call.get(c["id"])
                loaded.pending.append(PendingCall(
                    turn["id"], turn["origin"], ToolCall(c["id"], c["function"]["name"], c["function"]["arguments"]),
                    ApprovalRequest.model_validate(approval["request"]) if approval else None,
                    approval["id"] if approval else None))
            continue
        for c in unanswered:
            result: dict[str, Any] = {"error": RESTART_NOTE}
            if c["function"]["name"] == "delegate_task":  # the children that finished are kept
                result = restored_delegation(c["function"]["arguments"], stored.tool_calls.get(c["id"]))
            content = json.dumps(result)
            await store.call(db.finish_tool_call, session_id, message["turn_id"], c["id"], "interrupted",
                             result, content, None)
            if c["id"] in stored.tool_calls:  # drawn from these rows: as they are now
                stored.tool_calls[c["id"]] = {**stored.tool_calls[c["id"]], "status": "interrupted", "result": result}
            history.append({"role": "tool", "tool_call_id": c["id"], "content": content})
    resumable = {p.turn_id for p in loaded.pending}
    for turn_id in running:
        if turn_id not in resumable:
            await store.call(db.end_turn, turn_id, "interrupted", APP_STOPPED)
    # A turn cut by the app's end stays marked on every later read (until it is continued: then
    # it ends as it ends), not only the first.
    loaded.interrupted_turns = [t["id"] for t in stored.turns
                                if t["id"] in running or (t["status"] == "interrupted" and t.get("error") == APP_STOPPED)]
    return loaded


def restored_delegation(arguments: str, row: dict[str, Any] | None) -> dict[str, Any]:
    """A ``delegate_task`` call the app stopped during: the children that had finished (kept on
    the call as they finished), and the others marked interrupted."""
    from hermes_tui.agent.subagents import DelegateArgs, child_names

    finished = (row or {}).get("result") or {}
    done = list(finished.get("partial", [])) if isinstance(finished, dict) else []
    try:
        tasks = DelegateArgs.model_validate_json(arguments or "{}").all_tasks()
    except ValueError:
        return {"error": RESTART_NOTE, "results": done}
    seen = {item.get("name") for item in done}
    rest = [{"name": name, "goal": task.goal[:500], "status": "interrupted",
             "summary": "[interrupted: the app stopped before this sub-agent finished]"}
            for name, task in zip(child_names(tasks), tasks) if name not in seen]
    return {"results": done + rest, "status": "interrupted", "note": RESTART_NOTE}
