"""``hermes-tui export SESSION --format sharegpt``: a stored session as a training trajectory.

The record has the shape Hermes Agent (NousResearch/hermes-agent) writes to
``trajectory_samples.jsonl`` and its ``trajectory_compressor.py`` / ``batch_runner.py`` read.
Checked against hermes-agent 0.21.x sources (read through the public code index):

- ``agent/agent_runtime_helpers.py`` ``convert_to_trajectory_format`` (commit 0009407f60b9) —
  the turns;
- ``agent/trajectory.py`` ``save_trajectory`` (commit 004fb81eac94) — the record's keys;
- ``agent/system_prompt.py`` ``format_tools_for_system_message`` (commit 001e6234e90c) — the
  tool list inside ``<tools>``;
- ``trajectory_compressor.py`` (commit 06063907e5e2) — what the reader relies on: one record per
  JSONL line, ``conversations`` of ``{"from", "value"}``, a ``tool`` turn right after the ``gpt``
  turn it answers.

The shape:

- record: ``{"conversations": [...], "timestamp": <ISO local time>, "model": ..., "completed": ...}``;
  we add ``id``, ``provider``, ``created_at``, ``source``, ``tools`` (OpenAI shape) and the usage
  totals ``tokens_in``, ``tokens_out``, ``cost_usd``.
- ``system``: a function-calling preamble (our wording) with the tools as a JSON list of
  ``{"name", "description", "parameters", "required": null}`` between ``<tools>\\n`` and
  ``\\n</tools>``; our own system prompt follows it after a blank line.
- ``human``: the user's text.
- ``gpt``: ``<think>\\n{reasoning}\\n</think>\\n`` when the provider returned reasoning, else
  ``<think>\\n</think>\\n`` (not added when the text already holds ``<think>``), then the text,
  then one ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`` per call, each on
  its own line; the whole value stripped of trailing (no-call reply: surrounding) whitespace.
  Arguments that are not JSON are written as ``{}``, as Hermes does.
- ``tool``: every result of one assistant message in ONE turn: ``<tool_response>\\n{json}\\n
  </tool_response>`` blocks joined by ``\\n``, the JSON being ``{"tool_call_id", "name",
  "content"}`` where content is parsed when it is a JSON object or array (Hermes parses only
  text starting with ``{`` or ``[``), else kept as the string.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from hermes_tui.agent.loop import SYSTEM_PROMPT
from hermes_tui.agent.tools import declarations
from hermes_tui.storage.sessions import StoredSession

FORMATS = ("sharegpt",)

EMPTY_THINK = "<think>\n</think>\n"
"""How Hermes opens a ``gpt`` turn whose model gave no reasoning."""

FUNCTION_CALLING_PREAMBLE = (
    "You are a model that calls functions. The functions you may call are described inside <tools> </tools> "
    "XML tags below. Call one or more of them when they help with the user's request; when none is relevant, "
    "answer in plain conversation. Do not guess argument values. The results of your calls come back inside "
    "<tool_response> </tool_response> XML tags. The tools:\n<tools>\n{tools}\n</tools>\n"
    "Write each call as a JSON object with the function's \"name\" and its \"arguments\" (an object), inside "
    "<tool_call> </tool_call> XML tags, for example:\n<tool_call>\n{{\"name\": <function-name>, \"arguments\": "
    "<args-object>}}\n</tool_call>"
)
"""The function-calling system turn of an exported trajectory (our words, in the layout Hermes
Agent's trajectories use: the tool list between ``<tools>`` tags); ``{tools}`` is the list."""


def system_turn(tools: list[dict[str, Any]], system_prompt: str) -> str:
    """The ``system`` value: the function-calling preamble around the tools, then our system prompt."""
    listed = [{"name": t["function"]["name"], "description": t["function"].get("description", ""),
               "parameters": t["function"].get("parameters", {}), "required": None} for t in tools]
    preamble = FUNCTION_CALLING_PREAMBLE.format(tools=json.dumps(listed, ensure_ascii=False))
    return preamble + "\n\n" + system_prompt if system_prompt else preamble


def think_block(reasoning: str | None) -> str:
    """The reasoning the provider returned, in Hermes's ``<think>`` wrapping ('' when none)."""
    return f"<think>\n{reasoning}\n</think>\n" if reasoning and reasoning.strip() else ""


def scratchpad_to_think(text: str) -> str:
    """``<REASONING_SCRATCHPAD>`` tags (reasoning written into the reply) as ``<think>`` tags."""
    return text.replace("<REASONING_SCRATCHPAD>", "<think>").replace("</REASONING_SCRATCHPAD>", "</think>")


def tool_call_block(call: dict[str, Any]) -> str:
    """One call of an assistant message (OpenAI shape) as a Hermes ``<tool_call>`` block."""
    function = call.get("function") or {}
    arguments: Any = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            arguments = {}
    elif arguments is None:
        arguments = {}
    body = json.dumps({"name": function.get("name", ""), "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>\n"


def gpt_turn(message: dict[str, Any]) -> str | None:
    """An assistant message as a ``gpt`` value (None for one with nothing in it)."""
    content = message.get("content") or ""
    reasoning = message.get("reasoning")
    calls = [c for c in message.get("tool_calls") or () if isinstance(c, dict)]
    if not calls and not content.strip() and not (reasoning and reasoning.strip()):
        return None  # a reply that said nothing (cut before its first word)
    value = think_block(reasoning)
    if calls:
        if content.strip():
            value += scratchpad_to_think(content) + "\n"
        value += "".join(tool_call_block(call) for call in calls)
    else:
        value += scratchpad_to_think(content)
    if "<think>" not in value:
        value = EMPTY_THINK + value
    return value.rstrip() if calls else value.strip()


def tool_content(text: str | None) -> Any:
    """A tool result as Hermes puts it in a response: a JSON object or array parsed, else the text."""
    text = text or ""
    if text.strip().startswith(("{", "[")):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            pass
    return text


def tool_response_block(message: dict[str, Any], name: str) -> str:
    """One ``tool`` message as a ``<tool_response>`` block."""
    body = {"tool_call_id": message.get("tool_call_id") or "", "name": name,
            "content": tool_content(message.get("content"))}
    return f"<tool_response>\n{json.dumps(body, ensure_ascii=False)}\n</tool_response>"


def to_sharegpt(stored: StoredSession, system_prompt: str | None = None,
                tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The session as one trajectory record, in Hermes Agent's shape (see the module doc).

    ``tools`` (OpenAI ``tools`` shape) defaults to the tools hermes-tui gives the model.
    """
    tools = declarations() if tools is None else tools
    conversations: list[dict[str, str]] = [
        {"from": "system", "value": system_turn(tools, SYSTEM_PROMPT if system_prompt is None else system_prompt)}]
    names: dict[str, str] = {}  # call id -> tool name
    order: list[str] = []  # the names of the last assistant message's calls, in order
    responses: list[str] = []  # the results of one assistant message, gathered into one turn

    def flush() -> None:
        if responses:
            conversations.append({"from": "tool", "value": "\n".join(responses)})
            responses.clear()

    for message in stored.messages:
        role = message["role"]
        if role == "tool":
            call_id = message.get("tool_call_id") or ""
            index = len(responses)
            name = names.get(call_id) or (order[index] if index < len(order) else "unknown")
            responses.append(tool_response_block(message, name))
            continue
        flush()
        if role == "user":
            conversations.append({"from": "human", "value": message["content"] or ""})
        elif role == "assistant":
            calls = [c for c in message.get("tool_calls") or () if isinstance(c, dict)]
            order = [(c.get("function") or {}).get("name", "unknown") for c in calls]
            for call in calls:
                if call.get("id"):
                    names[call["id"]] = (call.get("function") or {}).get("name", "unknown")
            value = gpt_turn(message)
            if value is not None:
                conversations.append({"from": "gpt", "value": value})
    flush()
    info = stored.info
    last_turn = stored.turns[-1]["status"] if stored.turns else None
    return {
        "conversations": conversations,
        "timestamp": datetime.fromtimestamp(info.updated_at).isoformat(),
        "model": info.model,
        "completed": not info.interrupted and last_turn in ("done", None),
        "id": info.id,
        "provider": info.provider,
        "created_at": info.created_at,
        "source": "hermes-tui",
        "tools": json.dumps(tools, ensure_ascii=False),
        "tokens_in": info.tokens_in,
        "tokens_out": info.tokens_out,
        "cost_usd": info.cost_usd,
    }
