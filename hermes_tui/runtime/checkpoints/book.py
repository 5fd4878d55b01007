"""The checkpoints of every session a runtime serves: when they are taken, what each call
changed, and a rollback's plan and work.

A checkpoint is taken *before* something that can write — a turn, an ``execute_code`` run, a
``write_file`` or ``patch``, a ``terminal()`` command that was flagged or asked — and the folder
is captured again when that call ends. What changed between the two is the call's doing: it is
added to the checkpoint's ledger (``changed``), and a rollback to checkpoint N puts back only the
paths in the ledgers of N and after. What changed between calls (the user's own edits) is in no
ledger, so a rollback keeps it. A call inside another (a script's ``write_file``) is
attributed to itself, and what the script wrote before it to the script.

Checkpoints are numbered per session, 1, 2, 3…; each is stored through the :class:`Log` (the
sessions store) before the call it precedes runs. Without a log nothing is taken: a bare
:class:`~hermes_tui.runtime.Runtime` (``hermes-tui exec``) has no session to keep them in.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from hermes_tui.base.text import shown
from hermes_tui.base.units import human_size, plural
from hermes_tui.config.schema import CheckpointsConfig
from hermes_tui.runtime.checkpoints.shadow import Change, ShadowError, ShadowRepo

log = logging.getLogger(__name__)

LEDGER_MAX = 20_000
"""Paths one call's ledger names at most; past it the ledger says ``*`` (everything that differs),
so a script that writes a million files cannot make a row of megabytes."""
EVERYTHING = "*"

SMALL_FOLDER = 10_000
"""``enabled: auto`` takes checkpoints of a folder outside git holding at most this many files."""


@dataclass
class Checkpoint:
    """One checkpoint of one session."""

    session: str
    n: int
    created: float
    reason: str
    """What it was taken before: ``turn``, ``execute_code``, ``write_file``, ``patch``,
    ``terminal`` or ``rollback``."""
    detail: str = ""
    """A short description: the path written, the command's start, the turn's first words."""
    turn_id: str | None = None
    call_id: str | None = None
    commits: dict[str, str] = field(default_factory=dict)
    """Folder → the commit holding it at this checkpoint."""
    changed: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    """Folder → path → [lines added, lines removed] by what this checkpoint preceded."""
    skipped: dict[str, dict[str, int]] = field(default_factory=dict)
    """Folder → files over ``max_file_size`` (not captured) → size."""
    message_id: int | None = None
    """The conversation's last message when it was taken (a rollback's own checkpoint): a
    rewind to it shows the messages up to there again."""
    host: str = ""

    @property
    def files(self) -> int:
        """How many files what it preceded changed."""
        return sum(len(paths) for paths in self.changed.values())

    @property
    def lines(self) -> tuple[int, int]:
        """Lines added and removed by what it preceded (binary files count none)."""
        added = sum(max(a, 0) for paths in self.changed.values() for a, _ in paths.values())
        removed = sum(max(r, 0) for paths in self.changed.values() for _, r in paths.values())
        return added, removed

    def as_json(self) -> dict[str, Any]:
        """The checkpoint as the store and ``--json`` give it."""
        added, removed = self.lines
        return {"session": self.session, "n": self.n, "created": self.created, "reason": self.reason,
                "detail": self.detail, "turn_id": self.turn_id, "call_id": self.call_id, "commits": self.commits,
                "changed": self.changed, "skipped": self.skipped, "message_id": self.message_id, "host": self.host,
                "files": self.files, "added": added, "removed": removed}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Checkpoint:
        """Read back :meth:`as_json`."""
        names = {"session", "n", "created", "reason", "detail", "turn_id", "call_id", "commits", "changed",
                 "skipped", "message_id", "host"}
        return cls(**{k: v for k, v in data.items() if k in names})

    def what(self) -> str:
        """``before execute_code (call_ab12)``: what it was taken before, in words."""
        if self.reason == "turn":
            return f"before the turn {self.detail!r}" if self.detail else "before a turn"
        if self.reason == "rollback":
            return f"before {self.detail}" if self.detail else "before a rollback"
        return f"before {self.reason} {self.detail}".rstrip()


class Log(Protocol):
    """Where checkpoints are kept (the sessions store)."""

    async def last(self, session: str) -> int:
        """The newest checkpoint's number (0: none)."""

    async def save(self, checkpoint: Checkpoint, keep: int) -> None:
        """Store (or update) ``checkpoint``; forget the session's older than its newest ``keep``."""

    async def all(self, session: str) -> list[Checkpoint]:
        """The session's checkpoints, oldest first."""


@dataclass
class RollbackPlan:
    """What a rollback to checkpoint ``target`` would do, computed before anything is written."""

    target: Checkpoint
    changes: dict[str, list[Change]]
    """Folder → the files that will be written or removed."""
    skipped: dict[str, dict[str, int]]
    """Folder → files the agent wrote that were over the size cap: left as they are."""
    files_asked: bool = False
    """``--files`` named the paths (else: every path the agent changed since the checkpoint)."""
    commits: dict[str, str] = field(default_factory=dict)
    """Folder → the commit its files are put back from."""

    @property
    def count(self) -> int:
        return sum(len(c) for c in self.changes.values())

    def lines(self, cwd: str | None = None) -> list[str]:
        """One line per file: ``restore src/a.py``, ``delete notes/new.txt``, then what is left."""
        order = {"delete": 0, "recreate": 1, "restore": 2}  # what is removed first: seen before any cap
        every = sorted(((root, change) for root, changes in self.changes.items() for change in changes),
                       key=lambda item: (order.get(item[1].action, 3), item[1].path))
        out = [f"{change.action} {shown(shown_path(root, change.path, cwd))}" for root, change in every]
        out += [f"not captured (over checkpoints.max_file_size), left as it is: {shown(shown_path(root, path, cwd))} "
                f"({human_size(size)})" for root, paths in self.skipped.items() for path, size in paths.items()]
        return out


def shown_path(root: str, path: str, cwd: str | None) -> str:
    """``path`` of folder ``root`` as the user knows it: relative to ``cwd`` when inside it."""
    full = os.path.join(root, path)
    if cwd:
        rel = os.path.relpath(full, cwd)
        if not rel.startswith(".."):
            return rel
    return full


class Checkpoints:
    """The checkpoints a runtime takes (see the module's docstring).

    Args:
        config: ``checkpoints``.
        home: ``HERMES_HOME`` (the shadow repositories are under ``checkpoints/``).
        writable_roots: ``code_execution.writable_roots`` (captured beside the workspace).
        remote: kernels run on another machine (docker, ssh, a Jupyter gateway): their files are
            not here, and nothing is taken.
    """

    def __init__(self, config: CheckpointsConfig, home: Path, *, writable_roots: Iterable[str] = (),
                 remote: bool = False, host: str = "") -> None:
        self.config = config
        self.home = home
        self.writable_roots = [os.path.realpath(os.path.expanduser(r)) for r in writable_roots]
        self.remote = remote
        self.host = host
        self.staging_root: str | None = None
        """The runtime's private folder: a strict kernel's own folder is in it (never captured)."""
        self.log: Log | None = None
        """Set by the owner of a sessions store; None: no checkpoints are taken."""
        self.sessions: set[str] = set()
        """The sessions whose checkpoints are kept (the ones open in the store); others' calls
        (a bare ``execute_code`` on a session the store does not hold) take none."""
        self._repos: dict[str, ShadowRepo | None] = {}
        self.restored: Callable[[list[str]], Awaitable[None]] | None = None
        """Told the folders a rollback wrote (the instruction-file guard takes them as they are)."""
        self._numbers: dict[str, int] = {}
        self._open: dict[str, list[Checkpoint]] = {}
        self._turns: dict[str, str] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.notes: dict[str, list[str]] = {}
        """Session → what to tell its next script's result (checkpoints off, a rollback)."""
        self._said: set[str] = set()
        self._unsaid: list[str] = []
        self._rolled: dict[str, str] = {}
        self.unavailable: str | None = None
        """Why no checkpoint can be taken on this machine (git is not installed), once found."""
        self._counting: set[asyncio.Future[None]] = set()

    # -- which folders ----------------------------------------------------------------------

    @property
    def active(self) -> bool:
        """Checkpoints are being taken (a log, not off, files here)."""
        return self.log is not None and self.config.enabled is not False and not self.remote and not self.unavailable

    def roots(self, cwd: str | None, mode: str = "project") -> list[str]:
        """The folders a session working in ``cwd`` writes: ``cwd`` in project mode (a strict
        kernel's own folder is deleted with it), and the writable roots; those checkpoints are
        off for (``enabled: auto``) are left out, and said once."""
        chosen = list(self.writable_roots)
        if cwd and mode == "project" and not _under(os.path.realpath(cwd), self.staging_root):
            chosen.insert(0, os.path.realpath(cwd))
        roots: list[str] = []
        for root in chosen:
            if any(_under(root, other) for other in chosen if other != root):
                continue  # inside another folder captured: once, in the outer one
            if root not in roots and self.repo(root) is not None:
                roots.append(root)
        return roots

    def repo(self, root: str) -> ShadowRepo | None:
        """The shadow repository of ``root``, or None when checkpoints are off for it."""
        if root not in self._repos:
            self._repos[root] = self._shadow(root) if self._wanted(root) else None
        return self._repos[root]

    def _shadow(self, root: str) -> ShadowRepo:
        return ShadowRepo(self.home, root, max_file_size=self.config.file_cap, exclude=[str(self.home)])

    def _wanted(self, root: str) -> bool:
        if not os.path.isdir(root) or root == os.path.realpath(self.home):
            return False
        if self.config.enabled is True:
            return True
        if in_git_work_tree(root) or count_files(root, SMALL_FOLDER) <= SMALL_FOLDER:
            return True
        self._say_once(root, f"Checkpoints are off for {root}: it is not in a git repository and holds more than "
                             f"{SMALL_FOLDER:,} files (checkpoints.enabled: true takes them anyway).")
        return False

    def _say_once(self, key: str, text: str) -> None:
        if key not in self._said:
            self._said.add(key)
            log.info("%s", text)
            self._unsaid.append(text)

    # -- taking them ---------------------------------------------------------------------------

    def turn(self, session: str, turn_id: str | None) -> None:
        """The turn ``session`` is in from now (checkpoints of its calls name it)."""
        if turn_id is None:
            self._turns.pop(session, None)
        else:
            self._turns[session] = turn_id

    async def begin(self, session: str, reason: str, detail: str = "", *, cwd: str | None = None, mode: str = "project",
                    roots: list[str] | None = None, call_id: str | None = None, turn_id: str | None = None,
                    message_id: int | None = None, hold: bool = True) -> Checkpoint | None:
        """Take checkpoint N+1 of ``session`` before ``reason`` runs and store it; None when
        none is taken (off, no folder, or the snapshot failed: said in the session's notes,
        and the call runs anyway). ``hold``: the call's changes are its own until :meth:`end`."""
        if not self.active or session not in self.sessions:
            return None
        roots = roots if roots is not None else await asyncio.to_thread(self.roots, cwd, mode)
        if not roots:
            return None
        assert self.log is not None
        async with self._lock(session):
            number = self._numbers.get(session)
            if number is None:
                try:
                    number = await self.log.last(session)
                except Exception as exc:  # the store's failure (a shared server down) never stops the call
                    self.notes.setdefault(session, []).append(
                        f"No checkpoint was taken: the sessions store could not be read ({type(exc).__name__}: {exc}).")
                    return None
            checkpoint = Checkpoint(session, number + 1, time.time(), reason, detail[:120],
                                    turn_id or self._turns.get(session), call_id, message_id=message_id, host=self.host)
            if not await self._capture(session, roots, checkpoint):
                return None
            self._numbers[session] = checkpoint.n  # first: a save cut short must not give its number twice
            if not await self._save(checkpoint):
                return None
            if hold:
                self._open.setdefault(session, []).append(checkpoint)
        return checkpoint

    async def end(self, checkpoint: Checkpoint | None) -> None:
        """The call ``checkpoint`` preceded has ended: what it changed goes in its ledger.

        Done after the call's result is returned (:meth:`settle` waits for it): the call stays
        the newest open one until then, so a checkpoint taken meanwhile still credits it with
        what it wrote."""
        if checkpoint is None or self.log is None:
            return
        self._later(self._end(checkpoint))

    def _later(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._counting.add(task)
        task.add_done_callback(self._counting.discard)

    async def _end(self, checkpoint: Checkpoint) -> None:
        session = checkpoint.session
        async with self._lock(session):
            await self._capture(session, list(checkpoint.commits), None)
            held = self._open.get(session, [])
            if checkpoint in held:
                held.remove(checkpoint)
            await self._save(checkpoint)

    async def _save(self, checkpoint: Checkpoint) -> bool:
        """Store ``checkpoint``; a store that fails (a shared server down) is said, and the
        call goes on without it."""
        if self.log is None:
            return False
        try:
            await self.log.save(checkpoint, self.config.max_snapshots)
        except Exception as exc:  # the store's failure must not stop the call it precedes
            text = f"Checkpoint {checkpoint.n} could not be stored ({type(exc).__name__}: {exc}); it is not listed."
            log.warning("%s", text)
            self.notes.setdefault(checkpoint.session, []).append(text)
            return False
        return True

    async def _capture(self, session: str, roots: list[str], checkpoint: Checkpoint | None) -> bool:
        """Snapshot ``roots``; what changed since the last snapshot is the doing of the
        session's newest open call, if any (else the user's). False when a snapshot failed."""
        held = self._open.get(session)
        doer = held[-1] if held else None
        for root in roots:
            repo = self.repo(root)
            if repo is None:
                continue
            try:
                shot = await asyncio.to_thread(repo.snapshot, f"{session} {checkpoint.n if checkpoint else 'end'}")
            except (ShadowError, OSError) as exc:
                if isinstance(exc, ShadowError) and exc.missing_git:  # said once; none is tried again
                    self.unavailable = str(exc)
                    self._say_once("git", f"Checkpoints are off: {exc}.")
                    return False
                if isinstance(exc, ShadowError) and exc.timed_out:  # not tried again before every call
                    self._repos[root] = None
                    self._say_once(root, f"Checkpoints are off for {root} from now on: {exc} (too big to capture; "
                                         "checkpoints.enabled: false stops trying).")
                    return False
                text = f"No checkpoint was taken of {root}: {exc}"
                log.warning("%s", text)
                self.notes.setdefault(session, []).append(text)
                return False
            if doer is not None and shot.changed:
                ledger = doer.changed.setdefault(root, {})
                for path in shot.changed:
                    ledger.setdefault(path, [0, 0])
                if len(ledger) > LEDGER_MAX:
                    doer.changed[root] = ledger = {EVERYTHING: [0, 0]}
                if shot.parent is not None:  # the lines counted off the call's path, then stored again
                    self._count(doer, root, repo, shot.parent, shot.commit)
            if checkpoint is not None:
                checkpoint.commits[root] = shot.commit
                if shot.skipped:
                    checkpoint.skipped[root] = shot.skipped
            if doer is not None and shot.skipped:
                doer.skipped.setdefault(root, {}).update(shot.skipped)
        return True

    def _count(self, doer: Checkpoint, root: str, repo: ShadowRepo, old: str, new: str) -> None:
        async def count() -> None:
            try:
                counts = await asyncio.to_thread(repo.numstat, old, new)
            except (ShadowError, OSError) as exc:
                log.debug("lines of %s..%s not counted: %s", old, new, exc)
                return
            ledger = doer.changed.setdefault(root, {})
            for path, (added, removed) in counts.items():
                if EVERYTHING in ledger:
                    ledger[EVERYTHING] = [ledger[EVERYTHING][0] + max(added, 0),
                                          ledger[EVERYTHING][1] + max(removed, 0)]
                elif path in ledger:
                    ledger[path] = [ledger[path][0] + max(added, 0), ledger[path][1] + max(removed, 0)]
            if doer not in self._open.get(doer.session, ()):  # ended already: its stored row gets them
                await self._save(doer)

        self._later(count())

    async def settle(self) -> None:
        """Wait until every ended call's snapshot is taken and its lines counted and stored."""
        while self._counting:
            await asyncio.gather(*list(self._counting), return_exceptions=True)

    def _lock(self, session: str) -> asyncio.Lock:
        lock = self._locks.get(session)
        if lock is None:
            lock = self._locks[session] = asyncio.Lock()
        return lock

    # -- rolling back -------------------------------------------------------------------------

    async def plan(self, session: str, n: int, files: list[str] | None = None, cwd: str | None = None) -> RollbackPlan:
        """What a rollback of ``session`` to checkpoint ``n`` would change. Raises
        :class:`RollbackError` with one line when it cannot be done."""
        if self.log is None:
            raise RollbackError("checkpoints are not kept here (no sessions store)")
        rows = await self.log.all(session)
        return await asyncio.to_thread(self.plan_from, rows, n, files, cwd)

    def plan_from(self, rows: list[Checkpoint], n: int, files: list[str] | None, cwd: str | None) -> RollbackPlan:
        """:meth:`plan` from the session's checkpoints (blocking)."""
        target = next((row for row in rows if row.n == n), None)
        if target is None:
            numbers = [row.n for row in rows]
            have = f"it has {numbers[0]}–{numbers[-1]}" if numbers else "it has none"
            raise RollbackError(f"checkpoint {n} is not one of this session's ({have}; /checkpoints lists them)")
        self.check_here(target)
        later = [row for row in rows if row.n >= n]
        changes: dict[str, list[Change]] = {}
        skipped: dict[str, dict[str, int]] = {}
        # Every folder the target or a later checkpoint holds (a strict session's working folder
        # first appears with the model's own write_file): as the earliest of them has it.
        commits: dict[str, str] = {}
        plan_commits: dict[str, str] = {}
        for row in later:
            for root, commit in row.commits.items():
                commits.setdefault(root, commit)
        for root, commit in commits.items():
            repo = self.repo_for(root)
            big = {path: size for row in later for path, size in row.skipped.get(root, {}).items()}
            if files is not None:
                paths = sorted({p for p in (_inside(root, f, cwd) for f in files) if p is not None} - set(big))
                if not paths:
                    continue
            elif any(EVERYTHING in row.changed.get(root, {}) for row in later):
                paths = None  # a call changed too many files to list: every file that differs
            else:
                paths = sorted({path for row in later for path in row.changed.get(root, {})} - set(big))
            try:
                found = repo.changes(commit, paths)
            except ShadowError as exc:
                raise RollbackError(str(exc)) from None
            if found:
                changes[root] = found
                plan_commits[root] = commit
            touched = {path for row in later for path in row.changed.get(root, {})}
            left = {path: size for path, size in big.items() if files is None or path in touched}
            if left:
                skipped[root] = left
        if files is not None and not changes:
            raise RollbackError(f"none of {', '.join(files)} differs from checkpoint {n} (or is in its folders)")
        return RollbackPlan(target, changes, skipped, files_asked=files is not None, commits=plan_commits)

    def check_here(self, checkpoint: Checkpoint) -> None:
        """Raise :class:`RollbackError` when ``checkpoint``'s snapshots are on another machine
        (a shared store lists every machine's; the snapshots stay where the folder is)."""
        if checkpoint.host and self.host and checkpoint.host != self.host:
            raise RollbackError(f"checkpoint {checkpoint.n} was taken on {checkpoint.host}: its snapshots are in "
                                f"$HERMES_HOME/checkpoints there, not on {self.host}; roll back from there")

    def repo_for(self, root: str) -> ShadowRepo:
        """The repository a stored checkpoint of ``root`` is in (even where auto would be off now)."""
        repo = self._repos.get(root)
        return repo if repo is not None else self._shadow(root)

    async def rollback(self, plan: RollbackPlan, message_id: int | None = None) -> tuple[Checkpoint | None, list[str]]:
        """Do ``plan``: a checkpoint first (so the rollback can itself be undone), then the files.
        Returns that checkpoint and one line per file that could not be put back."""
        target = plan.target
        roots = list(plan.changes) or list(target.commits)
        before = await self.begin(target.session, "rollback", f"rollback to {target.n}", roots=roots,
                                  message_id=message_id)
        if before is None:  # it could not be undone: nothing is written
            why = "checkpoints.enabled is false" if self.config.enabled is False else \
                "; ".join(self.notes.get(target.session, [])[-1:]) or "it could not be taken"
            raise RollbackError(f"no checkpoint could be taken first ({why}), so the rollback could not be undone; "
                                "nothing was changed")
        problems: list[str] = []
        try:
            for root, changes in plan.changes.items():
                problems += await asyncio.to_thread(self.repo_for(root).restore, plan.commits[root], changes)
        finally:
            await self.end(before)
            await self.settle()  # the rollback's own changes are in its checkpoint's ledger now
            if self.restored is not None:  # a person asked for these files as they were: consent
                await self.restored(roots)
        main = roots[0] if roots else None
        names = [shown(shown_path(root, c.path, main)) for root, changes in plan.changes.items() for c in changes]
        if names:  # the kernel hears of the newest rollback only: one note, not one per rollback
            self._rolled[target.session] = (
                f"/rollback to checkpoint {target.n} changed {plural(len(names), 'file')} under this kernel: "
                f"{', '.join(names[:10])}{' …' if len(names) > 10 else ''} (its variables were kept; modules imported "
                "from those files are as they were)")
        return before, problems

    def take_notes(self, session: str) -> list[str]:
        """What to say with the next result of ``session`` (said once), with what concerns
        every session (a folder checkpoints are off for) the first time."""
        general, self._unsaid = self._unsaid, []
        rolled = self._rolled.pop(session, None)
        return general + self.notes.pop(session, []) + ([rolled] if rolled else [])


class RollbackError(Exception):
    """A rollback that cannot be done, in one line."""


def _inside(root: str, path: str, cwd: str | None) -> str | None:
    """``path`` (relative to ``cwd``, or absolute) as a path inside ``root``, or None."""
    joined = os.path.normpath(os.path.join(cwd or root, os.path.expanduser(path)))
    # through a linked folder (the user's path to the project): the folder resolved, the name kept
    full = os.path.join(os.path.realpath(os.path.dirname(joined)), os.path.basename(joined)) \
        if os.path.basename(joined) else os.path.realpath(joined)
    real_root = root.rstrip(os.sep)
    if full == real_root:
        return "."
    if not full.startswith(real_root + os.sep):
        return None
    return os.path.relpath(full, real_root)


def _under(path: str, folder: str | None) -> bool:
    return folder is not None and (path == folder or path.startswith(folder.rstrip(os.sep) + os.sep))


def in_git_work_tree(folder: str) -> bool:
    """``folder`` or one above it has a ``.git`` (a repository's work tree). Blocking."""
    current = os.path.realpath(folder)
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return True
        parent = os.path.dirname(current)
        if parent == current:
            return False
        current = parent


def count_files(folder: str, limit: int) -> int:
    """Files under ``folder``, counted up to ``limit + 1`` (``.git`` folders skipped). Blocking."""
    count = 0
    for _, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != ".git"]
        count += len(files)
        if count > limit:
            return count
    return count
