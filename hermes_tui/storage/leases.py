"""Who drives a session: one process at a time holds its lease (host, pid, heartbeat).

A lease is a row in ``leases``. Its holder beats every few seconds; another process that wants
the session is refused while the beat is fresh, and takes the lease over when the beat is older
than :data:`STALE_AFTER` seconds — or at once when the holder was on this machine and its
process is gone. Times are the store's clock (:attr:`Database.now`), one clock for every
machine that shares it.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from typing import Any

from hermes_tui.storage.base import Database

STALE_AFTER = 30.0
"""Seconds without a heartbeat after which a lease may be taken over."""
HEARTBEAT_EVERY = 5.0
"""Seconds between a holder's heartbeats."""


@dataclass(frozen=True)
class Lease:
    """A lease row: who holds a session and how fresh their heartbeat is."""

    session_id: str
    owner: str
    host: str
    pid: int
    program: str
    taken_at: float
    age: float
    """Seconds since the last heartbeat (by the store's clock)."""

    def describe(self) -> str:
        """``hermes-tui run on buildbox (pid 4242, heartbeat 3s ago)``."""
        return f"{self.program} on {self.host} (pid {self.pid}, heartbeat {self.age:.0f}s ago)"

    @property
    def stale(self) -> bool:
        """True when its heartbeat is older than :data:`STALE_AFTER`."""
        return self.age > STALE_AFTER


@dataclass(frozen=True)
class Taken:
    """What :func:`take` got: the lease, or who holds it instead."""

    ok: bool
    holder: Lease | None = None
    """Who holds it (when refused), or whose stale lease was taken over (when ok)."""


def new_owner() -> str:
    """A token naming one holder (a process may hold several sessions, each its own token)."""
    return secrets.token_hex(8)


def _lease(row: Any) -> Lease:
    return Lease(row["session_id"], row["owner"], row["host"], int(row["pid"]), row["program"],
                 float(row["taken_at"]), max(0.0, float(row["age"])))


def lease_of(db: Database, session_id: str) -> Lease | None:
    """The lease on ``session_id`` (fresh or stale), or None."""
    row = db.execute(f"SELECT *, {db.now} - heartbeat_at AS age FROM leases WHERE session_id = ?",
                     (session_id,)).fetchone()
    return _lease(row) if row else None


def all_leases(db: Database) -> dict[str, Lease]:
    """Every lease, by session id."""
    return {row["session_id"]: _lease(row)
            for row in db.execute(f"SELECT *, {db.now} - heartbeat_at AS age FROM leases")}


def holder_gone(lease: Lease, host: str) -> bool:
    """True when the holder ran on ``host`` (this machine) and its process is gone."""
    if lease.host != host:
        return False
    try:
        os.kill(lease.pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    try:  # a zombie is gone too: killed, and not reaped yet (by an init that is slow to)
        with open(f"/proc/{lease.pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False


def live_holder(lease: Lease | None, host: str, stale_after: float = STALE_AFTER) -> Lease | None:
    """``lease`` when it still counts: its heartbeat is fresh and its process is not known gone."""
    if lease is None or lease.age > stale_after or holder_gone(lease, host):
        return None
    return lease


def take(db: Database, session_id: str, owner: str, host: str, program: str, pid: int | None = None,
         stale_after: float = STALE_AFTER) -> Taken:
    """Take the lease on ``session_id`` for ``owner``: granted when nobody holds it, when
    ``owner`` already does, when the holder's heartbeat is stale, or when the holder was a
    process on ``host`` that is gone (``stale_after``: seconds without a heartbeat that make a
    lease stale). One statement decides, so two takers never both win."""
    pid = os.getpid() if pid is None else pid
    before = lease_of(db, session_id)
    dead_owner = before.owner if before is not None and before.owner != owner and holder_gone(before, host) else ""
    row = db.execute(
        f"INSERT INTO leases (session_id, owner, host, pid, program, taken_at, heartbeat_at) "
        f"VALUES (?, ?, ?, ?, ?, {db.now}, {db.now}) ON CONFLICT (session_id) DO UPDATE SET "
        "owner = excluded.owner, host = excluded.host, pid = excluded.pid, program = excluded.program, "
        "taken_at = CASE WHEN leases.owner = excluded.owner THEN leases.taken_at ELSE excluded.taken_at END, "
        "heartbeat_at = excluded.heartbeat_at "
        f"WHERE leases.owner = excluded.owner OR leases.heartbeat_at < {db.now} - ? OR leases.owner = ? "
        "RETURNING owner",
        (session_id, owner, host, pid, program, stale_after, dead_owner)).fetchone()
    if row is not None:
        taken_over = before if before is not None and before.owner != owner else None
        return Taken(True, taken_over)
    return Taken(False, lease_of(db, session_id))


def beat(db: Database, session_id: str, owner: str) -> bool:
    """Refresh ``owner``'s heartbeat; False when the lease is no longer theirs (taken over)."""
    return db.execute(f"UPDATE leases SET heartbeat_at = {db.now} WHERE session_id = ? AND owner = ?",
                      (session_id, owner)).rowcount > 0


def release(db: Database, session_id: str, owner: str) -> None:
    """Give the lease up (nothing happens if it is not ``owner``'s any more)."""
    db.execute("DELETE FROM leases WHERE session_id = ? AND owner = ?", (session_id, owner))
