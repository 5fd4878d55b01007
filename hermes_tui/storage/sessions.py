"""The statements of the sessions store, written once in SQL both backends run; each is a plain
function ``fn(db, ...)`` that :class:`~hermes_tui.storage.writer.SessionStore` runs on its writer
thread (opening a store: :mod:`hermes_tui.storage.opening`).

Tables (one definition for both, :mod:`hermes_tui.storage.schema`): ``sessions``, ``turns``,
``messages`` (the conversation in the OpenAI chat shape, in order), ``tool_calls`` (arguments,
status, result, and the ``exec_id`` of the execution's record in ``cache/exec``), ``approvals``
(asked, answered, or still pending), ``approval_answers`` (given from a shell), ``usage``,
``input_history`` (what was typed in the input, in every session: Up and Ctrl+R recall it) and
``leases`` (who drives a session now).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from hermes_tui.storage.base import Database
from hermes_tui.storage.choice import choose_store, new_session_id, store_url
from hermes_tui.storage.errors import DB_ERRORS, StoreError, StoreUnavailable
from hermes_tui.storage.inputs import INPUT_MAX_CHARS, worth_keeping
from hermes_tui.storage.leases import FUTURE_SLACK, STALE_AFTER
from hermes_tui.storage.opening import host_name, local_user
from hermes_tui.config.store_url import StoreURL

__all__ = ["DB_ERRORS", "INPUT_MAX_CHARS", "Database", "StoreError", "StoreUnavailable", "StoreURL", "choose_store",
           "new_session_id", "store_url", "worth_keeping"]

SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
SESSION_ID_RULE = "a session id is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
CHILD = "::child::"
"""What a sub-agent's session id holds: ``PARENT::child::NAME`` (the runtime's
``SUBAGENT_SEPARATOR``; the store does not import the runtime)."""


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


def child_session_named(db: Database, parent: str, name: str) -> str | None:
    """The newest stored sub-agent session of ``parent`` named ``name`` (``PARENT::child::CALL-NAME``,
    CALL the call id's last 6 characters); a grandchild is not one. None when there is none."""
    prefix = parent + CHILD
    rows = db.execute("SELECT id FROM sessions WHERE substr(id, 1, ?) = ? ORDER BY updated_at DESC",
                      (len(prefix), prefix)).fetchall()
    for (session,) in rows:
        rest = session[len(prefix):]
        if CHILD not in rest and rest.endswith("-" + name) and len(rest) - len(name) - 1 <= 10:
            return str(session)
    return None


def has_sessions(db: Database) -> bool:
    """True when the store holds at least one session with a conversation (listed)."""
    return db.execute(f"SELECT 1 FROM sessions s WHERE {HAS_MESSAGES} LIMIT 1").fetchone() is not None


def load_session(db: Database, session_id: str) -> StoredSession | None:
    """The whole session, or None if there is no such session."""
    row = db.execute(f"SELECT s.*, {USAGE_TOTALS} FROM sessions s WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        return None
    stored = StoredSession(info=_info(row))
    stored.usage = [dict(u) for u in db.execute("SELECT * FROM usage WHERE session_id = ? ORDER BY id", (session_id,))]
    # Messages a rewind hid (/rollback --conversation) are kept, neither shown nor sent.
    for message in db.execute("SELECT * FROM messages WHERE session_id = ? AND hidden_by IS NULL ORDER BY id",
                              (session_id,)):
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
