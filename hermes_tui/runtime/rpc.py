"""The channel scripts call tools through: authentication, the budget, dispatch.

A request is one JSON object ``{"id", "token", "tool", "args"}``; the reply is
``{"id", "result"}`` where ``result`` is always a dict (a failure has ``error``). Nothing a
request holds — no token, a wrong one, garbage, a tool outside the seven — raises in the host.

Two transports carry the same messages:

* :class:`SocketRpcServer`: a Unix socket (0600, in a 0700 dir) named by
  ``HERMES_RPC_SOCKET``; newline-delimited JSON; one connection for the kernel's life, with
  replies matched by id so threads in a script may call at once.
* :class:`FileRpcServer`: request/response files in ``HERMES_RPC_DIR`` (written to a temp
  name and renamed, so never read half-written), polled. For backends with no shared socket.
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
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_tui.runtime.tools import TOOL_NAMES, ToolContext, call_tool, call_tool_blocking, get_tool

log = logging.getLogger(__name__)

MAX_REQUEST_BYTES = 64 << 20
"""Largest request accepted (a write_file of a big file)."""
FORBIDDEN = ("execute_code", "delegate_task")
RECV_CHUNK = 1 << 16
"""Under malloc's mmap threshold: a bigger buffer costs an mmap and page faults per call."""


@dataclass(slots=True)
class ExecBudget:
    """Tool calls of the execution now running on a kernel."""

    exec_id: str
    limit: int
    context: ToolContext
    calls: int = 0
    limit_hit: bool = False
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)


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

    def check(self, raw: bytes | str) -> tuple[Any, str, dict[str, Any], ExecBudget] | dict[str, Any]:
        """Authenticate and count a request: (id, tool, args, budget), or the error reply."""
        try:
            message = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return _reply(None, "malformed request: not a JSON object")
        if not isinstance(message, dict):
            return _reply(None, "malformed request: not a JSON object")
        request_id = message.get("id")
        token = message.get("token")
        if not isinstance(token, str) or not hmac.compare_digest(token.encode(), self.token.encode()):
            log.warning("tool request refused: missing or wrong token")
            return _reply(request_id, "unauthorized: this request does not carry the kernel's token")
        tool = message.get("tool")
        if not isinstance(tool, str) or tool not in TOOL_NAMES:
            name = tool if isinstance(tool, str) else repr(tool)
            why = " (not available inside execute_code)" if tool in FORBIDDEN or str(tool).startswith("mcp") else ""
            return _reply(request_id, f"unknown tool {name}{why}; scripts may call only: {', '.join(TOOL_NAMES)}")
        if tool not in self.tools:
            return _reply(request_id, f"{tool} is not enabled for this session; enabled: {', '.join(self.tools)}")
        args = message.get("args", {})
        if not isinstance(args, dict):
            return _reply(request_id, f"{tool}(): args must be a JSON object")
        budget = self.current()
        if budget is None:
            return _reply(request_id, f"{tool}: no script is running in this kernel; tools work only while one runs")
        if budget.calls >= budget.limit:
            budget.limit_hit = True
            return _reply(request_id, f"Tool call limit reached ({budget.limit}). "
                                      "No more tool calls allowed in this execution.")
        budget.calls += 1
        if self.counted is not None:
            self.counted(tool, budget)
        args = {k: v for k, v in args.items() if v is not None}  # None = the tool's default
        return request_id, tool, args, budget

    async def handle(self, raw: bytes | str) -> dict[str, Any]:
        """One request in, one reply out (``{"id", "result"}``), on the event loop."""
        checked = self.check(raw)
        if isinstance(checked, dict):
            return checked
        request_id, tool, args, budget = checked
        if get_tool(tool) is not None and get_tool(tool).blocking is not None:  # type: ignore[union-attr]
            result = await asyncio.to_thread(call_tool_blocking, tool, args, budget.context)
        else:
            result = await call_tool(tool, args, budget.context)
        return {"id": request_id, "result": result}


def _reply(request_id: Any, error: str) -> dict[str, Any]:
    return {"id": request_id, "result": {"error": error}}


def new_token() -> str:
    """A fresh per-process secret."""
    return secrets.token_urlsafe(32)


class SocketRpcServer:
    """Serves a :class:`ToolHost` on a Unix socket at ``folder/hermes.sock``.

    Connections are read on their own threads, never the event loop's: a file tool runs right
    there (one hand-off per call instead of three), while tools that need the loop (terminal
    with its approval, web, search) are sent to it and answer when done, so a long call never
    holds up the others.
    """

    def __init__(self, host: ToolHost, folder: Path) -> None:
        self.host = host
        self.folder = folder
        self.path = folder / "hermes.sock"
        self.loop: asyncio.AbstractEventLoop | None = None
        self._listener: socket.socket | None = None
        self._connections: set[socket.socket] = set()
        self._pending: set[concurrent.futures.Future[Any]] = set()
        self._threads: list[threading.Thread] = []
        self._closed = False

    def env(self) -> dict[str, str]:
        """What the child needs to find the server."""
        return {"HERMES_RPC_SOCKET": str(self.path)}

    def stub_config(self) -> dict[str, Any]:
        return {"transport": "socket", "socket": str(self.path)}

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        await asyncio.to_thread(self._listen)
        self._spawn(self._accept, "hermes-rpc-accept")

    def _listen(self) -> None:
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.folder, 0o700)  # the dir guards the socket between bind and chmod
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.path))
        os.chmod(self.path, 0o600)
        listener.listen(8)
        self._listener = listener

    def _spawn(self, target: Callable[..., None], name: str, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while not self._closed and self._listener is not None:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            self._connections.add(connection)
            self._spawn(self._serve, "hermes-rpc", connection)

    def _serve(self, connection: socket.socket) -> None:
        send_lock = threading.Lock()
        buffer = b""
        try:
            while not self._closed:
                try:
                    data = connection.recv(RECV_CHUNK)
                except OSError:
                    return
                if not data:
                    return
                buffer += data
                if len(buffer) > MAX_REQUEST_BYTES and b"\n" not in buffer:
                    self._send(connection, send_lock, _reply(None, f"request too large (over {MAX_REQUEST_BYTES} bytes)"))
                    return
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        self._answer(line, connection, send_lock)
        finally:
            self._connections.discard(connection)
            with contextlib.suppress(OSError):
                connection.close()

    def _answer(self, line: bytes, connection: socket.socket, send_lock: threading.Lock) -> None:
        try:
            checked = self.host.check(line)
            if isinstance(checked, dict):
                return self._send(connection, send_lock, checked)
            request_id, tool, args, budget = checked
            result = call_tool_blocking(tool, args, budget.context)
            if result is not None:
                return self._send(connection, send_lock, {"id": request_id, "result": result})
            assert self.loop is not None
            future = asyncio.run_coroutine_threadsafe(call_tool(tool, args, budget.context), self.loop)
        except Exception as exc:  # never let a request take the host down
            log.exception("tool request failed")
            return self._send(connection, send_lock, _reply(None, f"internal error: {exc}"))
        self._pending.add(future)

        def done(finished: concurrent.futures.Future[Any]) -> None:
            self._pending.discard(finished)
            if finished.cancelled():
                reply = _reply(request_id, f"{tool}: cancelled (the script's execution ended)")
            elif finished.exception() is not None:
                reply = _reply(request_id, f"{tool} failed: {finished.exception()}")
            else:
                reply = {"id": request_id, "result": finished.result()}
            self._send(connection, send_lock, reply)

        future.add_done_callback(done)

    @staticmethod
    def _send(connection: socket.socket, lock: threading.Lock, reply: dict[str, Any]) -> None:
        data = (json.dumps(reply) + "\n").encode("utf-8")
        with lock, contextlib.suppress(OSError):
            connection.sendall(data)

    async def close(self) -> None:
        """Stop serving and cancel requests in flight (their commands are ended)."""
        self._closed = True
        for future in list(self._pending):
            future.cancel()
        listener, self._listener = self._listener, None
        for sock in [listener, *self._connections]:
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    sock.close()
        threads, self._threads = self._threads, []
        await asyncio.to_thread(lambda: [t.join(5) for t in threads])  # type: ignore[func-returns-value]  # runs the joins


class FileRpcServer:
    """Serves a :class:`ToolHost` through request/response files under ``folder``."""

    POLL_ACTIVE = 0.005
    POLL_IDLE = 0.1

    def __init__(self, host: ToolHost, folder: Path) -> None:
        self.host = host
        self.folder = folder
        self.requests = folder / "requests"
        self.responses = folder / "responses"
        self._poller: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    def env(self) -> dict[str, str]:
        return {"HERMES_RPC_DIR": str(self.folder)}

    def stub_config(self) -> dict[str, Any]:
        return {"transport": "file", "rpc_dir": str(self.folder)}

    async def start(self) -> None:
        for folder in (self.folder, self.requests, self.responses):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._poller = asyncio.ensure_future(self._poll())

    async def _poll(self) -> None:
        while True:
            names = await asyncio.to_thread(self._take_requests)
            for name, data in names:
                task = asyncio.ensure_future(self._answer(name, data))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            busy = names or self._tasks or self.host.current() is not None
            await asyncio.sleep(self.POLL_ACTIVE if busy else self.POLL_IDLE)

    def _take_requests(self) -> list[tuple[str, bytes]]:
        taken: list[tuple[str, bytes]] = []
        try:
            names = sorted(n for n in os.listdir(self.requests) if n.endswith(".json") and not n.startswith("."))
        except OSError:
            return taken
        for name in names:
            path = self.requests / name
            try:
                if path.stat().st_size > MAX_REQUEST_BYTES:
                    data = b""
                else:
                    data = path.read_bytes()
                path.unlink()
            except OSError:
                continue
            taken.append((name[: -len(".json")], data))
        return taken

    async def _answer(self, name: str, data: bytes) -> None:
        try:
            reply = await self.host.handle(data) if data else _reply(name, "request too large or empty")
        except Exception as exc:
            log.exception("tool request failed")
            reply = _reply(name, f"internal error: {exc}")
        # Reply under the file's own name: the caller polls for exactly that file.
        await asyncio.to_thread(self._write_response, name, reply)

    def _write_response(self, name: str, reply: dict[str, Any]) -> None:
        if "/" in name or name.startswith("."):
            return
        temp = self.responses / f".{name}.tmp"
        temp.write_text(json.dumps(reply), encoding="utf-8")
        os.replace(temp, self.responses / f"{name}.json")

    async def close(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
            self._poller = None
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


RpcServer = SocketRpcServer | FileRpcServer


async def open_rpc(transport: str, host: ToolHost, folder: Path) -> RpcServer:
    """Start the tool channel of one process in ``folder`` (``socket`` or ``file``)."""
    server: RpcServer = FileRpcServer(host, folder) if transport == "file" else SocketRpcServer(host, folder)
    await server.start()
    return server
