"""The tool channel through files: :class:`FileRpcServer`.

Requests and responses are files in ``HERMES_RPC_DIR`` (written to a temp name and renamed, so
never read half-written), polled: for backends with no shared socket. A request file carries
no sender; the token alone tells the kernel's requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_tui.runtime.channel_guard import Owner, token_descriptor
from hermes_tui.runtime.rpc.host import (
    FILE_BATCH, FILE_SCAN, HELD_BYTES, MAX_IN_FLIGHT, MAX_REQUEST_BYTES, TOO_LARGE, ExecBudget, ToolHost, close_fd,
    error_reply, log_failure,
)

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Taken:
    """A request file read (``data``) or refused (``error``)."""

    name: str
    data: bytes = b""
    error: str | None = None


class FileRpcServer:
    """Serves a :class:`ToolHost` through request/response files under ``folder``.

    A request file is opened without following a symlink and without blocking, must be a
    regular file, and is read to at most :data:`MAX_REQUEST_BYTES` + 1 bytes: a symlink to
    ``/dev/zero``, a FIFO or a huge file gets an error reply under its name. Each poll takes at
    most :data:`FILE_BATCH` requests, and none while :data:`HELD_BYTES` or
    :data:`MAX_IN_FLIGHT` would be passed; replies are written to fresh private temp files.
    """

    POLL_ACTIVE = 0.005
    POLL_IDLE = 0.1

    def __init__(self, host: ToolHost, folder: Path) -> None:
        self.host = host
        self.folder = folder
        self.requests = folder / "requests"
        self.responses = folder / "responses"
        self._poller: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._held = 0
        self._stuck: set[str] = set()
        """Names refused that could not be removed (a directory): not looked at again."""
        self.owner = Owner()
        """Unused here: a request file carries no sender; the token alone tells the kernel's."""
        self.token_fd: int | None = None

    def env(self) -> dict[str, str]:
        return {"HERMES_RPC_DIR": str(self.folder)}

    @property
    def child_fds(self) -> tuple[int, ...]:
        """Descriptors the child must inherit: the token's."""
        return () if self.token_fd is None else (self.token_fd,)

    @property
    def writable(self) -> tuple[Path, ...]:
        """The child writes its requests into the folder: a sandbox must let it."""
        return (self.folder,)

    def started(self) -> None:
        """The child has started (or failed to): the token's descriptor is its own now."""
        close_fd(self.token_fd)
        self.token_fd = None

    def stub_config(self) -> dict[str, Any]:
        return {"transport": "file", "rpc_dir": str(self.folder), "max_request": MAX_REQUEST_BYTES,
                "token_fd": self.token_fd}

    async def start(self) -> None:
        self.token_fd = token_descriptor(self.host.token)
        for folder in (self.folder, self.requests, self.responses):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._poller = asyncio.ensure_future(self._poll())

    async def _poll(self) -> None:
        while True:
            slots = min(FILE_BATCH, MAX_IN_FLIGHT - len(self._tasks))
            taken = await asyncio.to_thread(self._take_requests, slots, HELD_BYTES - self._held) if slots > 0 else []
            for request in taken:
                self._held += len(request.data)
                task = asyncio.ensure_future(self._answer(request))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            busy = taken or self._tasks or self.host.current() is not None
            await asyncio.sleep(self.POLL_ACTIVE if busy else self.POLL_IDLE)

    def _take_requests(self, slots: int = FILE_BATCH, room: int = HELD_BYTES) -> list[_Taken]:
        """Take up to ``slots`` requests holding at most ``room`` bytes. Blocking."""
        taken: list[_Taken] = []
        for name in self._names():
            if len(taken) >= slots:
                break
            request = self._take(name, room)
            if request is not None:
                taken.append(request)
                room -= len(request.data)
        return taken

    def _names(self) -> list[str]:
        """Request names waiting, a bounded number of them, in name order."""
        names: list[str] = []
        try:
            with os.scandir(self.requests) as entries:
                for index, entry in enumerate(entries):
                    if index >= FILE_SCAN or len(names) >= 4 * FILE_BATCH:
                        break
                    name = entry.name
                    if name.endswith(".json") and not name.startswith(".") and name not in self._stuck:
                        names.append(name)
        except OSError:
            return []
        return sorted(names)

    def _take(self, filename: str, room: int) -> _Taken | None:
        """Read and remove one request file; None if it is gone or must wait for room."""
        name = filename[: -len(".json")]
        path = os.path.join(self.requests, filename)
        try:
            # Looked at before it is opened: opening a device can itself do something.
            mode = os.lstat(path).st_mode
            if not stat.S_ISREG(mode):
                return self._refused(filename, f"request refused: requests/{filename} is {_kind(mode)}; "
                                               "a request must be a regular file")
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as exc:
            why = "a symbolic link" if exc.errno == errno.ELOOP else f"unreadable ({exc.strerror or exc})"
            return self._refused(filename, f"request refused: requests/{filename} is {why}; "
                                           "a request must be a regular file")
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):  # swapped in after the lstat
                return self._refused(filename, f"request refused: requests/{filename} is {_kind(info.st_mode)}; "
                                               "a request must be a regular file")
            if info.st_size > MAX_REQUEST_BYTES:
                return self._refused(filename, TOO_LARGE)
            if info.st_size > room:
                return None  # taken once the requests being answered have let go of theirs
            data = _read_capped(fd, info.st_size)
        except OSError as exc:
            return self._refused(filename, f"request refused: requests/{filename} could not be read: "
                                           f"{exc.strerror or exc}")
        finally:
            os.close(fd)
        if len(data) > MAX_REQUEST_BYTES:  # it grew after fstat
            return self._refused(filename, TOO_LARGE)
        self._remove(filename)
        return _Taken(name, data)

    def _refused(self, filename: str, error: str) -> _Taken:
        self._remove(filename)
        return _Taken(filename[: -len(".json")], error=error)

    def _remove(self, filename: str) -> None:
        path = os.path.join(self.requests, filename)
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError:
            try:
                os.rmdir(path)
            except OSError:
                if len(self._stuck) < 4096:
                    self._stuck.add(filename)

    async def _answer(self, request: _Taken) -> None:
        try:
            if request.error is not None:
                reply = error_reply(request.name, request.error)
            elif not request.data:
                reply = error_reply(request.name, "malformed request: the request file is empty")
            else:
                reply = await self.host.handle(request.data)
        except Exception as exc:
            log_failure("a tool request failed", exc)
            reply = error_reply(request.name, f"internal error: {exc}")
        finally:
            self._held -= len(request.data)
        # Reply under the file's own name: the caller polls for exactly that file.
        try:
            await asyncio.to_thread(self._write_response, request.name, reply)
        except (OSError, TypeError, ValueError) as exc:
            log.warning("tool reply %s could not be written: %s", request.name, exc)

    def _write_response(self, name: str, reply: dict[str, Any]) -> None:
        """Write ``responses/<name>.json`` via a fresh temp file (O_EXCL, no symlink followed),
        so nothing the script planted there can block or redirect the write. Blocking."""
        if "/" in name or "\0" in name or name.startswith("."):
            return
        data = json.dumps(reply).encode("utf-8")
        temp = os.path.join(self.responses, f".reply-{secrets.token_hex(8)}.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temp, os.path.join(self.responses, f"{name}.json"))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise

    def cancel_calls(self, budget: ExecBudget) -> int:
        """End the calls of an execution that has ended (see :meth:`ExecBudget.cancel_calls`)."""
        return budget.cancel_calls()

    async def close(self) -> None:
        close_fd(self.token_fd)
        self.token_fd = None
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
            self._poller = None
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


def _kind(mode: int) -> str:
    """What a file that is not a regular one is, for an error message."""
    kinds = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a directory"),
             (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _read_capped(fd: int, expected: int) -> bytes:
    """At most ``MAX_REQUEST_BYTES + 1`` bytes of ``fd``: one read for a file of the size
    fstat said, more only if it grew meanwhile."""
    limit = MAX_REQUEST_BYTES + 1
    parts: list[bytes] = []
    total = 0
    size = min(expected, MAX_REQUEST_BYTES) + 1
    while total < limit:
        chunk = os.read(fd, min(size, limit - total))
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
        size = 1 << 20
    return parts[0] if len(parts) == 1 else b"".join(parts)
