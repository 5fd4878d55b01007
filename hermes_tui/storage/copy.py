"""Copy sessions from one store to another (``hermes-tui store migrate``): a SQLite file to a
PostgreSQL server, back, or between two of either.

What is copied is everything of a session: its ``sessions`` row, ``turns``, ``messages``
(reasoning and status too), ``tool_calls``, ``approvals`` (pending and answered),
``approval_answers`` and ``usage``; and the ``input_history``. Leases are not: who drives a
session is a fact about the store it runs on, not part of the session.

* **Ids.** ``messages``, ``usage`` and ``input_history`` number their rows themselves, and the
  target has its own numbers: messages are inserted without their id (in their order, so the
  conversation reads the same) and ``tool_calls.message_id`` / ``usage.message_id`` are
  pointed at the new ids.
* **Identity.** A session is more than its id: two machines can each run ``--session dup-1``.
  A session the target holds under the same id is the same session only when it was created at
  the same moment (``sessions.created_at``, kept as it was by every copy) and one side's messages
  are the start of the other's (each message by its role, turn and time). Anything else with the
  same id — another session, or one session continued apart on both sides — is refused
  (:data:`REFUSE`), or copied under a new id with ``rename`` (:data:`RENAME`): never replaced.
  The next ``rename`` knows that copy (``ID-2``: the same creation, one side's messages the start
  of the other's) and does to it what it does to a session under its own id: skips it, replaces
  it when the session grew in the source, keeps it when it went on in the target. It never
  copies the session a second time.
* **Idempotent.** A session already in the target with as many messages and the same state
  is skipped; one with fewer messages (it grew in the source since) is replaced; one with more
  is kept (it was continued in the target). Each session is copied in one transaction on the
  target, so an interrupted copy leaves whole sessions only, and running it again finishes it.
* **The source is only read**: opened without migrating its schema, in read-only transactions
  (PostgreSQL ``READ ONLY``, SQLite ``PRAGMA query_only``), each session read in one snapshot.
  An older schema is read as it is (the columns it lacks take the target's defaults).

No printing here: :func:`copy_sessions` reports each session to a callback.
"""

from __future__ import annotations

import secrets
import sqlite3
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from hermes_tui.base.fsutil import file_kind
from hermes_tui.storage.base import Database
from hermes_tui.storage.errors import SchemaTooNew, StoreError, StoreUnavailable
from hermes_tui.storage.leases import STALE_AFTER, all_leases
from hermes_tui.storage.schema import LATEST
from hermes_tui.storage.sessions import CHILD
from hermes_tui.storage.sqlite import SQLiteDatabase
from hermes_tui.config.store_url import StoreURL

SESSION_TABLES = ("turns", "messages", "tool_calls", "approvals", "approval_answers", "usage", "checkpoints")
"""The tables that hold a session's rows (``session_id``), in the order they are copied."""
NUMBERED = frozenset({"messages", "usage", "input_history"})
"""Tables whose ``id`` the target gives (it is not copied)."""

COPY, REPLACE, SKIP, KEEP, REFUSE, RENAME = "copy", "replace", "skip", "keep", "refuse", "rename"
"""What the plan does with a session."""
COPIED, REPLACED, SKIPPED, KEPT, FAILED, GONE = "copied", "replaced", "skipped", "kept", "failed", "gone"
REFUSED, RENAMED = "refused", "renamed"
"""What happened to it."""


def open_source(url: StoreURL) -> Database:
    """Open ``url`` to read it, and only that: no schema migration, and SQLite's
    ``query_only`` on (PostgreSQL reads run in ``READ ONLY`` transactions: :func:`reading`).

    A SQLite file that does not exist (or is not a regular file) is a one-line
    :class:`StoreError` (nothing is created); a file that is not a database raises
    ``sqlite3.Error``; PostgreSQL errors are StoreErrors without the password.
    """
    if url.kind == "sqlite":
        path = url.path
        assert path is not None
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            raise StoreError(f"the sessions store {path} does not exist") from None
        except OSError as exc:
            raise StoreError(f"the sessions store {path} cannot be read: {exc.strerror or exc}") from None
        if not stat.S_ISREG(mode):  # SQLite would block for ever reading a FIFO
            raise StoreError(f"the sessions store {path} is {file_kind(mode)}, not a regular file")
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=10)
        try:
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA query_only = ON")
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # not a database: fails here
        except BaseException:
            conn.close()
            raise
        return SQLiteDatabase(conn, path)
    from hermes_tui.storage.postgres import PostgresDatabase  # psycopg only when it is used

    return PostgresDatabase(url, max_size=2)


@contextmanager
def reading(db: Database) -> Iterator[None]:
    """One read-only snapshot of ``db``: the statements inside see the same moment (a session
    written meanwhile is read whole, as it was, or not at all)."""
    if db.kind == "sqlite":
        db.execute("BEGIN")  # deferred: a read lock only, and one snapshot in WAL mode
        try:
            yield
        finally:
            db.execute("COMMIT")
        return
    with db.unit():
        db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield


def tables(db: Database) -> set[str]:
    """The tables ``db`` holds."""
    if db.kind == "sqlite":
        return {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return {row[0] for row in db.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")}


def columns(db: Database, table: str) -> list[str]:
    """The columns of ``table`` in ``db``, in their order."""
    if db.kind == "sqlite":
        return [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
    return [row[0] for row in db.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND table_name = ? ORDER BY ordinal_position", (table,))]


def schema_version(db: Database, present: set[str] | None = None) -> int:
    """The schema version ``db`` holds, read without changing it (0: no schema yet; a SQLite
    file from before the version table: its ``PRAGMA user_version``)."""
    present = tables(db) if present is None else present
    if "schema_version" in present:
        return int(db.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] or 0)
    if db.kind == "sqlite":
        return int(db.execute("PRAGMA user_version").fetchone()[0] or 0)
    return 0


def check_source(db: Database) -> set[str]:
    """Refuse a source that is not a sessions store, or that a newer hermes-tui wrote (its
    rows could hold what this one would drop); the tables it holds."""
    present = tables(db)
    if "sessions" not in present or "messages" not in present:
        raise StoreError(f"{db.label} is not a hermes-tui sessions store (it has no sessions table)")
    version = schema_version(db, present)
    if version > LATEST:
        raise SchemaTooNew(f"the sessions store {db.label} has schema version {version}, newer than this "
                           f"hermes-tui knows ({LATEST}): upgrade hermes-tui to copy from it")
    return present


def pg_address(url: StoreURL) -> tuple[str, str, str]:
    """(host or socket folder, port, database) a ``postgresql://`` URL names."""
    parts = urlsplit(url.text)
    query = dict(parse_qsl(parts.query))
    host = query.get("host") or parts.hostname or ""
    port = query.get("port") or str(parts.port or 5432)
    return host.lower().rstrip("/"), port, query.get("dbname") or parts.path.strip("/")


def same_place(a: StoreURL, b: StoreURL) -> bool:
    """True when the two URLs plainly name one store (the same file; the same server address and
    database). Two addresses of one server (a socket and TCP) are caught by :func:`identity`."""
    if a.kind != b.kind:
        return False
    if a.kind == "sqlite":
        assert a.path is not None and b.path is not None
        try:
            return a.path.samefile(b.path)
        except OSError:  # one does not exist (yet)
            return a.path.resolve() == b.path.resolve()
    return pg_address(a) == pg_address(b)


def identity(db: Database) -> tuple[Any, ...]:
    """What tells one PostgreSQL database from every other: the database's name, the server's
    port and the moment it started (readable by any user)."""
    row = db.execute("SELECT current_database(), current_setting('port'), "
                     "CAST(pg_postmaster_start_time() AS TEXT)").fetchone()
    return tuple(row)


# -- how far a session has got ----------------------------------------------------------------


@dataclass(frozen=True)
class Progress:
    """How far a session has got, from counts that grow as it goes on."""

    messages: int = 0
    done: int = 0
    """Messages whose status is ``done`` (a reply still streaming is not)."""
    turns: int = 0
    settled_turns: int = 0
    """Turns no longer running."""
    resumes: int = 0
    calls: int = 0
    finished_calls: int = 0
    approvals: int = 0
    answered: int = 0
    """Approvals no longer pending."""
    answers: int = 0
    """Answers given from a shell."""
    usage: int = 0

    @property
    def settled(self) -> int:
        """Everything that happened in it, counted once: more means further on."""
        return (self.done + self.turns + self.settled_turns + self.resumes + self.calls + self.finished_calls
                + self.approvals + self.answered + self.answers + self.usage)


_TALLIES = {
    "messages": ("COUNT(*), SUM(CASE WHEN status = 'done' THEN 1 ELSE 0 END)", ("messages", "done")),
    "turns": ("COUNT(*), SUM(CASE WHEN status <> 'running' THEN 1 ELSE 0 END), {resumes}",
              ("turns", "settled_turns", "resumes")),
    "tool_calls": ("COUNT(*), SUM(CASE WHEN finished_at IS NOT NULL THEN 1 ELSE 0 END)",
                   ("calls", "finished_calls")),
    "approvals": ("COUNT(*), SUM(CASE WHEN status <> 'pending' THEN 1 ELSE 0 END)", ("approvals", "answered")),
    "approval_answers": ("COUNT(*)", ("answers",)),
    "usage": ("COUNT(*)", ("usage",)),
}


def tallies(db: Database, present: set[str]) -> dict[str, Progress]:
    """Every session of ``db`` and how far it has got (one grouped scan per table)."""
    counts: dict[str, dict[str, int]] = {row[0]: {} for row in db.execute("SELECT id FROM sessions")}
    for table, (select, names) in _TALLIES.items():
        if table not in present:  # an older schema
            continue
        resumes = "SUM(resumes)" if table == "turns" and "resumes" in columns(db, "turns") else "0"
        for row in db.execute(f"SELECT session_id, {select.format(resumes=resumes)} FROM {table} GROUP BY session_id"):
            if row[0] in counts:
                counts[row[0]].update((name, int(value or 0)) for name, value in zip(names, row[1:]))
    return {session: Progress(**values) for session, values in counts.items()}


# -- the plan ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Planned:
    """What will be done with one session."""

    id: str
    action: str
    """:data:`COPY`, :data:`REPLACE`, :data:`SKIP` or :data:`KEEP`."""
    messages: int
    """Its messages in the source."""
    why: str = ""
    new_id: str = ""
    """The id it is copied under in the target (:data:`RENAME`), or that an earlier ``--rename``
    copied it under (then :data:`SKIP`, :data:`REPLACE` or :data:`KEEP` are done to that copy)."""


def with_children(wanted: Iterable[str], known: Iterable[str]) -> set[str]:
    """``wanted`` and the sessions of their sub-agents (``ID::child::...``, at any depth)."""
    wanted = set(wanted)
    return {s for s in known if s in wanted or any(s.startswith(w + CHILD) for w in wanted)}


def decide(session_id: str, source: Progress, target: Progress | None, driver: str | None = None) -> Planned:
    """What to do with a session the source holds as ``source`` and the target as ``target``
    (None: not there); ``driver`` describes who drives it in the target now, if anyone."""
    if target is None:
        return Planned(session_id, COPY, source.messages)
    if target == source:
        return Planned(session_id, SKIP, source.messages, "already there")
    if target.messages > source.messages:
        return Planned(session_id, KEEP, source.messages,
                       f"the target has more ({target.messages} messages, the source {source.messages})")
    # Same messages, different state: the side whose session went further wins (a reply that
    # finished streaming, a turn that ended, an approval answered in the source since).
    if target.messages == source.messages and target.settled >= source.settled:
        return Planned(session_id, KEEP, source.messages,
                       "the target has more (as many messages, and it went on there since)")
    if driver is not None:  # replacing it would pull the session from under whoever drives it
        return Planned(session_id, KEEP, source.messages, f"it is in use in the target now ({driver})")
    grew = "it grew in the source" if target.messages < source.messages else "it changed in the source"
    return Planned(session_id, REPLACE, source.messages,
                   f"{grew} ({target.messages} -> {source.messages} messages)")


def plan_copy(source: Database, target: Database, only: Iterable[str] | None = None, *,
              rename: bool = False) -> list[Planned]:
    """What :func:`copy_sessions` would do with each session of ``source`` (or of ``only`` and
    their sub-agents), parents before their sub-agents. A session whose id the target holds for
    another session (:func:`conflict`) is refused, or with ``rename`` copied under a new id
    (its sub-agents follow it)."""
    chosen: Iterable[str]
    with reading(source):
        present = check_source(source)
        have = tallies(source, present)
        chosen = sorted(have.keys() if only is None else with_children(only, have))
        mine = {s: facts(source, s) for s in chosen}
    with reading(target):
        theirs = tallies(target, tables(target))
        drivers = {s: lease.describe() for s, lease in all_leases(target).items() if lease.age <= STALE_AFTER}
        other = {s: facts(target, s) for s in chosen if s in theirs}
    taken = set(theirs) | set(have)
    renamed: dict[str, str] = {}
    refused: set[str] = set()
    plan = []
    for s in chosen:
        parent = _renamed_parent(s, renamed, refused)
        ancestor, ancestor_id = parent if parent is not None else (None, None)
        if ancestor is not None and ancestor_id is None:  # its parent was refused: not under another's id
            plan.append(Planned(s, REFUSE, have[s].messages,
                                f"its parent session {ancestor} was refused"))
            refused.add(s)
            continue
        if ancestor is not None and ancestor_id is not None:  # its parent is copied under a new id: it follows
            new_id = ancestor_id + s[len(ancestor):]
            if new_id in theirs:
                with reading(target):
                    copied = facts(target, new_id)
                if _copy_of(mine[s], copied):  # an earlier --rename copied it there: it grows there
                    renamed[s] = new_id
                    plan.append(_into_copy(s, new_id, have[s], theirs[new_id], drivers.get(new_id)))
                    continue
            new_id = new_id if new_id not in taken else _fresh_id(new_id, taken)
            taken.add(new_id)
            renamed[s] = new_id
            plan.append(Planned(s, RENAME, have[s].messages, f"its parent is copied as {ancestor_id}", new_id))
            continue
        clash = conflict(s, mine[s], other[s]) if s in other else None
        if clash is None:
            plan.append(decide(s, have[s], theirs.get(s), drivers.get(s)))
        elif rename and (earlier := _earlier_copy(s, mine[s], theirs, target)) is not None:
            renamed[s] = earlier  # its sub-agents follow it there
            plan.append(_into_copy(s, earlier, have[s], theirs[earlier], drivers.get(earlier)))
        elif rename:
            new_id = _fresh_id(s, taken)
            taken.add(new_id)
            renamed[s] = new_id
            plan.append(Planned(s, RENAME, have[s].messages, f"{clash}; copied as {new_id}", new_id))
        else:
            refused.add(s)
            plan.append(Planned(s, REFUSE, have[s].messages,
                                f"{clash}; nothing was overwritten: --rename copies it under a new id"))
    return plan


def _renamed_parent(session_id: str, renamed: dict[str, str],
                    refused: set[str]) -> tuple[str, str | None] | None:
    """The nearest ancestor of a sub-agent's session that is renamed (its old and new id) or
    refused (its id, None); None when there is none."""
    cut = session_id.rfind(CHILD)
    while cut > 0:
        ancestor = session_id[:cut]
        if ancestor in renamed:
            return ancestor, renamed[ancestor]
        if ancestor in refused:
            return ancestor, None
        cut = ancestor.rfind(CHILD)
    return None


def _into_copy(session_id: str, copy_id: str, source: Progress, target: Progress,
               driver: str | None) -> Planned:
    """What to do with a session an earlier ``--rename`` copied as ``copy_id``: what
    :func:`decide` does with a session the target holds under its own id (skipped when it is
    there already, replaced when it grew in the source, kept when the target has more), done to
    that copy (:attr:`Planned.new_id`)."""
    planned = decide(copy_id, source, target, driver)
    return Planned(session_id, planned.action, source.messages, f"its copy from an earlier --rename; {planned.why}",
                   copy_id)


def _earlier_copy(session_id: str, mine: Facts, theirs: dict[str, Progress], target: Database) -> str | None:
    """The id an earlier ``--rename`` copied this very session under (``ID-2``, ...: created at
    the same moment, one side's messages the start of the other's: it may have grown in the
    source since), if any: a second run grows that copy, it does not copy the session again.
    Of several (a copy made twice by an older hermes-tui), the one that has got furthest."""
    found: list[tuple[int, int, str]] = []
    for other in theirs:
        tail = other[len(session_id) + 1:]
        if not (other.startswith(session_id + "-") and tail.isdigit()):
            continue
        with reading(target):
            copied = facts(target, other)
        if _copy_of(mine, copied):
            found.append((-len(copied.keys), int(tail), other))
    return min(found)[2] if found else None


def _copy_of(mine: Facts, copied: Facts) -> bool:
    """True when ``copied`` is a renamed copy of ``mine``, as it is now or from before it grew
    (or continued in the target since): created at the same moment, and one side's messages the
    start of the other's, each by its role and time (the rename may have made turn ids new)."""
    def loose(keys: tuple[tuple[Any, ...], ...]) -> tuple[tuple[Any, ...], ...]:
        return tuple((k[0], None, k[2]) for k in keys)

    return _same_time(mine.created_at, copied.created_at) and (
        _starts(loose(copied.keys), loose(mine.keys)) or _starts(loose(mine.keys), loose(copied.keys)))


def _fresh_id(session_id: str, taken: set[str]) -> str:
    """``ID-2``, ``ID-3``, ...: the first that neither store holds nor the plan gave."""
    n = 2
    while f"{session_id}-{n}" in taken:
        n += 1
    return f"{session_id}-{n}"


# -- who a session is -------------------------------------------------------------------------


@dataclass(frozen=True)
class Facts:
    """What tells a session from another with the same id."""

    created_at: float
    host: str | None
    first: str | None
    """Its first message's text (None: no message yet)."""
    keys: tuple[tuple[Any, ...], ...]
    """Each message, in order, by what a copy keeps of it and a later write never changes:
    (role, turn, time)."""


def facts(db: Database, session_id: str) -> Facts:
    """The :class:`Facts` of a session ``db`` holds (read in the caller's snapshot)."""
    row = db.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
    row = dict(row) if row is not None else {}
    keys = tuple((r[0], r[1], float(r[2])) for r in db.execute(
        "SELECT role, turn_id, created_at FROM messages WHERE session_id = ? ORDER BY id", (session_id,)))
    first = db.execute("SELECT content FROM messages WHERE session_id = ? ORDER BY id LIMIT 1",
                       (session_id,)).fetchone()
    return Facts(float(row.get("created_at") or 0.0), row.get("host"), None if first is None else (first[0] or ""),
                 keys)


def _same_time(a: float, b: float) -> bool:
    return abs(a - b) < 1e-6  # a double kept exactly by both backends; the slack is for nothing else


def _starts(shorter: tuple[tuple[Any, ...], ...], longer: tuple[tuple[Any, ...], ...]) -> bool:
    """True when the messages ``shorter`` names are the first of ``longer``."""
    return len(shorter) <= len(longer) and all(
        a[0] == b[0] and a[1] == b[1] and _same_time(a[2], b[2]) for a, b in zip(shorter, longer))


def conflict(session_id: str, source: Facts, target: Facts) -> str | None:
    """None when the target's session ``session_id`` is the source's (the same creation, one
    side's messages the start of the other's); else one line naming both."""
    if _same_time(source.created_at, target.created_at):
        if _starts(target.keys, source.keys) or _starts(source.keys, target.keys):
            return None
        shared = next((i for i, (a, b) in enumerate(zip(source.keys, target.keys))
                       if not _starts((a,), (b,))), min(len(source.keys), len(target.keys)))
        return (f"{session_id} was continued apart in both stores (the first {shared} messages shared; "
                f"source: {describe(source)}; target: {describe(target)})")
    return (f"the target's {session_id} is another session (source: {describe(source)}; "
            f"target: {describe(target)})")


def describe(facts: Facts) -> str:
    """``created 2026-12-02 06:10:03 on laptop, 4 messages, first 'fix the parser'``."""
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(facts.created_at)) if facts.created_at else "?"
    text = f"created {when}"
    if facts.host:
        text += f" on {facts.host}"
    text += f", {len(facts.keys)} message" + ("" if len(facts.keys) == 1 else "s")
    if facts.first is not None:
        first = " ".join(facts.first.split())
        first = first if len(first) <= 40 else first[:39] + "…"
        text += f", first {first!r}"
    return text


def live_sessions(db: Database) -> list[str]:
    """Sessions something drives in ``db`` now (a fresh lease): what they add after the copy
    is copied by the next run."""
    with reading(db):
        if "leases" not in tables(db):
            return []
        return sorted(s for s, lease in all_leases(db).items() if lease.age <= STALE_AFTER)


# -- the copy ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """What happened to one session."""

    id: str
    outcome: str
    """:data:`COPIED`, :data:`REPLACED`, :data:`SKIPPED`, :data:`KEPT`, :data:`FAILED`,
    :data:`GONE` (deleted from the source meanwhile), :data:`REFUSED` (the target holds another
    session under its id) or :data:`RENAMED` (copied under :attr:`new_id`)."""
    messages: int = 0
    """Messages written (copied or replaced), else the source's count."""
    why: str = ""
    new_id: str = ""


@dataclass
class CopyReport:
    """What :func:`copy_sessions` did, so far (it is filled as it goes: an interrupted copy
    still says what it finished)."""

    steps: list[Step] = field(default_factory=list)
    inputs: int = 0
    """Rows of the input history copied."""
    seconds: float = 0.0

    def count(self, outcome: str) -> int:
        """Sessions with this outcome."""
        return sum(1 for step in self.steps if step.outcome == outcome)

    def messages(self, outcome: str) -> int:
        """Messages of the sessions with this outcome."""
        return sum(step.messages for step in self.steps if step.outcome == outcome)

    def of(self, outcome: str) -> list[Step]:
        """The steps with this outcome."""
        return [step for step in self.steps if step.outcome == outcome]

    def as_dict(self) -> dict[str, Any]:
        """For ``--json``."""
        return {
            "copied": self.count(COPIED), "copied_messages": self.messages(COPIED),
            "replaced": self.count(REPLACED), "replaced_messages": self.messages(REPLACED),
            "skipped": self.count(SKIPPED),
            "kept": [{"id": s.id, "why": s.why, **({"new_id": s.new_id} if s.new_id else {})} for s in self.of(KEPT)],
            "failed": [{"id": s.id, "why": s.why} for s in self.of(FAILED)],
            "gone": [s.id for s in self.of(GONE)], "inputs": self.inputs, "seconds": round(self.seconds, 3),
            "refused": [{"id": s.id, "why": s.why} for s in self.of(REFUSED)],
            "renamed": [{"id": s.id, "new_id": s.new_id, "messages": s.messages, "why": s.why}
                        for s in self.of(RENAMED)],
            "replaced_copies": [{"id": s.id, "new_id": s.new_id, "messages": s.messages, "why": s.why}
                                for s in self.of(REPLACED) if s.new_id],
        }


COPY_ERRORS: tuple[type[BaseException], ...] = (StoreError, sqlite3.Error, ValueError, TypeError, OverflowError)
"""What copying one session may fail with while the others can still be copied (a row the
target refuses); a server that cannot be reached (:class:`StoreUnavailable`) stops the copy."""


def copy_sessions(source: Database, target: Database, plan: Sequence[Planned], *,
                  inputs: Iterable[str] | None = None, all_inputs: bool = False,
                  on_step: Callable[[Step], None] | None = None, report: CopyReport | None = None) -> CopyReport:
    """Carry out ``plan``: each session copied or replaced in one transaction on ``target``,
    ``on_step`` called after each. Then the input history of the sessions ``inputs`` names
    (every row, those typed outside any session too, with ``all_inputs``), rows the target
    already has left out. ``report`` (made if not given) is filled as it goes."""
    report = CopyReport() if report is None else report
    started = time.monotonic()
    present = tables(source)
    shared = {table: _shared_columns(source, target, table)
              for table in ("sessions", *SESSION_TABLES, "input_history") if table in present}
    failed: set[str] = set()
    renamed: dict[str, str] = {}
    for item in plan:
        step = _carry_out(source, target, item, shared)
        if step.outcome in (FAILED, REFUSED):  # its history is not written under another's id
            failed.add(item.id)
        if step.new_id and step.outcome not in (FAILED, REFUSED, GONE):  # its history goes with it
            renamed[item.id] = step.new_id
        report.steps.append(step)
        report.seconds = time.monotonic() - started
        if on_step is not None:
            on_step(step)
    scope = None if all_inputs else set(inputs if inputs is not None else (p.id for p in plan))
    if "input_history" in shared:
        report.inputs = _copy_inputs(source, target, shared["input_history"], scope, failed, renamed)
    report.seconds = time.monotonic() - started
    return report


def _shared_columns(source: Database, target: Database, table: str) -> list[str]:
    """The columns both stores have (a source of an older schema lacks some: the target's
    defaults fill them), without the ids the target numbers itself."""
    theirs = set(columns(target, table))
    return [c for c in columns(source, table) if c in theirs and not (c == "id" and table in NUMBERED)]


def _carry_out(source: Database, target: Database, item: Planned, shared: dict[str, list[str]]) -> Step:
    if item.action == SKIP:
        return Step(item.id, SKIPPED, item.messages, item.why, item.new_id)
    if item.action == KEEP:
        return Step(item.id, KEPT, item.messages, item.why, item.new_id)
    if item.action == REFUSE:
        return Step(item.id, REFUSED, item.messages, item.why)
    try:
        rows = _read_session(source, item.id, shared)
        if rows is None:
            return Step(item.id, GONE, 0, "deleted from the source meanwhile")
        if item.new_id:  # copied as new_id, or an earlier copy there replaced
            rows = _renamed(target, rows, item.new_id)
        written = _write_session(target, item.new_id or item.id, rows, shared, replace=item.action == REPLACE)
    except StoreUnavailable:
        raise
    except COPY_ERRORS as exc:
        return Step(item.id, FAILED, 0, " ".join(str(exc).split()) or type(exc).__name__)
    if item.action == RENAME:
        return Step(item.id, RENAMED, written, item.why, item.new_id)
    return Step(item.id, REPLACED if item.action == REPLACE else COPIED, written, item.why, item.new_id)


def _renamed(target: Database, rows: dict[str, list[dict[str, Any]]], new_id: str) -> dict[str, list[dict[str, Any]]]:
    """A session's rows under ``new_id``; its turn and approval ids that the target already
    holds (a session continued apart in both has turns of both) made new too."""
    def fresh(table: str, column: str, ids: set[str]) -> dict[str, str]:
        if not ids:
            return {}
        holes = ", ".join("?" * len(ids))
        # The rows of an earlier copy under new_id that is being replaced are not a clash: they go first.
        have = {r[0] for r in target.execute(
            f"SELECT {column} FROM {table} WHERE {column} IN ({holes}) AND session_id <> ?", (*ids, new_id))}
        return {old: f"{old}-{secrets.token_hex(3)}" for old in have}

    turns = fresh("turns", "id", {r["id"] for r in rows.get("turns", ())})
    approvals = fresh("approvals", "id", {r["id"] for r in rows.get("approvals", ())})
    approvals.update(fresh("approval_answers", "approval_id",
                           {r["approval_id"] for r in rows.get("approval_answers", ())} - set(approvals)))
    out: dict[str, list[dict[str, Any]]] = {}
    for table, table_rows in rows.items():
        new_rows = []
        for row in table_rows:
            row = dict(row)
            if table == "sessions":
                row["id"] = new_id
            else:
                row["session_id"] = new_id
            if table == "turns":
                row["id"] = turns.get(row["id"], row["id"])
            elif row.get("turn_id") in turns:
                row["turn_id"] = turns[row["turn_id"]]
            if table == "approvals":
                row["id"] = approvals.get(row["id"], row["id"])
            if table == "approval_answers":
                row["approval_id"] = approvals.get(row["approval_id"], row["approval_id"])
            new_rows.append(row)
        out[table] = new_rows
    return out


_ORDER = {"turns": "started_at", "messages": "id", "tool_calls": "started_at", "approvals": "created_at",
          "approval_answers": "answered_at", "usage": "id", "checkpoints": "n"}


def _read_session(source: Database, session_id: str, shared: dict[str, list[str]]) -> dict[str, list[dict[str, Any]]] | None:
    """Every row of the session, read in one snapshot; None if it is not there any more."""
    with reading(source):
        session = source.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if session is None:
            return None
        rows = {"sessions": [dict(session)]}
        for table in SESSION_TABLES:
            if table in shared:
                rows[table] = [dict(r) for r in source.execute(
                    f"SELECT * FROM {table} WHERE session_id = ? ORDER BY {_ORDER[table]}", (session_id,))]
    return rows


def _insert(db: Database, table: str, names: list[str], row: dict[str, Any], numbered: bool = False) -> int:
    sql = f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
    values = [row.get(name) for name in names]
    if numbered:
        return db.insert(sql, values)
    db.execute(sql, values)
    return 0


def _write_session(target: Database, session_id: str, rows: dict[str, list[dict[str, Any]]],
                   shared: dict[str, list[str]], *, replace: bool) -> int:
    """Write one session's rows in one transaction (what the target held of it removed first
    when ``replace``); the number of messages written."""
    with target.transaction():
        if replace:
            # Every table by hand: approvals and answers have no foreign key to cascade from.
            for table in reversed(SESSION_TABLES):
                target.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
            target.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
        _insert(target, "sessions", shared["sessions"], rows["sessions"][0])
        for row in rows.get("turns", ()):
            _insert(target, "turns", shared["turns"], row)
        new_ids: dict[int, int] = {}
        for row in rows["messages"]:  # in the source's order: the target's ids keep it
            new_ids[row["id"]] = _insert(target, "messages", shared["messages"], row, numbered=True)
        for table in ("tool_calls", "usage", "checkpoints"):
            for row in rows.get(table, ()):
                if row.get("message_id") is not None:
                    row = {**row, "message_id": new_ids.get(row["message_id"])}
                _insert(target, table, shared[table], row)
        for table in ("approvals", "approval_answers"):
            for row in rows.get(table, ()):
                _insert(target, table, shared[table], row)
    return len(rows["messages"])


def _copy_inputs(source: Database, target: Database, names: list[str], scope: set[str] | None,
                 failed: set[str], renamed: dict[str, str] | None = None) -> int:
    """Copy the input history of the sessions in ``scope`` (None: all of it, also what was typed
    outside a session) but those that ``failed`` (or were refused), oldest first, under the new
    id of those ``renamed``, leaving out rows the target has (same session, text and time); how
    many were copied."""
    renamed = renamed or {}
    with reading(source):
        rows = [dict(r) for r in source.execute("SELECT * FROM input_history ORDER BY created_at, id")]
    rows = [r for r in rows if (scope is None or r["session_id"] in scope) and r["session_id"] not in failed]
    rows = [{**r, "session_id": renamed[r["session_id"]]} if r["session_id"] in renamed else r for r in rows]
    if not rows:
        return 0
    with reading(target):
        have = {(r[0], _text_key(r[1]), r[2])
                for r in target.execute("SELECT session_id, text, created_at FROM input_history")}
    new = []
    for row in rows:
        key = (row["session_id"], _text_key(row["text"]), row["created_at"])
        if key not in have:
            have.add(key)
            new.append(row)
    if new:
        with target.transaction():
            for row in new:
                _insert(target, "input_history", names, row, numbered=True)
    return len(new)


def _text_key(text: Any) -> Any:
    """``text`` as PostgreSQL keeps it (a NUL becomes U+FFFD there), so a row copied once is
    recognised the next time whichever way it went."""
    return text.replace("\x00", "\ufffd") if isinstance(text, str) else text
