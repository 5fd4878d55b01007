"""Agent instruction files (AGENTS.md, CLAUDE.md, SOUL.md ...): every write to one asks a person.

These files steer the next agent that opens the folder (this one, Claude Code, Codex, Hermes
Agent). A script or a model that writes one plants instructions a person never gave, so a
write to one always asks, in every approvals mode, ``off`` included (Hermes Agent's
``security.protected_instruction_files``), and is refused when nobody can answer. Three ways
in are closed:

* the file tools (``write_file``, ``patch``) and ``terminal()`` commands the shell analysis
  reads a write in: asked before they run (:mod:`.approvals`);
* any sandboxed process: the instruction files that exist in a writable root (and below it, as
  deep as repositories are looked for) are bound read-only (:mod:`.sandbox.paths`);
* what is left — a new file made by plain Python, or any write when the sandbox is off — is
  found after the call (:func:`scan` before and after it, at the top of each writable root),
  put back, and asked about: kept only if a person says so (``Runtime``).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
from collections.abc import Iterable
from dataclasses import dataclass

from hermes_tui.runtime.danger.instruction_names import matches

ABSENT = "absent"
"""The digest of a file that is not there (a deletion a person allowed)."""
READ_CAP = 1 << 20
"""Bytes of one instruction file kept to put it back; a bigger one is reported, not restored."""


@dataclass
class Seen:
    """One instruction file as it was: its bytes (None past :data:`READ_CAP`) and their hash."""

    data: bytes | None
    digest: str
    mode: int


@dataclass
class Change:
    """An instruction file a call changed: before (None: it did not exist) and after."""

    path: str
    before: Seen | None
    after: Seen | None

    @property
    def what(self) -> str:
        """``created`` / ``changed`` / ``deleted``."""
        return "created" if self.before is None else "deleted" if self.after is None else "changed"


def _read(path: str) -> Seen | None:
    """The file at ``path`` (never through a symlink, never a FIFO); None if there is no file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return Seen(None, "not a regular file", 0) if os.path.lexists(path) else None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return Seen(None, "not a regular file", 0)
        chunks = []
        left = READ_CAP + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        digest = hashlib.sha256(data).hexdigest()
        return Seen(data if len(data) <= READ_CAP else None, digest if len(data) <= READ_CAP else
                    f"{info.st_size}:{info.st_mtime_ns}", stat.S_IMODE(info.st_mode))
    except OSError:
        return Seen(None, "unreadable", 0)
    finally:
        os.close(fd)


def scan(roots: Iterable[str], patterns: tuple[str, ...]) -> dict[str, Seen]:
    """Every instruction file at the top of each root. Blocking (a directory listing each)."""
    found: dict[str, Seen] = {}
    if not patterns:
        return found
    for root in roots:
        try:
            names = os.listdir(root)
        except OSError:
            continue
        for name in names:
            if matches(name, patterns):
                path = os.path.join(root, name)
                seen = _read(path)
                if seen is not None:
                    found[path] = seen
    return found


def changes(before: dict[str, Seen], after: dict[str, Seen]) -> list[Change]:
    """What differs between two :func:`scan` results."""
    out = []
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path), after.get(path)
        if old is None or new is None or old.digest != new.digest:
            out.append(Change(path, old, new))
    return out


def put_back(change: Change) -> str | None:
    """Undo ``change`` (the file as it was before, or gone if it was new); None when done, else
    why not (it was bigger than :data:`READ_CAP`, or the folder refused). Blocking."""
    return _write(change.path, change.before)


def reapply(change: Change) -> str | None:
    """Make ``change`` again after a person allowed it; None when done, else why not."""
    return _write(change.path, change.after)


def _write(path: str, seen: Seen | None) -> str | None:
    try:
        if seen is None:
            if os.path.lexists(path):
                if os.path.isdir(path) and not os.path.islink(path):
                    return f"{path} is now a folder; it was left"
                os.unlink(path)
            return None
        if seen.data is None:
            return f"{path} was over {READ_CAP >> 20} MiB or not a regular file; it was not kept, so it was left"
        folder, name = os.path.split(path)
        temporary = os.path.join(folder, f".{name}.hermes-{secrets.token_hex(6)}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, seen.mode or 0o644)
        try:
            os.write(fd, seen.data)
        finally:
            os.close(fd)
        os.replace(temporary, path)  # a symlink left in its place is replaced, never written through
        return None
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"


def digest(seen: Seen | None) -> str:
    """What a person's allowance is compared with: the SHA-256 of the bytes, or :data:`ABSENT`."""
    return ABSENT if seen is None else seen.digest


def unified_diff(change: Change, limit: int = 64_000) -> str:
    """The change as a diff a person can read before allowing it (bounded)."""
    import difflib

    def lines(seen: Seen | None) -> list[str]:
        if seen is None:
            return []
        if seen.data is None:
            return [f"({seen.digest}: not shown)\n"]
        return seen.data.decode("utf-8", "replace").splitlines(keepends=True)

    name = os.path.basename(change.path)
    text = "".join(difflib.unified_diff(lines(change.before), lines(change.after),
                                        "/dev/null" if change.before is None else f"a/{name}",
                                        "/dev/null" if change.after is None else f"b/{name}"))
    return text if len(text) <= limit else text[:limit] + "\n... (diff cut)\n"
