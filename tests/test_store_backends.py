"""The storage layer on both backends (SQLite and a real PostgreSQL, tests/pg_server.py): the
versioned migrations, a schema from a newer hermes-tui refused in one line, a SQLite file of the
previous release brought up to date, every statement of ``hermes_tui.storage.sessions`` giving the same
results on both, odd text, leases and their races, concurrent migration, and a password that
is never shown."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_tui.storage import sessions as db
from hermes_tui.storage import opening
from hermes_tui.storage.writer import SessionStore
from hermes_tui.storage import leases
from hermes_tui.storage.errors import SchemaTooNew
from hermes_tui.storage.schema import LATEST, MIGRATIONS, migrate
from hermes_tui.config.store_url import parse_store_url

from conftest import open_store_db

CLI = [sys.executable, "-m", "hermes_tui"]


def run_cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    # From a folder outside the checkout: the installed package, as a user runs it.
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=90, env=env,
                          cwd=tempfile.gettempdir(), stdin=subprocess.DEVNULL)


def versions(conn: db.Database) -> list[int]:
    return [int(row["version"]) for row in conn.execute("SELECT version FROM schema_version ORDER BY version")]


# -- migrations ----------------------------------------------------------------------------------


def test_migrations_record_every_version_once(store_backend: str, hermes_home: Path) -> None:
    conn = open_store_db(hermes_home)
    try:
        assert conn.kind == store_backend
        assert versions(conn) == list(range(1, LATEST + 1)) == [m.version for m in MIGRATIONS]
        rows = [dict(r) for r in conn.execute("SELECT * FROM schema_version ORDER BY version")]
        assert [r["what"] for r in rows] == [m.what for m in MIGRATIONS]
        assert all(r["program"] == opening.PROGRAM and isinstance(r["applied_at"], float) for r in rows)
        assert migrate(conn, opening.PROGRAM) == []  # already there: nothing applied
    finally:
        conn.close()
    again = open_store_db(hermes_home)  # opening twice applies nothing new
    try:
        assert migrate(again, "someone else") == []
        assert [dict(r) for r in again.execute("SELECT * FROM schema_version ORDER BY version")] == rows
        for table in ("sessions", "turns", "messages", "tool_calls", "approvals", "approval_answers", "usage",
                      "input_history", "leases"):
            assert again.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 0, table
    finally:
        again.close()


def make_too_new(home: Path) -> None:
    conn = open_store_db(home)
    try:
        conn.execute("INSERT INTO schema_version (version, what, applied_at, program) VALUES (?, ?, ?, ?)",
                     (LATEST + 1, "from the future", time.time(), "hermes-tui 99"))
    finally:
        conn.close()


def test_a_schema_from_a_newer_hermes_tui_is_refused(store_backend: str, hermes_home: Path) -> None:
    make_too_new(hermes_home)
    with pytest.raises(SchemaTooNew) as caught:
        opening.open_database(db.store_url(None, hermes_home))
    message = str(caught.value)
    assert "\n" not in message
    assert f"schema version {LATEST + 1}" in message and f"({LATEST})" in message and "upgrade" in message
    with pytest.raises(SchemaTooNew):
        SessionStore.open(hermes_home)
    done = run_cli("sessions")
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("hermes-tui: ") and str(LATEST + 1) in done.stderr and "upgrade" in done.stderr
    assert done.stdout == ""


# The previous release (PRAGMA user_version 2): its SCHEMA, then the columns it added on open.
OLD_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, title TEXT, created_at REAL NOT NULL, updated_at REAL NOT NULL,
    provider TEXT, model TEXT, cwd TEXT
);
CREATE TABLE IF NOT EXISTS turns (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    origin TEXT NOT NULL, text TEXT NOT NULL, status TEXT NOT NULL, error TEXT,
    started_at REAL NOT NULL, ended_at REAL
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn_id TEXT, role TEXT NOT NULL, content TEXT, tool_calls TEXT, tool_call_id TEXT,
    origin TEXT, status TEXT NOT NULL DEFAULT 'done', created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_session ON messages(session_id, id);
CREATE TABLE IF NOT EXISTS tool_calls (
    id TEXT NOT NULL, session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn_id TEXT, message_id INTEGER, name TEXT NOT NULL, arguments TEXT NOT NULL,
    status TEXT NOT NULL, result TEXT, exec_id TEXT, started_at REAL NOT NULL, finished_at REAL,
    PRIMARY KEY (session_id, id)
);
CREATE TABLE IF NOT EXISTS approvals (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL, tool_call_id TEXT, kind TEXT NOT NULL,
    text TEXT NOT NULL, request TEXT NOT NULL, status TEXT NOT NULL, decision TEXT, reason TEXT,
    created_at REAL NOT NULL, answered_at REAL
);
CREATE INDEX IF NOT EXISTS approvals_session ON approvals(session_id, status);
CREATE TABLE IF NOT EXISTS input_history (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT, text TEXT NOT NULL, created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS usage (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn_id TEXT, message_id INTEGER, provider TEXT, model TEXT,
    input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens INTEGER NOT NULL DEFAULT 0, cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0, cost_usd REAL, cost_source TEXT NOT NULL DEFAULT 'unknown',
    estimated INTEGER NOT NULL DEFAULT 0, latency_s REAL, created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS usage_session ON usage(session_id, id);
CREATE TABLE IF NOT EXISTS approval_answers (
    approval_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, tool_call_id TEXT, kind TEXT NOT NULL,
    text TEXT NOT NULL, decision TEXT NOT NULL, reason TEXT, who TEXT, answered_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS approval_answers_session ON approval_answers(session_id);
ALTER TABLE messages ADD COLUMN reasoning TEXT;
ALTER TABLE sessions ADD COLUMN max_cost_usd REAL;
ALTER TABLE turns ADD COLUMN resumes INTEGER NOT NULL DEFAULT 0;
INSERT INTO sessions VALUES ('20251001-120000-0ld1', 'old work', 1759320000.0, 1759320100.0, 'custom', 'm', '/w', 1.5);
INSERT INTO turns VALUES ('t-old', '20251001-120000-0ld1', 'user', 'old work', 'done', NULL, 1759320000.0,
                          1759320100.0, 2);
INSERT INTO messages (session_id, turn_id, role, content, created_at, reasoning)
    VALUES ('20251001-120000-0ld1', 't-old', 'user', 'old work', 1759320000.0, NULL);
INSERT INTO messages (session_id, turn_id, role, content, created_at, reasoning)
    VALUES ('20251001-120000-0ld1', 't-old', 'assistant', 'done before', 1759320050.0, 'thought');
INSERT INTO approvals VALUES ('a-old', '20251001-120000-0ld1', NULL, 'command', 'ls', '{"id": "a-old"}',
                              'pending', NULL, NULL, 1759320010.0, NULL);
INSERT INTO usage (session_id, turn_id, input_tokens, output_tokens, cost_usd, created_at)
    VALUES ('20251001-120000-0ld1', 't-old', 10, 5, 0.125, 1759320050.0);
INSERT INTO input_history (session_id, text, created_at) VALUES ('20251001-120000-0ld1', 'old input', 1759320000.0);
PRAGMA user_version = 2;
"""


def test_a_sqlite_file_of_the_previous_release_is_brought_up_to_date(hermes_home: Path) -> None:
    path = opening.sessions_db_path(hermes_home)
    path.parent.mkdir(parents=True, exist_ok=True)
    old = sqlite3.connect(path)
    old.executescript(OLD_SCHEMA)
    old.close()
    conn = opening.connect(path)
    try:
        assert versions(conn) == list(range(1, LATEST + 1))
        assert conn.execute("PRAGMA user_version").fetchone()[0] == LATEST
        columns = {row[1] for row in conn.execute("PRAGMA table_info(sessions)")}
        assert {"host", "max_cost_usd"} <= columns
        assert "host" in {row[1] for row in conn.execute("PRAGMA table_info(approvals)")}
        session = db.load_session(conn, "20251001-120000-0ld1")
        assert session is not None
        assert (session.info.title, session.info.max_cost_usd, session.info.host) == ("old work", 1.5, None)
        assert [(m["role"], m["content"], m["reasoning"]) for m in session.messages] == [
            ("user", "old work", None), ("assistant", "done before", "thought")]
        assert [(t["id"], t["resumes"]) for t in session.turns] == [("t-old", 2)]
        assert [a["id"] for a in session.pending_approvals] == ["a-old"]
        assert (session.info.tokens_in, session.info.tokens_out, session.info.cost_usd) == (10, 5, 0.125)
        assert db.load_inputs(conn) == ["old input"]
        assert db.find_session(conn, "latest") == "20251001-120000-0ld1"
        # What the new columns and the leases table are for works on the old rows.
        db.start_turn(conn, "20251001-120000-0ld1", "t-new", "user", "more")
        assert leases.take(conn, "20251001-120000-0ld1", "me", "box", "test").ok
        assert db.load_session(conn, "20251001-120000-0ld1").info.host == opening.host_name()
    finally:
        conn.close()
    again = opening.connect(path)  # up to date now: nothing more to apply
    try:
        assert migrate(again, opening.PROGRAM) == [] and versions(again) == list(range(1, LATEST + 1))
    finally:
        again.close()


# -- every statement, the same on both backends --------------------------------------------------

TIME_KEYS = {"created_at", "updated_at", "started_at", "ended_at", "finished_at", "answered_at", "turn_started",
             "applied_at"}


def normal(value: Any, key: str | None = None) -> Any:
    """``value`` with the clock's readings replaced by their type, and every number tagged with
    its type (1 and 1.0, or an int and a Decimal, are not the same result)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return normal({f.name: getattr(value, f.name) for f in dataclasses.fields(value)}, key)
    if isinstance(value, dict):
        return {k: normal(v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normal(v) for v in value]
    if key in TIME_KEYS and value is not None:
        return f"<time:{type(value).__name__}>"
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)) or type(value).__name__ == "Decimal":
        return (type(value).__name__, round(value, 9) if isinstance(value, float) else value)
    return value


S1, S2, EMPTY = "20261129-100000-abcd", "20261129-110000-beef", "20261129-120000-none"
CHILD = f"{S1}::child::x"  # a sub-agent's: reached through its parent


def every_statement(conn: db.Database) -> dict[str, Any]:
    """Run every statement function of ``hermes_tui.storage.sessions`` (and the lease ones); what each returned."""
    out: dict[str, Any] = {}
    db.create_session(conn, S1, "custom", "m", "/tmp")
    db.create_session(conn, S1, "other", "x", "/elsewhere")  # exists: nothing happens
    out["start_turn"] = db.start_turn(conn, S1, "t1", "user", "  list the files\nplease ")
    call = {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "ls"}'}}
    reply = db.add_message(conn, S1, "t1", "assistant", "Listing", tool_calls=[call], origin="model",
                           status="streaming")
    out["add_message"] = reply
    db.update_message(conn, reply, "Listing.", "streaming", reasoning="the user asked")
    db.update_message(conn, reply, "Listing files.", "done")  # tool calls and reasoning kept
    db.start_tool_call(conn, S1, "t1", reply, "c1", "terminal", '{"command": "ls"}')
    db.start_tool_call(conn, S1, "t1", reply, "c1", "terminal", '{"command": "ls"}')  # again: still one
    out["finish_tool_call"] = db.finish_tool_call(conn, S1, "t1", "c1", "success", {"output": "a.txt", "n": 1},
                                                  '{"output": "a.txt"}', "exec-1")
    gone = db.add_message(conn, S1, "t1", "assistant", None, status="streaming")
    db.delete_message(conn, gone)
    db.add_usage(conn, S1, "t1", reply, {"provider": "custom", "model": "m", "input_tokens": 1200, "output_tokens": 34,
                                         "cache_read_tokens": 1000, "reasoning_tokens": 7, "cost_usd": 0.25,
                                         "cost_source": "priced", "estimated": True, "latency_s": 1.5})
    db.add_usage(conn, S1, "t1", None, {"input_tokens": 5})  # not priced
    db.add_approval(conn, S1, "c1", {"id": "a1", "kind": "command", "text": "rm -rf build"})
    db.add_approval(conn, S1, None, {"id": "a2", "kind": "script", "text": "print(1)"})
    db.add_approval(conn, S1, None, {"id": "a3", "kind": "command", "text": "make"})
    db.answer_approval(conn, "a1", "once", "looks fine")
    db.answer_approval(conn, "a1", "deny", "too late")  # the first answer stays
    db.answer_offline(conn, S1, "a2", "once", "from a shell", "me@box")
    db.answer_offline(conn, S1, "a2", "deny", "changed my mind", "me@box")  # the newer answer replaces it
    try:
        db.answer_offline(conn, S1, "no-such", "once", None, "me@box")
    except KeyError as exc:
        out["answer_offline_unknown"] = repr(exc)
    out["offline_answers"] = db.offline_answers(conn, S1)
    out["pending_requests"] = db.pending_requests(conn, S1)
    out["load_paused"] = db.load_session(conn, S1)
    out["settle_pending"] = db.settle_pending(conn, S1, "left pending")
    out["pending_after"] = db.pending_requests(conn, S1)
    out["count_resume"] = [db.count_resume(conn, "t1"), db.count_resume(conn, "t1"), db.count_resume(conn, "nope")]
    db.end_turn(conn, "t1", "done")
    db.set_session_model(conn, S1, "openrouter", "big-model")
    db.set_session_budget(conn, S1, 2.5)
    out["usage_rows"] = db.usage_rows(conn, S1)

    db.create_session(conn, S2, None, None, None)
    db.start_turn(conn, S2, "t2", "user", "second")  # left running: interrupted
    db.set_session_budget(conn, S2, None)
    db.create_session(conn, EMPTY, None, None, "/tmp")
    db.create_session(conn, CHILD, None, None, None)
    db.start_turn(conn, CHILD, "t3", "delegate", "a sub-agent's")
    for session, when in ((S1, 2000.0), (S2, 1000.0), (EMPTY, 3000.0), (CHILD, 4000.0)):
        conn.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (when, session))
    out["take"] = leases.take(conn, S2, "owner-1", "buildbox", "hermes-tui test", pid=4242).ok
    out["list_sessions"] = db.list_sessions(conn)
    out["list_sessions_1"] = db.list_sessions(conn, limit=1)
    out["find_session"] = {wanted: db.find_session(conn, wanted) for wanted in (
        "latest", S1, S2, EMPTY, CHILD, "20261129", "20261129-1", "20261129-10", "20261129-11", "20261129-12",
        "nope", "", "%", "_", "2026112_", "20261129-1%", "\\", "?")}
    out["load_session"] = db.load_session(conn, S1)
    out["load_session_s2"] = db.load_session(conn, S2)
    out["load_session_missing"] = db.load_session(conn, "nope")

    out["add_input"] = [db.add_input(conn, S1, text, limit=3) for text in (
        "one", "one", "   ", " secret", "two", "x" * (db.INPUT_MAX_CHARS + 1), "three\nlines", "four")]
    db.add_input(conn, S2, "from s2")
    out["load_inputs"] = db.load_inputs(conn)
    out["load_inputs_2"] = db.load_inputs(conn, limit=2)

    out["delete_if_empty"] = {s: db.delete_session_if_empty(conn, s) for s in (S2, EMPTY, "nope")}
    out["delete_session"] = [db.delete_session(conn, S2), db.delete_session(conn, S2)]
    out["after_delete"] = {"sessions": [r["id"] for r in conn.execute("SELECT id FROM sessions ORDER BY id")],
                           "inputs": db.load_inputs(conn),
                           "turns": [r["id"] for r in conn.execute("SELECT id FROM turns ORDER BY id")],
                           "list": [s.id for s in db.list_sessions(conn)]}
    return out


def test_every_statement_gives_the_same_results_on_both_backends(pg_url: str, tmp_path: Path) -> None:
    results = {}
    for kind, url in (("sqlite", parse_store_url(f"sqlite://{tmp_path / 'sessions.db'}")),
                      ("postgresql", parse_store_url(pg_url))):
        conn = opening.open_database(url)
        try:
            assert conn.kind == kind
            results[kind] = normal(every_statement(conn))
        finally:
            conn.close()
    sqlite, postgresql = results["sqlite"], results["postgresql"]
    for key in sqlite:  # one key at a time: a difference names its statement
        assert postgresql[key] == sqlite[key], key
    assert postgresql == sqlite

    # And what they are (the same on both, so checked once).
    got = sqlite
    assert (got["start_turn"], got["add_message"], got["finish_tool_call"]) == (("int", 1), ("int", 2), ("int", 3))
    assert got["answer_offline_unknown"] == "KeyError('no-such')"
    assert [(a["approval_id"], a["decision"], a["reason"]) for a in got["offline_answers"]] == [
        ("a2", "deny", "changed my mind")]
    assert [(p["id"], p["request"]["text"], (p["answer"] or {}).get("decision")) for p in got["pending_requests"]] == [
        ("a2", "print(1)", "deny"), ("a3", "make", None)]
    assert got["settle_pending"] == ("int", 2) and got["pending_after"] == []
    assert got["count_resume"] == [("int", 1), ("int", 2), ("int", 0)]
    assert [(u["input_tokens"], u["cost_usd"], u["turn_text"]) for u in got["usage_rows"]] == [
        (("int", 1200), ("float", 0.25), "  list the files\nplease "), (("int", 5), None, "  list the files\nplease ")]
    listed = got["list_sessions"]
    assert [s["id"] for s in listed] == [S1, S2]  # not the empty one, not the sub-agent's
    first, second = listed
    assert (first["title"], first["messages"], first["tokens_in"], first["tokens_out"], first["cost_usd"],
            first["unpriced_calls"], first["max_cost_usd"], first["model"], first["interrupted"]) == (
        "list the files", ("int", 3), ("int", 1205), ("int", 34), ("float", 0.25), ("int", 1), ("float", 2.5),
        "big-model", ("bool", False))
    assert second["interrupted"] == ("bool", True) and second["cost_usd"] is None
    assert second["lease"] == "hermes-tui test on buildbox (pid 4242, heartbeat 0s ago)"
    assert [s["id"] for s in got["list_sessions_1"]] == [S1]
    assert got["find_session"] == {
        "latest": S1, S1: S1, S2: S2, EMPTY: EMPTY, CHILD: CHILD, "20261129": None, "20261129-1": None,
        "20261129-10": S1, "20261129-11": S2, "20261129-12": None, "nope": None, "": None, "%": None, "_": None,
        "2026112_": None, "20261129-1%": None, "\\": None, "?": None}
    loaded = got["load_session"]
    assert [(m["role"], m["content"], m["status"]) for m in loaded["messages"]] == [
        ("user", "  list the files\nplease ", "done"), ("assistant", "Listing files.", "done"),
        ("tool", '{"output": "a.txt"}', "done")]
    assert loaded["messages"][1]["tool_calls"][0]["id"] == "c1"
    assert loaded["messages"][1]["reasoning"] == "the user asked"
    assert loaded["tool_calls"]["c1"]["result"] == {"output": "a.txt", "n": ("int", 1)}
    assert loaded["tool_calls"]["c1"]["exec_id"] == "exec-1"
    assert [(t["id"], t["status"], t["resumes"]) for t in loaded["turns"]] == [("t1", "done", ("int", 2))]
    assert [a["id"] for a in got["load_paused"]["pending_approvals"]] == ["a2", "a3"]
    assert loaded["pending_approvals"] == []
    assert got["load_session_missing"] is None
    assert got["add_input"] == [("bool", v) for v in (True, False, False, False, True, False, True, True)]
    assert got["load_inputs"] == ["two", "three\nlines", "four", "from s2"]
    assert got["load_inputs_2"] == ["four", "from s2"]
    assert got["delete_if_empty"] == {S2: ("bool", False), EMPTY: ("bool", True), "nope": ("bool", False)}
    assert got["delete_session"] == [("bool", True), ("bool", False)]
    assert got["after_delete"] == {"sessions": [S1, CHILD], "inputs": ["two", "three\nlines", "four"],
                                   "turns": ["t1", "t3"], "list": [S1]}


# -- odd text ------------------------------------------------------------------------------------

ODD = ("50% of _all_ rows? C:\\temp\\x.txt; 'quoted' \"double\" -- not SQL; "
       "ünïcödé 日本語 🐍 \u202eevil\u202c e\u0301 \U0001d11e")


@pytest.mark.parametrize("text", [
    ODD,
    "line one\nline two\r\nline three\ttab",
    "%s %(name)s {0} ?? $1 :name \\x00",  # what placeholders of every driver look like
    "x" * 1_000_000 + "🐍",  # a megabyte
], ids=["special", "newlines", "placeholders", "1MB"])
def test_text_comes_back_as_it_was_written(store_backend: str, hermes_home: Path, text: str) -> None:
    conn = open_store_db(hermes_home)
    try:
        db.create_session(conn, "s1", None, None, text)
        message = db.start_turn(conn, "s1", "t1", "user", text)
        db.add_message(conn, "s1", "t1", "assistant", text, tool_calls=[{"id": "c1", "arguments": text}])
        db.update_message(conn, message, text + text[:10], "done", reasoning=text)
        db.add_approval(conn, "s1", None, {"id": "a1", "kind": "command", "text": text})
        db.answer_offline(conn, "s1", "a1", "deny", text, text)
        db.add_input(conn, "s1", text[:db.INPUT_MAX_CHARS])
        stored = db.load_session(conn, "s1")
        assert stored is not None
        assert stored.info.cwd == text
        assert stored.info.title == (text.strip().splitlines()[0][:80] if text.strip() else "")
        assert [m["content"] for m in stored.messages] == [text + text[:10], text]
        assert stored.messages[0]["reasoning"] == text
        assert stored.messages[1]["tool_calls"] == [{"id": "c1", "arguments": text}]
        assert stored.turns[0]["text"] == text
        (pending,) = db.pending_requests(conn, "s1")
        assert pending["text"] == text and pending["request"]["text"] == text
        assert pending["answer"]["reason"] == text and pending["answer"]["who"] == text
        assert db.load_inputs(conn) == [text[:db.INPUT_MAX_CHARS]]
        assert [s.title for s in db.list_sessions(conn)] == [stored.info.title]
    finally:
        conn.close()


def test_text_with_nul_characters(store_backend: str, hermes_home: Path) -> None:
    """SQLite keeps a NUL; PostgreSQL's text cannot hold one, and the backend stores U+FFFD in
    its place (storage/postgres.py ``_param``) rather than fail the write. Every write succeeds
    on both and everything else comes back as it was."""
    text = "before\x00after\x00"
    kept = text if store_backend == "sqlite" else text.replace("\x00", "\ufffd")
    conn = open_store_db(hermes_home)
    try:
        db.create_session(conn, "s1", None, None, text)
        db.start_turn(conn, "s1", "t1", "user", text)
        db.add_message(conn, "s1", "t1", "assistant", text, tool_calls=[{"id": "c1", "arguments": text}])
        db.add_approval(conn, "s1", None, {"id": "a1", "kind": "command", "text": text})
        assert db.add_input(conn, "s1", text)
        stored = db.load_session(conn, "s1")
        assert stored.info.cwd == kept and stored.turns[0]["text"] == kept
        assert [m["content"] for m in stored.messages] == [kept, kept]
        assert stored.messages[1]["tool_calls"] == [{"id": "c1", "arguments": text}]  # JSON escapes it: kept exactly
        assert stored.pending_approvals[0]["text"] == kept and stored.pending_approvals[0]["request"]["text"] == text
        assert db.load_inputs(conn) == [kept]
        assert db.find_session(conn, "s\x00") is None and db.find_session(conn, "\x00") is None
        assert db.find_session(conn, "s") == "s1"
    finally:
        conn.close()


def test_find_session_prefixes_are_taken_literally(store_backend: str, hermes_home: Path) -> None:
    conn = open_store_db(hermes_home)
    try:
        def add(session: str) -> None:
            db.create_session(conn, session, None, None, None)
            db.start_turn(conn, session, f"t-{session}", "user", "hi")

        add("solo")
        for wanted in ("%", "_", "%o", "_olo", "s_lo", "s%", "\\", "?", "s?", "*", "s*", "."):
            assert db.find_session(conn, wanted) is None, wanted  # a wildcard would match "solo"
        add("a_b.1")
        add("aXb.2")
        add("a%b.3")
        add("a\\b.4")
        add("a?b.5")
        assert db.find_session(conn, "a_") == "a_b.1"  # "_" is not "any character"
        assert db.find_session(conn, "aX") == "aXb.2"
        assert db.find_session(conn, "a%") == "a%b.3"  # "%" is not "anything"
        assert db.find_session(conn, "a\\") == "a\\b.4"  # a backslash is not an escape
        assert db.find_session(conn, "a\\b") == "a\\b.4"
        assert db.find_session(conn, "a?") == "a?b.5"  # "?" is not a placeholder
        assert db.find_session(conn, "a") is None  # five match: ambiguous
        assert db.find_session(conn, "a%b.3") == "a%b.3" and db.find_session(conn, "a?b.5") == "a?b.5"
        assert db.find_session(conn, "a__") is None and db.find_session(conn, "a\\_") is None
    finally:
        conn.close()


def test_a_prefix_matches_letter_case_the_same_on_both_backends(pg_url: str, tmp_path: Path) -> None:
    found = {}
    for kind, url in (("sqlite", parse_store_url(f"sqlite://{tmp_path / 'sessions.db'}")),
                      ("postgresql", parse_store_url(pg_url))):
        conn = opening.open_database(url)
        try:
            db.create_session(conn, "Alpha-1", None, None, None)
            db.start_turn(conn, "Alpha-1", "t1", "user", "hi")
            found[kind] = {wanted: db.find_session(conn, wanted) for wanted in ("Alpha", "alpha", "ALPHA-1", "alpha-1")}
        finally:
            conn.close()
    assert found["sqlite"] == found["postgresql"]


def test_a_sub_agent_session_is_found_by_its_name_under_its_parent(store_backend: str, hermes_home: Path) -> None:
    from hermes_tui.runtime.session_names import SUBAGENT_SEPARATOR

    assert db.CHILD == SUBAGENT_SEPARATOR  # the store's name for it is the runtime's
    parent = "20261129-100000-abcd"
    explore, review = f"{parent}::child::c0ffee-explore", f"{parent}::child::123456-review"
    conn = open_store_db(hermes_home)
    try:
        for session in (parent, explore, review, f"{explore}::child::aaaaaa-deep",
                        "20261129-110000-beef::child::bbbbbb-deep"):
            db.create_session(conn, session, None, None, None)
        assert db.child_session_named(conn, parent, "explore") == explore
        assert db.child_session_named(conn, parent, "review") == review
        assert db.child_session_named(conn, parent, "deep") is None  # a grandchild's, another parent's: not its child
        assert db.child_session_named(conn, parent, "nope") is None
    finally:
        conn.close()


# -- leases --------------------------------------------------------------------------------------


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_lease_is_taken_refused_taken_over_and_released(store_backend: str, hermes_home: Path) -> None:
    conn = open_store_db(hermes_home)
    here = opening.host_name()
    try:
        assert leases.lease_of(conn, "s1") is None
        first = leases.take(conn, "s1", "owner-a", here, "hermes-tui app", pid=os.getpid())
        assert first.ok and first.holder is None
        again = leases.take(conn, "s1", "owner-a", here, "hermes-tui app", pid=os.getpid())
        assert again.ok and again.holder is None  # its own: still its
        refused = leases.take(conn, "s1", "owner-b", "otherbox", "hermes-tui run", pid=7, space="otherbox")
        assert not refused.ok and refused.holder is not None
        assert refused.holder.owner == "owner-a"
        assert refused.holder.describe().startswith(f"hermes-tui app on {here} (pid {os.getpid()}, heartbeat ")
        assert not refused.holder.stale
        assert leases.beat(conn, "s1", "owner-a") and not leases.beat(conn, "s1", "owner-b")
        assert set(leases.all_leases(conn)) == {"s1"}
        assert leases.live_holder(leases.lease_of(conn, "s1")) is not None

        time.sleep(0.7)  # stale after 0.5 s without a beat
        assert leases.live_holder(leases.lease_of(conn, "s1"), stale_after=0.5) is None
        over = leases.take(conn, "s1", "owner-b", "otherbox", "hermes-tui run", pid=7, stale_after=0.5, space="otherbox")
        assert over.ok and over.holder is not None and over.holder.owner == "owner-a"
        assert not leases.beat(conn, "s1", "owner-a")  # taken over: the old holder learns it
        assert leases.beat(conn, "s1", "owner-b")
        now = leases.lease_of(conn, "s1")
        assert (now.owner, now.host, now.pid, now.program) == ("owner-b", "otherbox", 7, "hermes-tui run")
        assert not leases.take(conn, "s1", "owner-a", here, "hermes-tui app", stale_after=0.5).ok  # fresh again

        leases.release(conn, "s1", "owner-a")  # not its: nothing happens
        assert leases.lease_of(conn, "s1").owner == "owner-b"
        leases.release(conn, "s1", "owner-b")
        assert leases.lease_of(conn, "s1") is None and leases.all_leases(conn) == {}
        assert leases.take(conn, "s1", "owner-a", here, "hermes-tui app").ok
    finally:
        conn.close()


def test_a_lease_whose_holder_is_gone_from_this_host_is_taken_at_once(store_backend: str, hermes_home: Path) -> None:
    conn = open_store_db(hermes_home)
    here = opening.host_name()
    gone = dead_pid()
    try:
        assert leases.take(conn, "s1", "dead-owner", here, "hermes-tui app", pid=gone).ok
        assert leases.take(conn, "s2", "far-owner", "otherbox", "hermes-tui app", pid=gone, space="otherbox").ok
        assert leases.live_holder(leases.lease_of(conn, "s1")) is None
        taken = leases.take(conn, "s1", "me", here, "hermes-tui run")
        assert taken.ok and taken.holder is not None and taken.holder.pid == gone
        assert not leases.beat(conn, "s1", "dead-owner")
        # In another pid space (another machine, another container) the pid says nothing: refused while fresh.
        refused = leases.take(conn, "s2", "me", here, "hermes-tui run")
        assert not refused.ok and refused.holder.host == "otherbox"
    finally:
        conn.close()


def test_two_threads_racing_for_a_lease_one_wins(store_backend: str, hermes_home: Path) -> None:
    rounds = 15
    conns = [open_store_db(hermes_home) for _ in range(2)]
    wins: list[list[bool]] = [[], []]
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)
    here = opening.host_name()

    def racer(index: int) -> None:
        try:
            for round_ in range(rounds):
                barrier.wait(timeout=30)
                taken = leases.take(conns[index], f"race-{round_}", f"owner-{index}", here, "racer")  # both alive
                wins[index].append(taken.ok)
        except BaseException as exc:  # reported below
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=racer, args=(i,)) for i in range(2)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert errors == []
        assert [a + b for a, b in zip(*wins)] == [1] * rounds  # exactly one winner each round
        owners = {s: lease.owner for s, lease in leases.all_leases(conns[0]).items()}
        assert owners == {f"race-{r}": f"owner-{0 if wins[0][r] else 1}" for r in range(rounds)}
    finally:
        for conn in conns:
            conn.close()


RACER = """
import sys, time
from hermes_tui.storage import opening
from hermes_tui.storage import leases
from hermes_tui.config.store_url import parse_store_url

url, index, rounds = parse_store_url(sys.argv[1]), sys.argv[2], int(sys.argv[3])
conn = opening.open_database(url)
print("ready", flush=True)
start = float(sys.stdin.readline())
for round_ in range(rounds):
    while time.time() < start + round_ * 0.05:
        time.sleep(0.0005)
    print(round_, leases.take(conn, f"race-{round_}", "owner-" + index, opening.host_name(), "racer").ok, flush=True)
conn.close()
"""


def start_together(scripts: list[list[str]]) -> list[tuple[str, str, int]]:
    """Run ``python -c`` scripts that print ``ready`` once set up and then read a start time
    from stdin (the same for all); each one's stdout (after ``ready``), stderr and exit code."""
    procs = [subprocess.Popen([sys.executable, "-c", *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=tempfile.gettempdir()) for argv in scripts]
    try:
        for proc in procs:
            line = proc.stdout.readline()
            assert line == "ready\n", line + proc.stderr.read()
        start = time.time() + 0.2
        for proc in procs:
            proc.stdin.write(f"{start}\n")
            proc.stdin.flush()  # (communicate closes it)
        return [(*proc.communicate(timeout=90), proc.returncode) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_two_processes_racing_for_a_lease_one_wins(store_backend: str, hermes_home: Path) -> None:
    open_store_db(hermes_home).close()  # the schema exists; the race is the lease's
    url = db.store_url(None, hermes_home)
    text = url.text if url.kind == "postgresql" else f"sqlite://{url.path}"
    rounds = 20
    outputs = start_together([[RACER, text, str(i), str(rounds)] for i in range(2)])
    assert [code for _, _, code in outputs] == [0, 0], [err for _, err, _ in outputs]
    won = [[line.split()[1] == "True" for line in out.splitlines()] for out, _, _ in outputs]
    assert all(len(w) == rounds for w in won)
    assert [a + b for a, b in zip(*won)] == [1] * rounds


# -- concurrent migration ------------------------------------------------------------------------

MIGRATOR = """
import sys, time
from hermes_tui.storage import opening
from hermes_tui.storage import postgres, schema, sqlite  # imported now, not in the race
from hermes_tui.config.store_url import parse_store_url

url, tag = parse_store_url(sys.argv[1]), sys.argv[2]
opening.PROGRAM = tag  # what schema_version records as the program that applied a migration
print("ready", flush=True)
start = float(sys.stdin.readline())
while time.time() < start:
    time.sleep(0.0005)
conn = opening.open_database(url)
print(sorted(r[0] for r in conn.execute("SELECT version FROM schema_version")))
conn.close()
"""


WAL_RACE = ("opening.connect(): PRAGMA journal_mode=WAL on a new file fails at once with 'database is locked' "
            "(no busy wait) while another connection is creating it")


@pytest.mark.parametrize("kind", [
    "sqlite", "postgresql"])
def test_a_new_store_migrated_by_several_processes_at_once(kind: str, request, tmp_path: Path) -> None:
    if kind == "postgresql":
        server = request.getfixturevalue("pg_server")
        text = server.url(server.new_database())
    else:
        text = f"sqlite://{tmp_path / 'new' / 'sessions.db'}"
    outputs = start_together([[MIGRATOR, text, f"proc-{i}"] for i in range(4)])
    assert [code for _, _, code in outputs] == [0] * 4, [err for _, err, _ in outputs]
    assert [out.strip() for out, _, _ in outputs] == [str(list(range(1, LATEST + 1)))] * 4
    conn = opening.open_database(parse_store_url(text))
    try:
        rows = [(r["version"], r["program"]) for r in conn.execute("SELECT version, program FROM schema_version "
                                                                    "ORDER BY version")]
    finally:
        conn.close()
    assert [v for v, _ in rows] == list(range(1, LATEST + 1))
    assert len({program for _, program in rows}) == 1  # one process applied them all, in one transaction


def test_a_new_sqlite_file_another_process_is_writing_is_waited_for(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)  # still a rollback journal
    other.execute("CREATE TABLE IF NOT EXISTS being_created (x)")
    other.execute("BEGIN IMMEDIATE")  # the other process is writing: for half a second
    done = threading.Timer(0.5, other.execute, ("COMMIT",))
    done.start()
    try:
        began = time.monotonic()
        conn = opening.connect(path)  # waits for it, as for any lock (timeout=10)
        conn.close()
        assert time.monotonic() - began >= 0.4
    finally:
        done.join()
        other.close()


# -- a password is never shown -------------------------------------------------------------------

PASSWORD_VAR = "HERMES_TEST_STORE_PASSWORD"


def cli_env(**changes: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PGPASSWORD", "HERMES_TUI_STORE_URL", PASSWORD_VAR)}
    env.update({k: v for k, v in changes.items() if v is not None})
    return env


def seed(url: str) -> None:
    conn = opening.open_database(parse_store_url(url))
    try:
        db.create_session(conn, "20261129-100000-pass", None, None, None)
        db.start_turn(conn, "20261129-100000-pass", "t1", "user", "behind a password")
    finally:
        conn.close()


def test_a_password_in_the_url_works_and_is_not_shown(pg_server, hermes_home: Path) -> None:
    from pg_server import PASSWORD

    url = pg_server.url(pg_server.new_database(), tcp=True, password=True)
    assert PASSWORD in url
    seed(url)
    done = run_cli("sessions", env=cli_env(HERMES_TUI_STORE_URL=url))
    assert done.returncode == 0, done.stderr
    assert "20261129-100000-pass" in done.stdout and "behind a password" in done.stdout
    assert PASSWORD not in done.stdout + done.stderr


@pytest.mark.parametrize("where", ["user part", "parameter"])
def test_a_wrong_password_is_one_line_without_it(pg_server, hermes_home: Path, where: str) -> None:
    from pg_server import PASSWORD, PASSWORD_USER

    wrong = "Wr0ng-Secret-7731"
    name = pg_server.new_database()
    url = pg_server.url(name, tcp=True, password=True).replace(PASSWORD, wrong)
    if where == "parameter":
        url = f"postgresql://{PASSWORD_USER}@127.0.0.1:{pg_server.port}/{name}?password={wrong}"
    for argv in (["sessions"], ["export", "latest"], ["--store", url, "sessions"]):
        done = run_cli(*argv, env=cli_env(HERMES_TUI_STORE_URL=url))
        assert done.returncode == 2, (argv, done.stderr)
        *warnings, error = done.stderr.splitlines()  # --store URL: a warning that the command line shows it
        assert all(w.startswith("hermes-tui: warning: ") for w in warnings) and len(warnings) <= (argv[0] == "--store")
        assert "Traceback" not in done.stderr and done.stderr.endswith("\n"), done.stderr
        assert "password authentication failed" in error, done.stderr
        assert wrong not in done.stdout + done.stderr and PASSWORD not in done.stdout + done.stderr
        # The URL is named, its password masked.
        assert ("***" if where == "user part" else "password=***") in done.stderr, done.stderr


def test_a_masked_password_parameter_reads_as_stars() -> None:
    url = parse_store_url("postgresql://hermes@127.0.0.1:5432/db?password=Wr0ng-Secret-7731&sslmode=require")
    assert url.redacted() == "postgresql://hermes@127.0.0.1:5432/db?password=***&sslmode=require"


@pytest.mark.parametrize("url_from", ["config", "environment"])
def test_the_password_from_password_env(pg_server, hermes_home: Path, url_from: str) -> None:
    from pg_server import PASSWORD

    url = pg_server.url(pg_server.new_database(), tcp=True)
    assert PASSWORD not in url
    seed(pg_server.url(url.rsplit("/", 1)[1]))  # over the socket, as the superuser
    config = f"store:\n  password_env: {PASSWORD_VAR}\n" + (f"  url: {url}\n" if url_from == "config" else "")
    (hermes_home / "config.yaml").write_text(config)
    url_env = {"HERMES_TUI_STORE_URL": url} if url_from == "environment" else {}

    done = run_cli("sessions", env=cli_env(**url_env, **{PASSWORD_VAR: PASSWORD}))
    assert done.returncode == 0, done.stderr
    assert "20261129-100000-pass" in done.stdout and PASSWORD not in done.stdout + done.stderr

    unset = run_cli("sessions", env=cli_env(**url_env))
    assert unset.returncode == 2
    assert unset.stderr.count("\n") == 1 and "Traceback" not in unset.stderr, unset.stderr
    assert PASSWORD_VAR in unset.stderr and "not set" in unset.stderr

    wrong = run_cli("sessions", env=cli_env(**url_env, **{PASSWORD_VAR: "Wr0ng-Secret-7731"}))
    assert wrong.returncode == 2 and wrong.stderr.count("\n") == 1, wrong.stderr
    assert "password authentication failed" in wrong.stderr and "Wr0ng-Secret-7731" not in wrong.stderr


def test_a_password_a_url_cannot_carry_is_never_shown_and_the_fix_is_said() -> None:
    from hermes_tui.storage.errors import StoreURLError

    for text in ("postgresql://weird:ab/cdSECRET@127.0.0.1:5432/db", "postgresql://weird:ab?cdSECRET@127.0.0.1/db",
                 "postgresql://weird:p@ss:w/rdSECRET@h/db", "postgresql://weird:ab#cdSECRET@h/db"):
        with pytest.raises(StoreURLError) as refused:
            parse_store_url(text)
        assert "SECRET" not in str(refused.value) and "percent-encoded" in str(refused.value)
        assert "weird:***@" in str(refused.value)
    assert parse_store_url("postgresql://u:pa%40ss%2FSECRET@h/db").redacted() == "postgresql://u:***@h/db"
    assert parse_store_url("postgresql:///db").redacted() == "postgresql:///db"


def test_password_env_is_given_only_to_the_server_the_config_means() -> None:
    from hermes_tui.config.store_url import resolve_store_url

    env = {"TEAM_PW": "team-secret"}
    configured = "postgresql://hermes@db.internal:5432/hermes"
    mine = resolve_store_url(configured, "TEAM_PW", env=env)
    assert mine.password == "team-secret"
    other = resolve_store_url(configured, "TEAM_PW", flag="postgresql://someone@127.0.0.1:54329/other", env=env)
    assert other.password is None  # another server named on the command line never receives it
    same = resolve_store_url(configured, "TEAM_PW", flag="postgresql://hermes@db.internal/archive", env=env)
    assert same.password == "team-secret"
    written = resolve_store_url("postgresql://hermes:in-url@db.internal/hermes", "TEAM_PW", env={})
    assert written.password is None and written.url_password == "in-url"  # the URL's own wins, no variable needed


def test_an_ambiguous_prefix_names_the_sessions_it_matches(store_backend: str, hermes_home: Path) -> None:
    conn = open_store_db(hermes_home)
    try:
        for sid in ("quitdown", "quitdown2"):
            db.create_session(conn, sid, None, None, "/tmp")
            db.start_turn(conn, sid, f"t-{sid}", "user", "hello")
    finally:
        conn.close()
    done = run_cli("inspect", "qu")
    assert done.returncode == 2 and "matches several sessions" in done.stderr
    assert "quitdown" in done.stderr and "quitdown2" in done.stderr


def test_a_lease_with_a_heartbeat_in_the_future_does_not_hold_a_session(store_backend: str,
                                                                        hermes_home: Path) -> None:
    conn = open_store_db(hermes_home)
    try:
        assert leases.take(conn, "s1", "forger", "elsewhere", "hermes-tui run", pid=1, space="elsewhere").ok
        conn.execute(f"UPDATE leases SET heartbeat_at = {conn.now} + 86400 WHERE session_id = 's1'")
        held = leases.lease_of(conn, "s1")
        assert held is not None and held.stale and leases.live_holder(held) is None
        assert leases.take(conn, "s1", "me", opening.host_name(), "hermes-tui app").ok
    finally:
        conn.close()
