"""What the statements need of a database, whichever the backend.

Statements are written once: ``?`` placeholders, ``ON CONFLICT`` upserts, ``CAST`` where the
two differ in what a function returns. A row answers ``row["name"]``, ``row[0]``,
``row.keys()`` and ``dict(row)`` on both.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol


class Rows(Protocol):
    """What a statement returns (``sqlite3.Cursor``, or the PostgreSQL backend's rows); callers
    only read it."""

    @property
    def rowcount(self) -> int:
        """Rows the statement changed."""

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Database(Protocol):
    """A connection to the sessions store (used by one thread at a time)."""

    kind: str
    """``sqlite`` or ``postgresql``."""
    now: str
    """SQL for the store's clock in seconds since the epoch (the server's, for PostgreSQL: one
    clock for every machine that shares it)."""
    label: str
    """Where it is, for messages (no password)."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        """Run one statement (``?`` placeholders)."""

    def insert(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run an ``INSERT`` into a table with an ``id`` column; the new row's id."""

    def transaction(self) -> AbstractContextManager[None]:
        """Everything inside commits together or not at all (nested: a savepoint)."""

    def unit(self) -> AbstractContextManager[None]:
        """One piece of the writer's work: a transaction on PostgreSQL (so a write cut by a lost
        connection is tried again whole), nothing on SQLite (each statement commits)."""

    def recover(self) -> None:
        """After the server could not be reached: reconnect at once if it is back."""

    def notify(self, payload: str) -> None:
        """Tell the other machines sharing the store (PostgreSQL ``NOTIFY``; nothing on SQLite)."""

    def close(self) -> None:
        """Close the connection(s)."""


class Row(tuple[Any, ...]):
    """A row by position and by column name, as ``sqlite3.Row``."""

    __slots__ = ()
    names: tuple[str, ...] = ()

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            try:
                return tuple.__getitem__(self, self.names.index(key))
            except ValueError:
                raise IndexError(f"no column {key!r}") from None
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        """The column names."""
        return list(self.names)


def row_class(names: Sequence[str]) -> type[Row]:
    """A :class:`Row` subclass for one statement's columns."""
    return type("Row", (Row,), {"__slots__": (), "names": tuple(names)})
