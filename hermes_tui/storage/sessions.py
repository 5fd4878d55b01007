"""Durable sessions: a SQLite file (WAL) at ``$HERMES_HOME/tui/sessions.db`` by default, or a
PostgreSQL server several machines share (``store.url``; docs/store.md).

Tables (one definition for both, :mod:`hermes_tui.storage.schema`): ``sessions``, ``turns``,
``messages`` (the conversation in the OpenAI chat shape, in order), ``tool_calls`` (arguments,
status, result, and the ``exec_id`` of the execution's record in ``cache/exec``), ``approvals``
(asked, answered, or still pending), ``approval_answers`` (given from a shell), ``usage``,
``input_history`` (what was typed in the input, in every session: Up and Ctrl+R recall it) and
``leases`` (who drives a session now).

Every statement runs on one writer thread that owns the connection, so the event loop never
waits on the database: callers ``await`` a write only when what they show must be stored first
(that is how "kill -9 loses nothing that was on screen" holds). SQLite's WAL with
``synchronous=NORMAL`` makes each commit survive the death of the process; on PostgreSQL each
piece of work is one transaction, and when the server cannot be reached the writer keeps the
work queued, says so (``on_health``) and writes it when the server is back.
"""

from __future__ import annotations

import asyncio
import getpass
import json
import logging
import os
import queue
import re
import socket
import sqlite3
import stat
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from hermes_tui import __version__
from hermes_tui.base.paths import tui_dir
from hermes_tui.base.fsutil import FileRefused, file_kind
from hermes_tui.storage.base import Database
from hermes_tui.storage.choice import choose_store, new_session_id, store_url
from hermes_tui.storage.errors import DB_ERRORS, StoreError, StoreUnavailable
from hermes_tui.storage.inputs import INPUT_MAX_CHARS, worth_keeping
from hermes_tui.storage.leases import FUTURE_SLACK, STALE_AFTER
from hermes_tui.storage.schema import LATEST, migrate
from hermes_tui.storage.sqlite import SQLiteDatabase
from hermes_tui.storage.url import StoreURL

log = logging.getLogger(__name__)

T = TypeVar("T")

__all__ = ["DB_ERRORS", "INPUT_MAX_CHARS", "Database", "StoreError", "StoreUnavailable", "StoreURL", "choose_store",
           "new_session_id", "store_url", "worth_keeping"]

SCHEMA_VERSION = LATEST
"""The schema version this hermes-tui writes (``schema_version`` table; SQLite's
``PRAGMA user_version`` mirrors it for older programs)."""

PROGRAM = f"hermes-tui {__version__}"

SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
SESSION_ID_RULE = "a session id is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"


def host_name() -> str:
    """This machine's name, as sessions, approvals and leases record it."""
    return socket.gethostname()


def local_user() -> str:
    """``user@host`` of this process (who answered at this machine's dialog)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return f"{user}@{host_name()}"


def sessions_db_path(home: Path | None = None) -> Path:
    """``$HERMES_HOME/tui/sessions.db``."""
    return tui_dir(home) / "sessions.db"


def connect(path: Path) -> SQLiteDatabase:
    """Open (and create) a SQLite store: WAL, foreign keys, rows as ``sqlite3.Row``, the schema
    migrated to :data:`SCHEMA_VERSION`.

    Raises ``sqlite3.Error`` for a file that is not a database or is damaged,
    :class:`~hermes_tui.storage.errors.SchemaTooNew` for one a newer hermes-tui wrote, and
    :class:`~hermes_tui.base.fsutil.FileRefused` (an ``OSError``) for one that is not a
    regular file: SQLite would block for ever reading a FIFO.
    """
    memory = str(path) == ":memory:"
    if not memory:
        path.parent.mkdir(parents=True, exist_ok=True)
        _check_regular(path)
    new = not memory and not path.exists()
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=10)
    try:
        if new:
            conn.execute("PRAGMA user_version").fetchone()  # creates the file now, so its mode can be set
            path.chmod(0o600)  # conversations may quote secrets the user pasted
        conn.row_factory = sqlite3.Row
        _wal(conn)
        conn.execute("PRAGMA synchronous=NORMAL")  # each commit survives a crash of the process
        conn.execute("PRAGMA foreign_keys=ON")
        db = SQLiteDatabase(conn, path)
        migrate(db, PROGRAM)
        if conn.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        conn.close()  # a file that is not a database must not keep a handle open
        raise
    return db


def _wal(conn: sqlite3.Connection, wait: float = 10.0) -> None:
    """Switch to WAL. SQLite does not wait on a lock for this (the busy timeout is not used), so
    a new file another process is setting up at the same moment is tried again for ``wait`` s."""
    deadline = time.monotonic() + wait
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def has_sessions(db: Database) -> bool:
    """True when the store holds at least one session with a conversation (listed)."""
    return db.execute(f"SELECT 1 FROM sessions s WHERE {HAS_MESSAGES} LIMIT 1").fetchone() is not None


def open_database(url: StoreURL) -> Database:
    """Open the store ``url`` names, its schema migrated. SQLite errors are raised as
    :func:`connect` raises them; PostgreSQL ones as one-line
    :class:`~hermes_tui.storage.errors.StoreError` (no password in them)."""
    if url.kind == "sqlite":
        assert url.path is not None
        return connect(url.path)
    from hermes_tui.storage.postgres import PostgresDatabase  # psycopg only when it is used

    db = PostgresDatabase(url)
    try:
        migrate(db, PROGRAM)
    except BaseException:
        db.close()
        raise
    return db


def _check_regular(path: Path) -> None:
    """Refuse a database path that exists and is not a regular file (a FIFO, a device)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise FileRefused(path, f"it is {file_kind(mode)}, not a regular file")


@dataclass
class SessionInfo:
    """One row of the sessions list."""

    id: str
    title: str
    created_at: float
    updated_at: float
    provider: str | None
    model: str | None
    cwd: str | None
    messages: int = 0
    interrupted: bool = False
    """A turn was still running when the app stopped."""
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None
    """What the priced model calls cost (None: none was priced)."""
    unpriced_calls: int = 0
    """Model calls whose price is unknown (their cost is not in ``cost_usd``)."""
    max_cost_usd: float | None = None
    """The cost ceiling ``/budget`` set for this session."""
    host: str | None = None
    """The machine that last started a turn in it."""
    lease: str | None = None
    """Who drives it now (``hermes-tui app on buildbox (pid 42, heartbeat 2s ago)``), if anyone."""


@dataclass
class StoredSession:
    """Everything needed to show and continue a session."""

    info: SessionInfo
    messages: list[dict[str, Any]] = field(default_factory=list)
    """Rows of ``messages``: id, turn_id, role, content, tool_calls (list), tool_call_id, origin, status."""
    tool_calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Rows of ``tool_calls`` by call id (result parsed from JSON)."""
    turns: list[dict[str, Any]] = field(default_factory=list)
    pending_approvals: list[dict[str, Any]] = field(default_factory=list)
    """Approvals asked and never answered (the app stopped while they waited)."""
    usage: list[dict[str, Any]] = field(default_factory=list)
    """Rows of ``usage``: one per model call, oldest first."""


class SessionStore:
    """The sessions store, written on its own thread.

    Use :meth:`call` from async code (returns when the statement is committed) or
    :meth:`submit` to queue a write without waiting. Every method that touches the database
    is a plain function ``fn(db, ...)`` run on the writer thread.

    Args:
        target: a SQLite file (a ``Path``; ``:memory:`` for none) or a :class:`StoreURL`.
        on_health: called on the writer thread with ``(reachable, message)`` when a shared
            store's server stops answering and when it is back (what was queued written).
    """

    RETRY_DELAYS = (0.2, 0.5, 1.0, 2.0, 5.0)
    """Seconds between tries of a write while the server cannot be reached (the last repeats)."""
    TICK_EVERY = 5.0
    """Seconds between runs of :meth:`every_tick`'s function (lease heartbeats)."""
    CLOSE_WAIT = 10.0
    """Seconds :meth:`close` waits for an unreachable server before it gives the queued writes up."""

    def __init__(self, target: Path | StoreURL, *, on_health: Callable[[bool, str], None] | None = None) -> None:
        self.url = target if isinstance(target, StoreURL) else StoreURL("sqlite", f"sqlite://{target}", target)
        self.path = self.url.path
        self.on_health = on_health
        self.reachable = True
        self._queue: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]] | None] = queue.SimpleQueue()
        self._db: Database | None = None
        self._thread = threading.Thread(target=self._run, name="hermes-store", daemon=True)
        self._started = threading.Event()
        self._closing: float | None = None
        self._closed = False
        self._gave_up: BaseException | None = None
        self._wake = threading.Event()
        self._error: BaseException | None = None
        self._tick: Callable[[Database], None] | None = None
        self.tick_every = self.TICK_EVERY
        self._thread.start()
        self._started.wait()
        if self._error is not None:
            raise self._error

    @classmethod
    def open(cls, home: Path | None = None, url: StoreURL | None = None, **kwargs: Any) -> SessionStore:
        """The store ``url`` names (default: :func:`store_url`, which is
        ``$HERMES_HOME/tui/sessions.db`` unless a shared store was chosen)."""
        return cls(url if url is not None else store_url(None, home), **kwargs)

    @property
    def label(self) -> str:
        """Where the store is (no password)."""
        return self.url.redacted() if self.url.kind != "sqlite" else str(self.path)

    @property
    def shared(self) -> bool:
        """True for a store other machines may use too (PostgreSQL)."""
        return self.url.shared

    @property
    def backlog(self) -> int:
        """Writes queued and not written yet (about)."""
        return self._queue.qsize()

    # -- the writer thread ----------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._db = open_database(self.url)
        except BaseException as exc:  # reported to the opener
            self._error = exc
            self._started.set()
            return
        self._started.set()
        next_tick = time.monotonic() + self.tick_every
        while True:
            try:
                item = self._queue.get(timeout=max(0.0, next_tick - time.monotonic()))
            except queue.Empty:
                item = ()  # type: ignore[assignment]
            if time.monotonic() >= next_tick:
                next_tick = time.monotonic() + self.tick_every
                if self._tick is not None and self._closing is None:
                    self._attempt(lambda: self._tick(self._db) if self._tick and self._db else None, Future())
            if item == ():
                continue
            if item is None:
                break
            fn, future = item
            if not future.set_running_or_notify_cancel():
                continue
            self._attempt(fn, future)
        self._closed = True
        while True:  # anything queued after close() began: it will never run, say so to its waiter
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item and item[1].set_running_or_notify_cancel():
                item[1].set_exception(RuntimeError("the sessions store is closed"))
        self._db.close()

    def _attempt(self, fn: Callable[[], Any], future: Future[Any]) -> None:
        """Run ``fn`` as one unit; while the server cannot be reached, wait and try it again —
        until :meth:`begin_close`'s deadline, after which what cannot be written is given up
        at once (each waiter gets the error)."""
        tries = 0
        while True:
            if self._gave_up is not None:
                future.set_exception(self._gave_up)
                return
            try:
                with self._db.unit():  # type: ignore[union-attr]
                    result = fn()
            except StoreUnavailable as exc:
                if self._closing is not None and time.monotonic() > self._closing:
                    log.warning("closing: the writes still waiting for %s were given up: %s", self.label, exc)
                    self._gave_up = exc
                    continue
                if self.reachable:
                    self.reachable = False
                    self._health(False, f"{exc}. Nothing is lost: the session is kept in memory, and what "
                                        "comes next waits and is written when the server is back.")
                delay = self.RETRY_DELAYS[min(tries, len(self.RETRY_DELAYS) - 1)]
                self._wake.wait(delay)  # begin_close() cuts the wait short
                tries += 1
                try:
                    self._db.recover()  # type: ignore[union-attr]
                except Exception:  # noqa: BLE001 - the next try says what is wrong
                    pass
                continue
            except BaseException as exc:
                future.set_exception(exc)
                return
            break
        if not self.reachable:
            self.reachable = True
            self._health(True, f"The sessions store {self.label} is back: what waited is being written.")
        future.set_result(result)

    def _health(self, reachable: bool, message: str) -> None:
        # Said by the front end (on_health); logged loudly only when nobody would say it.
        log.log(logging.INFO if self.on_health is not None or reachable else logging.WARNING, "%s", message)
        if self.on_health is not None:
            try:
                self.on_health(reachable, message)
            except Exception:  # a front end's callback must not stop the writer
                log.exception("store health callback failed")

    def every_tick(self, fn: Callable[[Database], None] | None) -> None:
        """Run ``fn(db)`` on the writer thread every :attr:`tick_every` seconds (lease heartbeats)."""
        self._tick = fn

    def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        """Queue ``fn(db, *args, **kwargs)`` on the writer thread."""
        if self._closed or not self._thread.is_alive():
            raise RuntimeError("the sessions store is closed")
        future: Future[T] = Future()
        self._queue.put((lambda: fn(self._db, *args, **kwargs), future))
        return future

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn(db, ...)`` on the writer thread and wait for it (committed)."""
        return await asyncio.wrap_future(self.submit(fn, *args, **kwargs))

    def sync(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn(db, ...)`` and wait, from a thread that is not the event loop."""
        return self.submit(fn, *args, **kwargs).result()

    def begin_close(self, wait: float | None = None) -> None:
        """From now on a server that cannot be reached is waited for ``wait`` seconds more
        (default :attr:`CLOSE_WAIT`); then every write still waiting fails at once. Call it
        first when quitting, so the last writes (a lease let go, a turn marked) cannot hang it."""
        if self._closing is None:
            self._closing = time.monotonic() + (self.CLOSE_WAIT if wait is None else wait)
            self._wake.set()

    def close(self) -> None:
        """Finish queued writes and close the connection. A server that cannot be reached is
        waited for :attr:`CLOSE_WAIT` seconds (from :meth:`begin_close`, if it was called);
        what is still queued then is given up (logged)."""
        self.begin_close()
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()


# -- statements (each runs on the writer thread; autocommit) ------------------------------


def create_session(db: Database, session_id: str, provider: str | None, model: str | None,
                   cwd: str | None) -> None:
    """Add a session (nothing happens if it exists)."""
    now = time.time()
    db.execute("INSERT INTO sessions (id, title, created_at, updated_at, provider, model, cwd, host) "
               "VALUES (?, '', ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
               (session_id, now, now, provider, model, cwd, host_name()))


def start_turn(db: Database, session_id: str, turn_id: str, origin: str, text: str) -> int:
    """Record a turn and its first message (the user's); returns the message id."""
    now = time.time()
    with db.transaction():
        db.execute("INSERT INTO turns (id, session_id, origin, text, status, started_at) VALUES (?, ?, ?, ?, 'running', ?)",
                   (turn_id, session_id, origin, text, now))
        message_id = db.insert("INSERT INTO messages (session_id, turn_id, role, content, origin, created_at) "
                               "VALUES (?, ?, 'user', ?, ?, ?)", (session_id, turn_id, text, origin, now))
        title = text.strip().splitlines()[0][:80] if text.strip() else ""
        db.execute("UPDATE sessions SET updated_at = ?, host = ?, title = CASE WHEN title = '' THEN ? ELSE title END "
                   "WHERE id = ?", (now, host_name(), title, session_id))
    return message_id


def end_turn(db: Database, turn_id: str, status: str, error: str | None = None) -> None:
    """Mark a turn done / interrupted / error."""
    db.execute("UPDATE turns SET status = ?, error = ?, ended_at = ? WHERE id = ?", (status, error, time.time(), turn_id))


def add_message(db: Database, session_id: str, turn_id: str | None, role: str, content: str | None,
                *, tool_calls: list[dict[str, Any]] | None = None, tool_call_id: str | None = None,
                origin: str | None = None, status: str = "done") -> int:
    """Append a message; returns its id."""
    message_id = db.insert(
        "INSERT INTO messages (session_id, turn_id, role, content, tool_calls, tool_call_id, origin, status, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (session_id, turn_id, role, content, json.dumps(tool_calls) if tool_calls else None, tool_call_id, origin,
         status, time.time()))
    db.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (time.time(), session_id))
    return message_id


def update_message(db: Database, message_id: int, content: str | None, status: str,
                   tool_calls: list[dict[str, Any]] | None = None, reasoning: str | None = None) -> None:
    """Replace a message's content (a streaming reply grows) and status."""
    db.execute("UPDATE messages SET content = ?, status = ?, tool_calls = COALESCE(?, tool_calls), "
               "reasoning = COALESCE(?, reasoning) WHERE id = ?",
               (content, status, json.dumps(tool_calls) if tool_calls else None, reasoning or None, message_id))


USAGE_FIELDS = ("provider", "model", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
                "reasoning_tokens", "cost_usd", "cost_source", "estimated", "latency_s")


def add_usage(db: Database, session_id: str, turn_id: str | None, message_id: int | None,
              usage: dict[str, Any]) -> None:
    """Record one model call's usage (the fields of :data:`USAGE_FIELDS`) with its reply."""
    defaults = {"cost_source": "unknown", "cost_usd": None, "latency_s": None, "provider": None, "model": None}
    values = [usage.get(name, defaults.get(name, 0)) for name in USAGE_FIELDS]
    db.execute(f"INSERT INTO usage (session_id, turn_id, message_id, {', '.join(USAGE_FIELDS)}, created_at) "
               f"VALUES (?, ?, ?, {', '.join('?' * len(USAGE_FIELDS))}, ?)",
               (session_id, turn_id, message_id, *values, time.time()))


def answer_offline(db: Database, session_id: str, approval_id: str, decision: str, reason: str | None,
                   who: str) -> None:
    """An answer given from a shell (``hermes-tui approve`` / ``deny``) to a request a paused run
    left pending: used when the run resumes (the request itself stays pending until then)."""
    row = db.execute("SELECT kind, text, tool_call_id FROM approvals WHERE id = ? AND session_id = ?",
                     (approval_id, session_id)).fetchone()
    if row is None:
        raise KeyError(approval_id)
    db.execute("INSERT INTO approval_answers (approval_id, session_id, tool_call_id, kind, text, decision, "
               "reason, who, answered_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (approval_id) DO UPDATE SET "
               "decision = excluded.decision, reason = excluded.reason, who = excluded.who, "
               "answered_at = excluded.answered_at",
               (approval_id, session_id, row["tool_call_id"], row["kind"], row["text"], decision, reason, who,
                time.time()))
    db.notify(json.dumps({"event": "answer", "session": session_id, "approval": approval_id}))


def offline_answers(db: Database, session_id: str) -> list[dict[str, Any]]:
    """The answers given from a shell to this session's requests, oldest first."""
    return [dict(r) for r in db.execute("SELECT * FROM approval_answers WHERE session_id = ? ORDER BY answered_at",
                                        (session_id,))]


def pending_requests(db: Database, session_id: str) -> list[dict[str, Any]]:
    """The session's requests still waiting for an answer (oldest first), each with the answer
    given from a shell, if one was (``answer``)."""
    answers = {a["approval_id"]: a for a in offline_answers(db, session_id)}
    return [{**dict(a), "request": json.loads(a["request"]), "answer": answers.get(a["id"])}
            for a in db.execute("SELECT * FROM approvals WHERE session_id = ? AND status = 'pending' ORDER BY created_at",
                                (session_id,))]


def settle_pending(db: Database, session_id: str, left_pending_reason: str) -> int:
    """When a paused run resumes: every request still pending gets its answer from a shell, or
    is denied with ``left_pending_reason`` (the resumed calls are asked afresh). Returns how many."""
    answers = {a["approval_id"]: a for a in offline_answers(db, session_id)}
    rows = db.execute("SELECT id FROM approvals WHERE session_id = ? AND status = 'pending'", (session_id,)).fetchall()
    for row in rows:
        answer = answers.get(row["id"])
        decision, reason = (answer["decision"], answer["reason"]) if answer else ("deny", left_pending_reason)
        answer_approval(db, row["id"], decision, reason, by=answer["who"] if answer else None)
    return len(rows)


def count_resume(db: Database, turn_id: str) -> int:
    """One more resume of this turn; returns how many it has had."""
    db.execute("UPDATE turns SET resumes = resumes + 1, status = 'running' WHERE id = ?", (turn_id,))
    row = db.execute("SELECT resumes FROM turns WHERE id = ?", (turn_id,)).fetchone()
    return int(row["resumes"]) if row else 0


def usage_rows(db: Database, session_id: str) -> list[dict[str, Any]]:
    """Every model call of a session with its turn's first words (for ``/usage``), oldest first."""
    return [dict(row) for row in db.execute(
        "SELECT u.*, t.text AS turn_text, t.started_at AS turn_started FROM usage u LEFT JOIN turns t ON t.id = u.turn_id "
        "WHERE u.session_id = ? ORDER BY u.id", (session_id,))]


def set_session_model(db: Database, session_id: str, provider: str | None, model: str | None) -> None:
    """The model the session talks to from now on (``/model``)."""
    db.execute("UPDATE sessions SET provider = ?, model = ? WHERE id = ?", (provider, model, session_id))


def set_session_budget(db: Database, session_id: str, max_cost_usd: float | None) -> None:
    """The session's cost ceiling (``/budget``), kept across ``--resume``."""
    db.execute("UPDATE sessions SET max_cost_usd = ? WHERE id = ?", (max_cost_usd, session_id))


def delete_message(db: Database, message_id: int) -> None:
    """Remove a message (a reply that failed before it said anything)."""
    db.execute("DELETE FROM messages WHERE id = ?", (message_id,))


def start_tool_call(db: Database, session_id: str, turn_id: str, message_id: int, call_id: str,
                    name: str, arguments: str) -> None:
    """A tool call is about to run."""
    db.execute("INSERT INTO tool_calls (id, session_id, turn_id, message_id, name, arguments, status, started_at) "
               "VALUES (?, ?, ?, ?, ?, ?, 'running', ?) ON CONFLICT (session_id, id) DO UPDATE SET "
               "status = 'running', started_at = excluded.started_at",
               (call_id, session_id, turn_id, message_id, name, arguments, time.time()))


def finish_tool_call(db: Database, session_id: str, turn_id: str, call_id: str, status: str,
                     result: dict[str, Any], content: str, exec_id: str | None) -> int:
    """Store a tool call's result and the ``tool`` message the model will read; returns its id."""
    with db.transaction():
        db.execute("UPDATE tool_calls SET status = ?, result = ?, exec_id = ?, finished_at = ? WHERE session_id = ? AND id = ?",
                   (status, json.dumps(result, default=str), exec_id, time.time(), session_id, call_id))
        return add_message(db, session_id, turn_id, "tool", content, tool_call_id=call_id)


def replace_tool_result(db: Database, session_id: str, call_id: str, result: dict[str, Any], content: str) -> None:
    """A finished call's result changed (sub-agents a cost ceiling stopped went on): the row
    and the ``tool`` message the model reads both say the new one."""
    with db.transaction():
        db.execute("UPDATE tool_calls SET result = ?, finished_at = ? WHERE session_id = ? AND id = ?",
                   (json.dumps(result, default=str), time.time(), session_id, call_id))
        db.execute("UPDATE messages SET content = ? WHERE session_id = ? AND role = 'tool' AND tool_call_id = ?",
                   (content, session_id, call_id))


def add_approval(db: Database, session_id: str, tool_call_id: str | None, request: dict[str, Any]) -> None:
    """An approval is being asked (pending until answered)."""
    db.execute("INSERT INTO approvals (id, session_id, tool_call_id, kind, text, request, status, created_at, host) "
               "VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?) ON CONFLICT (id) DO UPDATE SET session_id = excluded.session_id, "
               "tool_call_id = excluded.tool_call_id, kind = excluded.kind, text = excluded.text, "
               "request = excluded.request, status = 'pending', decision = NULL, reason = NULL, answered_at = NULL, "
               "created_at = excluded.created_at, host = excluded.host",
               (request["id"], session_id, tool_call_id, request["kind"], request["text"], json.dumps(request),
                time.time(), host_name()))


def answer_approval(db: Database, approval_id: str, decision: str, reason: str | None,
                    status: str = "answered", by: str | None = None) -> None:
    """Record the answer (or ``withdrawn`` when nobody answered in time) and who gave it (user
    and host: this machine's user at its dialog, or a shell's answer with where it came from);
    the first answer recorded stays."""
    db.execute("UPDATE approvals SET status = ?, decision = ?, reason = ?, answered_at = ?, answered_by = ? "
               "WHERE id = ? AND status = 'pending'",
               (status, decision, reason, time.time(), by or (local_user() if status == "answered" else "hermes-tui"),
                approval_id))


def _info(row: Any) -> SessionInfo:
    keys = row.keys()
    return SessionInfo(
        id=row["id"], title=row["title"] or "", created_at=row["created_at"], updated_at=row["updated_at"],
        provider=row["provider"], model=row["model"], cwd=row["cwd"],
        messages=row["messages"] if "messages" in keys else 0,
        interrupted=bool(row["running"]) if "running" in keys else False,
        tokens_in=row["tokens_in"] or 0 if "tokens_in" in keys else 0,
        tokens_out=row["tokens_out"] or 0 if "tokens_out" in keys else 0,
        cost_usd=row["cost_usd"] if "cost_usd" in keys else None,
        unpriced_calls=row["unpriced"] or 0 if "unpriced" in keys else 0,
        max_cost_usd=row["max_cost_usd"] if "max_cost_usd" in keys else None,
        host=row["host"] if "host" in keys else None,
        lease=(f"{str(row['lease_program'])[:40]} on {str(row['lease_host'])[:60]} (pid {row['lease_pid']}, "
               f"heartbeat {max(0, row['lease_age']):.0f}s ago)")
        if "lease_age" in keys and row["lease_age"] is not None and -FUTURE_SLACK <= row["lease_age"] <= STALE_AFTER
        else None,
    )


USAGE_TOTALS = ("(SELECT CAST(SUM(input_tokens) AS BIGINT) FROM usage u WHERE u.session_id = s.id) AS tokens_in, "
                "(SELECT CAST(SUM(output_tokens) AS BIGINT) FROM usage u WHERE u.session_id = s.id) AS tokens_out, "
                "(SELECT SUM(cost_usd) FROM usage u WHERE u.session_id = s.id) AS cost_usd, "
                "(SELECT COUNT(*) FROM usage u WHERE u.session_id = s.id AND u.cost_usd IS NULL) AS unpriced")
"""SQL (over ``sessions s``): a session's token and cost totals."""


HAS_MESSAGES = "EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id) AND s.id NOT LIKE '%::child::%'"
"""SQL (over ``sessions s``): the session holds a conversation and is the user's (a sub-agent's,
``PARENT::child::NAME``, is reached through its parent). One opened and closed without a turn
holds none: it is not listed, not ``latest``, and not matched by a prefix."""


def list_sessions(db: Database, limit: int = 200) -> list[SessionInfo]:
    """Sessions that hold at least one message, most recently used first."""
    rows = db.execute(
        "SELECT s.*, (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS messages, "
        "(SELECT COUNT(*) FROM turns t WHERE t.session_id = s.id AND t.status = 'running') AS running, "
        "l.host AS lease_host, l.pid AS lease_pid, l.program AS lease_program, "
        f"{db.now} - l.heartbeat_at AS lease_age, "
        f"{USAGE_TOTALS} FROM sessions s LEFT JOIN leases l ON l.session_id = s.id WHERE {HAS_MESSAGES} "
        "ORDER BY s.updated_at DESC, s.id DESC LIMIT ?", (limit,)).fetchall()
    return [_info(row) for row in rows]


def find_session(db: Database, wanted: str) -> str | None:
    """The id of ``wanted``: ``latest`` (the newest session with messages), an exact id (any
    session), or a unique prefix of the id of a session with messages (the ones listed)."""
    if wanted == "latest":
        row = db.execute(f"SELECT id FROM sessions s WHERE {HAS_MESSAGES} ORDER BY updated_at DESC, id DESC "
                         "LIMIT 1").fetchone()
        return row["id"] if row else None
    row = db.execute("SELECT id FROM sessions WHERE id = ?", (wanted,)).fetchone()
    if row:
        return row["id"]
    # substr, not LIKE: the same on both backends (LIKE ignores ASCII case on SQLite only), no escaping
    rows = db.execute(f"SELECT id FROM sessions s WHERE substr(id, 1, ?) = ? AND {HAS_MESSAGES} LIMIT 2",
                      (len(wanted), wanted)).fetchall()
    return rows[0]["id"] if len(rows) == 1 else None


def sessions_starting(db: Database, prefix: str, limit: int = 6) -> list[str]:
    """Ids of listed sessions (with a conversation) that start with ``prefix``, newest first."""
    return [row["id"] for row in db.execute(
        f"SELECT id FROM sessions s WHERE substr(id, 1, ?) = ? AND {HAS_MESSAGES} ORDER BY updated_at DESC LIMIT ?",
        (len(prefix), prefix, limit))]


def load_session(db: Database, session_id: str) -> StoredSession | None:
    """The whole session, or None if there is no such session."""
    row = db.execute(f"SELECT s.*, {USAGE_TOTALS} FROM sessions s WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        return None
    stored = StoredSession(info=_info(row))
    stored.usage = [dict(u) for u in db.execute("SELECT * FROM usage WHERE session_id = ? ORDER BY id", (session_id,))]
    for message in db.execute("SELECT * FROM messages WHERE session_id = ? ORDER BY id", (session_id,)):
        item = dict(message)
        item["tool_calls"] = json.loads(item["tool_calls"]) if item["tool_calls"] else None
        stored.messages.append(item)
    for call in db.execute("SELECT * FROM tool_calls WHERE session_id = ?", (session_id,)):
        item = dict(call)
        item["result"] = json.loads(item["result"]) if item["result"] else None
        stored.tool_calls[item["id"]] = item
    stored.turns = [dict(t) for t in db.execute("SELECT * FROM turns WHERE session_id = ? ORDER BY started_at",
                                                (session_id,))]
    stored.pending_approvals = [
        {**dict(a), "request": json.loads(a["request"])}
        for a in db.execute("SELECT * FROM approvals WHERE session_id = ? AND status = 'pending' ORDER BY created_at",
                            (session_id,))]
    stored.info.interrupted = any(t["status"] == "running" for t in stored.turns)
    stored.info.messages = len(stored.messages)
    return stored


def delete_session_if_empty(db: Database, session_id: str) -> bool:
    """Remove ``session_id`` if nothing was ever stored in it: no message, no turn, no tool call
    and no approval (pending or answered). True if it was removed.

    One statement, so it sees every write queued before it on the writer thread: a session
    that got a turn (or a pending approval) in the meantime is kept.
    """
    return db.execute(
        "DELETE FROM sessions WHERE id = ? "
        "AND NOT EXISTS (SELECT 1 FROM messages WHERE session_id = sessions.id) "
        "AND NOT EXISTS (SELECT 1 FROM turns WHERE session_id = sessions.id) "
        "AND NOT EXISTS (SELECT 1 FROM tool_calls WHERE session_id = sessions.id) "
        "AND NOT EXISTS (SELECT 1 FROM approvals WHERE session_id = sessions.id)", (session_id,)).rowcount > 0


def delete_session(db: Database, session_id: str) -> bool:
    """Remove a session and everything in it (what was typed in it too)."""
    db.execute("DELETE FROM approvals WHERE session_id = ?", (session_id,))
    db.execute("DELETE FROM approval_answers WHERE session_id = ?", (session_id,))
    db.execute("DELETE FROM leases WHERE session_id = ?", (session_id,))
    db.execute("DELETE FROM input_history WHERE session_id = ?", (session_id,))
    return db.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0


INPUT_HISTORY_LIMIT = 10_000
"""Inputs kept in ``input_history`` (the newest)."""
INPUT_LOAD_CHARS = 4_000_000
"""Characters of history the app holds at most (the newest inputs)."""


def add_input(db: Database, session_id: str | None, text: str, limit: int = INPUT_HISTORY_LIMIT) -> bool:
    """Keep a submitted input (whole, however many lines); a blank one, a repeat of the newest,
    one longer than :data:`INPUT_MAX_CHARS` and one typed with a leading space (as shells'
    ``ignorespace``: a way to keep a secret out of the history) are not kept. The oldest beyond
    ``limit`` are dropped. True if it was added."""
    if not worth_keeping(text):
        return False
    newest = db.execute("SELECT text FROM input_history ORDER BY id DESC LIMIT 1").fetchone()
    if newest is not None and newest["text"] == text:
        return False
    db.execute("INSERT INTO input_history (session_id, text, created_at) VALUES (?, ?, ?)",
               (session_id, text, time.time()))
    db.execute("DELETE FROM input_history WHERE id <= (SELECT id FROM input_history ORDER BY id DESC "
               "LIMIT 1 OFFSET ?)", (max(limit, 1),))
    return True


def load_inputs(db: Database, limit: int = INPUT_HISTORY_LIMIT) -> list[str]:
    """The newest ``limit`` inputs of every session (at most :data:`INPUT_LOAD_CHARS`
    characters in all), oldest first."""
    kept: list[str] = []
    total = 0
    for row in db.execute("SELECT text FROM input_history ORDER BY id DESC LIMIT ?", (limit,)):
        total += len(row["text"])
        if total > INPUT_LOAD_CHARS:
            break
        kept.append(row["text"])
    return kept[::-1]
