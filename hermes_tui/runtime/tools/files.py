"""read_file and write_file. Blocking file work runs in a thread, never on the event loop.

Both look at where a path really leads before they act (symlinked directories, a leading
``//``): a write is judged (and shown in its approval) at its real path; a read of a
credentials file asks first, like ``cat`` of it, and the host's own ``/proc`` environment and
memory are never read.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import Field

from hermes_tui.runtime.approvals import FileChange, content_hash
from hermes_tui.runtime.danger.paths import (
    READS_SECRET, host_memory, reads_secret, real_read_target, real_write_target, single_root,
)
from hermes_tui.base.fsutil import atomic_write
from hermes_tui.runtime.tools.args import Args
from hermes_tui.runtime.tools.base import Tool, ToolContext
from hermes_tui.runtime.tools.changes import file_diff
from hermes_tui.runtime.tools.opening import Pinned, bounded_lines, open_regular, pin_regular
from hermes_tui.base.units import plural

LINE_CHARS = 2000
"""A longer line is cut (read_file is for reading, not for dumping minified files)."""
BINARY_PROBE = 8192


class ReadFileArgs(Args):
    path: str = Field(min_length=1)
    offset: int = Field(1, ge=1, description="first line, 1-based")
    limit: int = Field(2000, ge=1, le=100_000, description="lines to return")


class WriteFileArgs(Args):
    path: str = Field(min_length=1)
    content: str


def os_error(path: Path | str, exc: OSError) -> dict[str, Any]:
    """A clear error dict for an OSError on ``path``."""
    if isinstance(exc, FileNotFoundError):
        return {"error": f"File not found: {path}"}
    if isinstance(exc, PermissionError):
        if exc.strerror and exc.strerror.startswith("blocked by the sandbox"):  # fsutil.WRITE_GUARD
            return {"error": f"BLOCKED: {exc.strerror}"}
        return {"error": f"Permission denied: {path}"}
    if isinstance(exc, IsADirectoryError):
        return {"error": f"{path} is a directory, not a file (list it with search_files(target='files'))"}
    if isinstance(exc, NotADirectoryError):
        return {"error": f"A part of {path} is not a directory"}
    return {"error": f"{path}: {exc.strerror or exc}"}


def is_binary(head: bytes) -> bool:
    """True when the first bytes of a file hold a NUL (how git and ripgrep decide)."""
    return b"\0" in head


WHOLE_READ = 4 << 20
"""Files up to this size are read in one go; larger ones are streamed line by line."""


LINE_KEEP = LINE_CHARS * 4 + 2
"""Bytes of a streamed line read at most: LINE_CHARS characters of UTF-8 and its newline."""


def _numbered(number: int, raw: bytes, size: int | None = None) -> str:
    """One ``     N|text`` line; ``size``: the whole line's bytes when only ``raw`` was read."""
    text = raw.decode("utf-8", "replace").rstrip("\r\n")
    if size is not None and size > len(raw):
        text = text[:LINE_CHARS] + f" … [line cut at {LINE_CHARS} chars of {size:,} bytes]"
    elif len(text) > LINE_CHARS:
        text = text[:LINE_CHARS] + f" … [line cut at {LINE_CHARS} of {len(text)} chars]"
    return f"{number:>6}|{text}"


def _numbered_block(raw_lines: list[bytes], first: int) -> list[str]:
    """`_numbered` for many lines at once (one decode; the per-line work only when needed)."""
    if not raw_lines:
        return []
    block = b"\n".join(raw_lines).decode("utf-8", "replace")
    texts = block.split("\n")
    if "\r" in block or max(map(len, texts)) > LINE_CHARS:
        return [_numbered(n, raw) for n, raw in enumerate(raw_lines, start=first)]
    return [f"{n:>6}|{t}" for n, t in zip(range(first, first + len(texts)), texts)]


def _read_pinned(fd: int, size: int, offset: int, limit: int, path: Path) -> dict[str, Any]:
    """Read the file open on ``fd`` (``size`` bytes when it was pinned). A small file is read
    in one call, and done when it still is that size (asking for one byte more tells): no
    second look at its size, no seek, no read of the end (issue 38)."""
    try:
        data = os.read(fd, size + 1) if 0 < size <= WHOLE_READ else b""
        if data and len(data) == size:
            os.close(fd)
            return _read_bytes(data, offset, limit, path)
        os.lseek(fd, 0, os.SEEK_SET)  # it changed meanwhile, or it is big: the long way
    except OSError as exc:
        os.close(fd)
        return os_error(path, exc)
    with os.fdopen(fd, "rb") as handle:
        return _read_handle(handle, offset, limit, path)


def _read_bytes(data: bytes, offset: int, limit: int, path: Path) -> dict[str, Any]:
    """The result of read_file for a file whose bytes are all in ``data``."""
    if is_binary(data[:BINARY_PROBE]):
        return _binary(path, len(data))
    raw_lines = data.split(b"\n")
    if raw_lines[-1] == b"":
        raw_lines.pop()
    return _result(path, offset, _numbered_block(raw_lines[offset - 1 : offset + limit - 1], offset), len(raw_lines))


def _binary(path: Path, size: int) -> dict[str, Any]:
    return {"error": f"{path} is a binary file ({plural(size, 'byte')}); read_file shows text files only"}


def _read_handle(handle: BinaryIO, offset: int, limit: int, path: Path) -> dict[str, Any]:
    """Read the file open as ``handle`` (at its start); ``path`` names it in the result."""
    if is_binary(handle.read(BINARY_PROBE)):
        return _binary(path, os.fstat(handle.fileno()).st_size)
    handle.seek(0)
    if os.fstat(handle.fileno()).st_size <= WHOLE_READ:  # small: one read and one split is several times faster
        return _read_bytes(handle.read(), offset, limit, path)
    last = offset + limit - 1
    lines = []
    total = 0
    # Streams, a line at a time and at most LINE_KEEP bytes of one: neither a huge
    # file nor a huge line is ever held whole.
    for total, (raw, line_size) in enumerate(bounded_lines(handle, LINE_KEEP), start=1):
        if offset <= total <= last:
            lines.append(_numbered(total, raw, line_size))
    return _result(path, offset, lines, total)


def _result(path: Path, offset: int, lines: list[str], total: int) -> dict[str, Any]:
    result: dict[str, Any] = {
        "path": str(path),
        "content": "\n".join(lines) + ("\n" if lines else ""),
        "total_lines": total,
        "offset": offset,
        "lines_returned": len(lines),
        "truncated": offset + len(lines) - 1 < total,
    }
    if offset > total:
        result["note"] = f"offset {offset} is past the end: the file has {plural(total, 'line')}"
    return result


def read_verdict(ctx: ToolContext, path: Path, real: str | None = None) -> tuple[str, str | None, str | None]:
    """Where reading ``path`` really lands (``real``, when the caller knows), why it is refused
    outright (the host's own ``/proc`` environment or memory, in every approvals mode), and why
    it must be asked (a credentials file). Blocking (it may peek into a ``.pem``)."""
    given = single_root(str(path))
    real = real or real_read_target(given)
    if host_memory(given) or host_memory(real):
        return real, (f"refused: {given} is hermes-tui's own environment, memory or open files (the keys kept "
                      "from scripts are there); no tool reads it, in any approvals mode"), None
    judged = ctx.judged_paths()
    if reads_secret(given, judged_by=judged) or reads_secret(real, judged_by=judged):
        return real, None, f"{READS_SECRET}: {real}"
    return real, None, None


async def ask_to_read(ctx: ToolContext, tool: str, path: Path, real: str | None = None) -> tuple[Path, str | None]:
    """The real path ``path`` leads to (``real``, when the caller knows), and why ``tool`` may
    not read it (None: it may).

    A credentials file is asked like ``cat`` of it (kind ``file``, no diff, no hash: "session"
    allows reading that file again); in ``off`` mode the gate allows it, and logs it.
    """
    found, refusal, reason = await asyncio.to_thread(read_verdict, ctx, path, real)
    target = Path(found)
    if refusal is not None or reason is None:
        return target, refusal
    size = await asyncio.to_thread(_size, target)
    note = f"({tool} would give the contents of {target} to the model; nothing is written)\n"
    refusal = await ctx.gate.check_file(
        tool, [FileChange(path=str(target), size=size)], note, [reason], cwd=ctx.cwd, session=ctx.session,
        kernel=ctx.kernel_id, exec_id=ctx.exec_id, origin=ctx.origin, call_id=ctx.call_id,
    )
    return target, refusal


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


PIN_TRIES = 3
"""Times a name that could not be pinned, and then could be opened (it appeared or changed in
between), is pinned again before read_file gives up on it."""


def _pin(ctx: ToolContext, shown: Path) -> Pinned | dict[str, Any]:
    """``shown``'s file pinned, or the error that says why it cannot be read (not there, not a
    regular file, the host's own). Nothing is ever read by name: a file that could not be pinned
    and then could be opened (a script swapping the name, say for a link to a secret) is pinned
    again, never read through the name that was not judged. Blocking."""
    for _ in range(PIN_TRIES):
        pinned = pin_regular(shown)
        if pinned is not None:
            return pinned
        real, refusal, _ = read_verdict(ctx, shown)
        if refusal is not None:
            return {"error": f"BLOCKED: {refusal}"}
        try:  # only for its error: opens nothing but a regular file (fsutil.open_regular)
            open_regular(Path(real)).close()
        except OSError as exc:
            return os_error(shown, exc)
    return {"error": f"{shown} changed again and again while read_file looked at it; try again"}


async def read_file(ctx: ToolContext, args: ReadFileArgs) -> dict[str, Any]:
    """Numbered lines ``offset``..``offset+limit-1`` of a text file, and its line count.

    The file is pinned before anything is judged or asked (see :func:`_read_blocking`): what a
    person allows is the file read, whatever is swapped in under its name while they answer."""
    shown = ctx.resolve(args.path)
    pinned = await asyncio.to_thread(_pin, ctx, shown)
    if isinstance(pinned, dict):
        return pinned
    with pinned:
        _, refusal = await ask_to_read(ctx, "read_file", shown, pinned.real)
        if refusal is not None:
            return {"error": f"BLOCKED: {refusal}"}
        return await asyncio.to_thread(_read_that, pinned, shown, args)


def _read_blocking(ctx: ToolContext, args: ReadFileArgs) -> dict[str, Any] | None:
    """read_file in the calling thread; None when it must ask first (the event loop's work).

    The file is pinned first (an ``O_PATH`` descriptor) and judged by where that descriptor
    really is; then that same file is read (:func:`_pin`)."""
    shown = ctx.resolve(args.path)
    pinned = _pin(ctx, shown)
    if isinstance(pinned, dict):
        return pinned
    with pinned:
        _, refusal, reason = read_verdict(ctx, shown, pinned.real)
        if refusal is not None:
            return {"error": f"BLOCKED: {refusal}"}
        if reason is not None:
            return None
        return _read_that(pinned, shown, args)


def _read_that(pinned: Pinned, shown: Path, args: ReadFileArgs) -> dict[str, Any]:
    """read_file's result from the file ``pinned`` holds (judged already). Blocking."""
    try:
        fd = pinned.open(shown)
    except OSError as exc:
        return os_error(shown, exc)
    return _read_pinned(fd, pinned.status.st_size, args.offset, args.limit, shown)


def write_target(ctx: ToolContext, path: str) -> Path:
    """Where write_file / patch really write ``path``: its parent's real path and its name."""
    return Path(real_write_target(str(ctx.resolve(path))))


def judged_paths(ctx: ToolContext, path: str) -> list[str]:
    """The paths a write of ``path`` is judged by: the real one, and the spelled one (normalised)
    when it differs (your own ``~/.ssh`` may be a symlink to elsewhere; it is still ~/.ssh).
    On a remote backend: the path as spelled there (this machine's links mean nothing there)."""
    if ctx.remote is not None:  # judged as the same file would be here (~/.bashrc is ~/.bashrc)
        spelled = path if path.startswith("~") else os.path.normpath(str(ctx.resolve(path)))
        return list(dict.fromkeys((spelled, ctx.remote.as_here(spelled))))
    real = str(write_target(ctx, path))
    spelled = os.path.normpath(single_root(str(ctx.resolve(path))))
    return [real] if spelled == real else [real, spelled]


def _write(path: Path, content: str) -> dict[str, Any]:
    data = content.encode("utf-8")
    if path.is_dir():
        return {"error": f"{path} is a directory, not a file"}
    try:
        created = atomic_write(path, data)
    except OSError as exc:
        return os_error(path, exc)
    return {"path": str(path), "bytes_written": len(data), "created": created}


async def write_file(ctx: ToolContext, args: WriteFileArgs) -> dict[str, Any]:
    """Write text to a file atomically (temp + rename), creating parent directories."""
    return await asyncio.to_thread(_write, write_target(ctx, args.path), args.content)


def _preview(ctx: ToolContext, args: WriteFileArgs) -> tuple[list[FileChange], str]:
    """The file the call would write (its real path, and the hash of the new content: what a
    "session" answer allows) and the diff against it now, for an approval. Blocking."""
    change, diff = file_diff(write_target(ctx, args.path), args.path, args.content)
    return [change.model_copy(update={"sha256": content_hash(args.content)})], diff


TOOLS = (
    Tool("read_file", ReadFileArgs, read_file, _read_blocking),
    Tool("write_file", WriteFileArgs, write_file, lambda ctx, a: _write(write_target(ctx, a.path), a.content),
         writes=lambda ctx, a: judged_paths(ctx, a.path), preview=_preview),
)
