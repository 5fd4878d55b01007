"""The channel scripts call tools through: authentication, the budget, dispatch (:mod:`.host`).

A request is one JSON object ``{"id", "token", "tool", "args"}``; the reply is
``{"id", "result"}`` where ``result`` is always a dict (a failure has ``error``). Nothing a
request holds — no token, a wrong one, garbage, a tool outside the seven — raises in the host.
Only the kernel's own processes get that far (:mod:`hermes_tui.runtime.channel_guard`): a
connection from any other process is refused by its pid, and the token comes on an inherited
descriptor, written to no file.

Two transports carry the same messages:

* :class:`SocketRpcServer` (:mod:`.sockets`): a Unix socket (0600, in a 0700 dir) named by
  ``HERMES_RPC_SOCKET``; newline-delimited JSON; one connection for the kernel's life, with
  replies matched by id so threads in a script may call at once.
* :class:`FileRpcServer` (:mod:`.files`): request/response files in ``HERMES_RPC_DIR``
  (written to a temp name and renamed, so never read half-written), polled. For backends with
  no shared socket.

Both hold what a hostile script can make them hold to fixed bounds per kernel: a request line
of at most :data:`MAX_REQUEST_BYTES`, :data:`HELD_BYTES` of requests at once,
:data:`MAX_IN_FLIGHT` requests being answered, :data:`MAX_CONNECTIONS` connections and
:data:`CHANNEL_THREADS` threads serving a socket (all of them in :mod:`.host`).
"""

from __future__ import annotations

from pathlib import Path

from hermes_tui.runtime.rpc.files import FileRpcServer
from hermes_tui.runtime.rpc.host import (
    CHANNEL_THREADS, FORBIDDEN, HELD_BYTES, MAX_CONNECTIONS, MAX_IN_FLIGHT, MAX_REQUEST_BYTES, ExecBudget, ToolHost,
    new_token,
)
from hermes_tui.runtime.rpc.sockets import SocketRpcServer

__all__ = [
    "CHANNEL_THREADS", "FORBIDDEN", "HELD_BYTES", "MAX_CONNECTIONS", "MAX_IN_FLIGHT", "MAX_REQUEST_BYTES", "ExecBudget",
    "FileRpcServer", "RpcServer", "SocketRpcServer", "ToolHost", "new_token", "open_rpc",
]

RpcServer = SocketRpcServer | FileRpcServer


async def open_rpc(transport: str, host: ToolHost, folder: Path) -> RpcServer:
    """Start the tool channel of one process in ``folder`` (``socket`` or ``file``)."""
    server: RpcServer = FileRpcServer(host, folder) if transport == "file" else SocketRpcServer(host, folder)
    await server.start()
    return server
