"""Who may use a kernel's tool channel: that kernel's own processes, nobody else.

Two guards, because a process of the same user — as root, any process — can reach what a
kernel can reach:

* **The peer's pid** (:class:`Owner`): every connection, on the socket's path
  (``SO_PEERCRED``) or asked for on the inherited connector (``SCM_CREDENTIALS``, attached
  by the kernel, not by the sender), must come from the process the host started or one of
  its descendants. Another app's kernel, a process that read the folder, anything that left
  the kernel's tree is refused, before it may send a request.
* **The token** (:func:`token_descriptor`): handed to the process on an inherited descriptor
  (a sealed memfd), never written to a file: ``hermes_tools.py`` holds no secret.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import socket
import struct
from collections.abc import Callable

from hermes_tui.runtime import lineage

log = logging.getLogger(__name__)

_CREDENTIALS = struct.Struct("3i")  # struct ucred: pid, uid, gid


def peer_pid(sock: socket.socket) -> int | None:
    """The pid of the process at the other end of a connected Unix socket (``SO_PEERCRED``)."""
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CREDENTIALS.size)
    except OSError:
        return None
    pid = _CREDENTIALS.unpack(raw)[0]
    return pid if pid > 0 else None


def sender_pid(ancillary: list[tuple[int, int, bytes]]) -> int | None:
    """The sender's pid in a message's ``SCM_CREDENTIALS`` (the receiver set ``SO_PASSCRED``)."""
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and len(payload) >= _CREDENTIALS.size:
            pid = _CREDENTIALS.unpack(payload[:_CREDENTIALS.size])[0]
            return pid if pid > 0 else None
    return None


CREDENTIALS_SPACE = socket.CMSG_SPACE(_CREDENTIALS.size)
"""Ancillary room a ``recvmsg`` needs for :func:`sender_pid`."""


class Owner:
    """The process a tool channel serves: ``pid`` returns it (None before it started)."""

    def __init__(self, pid: Callable[[], int | None] | None = None) -> None:
        self.pid = pid

    def refusal(self, peer: int | None) -> str | None:
        """Why ``peer`` may not use the channel (None: it may)."""
        owner = self.pid() if self.pid is not None else None
        if owner is None:
            return "tool channel: refused: the kernel's process has not started"
        if peer is None or not lineage.descends_from(peer, owner):
            log.warning("tool channel: refused a connection from pid %s: not kernel %s or one of its processes",
                        peer, owner)
            return ("tool channel: refused: this connection does not come from the kernel's own processes "
                    "(only the kernel and what it started may call its tools)")
        return None


def token_descriptor(token: str) -> int:
    """A sealed, inheritable memfd holding ``token``: read with ``os.pread(fd, n, 0)``, by the
    process and what it starts with the descriptor kept, and written nowhere on disk."""
    fd = os.memfd_create("hermes-token", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        data = token.encode()
        while data:
            data = data[os.write(fd, data):]
        with contextlib.suppress(OSError):  # sealed: nothing can change it afterwards
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW
                        | fcntl.F_SEAL_WRITE)
        os.set_inheritable(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd
