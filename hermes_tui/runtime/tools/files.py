"""read_file and write_file. Blocking file work runs in a thread, never on the event loop."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from pydantic import Field

from hermes_tui.runtime.approvals import FileChange
from hermes_tui.runtime.fsutil import atomic_write
from hermes_tui.runtime.tools.base import Args, Tool, ToolContext
from hermes_tui.runtime.tools.changes import file_diff

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


def _numbered(number: int, raw: bytes) -> str:
    text = raw.decode("utf-8", "replace").rstrip("\r\n")
    if len(text) > LINE_CHARS:
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


def _read(path: Path, offset: int, limit: int) -> dict[str, Any]:
    try:
        handle = path.open("rb")
    except OSError as exc:
        return os_error(path, exc)
    with handle:
        if is_binary(handle.read(BINARY_PROBE)):
            size = os.fstat(handle.fileno()).st_size
            return {"error": f"{path} is a binary file ({size} bytes); read_file shows text files only"}
        handle.seek(0)
        last = offset + limit - 1
        size = os.fstat(handle.fileno()).st_size
        if size <= WHOLE_READ:  # small: one read and one split is several times faster
            raw_lines = handle.read().split(b"\n")
            if raw_lines[-1] == b"":
                raw_lines.pop()
            total = len(raw_lines)
            lines = _numbered_block(raw_lines[offset - 1 : last], offset)
        else:
            lines = []
            total = 0
            for total, raw in enumerate(handle, start=1):  # streams: a huge file is never held whole
                if offset <= total <= last:
                    lines.append(_numbered(total, raw))
    result: dict[str, Any] = {
        "path": str(path),
        "content": "\n".join(lines) + ("\n" if lines else ""),
        "total_lines": total,
        "offset": offset,
        "lines_returned": len(lines),
        "truncated": offset + len(lines) - 1 < total,
    }
    if offset > total:
        result["note"] = f"offset {offset} is past the end: the file has {total} lines"
    return result


async def read_file(ctx: ToolContext, args: ReadFileArgs) -> dict[str, Any]:
    """Numbered lines ``offset``..``offset+limit-1`` of a text file, and its line count."""
    return await asyncio.to_thread(_read, ctx.resolve(args.path), args.offset, args.limit)


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
    return await asyncio.to_thread(_write, ctx.resolve(args.path), args.content)


def _preview(ctx: ToolContext, args: WriteFileArgs) -> tuple[list[FileChange], str]:
    """The file the call would write and the diff against it now, for an approval. Blocking."""
    change, diff = file_diff(ctx.resolve(args.path), args.path, args.content)
    return [change], diff


TOOLS = (
    Tool("read_file", ReadFileArgs, read_file, lambda ctx, a: _read(ctx.resolve(a.path), a.offset, a.limit)),
    Tool("write_file", WriteFileArgs, write_file, lambda ctx, a: _write(ctx.resolve(a.path), a.content),
         writes=lambda ctx, a: [str(ctx.resolve(a.path))], preview=_preview),
)
