"""The tools declared to the model, their argument models, and validation of a call.

``execute_code`` is the heart: the model writes a script that calls the seven tools of
``hermes_tools``. The same file, process and web tools are also offered directly. Arguments
arrive as JSON text and are validated with pydantic before anything runs; a bad call becomes
an error the model can read and fix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from hermes_tui.runtime.tools import Args, TOOL_NAMES, describe_validation, get_tool

EXECUTE_CODE_DESCRIPTION = (
    "Run a Python script in this session's persistent kernel: variables, imports and loaded data stay "
    "between calls. Inside it, `from hermes_tools import web_search, web_extract, read_file, write_file, "
    "search_files, patch, terminal` (each returns a dict; a failure has 'error'). Print what you need: "
    "stdout is returned (first 20,000 and last 30,000 bytes when longer). Prefer one script that does "
    "many steps over many single tool calls. reset=true starts a fresh kernel."
)

DESCRIPTIONS = {
    "terminal": "Run one shell command (foreground, in the session's working directory); the user may "
                "have to approve it. Returns output and exit_code.",
    "read_file": "Read a text file with line numbers (offset is the first line, 1-based; limit lines).",
    "write_file": "Write a whole text file (created or replaced).",
    "search_files": "Search file contents for a regex (target='content') or find files by glob (target='files').",
    "patch": "Edit a file: replace old_string with new_string exactly, or apply a unified diff in 'patch'.",
    "web_search": "Search the web; returns titles, URLs and snippets.",
    "web_extract": "Fetch web pages and return their text as Markdown.",
}


class ExecuteCodeArgs(Args):
    """Arguments of ``execute_code``."""

    code: str = Field(min_length=1, description="the Python script")
    reset: bool = Field(False, description="discard the kernel and start a fresh one first")


MODEL_TOOLS: tuple[str, ...] = ("execute_code", *TOOL_NAMES)
"""Every tool the model may call."""

WEB_OFF_NOTE = " Here {names} {verb} off (no backend in config.yaml `web:`): calling {them} only returns an error."


def web_tools_off(web: Any) -> tuple[str, ...]:
    """The web tools with no backend configured (``web:`` in config.yaml): never declared to the
    model, and named as off in ``execute_code``'s description."""
    off = []
    if web.search_backend == "none" or not web.searxng_url:
        off.append("web_search")
    if web.extract_backend == "none":
        off.append("web_extract")
    return tuple(off)


def args_model(name: str) -> type[BaseModel] | None:
    """The pydantic model of tool ``name``'s arguments."""
    if name == "execute_code":
        return ExecuteCodeArgs
    if name == "delegate_task":
        from hermes_tui.agent.subagents import DelegateArgs

        return DelegateArgs
    tool = get_tool(name)
    return tool.args if tool is not None else None


def declarations(names: tuple[str, ...] = MODEL_TOOLS, off: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The tools in the OpenAI ``tools`` shape (``{"type": "function", "function": ...}``);
    ``off``: tools ``hermes_tools`` offers that do nothing here (said in ``execute_code``'s
    description)."""
    declared = []
    for name in names:
        model = args_model(name)
        assert model is not None, name
        schema = _inline(model.model_json_schema())
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        description = _description(name)
        if name == "execute_code" and off:
            description += WEB_OFF_NOTE.format(names=" and ".join(off), verb="are" if len(off) > 1 else "is",
                                               them="them" if len(off) > 1 else "it")
        declared.append({"type": "function", "function": {
            "name": name, "description": description, "parameters": schema}})
    return declared


def _description(name: str) -> str:
    if name == "execute_code":
        return EXECUTE_CODE_DESCRIPTION
    if name == "delegate_task":
        from hermes_tui.agent.subagents import DELEGATE_DESCRIPTION

        return DELEGATE_DESCRIPTION
    return DESCRIPTIONS[name]


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with its ``$defs`` references written in place (not every server follows
    ``$ref``)."""
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node and node["$ref"].startswith("#/$defs/"):
                target = dict(defs[node["$ref"].split("/")[-1]])
                target.pop("title", None)
                return walk(target)
            return {key: walk(value) for key, value in node.items() if key != "title" or not isinstance(value, str)}
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    return walk(schema)


@dataclass
class ToolCall:
    """One call the model asked for: its id, tool name and arguments as JSON text."""

    id: str
    name: str
    arguments: str

    def as_openai(self) -> dict[str, Any]:
        """The call in an assistant message of the OpenAI chat shape."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


class InvalidCall(Exception):
    """A tool call that cannot run; ``str()`` tells the model what was wrong and what is allowed."""


def validate_call(call: ToolCall, allowed: tuple[str, ...] = MODEL_TOOLS) -> BaseModel:
    """The call's arguments as their pydantic model, or :class:`InvalidCall`."""
    if not call.name:  # a <tool_call> block that could not be read: arguments say why
        raise InvalidCall(f"malformed tool call, {call.arguments}. Write <tool_call>{{\"name\": ..., "
                          "\"arguments\": {...}}</tool_call> with valid JSON")
    if call.name not in allowed:
        raise InvalidCall(f"unknown tool {call.name!r}; the tools are: {', '.join(allowed)}")
    model = args_model(call.name)
    assert model is not None
    text = call.arguments.strip() or "{}"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidCall(f"{call.name}: the arguments are not valid JSON ({exc.msg} at position {exc.pos}); "
                          "send a JSON object") from None
    if not isinstance(data, dict):
        raise InvalidCall(f"{call.name}: the arguments must be a JSON object, not {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidCall(f"{call.name}: invalid arguments: {describe_validation(exc)}") from None
