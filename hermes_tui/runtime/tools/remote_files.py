"""The file tools on a remote backend (a container, an SSH host): the same arguments and
results as here, the files there.

Each call is one operation at the far end (``backends/remote.py``): a read brings the file's
bytes back and the local code numbers its lines; a write sends the bytes; ``patch`` reads the
files it edits, computes every new text here (as locally: nothing is written unless all of it
applies) and writes them back; ``search_files`` walks and matches there. Approvals stay here:
the gate judges the paths as spelled there.
"""

from __future__ import annotations

import base64
import posixpath
from collections.abc import Awaitable, Callable
from typing import Any

from hermes_tui.base.units import plural
from hermes_tui.runtime.approvals import FileChange
from hermes_tui.runtime.backends.base import BackendError, Remote
from hermes_tui.runtime.tools.base import ToolContext
from hermes_tui.runtime.tools.changes import headers, unified_diff
from hermes_tui.runtime.tools.files import LINE_KEEP, ReadFileArgs, WriteFileArgs, _numbered, is_binary
from hermes_tui.runtime.tools.patching import PatchArgs, _names, _parsed, _strip_prefix
from hermes_tui.runtime.tools.search import MATCH_CHARS, SKIP_DIRS, SearchArgs

READ_CAP = 64 << 20
"""Bytes of one file a remote read brings back at most."""


def there(ctx: ToolContext, path: str) -> str:
    """``path`` as the far end will open it (relative to the call's cwd there)."""
    return posixpath.normpath(str(ctx.resolve(path))) if not path.startswith("~") else path


def _remote(ctx: ToolContext) -> Remote:
    assert ctx.remote is not None
    return ctx.remote


def _failure(answer: dict[str, Any], path: str) -> dict[str, Any]:
    return {"error": f"{path}: {answer.get('error')}"}


async def _text(ctx: ToolContext, path: str) -> str | dict[str, Any]:
    answer, data = await _remote(ctx).file("read", path, ctx.cwd, limit=READ_CAP)
    if "error" in answer:
        return _failure(answer, path)
    if answer.get("more"):
        return {"error": f"{path} is over {READ_CAP >> 20} MiB; patch edits smaller files"}
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"error": f"{path} is not UTF-8 text; patch edits text files only"}


async def read_file(ctx: ToolContext, args: ReadFileArgs) -> dict[str, Any]:
    """The page asked for, numbered here from the lines the far end picked (a big file is never
    sent whole)."""
    path = there(ctx, args.path)
    answer, _ = await _remote(ctx).file("lines", path, ctx.cwd, extra={"first": args.offset, "count": args.limit,
                                                                          "keep": LINE_KEEP})
    if "error" in answer:
        return _failure(answer, path)
    if answer.get("binary"):
        return {"error": f"{path} is a binary file ({int(answer.get('size') or 0):,} bytes); read_file shows "
                         "text files only"}
    try:
        raws = [base64.b64decode(line, validate=True) for line in answer.get("lines", [])]
        sizes = [int(size) for size in answer.get("sizes", [])]
        total = int(answer.get("total", 0))
    except (ValueError, TypeError):
        return {"error": f"{path}: a malformed answer from {ctx.remote.where if ctx.remote else 'there'}"}
    lines = [_numbered(number, raw, size) for number, (raw, size) in enumerate(zip(raws, sizes), start=args.offset)]
    result: dict[str, Any] = {
        "path": path, "content": "\n".join(lines) + ("\n" if lines else ""), "total_lines": total,
        "offset": args.offset, "lines_returned": len(lines), "truncated": args.offset + len(lines) - 1 < total,
    }
    if args.offset > total:
        result["note"] = f"offset {args.offset} is past the end: the file has {plural(total, 'line')}"
    return result


async def write_file(ctx: ToolContext, args: WriteFileArgs) -> dict[str, Any]:
    path = there(ctx, args.path)
    data = args.content.encode("utf-8")
    answer, _ = await _remote(ctx).file("write", path, ctx.cwd, data=data)
    if "error" in answer:
        return _failure(answer, path)
    return {"path": path, "bytes_written": answer.get("bytes_written", len(data)), "created": answer.get("created")}


async def _planned(ctx: ToolContext, args: PatchArgs) -> list[tuple[str, str, str | None, str]] | dict[str, Any]:
    """(path, text before, text after or None to delete, action) of every file; or an error."""
    if args.patch is None:
        assert args.path is not None and args.old_string is not None and args.new_string is not None
        path = there(ctx, args.path)
        before = await _text(ctx, path)
        if isinstance(before, dict):
            return before
        count = before.count(args.old_string)
        if count == 0:
            return {"error": f"old_string not found in {path}; read the file and copy the exact text "
                             "(whitespace counts)"}
        if count > 1 and not args.replace_all:
            return {"error": f"old_string appears {count} times in {path}; add surrounding lines to make it "
                             "unique, or pass replace_all=True"}
        return [(path, before, before.replace(args.old_string, args.new_string), "modified")]
    import whatthepatch
    from whatthepatch.exceptions import HunkApplyException

    diffs = _parsed(args)
    if isinstance(diffs, dict):
        return diffs
    planned: list[tuple[str, str, str | None, str]] = []
    for diff in diffs:
        old, new = _strip_prefix(diff.header.old_path), _strip_prefix(diff.header.new_path)
        target = new or old
        if target is None:
            return {"error": "a file in the patch has no path"}
        before = ""
        if old is not None:
            text = await _text(ctx, there(ctx, old))
            if isinstance(text, dict):
                return text
            before = text
        try:
            lines = whatthepatch.apply_diff(diff, before.splitlines())
        except HunkApplyException:
            return {"error": f"the patch does not apply to {target}: its context does not match the file; "
                             "nothing was changed"}
        action = "created" if old is None else "deleted" if new is None else "modified"
        after = None if action == "deleted" else "\n".join(lines) + ("\n" if lines else "")
        planned.append((there(ctx, target), before, after, action))
    return planned


async def patch(ctx: ToolContext, args: PatchArgs) -> dict[str, Any]:
    planned = await _planned(ctx, args)
    if isinstance(planned, dict):
        return planned
    remote = _remote(ctx)
    for path, _, after, _ in planned:
        if after is None:
            answer, _ = await remote.file("delete", path, ctx.cwd)
        else:
            answer, _ = await remote.file("write", path, ctx.cwd, data=after.encode("utf-8"))
        if "error" in answer:
            return _failure(answer, path)
    if args.patch is not None:
        return {"files": [{"path": p, "action": a} for p, _, _, a in planned], "diff": args.patch}
    path, before, after, _ = planned[0]
    count = before.count(args.old_string or "") if args.replace_all else 1
    return {"path": path, "replacements": count, "diff": unified_diff(args.path or path, before, after or "")}


async def preview(ctx: ToolContext, name: str, parsed: Any) -> tuple[list[FileChange], str]:
    """What an approval of a remote write shows: the files there and the diff against them."""
    if name == "write_file":
        path = there(ctx, parsed.path)
        answer, data = await _remote(ctx).file("read", path, ctx.cwd, limit=1 << 20)
        before = None if "error" in answer or is_binary(data[:8192]) else data.decode("utf-8", "replace")
        size = answer.get("size") if "error" not in answer else None
        # The far end's answer is its own (a script there can change what answers): a size is a count or nothing.
        change = FileChange(path=path, size=size if type(size) is int and size >= 0 else None)
        if before is None:
            old, new = headers(parsed.path)
            return [change], f"--- {old}\n+++ {new}\n" + "".join("+" + line for line in
                                                                 parsed.content.splitlines(True))
        return [change], unified_diff(parsed.path, before, parsed.content)
    planned = await _planned(ctx, parsed)
    if isinstance(planned, dict):
        return [FileChange(path=there(ctx, n)) for n in _names(parsed)], f"(this patch would not apply: " \
                                                                          f"{planned['error']})\n"
    diff = "".join(unified_diff(p, before, after or "") for p, before, after, _ in planned)
    return [FileChange(path=p) for p, _, _, _ in planned], diff


async def search_files(ctx: ToolContext, args: SearchArgs) -> dict[str, Any]:
    root = there(ctx, args.path)
    if args.target == "content":
        import re
        try:
            re.compile(args.pattern)
        except re.error as exc:
            return {"error": f"invalid regular expression {args.pattern!r}: {exc}"}
    return await _search(ctx, args, root)


async def _search(ctx: ToolContext, args: SearchArgs, root: str) -> dict[str, Any]:
    spec = {"target": args.target, "pattern": args.pattern, "file_glob": args.file_glob, "offset": args.offset,
            "limit": args.limit, "context": args.context, "skip": list(SKIP_DIRS)}
    answer, _ = await _remote(ctx).file("search", root, ctx.cwd, extra=spec)
    if "error" in answer:
        return {"error": str(answer["error"])}
    items, total = answer.get("items", []), int(answer.get("total", 0))
    base = ctx.cwd

    def shown(path: str) -> str:
        relative = posixpath.relpath(path, base) if base != "." and path.startswith("/") else path
        return relative[2:] if relative.startswith("./") else relative

    def cut(text: str) -> str:
        return text if len(text) <= MATCH_CHARS else text[:MATCH_CHARS] + " …"

    result: dict[str, Any] = {"total": total, "offset": args.offset, "limit": args.limit,
                              "truncated": args.offset + len(items) < total, "engine": "python (remote)"}
    if args.target == "files":
        result["files"] = [shown(p) for p in items]
    else:
        matches = []
        for path, number, text, before, after in items:
            match: dict[str, Any] = {"path": shown(path), "line": number, "text": cut(text)}
            if args.context:
                match["before"], match["after"] = [cut(t) for t in before], [cut(t) for t in after]
            matches.append(match)
        result["matches"] = matches
    return result


HANDLERS: dict[str, Callable[[ToolContext, Any], Awaitable[dict[str, Any]]]] = {"read_file": read_file, "write_file": write_file, "patch": patch, "search_files": search_files}
"""The file tools' remote versions (terminal() checks ``ctx.remote`` itself)."""


async def call(name: str, ctx: ToolContext, parsed: Any) -> dict[str, Any]:
    """Run the remote version of ``name``; a backend that cannot be reached is the call's error."""
    try:
        return await HANDLERS[name](ctx, parsed)
    except BackendError as exc:
        return {"error": str(exc)}


