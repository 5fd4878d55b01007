"""The statements of the ``checkpoints`` table and of a conversation rewind (hiding messages).

A checkpoint's row says which turn and call it belongs to and which commit of the shadow
repository holds each folder; the snapshot data itself stays on the machine whose folder it is
(``$HERMES_HOME/checkpoints``), so a shared store lists another machine's checkpoints (with
their ``host``) but only that machine can diff or roll back to them.
"""

from __future__ import annotations

import json
from typing import Any

from hermes_tui.storage.base import Database

_COLUMNS = ("session_id", "n", "created_at", "reason", "detail", "turn_id", "call_id", "commits", "changed", "skipped",
            "message_id", "host", "files", "added", "removed")


def save_checkpoint(db: Database, row: dict[str, Any], keep: int) -> None:
    """Insert or update one checkpoint (``Checkpoint.as_json``); forget the session's checkpoints
    older than its newest ``keep``."""
    values = (row["session"], row["n"], row["created"], row["reason"], row["detail"], row["turn_id"], row["call_id"],
              json.dumps(row["commits"]), json.dumps(row["changed"]), json.dumps(row["skipped"]), row["message_id"],
              row["host"], row["files"], row["added"], row["removed"])
    updates = ", ".join(f"{c} = excluded.{c}" for c in ("changed", "skipped", "files", "added", "removed", "commits"))
    with db.transaction():
        db.execute(f"INSERT INTO checkpoints ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))}) "
                   f"ON CONFLICT (session_id, n) DO UPDATE SET {updates}", values)
        db.execute("DELETE FROM checkpoints WHERE session_id = ? AND n <= ?", (row["session"], row["n"] - keep))


def last_checkpoint(db: Database, session_id: str) -> int:
    """The newest checkpoint's number of ``session_id`` (0: none)."""
    row = db.execute("SELECT MAX(n) FROM checkpoints WHERE session_id = ?", (session_id,)).fetchone()
    return int(row[0] or 0)


def checkpoints_of(db: Database, session_id: str) -> list[dict[str, Any]]:
    """The session's checkpoints, oldest first, as ``Checkpoint.as_json`` gives them."""
    rows = db.execute("SELECT * FROM checkpoints WHERE session_id = ? ORDER BY n", (session_id,)).fetchall()
    return [{"session": r["session_id"], "n": int(r["n"]), "created": r["created_at"], "reason": r["reason"],
             "detail": r["detail"] or "", "turn_id": r["turn_id"], "call_id": r["call_id"],
             "commits": json.loads(r["commits"]), "changed": json.loads(r["changed"]),
             "skipped": json.loads(r["skipped"]), "message_id": r["message_id"], "host": r["host"] or ""}
            for r in rows]


def last_message_id(db: Database, session_id: str) -> int:
    """The id of the session's newest message (0: none)."""
    row = db.execute("SELECT MAX(id) FROM messages WHERE session_id = ?", (session_id,)).fetchone()
    return int(row[0] or 0)


def rewind_point(db: Database, session_id: str, turn_id: str | None, message_id: int | None) -> int:
    """The last message a rewind to a checkpoint keeps: the one before its turn began (or the
    checkpoint's own ``message_id``, a rollback's)."""
    if message_id is not None:
        return message_id
    if turn_id is not None:
        row = db.execute("SELECT MIN(id) FROM messages WHERE session_id = ? AND turn_id = ?",
                         (session_id, turn_id)).fetchone()
        if row[0] is not None:
            return int(row[0]) - 1
    return last_message_id(db, session_id)


def rewind_messages(db: Database, session_id: str, keep_through: int, by: int, target: int) -> tuple[int, int]:
    """The conversation as it was at checkpoint ``target``: the messages up to ``keep_through``
    that rewinds since it hid are shown again (a rewind's mark is its own checkpoint, taken
    just before it; one hidden before ``target`` stays hidden), and the
    later ones are hidden, marked with checkpoint ``by`` (kept, restorable). Returns (hidden,
    shown again)."""
    with db.transaction():
        shown = db.execute("UPDATE messages SET hidden_by = NULL WHERE session_id = ? AND id <= ? "
                           "AND hidden_by >= ?", (session_id, keep_through, target)).rowcount
        hidden = db.execute("UPDATE messages SET hidden_by = ? WHERE session_id = ? AND id > ? AND hidden_by IS NULL",
                            (by, session_id, keep_through)).rowcount
    return hidden, shown
