"""``hermes-tui inject``: deliver a message to a running app over a local socket.

Each running app listens on ``$HERMES_HOME/tui/inject/<session>.sock`` (the folder 0700, the
socket 0600: only the same user can inject). A request is one JSON line
``{"text": ..., "session": ...}``; the answer is one JSON line ``{"ok": true, "queued": N}``
or ``{"ok": false, "error": ...}``. Two more requests serve ``hermes-tui approve`` / ``deny``
for a session open in the app: ``{"pending": true}`` lists the requests its dialogs wait on
(``{"ok": true, "requests": [...]}``), and ``{"answer": {"id", "choice", "reason", "who"}}``
answers one of them as if the user had, in the dialog. The message becomes an *injected* turn: every script it
causes is approved as a whole first (SPEC §4), and it waits while the agent is busy.

A socket path longer than the system allows (deep ``HERMES_HOME``) is bound in a private
temp dir and linked from the usual place; the client follows the link.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import struct
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from hermes_tui.base.paths import tui_dir
from hermes_tui.runtime.hardening import started_by_this_host

MAX_REQUEST = 1 << 20
"""The largest message accepted (1 MiB)."""
SUN_PATH_MAX = 100


def inject_dir(home: Path | None = None) -> Path:
    """``$HERMES_HOME/tui/inject``: one socket per running app."""
    return tui_dir(home) / "inject"


class InjectError(Exception):
    """Delivery failed; ``str()`` says why and what to do."""


Deliver = Callable[[str], Awaitable[int]]
"""Takes the text, queues the injected turn, returns how many turns are ahead of it."""
Answerer = Callable[[dict[str, object]], Awaitable[dict[str, object]]]
"""Takes ``{"pending": true}`` or ``{"answer": {...}}`` and returns the reply (``ok`` and more)."""


class InjectServer:
    """Accepts injected messages for one session of the running app."""

    def __init__(self, home: Path, session: str, deliver: Deliver, answer: Answerer | None = None) -> None:
        self.path = inject_dir(home) / f"{session}.sock"
        self.session = session
        self.deliver = deliver
        self.answer = answer
        self._server: asyncio.AbstractServer | None = None
        self._private: str | None = None

    async def start(self) -> None:
        """Listen (blocking file work runs in a thread)."""
        bind_path = await asyncio.to_thread(self._prepare)
        self._server = await asyncio.start_unix_server(self._handle, path=bind_path, limit=MAX_REQUEST + 1024)
        await asyncio.to_thread(self._publish, bind_path)

    def _publish(self, bind_path: str) -> None:
        # Made 0600 under a temporary name, then moved (or linked) into place: the socket is
        # never visible with looser permissions.
        os.chmod(bind_path, 0o600)
        if self._private:
            os.symlink(bind_path, self.path)
        else:
            os.replace(bind_path, self.path)

    def _prepare(self) -> str:
        folder = self.path.parent
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o700)
        if self.path.is_symlink() or self.path.exists():
            try:
                _connect(self.path, timeout=1).close()
            except OSError:
                self.path.unlink()  # a socket left by an app that died
            else:
                raise FileExistsError(f"another hermes-tui has session {self.session} open; injected messages go there")
        staged = folder / f".{os.getpid()}.{self.path.name}"
        if len(os.fsencode(self.path)) <= SUN_PATH_MAX and len(os.fsencode(staged)) <= SUN_PATH_MAX:
            staged.unlink(missing_ok=True)
            return str(staged)
        self._private = tempfile.mkdtemp(prefix="hermes-inject-")
        return os.path.join(self._private, "s.sock")

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), 10)
            answer = await self._answer(line, _peer_pid(writer))
        except (asyncio.TimeoutError, ValueError, asyncio.LimitOverrunError):
            answer = {"ok": False, "error": f"the request must be one JSON line of at most {MAX_REQUEST} bytes"}
        try:
            writer.write((json.dumps(answer) + "\n").encode())
            await writer.drain()
        except OSError:
            pass
        finally:
            writer.close()

    async def _answer(self, line: bytes, peer: int | None = None) -> dict[str, object]:
        try:
            request = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return {"ok": False, "error": "the request is not JSON"}
        if not isinstance(request, dict):
            return {"ok": False, "error": "the request must be a JSON object"}
        wanted = request.get("session")
        if wanted not in (None, self.session):
            return {"ok": False, "error": f"this app runs session {self.session}, not {wanted}"}
        if "pending" in request or "answer" in request:
            if self.answer is None:
                return {"ok": False, "error": "this app takes no answers from a shell"}
            # A script must never answer its own request: a process the app started (a kernel,
            # a script's subprocess, even one that double-forked away) is refused.
            if peer is None or await asyncio.to_thread(started_by_this_host, peer):
                return {"ok": False, "error": "refused: answers come from the user's own shell, not from a process "
                                              "this app started (a script)"}
            return await self.answer(request)
        text = request.get("text")
        if not isinstance(text, str) or not text.strip():
            return {"ok": False, "error": "nothing to inject: the message is empty"}
        ahead = await self.deliver(text)
        return {"ok": True, "session": self.session, "queued": ahead}

    async def aclose(self) -> None:
        """Stop listening and remove the socket."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        await asyncio.to_thread(self._cleanup)

    def _cleanup(self) -> None:
        try:
            self.path.unlink()
        except OSError:
            pass
        if self._private:
            shutil.rmtree(self._private, ignore_errors=True)


def _peer_pid(writer: asyncio.StreamWriter) -> int | None:
    """The pid of the process at the other end of a Unix socket (SO_PEERCRED), or None."""
    sock = writer.get_extra_info("socket")
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return None
    pid, _uid, _gid = struct.unpack("3i", raw)
    return pid or None


def app_holds(session: str, home: Path | None = None) -> bool:
    """True when a running app has ``session`` open (its socket answers)."""
    path = inject_dir(home) / f"{session}.sock"
    if not (path.exists() or path.is_symlink()):
        return False
    try:
        with _connect(path, timeout=1):
            return True
    except OSError:
        return False


def live_sessions(home: Path | None = None) -> list[str]:
    """Sessions with an app listening (sockets nobody answers on are skipped)."""
    folder = inject_dir(home)
    try:
        names = sorted(p for p in folder.iterdir() if p.name.endswith(".sock"))
    except OSError:
        return []
    live = []
    for path in names:
        try:
            with _connect(path, timeout=1):
                live.append(path.name[: -len(".sock")])
        except OSError:
            continue
    return live


def _connect(path: Path, timeout: float) -> socket.socket:
    target = os.path.realpath(path)  # a long path is a link to a short one
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(timeout)
    try:
        client.connect(target)
    except OSError:
        client.close()
        raise
    return client


def inject(text: str, session: str | None = None, home: Path | None = None, timeout: float = 10) -> dict[str, object]:
    """Deliver ``text`` to the running app of ``session`` (the only one running if None)."""
    if not text.strip():
        raise InjectError("nothing to inject: the message is empty")
    if len(text.encode()) > MAX_REQUEST - 1024:
        raise InjectError(f"the message is too long (at most {MAX_REQUEST - 1024} bytes)")
    if session is None:
        running = live_sessions(home)
        if not running:
            raise InjectError("no hermes-tui app is running (start one with `hermes-tui`)")
        if len(running) > 1:
            raise InjectError(f"{len(running)} apps are running (sessions {', '.join(running)}); choose one with --session")
        session = running[0]
    return ask_app(session, {"text": text, "session": session}, home, timeout)


def ask_app(session: str, payload: dict[str, object], home: Path | None = None,
            timeout: float = 10) -> dict[str, object]:
    """Send one request to the running app of ``session``; its answer (``ok`` true), or an
    :class:`InjectError` saying why not."""
    path = inject_dir(home) / f"{session}.sock"
    if not (path.exists() or path.is_symlink()):
        others = live_sessions(home)
        hint = f"; running: {', '.join(others)}" if others else "; no app is running"
        raise InjectError(f"no app is running session {session}{hint}")
    try:
        with _connect(path, timeout) as client:
            client.sendall((json.dumps(payload) + "\n").encode())
            reply = b""
            while not reply.endswith(b"\n"):
                piece = client.recv(65536)
                if not piece:
                    break
                reply += piece
    except ConnectionRefusedError:
        raise InjectError(f"the app of session {session} is gone (a stale socket: {path})") from None
    except OSError as exc:
        raise InjectError(f"cannot reach the app of session {session}: {exc.strerror or exc}") from None
    try:
        answer = json.loads(reply)
    except json.JSONDecodeError:
        raise InjectError("the app sent no answer") from None
    if not answer.get("ok"):
        raise InjectError(str(answer.get("error")))
    return answer
