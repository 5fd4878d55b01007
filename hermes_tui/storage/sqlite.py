"""The SQLite backend: one file, WAL, each statement its own commit."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any


class SQLiteDatabase:
    """A :class:`~hermes_tui.storage.base.Database` over ``sqlite3`` (autocommit, ``sqlite3.Row``)."""

    kind = "sqlite"
    now = "((julianday('now') - 2440587.5) * 86400.0)"

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path
        self.label = str(path)
        self._depth = 0

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """Run one statement."""
        return self.conn.execute(sql, params)

    def executescript(self, sql: str) -> None:
        """Run several statements (no parameters)."""
        self.conn.executescript(sql)

    def insert(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run an ``INSERT``; the new row's id."""
        return int(self.conn.execute(sql, params).lastrowid or 0)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` (the write lock at once: two processes never deadlock on an
        upgrade); nested, a savepoint."""
        name = f"s{self._depth}"
        self.conn.execute("BEGIN IMMEDIATE" if self._depth == 0 else f"SAVEPOINT {name}")
        self._depth += 1
        try:
            yield
        except BaseException:
            self._depth -= 1
            self.conn.execute("ROLLBACK" if self._depth == 0 else f"ROLLBACK TO {name}")
            if self._depth:
                self.conn.execute(f"RELEASE {name}")
            raise
        self._depth -= 1
        self.conn.execute("COMMIT" if self._depth == 0 else f"RELEASE {name}")

    def unit(self) -> AbstractContextManager[None]:
        """Nothing: each statement commits on its own (WAL makes that cheap)."""
        return nullcontext()

    def recover(self) -> None:
        """Nothing: a file does not go away and come back."""

    def notify(self, payload: str) -> None:
        """Nothing: a SQLite file is not shared between machines."""

    def close(self) -> None:
        """Close the file."""
        self.conn.close()
