"""What a file write would change, shown before it is approved: a unified diff and sizes."""

from __future__ import annotations

import difflib
from pathlib import Path

from hermes_tui.runtime.approvals import FileChange
from hermes_tui.runtime.tools.opening import open_regular
from hermes_tui.base.units import noun

PREVIEW_LIMIT = 2_000_000
"""A file larger than this (bytes) is not read for the diff; the dialog says so instead."""


DIFF_SHOWN = 64_000
"""Characters of a diff an approval carries; the rest is counted, not shown (a script must not
freeze the dialog or fill the store with a huge write)."""


def capped(diff: str) -> str:
    """``diff`` cut to :data:`DIFF_SHOWN` characters at a line end, saying how much is left out."""
    if len(diff) <= DIFF_SHOWN:
        return diff
    cut = diff.rfind("\n", 0, DIFF_SHOWN) + 1 or DIFF_SHOWN
    rest = diff[cut:]
    lines = rest.count("\n")
    return diff[:cut] + (f"... {lines:,} more {noun(lines, 'line')} ({len(rest):,} {noun(len(rest), 'character')}) "
                         "of the change not shown\n")


def headers(path: str) -> tuple[str, str]:
    """The diff's two file names: ``a/x``, ``b/x`` for a relative path, the path itself for an
    absolute one (``a//tmp/x`` reads as a typo)."""
    return (path, path) if path.startswith("/") else (f"a/{path}", f"b/{path}")


def unified_diff(path: str, before: str, after: str) -> str:
    """A unified diff of one file's change (from nothing for a new file)."""
    old, new = headers(path)
    return "".join(difflib.unified_diff(
        before.splitlines(True), after.splitlines(True), fromfile="/dev/null" if before == "" else old, tofile=new,
    ))


def current(path: Path) -> tuple[str | None, FileChange]:
    """The file's text now (None if absent, binary or too large to show) and its change record."""
    try:
        size = path.stat().st_size
    except OSError:
        return "", FileChange(path=str(path), size=None)
    change = FileChange(path=str(path), size=size)
    if size > PREVIEW_LIMIT or not path.is_file():
        return None, change
    try:
        with open_regular(path) as handle:  # a FIFO or a process's file, swapped in since the stat: refused
            return handle.read(PREVIEW_LIMIT + 1).decode("utf-8"), change
    except (OSError, UnicodeDecodeError):
        return None, change


def file_diff(path: Path, shown: str, after: str) -> tuple[FileChange, str]:
    """The change record and diff for writing ``after`` to ``path`` (``shown``: its name)."""
    before, change = current(path)
    if before is None:
        what = "a directory" if path.is_dir() else f"{change.size:,} bytes, not shown (binary or too large)"
        old, new = headers(shown)
        return change, f"--- {old}\t({what})\n+++ {new}\n" + "".join(
            "+" + line for line in after.splitlines(True))
    return change, unified_diff(shown, before, after)
