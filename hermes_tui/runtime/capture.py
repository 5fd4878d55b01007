"""Streaming head/tail capture of a script's output, with a spill file for the full text.

Memory stays flat however much a script prints: at most ``head + tail`` bytes are held (plus
one read chunk). When output passes ``head + tail`` bytes, everything so far and everything
after goes to the spill file, byte for byte, so the full text is never lost.

In a flood the reader (:class:`~hermes_tui.runtime.process.Pump`) reads into a few reused
buffers (:class:`ReadBuffers`) instead of a new 1 MiB ``bytes`` per read (an allocation and
page faults per MiB: most of the host's time in a flood). A buffer is lent to the spill
writer, which writes it from where it was read (no copy) and hands it back once written.

The spill file has a disk bound (issue 31: a flood wrote 4.4 GB in 15 s): at most
``code_execution.max_spill_bytes`` per run, and no more than keeps the whole cache folder under
``code_execution.max_cache_bytes`` (:class:`SpillLimits`). Past either, the file keeps the bytes
written so far and ends with a note saying where and why it stops; the capture says so too
(:attr:`Captured.spill_cut`), and the result's tail still has the stream's last bytes. Further
bytes are dropped as they are read (memory stays bounded, the reader is never slowed by the
disk again). A cache already full when a spill would start saves none (:attr:`Captured.spill_error`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import queue
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_tui.base.units import human_size

STDOUT_HEAD = 20_000
STDOUT_TAIL = 30_000
STDERR_HEAD = 2_000
STDERR_TAIL = 8_000

STDOUT_MARKER = "\n\n... [OUTPUT TRUNCATED - {omitted} bytes omitted out of {total} total] ...\n\n"
STDERR_MARKER = "\n... [STDERR TRUNCATED - {omitted} bytes omitted out of {total} total] ...\n"
SPILL_CUT_NOTE = ("\n\n... [FULL OUTPUT NOT SAVED PAST THIS POINT - {why}; this file holds the first {kept} bytes "
                  "of {total} in all; the last bytes are at the end of the execution's result] ...\n")
"""Written at the end of a spill file that stopped short (after the bytes it kept)."""
RESCAN_BYTES = 64 << 20
"""A spill measures the cache folder again after this many bytes: spills written at the same
time (by this host or another) overshoot ``max_cache_bytes`` by at most this much each."""


@dataclass(frozen=True, slots=True)
class SpillLimits:
    """How much of the disk spill files may take (``None``: no bound)."""

    per_run: int | None = None
    """``code_execution.max_spill_bytes``: the bytes one run's spill file keeps at most."""
    cache: int | None = None
    """``code_execution.max_cache_bytes``: a spill stops when the cache folder (its records and
    spills, Hermes Agent's files too) would grow past this many bytes."""

    @classmethod
    def of(cls, settings: Any) -> SpillLimits:
        """The limits a ``code_execution`` config section sets."""
        return cls(getattr(settings, "max_spill_bytes", None), getattr(settings, "max_cache_bytes", None))


def folder_bytes(folder: Path, leave_out: Path | None = None) -> int:
    """The bytes the regular files directly in ``folder`` take (``leave_out`` not counted)."""
    total = 0
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    if entry.is_file(follow_symlinks=False) and entry.path != str(leave_out):
                        total += entry.stat(follow_symlinks=False).st_size
                except OSError:
                    continue  # gone since the listing
    except OSError:
        return 0
    return total


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
    spill_cut: str | None = None
    """Why the spill file stops short of the full output (a disk bound was reached), if it does."""
    spill_bytes: int = 0
    """Bytes of the stream the spill file holds (all of them unless ``spill_cut``)."""


def spill_cut_warning(captured: Captured) -> str:
    """What a result says of a spill file that stops short: how much it holds, where it stops,
    why, and where the rest of the output is."""
    omitted = captured.total_bytes - captured.spill_bytes
    return (f"The full output was saved only in part: {captured.spill_path} holds its first "
            f"{captured.spill_bytes:,} bytes of {captured.total_bytes:,} and then stops ({captured.spill_cut}); "
            f"the {omitted:,} bytes after that point were not saved, except the last ones at the end of this output.")


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
        spill_limits: SpillLimits | None = None,
    ) -> None:
        self.head_limit = head
        self.tail_limit = tail
        self.marker = marker
        self.spill_path = spill_path
        self.spill_limits = spill_limits or SpillLimits()
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
                self._spill = SpillWriter(self.spill_path, limits=self.spill_limits)
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
        spill = spill_error = spill_cut = None
        spill_bytes = 0
        if self._spill is not None:
            spill_error = self._spill.close(self.total)
            spill = self.spill_path if spill_error is None else None
            spill_cut, spill_bytes = self._spill.cut, self._spill.written
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
        return Captured(text, self.total, True, spill, spill_error, spill_cut if spill else None, spill_bytes)


class SpillWriter:
    """Writes a stream's bytes to a file on its own thread, so reading never waits on disk.

    At most ``depth`` chunks wait in memory; past that :meth:`write` blocks (backpressure on
    the reader, never unbounded memory). A failure (disk full...) stops writing, removes the
    incomplete file and is reported by :meth:`close`. Past its ``limits`` it stops writing too,
    keeps what it wrote and says why (:attr:`cut`); what comes after is dropped unqueued.
    """

    def __init__(self, path: Path, depth: int = 4, limits: SpillLimits | None = None) -> None:
        self.path = path
        self.part = partial_path(path)
        """Where the bytes go until the stream ends: a crash leaves only a ``.part`` file, held
        (``flock``) while it is written, so the next start can tell it is abandoned."""
        self.error: str | None = None
        self.limits = limits or SpillLimits()
        self.written = 0
        """Bytes written to the file."""
        self.cut: str | None = None
        """Why the file stops short of the stream (set once, by the writer's thread)."""
        self._room = 0
        """Bytes the file may still take before the next look at the limits (:meth:`_look`) ..."""
        self._final = False
        """... and whether that look found a limit within them (``_why``)."""
        self._why = ""
        self._granted = 0
        self._queue: queue.Queue[bytes | tuple[bytes | bytearray | memoryview, Lease] | None] = \
            queue.Queue(maxsize=depth)
        self._thread = threading.Thread(target=self._run, name="hermes-spill", daemon=True)
        self._thread.start()

    def write(self, data: bytes | bytearray | memoryview, lease: Lease | None = None) -> None:
        """Queue ``data`` for the file. It is copied unless it is ``bytes`` or ``lease`` is
        given: then the lease is held until ``data`` is written (or dropped)."""
        if self.error is not None or self.cut is not None:
            return  # nothing more is written: drop it here, unqueued (and the lease is not held)
        if lease is None:
            if type(data) is not bytes:
                data = bytes(data)
            self._queue.put(data)
            return
        lease.hold()
        self._queue.put((data, lease))

    def close(self, total: int | None = None) -> str | None:
        """Finish writing; returns why there is no file (None when there is one: whole, or cut
        short with :attr:`cut` saying why). ``total``: the stream's length, for the note that
        ends a cut file."""
        self._queue.put(None)
        self._thread.join()
        if self.cut is not None and self.error is None:
            if self.written == 0:  # nothing kept: no file to point to
                self._discard(None)
                self.error = f"not saved: {self.cut}"
            else:
                self._end_note(total)
        return self.error

    def _end_note(self, total: int | None) -> None:
        """Write the note that ends a cut file. A failure leaves the file without it (the
        result still says it was cut)."""
        note = SPILL_CUT_NOTE.format(why=self.cut, kept=f"{self.written:,}",
                                     total=f"{total:,}" if total is not None else "more")
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return
        try:
            os.write(fd, note.encode())
        except OSError:
            pass
        finally:
            os.close(fd)

    def _allowed(self, size: int) -> int:
        """How many of the next ``size`` bytes may be written; sets :attr:`cut` when not all."""
        granted = 0
        while size > 0:
            if self._room == 0:
                if self._final:
                    self.cut = self._why
                    return granted
                self._look()
                continue
            take = min(size, self._room)
            self._room -= take
            self._granted += take
            granted += take
            size -= take
        return granted

    def _look(self) -> None:
        """Measure the room left under the limits (the cache folder is listed: a few ms for
        10,000 files; done once per RESCAN_BYTES written)."""
        limits = self.limits
        room, final, why = 1 << 62, False, ""
        if limits.per_run is not None:
            room, final = limits.per_run - self._granted, True
            why = f"the spill reached code_execution.max_spill_bytes, {_bytes(limits.per_run)}"
        if limits.cache is not None:
            cache_room = limits.cache - folder_bytes(self.path.parent, leave_out=self.part) - self._granted
            if cache_room < room:
                room, final = cache_room, True
                why = (f"the output cache {self.path.parent} is full (code_execution.max_cache_bytes, "
                       f"{_bytes(limits.cache)}): `hermes-tui cache prune` makes room")
            if room > RESCAN_BYTES:  # other spills grow too: look again after this much
                room, final = RESCAN_BYTES, False
        self._room, self._final, self._why = max(0, room), final, why

    def _run(self) -> None:
        fd = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            self.error = f"cannot create {self.path}: {exc.strerror or exc}"
        while (item := self._queue.get()) is not None:
            data, lease = item if isinstance(item, tuple) else (item, None)
            try:
                if fd is None or self.cut is not None:
                    continue  # keep draining so the reader never blocks
                view = memoryview(data)
                if (allowed := self._allowed(len(view))) < len(view):
                    view = view[:allowed]  # a limit is reached: the rest is dropped (cut says why)
                while view:
                    written = os.write(fd, view)
                    self.written += written
                    view = view[written:]
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


def _bytes(count: int) -> str:
    """``1.0 GiB (1,073,741,824 bytes)``: readable, and exact."""
    return f"{human_size(count, ' ')} ({count:,} bytes)" if count >= 1024 else f"{count} bytes"
