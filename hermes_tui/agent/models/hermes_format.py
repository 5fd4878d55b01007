"""Hermes-format tool calls: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` in text.

Models served raw (no tool parser in the server) write their calls into the reply. The
:class:`HermesStreamParser` takes the reply chunk by chunk — a tag may be split anywhere —
and separates the text to show from the calls; the results go back as ``<tool_response>``.
"""

from __future__ import annotations

import ast
import json
import secrets
from typing import Any

from hermes_tui.agent.tools import ToolCall

OPEN, CLOSE = "<tool_call>", "</tool_call>"


def system_prompt_tools(declared: list[dict[str, Any]]) -> str:
    """The part of the system prompt that declares the tools to a raw model."""
    functions = json.dumps([d["function"] for d in declared], ensure_ascii=False)
    return (
        "You are a function calling AI model. You are provided with function signatures within "
        f"<tools></tools> XML tags.\n<tools>\n{functions}\n</tools>\n"
        "For each function call, return a JSON object with the function name and arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
        "<args-json-object>}\n</tool_call>\nResults come back inside <tool_response></tool_response> tags."
    )


def tool_response(name: str, content: str) -> str:
    """A tool's result as the model reads it."""
    return f"<tool_response>\n{json.dumps({'name': name, 'content': content}, ensure_ascii=False)}\n</tool_response>"


def format_call(call: ToolCall) -> str:
    """A call written back as the model wrote it (for the history and exports)."""
    try:
        arguments: Any = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        arguments = call.arguments
    return f"{OPEN}\n{json.dumps({'name': call.name, 'arguments': arguments}, ensure_ascii=False)}\n{CLOSE}"


def parse_block(body: str) -> ToolCall:
    """One ``<tool_call>`` body as a call. Unreadable bodies become a call named ``""`` whose
    arguments hold the problem: validation then sends the model an error it can fix."""
    text = body.strip()
    data: Any = None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        try:  # some Hermes fine-tunes write Python dict literals ({'name': ...})
            data = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return ToolCall(new_call_id(), "", f"not JSON: {exc.msg} at position {exc.pos}: {text[:200]}")
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return ToolCall(new_call_id(), "", f"a tool call must be an object with \"name\" and \"arguments\": {text[:200]}")
    arguments = data.get("arguments", data.get("parameters", {}))
    if isinstance(arguments, str):
        encoded = arguments  # already JSON text (validated later)
    else:
        encoded = json.dumps(arguments, ensure_ascii=False)
    return ToolCall(new_call_id(), data["name"], encoded)


def new_call_id() -> str:
    """An id for a call the model did not name."""
    return "call_" + secrets.token_hex(6)


class HermesStreamParser:
    """Splits a streamed reply into visible text and ``<tool_call>`` blocks.

    ``feed(chunk)`` returns the text that is certainly not part of a tag (a possible start of
    ``<tool_call>`` at the end is held back until the next chunk decides it); completed calls
    collect in :attr:`calls`. ``finish()`` flushes what is held and reports an unclosed block.
    """

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []
        self._pending = ""
        self._inside = False
        self._body: list[str] = []

    def feed(self, chunk: str) -> str:
        """Take the next piece of the reply; return the text to show now."""
        self._pending += chunk
        shown: list[str] = []
        while self._pending:
            if self._inside:
                end = self._pending.find(CLOSE)
                if end < 0:
                    keep = _partial_suffix(self._pending, CLOSE)
                    self._body.append(self._pending[: len(self._pending) - keep])
                    self._pending = self._pending[len(self._pending) - keep:]
                    break
                self._body.append(self._pending[:end])
                self.calls.append(parse_block("".join(self._body)))
                self._body, self._inside = [], False
                self._pending = self._pending[end + len(CLOSE):]
            else:
                start = self._pending.find(OPEN)
                if start < 0:
                    keep = _partial_suffix(self._pending, OPEN)
                    shown.append(self._pending[: len(self._pending) - keep])
                    self._pending = self._pending[len(self._pending) - keep:]
                    break
                shown.append(self._pending[:start])
                self._inside = True
                self._pending = self._pending[start + len(OPEN):]
        return "".join(shown)

    def finish(self) -> str:
        """The end of the reply: the held-back text, and an unclosed block as a bad call."""
        rest, self._pending = self._pending, ""
        if self._inside:
            body = "".join(self._body) + rest
            self._inside, self._body = False, []
            call = parse_block(body)
            if call.name:  # complete JSON, only the closing tag missing: accept it
                self.calls.append(call)
            else:
                self.calls.append(ToolCall(call.id, "", f"unclosed <tool_call> (no </tool_call>): {body.strip()[:200]}"))
            return ""
        return rest


def _partial_suffix(text: str, tag: str) -> int:
    """How many characters at the end of ``text`` could begin ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0
