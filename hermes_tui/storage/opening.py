"""Opening the sessions store: a SQLite file (WAL) at ``$HERMES_HOME/tui/sessions.db`` by
default, or a PostgreSQL server several machines share (``store.url``; docs/store.md), its
schema migrated (:mod:`hermes_tui.storage.schema`) — and who this process is, as sessions,
approvals and leases record it.

SQLite's WAL with ``synchronous=NORMAL`` makes each commit survive the death of the process.
"""

from __future__ import annotations

import getpass
import os
import socket
import sqlite3
import stat
import time
from pathlib import Path

from hermes_tui import __version__
from hermes_tui.base.fsutil import FileRefused, file_kind
from hermes_tui.base.paths import tui_dir
from hermes_tui.storage.base import Database
from hermes_tui.storage.schema import LATEST, migrate
from hermes_tui.storage.sqlite import SQLiteDatabase
from hermes_tui.config.store_url import StoreURL

SCHEMA_VERSION = LATEST
"""The schema version this hermes-tui writes (``schema_version`` table; SQLite's
``PRAGMA user_version`` mirrors it for older programs)."""

PROGRAM = f"hermes-tui {__version__}"


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
