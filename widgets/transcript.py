"""Drawing a stored session back into the conversation pane (on resume or switch)."""

from __future__ import annotations

import json
import time
from typing import Any, cast

from hermes_tui.agent.restore import LoadedSession
from hermes_tui.runtime.models import ExecResult
from hermes_tui.units import plural
from hermes_tui.widgets.conversation import ConversationPane, MessageBlock, ReplyBlock, RunBlock, note, tool_block

SHOWN_MESSAGES = 80
"""The newest messages drawn (older ones stay stored; the pane keeps at most 200 blocks)."""


def draw_session(pane: ConversationPane, loaded: LoadedSession) -> None:
    """Messages, replies and tool calls as they were, interrupted turns marked."""
    stored = loaded.stored
    pending = {p.call.id for p in loaded.pending}
    interrupted = set(loaded.interrupted_turns)
    messages = stored.messages[-SHOWN_MESSAGES:]
    when = stored.info.updated_at
    older = len(stored.messages) - len(messages)
    blocks: list[Any] = []
    blocks.append(note(f"Session {stored.info.id} — {plural(len(stored.messages), 'message')} stored "
                  f"(continued; last active {_clock(when)})."
                  + (f" The {older} oldest are not drawn here; `hermes-tui export` has them all." if older else "")))
    for index, message in enumerate(messages):
        turn = message["turn_id"]
        if message["role"] == "user":
            blocks.append(MessageBlock(message["content"] or "", message["origin"] or "user"))
        elif message["role"] == "assistant":
            if message["content"]:
                reply = ReplyBlock(message["content"])
                if message["status"] in ("interrupted", "error"):
                    reply.add_class(message["status"])
                blocks.append(reply)
            for call in message["tool_calls"] or ():
                blocks.append(_call_block(call, stored.tool_calls.get(call["id"]), call["id"] in pending))
        following = messages[index + 1]["turn_id"] if index + 1 < len(messages) else None
        if turn in interrupted and following != turn:
            blocks.append(note("⚠ This turn was interrupted: the app stopped while it ran."
                               + (" Its pending approval is asked again now." if any(
                                   p.turn_id == turn for p in loaded.pending) else ""), "warning"))
    pane.extend(blocks)


def _call_block(call: dict[str, Any], row: dict[str, Any] | None, pending: bool) -> RunBlock:
    try:
        arguments = json.loads(call["function"]["arguments"] or "{}")
    except json.JSONDecodeError:
        arguments = {"arguments": call["function"]["arguments"]}
    if not isinstance(arguments, dict):
        arguments = {"arguments": arguments}
    block = tool_block(call["function"]["name"], arguments)
    result = row.get("result") if row else None
    if pending:
        block.set_summary("running", "waiting for approval (asked again now)")
    elif isinstance(result, dict) and "kernel" in result and "exec_id" in result:
        try:
            block.set_result(ExecResult.model_validate(result))
            return block
        except ValueError:
            pass
    if isinstance(result, dict) and not pending:
        block.set_tool_result(result, interrupted=bool(row) and cast("dict[str, Any]", row)["status"] in ("interrupted", "blocked"))
    return block


def _clock(when: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(when))
