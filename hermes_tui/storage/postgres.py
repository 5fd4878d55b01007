"""The PostgreSQL backend: psycopg 3 with its connection pool, and a listener for ``NOTIFY``.

Imported only when ``store.url`` names a PostgreSQL server (psycopg costs start-up time).
Every psycopg error leaves as a :class:`~hermes_tui.storage.errors.StoreError` whose message
carries no password; one that means the server cannot be reached is a
:class:`~hermes_tui.storage.errors.StoreUnavailable`, which the writer waits out.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from functools import lru_cache
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from hermes_tui.storage.base import row_class
from hermes_tui.storage.errors import StoreError, StoreUnavailable
from hermes_tui.config.store_url import StoreURL

log = logging.getLogger(__name__)

CHANNEL = "hermes_tui"
"""The ``LISTEN`` / ``NOTIFY`` channel: answers given on another machine."""
CONNECT_TIMEOUT = 5
"""Seconds to wait for the server when connecting."""
CHECKOUT_TIMEOUT = 2.0
"""Seconds a write waits for a pooled connection before it counts the server as unreachable
(and tries again later): short, so quitting during an outage is not held up."""

# psycopg's pool logs every failed reconnection to stderr (Python's last-resort handler): the
# store says it once itself, in the conversation, and stderr is the app's terminal.
for _name in ("psycopg", "psycopg.pool"):
    logging.getLogger(_name).addHandler(logging.NullHandler())
    logging.getLogger(_name).propagate = False
_GONE_STATES = ("57P01", "57P02", "57P03")  # admin shutdown, crash shutdown, cannot connect now


@lru_cache(maxsize=512)
def _sql(sql: str) -> str:
    """``?`` placeholders as psycopg's ``%s`` (a literal ``%`` doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


def _param(value: Any) -> Any:
    if isinstance(value, bool):  # a flag is stored as 0/1, as in SQLite
        return int(value)
    if isinstance(value, str) and "\x00" in value:  # PostgreSQL text cannot hold NUL: shown as U+FFFD
        return value.replace("\x00", "\ufffd")
    return value


def _row_factory(cursor: Any) -> Callable[[Sequence[Any]], Any]:
    description = cursor.description
    if description is None:
        return tuple
    return row_class([column.name for column in description])


def unavailable(exc: BaseException) -> bool:
    """True when ``exc`` means the server cannot be reached (as opposed to a bad statement)."""
    if isinstance(exc, (PoolTimeout, psycopg.InterfaceError)):
        return True
    if isinstance(exc, psycopg.OperationalError):
        state = getattr(exc, "sqlstate", None)
        return state is None or state.startswith("08") or state in _GONE_STATES
    return False


class Result:
    """A statement's rows, fetched whole (psycopg's client-side cursor holds them anyway)."""

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self._rows = rows
        self._next = 0
        self.rowcount = rowcount

    def fetchone(self) -> Any:
        """The next row, or None."""
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]

    def fetchall(self) -> list[Any]:
        """The rows not fetched yet."""
        rest, self._next = self._rows[self._next:], len(self._rows)
        return rest

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())


def connection_kwargs(url: StoreURL) -> dict[str, Any]:
    """What every connection to ``url`` is opened with."""
    kwargs: dict[str, Any] = {"autocommit": True, "connect_timeout": CONNECT_TIMEOUT, "application_name": "hermes-tui"}
    if url.password and not url.url_password:  # a password written in the URL wins
        kwargs["password"] = url.password
    return kwargs


class PostgresDatabase:
    """A :class:`~hermes_tui.storage.base.Database` on a psycopg pool. A thread's statements
    inside :meth:`unit` share one connection and one transaction; outside one, each statement
    takes a connection from the pool and commits on its own."""

    kind = "postgresql"
    now = "CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)"

    def __init__(self, url: StoreURL, *, max_size: int = 4) -> None:
        self.url = url
        self.label = url.redacted()
        self._local = threading.local()
        try:  # one plain connection first: its error says what is wrong (refused, password...)
            psycopg.connect(url.text, **connection_kwargs(url)).close()
        except psycopg.Error as exc:
            raise self.problem(exc, "cannot be reached") from None
        self.max_size = max_size
        self.pool = self._new_pool()
        try:
            self.pool.open(wait=True, timeout=CONNECT_TIMEOUT * 2)
        except PoolTimeout as exc:
            self.pool.close()
            raise self.problem(exc, "cannot be reached") from None

    def _new_pool(self) -> ConnectionPool:
        kwargs = {**connection_kwargs(self.url), "row_factory": _row_factory}
        return ConnectionPool(self.url.text, kwargs=kwargs, min_size=1, max_size=self.max_size, open=False,
                              name="hermes-store", timeout=CHECKOUT_TIMEOUT)

    def problem(self, exc: BaseException, doing: str = "failed on") -> StoreError:
        """``exc`` as a one-line StoreError (StoreUnavailable when the server cannot be reached)."""
        detail = self.url.scrub(" ".join(str(exc).split()) or type(exc).__name__)
        kind = StoreUnavailable if unavailable(exc) else StoreError
        return kind(f"the sessions store {self.label} {doing}: {detail}" if doing != "failed on"
                    else f"the sessions store {self.label}: {detail}")

    def recover(self) -> None:
        """After the server was unreachable: when a plain connection works again, start a new
        pool at once (the old one would wait out its reconnect backoff, which grows to minutes
        in a long outage)."""
        try:
            psycopg.connect(self.url.text, **{**connection_kwargs(self.url), "connect_timeout": 2}).close()
        except psycopg.Error:
            return  # still away
        old = self.pool
        self.pool = self._new_pool()
        self.pool.open(wait=False)
        old.close(timeout=0)

    @contextmanager
    def unit(self) -> Iterator[None]:
        """One connection and one transaction for this thread (nested: a savepoint)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            with self._translated(), conn.transaction():
                yield
            return
        with ExitStack() as stack:
            stack.enter_context(self._translated())
            conn = stack.enter_context(self.pool.connection())
            self._local.conn = conn
            stack.callback(setattr, self._local, "conn", None)
            stack.enter_context(conn.transaction())
            yield

    transaction = unit

    @contextmanager
    def _translated(self) -> Iterator[None]:
        try:
            yield
        except (psycopg.Error, PoolTimeout) as exc:
            raise self.problem(exc) from None

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Result:
        """Run one statement; its rows, fetched."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            with self.unit():
                return self.execute(sql, params)
        with self._translated():
            cursor = conn.execute(_sql(sql), tuple(_param(p) for p in params))
            rows = cursor.fetchall() if cursor.description is not None else []
            return Result(rows, cursor.rowcount)

    def executescript(self, sql: str) -> None:
        """Run statements separated by ``;`` (no parameters, no ``;`` inside them)."""
        for statement in sql.split(";"):
            if statement.strip():
                self.execute(statement)

    def insert(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run an ``INSERT``; the new row's id."""
        return int(self.execute(f"{sql} RETURNING id", params).fetchone()[0])

    def notify(self, payload: str) -> None:
        """``NOTIFY`` the machines listening (sent when the transaction commits)."""
        self.execute(f"SELECT pg_notify('{CHANNEL}', ?)", (payload,))

    def close(self) -> None:
        """Close the pool."""
        self.pool.close()


class NotifyListener:
    """A thread holding one connection that ``LISTEN``s on :data:`CHANNEL`; it reconnects
    after the server comes back (``on_connect`` is called each time: whatever was sent while
    it was away is looked up then).

    Args:
        url: the store.
        on_message: called (on this thread) with each payload.
        on_connect: called (on this thread) each time listening starts.
    """

    def __init__(self, url: StoreURL, on_message: Callable[[str], None], on_connect: Callable[[], None]) -> None:
        self.url = url
        self.on_message = on_message
        self.on_connect = on_connect
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hermes-store-listen", daemon=True)
        self.listening = threading.Event()

    def start(self) -> None:
        """Start listening (in the background)."""
        self._thread.start()

    def _run(self) -> None:
        delay = 0.2
        while not self._stop.is_set():
            try:
                with psycopg.connect(self.url.text, **connection_kwargs(self.url)) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self.listening.set()
                    delay = 0.2
                    self.on_connect()
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=0.5):
                            self.on_message(note.payload)
            except psycopg.Error as exc:
                log.info("store listener: %s", self.url.scrub(str(exc)))
            except Exception:  # a callback failed: keep listening
                log.exception("store listener callback failed")
            self.listening.clear()
            self._stop.wait(delay)
            delay = min(delay * 2, 5.0)

    def stop(self) -> None:
        """Stop listening and wait for the thread."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
