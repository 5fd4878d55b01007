"""patch: exact text replacement in one file, or a unified diff over one or more files.

Replacement errors when the old text is missing, or appears more than once without
``replace_all``. A unified diff is parsed and applied with ``whatthepatch``, all or nothing:
every file's new text is computed before any file is written.

Files are written at their real paths (symlinked directories followed, as in write_file), and
the approval is asked for every file the call writes *or reads*: a patch of a symlink to
``~/.ssh/id_rsa`` would otherwise copy the key into its diff, unasked.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any

from pydantic import model_validator

from hermes_tui.runtime.approvals import FileChange, content_hash
from hermes_tui.runtime.danger.paths import real_read_target
from hermes_tui.base.fsutil import atomic_write, unlink_guarded
from hermes_tui.runtime.tools.args import Args
from hermes_tui.runtime.tools.base import Tool, ToolContext
from hermes_tui.runtime.tools.changes import current, file_diff, unified_diff
from hermes_tui.runtime.tools.files import judged_paths, open_regular, os_error, write_target


class PatchArgs(Args):
    path: str | None = None
    old_string: str | None = None
    new_string: str | None = None
    replace_all: bool = False
    patch: str | None = None

    @model_validator(mode="after")
    def _one_mode(self) -> PatchArgs:
        if self.patch is not None:
            if self.old_string is not None or self.new_string is not None:
                raise ValueError("give either patch= (a unified diff) or path/old_string/new_string, not both")
            return self
        missing = [n for n in ("path", "old_string", "new_string") if getattr(self, n) is None]
        if missing:
            raise ValueError(f"replacement needs path, old_string and new_string (missing: {', '.join(missing)}); "
                             "or give patch= with a unified diff")
        if self.old_string == "":
            raise ValueError("old_string is empty; give the exact text to replace")
        if self.old_string == self.new_string:
            raise ValueError("old_string and new_string are the same: nothing to change")
        return self


def _read_text(path: Path) -> str:
    """The UTF-8 text of the regular file ``path`` (a FIFO or a device raises OSError at once:
    reading one could hang the host's thread for good)."""
    with open_regular(path) as handle:
        return handle.read().decode("utf-8")


def _replaced(ctx: ToolContext, args: PatchArgs) -> tuple[Path, str, str, int] | dict[str, Any]:
    """The file, its text before and after the replacement, and the count; or an error dict."""
    assert args.path is not None and args.old_string is not None and args.new_string is not None
    path = write_target(ctx, args.path)
    try:
        before = _read_text(path)
    except OSError as exc:
        return os_error(path, exc)
    except UnicodeDecodeError:
        return {"error": f"{path} is not UTF-8 text; patch edits text files only"}
    count = before.count(args.old_string)
    if count == 0:
        return {"error": f"old_string not found in {path}; read the file and copy the exact text (whitespace counts)"}
    if count > 1 and not args.replace_all:
        return {"error": f"old_string appears {count} times in {path}; add surrounding lines to make it unique, "
                         "or pass replace_all=True"}
    return path, before, before.replace(args.old_string, args.new_string), count


def _replace(ctx: ToolContext, args: PatchArgs) -> dict[str, Any]:
    found = _replaced(ctx, args)
    if isinstance(found, dict):
        return found
    path, before, after, count = found
    try:
        atomic_write(path, after.encode("utf-8"))
    except OSError as exc:
        return os_error(path, exc)
    return {"path": str(path), "replacements": count if args.replace_all else 1,
            "diff": unified_diff(args.path or str(path), before, after)}


def _strip_prefix(name: str | None) -> str | None:
    if name is None or name == "/dev/null":
        return None
    return name[2:] if name[:2] in ("a/", "b/") else name


def _split_files(text: str) -> list[str]:
    """One piece per file: a '--- ' line followed by '+++ ' starts a new file.

    (whatthepatch reads a plain second '--- /dev/null' header as part of the first file.)
    """
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines)
              if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")]
    for i, start in enumerate(starts):  # a 'diff --git' or 'Index:' line just before belongs to it
        while start > 0 and lines[start - 1].startswith(("diff ", "index ", "Index:", "====", "new file", "deleted file")):
            start -= 1
        starts[i] = start
    if not starts:
        return [text]
    bounds = starts[1:] + [len(lines)]
    return ["".join(lines[a:b]) for a, b in zip(starts, bounds)]


Planned = list[tuple[Path, "str | None", str]]
"""What a unified diff would do: (real path, new text or None to delete, action) per file."""


def _parsed(args: PatchArgs) -> list[Any] | dict[str, Any]:
    """The file diffs of ``args.patch`` (with headers), or an error dict."""
    import whatthepatch
    from whatthepatch.exceptions import WhatThePatchException

    try:
        diffs = [d for part in _split_files(args.patch or "") for d in whatthepatch.parse_patch(part)
                 if d.header is not None]
    except WhatThePatchException as exc:
        return {"error": f"patch is not a valid unified diff: {exc}"}
    if not diffs:
        return {"error": "patch holds no file changes; expected a unified diff with ---/+++ headers and @@ hunks"}
    return diffs


def _plan(ctx: ToolContext, args: PatchArgs) -> Planned | dict[str, Any]:
    """Every file's new text, computed before anything is written; or an error dict."""
    import whatthepatch
    from whatthepatch.exceptions import HunkApplyException

    diffs = _parsed(args)
    if isinstance(diffs, dict):
        return diffs
    planned: Planned = []
    for diff in diffs:
        old = _strip_prefix(diff.header.old_path)
        new = _strip_prefix(diff.header.new_path)
        target = new or old
        if target is None:
            return {"error": "a file in the patch has no path"}
        path = write_target(ctx, target)
        if old is None:
            lines: list[str] = []
            action = "created"
            if path.exists():
                return {"error": f"the patch creates {target}, which already exists"}
        else:
            source = write_target(ctx, old)
            try:
                lines = _read_text(source).splitlines()
            except OSError as exc:
                return os_error(source, exc)
            except UnicodeDecodeError:
                return {"error": f"{source} is not UTF-8 text"}
            action = "deleted" if new is None else "modified"
        try:
            result = whatthepatch.apply_diff(diff, lines)
        except HunkApplyException as exc:
            # Its message quotes the file's line: say where, never what (the file may be a secret).
            where = re.search(r"line (\d+)", str(exc))
            at = f" at line {where.group(1)}" if where else ""
            return {"error": f"the patch does not apply to {target}: its context does not match the file{at}; "
                             "nothing was changed"}
        text: str | None = "\n".join(result) + ("\n" if result else "")
        planned.append((path, None if action == "deleted" else text, action))
    return planned


def _apply(ctx: ToolContext, args: PatchArgs) -> dict[str, Any]:
    planned = _plan(ctx, args)
    if isinstance(planned, dict):
        return planned
    for path, text, _ in planned:
        try:
            if text is None:
                unlink_guarded(path)
            else:
                atomic_write(path, text.encode("utf-8"))
        except OSError as exc:
            return os_error(path, exc)
    return {"files": [{"path": str(p), "action": a} for p, _, a in planned], "diff": args.patch}


def patch_blocking(ctx: ToolContext, args: PatchArgs) -> dict[str, Any]:
    """Edit files by exact replacement or by a unified diff; returns the diff. Blocking."""
    return _apply(ctx, args) if args.patch is not None else _replace(ctx, args)


async def patch(ctx: ToolContext, args: PatchArgs) -> dict[str, Any]:
    """Edit files by exact replacement or by a unified diff (in a thread); returns the diff."""
    return await asyncio.to_thread(patch_blocking, ctx, args)


def _names(args: PatchArgs) -> list[str]:
    """Every file name the call touches, as given. For a diff: the names in its ---/+++ lines
    as a plain reading finds them *and* as whatthepatch parses them (a name with a space or a
    tab-separated date is read differently by each; both are judged)."""
    if args.patch is None:
        return [args.path or ""]
    names = re.findall(r"^(?:\+\+\+|---) (?:[ab]/)?(\S+)", args.patch, re.MULTILINE)
    diffs = _parsed(args)
    if not isinstance(diffs, dict):
        names += [n for d in diffs for n in (_strip_prefix(d.header.old_path), _strip_prefix(d.header.new_path)) if n]
    return [n for n in dict.fromkeys(names) if n != "/dev/null"]


def _targets(ctx: ToolContext, args: PatchArgs) -> list[str]:
    """The files the call would write, and those it reads through a symlink (judged too)."""
    found: list[str] = []
    for name in _names(args):
        judged = judged_paths(ctx, name)  # the real write target first
        found += judged
        if ctx.remote is not None:
            continue
        read = real_read_target(str(ctx.resolve(name)))
        if read != judged[0] and os.path.lexists(read):
            found.append(read)  # the last part is a symlink: its target's text goes into the diff
    return list(dict.fromkeys(found))


def _preview(ctx: ToolContext, args: PatchArgs) -> tuple[list[FileChange], str]:
    """The files the call would write (real paths, with the hash of each one's new text: what a
    "session" answer allows) and its diff, for an approval. Blocking."""
    if args.patch is not None:
        planned = _plan(ctx, args)
        if isinstance(planned, dict):  # it will fail without writing: bound to this exact patch
            digest = content_hash(args.patch)
            return ([current(write_target(ctx, name))[1].model_copy(update={"sha256": digest})
                     for name in _names(args)], args.patch)
        return [current(path)[1].model_copy(update={"sha256": None if text is None else content_hash(text)})
                for path, text, _ in planned], args.patch
    found = _replaced(ctx, args)
    if isinstance(found, dict):  # it will fail without writing: show why
        path = write_target(ctx, args.path or "")
        digest = content_hash(json.dumps([args.old_string, args.new_string, args.replace_all]))
        return ([current(path)[1].model_copy(update={"sha256": digest})],
                f"(this replacement would not apply: {found['error']})\n")
    path, _, after, _ = found
    change, diff = file_diff(path, args.path or str(path), after)
    return [change.model_copy(update={"sha256": content_hash(after)})], diff


TOOLS = (Tool("patch", PatchArgs, patch, patch_blocking, writes=_targets, preview=_preview),)
