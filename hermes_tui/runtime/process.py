"""The reader thread of one child process: output, control replies and the child's death.

One :class:`Pump` per process reads its stdout and stderr pipes (and, for a kernel, its
control pipe) off the event loop, so a flood of output never stalls the app. It feeds the
current execution's :class:`~hermes_tui.runtime.capture.HeadTailCapture` (which writes the
spill file), sends coalesced live output as events, and resolves the execution's future on
the event loop when the execution is over: its end marker seen on both streams and its
``done`` reply read, or the process gone.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import fcntl
import json
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hermes_tui.runtime.capture import Captured, HeadTailCapture, Lease, ReadBuffers
from hermes_tui.runtime.events import ExecOutput, RuntimeEvent

READ_CHUNK = 1 << 20
SMALL_CHUNK = 1 << 16
PIPE_SIZE = 1 << 20
LIVE_INTERVAL = 0.016
"""Seconds live output is coalesced before it becomes an event."""
LIVE_MAX_BYTES = 16 << 10
"""Live bytes one event carries at most; the rest of a burst is counted as skipped."""
LIVE_FLOOD_INTERVAL = 0.1
"""Seconds between live events of a stream in a flood (bytes were dropped since its last
event): a pane shows a bounded tail, so 10 events a second (not 60) are as good to look at and
leave the event loop, and the GIL, to the keys and the reader."""
LIVE_FLOOD_BYTES = 8 << 10
"""Live bytes one event of a flood carries at most (a pane draws about that much per frame)."""
DRAIN_SECONDS = 2.0
"""After the process ends and its group is killed: how long to wait for the pipes to close."""
_STREAMS = ("stdout", "stderr")
_F_SETPIPE_SZ = 1031


MAX_CTRL_LINE = 256 << 20
"""The longest control line held (a remote kernel's file answer: up to 64 MiB in base64); past
it the line is dropped."""


@dataclass(slots=True)
class CellOutcome:
    """How one execution ended, as seen on the process's pipes."""

    stdout: Captured
    stderr: Captured
    reply: dict[str, Any] | None
    """The driver's ``done`` reply, or None when the process ended first."""
    returncode: int | None
    """Set when the process ended before replying."""


class CellCapture:
    """The output of one execution while it runs.

    Args:
        exec_id: the execution's id (for live events).
        marker: the end marker the driver writes on fd 1 and fd 2; None for a standalone
            process, whose execution ends when the process does.
        stdout, stderr: where the bytes go.
        future: resolved with a :class:`CellOutcome` on ``loop``.
    """

    def __init__(
        self,
        exec_id: str,
        marker: bytes | None,
        stdout: HeadTailCapture,
        stderr: HeadTailCapture,
        future: asyncio.Future[CellOutcome],
    ) -> None:
        self.exec_id = exec_id
        self.marker = marker
        self.captures = (stdout, stderr)
        self.future = future
        self.marker_seen = [False, False]
        self.reply: dict[str, Any] | None = None

    def complete(self) -> bool:
        if self.reply is None or self.marker is None:
            return False
        # A stream whose fd the script closed gets no marker: the reply says so.
        written = self.reply.get("markers") or [True, True]
        return all(seen or not wrote for seen, wrote in zip(self.marker_seen, written))


class _Live:
    """Coalesces one stream's bytes into bounded ``ExecOutput`` events."""

    def __init__(self, stream: str) -> None:
        self.stream = stream
        self.pending = bytearray()
        self.skipped = 0
        self.exec_id: str | None = None
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.resync = False
        self.flooding = False
        """Bytes were dropped since the last event: events come every LIVE_FLOOD_INTERVAL."""

    @property
    def interval(self) -> float:
        return LIVE_FLOOD_INTERVAL if self.flooding else LIVE_INTERVAL

    def add(self, exec_id: str | None, data: bytes | memoryview, flush: Callable[[_Live], None]) -> None:
        if exec_id != self.exec_id:
            flush(self)
            self.exec_id = exec_id
            self.decoder.reset()
        cap = LIVE_FLOOD_BYTES if self.flooding else LIVE_MAX_BYTES
        if len(data) >= cap:  # a flood: keep only the newest bytes, copy nothing else
            self.skipped += len(self.pending) + len(data) - cap
            self.pending = bytearray(data[len(data) - cap:])
            self.resync = self.flooding = True
            return
        self.pending += data
        if len(self.pending) > cap:
            cut = len(self.pending) - cap
            self.skipped += cut
            del self.pending[:cut]
            self.resync = self.flooding = True

    def take(self, kernel_id: str | None) -> ExecOutput | None:
        if not self.pending and not self.skipped:
            self.flooding = False
            return None
        self.flooding = self.skipped > 0  # a flood lasts while bytes are dropped between events
        data = bytes(self.pending)
        self.pending.clear()
        if self.resync:  # bytes were dropped: restart decoding at a character boundary
            self.decoder.reset()
            while data and 0x80 <= data[0] < 0xC0:
                data = data[1:]
            self.resync = False
        event = ExecOutput(
            exec_id=self.exec_id,
            kernel_id=kernel_id,
            stream=self.stream,  # type: ignore[arg-type]
            text=self.decoder.decode(data),
            skipped_bytes=self.skipped,
        )
        self.skipped = 0
        return event


class Pump(threading.Thread):
    """Reads one child process until it ends and its pipes close.

    Callbacks run on ``loop``: ``publish(event)`` for live output, ``on_reply(message)`` for
    control replies other than ``done``, ``on_exit(returncode)`` once at the end.
    """

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        *,
        loop: asyncio.AbstractEventLoop,
        kernel_id: str | None,
        ctrl_fd: int | None,
        publish: Callable[[RuntimeEvent], None],
        on_reply: Callable[[dict[str, Any]], None],
        on_exit: Callable[[int | None], None],
        wrapped: bool = False,
    ) -> None:
        super().__init__(name=f"hermes-pump-{kernel_id or proc.pid}", daemon=True)
        self.wrapped = wrapped
        """The process is bubblewrap's monitor: it exits 128+N when the command died of signal N."""
        self.proc = proc
        self.loop = loop
        self.kernel_id = kernel_id
        self.publish = publish
        self.on_reply = on_reply
        self.on_exit = on_exit
        self.terminating = False
        """Set by the host while it terminates the group with a grace period."""
        self.cell: CellCapture | None = None
        self.returncode: int | None = None
        self.finished = False
        self._finish_lock = threading.Lock()
        self.recent_stderr = bytearray()
        """The last stray stderr bytes (for messages when a kernel fails to start)."""
        assert proc.stdout is not None
        # stderr is None when the child's stderr goes into its stdout (terminal commands).
        self._fds = [proc.stdout.fileno()] + ([proc.stderr.fileno()] if proc.stderr is not None else [])
        self._ctrl_fd = ctrl_fd
        self._ctrl_buffer = bytearray()
        self._held = [b"", b""]  # bytes that may be the start of an end marker
        self._live = (_Live("stdout"), _Live("stderr"))
        self._buffers = ReadBuffers(READ_CHUNK)
        """Reused 1 MiB read buffers for a flood (made on its first full read)."""
        self._lease: Lease | None = None
        """The buffer the bytes being handled were read into (None: they are ``bytes``)."""
        self._last_flush = time.monotonic()
        for fd in self._fds:
            with contextlib.suppress(OSError):
                # Bigger pipes: fewer wake-ups in a flood.
                fcntl.fcntl(fd, _F_SETPIPE_SZ, PIPE_SIZE)

    # -- called on the loop's thread ------------------------------------------------------

    def begin_cell(self, cell: CellCapture) -> None:
        """Credit output from now on to ``cell`` (resolved at once if the process is gone)."""
        with self._finish_lock:
            if not self.finished:
                self.cell = cell
                return
        self._resolve(cell, self.returncode)

    # -- the thread -----------------------------------------------------------------------

    def run(self) -> None:
        selector = selectors.DefaultSelector()
        pidfd = None
        try:
            pidfd = os.pidfd_open(self.proc.pid)
            selector.register(pidfd, selectors.EVENT_READ, "exit")
        except (AttributeError, OSError):
            pidfd = None  # no pidfd: poll the process instead
        for index, fd in enumerate(self._fds):
            selector.register(fd, selectors.EVENT_READ, index)
        if self._ctrl_fd is not None:
            selector.register(self._ctrl_fd, selectors.EVENT_READ, "ctrl")
        open_streams = len(self._fds)
        chunk: dict[int, int] = {}
        drain_deadline: float | None = None
        data: bytes | memoryview  # a view of a lent buffer in a flood (below)
        try:
            while True:
                if self.returncode is None and pidfd is None and self.proc.poll() is not None:
                    drain_deadline = self._exited()
                if self.returncode is not None:
                    if open_streams == 0 or (drain_deadline is not None and time.monotonic() > drain_deadline):
                        break
                    if self.terminating:
                        # The host sends SIGKILL after its grace: wait for it, then drain.
                        drain_deadline = time.monotonic() + DRAIN_SECONDS
                timeout = self._select_timeout(pidfd is None, drain_deadline)
                for key, _ in selector.select(timeout):
                    if key.data == "exit":
                        selector.unregister(key.fd)
                        drain_deadline = self._exited()
                        continue
                    if key.data == "ctrl":
                        try:
                            data = os.read(key.fd, SMALL_CHUNK)
                        except BlockingIOError:
                            continue
                        except OSError:
                            data = b""
                        if data:
                            self._on_ctrl(data)
                        else:
                            selector.unregister(key.fd)
                        continue
                    # Small reads while output trickles; once a read comes back full, a flood:
                    # 1 MiB reads into reused buffers (a new 1 MiB bytes per read costs an
                    # allocation and page faults per MiB: most of the host's time in a flood),
                    # lent to the spill writer uncopied.
                    size = chunk.get(key.fd, SMALL_CHUNK)
                    lease = self._buffers.take() if size == READ_CHUNK else None
                    try:
                        if lease is None:
                            data = os.read(key.fd, size)
                            count = len(data)
                        else:
                            count = os.readv(key.fd, [lease.buffer])
                            data = memoryview(lease.buffer)[:count]
                    except BlockingIOError:
                        if lease is not None:
                            lease.release()
                        continue
                    except OSError:
                        data, count = b"", 0
                    # Big reads from a full small one on, until a read would have fit a small one.
                    chunk[key.fd] = READ_CHUNK if count == size or count > SMALL_CHUNK else SMALL_CHUNK
                    if count:
                        self._lease = lease
                        try:
                            self._on_stream(key.data, data)
                        finally:
                            self._lease = None
                    else:
                        selector.unregister(key.fd)
                        open_streams -= 1
                    if lease is not None:
                        del data
                        lease.release()
                if time.monotonic() - self._last_flush >= self._live_interval():
                    self._flush_live()
        except Exception as exc:  # never let the reader die silently: end the cell with it
            self._post(self._deliver_failure, exc)
        finally:
            selector.close()
            if pidfd is not None:
                os.close(pidfd)
            if self.returncode is None:
                self.returncode = self._code(self.proc.wait())
            self._finish()

    def _select_timeout(self, polling: bool, deadline: float | None) -> float | None:
        timeouts = []
        if any(live.pending or live.skipped for live in self._live):
            timeouts.append(max(0.0, self._last_flush + self._live_interval() - time.monotonic()))
        if polling:
            timeouts.append(0.05)
        if deadline is not None:
            timeouts.append(max(0.0, deadline - time.monotonic()))
        elif self.returncode is not None:
            timeouts.append(0.05)
        return min(timeouts) if timeouts else None

    def _live_interval(self) -> float:
        """Seconds between live flushes: longer while a stream floods."""
        return max(live.interval for live in self._live)

    def _code(self, returncode: int) -> int:
        """The command's exit as Popen says it (-N: killed by signal N), through bwrap too."""
        if self.wrapped and 128 < returncode <= 128 + 64:
            return -(returncode - 128)
        return returncode

    def _exited(self) -> float:
        self.returncode = self._code(self.proc.wait())
        if not self.terminating:
            # The kernel is gone: so is anything it left in its process group.
            kill_group(self.proc.pid, signal.SIGKILL)
        return time.monotonic() + DRAIN_SECONDS

    def _on_ctrl(self, data: bytes) -> None:
        searched = len(self._ctrl_buffer)  # no newline before: only what came is searched
        self._ctrl_buffer += data
        while True:
            end = self._ctrl_buffer.find(b"\n", searched)
            if end < 0:
                if len(self._ctrl_buffer) > MAX_CTRL_LINE:  # not a reply of ours: dropped, never held
                    self._ctrl_buffer.clear()
                return
            searched = 0
            line = bytes(self._ctrl_buffer[:end])
            del self._ctrl_buffer[: end + 1]
            try:
                message = json.loads(line)
            except ValueError:
                continue
            cell = self.cell
            if message.get("op") == "done" and cell is not None and cell.reply is None:
                cell.reply = message
                self._maybe_complete(cell)
            else:
                self._post(self.on_reply, message)

    def _on_stream(self, index: int, data: bytes | memoryview) -> None:
        cell = self.cell
        if cell is None or cell.marker_seen[index] or cell.future.done():
            self._stray(index, data)
            return
        if cell.marker is None:
            self._credit(cell, index, data)
            return
        held = self._held[index]
        if held:  # (rare: the last read ended with what may be the start of the marker)
            buffer: bytes | memoryview = held + data
            self._lease = None  # a copy now: nothing in it is lent
        else:
            buffer = data
        marker = cell.marker
        position = _find(buffer, marker)
        if position >= 0:
            self._held[index] = b""
            self._credit(cell, index, buffer[:position])
            cell.marker_seen[index] = True
            rest = buffer[position + len(marker):]
            if rest:
                self._stray(index, rest)
            self._maybe_complete(cell)
            return
        keep = _marker_prefix_length(buffer, marker)
        self._held[index] = bytes(buffer[len(buffer) - keep:]) if keep else b""
        self._credit(cell, index, buffer[: len(buffer) - keep] if keep else buffer)

    def _credit(self, cell: CellCapture, index: int, data: bytes | memoryview) -> None:
        if data:
            cell.captures[index].feed(data, self._lease)
            self._live[index].add(cell.exec_id, data, self._flush_one)

    def _stray(self, index: int, data: bytes | memoryview) -> None:
        self._live[index].add(None, data, self._flush_one)
        if index == 1:
            self.recent_stderr += data
            del self.recent_stderr[:-4096]

    def _maybe_complete(self, cell: CellCapture) -> None:
        if cell.complete():
            self._resolve(cell, None)

    def _resolve(self, cell: CellCapture, returncode: int | None) -> None:
        for index in (0, 1):
            if self._held[index]:
                cell.captures[index].feed(self._held[index])
                self._held[index] = b""
        self._flush_live()
        outcome = CellOutcome(
            stdout=cell.captures[0].finish(),
            stderr=cell.captures[1].finish(),
            reply=cell.reply,
            returncode=returncode,
        )
        if self.cell is cell:
            self.cell = None
        self._buffers.trim()  # the spill is closed: no buffer is lent any more
        self._post(_set_result, cell.future, outcome)

    def _finish(self) -> None:
        with self._finish_lock:
            self.finished = True
            cell = self.cell
        if cell is not None:
            self._resolve(cell, self.returncode)
        self._flush_live()
        # Close through the file objects (never by number: a number may be reused at once).
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if self._ctrl_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._ctrl_fd)
            self._ctrl_fd = None
        self._post(self.on_exit, self.returncode)

    def _deliver_failure(self, exc: Exception) -> None:
        cell = self.cell
        if cell is not None and not cell.future.done():
            cell.future.set_exception(exc)

    def _flush_one(self, live: _Live) -> None:
        event = live.take(self.kernel_id)
        if event is not None:
            self._post(self.publish, event)

    def _flush_live(self) -> None:
        self._last_flush = time.monotonic()
        for live in self._live:
            self._flush_one(live)

    def _post(self, callback: Callable[..., Any], *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is listening
            self.loop.call_soon_threadsafe(callback, *args)


def _set_result(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _find(buffer: bytes | memoryview, sub: bytes, start: int = 0) -> int:
    """``buffer.find(sub, start)``, also for a view of a read buffer (which has no ``find``:
    it is always ``memoryview(bytearray)[:count]``, so it is searched in place)."""
    if isinstance(buffer, memoryview):
        base = buffer.obj
        assert isinstance(base, bytearray) and len(buffer) <= len(base)
        return base.find(sub, start, len(buffer))
    return buffer.find(sub, start)


def _marker_prefix_length(buffer: bytes | memoryview, marker: bytes) -> int:
    """Length of the longest end of ``buffer`` that is a proper start of ``marker``."""
    start = max(0, len(buffer) - len(marker) + 1)
    first = marker[:1]
    position = _find(buffer, first, start)
    while position >= 0:
        if marker.startswith(buffer[position:]):
            return len(buffer) - position
        position = _find(buffer, first, position + 1)
    return 0


def kill_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to process group ``pgid``; False if it no longer exists."""
    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return False


def group_alive(pgid: int) -> bool:
    """True while any process of group ``pgid`` is still running.

    Zombies don't count: an orphan that has exited but not yet been reaped by init (slow in
    some containers) runs nothing.
    """
    if not kill_group(pgid, 0):
        return False
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # Fields after the command (which may hold spaces): state, ppid, pgrp, ...
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False
