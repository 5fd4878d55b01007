"""Opening a file for a tool that runs inside the host: regular files only, never a process's.

The file tools run in the host's process, which holds the keys (and, as root, may hold every
capability). Whatever they open is judged on the open descriptor, after the open: a script can
swap a folder for a symlink between any earlier check and the open.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path
from collections.abc import Iterator
from typing import BinaryIO

from hermes_tui.base import fsutil
_PROCESS_FILE = re.compile(r"/proc/(\d+|self|thread-self|kcore|kmsg|kpage\w*)(/|$)")


_PROC_DEVICE: list[int] = []


def _proc_device() -> int | None:
    """The device of ``/proc`` (looked up once: a stat less per file opened, issue 38)."""
    if not _PROC_DEVICE:
        try:
            _PROC_DEVICE.append(os.stat("/proc/self").st_dev)
        except OSError:
            return None
    return _PROC_DEVICE[0]


def _refuse_process_files(fd: int) -> None:
    """Refuse a file under ``/proc/<pid>/`` (or kernel memory) once it is OPEN.

    These tools run inside the host, which holds the keys and may hold every capability:
    the host's own ``environ``, its threads' and every other process's are readable from here.
    Judging the path before opening is not enough (a script can swap a folder for a symlink
    to ``/proc/self`` in between), so the check is on what the descriptor really is."""
    proc = _proc_device()
    if proc is None:
        return  # no /proc here
    try:
        if os.fstat(fd).st_dev != proc:
            return
    except OSError:
        return
    try:
        real = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        real = "/proc/?"
    _refuse_process_path(real)


def _refuse_process_path(real: str) -> None:
    """Raise PermissionError when ``real`` (a file on ``/proc``, as its descriptor names it) is
    a process's own or kernel memory."""
    if _PROCESS_FILE.match(real):
        raise PermissionError(errno.EACCES, "a process's files under /proc (and kernel memory) are not read by "
                                            "the file tools; the host's secrets are there. Read what your own "
                                            "process may see from the script itself")


def open_regular(path: Path) -> BinaryIO:
    """``path`` opened for binary reading. Raises OSError, at once, for anything but a regular
    file (reading a FIFO or a device could wait forever, or read the terminal you type in) and
    for a process's files under /proc."""
    try:
        fd = fsutil.open_regular(path)
    except fsutil.FileRefused:
        if os.path.isdir(path):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path)) from None
        raise
    try:
        _refuse_process_files(fd)
        fsutil.judge(fsutil.READ_GUARD, os.readlink(f"/proc/self/fd/{fd}"), path)  # the file really opened
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class Pinned:
    """A regular file held by an ``O_PATH`` descriptor, which opens nothing for reading: its real
    path and status come from that descriptor, so every check made on them is about the very
    file :meth:`open` then opens (one look-up for the checks and the read, issue 38)."""

    __slots__ = ("fd", "real", "status")

    def __init__(self, fd: int, real: str, status: os.stat_result) -> None:
        self.fd = fd
        self.real = real
        """Its path with every symbolic link followed (what ``/proc/self/fd`` names)."""
        self.status = status

    def __enter__(self) -> Pinned:
        return self

    def __exit__(self, *_: object) -> None:
        os.close(self.fd)

    def open(self, shown: Path) -> int:
        """A read-only descriptor of the pinned file; raises OSError for a process's files under
        ``/proc`` and for what the sandbox's read guard refuses, as :func:`open_regular` does."""
        if self.status.st_dev == _proc_device():
            _refuse_process_path(self.real)
        fsutil.judge(fsutil.READ_GUARD, self.real, shown)
        return fsutil.reopen(self.fd)


def pin_regular(path: Path) -> Pinned | None:
    """``path``'s regular file, pinned (see :class:`Pinned`); None when it cannot be: not there,
    not a regular file, deleted, or no ``/proc`` to name it. The caller then takes the long
    way (:func:`open_regular`), which says why."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    try:
        status = os.fstat(fd)
        real = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        os.close(fd)
        return None
    if not stat.S_ISREG(status.st_mode) or not real.startswith("/") or real.endswith(" (deleted)"):
        os.close(fd)
        return None
    return Pinned(fd, real, status)


def bounded_lines(handle: BinaryIO, keep: int) -> Iterator[tuple[bytes, int]]:
    """Each line of ``handle`` as (its first ``keep`` bytes at most, its whole size in bytes).

    Memory holds ``keep`` bytes of a line, however long it is: a 600 MB one-line JSON dump
    is skipped through in chunks, never read whole into the host."""
    while line := handle.readline(keep + 1):
        if len(line) <= keep:
            yield line, len(line)
            continue
        size, rest = len(line), line
        while not rest.endswith(b"\n") and (rest := handle.readline(1 << 16)):
            size += len(rest)
        yield line[:keep], size
