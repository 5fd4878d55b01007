"""Drawing a stored session back into the conversation pane (on resume or switch).

The newest page is drawn at once; older messages are drawn a page at a time when the
transcript is scrolled to its top (:meth:`ConversationPane.extend`'s ``older``), until the pane
holds MAX_BLOCKS blocks: a session of thousands of messages opens as fast as a short one, and
memory stays bounded.
"""

from __future__ import annotations

import json
import time
from typing import Any, cast

from textual.widget import Widget
from textual.widgets import Static

from hermes_tui.agent.events import SHELL_PREFIX
from hermes_tui.agent.restore import LoadedSession
from hermes_tui.runtime.models import ExecResult
from hermes_tui.base.units import plural
from hermes_tui.tui.widgets.conversation.blocks import MessageBlock, RunBlock, note, tool_block, tool_output_note
from hermes_tui.tui.widgets.conversation.pane import MAX_BLOCKS, ConversationPane
from hermes_tui.tui.widgets.reply import ReplyBlock
from hermes_tui.tui.widgets.safe import plain

FIRST_PAGE_BLOCKS = 10
"""Blocks drawn at once: a screenful or more (each block is two rows at least)."""
PAGE_BLOCKS = 24
"""Blocks drawn each time the transcript is scrolled to its top."""


def draw_session(pane: ConversationPane, loaded: LoadedSession) -> None:
    """Messages, replies and tool calls as they were, interrupted turns marked: the newest
    page now, older ones as the user scrolls up."""
    pages = SessionPages(loaded)
    blocks = pages.page(FIRST_PAGE_BLOCKS, MAX_BLOCKS - 1)
    pane.extend(blocks, older=pages.older if pages.end else None, head=pages.head)


class SessionPages:
    """The blocks of a stored session's messages, newest first, a page at a time."""

    def __init__(self, loaded: LoadedSession) -> None:
        self.loaded = loaded
        self.messages = loaded.stored.messages
        self.pending = {p.call.id for p in loaded.pending}
        self.interrupted = set(loaded.interrupted_turns)
        self.end = len(self.messages)
        """Messages before this index are not drawn yet."""
        self.head = Static("", classes="note info")
        """The line above the drawn messages: the session, and how many are not drawn."""
        self.update_head()

    def older(self, room: int) -> list[Widget]:
        """The next page (for the pane, when its transcript is scrolled to the top)."""
        return self.page(PAGE_BLOCKS, room)

    def page(self, wanted: int, room: int) -> list[Widget]:
        """The blocks of the newest messages not drawn yet: ``wanted`` or a few more (a
        message's blocks stay together), never more than ``room``; none when all are drawn."""
        blocks: list[Widget] = []
        full = False
        while self.end > 0 and len(blocks) < wanted:
            message_blocks = self._blocks(self.end - 1)
            if len(blocks) + len(message_blocks) > room:
                full = True  # the pane holds MAX_BLOCKS: the rest stay stored
                break
            blocks[:0] = message_blocks
            self.end -= 1
        self.update_head(full)
        return blocks

    def update_head(self, full: bool = False) -> None:
        """Say how many messages are stored and how many are not drawn (yet, or at all)."""
        stored = self.loaded.stored
        text = (f"Session {stored.info.id} — {plural(len(self.messages), 'message')} stored "
                f"(continued; last active {_clock(stored.info.updated_at)}).")
        if self.end and full:
            text += f" The {self.end} oldest are not drawn here; `hermes-tui export` has them all."
        elif self.end:
            text += f" {plural(self.end, 'older message')}: scroll up to draw them."
        self.head.update(plain(text))

    def _blocks(self, index: int) -> list[Widget]:
        """The blocks of message ``index``, and the note after it if its turn was cut there."""
        messages = self.messages
        message = messages[index]
        turn = message["turn_id"]
        blocks: list[Widget] = []
        if message["role"] == "user":
            if not self._typed(index):  # typed Python and !cmd show as their run, as live
                blocks.append(MessageBlock(message["content"] or "", message["origin"] or "user"))
        elif message["role"] == "assistant":
            if message["content"]:
                reply = ReplyBlock(message["content"])
                if message["status"] in ("interrupted", "error"):
                    reply.add_class(message["status"])
                blocks.append(reply)
            for call in message["tool_calls"] or ():
                blocks.extend(_call_blocks(call, self.loaded.stored.tool_calls.get(call["id"]), call["id"] in self.pending))
        following = messages[index + 1]["turn_id"] if index + 1 < len(messages) else None
        if turn in self.interrupted and following != turn:
            blocks.append(note("⚠ This turn was interrupted: the app stopped while it ran."
                               + (" Its pending approval is asked again now." if any(
                                   p.turn_id == turn for p in self.loaded.pending) else ""), "warning"))
        return blocks


    def _typed(self, index: int) -> bool:
        """True when user message ``index`` was typed Python or a ``!cmd`` with no model: the
        turn stored it as an assistant message (no text) calling execute_code or terminal
        with exactly what was typed. Drawn live as that call's run alone, with no message."""
        message = self.messages[index]
        if (message["origin"] or "user") != "user" or index + 1 >= len(self.messages):
            return False
        answer = self.messages[index + 1]
        calls = answer["tool_calls"] or []
        if answer["turn_id"] != message["turn_id"] or answer["role"] != "assistant" or answer["content"] \
                or len(calls) != 1:
            return False
        try:
            name = calls[0]["function"]["name"]
            arguments = json.loads(calls[0]["function"]["arguments"] or "{}")
        except (KeyError, TypeError, json.JSONDecodeError):
            return False
        if not isinstance(arguments, dict):
            return False
        text = message["content"] or ""
        if name == "terminal":
            return text == SHELL_PREFIX + str(arguments.get("command"))
        return name == "execute_code" and text == arguments.get("code")


def _call_blocks(call: dict[str, Any], row: dict[str, Any] | None, pending: bool) -> list[Widget]:
    """A call's block, and the note of its output for a direct tool call (as drawn live)."""
    block = _call_block(call, row, pending)
    result = row.get("result") if row else None
    if block.result is None and not pending and isinstance(result, dict):
        output = tool_output_note(result)
        if output is not None:
            return [block, output]
    return [block]


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

