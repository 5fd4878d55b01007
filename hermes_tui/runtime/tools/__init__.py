"""The seven tools a script may call, and the one function that runs any of them.

Each tool is an async handler taking a :class:`ToolContext` and a validated pydantic args
model, returning a dict. A failure is a dict with ``error``: :func:`call_tool` turns invalid
arguments and unexpected exceptions into one, so nothing a script sends can crash the host.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

if TYPE_CHECKING:
    from hermes_tui.config import Config
    from hermes_tui.runtime.approvals import ApprovalGate

TOOL_NAMES: tuple[str, ...] = (
    "web_search", "web_extract", "read_file", "write_file", "search_files", "patch", "terminal",
)


@dataclass(slots=True)
class ToolContext:
    """Where and for whom a tool runs."""

    cwd: str
    """Relative paths and terminal() commands start here (the kernel's working dir)."""
    env: dict[str, str]
    """The kernel's frozen environment (terminal() commands get it too)."""
    config: Config
    gate: ApprovalGate
    session: str
    cache_dir: Path
    kernel_id: str | None = None
    exec_id: str | None = None
    origin: str = "user"
    """Who started the turn: user, injected or automation (shown in approval requests)."""

    def resolve(self, path: str) -> Path:
        """``path`` made absolute against the working dir (``~`` expanded)."""
        candidate = Path(path).expanduser()
        return candidate if candidate.is_absolute() else Path(self.cwd) / candidate


Handler = Callable[[ToolContext, Any], Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool's name, argument model and handler.

    ``blocking``, when set, does the same work synchronously: the socket transport calls it on
    its own thread (never the event loop's), which saves two thread hand-offs per call.
    """

    name: str
    args: type[BaseModel]
    handler: Handler
    blocking: Callable[[ToolContext, Any], dict[str, Any]] | None = None
    writes: Callable[[ToolContext, Any], list[str]] | None = None
    """The files a call would write: one that holds keys, rules or start-up code must be
    approved first (like a terminal command writing it)."""


def registry() -> dict[str, Tool]:
    """Every tool by name (imported lazily: the web tools pull in httpx)."""
    from hermes_tui.runtime.tools import files, patching, search, terminal, web

    tools = [*files.TOOLS, *search.TOOLS, *patching.TOOLS, *terminal.TOOLS, *web.TOOLS]
    return {tool.name: tool for tool in tools}


_REGISTRY: dict[str, Tool] | None = None


def get_tool(name: str) -> Tool | None:
    """The tool called ``name``, if there is one."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = registry()
    return _REGISTRY.get(name)


def _prepare(name: str, args: dict[str, Any]) -> tuple[Tool, Any] | dict[str, Any]:
    tool = get_tool(name)
    if tool is None:
        return {"error": f"unknown tool {name!r}; the tools are: {', '.join(TOOL_NAMES)}"}
    try:
        return tool, tool.args.model_validate(args)
    except ValidationError as exc:
        return {"error": f"{name}(): invalid arguments: {describe_validation(exc)}"}


def _failed(name: str, exc: Exception) -> dict[str, Any]:
    # A bug or an OS error in a tool is the script's error dict, never the host's crash.
    return {"error": f"{name} failed: {type(exc).__name__}: {exc}"}


async def call_tool(name: str, args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """Validate ``args`` and run tool ``name`` on the event loop; always returns a dict."""
    prepared = _prepare(name, args)
    if isinstance(prepared, dict):
        return prepared
    tool, parsed = prepared
    try:
        reasons = _guarded(tool, ctx, parsed)
        if reasons:
            what = f"{name} {' '.join(reasons)}"
            refusal = await ctx.gate.check_terminal(
                what, cwd=ctx.cwd, session=ctx.session, kernel=ctx.kernel_id, exec_id=ctx.exec_id,
                origin=ctx.origin, extra_reasons=[r for r in reasons.values()],  # type: ignore[arg-type]
            )
            if refusal is not None:
                return {"error": f"BLOCKED: {refusal}"}
        return await tool.handler(ctx, parsed)
    except Exception as exc:
        return _failed(name, exc)


def _guarded(tool: Tool, ctx: ToolContext, parsed: Any) -> dict[str, str]:
    """Protected files this call would write, with why each is protected."""
    if tool.writes is None:
        return {}
    from hermes_tui.runtime.danger import protected_write

    hermes_home = str(ctx.gate.home) if ctx.gate is not None else None
    found = {}
    for path in tool.writes(ctx, parsed):
        reason = protected_write(path, hermes_home=hermes_home)
        if reason:
            found[path] = reason
    return found


def call_tool_blocking(name: str, args: dict[str, Any], ctx: ToolContext) -> dict[str, Any] | None:
    """Like :func:`call_tool`, in the calling thread; None if the tool needs the event loop."""
    tool = get_tool(name)
    if tool is None or tool.blocking is None:
        return None
    prepared = _prepare(name, args)
    if isinstance(prepared, dict):
        return prepared
    try:
        if _guarded(tool, ctx, prepared[1]):
            return None  # needs an approval: that is the event loop's work
        return tool.blocking(ctx, prepared[1])
    except Exception as exc:
        return _failed(name, exc)


def describe_validation(exc: ValidationError) -> str:
    """'path: Field required; limit: Input should be greater than 0' in one line."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "not an argument of this tool"
        parts.append(f"{where}: {message}")
    return "; ".join(parts)


class Args(BaseModel):
    """Base of tool argument models: unknown arguments are an error."""

    model_config = {"extra": "forbid"}
