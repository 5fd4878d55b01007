"""Agent instruction files (AGENTS.md, CLAUDE.md, SOUL.md ...): every write to one asks a person.

These files steer the next agent that opens the folder (this one, Claude Code, Codex, Hermes
Agent). A script or a model that writes one plants instructions a person never gave, so a
write to one always asks, in every approvals mode, ``off`` included (Hermes Agent's
``security.protected_instruction_files``), and is refused when nobody can answer. The ways in:

* the file tools (``write_file``, ``patch``) and ``terminal()`` commands the shell analysis
  reads a write in: asked before they run (:mod:`.approvals`);
* any sandboxed process: the instruction files that exist in a writable root (and below it, as
  deep as repositories are looked for) are bound read-only by bubblewrap (:mod:`.sandbox.paths`);
* what is left — a new file made by plain Python, a write with the sandbox off, a process a
  script left running between two calls: :class:`InstructionGuard` keeps what each file at the
  top of each watched folder last held with a person's consent, looks again before and after
  each call, puts back any other change at once (keeping a copy of it), and asks: the change is
  made again only if a person says so.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
import secrets
import shutil
import stat
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from hermes_tui.base.fsutil import atomic_write
from hermes_tui.runtime.danger.instruction_names import matches

ABSENT = "absent"
FOLDER = "folder"
"""What a folder in an instruction file's place reads as (it is not one: left alone)."""
"""The digest of a file that is not there (a deletion a person allowed)."""
KEEP_BYTES = 1 << 20
"""Bytes of one instruction file kept in memory, to put it back as it was with consent: a bigger
one is not restored (the change is reported and asked about, and left as it is)."""
HASH_BYTES = 64 << 20
"""Bytes hashed at most; past them a file is known by its size and change time."""
PER_FOLDER = 64
"""Instruction files looked at per folder, at most (names in order): memory and questions stay bounded."""
COPIES_KEPT = 1024
"""Changes put back, kept under ``$HERMES_HOME/cache/instructions`` (the oldest go first past it)."""
COPY_ACROSS = 64 << 20
"""Bytes copied at most when the cache is on another file system (a move is a rename otherwise)."""


@dataclass
class Seen:
    """One instruction file as it was: its bytes (None past :data:`KEEP_BYTES`, or for what is
    not a regular file), what identifies its content, its mode, and where it links to if it is
    a symbolic link."""

    data: bytes | None
    digest: str
    mode: int = 0o644
    link: str | None = None


@dataclass
class Change:
    """An instruction file that differs from what it held with consent (None: not there)."""

    path: str
    before: Seen | None
    after: Seen | None
    kept: str | None = None
    """Where what the change left was moved while it is put back (None: nothing was there)."""

    @property
    def what(self) -> str:
        """``created`` / ``changed`` / ``deleted``."""
        return "created" if self.before is None else "deleted" if self.after is None else "changed"


def digest(seen: Seen | None) -> str:
    """What a person's consent is compared with: the content's SHA-256, or :data:`ABSENT`."""
    return ABSENT if seen is None else seen.digest


def _content(path: str, follow: bool) -> tuple[bytes | None, str, int]:
    """``(kept bytes, digest, mode)`` of the regular file at ``path`` (never a FIFO or a device;
    a symbolic link only when ``follow``)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        return None, f"unreadable:{exc.errno}", 0
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, f"not a regular file:{stat.S_IFMT(info.st_mode)}", 0
        hasher, kept, read = hashlib.sha256(), bytearray(), 0
        while read < HASH_BYTES:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            hasher.update(chunk)
            read += len(chunk)
            if len(kept) <= KEEP_BYTES:
                kept += chunk
        if read >= HASH_BYTES:  # too big to hash each call: its size and change time (ctime cannot be set)
            return None, f"large:{info.st_size}:{info.st_ctime_ns}:{info.st_ino}", stat.S_IMODE(info.st_mode)
        return (bytes(kept) if len(kept) <= KEEP_BYTES else None), hasher.hexdigest(), stat.S_IMODE(info.st_mode)
    except OSError as exc:
        return None, f"unreadable:{exc.errno}", 0
    finally:
        os.close(fd)


def read(path: str) -> Seen | None:
    """What ``path`` holds now; None when nothing is there. A symbolic link is known by where it
    points and by what it points to: repointing it, or writing its target, is a change."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            return Seen(None, "link:unreadable")
        _, content, _ = _content(path, follow=True)
        return Seen(None, f"link:{target}:{content}", link=target)
    if stat.S_ISDIR(info.st_mode):
        return Seen(None, FOLDER)
    data, content, mode = _content(path, follow=False)
    return Seen(data, content, mode or 0o644)


def read_moved(kept: str, path: str) -> Seen | None:
    """What was moved from ``path`` to ``kept``: read there (what a person is shown is what
    moving it back restores); a relative link's target is read from ``path``'s folder."""
    try:
        info = os.lstat(kept)
    except OSError:
        return None
    if not stat.S_ISLNK(info.st_mode):
        return read(kept)
    target = os.readlink(kept)
    _, content, _ = _content(os.path.join(os.path.dirname(path), target), follow=True)
    return Seen(None, f"link:{target}:{content}", link=target)


def scan(roots: Iterable[str], patterns: tuple[str, ...], known: Iterable[str] = ()) -> dict[str, Seen]:
    """The instruction files at the top of each root, by real path: every name a pattern spells
    exactly and every path in ``known`` always; other matches (a glob's, another case's) up to
    :data:`PER_FOLDER` per root, in name order, so a flood of them cannot hide the others. A
    folder is not an instruction file. Blocking (a listing of each root)."""
    found: dict[str, Seen] = {}
    if not patterns:
        return found
    exact = [p for p in patterns if not any(c in p for c in "*?[")]
    known = set(known)
    for root in roots:
        try:
            listed = os.listdir(root)
        except OSError:
            continue
        always = set(exact) | {os.path.basename(p) for p in known if os.path.dirname(p) == root}
        others = sorted(n for n in listed if n not in always and matches(n, patterns))[:PER_FOLDER]
        for name in [*sorted(always), *others]:
            path = os.path.join(root, name)
            seen = read(path)
            if seen is not None and seen.digest != FOLDER:
                found[path] = seen
    return found


def write(path: str, seen: Seen | None) -> str | None:
    """Make ``path`` hold ``seen`` (None: remove it); None when done, else why not. Written to a
    temporary name and renamed into place: a symbolic link planted there is replaced, never
    written through. Blocking."""
    try:
        if seen is None:
            if os.path.lexists(path):
                if os.path.isdir(path) and not os.path.islink(path):
                    return f"{path} is now a folder; it was left"
                os.unlink(path)
            return None
        if seen.link is not None:
            folder, name = os.path.split(path)
            temporary = os.path.join(folder, f".{name}.hermes-{secrets.token_hex(6)}.tmp")
            os.symlink(seen.link, temporary)
            os.replace(temporary, path)
        elif seen.data is None:
            return f"{path} was over {KEEP_BYTES >> 20} MiB or not a regular file; it was not kept, so it was left"
        else:
            atomic_write(Path(path), seen.data, mode=seen.mode)
        return None
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"


def unified_diff(changes: list[Change], limit: int = 64_000) -> str:
    """The changes as one diff a person can read before allowing them (bounded)."""
    import difflib

    def lines(seen: Seen | None) -> list[str]:
        if seen is None:
            return []
        if seen.link is not None:
            return [f"(a symbolic link to {seen.link})\n"]
        if seen.data is None:
            return [f"({seen.digest.split(':', 1)[0]}: not shown)\n"]
        return seen.data.decode("utf-8", "replace").splitlines(keepends=True)

    text = "".join("".join(difflib.unified_diff(
        lines(c.before), lines(c.after), "/dev/null" if c.before is None else c.path,
        "/dev/null" if c.after is None else c.path)) for c in changes)
    return text if len(text) <= limit else text[:limit] + "\n... (diff cut)\n"


Ask = Callable[[list[Change], str], Awaitable["str | None"]]
"""Ask a person about changes already put back (the changes, the reason's end): None to make
them again, else why not."""


class InstructionGuard:
    """What each instruction file at the top of each watched folder holds with a person's
    consent, and the check that keeps it so (one at a time: calls that run together share it).

    Args:
        patterns: the names (globs) of instruction files.
        copies: where a change that is put back is kept (nothing a person wrote is lost).
    """

    def __init__(self, patterns: tuple[str, ...], copies: Path) -> None:
        self.patterns = patterns
        self.copies = copies
        self.known: dict[str, dict[str, Seen]] = {}
        """Per watched folder (a real path), what its instruction files hold with consent."""
        self.allowed: dict[str, set[str]] = {}
        """Per file (a real path), contents a person allowed since the last check."""
        self._lock = asyncio.Lock()

    def allow(self, path: str, content: str) -> None:
        """A person allowed the instruction file at ``path`` (its real path) to hold ``content``
        (a digest, or :data:`ABSENT`)."""
        self.allowed.setdefault(path, set()).add(content)

    def roots(self, folders: Iterable[str]) -> tuple[str, ...]:
        """``folders`` as the guard keys them (real paths, once each)."""
        return tuple(dict.fromkeys(os.path.realpath(f) for f in folders))

    async def check(self, folders: Iterable[str], ask: Ask | None, when: str) -> list[str]:
        """Compare the instruction files at the top of ``folders`` with what they hold with
        consent: a change a person allowed is taken as it is; any other is put back at once (a
        copy kept), then ``ask`` is asked once about all of them (None: a cancelled call,
        nobody to ask: they stay put back). A folder seen for the first time is taken as it is.
        ``when`` says when they changed, for the question. Returns what to tell the script."""
        if not self.patterns:
            return []
        roots = self.roots(folders)
        async with self._lock:
            known_paths = [p for root in roots for p in self.known.get(root, {})]
            now = await asyncio.to_thread(scan, roots, self.patterns, known_paths)
            changes: list[Change] = []
            for root in roots:
                here = {p: s for p, s in now.items() if os.path.dirname(p) == root}
                known = self.known.setdefault(root, here)
                for path in sorted(set(known) | set(here)):
                    old, new = known.get(path), here.get(path)
                    if digest(old) == digest(new):
                        continue
                    if digest(new) in self.allowed.get(path, ()):
                        self._take(path, new)
                    else:
                        changes.append(Change(path, old, new))
            for path in [p for p in self.allowed if os.path.dirname(p) in roots or os.path.dirname(p) not in self.known]:
                del self.allowed[path]  # consent is for the call that asked it (and none for unwatched folders)
            if not changes:
                return []
            return await self._settle(changes, ask, when)

    async def _settle(self, changes: list[Change], ask: Ask | None, when: str) -> list[str]:
        undone, failed = await asyncio.to_thread(self._put_back, changes)
        names = ", ".join(os.path.basename(c.path) for c in changes)
        what = "; ".join(f"{os.path.basename(c.path)} was {c.what}" for c in changes)
        refusal = "nobody to ask" if ask is None else await ask(changes, f"{what} {when}; {undone}")
        if refusal is not None and failed:
            return [f"{what} without asking; {refusal}, but not all could be put back: {'; '.join(failed)}."]
        if refusal is None:
            failed = [f for f in await asyncio.to_thread(lambda: [self._again(c) for c in changes]) if f]
            for change in changes:
                self._take(change.path, change.after)
            return [f"{what} without asking; a person allowed it" +
                    (f", but it could not all be made again: {'; '.join(failed)}" if failed else "") + "."]
        return [f"{what} without asking, and {'it was' if len(changes) == 1 else 'they were'} put back ({refusal}). "
                f"Agent instruction files ({names}) are changed only with write_file or patch, which ask the user."]

    async def rebase(self, folders: Iterable[str]) -> None:
        """Take the instruction files at the top of ``folders`` as they are now (a rollback a
        person asked for wrote them)."""
        if not self.patterns:
            return
        roots = self.roots(folders)
        async with self._lock:
            now = await asyncio.to_thread(scan, roots, self.patterns)
            for root in roots:
                self.known[root] = {p: s for p, s in now.items() if os.path.dirname(p) == root}

    def _take(self, path: str, seen: Seen | None) -> None:
        known = self.known.setdefault(os.path.dirname(path), {})
        if seen is None:
            known.pop(path, None)
        else:
            known[path] = seen

    def _put_back(self, changes: list[Change]) -> tuple[str, list[str]]:
        """Put each change back: what it left is moved aside under :attr:`copies` (renamed, not
        read), and read there — what a person is then shown is what *once* moves back — then
        the file is made as it was with consent. Returns what to say, and what failed. Blocking."""
        failed: list[str] = []
        for change in changes:
            if change.before is not None and change.before.data is None and change.before.link is None:
                failed.append(f"{change.path} was not kept before (over {KEEP_BYTES >> 20} MiB, or not a file): "
                              "it is left as it is")
                continue
            try:
                change.kept = self._move_aside(change.path)
                if change.kept is not None:
                    change.after = read_moved(change.kept, change.path)
            except OSError as exc:  # not kept on disk: its bytes are in memory if it was small
                if change.after is None or (change.after.data is None and change.after.link is None):
                    failed.append(f"{change.path} could not be kept ({exc.strerror or exc}): it is left as it is")
                    continue
            problem = write(change.path, change.before)
            if problem:
                failed.append(problem)
        kept = [c.kept for c in changes if c.kept]
        said = "put back as it was before, until you answer" if not failed else \
            f"not all could be put back: {'; '.join(failed)}"
        return said + (f" (what was written is kept in {', '.join(kept)})" if kept else ""), failed

    def _move_aside(self, path: str) -> str | None:
        """Move what is at ``path`` (a file or a link) into :attr:`copies`; where it went, or None
        when nothing was there. The oldest copies past :data:`COPIES_KEPT` are removed."""
        if not os.path.lexists(path) or (os.path.isdir(path) and not os.path.islink(path)):
            return None
        self.copies.mkdir(parents=True, exist_ok=True, mode=0o700)
        target = str(self.copies / f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}-{os.path.basename(path)}")
        try:
            os.rename(path, target)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            if os.lstat(path).st_size > COPY_ACROSS:  # a sparse gigabyte would fill the cache
                raise OSError(errno.EFBIG, f"over {COPY_ACROSS >> 20} MiB, on another file system") from None
            shutil.copy2(path, target, follow_symlinks=False)  # another file system: copied, then removed
            os.unlink(path)
        for old in sorted(self.copies.iterdir())[:-COPIES_KEPT]:
            if str(old) != target:
                old.unlink(missing_ok=True)
        return target

    def _again(self, change: Change) -> str | None:
        """Make a change a person allowed again: what was moved aside goes back; None when done."""
        if change.kept is None:
            return write(change.path, change.after)
        try:
            os.replace(change.kept, change.path)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                return f"{change.path}: {exc.strerror or exc}"
            try:
                shutil.copy2(change.kept, change.path, follow_symlinks=False)
            except OSError as again:
                return f"{change.path}: {again.strerror or again} (it is kept in {change.kept})"
        return None
