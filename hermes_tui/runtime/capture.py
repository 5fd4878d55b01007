"""Streaming head/tail capture of a script's output, with a spill file for the full text.

Memory stays flat however much a script prints: at most ``head + tail`` bytes are held (plus
one read chunk). When output passes ``head + tail`` bytes, everything so far and everything
after goes to the spill file, byte for byte, so the full text is never lost.

In a flood the reader (:class:`~hermes_tui.runtime.process.Pump`) reads into a few reused
buffers (:class:`ReadBuffers`) instead of a new 1 MiB ``bytes`` per read (an allocation and
page faults per MiB: most of the host's time in a flood). A buffer is lent to the spill
writer, which writes it from where it was read (no copy) and hands it back once written.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import queue
import threading
from dataclasses import dataclass
from pathlib import Path

STDOUT_HEAD = 20_000
STDOUT_TAIL = 30_000
STDERR_HEAD = 2_000
STDERR_TAIL = 8_000

STDOUT_MARKER = "\n\n... [OUTPUT TRUNCATED - {omitted} bytes omitted out of {total} total] ...\n\n"
STDERR_MARKER = "\n... [STDERR TRUNCATED - {omitted} bytes omitted out of {total} total] ...\n"


@dataclass(frozen=True, slots=True)
class Captured:
    """What one stream produced, capped for the result."""

    text: str
    """Head and tail decoded as UTF-8, with the truncation marker between them when cut."""
    total_bytes: int
    truncated: bool
    spill_path: Path | None = None
    """The full output, when it was cut and could be saved."""
    spill_error: str | None = None
    """Why the full output could not be saved, if it could not."""


class HeadTailCapture:
    """Keeps the first ``head`` and the last ``tail`` bytes of a stream.

    Not thread-safe: one reader feeds it. With ``spill_path`` set, the whole stream is
    written there once it exceeds ``head + tail`` bytes (and not otherwise).
    """

    def __init__(
        self,
        head: int = STDOUT_HEAD,
        tail: int = STDOUT_TAIL,
        spill_path: Path | None = None,
        marker: str = STDOUT_MARKER,
    ) -> None:
        self.head_limit = head
        self.tail_limit = tail
        self.marker = marker
        self.spill_path = spill_path
        self.total = 0
        # Until the limit is passed, `start` holds everything; after, only the head.
        self._start = bytearray()
        self._tail = bytearray()
        self._spill: SpillWriter | None = None

    @property
    def truncated(self) -> bool:
        """True once more than ``head + tail`` bytes have been fed."""
        return self.total > self.head_limit + self.tail_limit

    def feed(self, data: bytes | bytearray | memoryview, lease: Lease | None = None) -> None:
        """Add the next bytes of the stream.

        ``lease``: ``data`` lies in a reused read buffer; the spill writer holds it (instead
        of copying ``data``) until written. Without one, bytes that must outlive the call are
        copied."""
        if not data:
            return
        limit = self.head_limit + self.tail_limit
        was_truncated = self.truncated
        self.total += len(data)
        if not was_truncated:
            self._start += data
            if self.total <= limit:
                return
            # Just passed the limit: keep the head, move the rest to the tail, start spilling.
            if self.spill_path is not None:
                self._spill = SpillWriter(self.spill_path)
                self._spill.write(bytes(self._start))
            self._tail = self._start[self.head_limit:]
            del self._start[self.head_limit:]
        else:
            if self._spill is not None:
                self._spill.write(data, lease)
            if len(data) >= self.tail_limit:
                self._tail = bytearray(data[len(data) - self.tail_limit:])  # (not [-0:] for tail 0)
                return
            self._tail += data
        if len(self._tail) > self.tail_limit:
            del self._tail[: len(self._tail) - self.tail_limit]

    def finish(self) -> Captured:
        """Close the spill file and return the capped text."""
        spill = spill_error = None
        if self._spill is not None:
            spill_error = self._spill.close()
            spill = self.spill_path if spill_error is None else None
        if not self.truncated:
            return Captured(self._start.decode("utf-8", "replace"), self.total, False)
        head = _trim_incomplete_end(bytes(self._start))
        tail = _trim_partial_start(bytes(self._tail))
        omitted = self.total - len(head) - len(tail)
        text = (
            head.decode("utf-8", "replace")
            + self.marker.format(omitted=omitted, total=self.total)
            + tail.decode("utf-8", "replace")
        )
        return Captured(text, self.total, True, spill, spill_error)


class SpillWriter:
    """Writes a stream's bytes to a file on its own thread, so reading never waits on disk.

    At most ``depth`` chunks wait in memory; past that :meth:`write` blocks (backpressure on
    the reader, never unbounded memory). A failure (disk full...) stops writing, removes the
    incomplete file and is reported by :meth:`close`.
    """

    def __init__(self, path: Path, depth: int = 4) -> None:
        self.path = path
        self.part = partial_path(path)
        """Where the bytes go until the stream ends: a crash leaves only a ``.part`` file, held
        (``flock``) while it is written, so the next start can tell it is abandoned."""
        self.error: str | None = None
        self._queue: queue.Queue[bytes | tuple[bytes | bytearray | memoryview, Lease] | None] = \
            queue.Queue(maxsize=depth)
        self._thread = threading.Thread(target=self._run, name="hermes-spill", daemon=True)
        self._thread.start()

    def write(self, data: bytes | bytearray | memoryview, lease: Lease | None = None) -> None:
        """Queue ``data`` for the file. It is copied unless it is ``bytes`` or ``lease`` is
        given: then the lease is held until ``data`` is written (or dropped)."""
        if self.error is not None:
            return
        if lease is None:
            if type(data) is not bytes:
                data = bytes(data)
            self._queue.put(data)
            return
        lease.hold()
        self._queue.put((data, lease))

    def close(self) -> str | None:
        """Finish writing; returns why the file is incomplete, or None when it is whole."""
        self._queue.put(None)
        self._thread.join()
        return self.error

    def _run(self) -> None:
        fd = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            self.error = f"cannot create {self.path}: {exc.strerror or exc}"
        while (item := self._queue.get()) is not None:
            data, lease = item if type(item) is tuple else (item, None)
            try:
                if fd is None:
                    continue  # keep draining so the reader never blocks
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            except OSError as exc:
                self.error = f"writing {self.path} failed: {exc.strerror or exc}"
                self._discard(fd)
                fd = None
            finally:
                del data, item
                if lease is not None:
                    lease.release()
        if fd is not None:
            try:
                os.rename(self.part, self.path)  # whole: under its name (still held, then closed)
                os.close(fd)
            except OSError as exc:
                self.error = f"closing {self.path} failed: {exc.strerror or exc}"
                self._discard(fd)

    def _discard(self, fd: int | None) -> None:
        """Close and remove an incomplete file: no result points to it, and on a full disk its
        space is better given back. Never raises (the queue must keep draining)."""
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
        for path in (self.part, self.path):
            with contextlib.suppress(OSError):
                os.unlink(path)


class Lease:
    """One reusable read buffer, and who still needs it: the reader while it handles the
    bytes read, a spill writer until it has written them. Back in its pool at zero holds."""

    __slots__ = ("buffer", "holds", "_pool")

    def __init__(self, pool: ReadBuffers, size: int) -> None:
        self.buffer = bytearray(size)
        self.holds = 0
        self._pool = pool

    def hold(self) -> None:
        with self._pool._cond:
            self.holds += 1

    def release(self) -> None:
        pool = self._pool
        with pool._cond:
            self.holds -= 1
            if self.holds == 0:
                pool._free.append(self)
                pool._cond.notify()


class ReadBuffers:
    """At most ``count`` buffers of ``size`` bytes, reused read after read.

    :meth:`take` waits while all of them are lent to spill writers: a disk slower than the
    script holds the reader back (and, through the pipe, the script), never host memory.
    """

    def __init__(self, size: int, count: int = 6) -> None:
        self.size = size
        self.count = count
        self._cond = threading.Condition()
        self._free: list[Lease] = []
        self._made = 0

    def take(self) -> Lease:
        """A free buffer, held once by the caller (who calls ``release`` when done with it)."""
        with self._cond:
            while not self._free and self._made >= self.count:
                self._cond.wait()
            if self._free:
                lease = self._free.pop()
            else:
                self._made += 1
                lease = Lease(self, self.size)
            lease.holds = 1
            return lease

    def trim(self) -> None:
        """Give back the memory of the buffers not in use (the flood is over)."""
        with self._cond:
            self._made -= len(self._free)
            self._free.clear()


def partial_path(path: Path) -> Path:
    """``.NAME.part`` beside ``path``: a spill while it is written."""
    path = Path(path)
    return path.with_name(f".{path.name}.part")


def _trim_incomplete_end(data: bytes) -> bytes:
    """Drop a UTF-8 sequence cut off at the end (at most 3 bytes)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return data
        if byte >= 0xC0:  # a lead byte: is its sequence complete?
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return data if back >= need else data[:-back]
    return data


def _trim_partial_start(data: bytes) -> bytes:
    """Drop UTF-8 continuation bytes at the start (at most 3)."""
    skip = 0
    while skip < min(3, len(data)) and 0x80 <= data[skip] < 0xC0:
        skip += 1
    return data[skip:]
