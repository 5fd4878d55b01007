"""The one writer thread of the sessions store (:class:`SessionStore`).

Every statement (:mod:`hermes_tui.storage.sessions`, :mod:`hermes_tui.storage.leases`) runs on
one thread that owns the connection, so the event loop never waits on the database: callers
``await`` a write only when what they show must be stored first (that is how "kill -9 loses
nothing that was on screen" holds). On PostgreSQL each piece of work is one transaction, and
when the server cannot be reached the writer keeps the work queued, says so (``on_health``)
and writes it when the server is back.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from hermes_tui.storage.base import Database
from hermes_tui.storage.choice import store_url
from hermes_tui.storage.errors import StoreUnavailable
from hermes_tui.storage.opening import open_database
from hermes_tui.config.store_url import StoreURL

log = logging.getLogger(__name__)

T = TypeVar("T")


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
            idle = False
            try:
                item = self._queue.get(timeout=max(0.0, next_tick - time.monotonic()))
            except queue.Empty:
                item, idle = None, True
            if time.monotonic() >= next_tick:
                next_tick = time.monotonic() + self.tick_every
                if self._tick is not None and self._closing is None:
                    self._attempt(lambda: self._tick(self._db) if self._tick and self._db else None, Future())
            if idle:
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
