"""search_files: regex search in file contents, or finding files by glob.

ripgrep does the walking and matching when it is installed; otherwise a Python walk does the
same job with the same rules, so results do not depend on the machine:

* hidden files are searched, ``.gitignore`` is NOT applied, and these directories are
  skipped: ``.git node_modules __pycache__ .venv venv .mypy_cache .pytest_cache .tox``;
* order: each directory's entries sorted by name (ripgrep's ``--sort path``);
* a file with a NUL byte in its first 8 KiB is binary and not searched;
* context lines are read by Python in both cases.
"""

from __future__ import annotations

import asyncio
import base64
import fnmatch
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from hermes_tui.runtime.tools.base import Args, Tool, ToolContext
from hermes_tui.runtime.tools.files import BINARY_PROBE, is_binary

SKIP_DIRS = (".git", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache", ".pytest_cache", ".tox")
MATCH_CHARS = 500
"""A matched line longer than this is cut in the result."""


class SearchArgs(Args):
    pattern: str = Field(min_length=1)
    target: Literal["content", "files"] = "content"
    path: str = "."
    file_glob: str | None = None
    limit: int = Field(50, ge=1, le=1000)
    offset: int = Field(0, ge=0)
    context: int = Field(0, ge=0, le=20)


def ripgrep() -> str | None:
    """Path of the ``rg`` binary, if installed."""
    return shutil.which("rg")


async def search_files(ctx: ToolContext, args: SearchArgs) -> dict[str, Any]:
    """Content matches (regex) or file names (glob) under ``path``, paged by offset/limit."""
    root = ctx.resolve(args.path)
    if not await asyncio.to_thread(root.exists):
        return {"error": f"Path not found: {root}"}
    if args.target == "content":
        try:
            re.compile(args.pattern)
        except re.error as exc:
            return {"error": f"invalid regular expression {args.pattern!r}: {exc}"}
    rg = ripgrep()
    if rg is not None:
        found = await _ripgrep(rg, root, args)
        engine = "ripgrep"
    else:
        found = await asyncio.to_thread(_python_search, root, args)
        engine = "python"
    if "error" in found:
        return found
    items, total = found["items"], found["total"]
    base = Path(ctx.cwd)
    result: dict[str, Any] = {"total": total, "offset": args.offset, "limit": args.limit,
                              "truncated": args.offset + len(items) < total, "engine": engine}
    if args.target == "files":
        result["files"] = [_shown(Path(p), base) for p in items]
    else:
        result["matches"] = await asyncio.to_thread(_with_context, items, args.context, base)
    return result


def _shown(path: Path, base: Path) -> str:
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)


# -- ripgrep ----------------------------------------------------------------------------------


async def _ripgrep(rg: str, root: Path, args: SearchArgs) -> dict[str, Any]:
    argv = [rg, "--sort", "path", "--hidden", "--no-ignore", "--no-messages", "--no-config"]
    for name in SKIP_DIRS:
        argv += ["-g", f"!{name}/"]
    if args.target == "files":
        argv += ["--files", "-g", args.pattern]
    else:
        argv += ["--json"]
        if args.file_glob:
            argv += ["-g", args.file_glob]
        argv += ["-e", args.pattern]
    argv += ["--", str(root)]
    process = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, stdin=asyncio.subprocess.DEVNULL
    )
    assert process.stdout is not None
    items: list[Any] = []
    total = 0
    wanted = args.offset + args.limit
    try:
        async for raw in process.stdout:  # streamed: memory holds one page, not every match
            if args.target == "files":
                total += 1
                if args.offset < total <= wanted:
                    items.append(raw.decode("utf-8", "surrogateescape").rstrip("\n"))
                continue
            if b'"type":"match"' not in raw[:20]:
                continue
            total += 1
            if args.offset < total <= wanted:
                data = json.loads(raw)["data"]
                items.append((_rg_text(data["path"]), data["line_number"], _rg_text(data["lines"])))
    finally:
        stderr = await process.stderr.read() if process.stderr else b""
        await process.wait()
    if process.returncode == 2 and not total:
        return {"error": f"search failed: {stderr.decode(errors='replace').strip()[:300]}"}
    return {"items": items, "total": total}


def _rg_text(field: dict[str, str]) -> str:
    if "text" in field:
        return field["text"]
    return base64.b64decode(field["bytes"]).decode("utf-8", "replace")


# -- Python fallback --------------------------------------------------------------------------


def _walk(root: Path):
    """Files under ``root`` in ripgrep's ``--sort path`` order, skipping SKIP_DIRS."""
    if root.is_file():
        yield root
        return
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIP_DIRS:
                    yield from _walk(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                yield Path(entry.path)
        except OSError:
            continue


def _glob_matches(path: Path, root: Path, glob: str) -> bool:
    if "/" in glob:
        return fnmatch.fnmatchcase(_shown(path, root), glob.lstrip("/"))
    return fnmatch.fnmatchcase(path.name, glob)


def _python_search(root: Path, args: SearchArgs) -> dict[str, Any]:
    items: list[Any] = []
    total = 0
    wanted = args.offset + args.limit
    if args.target == "files":
        for path in _walk(root):
            if _glob_matches(path, root, args.pattern):
                total += 1
                if args.offset < total <= wanted:
                    items.append(str(path))
        return {"items": items, "total": total}
    regex = re.compile(args.pattern)
    for path in _walk(root):
        if args.file_glob and not _glob_matches(path, root, args.file_glob):
            continue
        try:
            with path.open("rb") as handle:
                if is_binary(handle.read(BINARY_PROBE)):
                    continue
                handle.seek(0)
                for number, raw in enumerate(handle, start=1):
                    line = raw.decode("utf-8", "replace")
                    if regex.search(line.rstrip("\r\n")):
                        total += 1
                        if args.offset < total <= wanted:
                            items.append((str(path), number, line))
        except OSError:
            continue
    return {"items": items, "total": total}


def _with_context(items: list[tuple[str, int, str]], context: int, base: Path) -> list[dict[str, Any]]:
    """Match dicts with ``context`` lines before and after, read from the file."""
    matches = []
    for path, number, text in items:
        match: dict[str, Any] = {"path": _shown(Path(path), base), "line": number, "text": _cut(text)}
        if context:
            lines = _lines_around(Path(path), number, context)
            match["before"] = [_cut(t) for n, t in lines if n < number]
            match["after"] = [_cut(t) for n, t in lines if n > number]
        matches.append(match)
    return matches


def _lines_around(path: Path, number: int, context: int) -> list[tuple[int, str]]:
    found = []
    try:
        with path.open("rb") as handle:
            for index, raw in enumerate(handle, start=1):
                if index > number + context:
                    break
                if index >= number - context:
                    found.append((index, raw.decode("utf-8", "replace")))
    except OSError:
        pass
    return found


def _cut(text: str) -> str:
    text = text.rstrip("\r\n")
    return text if len(text) <= MATCH_CHARS else text[:MATCH_CHARS] + " …"


TOOLS = (Tool("search_files", SearchArgs, search_files),)
