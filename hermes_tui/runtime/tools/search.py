"""search_files: regex search in file contents, or finding files by glob.

ripgrep does the walking and matching when it is installed; otherwise a Python walk does the
same job with the same rules, so results do not depend on the machine:

* hidden files are searched, ``.gitignore`` is NOT applied, and these directories are
  skipped: ``.git node_modules __pycache__ .venv venv .mypy_cache .pytest_cache .tox``;
* order: each directory's entries sorted by name (ripgrep's ``--sort path``);
* a file with a NUL byte in its first 8 KiB is binary and not searched;
* context lines are read by Python in both cases;
* credentials files (``.env``, ``id_*``, ``~/.ssh/*`` keys, ``~/.aws/credentials``, a ``.pem``
  holding a private key, ``/proc/*/environ``, ...: what ``cat`` of them is flagged for) are
  never searched inside a directory: they are listed in the result (``skipped_credentials``)
  whether or not they would match, so the result says nothing about what they hold; the model
  reads one with read_file, which asks you. A search *of* such a file asks, like read_file;
* ripgrep runs with the kernel's scrubbed environment, never the host's.
"""

from __future__ import annotations

import asyncio
import base64
import fnmatch
import json
import os
import re
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from hermes_tui.runtime.danger.paths import (
    KEY_SUFFIXES, SECRET_FILES, reads_secret, real_read_target, single_root,
)
from hermes_tui.runtime.hardening import Spawned, open_process
from hermes_tui.runtime.tools.args import Args
from hermes_tui.runtime.tools.base import Confiner, Tool, ToolContext, read_only_confiner
from hermes_tui.runtime.tools.files import BINARY_PROBE, ask_to_read, is_binary, open_regular
from hermes_tui.runtime.tools.opening import bounded_lines
from hermes_tui.base.units import plural

SKIP_DIRS = (".git", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache", ".pytest_cache", ".tox")
MATCH_CHARS = 500
"""A matched line longer than this is cut in the result."""
SKIPPED_SHOWN = 20
"""Credentials files named in a result; more are counted."""
CREDENTIAL_GLOBS = (
    ".env", ".env.*", "id_*", "*.pem", *(f"*{suffix}" for suffix in KEY_SUFFIXES), "**/.ssh/**", "environ", "mem",
    "kcore", "shadow", "gshadow", "ssh_host_*", "auth.json",
    *(glob for name in SECRET_FILES for glob in (f"**/{name}", f"**/{name}/**")),
)
"""Names that may be credentials files (a superset: each one found is then judged exactly).
Listing them apart from the search keeps what is skipped independent of the pattern."""


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
    root = Path(single_root(str(ctx.resolve(args.path))))
    if not await asyncio.to_thread(root.exists):
        return {"error": f"Path not found: {root}"}
    if args.target == "content":
        try:
            re.compile(args.pattern)
        except re.error as exc:
            return {"error": f"invalid regular expression {args.pattern!r}: {exc}"}
    whole_dir = await asyncio.to_thread(root.is_dir)
    if not whole_dir and not await asyncio.to_thread(root.is_file):  # rg would wait on a FIFO for good
        return {"error": f"{root} is not a regular file or a directory (a device, FIFO or socket)"}
    if args.target == "content" and not whole_dir:  # one file: a credentials file is asked, like read_file
        _, refusal = await ask_to_read(ctx, "search_files", root)
        if refusal is not None:
            return {"error": f"BLOCKED: {refusal}"}
    secrets = await asyncio.to_thread(Secrets, ctx, root, args) if args.target == "content" and whole_dir else None
    rg = ripgrep()
    if rg is not None:
        found = await _ripgrep(rg, root, args, ctx.env, secrets, confine=read_only_confiner(ctx))
        engine = "ripgrep"
    else:
        found = await asyncio.to_thread(_python_search, root, args, secrets)
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
    if secrets is not None and secrets.skipped:
        skipped = sorted(secrets.skipped)
        result["skipped_credentials"] = [_shown(Path(p), base) for p in skipped[:SKIPPED_SHOWN]]
        were = "was" if len(skipped) == 1 else "were"
        result["note"] = (f"{plural(len(skipped), 'credentials file')} under this path {were} not searched (their "
                          "contents would reach the model); read one with read_file, which asks the user first")
    return result


class Secrets:
    """Which files of a directory search are credentials files, never searched.

    The set is decided by the files' names and places (and a ``.pem``'s first bytes), never by
    the pattern: every one found is reported, so whether it would have matched is not told.
    """

    def __init__(self, ctx: ToolContext, root: Path, args: SearchArgs) -> None:
        self.root, self.args = root, args
        self.real_root = Path(real_read_target(str(root)))
        self.judged_by = ctx.judged_paths()
        self.skipped: set[str] = set()
        self._judged: dict[str, bool] = {}

    def secret(self, path: str) -> bool:
        """True if ``path`` (a file under the root, as listed) is a credentials file: judged as
        listed and at its real place (the root may be a symlink to ~/.ssh). Blocking (made in a
        thread for every candidate first; later calls for a match are mostly answered from the cache)."""
        known = self._judged.get(path)
        if known is None:
            known = reads_secret(path, judged_by=self.judged_by)
            if not known and self.real_root != self.root:
                try:
                    real = str(self.real_root / Path(path).relative_to(self.root))
                except ValueError:
                    real = real_read_target(path)
                known = reads_secret(real, judged_by=self.judged_by)
            self._judged[path] = known
        return known

    def note(self, path: str) -> bool:
        """True (and ``path`` recorded as skipped) if it is a credentials file the search would
        have read: one ``file_glob`` lets through."""
        if not self.secret(path):
            return False
        if not self.args.file_glob or _glob_matches(Path(path), self.root, self.args.file_glob):
            self.skipped.add(path)
        return True


def _shown(path: Path, base: Path) -> str:
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)


# -- ripgrep ----------------------------------------------------------------------------------


def _rg_argv(rg: str) -> list[str]:
    argv = [rg, "--sort", "path", "--hidden", "--no-ignore", "--no-messages", "--no-config"]
    for name in SKIP_DIRS:
        argv += ["-g", f"!{name}/"]
    return argv


async def _rg_start(argv: list[str], env: dict[str, str], confine: Confiner | None = None) -> Spawned:
    """ripgrep started with ``env``: the kernel's scrubbed environment, never the host's (what
    rg reads as ``/proc/self/environ`` is its own), forked without the capabilities that would
    let it read the host's (hardening.py), and in the sandbox (``confine``: reading only)."""
    confinement = await asyncio.to_thread(confine) if confine is not None else None
    return await open_process(argv, dict(env), confinement=confinement)


async def _rg_candidates(rg: str, root: Path, env: dict[str, str], confine: Confiner | None = None) -> list[str]:
    """The files under ``root`` named like credentials files (:data:`CREDENTIAL_GLOBS`)."""
    argv = [*_rg_argv(rg), "--files", *(a for g in CREDENTIAL_GLOBS for a in ("--iglob", g)), "--", str(root)]
    process = await _rg_start(argv, env, confine)
    out, _ = await process.communicate()
    return [line for line in out.decode("utf-8", "surrogateescape").split("\n") if line]


async def _ripgrep(rg: str, root: Path, args: SearchArgs, env: dict[str, str],
                   secrets: Secrets | None = None, confine: Confiner | None = None) -> dict[str, Any]:
    if secrets is not None:  # credentials files are listed first, apart from the pattern
        candidates = await _rg_candidates(rg, root, env, confine)
        await asyncio.to_thread(lambda: [secrets.note(path) for path in candidates])
    argv = _rg_argv(rg)
    if args.target == "files":
        argv += ["--files", "-g", args.pattern]
    else:
        argv += ["--json"]
        if args.file_glob:
            argv += ["-g", args.file_glob]
        argv += ["-e", args.pattern]
    argv += ["--", str(root)]
    process = await _rg_start(argv, env, confine)
    items: list[Any] = []
    total = 0
    wanted = args.offset + args.limit
    skipping = False
    path = ""
    try:
        async for line in _lines(process.stdout):  # streamed: memory holds one page, not every match
            raw = line.head
            if args.target == "files":
                total += 1
                if args.offset < total <= wanted:
                    items.append(raw.decode("utf-8", "surrogateescape").rstrip("\n"))
                continue
            if b'"type":"begin"' in raw[:20]:  # one per file with matches
                path = _rg_text(json.loads(raw)["data"]["path"])
                skipping = secrets is not None and secrets.secret(path)
                continue
            if b'"type":"match"' not in raw[:20] or skipping:
                continue  # a credentials file's matches are dropped before counting: the total tells nothing
            total += 1
            if args.offset < total <= wanted:
                items.append(_match(line, path))
    finally:
        if process.returncode is None:
            process.kill()  # ended early (an error, a cancel): rg must not run on, blocked on a full pipe
        stderr = await process.stderr.read()
        await process.wait()
    said = stderr.decode(errors="replace").strip()
    if process.returncode == 2 and not total and said:
        return {"error": f"search failed: {said[:300]}"}
    # Exit 2 with nothing said: some files could not be read (--no-messages), e.g. secrets the
    # sandbox hides. What could be read was searched.
    return {"items": items, "total": total}


CONTEXT_KEEP = 1 << 14
"""Bytes of a context line read (it is cut for the result anyway)."""
LINE_HEAD = 1 << 20
"""Bytes of one rg output line kept whole; a longer line (a match in a minified file) is
shown as its size, never held or parsed whole."""
LINE_TAIL = 1 << 16


@dataclass(slots=True)
class _Line:
    head: bytes
    tail: bytes = b""
    over: int = 0
    """Bytes past ``head`` (0: ``head`` is the whole line)."""


async def _lines(stream: asyncio.StreamReader) -> AsyncIterator[_Line]:
    """The lines of ``stream`` in bounded memory, however long one is."""
    head, tail, over = bytearray(), bytearray(), 0
    while chunk := await stream.read(1 << 16):
        start = 0
        while start < len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:end if end >= 0 else len(chunk)]
            room = LINE_HEAD - len(head)
            head += piece[:room]
            if len(piece) > room:
                over += len(piece) - max(room, 0)
                tail = (tail + piece[max(room, 0):])[-LINE_TAIL:]
            if end < 0:
                break
            yield _Line(bytes(head), bytes(tail), over)
            head, tail, over = bytearray(), bytearray(), 0
            start = end + 1
    if head:
        yield _Line(bytes(head), bytes(tail), over)


_LINE_NUMBER = re.compile(rb'"line_number":(\d+)')


def _match(line: _Line, path: str) -> tuple[str, int, str]:
    """(path, line number, text) of one rg ``match`` line."""
    if not line.over:
        data = json.loads(line.head)["data"]
        return _rg_text(data["path"]), data["line_number"], _rg_text(data["lines"])
    number = _LINE_NUMBER.search(line.tail)
    size = len(line.head) + line.over
    return path, int(number.group(1)) if number else 0, f"[a line too long to show: about {size:,} bytes]"


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


def _python_search(root: Path, args: SearchArgs, secrets: Secrets | None = None) -> dict[str, Any]:
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
        if secrets is not None and secrets.note(str(path)):
            continue  # every credentials file walked is noted, matching or not
        if args.file_glob and not _glob_matches(path, root, args.file_glob):
            continue
        try:
            with open_regular(path) as handle:
                if is_binary(handle.read(BINARY_PROBE)):
                    continue
                handle.seek(0)
                # A line is searched in its first LINE_HEAD bytes: a huge one is never held whole.
                for number, (raw, _size) in enumerate(bounded_lines(handle, LINE_HEAD), start=1):
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
    try:  # opened again after rg: judged on what is open now, not on what rg saw
        with open_regular(path) as handle:
            for index, (raw, _size) in enumerate(bounded_lines(handle, CONTEXT_KEEP), start=1):
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
