"""Checkpoints kept in the sessions store, and the work of ``/checkpoints``, ``/diff`` and
``/rollback`` (the app and the headless commands both call these; docs/checkpoints.md).

The runtime takes the snapshots (:mod:`hermes_tui.runtime.checkpoints`); this module gives it the
store as its :class:`~hermes_tui.runtime.checkpoints.book.Log`, reads a command's words, lists,
and rewinds the conversation with a rollback.
"""

from __future__ import annotations

import asyncio
import shlex
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from hermes_tui.base.text import shown
from hermes_tui.base.units import plural
from hermes_tui.runtime.checkpoints.book import Checkpoint, Checkpoints, RollbackError, RollbackPlan
from hermes_tui.runtime.checkpoints.shadow import ShadowError
from hermes_tui.storage import checkpoints as cdb
from hermes_tui.storage.writer import SessionStore


class Store(Protocol):
    """What runs the store's statements: a :class:`SessionStore` (its writer thread), or a
    connection a shell command opened (``cli/checkpoints_cmd.py``)."""

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(db, *args)`` on the store, once committed."""


class StoreLog:
    """The sessions store as the runtime's checkpoint log: each checkpoint is committed before
    the call it precedes runs."""

    def __init__(self, store: Store | SessionStore) -> None:
        self.store = store

    async def last(self, session: str) -> int:
        return await self.store.call(cdb.last_checkpoint, session)

    async def save(self, checkpoint: Checkpoint, keep: int) -> None:
        await self.store.call(cdb.save_checkpoint, checkpoint.as_json(), keep)

    async def all(self, session: str) -> list[Checkpoint]:
        return [Checkpoint.from_json(row) for row in await self.store.call(cdb.checkpoints_of, session)]


@dataclass
class RollbackArgs:
    """``/rollback N [--conversation] [--files PATH...] [--yes]`` read."""

    n: int
    conversation: bool = False
    files: list[str] | None = None
    yes: bool = False


ROLLBACK_USAGE = "/rollback N [--conversation] [--files PATH ...] (N from /checkpoints)"


def rollback_args(text: str) -> RollbackArgs | str:
    """The words after ``/rollback``, or the one-line error saying what is allowed."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        return f"/rollback: {exc}. Use {ROLLBACK_USAGE}."
    if not words:
        return f"/rollback needs a checkpoint number: {ROLLBACK_USAGE}."
    number, rest = words[0], words[1:]
    if not number.isdigit() or int(number) < 1:
        return f"/rollback: {number!r} is not a checkpoint number (1, 2, …): {ROLLBACK_USAGE}."
    args = RollbackArgs(int(number))
    while rest:
        word = rest.pop(0)
        if word in ("--conversation", "-c"):
            args.conversation = True
        elif word in ("--yes", "-y"):
            args.yes = True
        elif word == "--files":
            args.files = []
            while rest and not rest[0].startswith("--"):
                args.files.append(rest.pop(0))
            if not args.files:
                return f"/rollback: --files needs at least one path: {ROLLBACK_USAGE}."
        else:
            return f"/rollback: {word!r} is not understood: {ROLLBACK_USAGE}."
    return args


def diff_number(text: str) -> int | str:
    """The checkpoint number of ``/diff N``, or the one-line error."""
    word = text.strip()
    if not word.isdigit() or int(word) < 1:
        return f"/diff needs a checkpoint number (1, 2, …; /checkpoints lists them), not {word!r}." if word else \
            "/diff needs a checkpoint number: /diff N (/checkpoints lists them)."
    return int(word)


def listing(rows: list[Checkpoint], *, turn_id: str | None = None) -> list[str]:
    """One line per checkpoint: number, time, what it came before, what that changed."""
    lines = []
    for row in rows:
        when = datetime.fromtimestamp(row.created).strftime("%H:%M:%S" if time.time() - row.created < 86400
                                                            else "%Y-%m-%d %H:%M")
        added, removed = row.lines
        changed = f"{plural(row.files, 'file')} +{added} -{removed}" if row.files else "no change"
        mark = "·" if turn_id is not None and row.turn_id == turn_id else " "
        skipped = sum(len(p) for p in row.skipped.values())
        extra = f", {skipped} not captured (too large)" if skipped else ""
        lines.append(f"{mark}{row.n:>4}  {when}  {row.what()}  → {changed}{extra}")
    return lines


@dataclass
class RollbackDone:
    """What a rollback did, for the notes."""

    plan: RollbackPlan
    before: Checkpoint | None
    problems: list[str] = field(default_factory=list)
    rewound: tuple[int, int] | None = None

    def notes(self) -> list[str]:
        """Lines for the conversation or a shell."""
        target = self.plan.target
        out = [f"Rolled back {plural(self.plan.count, 'file')} to checkpoint {target.n} ({target.what()})."
               if self.plan.count else f"No file differed from checkpoint {target.n}."]
        if self.before is not None:
            out.append(f"Checkpoint {self.before.n} holds the files as they were before: /rollback {self.before.n} "
                       "undoes this.")
        if self.rewound is not None:
            hidden, shown = self.rewound
            out.append(f"The conversation went back to before that turn: {plural(hidden, 'message')} hidden from the "
                       f"model (kept in the store{', ' + str(shown) + ' shown again' if shown else ''}).")
        out += [f"Not put back: {problem}" for problem in self.problems]
        return out


async def rollback(book: Checkpoints, store: Store | SessionStore, plan: RollbackPlan, *,
                   conversation: bool) -> RollbackDone:
    """Do ``plan`` (its question was answered yes): the files, then, with ``conversation``, the
    conversation rewound to before the checkpoint's turn."""
    session = plan.target.session
    await book.settle()
    message_id = await store.call(cdb.last_message_id, session)
    before, problems = await book.rollback(plan, message_id=message_id)
    done = RollbackDone(plan, before, problems)
    if conversation:
        target = plan.target
        keep = await store.call(cdb.rewind_point, session, target.turn_id, target.message_id)
        done.rewound = await store.call(cdb.rewind_messages, session, keep, before.n if before else 0, target.n)
    return done


def question(plan: RollbackPlan, cwd: str | None, *, conversation: bool) -> str:
    """What the user is asked before anything is written: exactly which files change."""
    lines = plan.lines(cwd)
    counts = Counter(change.action for changes in plan.changes.values() for change in changes)
    each = ", ".join(f"{counts[action]} to {action}" for action in ("delete", "recreate", "restore") if counts[action])
    head = (f"Roll back to checkpoint {plan.target.n} ({shown(plan.target.what())})? "
            f"{plural(plan.count, 'file')} will change ({each}):")
    tail = ["A checkpoint is taken first: the rollback can be undone."]
    if conversation:
        tail.append("The conversation goes back to before that turn (later messages are kept, hidden).")
    return "\n".join([head, *("  " + line for line in lines[:40]),
                      *([f"  … and {len(lines) - 40} more"] if len(lines) > 40 else []), *tail])


async def plan_or_error(book: Checkpoints, session: str, args: RollbackArgs, cwd: str | None) -> RollbackPlan | str:
    """The rollback's plan, or the one line saying why there is none."""
    try:
        return await book.plan(session, args.n, args.files, cwd)
    except (RollbackError, ShadowError) as exc:
        return f"/rollback {args.n}: {exc}"


async def write_diff(book: Checkpoints, session: str, n: int, dest: Path) -> int:
    """Write the diff from checkpoint ``n`` to the files as they are now into ``dest`` (git
    streams it: a diff of any size); its size in bytes. Raises RollbackError."""
    if book.log is None:
        raise RollbackError("checkpoints are not kept here (no sessions store)")
    rows = await book.log.all(session)
    target = next((row for row in rows if row.n == n), None)
    if target is None:
        raise RollbackError(f"checkpoint {n} is not one of this session's (/checkpoints lists them)")
    book.check_here(target)

    def write() -> int:
        with open(dest, "wb") as handle:
            for root, commit in target.commits.items():
                if len(target.commits) > 1:
                    handle.write(f"# {root}\n".encode("utf-8", "surrogateescape"))
                book.repo_for(root).diff(commit, handle)
        return dest.stat().st_size

    try:
        return await asyncio.to_thread(write)
    except (ShadowError, OSError) as exc:
        raise RollbackError(str(exc)) from None
