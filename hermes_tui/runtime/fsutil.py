"""Small file helpers shared by the runtime's modules, the config and the commands.

Imports nothing from the project; ``hermes_tui.config`` imports it lazily (this package's
``__init__`` imports the runtime, which imports the config).
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

from hermes_tui.units import plural

_UMASK = os.umask(0o022)
os.umask(_UMASK)


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> bool:
    """Write ``data`` to ``path`` via a temp file in the same dir and a rename. Blocking.

    Readers never see a half-written file. Parent dirs are made. The file gets ``mode`` if
    given, else keeps an existing file's mode, else the usual ``0666 & ~umask``. Returns True
    when the file was created.
    """
    try:
        existing = stat.S_IMODE(path.stat().st_mode)
        created = False
    except FileNotFoundError:
        existing = 0o666 & ~_UMASK
        created = True
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(temp, existing if mode is None else mode)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    return created


class FileRefused(OSError):
    """A file hermes-tui will not read: not a regular file, or bigger than allowed.

    An ``OSError`` (``errno.EINVAL``, ``filename`` set), so callers that already turn OS errors
    into a message handle it; ``strerror`` reads on its own ("it is a FIFO (named pipe), not a
    regular file") and ``str()`` names the file first.
    """

    def __init__(self, path: Path | str, problem: str) -> None:
        super().__init__(errno.EINVAL, problem, str(path))

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def file_kind(mode: int) -> str:
    """What a file of this ``st_mode`` is, for a message: ``a FIFO (named pipe)``, ``a directory``..."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a regular file" if not stat.S_ISREG(mode) else "a regular file"


def size_text(size: int) -> str:
    """``812 bytes``, ``1 MiB``, ``5.24 GiB``: a size for a message."""
    if size < 1024:
        return plural(size, "byte")
    value = float(size)
    for unit in ("KiB", "MiB", "GiB"):
        value /= 1024
        if value < 1024 or unit == "GiB":
            break
    return f"{value:.3g} {unit}"


def open_regular(path: Path | str, *, follow_symlinks: bool = True) -> int:
    """A read-only descriptor of ``path``, which must be a regular file; else :class:`FileRefused`. Blocking.

    Never hangs and never opens a device: the file is checked with ``stat`` before it is opened
    (opening some devices has effects, e.g. arming a watchdog), opened with ``O_NONBLOCK`` (a
    FIFO swapped in after the check does not wait for a writer) and checked again with
    ``fstat``. ``follow_symlinks=False`` refuses a symbolic link (``O_NOFOLLOW``): for folders
    a script can write, such as the output cache, where a link could point at ``/dev/zero`` or
    at a secret.
    """
    before = os.stat(path, follow_symlinks=follow_symlinks)
    if not stat.S_ISREG(before.st_mode):
        raise FileRefused(path, f"it is {file_kind(before.st_mode)}, not a regular file")
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_symlinks else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_symlinks:  # swapped for a link since the stat
            raise FileRefused(path, "it is a symbolic link, not a regular file") from None
        raise
    try:
        after = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(after.st_mode):
        os.close(fd)
        raise FileRefused(path, f"it is {file_kind(after.st_mode)}, not a regular file")
    return fd


def read_capped(path: Path | str, limit: int, *, follow_symlinks: bool = True, what: str = "") -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them. Blocking.

    Raises :class:`FileRefused` for anything but a regular file (see :func:`open_regular`) and
    for a file over ``limit`` bytes: its size is checked first, and at most ``limit + 1`` bytes
    are read, so a file that grows while it is read is refused too, never read without end.
    ``what`` names the limit in the message (``"allowed for allowlist.yaml"``).
    """
    fd = open_regular(path, follow_symlinks=follow_symlinks)
    with os.fdopen(fd, "rb", buffering=0) as handle:
        size = os.fstat(fd).st_size
        if size <= limit:
            chunks: list[bytes] = []
            total = 0
            while total <= limit:
                chunk = handle.read(limit + 1 - total)
                if not chunk:
                    return b"".join(chunks)
                chunks.append(chunk)
                total += len(chunk)
    allowed = f"the {size_text(limit)} " + (what or "hermes-tui reads")
    if size > limit:
        raise FileRefused(path, f"it is {size_text(size)}, over {allowed}")
    raise FileRefused(path, f"it grew past {allowed} while it was read")
