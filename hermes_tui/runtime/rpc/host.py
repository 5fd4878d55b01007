"""What both transports of the tool channel share: authentication, the budget, dispatch.

A request is one JSON object ``{"id", "token", "tool", "args"}``; the reply is
``{"id", "result"}`` where ``result`` is always a dict (a failure has ``error``). Nothing a
request holds — no token, a wrong one, garbage, a tool outside the seven — raises in the host.
The bounds every transport keeps per kernel are here too, in one place.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hmac
import json
import logging
import os
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hermes_tui.runtime.tools import TOOL_NAMES, ToolContext, call_tool, call_tool_blocking, get_tool

log = logging.getLogger(__name__)

MAX_REQUEST_BYTES = 64 << 20
"""Largest request accepted (a write_file of a big file)."""
HELD_BYTES = MAX_REQUEST_BYTES + (8 << 20)
"""Request bytes one kernel's channel holds at once (lines being read and being answered):
one request of the largest size plus room for small ones. Past it, a connection is not read
until answers make room; a line is refused only if unfinished lines alone would pass it."""
MAX_IN_FLIGHT = 32
"""Requests of one kernel read but not answered yet; past it, the channel stops reading."""
MAX_CONNECTIONS = 16
"""Open connections per kernel: the module's one, one per forked child that calls, spares."""
OUTPUT_PAUSE_BYTES = 4 << 20
"""A connection whose unsent replies pass this is neither read nor answered until its script
reads them."""
QUEUED_REPLY_BYTES = 64 << 20
"""Unsent replies one kernel's channel holds at once: past it, only a connection with no reply
waiting is answered (one whose script reads its replies)."""
IDLE_GRACE = 1.0
"""Seconds a new connection has to send its first byte before the cap may close it as idle."""
CHANNEL_THREADS = 5
"""Threads per kernel serving the socket: one reading while up to four run file tools."""
INLINE_REQUEST_BYTES = 16 << 10
"""A request at most this big is answered by the thread leading, which keeps the lead (issue
38): handing the lead on costs every call a thread's wake-up and a fight for the GIL (150 µs of
a 470 µs call). A bigger one (a write) is answered after the lead is handed on."""
RECV_CHUNK = 1 << 18
"""Bytes read per recv, into one reused buffer (no allocation per read)."""
FILE_BATCH = 64
"""Request files taken per poll."""
FILE_SCAN = 4096
"""Directory entries looked at per poll: a folder stuffed with junk costs a bounded scan."""
FORBIDDEN = ("execute_code", "delegate_task")
TOO_LARGE = (f"request too large: over {MAX_REQUEST_BYTES} bytes; the tool channel takes requests of up to "
             f"{MAX_REQUEST_BYTES >> 20} MiB (write a big file in parts)")


@dataclass(slots=True)
class ExecBudget:
    """Tool calls of the execution now running on a kernel."""

    exec_id: str
    limit: int
    context: ToolContext
    calls: int = 0
    limit_hit: bool = False
    tasks: set[concurrent.futures.Future[Any] | asyncio.Future[Any]] = field(default_factory=set)
    """Calls of loop tools still running for this execution."""
    ended: bool = False

    def track(self, future: concurrent.futures.Future[Any] | asyncio.Future[Any]) -> None:
        """Remember a running call, to be cancelled when the execution ends (any thread)."""
        self.tasks.add(future)
        future.add_done_callback(self.tasks.discard)
        if self.ended:  # it ended while this call was being dispatched
            future.cancel()

    def cancel_calls(self) -> int:
        """End the execution's calls still running (their commands are ended): call when the
        execution ends, so that a thread it left behind cannot act in the next one. Returns how
        many were cancelled."""
        self.ended = True
        cancelled = 0
        for future in list(self.tasks):
            cancelled += bool(future.cancel())
        return cancelled


class ToolHost:
    """Checks and dispatches requests for one kernel (or standalone process).

    Args:
        token: the per-process secret; requests without it are refused.
        tools: the tools enabled for the session.
        current: returns the budget of the execution now running, or None between runs.
        counted: told of each call counted against the budget (tool name, budget); called on
            whichever thread checked the request.
    """

    def __init__(
        self, token: str, tools: tuple[str, ...], current: Callable[[], ExecBudget | None],
        counted: Callable[[str, ExecBudget], None] | None = None,
    ) -> None:
        self.token = token
        self.tools = tools
        self.current = current
        self.counted = counted
        self._token = token.encode()
        self._count_lock = threading.Lock()  # requests are checked on several threads at once

    def check(self, raw: bytes | bytearray | str) -> tuple[Any, str, dict[str, Any], ExecBudget] | dict[str, Any]:
        """Authenticate and count a request: (id, tool, args, budget), or the error reply."""
        try:
            # Our stub sends UTF-8: decoded here, json does not guess the encoding first.
            message = json.loads(raw if isinstance(raw, str) else raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError):
            return error_reply(None, "malformed request: not a JSON object")
        if not isinstance(message, dict):
            return error_reply(None, "malformed request: not a JSON object")
        request_id = message.get("id")
        token = message.get("token")
        if not isinstance(token, str) or not hmac.compare_digest(token.encode(), self._token):
            log.warning("tool request refused: missing or wrong token")
            return error_reply(request_id, "unauthorized: this request does not carry the kernel's token")
        tool = message.get("tool")
        if not isinstance(tool, str) or tool not in TOOL_NAMES:
            name = tool if isinstance(tool, str) else repr(tool)
            why = " (not available inside execute_code)" if tool in FORBIDDEN or str(tool).startswith("mcp") else ""
            return error_reply(request_id, f"unknown tool {name}{why}; scripts may call only: {', '.join(TOOL_NAMES)}")
        if tool not in self.tools:
            return error_reply(request_id, f"{tool} is not enabled for this session; enabled: {', '.join(self.tools)}")
        args = message.get("args", {})
        if not isinstance(args, dict):
            return error_reply(request_id, f"{tool}(): args must be a JSON object")
        with self._count_lock:
            budget = self.current()
            if budget is None:
                return error_reply(request_id,
                                   f"{tool}: no script is running in this kernel; tools work only while one runs")
            if budget.calls >= budget.limit:
                budget.limit_hit = True
                return error_reply(request_id, f"Tool call limit reached ({budget.limit}). "
                                               "No more tool calls allowed in this execution.")
            budget.calls += 1
        if self.counted is not None:
            self.counted(tool, budget)
        args = {k: v for k, v in args.items() if v is not None}  # None = the tool's default
        return request_id, tool, args, budget

    async def handle(self, raw: bytes | str) -> dict[str, Any]:
        """One request in, one reply out (``{"id", "result"}``), on the event loop."""
        # Parsing a request of many megabytes takes long enough to stall the loop.
        checked = self.check(raw) if len(raw) < (1 << 16) else await asyncio.to_thread(self.check, raw)
        if isinstance(checked, dict):
            return checked
        request_id, tool, args, budget = checked
        result = None
        if get_tool(tool) is not None and get_tool(tool).blocking is not None:  # type: ignore[union-attr]
            result = await asyncio.to_thread(call_tool_blocking, tool, args, budget.context)
        if result is None:  # a loop tool, or a write that must be approved first
            call = asyncio.ensure_future(call_tool(tool, args, budget.context))
            budget.track(call)
            try:
                result = await asyncio.shield(call)
            except asyncio.CancelledError:
                if not call.cancelled():  # this request itself was cancelled
                    call.cancel()
                    raise
                result = {"error": f"{tool}: cancelled (the script's execution ended)"}
        return {"id": request_id, "result": result}


def error_reply(request_id: Any, error: str) -> dict[str, Any]:
    """The reply to a request that failed: ``{"id", "result": {"error"}}``."""
    return {"id": request_id, "result": {"error": error}}


def log_failure(what: str, exc: Exception) -> None:
    """One line at warning (what may reach a user's terminal), the traceback at debug."""
    log.warning("%s: %s: %s", what, type(exc).__name__, exc)
    log.debug("%s", what, exc_info=exc)


def new_token() -> str:
    """A fresh per-process secret."""
    return secrets.token_urlsafe(32)


def close_fd(fd: int | None) -> None:
    """Close ``fd`` if there is one (the holder keeps None after)."""
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)
