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
FUTURE_SLACK = 60.0
"""Seconds a heartbeat may lie in the store's future (clock steps) before it counts as forged."""
MIN_STALE_AFTER = 3 * HEARTBEAT_EVERY
"""The shortest ``store.lease_timeout`` allowed: three missed heartbeats, so a live holder is
never taken for a stopped one."""


def pid_space() -> str:
    """Where this process's pid means something: the kernel's boot and the pid namespace.
    A holder with the same pid space whose pid is gone has stopped; with another (another
    machine, another container, even under the same host name) its pid says nothing here."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as boot:
            booted = boot.read().strip()
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return ""  # no way to tell: a holder's pid is never read as gone
    return f"{booted}/{namespace}"


@dataclass(frozen=True)
class Lease:
    """A lease row: who holds a session and how fresh their heartbeat is."""

    session_id: str
    owner: str
    host: str
    pid: int
    pid_space: str
    program: str
    taken_at: float
    age: float
    """Seconds since the last heartbeat (by the store's clock)."""

    def describe(self) -> str:
        """``hermes-tui run on buildbox (pid 4242, heartbeat 3s ago)`` (its texts are anyone's
        who can write the store: bounded)."""
        return f"{self.program[:40]} on {self.host[:60]} (pid {self.pid}, heartbeat {max(self.age, 0):.0f}s ago)"

    @property
    def stale(self) -> bool:
        """True when its heartbeat is older than :data:`STALE_AFTER` (or set in the future: a
        forged row must not hold a session for ever)."""
        return self.age > STALE_AFTER or self.age < -FUTURE_SLACK


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
    return Lease(row["session_id"], row["owner"], row["host"], int(row["pid"]), row["pid_space"] or "",
                 row["program"], float(row["taken_at"]), float(row["age"]))


def lease_of(db: Database, session_id: str) -> Lease | None:
    """The lease on ``session_id`` (fresh or stale), or None."""
    row = db.execute(f"SELECT *, {db.now} - heartbeat_at AS age FROM leases WHERE session_id = ?",
                     (session_id,)).fetchone()
    return _lease(row) if row else None


def all_leases(db: Database) -> dict[str, Lease]:
    """Every lease, by session id."""
    return {row["session_id"]: _lease(row)
            for row in db.execute(f"SELECT *, {db.now} - heartbeat_at AS age FROM leases")}


def holder_gone(lease: Lease) -> bool:
    """True when the holder ran in this pid space (:func:`pid_space`) and its process is gone
    (or a zombie: killed, not reaped yet by an init that is slow to)."""
    here = pid_space()
    if not here or lease.pid_space != here:
        return False
    try:
        os.kill(lease.pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    try:
        with open(f"/proc/{lease.pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False


def live_holder(lease: Lease | None, stale_after: float = STALE_AFTER) -> Lease | None:
    """``lease`` when it still counts: its heartbeat is fresh and its process is not known gone."""
    if lease is None or lease.age > stale_after or lease.age < -FUTURE_SLACK or holder_gone(lease):
        return None
    return lease


def take(db: Database, session_id: str, owner: str, host: str, program: str, pid: int | None = None,
         stale_after: float = STALE_AFTER, space: str | None = None) -> Taken:
    """Take the lease on ``session_id`` for ``owner``: granted when nobody holds it, when
    ``owner`` already does, when the holder's heartbeat is stale, or when the holder was a
    process on ``host`` that is gone (``stale_after``: seconds without a heartbeat that make a
    lease stale). One statement decides, so two takers never both win."""
    pid = os.getpid() if pid is None else pid
    before = lease_of(db, session_id)
    dead_owner = before.owner if before is not None and before.owner != owner and holder_gone(before) else ""
    # rowcount, not RETURNING: an upsert whose WHERE refuses changes no row, on every backend
    # (and SQLite before 3.35 has no RETURNING).
    changed = db.execute(
        f"INSERT INTO leases (session_id, owner, host, pid, pid_space, program, taken_at, heartbeat_at) "
        f"VALUES (?, ?, ?, ?, ?, ?, {db.now}, {db.now}) ON CONFLICT (session_id) DO UPDATE SET "
        "owner = excluded.owner, host = excluded.host, pid = excluded.pid, pid_space = excluded.pid_space, "
        "program = excluded.program, "
        "taken_at = CASE WHEN leases.owner = excluded.owner THEN leases.taken_at ELSE excluded.taken_at END, "
        "heartbeat_at = excluded.heartbeat_at "
        f"WHERE leases.owner = excluded.owner OR leases.heartbeat_at < {db.now} - ? "
        f"OR leases.heartbeat_at > {db.now} + ? OR leases.owner = ?",
        (session_id, owner, host, pid, pid_space() if space is None else space, program, stale_after, FUTURE_SLACK,
         dead_owner)).rowcount
    if changed:
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
