"""The tool channel on a Unix socket: :class:`SocketRpcServer`.

The socket (0600, in a 0700 dir) is named by ``HERMES_RPC_SOCKET``; requests and replies are
newline-delimited JSON (:mod:`.host`); one connection serves the kernel's life, with replies
matched by id so threads in a script may call at once. A connection from any process outside
the kernel's tree is refused by its pid (:mod:`hermes_tui.runtime.channel_guard`).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import functools
import json
import logging
import os
import selectors
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_tui.runtime.channel_guard import CREDENTIALS_SPACE, Owner, peer_pid, sender_pid, token_descriptor
from hermes_tui.runtime.rpc.host import (
    CHANNEL_THREADS, HELD_BYTES, IDLE_GRACE, INLINE_REQUEST_BYTES, MAX_CONNECTIONS, MAX_IN_FLIGHT, MAX_REQUEST_BYTES, OUTPUT_PAUSE_BYTES,
    QUEUED_REPLY_BYTES, RECV_CHUNK, TOO_LARGE, ExecBudget, ToolHost, close_fd, error_reply, log_failure,
)
from hermes_tui.runtime.tools import call_tool, call_tool_blocking, get_tool

log = logging.getLogger(__name__)


def _line(reply: dict[str, Any]) -> bytes:
    return (json.dumps(reply) + "\n").encode("utf-8")


class _Connection:
    """One accepted connection.

    ``lock`` guards the socket's writes, ``out`` and ``closed``: replies are sent by whichever
    thread answered (a channel thread or the event loop); the socket is read, and closed, only
    by the thread leading the channel.
    """

    __slots__ = ("sock", "lock", "partial", "charged", "out", "out_bytes", "spoke", "closed", "broken",
                 "events", "in_flight", "short_of_room", "rest", "rest_at", "jobs", "listed", "accepted")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.lock = threading.Lock()
        self.partial = bytearray()
        """The line read so far (no newline yet)."""
        self.charged = 0
        """Bytes of ``partial`` counted against the kernel's :data:`HELD_BYTES`."""
        self.out: collections.deque[memoryview] = collections.deque()
        self.out_bytes = 0
        self.spoke = False
        """Sent at least one byte (a silent connection is the first closed at the cap)."""
        self.closed = False
        self.broken = False
        """A send failed: the leading thread closes it."""
        self.events = 0
        """What the selector watches it for (0: not registered)."""
        self.in_flight = 0
        self.short_of_room = False
        """Not read until requests being answered give back enough of :data:`HELD_BYTES`."""
        self.rest = b""
        self.rest_at = 0
        """Bytes received and not split into lines yet (``rest[rest_at:]``): lines are split off
        one at a time, as the request before is taken, and never past :data:`MAX_IN_FLIGHT`."""
        self.jobs: collections.deque[_Job] = collections.deque()
        """Requests read and not started yet (at most one, and one the leader put back)."""
        self.listed = False
        """In the server's round-robin of connections with a request ready."""
        self.accepted = time.monotonic()


@dataclass(slots=True)
class _Job:
    """A complete request line, read from ``connection``, holding ``charged`` bytes."""

    connection: _Connection
    line: bytearray
    charged: int
    checked: Any = None
    """What :meth:`ToolHost.check` said, once the leader checked it (None: not yet)."""


class SocketRpcServer:
    """Serves a :class:`ToolHost` on a Unix socket at ``folder/hermes.sock``.

    At most :data:`CHANNEL_THREADS` threads per kernel, taking turns (leader/followers): the
    one leading waits on a selector over the listener and every connection and reads. A small
    request (:data:`INLINE_REQUEST_BYTES`) it answers itself and leads on; a big one (a write)
    it answers after handing the lead to another, so the reading goes on meanwhile.
    Tools that need the event loop (terminal with its approval, web, search) are sent to it
    and answer when done. Nothing on the event loop ever blocks on a socket: a reply the
    script does not read yet waits in memory, and the connection is not read meanwhile.

    A line is gathered in place and searched for its newline only in the bytes just read, so a
    big request costs time in proportion to its size; one over :data:`MAX_REQUEST_BYTES` is
    refused (and its connection closed) as soon as it passes the cap, without being held whole.
    """

    IDLE_SECONDS = 30.0
    """A thread with nothing to do for this long ends (one always stays)."""

    def __init__(self, host: ToolHost, folder: Path) -> None:
        self.host = host
        self.folder = folder
        self.path = folder / "hermes.sock"
        self.loop: asyncio.AbstractEventLoop | None = None
        self._listener: socket.socket | None = None
        self._selector: selectors.BaseSelector | None = None
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None
        self._connections: dict[socket.socket, _Connection] = {}  # oldest first
        self._ready: collections.deque[_Connection] = collections.deque()
        """Connections with a request ready, served in turn (round-robin)."""
        self._pending: set[concurrent.futures.Future[Any]] = set()
        self._lead = threading.Lock()
        """Held by the thread leading: only it selects, reads and closes connections."""
        self._lock = threading.Lock()
        """Guards the counts below."""
        self._threads = 0
        self._waiting = 0
        self._leading = False
        self._answering_leading = False
        """The thread leading is answering a request itself."""
        self._teardown_owed = False
        """The channel closed while it did: that thread tears it down when done."""
        self._partials = 0
        """Bytes of lines being read (every connection's ``charged``)."""
        self._answering = 0
        """Bytes of complete lines not answered yet."""
        self._room_wanted = False
        self._in_flight = 0
        self._scratch = bytearray(RECV_CHUNK)
        self._accept_paused_until = 0.0
        self._accept_failing = False
        self._listening = False
        self._closed = False
        self._connector: socket.socket | None = None
        self.child_connector: socket.socket | None = None
        """The child's end of the connector (see :meth:`_connect_child`): inherited by the
        process, closed here once it has started (:meth:`started`)."""
        self.owner = Owner()
        """The process served: connections from anything outside its tree are refused."""
        self.token_fd: int | None = None
        """The token's descriptor, inherited by the process (closed here once it started)."""

    writable: tuple[Path, ...] = ()
    """Folders the child must be able to write (none: the socket comes as a descriptor)."""

    def env(self) -> dict[str, str]:
        """What the child needs to find the server."""
        env = {"HERMES_RPC_SOCKET": str(self.path)}
        if self.child_connector is not None:
            env["HERMES_RPC_FD"] = str(self.child_connector.fileno())
        return env

    def stub_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"transport": "socket", "socket": str(self.path), "max_request": MAX_REQUEST_BYTES,
                                  "token_fd": self.token_fd}
        if self.child_connector is not None:
            config["connector_fd"] = self.child_connector.fileno()
        return config

    @property
    def child_fds(self) -> tuple[int, ...]:
        """Descriptors the child must inherit."""
        fds = () if self.child_connector is None else (self.child_connector.fileno(),)
        return fds if self.token_fd is None else (*fds, self.token_fd)

    def started(self) -> None:
        """The child has started (or failed to): its end of the connector and the token's
        descriptor are its own now."""
        child, self.child_connector = self.child_connector, None
        if child is not None:
            with contextlib.suppress(OSError):
                child.close()
        close_fd(self.token_fd)
        self.token_fd = None

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        try:
            self.token_fd = token_descriptor(self.host.token)
            await asyncio.to_thread(self._listen)
            self._add_thread()
        except BaseException:
            self._closed = True
            self._teardown()
            raise

    def _listen(self) -> None:
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.folder, 0o700)  # the dir guards the socket between bind and chmod
        self._listener = listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.path))
        os.chmod(self.path, 0o600)
        listener.listen(MAX_CONNECTIONS)
        listener.setblocking(False)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        # A sandboxed process cannot open a Unix socket (sandbox/seccomp.py): it asks for each
        # connection on this pair, already connected, and gets one back (SCM_RIGHTS).
        self._connector, self.child_connector = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._connector.setblocking(False)
        # Each ask carries the asker's pid, attached by the kernel (not by the asker).
        self._connector.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self._selector = selectors.DefaultSelector()
        self._selector.register(listener, selectors.EVENT_READ)
        self._listening = True
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._selector.register(self._connector, selectors.EVENT_READ)

    # -- the channel's threads ------------------------------------------------------------

    def _add_thread(self) -> None:
        with self._lock:
            if self._closed or self._threads >= CHANNEL_THREADS:
                return
            self._threads += 1
        try:
            threading.Thread(target=self._take_turns, name="hermes-rpc", daemon=True).start()
        except RuntimeError:  # no thread could start: those there are go on taking turns
            with self._lock:
                self._threads -= 1
            if self._threads == 0:
                raise

    def _take_turns(self) -> None:
        """What every channel thread does: wait for the lead, lead until a request is ready,
        pass the lead on, answer the request; end when idle (but the last) or closed."""
        while True:
            with self._lock:
                self._waiting += 1
            if self._ready:  # a file tool may be waiting for a thread that can take the lead
                self._wake()
            got = self._lead.acquire(timeout=self.IDLE_SECONDS)
            with self._lock:
                self._waiting -= 1
                if got and not self._closed:
                    self._leading = True
                elif got or self._closed or (self._threads > 1 and self._leading):
                    # Idle, it ends only while another leads: the leader, when it hands the lead
                    # on, counts the followers under this lock, so it sees that this one left.
                    if got:
                        self._lead.release()
                    self._threads -= 1
                    return
                else:
                    continue  # the last thread stays; and a lead no one holds is taken
            try:
                job = self._next_job()
                while job is not None and len(job.line) <= INLINE_REQUEST_BYTES:
                    # A small request: answered here, still leading (no hand-off per call).
                    # Meanwhile nobody reads: only this kernel's own other calls wait.
                    if not self._answer_leading(job):
                        job = None
                        break
                    job = self._next_job()
            except Exception as exc:  # a bug here must not pass silently: the kernel's tools would hang
                log_failure("the tool channel failed", exc)
                job = None
                time.sleep(0.01)  # and must not spin
            finally:
                with self._lock:
                    self._leading = False
                self._lead.release()
            if job is not None:
                with self._lock:
                    nobody_leads = not self._leading and self._waiting == 0
                if nobody_leads:
                    self._add_thread()
                self._answer(job)

    def _next_job(self) -> _Job | None:
        """Serve the sockets until a request is ready (None once closed). Leader only."""
        while not self._closed:
            job = self._take_ready()
            if job is not None:
                return job
            assert self._selector is not None
            self._refresh()  # what is watched follows what was taken; it may split a line off
            job = self._take_ready()
            if job is not None:
                return job
            timeout = None
            if self._accept_paused_until:
                timeout = max(0.0, self._accept_paused_until - time.monotonic())
            for key, mask in self._selector.select(timeout):
                if key.fileobj is self._listener:
                    self._accept()
                elif key.fileobj is self._connector:
                    self._connect_child()
                elif key.fileobj is self._wake_r:
                    self._drain_wakeups()
                else:
                    self._on_ready(key.data, mask)
        return None

    def _take_ready(self) -> _Job | None:
        """The next request to answer, taking connections in turn; None if none may start now.

        A connection whose unsent replies pass :data:`OUTPUT_PAUSE_BYTES` is not answered until
        its script reads them, nor one with any reply waiting while the kernel's pass
        :data:`QUEUED_REPLY_BYTES`. If the lead could not be handed on (every other thread is
        answering), the leader checks the request itself and answers here what is quick (an
        error, a tool run on the event loop); a file tool waits for a thread, so one always reads.
        """
        if not self._ready:
            return None
        queued = sum(connection.out_bytes for connection in self._connections.values())
        with self._lock:
            can_hand_on = self._waiting > 0 or self._threads < CHANNEL_THREADS
        for _ in range(len(self._ready)):
            connection = self._ready.popleft()
            connection.listed = False
            if connection.closed or not connection.jobs:
                continue
            waiting = connection.out_bytes
            if waiting >= OUTPUT_PAUSE_BYTES or (waiting and queued >= QUEUED_REPLY_BYTES):
                self._list(connection)
                continue
            job = connection.jobs[0]
            if not can_hand_on:
                if job.checked is None:
                    job.checked = self.host.check(job.line)
                    job.line = bytearray()
                if _runs_on_a_thread(job.checked):
                    self._list(connection)
                    continue
            connection.jobs.popleft()
            self._split_rest(connection)
            if connection.jobs:
                self._list(connection)
            if can_hand_on:
                return job
            self._answer(job)  # quick: the leader goes on leading
        return None

    def _list(self, connection: _Connection) -> None:
        if not connection.listed:
            connection.listed = True
            self._ready.append(connection)

    def _on_ready(self, connection: _Connection, mask: int) -> None:
        if mask & selectors.EVENT_WRITE and not connection.closed:
            self._flush(connection)
        if mask & selectors.EVENT_READ and not connection.closed:
            self._read(connection)

    def _wake(self) -> None:
        """Make the leading thread look again at what others changed (any thread)."""
        wake_w = self._wake_w
        with contextlib.suppress(OSError):  # full: a wake-up is pending anyway; closed: no one to wake
            if wake_w is not None:
                wake_w.send(b"\0")

    def _drain_wakeups(self) -> None:
        with contextlib.suppress(OSError):
            while self._wake_r is not None and self._wake_r.recv(4096):
                pass

    # -- reading (the leading thread) -----------------------------------------------------

    def _accept(self) -> None:
        """Take waiting connections; past the cap, close the oldest silent one or refuse."""
        assert self._listener is not None
        for _ in range(64):  # then let the others be read
            try:
                sock, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                # Out of descriptors: the listener stays readable, so stop watching it awhile
                # rather than spin (the connection waits in the backlog).
                (log.debug if self._accept_failing else log.warning)("tool channel cannot accept: %s", exc)
                self._accept_failing = True
                self._accept_paused_until = time.monotonic() + 0.1
                return
            self._accept_failing = False
            refusal = self.owner.refusal(peer_pid(sock))
            if refusal is not None:
                _say_and_close(sock, refusal)
                continue
            sock.setblocking(False)
            if len(self._connections) >= MAX_CONNECTIONS and not self._close_a_silent_one():
                _say_and_close(sock, f"tool channel: too many connections: this kernel already has "
                                     f"{MAX_CONNECTIONS} open (the most allowed)")
                continue
            self._connections[sock] = _Connection(sock)

    def _connect_child(self) -> None:
        """Answer each request on the connector with one end of a new connection (leader only).
        Once the process and every one it forked have closed their ends, the connector is done."""
        connector = self._connector
        assert connector is not None and self._selector is not None
        for _ in range(64):
            try:
                asked, ancillary, _, _ = connector.recvmsg(16, CREDENTIALS_SPACE)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                asked, ancillary = b"", []
            if not asked:
                self._selector.unregister(connector)
                connector.close()
                self._connector = None
                return
            if self.owner.refusal(sender_pid(ancillary)) is not None:
                with contextlib.suppress(OSError):
                    connector.send(b"refused")
                continue
            if len(self._connections) >= MAX_CONNECTIONS and not self._close_a_silent_one():
                with contextlib.suppress(OSError):
                    connector.send(b"full")
                continue
            mine, theirs = socket.socketpair()
            try:
                socket.send_fds(connector, [b"c"], [theirs.fileno()])
            except OSError:
                mine.close()
                continue
            finally:
                theirs.close()
            mine.setblocking(False)
            self._connections[mine] = _Connection(mine)

    def _close_a_silent_one(self) -> bool:
        """Close the oldest connection that never sent a byte (none sent since) and was
        accepted over :data:`IDLE_GRACE` ago; True if one."""
        now = time.monotonic()
        for connection in list(self._connections.values()):
            if connection.spoke or connection.in_flight or connection.out or now - connection.accepted < IDLE_GRACE:
                continue
            try:
                waiting = connection.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                waiting = None
            except OSError:
                waiting = b""
            if waiting:  # it has just spoken: not idle after all
                connection.spoke = True
                continue
            self._refuse(connection, f"tool channel: closed an idle connection: this kernel opened more than "
                                     f"{MAX_CONNECTIONS} (the most allowed)")
            return True
        return False

    def _read(self, connection: _Connection) -> None:
        """Read what is there and split off its first complete line as a job; what follows
        it stays in ``connection.rest``."""
        scratch = self._scratch
        try:
            count = connection.sock.recv_into(scratch)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            return self._drop(connection)
        if not count:
            return self._drop(connection)
        connection.spoke = True
        self._split(connection, scratch, 0, count)

    def _split_rest(self, connection: _Connection) -> None:
        if len(connection.rest) > connection.rest_at and not connection.closed:
            self._split(connection, connection.rest, connection.rest_at, len(connection.rest))

    def _split(self, connection: _Connection, buffer: bytes | bytearray, start: int, count: int) -> None:
        """Gather ``buffer[start:count]`` into lines until one is ready (or the kernel has
        :data:`MAX_IN_FLIGHT`); keep what is left in ``connection.rest``."""
        view = memoryview(buffer)
        while start < count:
            if connection.jobs or self._in_flight >= MAX_IN_FLIGHT:
                break
            newline = buffer.find(b"\n", start, count)  # only in the new bytes: linear time
            end = count if newline < 0 else newline
            if not self._gather(connection, view[start:end]):
                return
            if newline < 0:
                start = count
                break
            line, connection.partial = connection.partial, bytearray()
            charged, connection.charged = connection.charged, 0
            if line and not line.isspace():
                with self._lock:
                    self._partials -= charged
                    self._answering += charged
                    self._in_flight += 1
                    connection.in_flight += 1
                connection.jobs.append(_Job(connection, line, charged))
                self._list(connection)
            else:
                self._release(charged)
            start = newline + 1
        if start >= count:
            connection.rest, connection.rest_at = b"", 0
        elif buffer is connection.rest:
            connection.rest_at = start
        else:
            connection.rest, connection.rest_at = bytes(view[start:count]), 0

    def _gather(self, connection: _Connection, piece: memoryview) -> bool:
        """Add ``piece`` to the connection's line; False if it was refused (and dropped)."""
        if not piece:
            return True
        if len(connection.partial) + len(piece) > MAX_REQUEST_BYTES:
            self._refuse(connection, TOO_LARGE)
            return False
        with self._lock:
            # Lines still being read can only be refused (waiting for each other could last
            # for ever); lines being answered give their room back, so for them we wait.
            refused = self._partials + len(piece) > HELD_BYTES
            if not refused:
                self._partials += len(piece)
                if self._partials + self._answering > HELD_BYTES:
                    connection.short_of_room = self._room_wanted = True
        if refused:
            self._refuse(connection, f"request refused: this kernel's unfinished tool requests already hold "
                                     f"{HELD_BYTES >> 20} MiB of the host's memory; send big requests one at a time")
            return False
        connection.charged += len(piece)
        connection.partial += piece
        return True

    def _release(self, charged: int, answered: _Connection | None = None) -> None:
        """Give back the ``charged`` bytes of a line being read; with ``answered``, those of
        a line answered now, and its in-flight place."""
        resume = False
        with self._lock:
            if answered is None:
                self._partials -= charged
            else:
                self._answering -= charged
                answered.in_flight -= 1
                self._in_flight -= 1
                resume = self._in_flight == MAX_IN_FLIGHT - 1 or self._room_wanted
        if resume:  # reading had stopped at a cap: look again
            self._wake()

    def _refresh(self) -> None:
        """Watch each connection for what it needs now: reads unless paused, writes if pending."""
        assert self._selector is not None
        with self._lock:
            reading = self._in_flight < MAX_IN_FLIGHT
            room = self._partials + self._answering <= HELD_BYTES
            if room:
                self._room_wanted = False
        for connection in list(self._connections.values()):
            if connection.broken:
                self._drop(connection)
                continue
            if room:
                connection.short_of_room = False
            if reading and not connection.jobs:
                self._split_rest(connection)
                if connection.closed:
                    continue
            events = 0
            if (reading and connection.out_bytes < OUTPUT_PAUSE_BYTES and not connection.short_of_room
                    and not connection.jobs and len(connection.rest) <= connection.rest_at):
                events |= selectors.EVENT_READ
            if connection.out:
                events |= selectors.EVENT_WRITE
            if events != connection.events:
                if not events:
                    self._selector.unregister(connection.sock)
                elif not connection.events:
                    self._selector.register(connection.sock, events, connection)
                else:
                    self._selector.modify(connection.sock, events, connection)
                connection.events = events
        if self._accept_paused_until and time.monotonic() >= self._accept_paused_until:
            self._accept_paused_until = 0.0
        listening = not self._accept_paused_until
        if listening != self._listening and self._listener is not None:
            if listening:
                self._selector.register(self._listener, selectors.EVENT_READ)
            else:
                self._selector.unregister(self._listener)
            self._listening = listening

    def _refuse(self, connection: _Connection, error: str) -> None:
        """Say ``error`` (a reply with no id) and close the connection."""
        self._send(connection, _line(error_reply(None, error)))
        self._drop(connection)

    def _drop(self, connection: _Connection) -> None:
        """Close a connection and give back what its unfinished line held."""
        with connection.lock:
            if connection.closed:
                return
            connection.closed = True
            connection.out.clear()
            connection.out_bytes = 0
        self._connections.pop(connection.sock, None)
        if connection.events and self._selector is not None:
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(connection.sock)
        connection.events = 0
        with contextlib.suppress(OSError):
            connection.sock.close()
        connection.partial = bytearray()
        self._release(connection.charged)
        connection.charged = 0
        connection.rest, connection.rest_at = b"", 0
        while connection.jobs:  # read, never started: nothing will answer them
            self._release(connection.jobs.popleft().charged, answered=connection)

    # -- answering (any channel thread, and the event loop) -------------------------------

    def _answer(self, job: _Job) -> None:
        """Check and run one request; a loop tool is handed to the event loop."""
        connection, charged = job.connection, job.charged
        request_id = None
        try:
            checked = job.checked if job.checked is not None else self.host.check(job.line)
            job.line = bytearray()  # the parsed request holds what is needed
            job.checked = None
            if isinstance(checked, dict):
                return self._finish(connection, checked, charged)
            request_id, tool, args, budget = checked
            result = call_tool_blocking(tool, args, budget.context)
            if result is not None:
                return self._finish(connection, {"id": request_id, "result": result}, charged)
            if self.loop is None or self._closed:
                raise RuntimeError("the tool channel is closing")
            future = asyncio.run_coroutine_threadsafe(call_tool(tool, args, budget.context), self.loop)
        except Exception as exc:  # never let a request take the host down
            log_failure("a tool request failed", exc)
            return self._finish(connection, error_reply(request_id, f"internal error: {exc}"), charged)
        self._pending.add(future)
        future.add_done_callback(functools.partial(self._loop_done, connection, request_id, tool, charged))
        budget.track(future)

    def _loop_done(self, connection: _Connection, request_id: Any, tool: str, charged: int,
                   finished: concurrent.futures.Future[Any]) -> None:
        """Reply for a tool that ran on the event loop (runs on the loop: never blocks)."""
        self._pending.discard(finished)
        if finished.cancelled():
            reply = error_reply(request_id, f"{tool}: cancelled (the script's execution ended)")
        elif finished.exception() is not None:
            reply = error_reply(request_id, f"{tool} failed: {finished.exception()}")
        else:
            reply = {"id": request_id, "result": finished.result()}
        self._finish(connection, reply, charged)

    def _finish(self, connection: _Connection, reply: dict[str, Any], charged: int) -> None:
        try:
            data = _line(reply)
        except (TypeError, ValueError) as exc:
            data = _line(error_reply(reply.get("id"), f"internal error: the reply is not JSON: {exc}"))
        self._release(charged, answered=connection)
        self._send(connection, data)

    def _send(self, connection: _Connection, data: bytes) -> None:
        """Send now what the socket takes; the rest waits for the leading thread."""
        with connection.lock:
            if connection.closed:
                return
            view = memoryview(data)
            if not connection.out:
                try:
                    view = view[connection.sock.send(view):]
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    connection.broken = True
                    view = view[:0]
            if view:
                connection.out.append(view)
                connection.out_bytes += len(view)
            wake = bool(view) or connection.broken
        if wake:
            self._wake()

    def _flush(self, connection: _Connection) -> None:
        """Send queued replies as far as the socket takes them."""
        with connection.lock:
            while connection.out and not connection.closed:
                view = connection.out[0]
                try:
                    sent = connection.sock.send(view)
                except (BlockingIOError, InterruptedError):
                    return
                except OSError:
                    connection.broken = True
                    return
                connection.out_bytes -= sent
                if sent < len(view):
                    connection.out[0] = view[sent:]
                    return
                connection.out.popleft()

    # -- closing --------------------------------------------------------------------------

    def _teardown(self) -> None:
        """Close every connection and the listener. Called holding the lead (or before any thread)."""
        for connection in list(self._connections.values()):
            self._drop(connection)
        self._ready.clear()
        for name in ("_listener", "_wake_r", "_wake_w", "_connector", "child_connector"):
            sock = getattr(self, name)
            setattr(self, name, None)
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.close()
        close_fd(self.token_fd)
        self.token_fd = None
        selector, self._selector = self._selector, None
        if selector is not None:
            with contextlib.suppress(OSError):
                selector.close()

    def _answer_leading(self, job: _Job) -> bool:
        """Answer ``job`` while leading; False when the channel closed meanwhile (torn down
        here, by the thread that holds the lead: a file tool can run for minutes on a huge
        file, and the close does not wait for it)."""
        with self._lock:
            self._answering_leading = True
        try:
            self._answer(job)
        finally:
            with self._lock:
                self._answering_leading = False
                owed, self._teardown_owed = self._teardown_owed, False
        if owed:
            self._teardown()
            return False
        return True

    def _take_lead_and_teardown(self) -> None:
        with self._lock:
            if self._answering_leading:  # it tears down once its answer is done
                self._teardown_owed = True
                return
        # The thread leading lets go as soon as it is woken; the others answer outside the lead.
        got = self._lead.acquire(timeout=5)
        try:
            self._teardown()
        finally:
            if got:
                self._lead.release()

    def cancel_calls(self, budget: ExecBudget) -> int:
        """End the calls of an execution that has ended (see :meth:`ExecBudget.cancel_calls`)."""
        return budget.cancel_calls()

    async def close(self) -> None:
        """Stop serving and cancel requests in flight (their commands are ended)."""
        self._closed = True
        for future in list(self._pending):
            future.cancel()
        self._wake()
        await asyncio.to_thread(self._take_lead_and_teardown)


def _runs_on_a_thread(checked: Any) -> bool:
    """Whether a checked request runs a file tool on the channel's thread (else it is quick)."""
    if isinstance(checked, dict):
        return False
    tool = get_tool(checked[1])
    return tool is not None and tool.blocking is not None


def _say_and_close(sock: socket.socket, error: str) -> None:
    """Tell a connection we will not serve why (if its buffer takes it), then close it."""
    with contextlib.suppress(OSError):
        sock.send(_line(error_reply(None, error)))
    with contextlib.suppress(OSError):
        sock.close()
