"""Small file helpers shared by the runtime's modules, the config and the commands.

Imports nothing from the project; ``hermes_tui.config`` imports it lazily (this package's
``__init__`` imports the runtime, which imports the config).
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

from hermes_tui.base.units import plural

_UMASK = os.umask(0o022)
os.umask(_UMASK)


WRITE_GUARD: contextvars.ContextVar[Callable[[str], str | None] | None] = contextvars.ContextVar(
    "hermes_write_guard", default=None)
"""When set (the file tools of a sandboxed script): says why a real path may not be written, or
None. :func:`atomic_write` asks it about the folder it really opened, so a script that swaps a
folder for a symbolic link after the tool's check gains nothing."""


READ_GUARD: contextvars.ContextVar[Callable[[str], str | None] | None] = contextvars.ContextVar(
    "hermes_read_guard", default=None)
"""Like :data:`WRITE_GUARD`, for reads: asked about the real path of the file the tool opened."""


def real_path(path: str) -> str:
    """``os.path.realpath(path)``, asked of the kernel when ``path`` exists: one ``O_PATH``
    open and the link of its descriptor, instead of an ``lstat`` per part of the path in
    Python (about 20 µs each call; a file tool's call made six, issue 38). ``O_PATH`` opens
    nothing for reading: a FIFO or a device there is not touched. A path that does not exist
    (or one the kernel cannot name, such as a deleted file's) is left to ``realpath``."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except (OSError, ValueError):
        return _realpath(path)
    try:
        found = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        found = ""
    finally:
        os.close(fd)
    return found if found.startswith("/") and not found.endswith(" (deleted)") else _realpath(path)


def _realpath(path: str) -> str:
    """``os.path.realpath``, which raises when a link on the way is swapped while it walks
    (``ENOENT``, ``EINVAL``: a script racing the host): tried again, and in the end the path
    as spelled, normalised. Whatever is then opened is judged by its descriptor."""
    for _ in range(3):
        try:
            return os.path.realpath(path)
        except OSError:
            continue
    return os.path.normpath(os.path.abspath(path))


def reopen(pinned: int) -> int:
    """A read-only descriptor of the file the ``O_PATH`` descriptor ``pinned`` holds: that same
    file, not its name looked up again. ``O_NONBLOCK``: a lease a script holds on its own file
    would make a plain open wait (45 s) for the lease to be broken; a regular file's reads
    ignore the flag. Raises FileNotFoundError where there is no ``/proc``."""
    return os.open(f"/proc/self/fd/{pinned}", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)


def judge(guard_var: contextvars.ContextVar[Callable[[str], str | None] | None], real: str, shown: Path) -> None:
    """Raise PermissionError when the guard in ``guard_var`` (if any) refuses ``real``."""
    guard = guard_var.get()
    why = guard(real) if guard is not None else None
    if why is not None:
        raise PermissionError(errno.EACCES, f"blocked by the sandbox: {why}", str(shown))


def _judge_new_folders(path: Path) -> None:
    """Before folders are made for ``path``: the nearest existing one, really, judged with
    what would be made beneath it (no folder is made where the write would be refused)."""
    if WRITE_GUARD.get() is None:
        return
    existing, rest = path.parent, [path.name]
    while not existing.is_dir() and existing != existing.parent:
        existing, rest = existing.parent, [existing.name, *rest]
    judge(WRITE_GUARD, os.path.join(os.path.realpath(existing), *rest), path)


def unlink_guarded(path: Path) -> None:
    """Remove the file ``path`` through its folder's descriptor, judged by :data:`WRITE_GUARD`
    at the folder it really is (a swapped folder removes nothing outside)."""
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        judge(WRITE_GUARD, os.path.join(os.readlink(f"/proc/self/fd/{folder}"), path.name), path)
        os.unlink(path.name, dir_fd=folder)
    finally:
        os.close(folder)


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> bool:
    """Write ``data`` to ``path`` via a temp file in the same dir and a rename. Blocking.

    Readers never see a half-written file. Parent dirs are made. The file gets ``mode`` if
    given, else keeps an existing file's mode, else the usual ``0666 & ~umask``. Returns True
    when the file was created. The folder is opened once and everything is done through it;
    under a :data:`WRITE_GUARD`, the folder it really is is judged first (PermissionError).
    """
    _judge_new_folders(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        judge(WRITE_GUARD, os.path.join(os.readlink(f"/proc/self/fd/{folder}"), path.name), path)
        try:
            existing = stat.S_IMODE(os.stat(path.name, dir_fd=folder).st_mode)
            created = False
        except FileNotFoundError:
            existing = 0o666 & ~_UMASK
            created = True
        for _ in range(100):
            temp = f".{path.name}.{secrets.token_hex(4)}.tmp"
            try:
                fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                             dir_fd=folder)
                break
            except FileExistsError:
                continue
        else:
            raise FileExistsError(errno.EEXIST, "no temporary file name was free", str(path.parent))
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                os.fchmod(handle.fileno(), existing if mode is None else mode)
            os.replace(temp, path.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=folder)
            raise
    finally:
        os.close(folder)
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

    Never hangs and never opens a device (opening some has effects, e.g. arming a watchdog): the
    name is held by an ``O_PATH`` descriptor, which opens nothing, its file checked with
    ``fstat``, and only a regular file is opened, through that descriptor (the same file,
    whatever is swapped in under the name meanwhile), with ``O_NONBLOCK`` (a lease a script
    holds on its file does not make the open wait). ``follow_symlinks=False`` refuses a symbolic
    link (``O_NOFOLLOW``): for folders a script can write, such as the output cache, where a link
    could point at ``/dev/zero`` or at a secret. Without ``/proc`` to reopen through, the file is
    checked, opened by name and checked again.
    """
    pinned = os.open(path, os.O_PATH | os.O_CLOEXEC | (0 if follow_symlinks else os.O_NOFOLLOW))
    try:
        mode = os.fstat(pinned).st_mode
        if not stat.S_ISREG(mode):
            raise FileRefused(path, f"it is {file_kind(mode)}, not a regular file")
        try:
            return reopen(pinned)
        except FileNotFoundError:  # no /proc here
            pass
    finally:
        os.close(pinned)
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
