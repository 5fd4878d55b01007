"""What the model is sent: the conversation kept within a budget, rendered for the provider.

The whole conversation stays stored; :class:`History` holds the newest whole turns within
``agent.max_context_chars`` (memory stays bounded however long a session runs) and renders
them either as the API's structured messages or, for raw models (``tool_format: hermes``),
with tools in the system prompt, calls as ``<tool_call>`` text and results as
``<tool_response>`` user messages.
"""

from __future__ import annotations

import json
from typing import Any

from hermes_tui.agent.models.hermes_format import format_call, system_prompt_tools, tool_response
from hermes_tui.agent.tools import ToolCall
from hermes_tui.agent.usage import CHARS_PER_TOKEN
from hermes_tui.base.units import plural

Message = dict[str, Any]
_SENT_KEYS = ("role", "content", "tool_calls", "tool_call_id")


class History:
    """The messages the model sees, oldest first.

    Args:
        max_chars: content (and serialised tool calls) kept at most; older whole turns go.
        max_tokens: tokens kept at most (``agent.max_context_tokens``), counted at the rate the
            provider counted the last request (1 token per 4 characters until it has answered).
    """

    def __init__(self, max_chars: int = 400_000, max_tokens: int | None = None) -> None:
        self.messages: list[Message] = []
        self.max_chars = max_chars
        self.max_tokens = max_tokens
        self.tokens_per_char = 1 / CHARS_PER_TOKEN
        """How many tokens a character of this conversation is, as the provider last counted."""
        self.omitted = 0
        """Older messages left out to keep within the budget."""

    def calibrate(self, tokens: int, chars: int) -> None:
        """The provider counted ``tokens`` for a request of ``chars`` characters."""
        if tokens > 0 and chars > 0:
            self.tokens_per_char = tokens / chars

    def tokens_for(self, chars: int) -> int:
        """Tokens ``chars`` characters of this conversation come to (rounded up)."""
        return int(-(-chars * self.tokens_per_char // 1))

    def __len__(self) -> int:
        return len(self.messages)

    def replace(self, messages: list[Message]) -> None:
        """Start from ``messages`` (a restored session), trimmed to the budget."""
        self.messages = messages
        self.trim()

    def append(self, message: Message) -> None:
        """Add one message (trim with :meth:`trim` when a turn starts)."""
        self.messages.append(message)

    def trim(self) -> None:
        """Drop the oldest whole turns while over the budget; the newest turn is always kept."""

        def size(message: Message) -> int:
            calls = message.get("tool_calls")
            return len(message.get("content") or "") + (len(json.dumps(calls)) if calls else 0)

        limit = self.max_chars
        if self.max_tokens is not None:
            limit = min(limit, int(self.max_tokens / self.tokens_per_char))
        total = sum(size(m) for m in self.messages)
        while total > limit:
            cut = next((i for i, m in enumerate(self.messages) if i > 0 and m["role"] == "user"), None)
            if cut is None:
                break
            total -= sum(size(m) for m in self.messages[:cut])
            self.omitted += cut
            del self.messages[:cut]

    def request(
        self, system: str, tools: list[dict[str, Any]], hermes: bool
    ) -> tuple[str, list[Message], list[dict[str, Any]]]:
        """System prompt, messages and tools as the provider is sent them."""
        if self.omitted:
            are = "is" if self.omitted == 1 else "are"
            setting = "agent.max_context_tokens" if self.max_tokens is not None else "agent.max_context_chars"
            system += (f"\n\n({plural(self.omitted, 'earlier message')} of this conversation {are} left out to "
                       f"stay within {setting}.)")
        if not hermes:
            messages = []
            for m in self.messages:
                item = {k: v for k, v in m.items() if k in _SENT_KEYS and v is not None}
                if item["role"] == "assistant" and "content" not in item:
                    item["content"] = None
                messages.append(item)
            return system, messages, tools
        # Raw models: tools in the system prompt, calls as <tool_call> text, results as
        # <tool_response> in a user message (every OpenAI-compatible server accepts that role).
        names: dict[str, str] = {}
        rendered: list[Message] = []
        for m in self.messages:
            if m["role"] == "assistant":
                parts = [m.get("content") or ""]
                for call in m.get("tool_calls") or ():
                    names[call["id"]] = call["function"]["name"]
                    parts.append(format_call(ToolCall(call["id"], call["function"]["name"],
                                                      call["function"]["arguments"])))
                rendered.append({"role": "assistant", "content": "\n".join(p for p in parts if p)})
            elif m["role"] == "tool":
                rendered.append({"role": "user",
                                 "content": tool_response(names.get(m["tool_call_id"], "tool"), m.get("content") or "")})
            else:
                rendered.append({"role": m["role"], "content": m.get("content") or ""})
        return system + "\n\n" + system_prompt_tools(tools), rendered, []
