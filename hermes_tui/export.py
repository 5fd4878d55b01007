"""``hermes-tui export SESSION --format sharegpt``: a stored session as a training trajectory.

ShareGPT, as Hermes Agent writes its trajectories: ``{"conversations": [{"from": "system" |
"human" | "gpt" | "tool", "value": ...}], ...}``. A reply's tool calls are written into its
text as ``<tool_call>`` blocks and each result as a ``<tool_response>`` turn from ``tool``.
"""

from __future__ import annotations

import json
from typing import Any

from hermes_tui.agent.hermes_format import format_call, system_prompt_tools, tool_response
from hermes_tui.agent.loop import SYSTEM_PROMPT
from hermes_tui.agent.tools import ToolCall, declarations
from hermes_tui.store import StoredSession

FORMATS = ("sharegpt",)


def to_sharegpt(stored: StoredSession, system_prompt: str | None = None) -> dict[str, Any]:
    """The session as one ShareGPT record."""
    tools = declarations()
    conversations: list[dict[str, str]] = [
        {"from": "system", "value": (system_prompt or SYSTEM_PROMPT) + "\n\n" + system_prompt_tools(tools)}]
    names: dict[str, str] = {}
    for message in stored.messages:
        role = message["role"]
        if role == "user":
            conversations.append({"from": "human", "value": message["content"] or ""})
        elif role == "assistant":
            parts = [message["content"] or ""]
            for call in message["tool_calls"] or ():
                names[call["id"]] = call["function"]["name"]
                parts.append(format_call(ToolCall(call["id"], call["function"]["name"], call["function"]["arguments"])))
            value = "\n".join(p for p in parts if p)
            if value:
                conversations.append({"from": "gpt", "value": value})
        elif role == "tool":
            conversations.append({"from": "tool", "value": tool_response(names.get(message["tool_call_id"], "tool"),
                                                                        message["content"] or "")})
    info = stored.info
    return {
        "id": info.id,
        "conversations": conversations,
        "tools": json.dumps(tools, ensure_ascii=False),
        "model": info.model,
        "provider": info.provider,
        "created_at": info.created_at,
        "completed": not info.interrupted,
        "source": "hermes-tui",
    }
