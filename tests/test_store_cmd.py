"""``hermes-tui store info`` and ``hermes-tui store migrate`` against a real PostgreSQL server
(tests/pg_server.py) and real SQLite files: no mocks."""

from __future__ import annotations

import json
import os
import pty
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hermes_tui.storage import sessions as db
from hermes_tui.storage import opening
from hermes_tui.cli import main
from hermes_tui.storage.copy import identity
from hermes_tui.storage.schema import LATEST
from hermes_tui.config.store_url import parse_store_url
from pg_server import PASSWORD as PG_PASSWORD

EXE = Path(sys.executable).parent / "hermes-tui"
SESSION = "20260101-120000-abcd"
CHILD = f"{SESSION}::child::helper"
CALL = {"id": "c1", "type": "function", "function": {"name": "execute_code", "arguments": '{"code": "print(1)"}'}}


# -- building stores ---------------------------------------------------------------------------


def open_url(url: str) -> db.Database:
    """The store ``url`` names, opened as the app opens it (created, migrated)."""
    return opening.open_database(parse_store_url(url, origin="--store"))


def sqlite_url(path: Path) -> str:
    return f"sqlite://{path}"


def build_session(conn: db.Database, sid: str = SESSION, *, pending: bool = True) -> None:
    """A session with everything a session can hold: a turn whose reply streamed and called a
    tool (with reasoning), usage, an answered approval, a pending one answered from a shell, a
    sub-agent's session, a budget, and input history (one row typed outside any session)."""
    db.create_session(conn, sid, "openrouter", "model-x", "/work/project")
    db.set_session_budget(conn, sid, 2.5)
    db.start_turn(conn, sid, f"{sid}-t1", "user", "list the files")
    reply = db.add_message(conn, sid, f"{sid}-t1", "assistant", "", status="streaming")
    db.update_message(conn, reply, "let me look", "done", tool_calls=[CALL], reasoning="the user wants ls")
    db.start_tool_call(conn, sid, f"{sid}-t1", reply, "c1", "execute_code", CALL["function"]["arguments"])
    db.add_usage(conn, sid, f"{sid}-t1", reply, {"provider": "openrouter", "model": "model-x", "input_tokens": 1200,
                                                 "output_tokens": 80, "reasoning_tokens": 30, "cost_usd": 0.0125,
                                                 "cost_source": "table", "latency_s": 1.5})
    asked = {"id": f"{sid}-r1", "kind": "terminal", "text": "rm -rf build", "choices": ["once", "session", "deny"],
             "cwd": "/work/project", "origin": "user", "reasons": ["deletes files"]}
    db.add_approval(conn, sid, "c1", asked)
    db.answer_approval(conn, asked["id"], "once", None)
    db.finish_tool_call(conn, sid, f"{sid}-t1", "c1", "done", {"stdout": "a.py\nb.py\n"}, "a.py\nb.py", "exec-1")
    db.add_message(conn, sid, f"{sid}-t1", "assistant", "two files: a.py and b.py")
    db.add_usage(conn, sid, f"{sid}-t1", None, {"input_tokens": 1300, "output_tokens": 20})
    db.end_turn(conn, f"{sid}-t1", "done")
    if pending:
        db.start_turn(conn, sid, f"{sid}-t2", "user", "clean up")
        reply = db.add_message(conn, sid, f"{sid}-t2", "assistant", "", tool_calls=[{**CALL, "id": "c2"}])
        db.start_tool_call(conn, sid, f"{sid}-t2", reply, "c2", "execute_code", '{"code": "terminal(\'make clean\')"}')
        waiting = {**asked, "id": f"{sid}-r2", "text": "make clean", "exec_id": "exec-2"}
        db.add_approval(conn, sid, "c2", waiting)
        db.answer_offline(conn, sid, waiting["id"], "deny", "not now", "me@laptop (pid 1)")
    child = f"{sid}::child::helper"
    db.create_session(conn, child, "openrouter", "model-x", "/work/project")
    db.start_turn(conn, child, f"{child}-t1", "automation", "count the files")
    db.add_message(conn, child, f"{child}-t1", "assistant", "2")
    db.end_turn(conn, child, "done")
    db.add_input(conn, sid, "list the files")
    db.add_input(conn, None, "typed before any session")


def build_other(conn: db.Database, sid: str = "20250101-000000-0000", messages: int = 7) -> None:
    """A session the target already has: its message ids go first, so copied ones differ."""
    db.create_session(conn, sid, None, None, None)
    db.start_turn(conn, sid, f"{sid}-t", "user", "older")
    for index in range(messages - 1):
        db.add_message(conn, sid, f"{sid}-t", "assistant", f"reply {index}")


def picture(conn: db.Database, sid: str) -> dict[str, Any]:
    """Everything of a session that must survive a copy, with message ids replaced by their
    position (the ids differ between stores; what they point at must not)."""
    stored = db.load_session(conn, sid)
    assert stored is not None
    position = {m["id"]: index for index, m in enumerate(stored.messages)}
    messages = [{k: v for k, v in m.items() if k != "id"} for m in stored.messages]
    calls = {k: {**c, "message_id": position.get(c["message_id"])} for k, c in stored.tool_calls.items()}
    usage = [{**{k: v for k, v in u.items() if k != "id"}, "message_id": position.get(u["message_id"])}
             for u in stored.usage]
    session = dict(conn.execute("SELECT * FROM sessions WHERE id = ?", (sid,)).fetchone())
    approvals = [dict(r) for r in conn.execute("SELECT * FROM approvals WHERE session_id = ? ORDER BY id", (sid,))]
    answers = db.offline_answers(conn, sid)
    inputs = [(r[0], r[1]) for r in conn.execute(
        "SELECT text, created_at FROM input_history WHERE session_id = ? ORDER BY created_at", (sid,))]
    return {"session": session, "info": stored.info.__dict__, "messages": messages, "calls": calls, "usage": usage,
            "turns": stored.turns, "approvals": approvals, "answers": answers, "inputs": inputs}


def count(conn: db.Database, table: str) -> int:
    return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``hermes-tui ARGV`` in this process: exit code, stdout, stderr."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_exe(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``hermes-tui ARGV`` as its own process (from outside the checkout)."""
    environ = {k: v for k, v in os.environ.items() if k != "HERMES_TUI_STORE_URL"}
    return subprocess.run([str(EXE), *argv], capture_output=True, text=True, cwd=cwd, env={**environ, **(env or {})},
                          timeout=60)


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """A SQLite store holding :func:`build_session`."""
    path = tmp_path / "source.db"
    conn = opening.connect(path)
    try:
        build_session(conn)
    finally:
        conn.close()
    return path


# -- migrate -------------------------------------------------------------------------------------


def test_migrate_sqlite_to_postgres_copies_every_part_of_a_session(source: Path, pg_url: str,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    target = open_url(pg_url)
    build_other(target)  # the target numbers its messages from 8: the copied ids must be remapped
    target.close()
    code, out, err = run(capsys, "store", "migrate", "--from", sqlite_url(source), "--to", pg_url)
    assert code == 0, err
    assert out.splitlines()[0].startswith("copied 2 sessions (8 messages), skipped 0 already there, replaced 0, in ")
    assert "and 2 inputs of the history" in out
    src, dst = opening.connect(source), open_url(pg_url)
    try:
        for sid in (SESSION, CHILD):
            assert picture(dst, sid) == picture(src, sid)
        copied = picture(dst, SESSION)
        assert copied["session"]["max_cost_usd"] == 2.5 and copied["session"]["host"] == opening.host_name()
        assert copied["messages"][1]["reasoning"] == "the user wants ls"
        assert [a["status"] for a in copied["approvals"]] == ["answered", "pending"]
        assert copied["answers"][0]["decision"] == "deny" and copied["answers"][0]["who"] == "me@laptop (pid 1)"
        assert copied["info"]["cost_usd"] == pytest.approx(0.0125) and copied["info"]["tokens_in"] == 2500
        assert db.pending_requests(dst, SESSION)[0]["answer"]["reason"] == "not now"
        assert count(dst, "leases") == 0
        outside = [r[0] for r in dst.execute("SELECT text FROM input_history WHERE session_id IS NULL")]
        assert outside == ["typed before any session"]
    finally:
        src.close()
        dst.close()


def test_tool_calls_and_usage_point_at_the_new_ids_of_their_messages(source: Path, pg_url: str,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    target = open_url(pg_url)
    build_other(target, messages=11)
    target.close()
    assert run(capsys, "store", "migrate", "--from", sqlite_url(source), "--to", pg_url)[0] == 0
    src, dst = opening.connect(source), open_url(pg_url)
    try:
        old = {r["id"] for r in src.execute("SELECT id FROM messages WHERE session_id = ?", (SESSION,))}
        new = {r["id"] for r in dst.execute("SELECT id FROM messages WHERE session_id = ?", (SESSION,))}
        assert not old & new  # the ids did change
        for call_id in ("c1", "c2"):
            row = dst.execute("SELECT message_id FROM tool_calls WHERE session_id = ? AND id = ?",
                              (SESSION, call_id)).fetchone()
            message = dst.execute("SELECT * FROM messages WHERE id = ?", (row["message_id"],)).fetchone()
            assert message["session_id"] == SESSION and message["role"] == "assistant"
            assert [c["id"] for c in json.loads(message["tool_calls"])] == [call_id]
        usage = dst.execute("SELECT message_id FROM usage WHERE session_id = ? ORDER BY id", (SESSION,)).fetchall()
        first = dst.execute("SELECT tool_calls FROM messages WHERE id = ?", (usage[0]["message_id"],)).fetchone()
        assert json.loads(first["tool_calls"])[0]["id"] == "c1" and usage[1]["message_id"] is None
    finally:
        src.close()
        dst.close()


def test_sessions_export_and_inspect_show_the_same_on_source_and_target(source: Path, pg_url: str,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "store", "migrate", "--from", sqlite_url(source), "--to", pg_url)[0] == 0
    for argv in (["sessions", "--json"], ["export", SESSION], ["export", "latest"], ["inspect", SESSION, "--json"],
                 ["inspect", SESSION, "--pending"], ["inspect", CHILD, "--json"]):
        code_a, on_source, err_a = run(capsys, "--store", sqlite_url(source), *argv)
        code_b, on_target, err_b = run(capsys, "--store", pg_url, *argv)
        assert (code_a, code_b) == (0, 0), (err_a, err_b)
        assert on_target == on_source and on_source.strip(), argv
    code, out, _ = run(capsys, "--store", pg_url, "sessions", "--json")
    assert [json.loads(line)["id"] for line in out.splitlines()] == [SESSION]  # a sub-agent's is not listed


def test_a_second_run_copies_nothing_a_grown_session_is_replaced_a_longer_one_kept(
        source: Path, pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("store", "migrate", "--from", sqlite_url(source), "--to", pg_url, "--json")
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert json.loads(out)["copied"] == 2
    code, out, _ = run(capsys, *argv)
    again = json.loads(out)
    assert (code, again["copied"], again["skipped"], again["replaced"], again["inputs"]) == (0, 0, 2, 0, 0)
    dst = open_url(pg_url)
    before = {t: count(dst, t) for t in ("sessions", "messages", "tool_calls", "usage", "approvals",
                                         "approval_answers", "input_history", "turns")}
    dst.close()

    src = opening.connect(source)  # the session goes on in the source
    db.add_message(src, SESSION, f"{SESSION}-t2", "assistant", "cleaned")
    db.end_turn(src, f"{SESSION}-t2", "done")
    src.close()
    code, out, _ = run(capsys, *argv)
    third = json.loads(out)
    assert (third["copied"], third["replaced"], third["replaced_messages"], third["skipped"]) == (0, 1, 7, 1)
    src, dst = opening.connect(source), open_url(pg_url)
    try:
        assert picture(dst, SESSION) == picture(src, SESSION)
        after = {t: count(dst, t) for t in before}
        assert after == {**before, "messages": before["messages"] + 1}  # replaced, not doubled
        db.add_message(dst, CHILD, f"{CHILD}-t1", "assistant", "continued in the target")
    finally:
        src.close()
        dst.close()
    code, out, _ = run(capsys, "store", "migrate", "--from", sqlite_url(source), "--to", pg_url)
    assert code == 0
    assert ", kept 1 (the target has more)" in out.splitlines()[0]
    assert f"kept {CHILD}: the target has more (3 messages, the source 2)" in out
    dst = open_url(pg_url)
    try:
        assert dst.execute("SELECT COUNT(*) FROM messages WHERE session_id = ?", (CHILD,)).fetchone()[0] == 3
    finally:
        dst.close()


def test_a_reply_that_finished_in_the_source_since_replaces_the_copy(tmp_path: Path, pg_url: str,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "live.db"
    src = opening.connect(path)
    db.create_session(src, "s1", None, None, None)
    db.start_turn(src, "s1", "t1", "user", "hi")
    reply = db.add_message(src, "s1", "t1", "assistant", "hel", status="streaming")
    src.close()
    argv = ("store", "migrate", "--from", sqlite_url(path), "--to", pg_url, "--json")
    assert json.loads(run(capsys, *argv)[1])["copied"] == 1
    src = opening.connect(path)
    db.update_message(src, reply, "hello there", "done")
    db.end_turn(src, "t1", "done")
    src.close()
    second = json.loads(run(capsys, *argv)[1])
    assert (second["replaced"], second["skipped"]) == (1, 0)
    dst = open_url(pg_url)
    try:
        assert dst.execute("SELECT content, status FROM messages WHERE session_id = 's1' AND role = 'assistant'"
                           ).fetchone()[:] == ("hello there", "done")
    finally:
        dst.close()
    assert json.loads(run(capsys, *argv)[1])["skipped"] == 1


def test_postgres_to_sqlite_round_trip(source: Path, pg_url: str, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    back = tmp_path / "new" / "back.db"
    assert run(capsys, "store", "migrate", "--from", sqlite_url(source), "--to", pg_url)[0] == 0
    code, out, err = run(capsys, "store", "migrate", "--from", pg_url, "--to", sqlite_url(back))
    assert code == 0, err
    assert out.startswith("copied 2 sessions (8 messages)")
    assert oct(back.stat().st_mode & 0o777) == "0o600"  # made as every store is
    src, dst = opening.connect(source), opening.connect(back)
    try:
        for sid in (SESSION, CHILD):
            assert picture(dst, sid) == picture(src, sid)
        assert count(dst, "input_history") == count(src, "input_history") == 2
    finally:
        src.close()
        dst.close()
    # And back into the first file: everything is there already.
    code, out, _ = run(capsys, "store", "migrate", "--from", sqlite_url(back), "--to", sqlite_url(source))
    assert (code, out.splitlines()[0].split(", in")[0]) == (
        0, "copied 0 sessions (0 messages), skipped 2 already there, replaced 0")


def test_from_defaults_to_the_store_in_use_and_session_picks_one_with_its_sub_agents(
        source: Path, tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    conn = opening.connect(source)
    build_other(conn, "20250505-000000-ffff", 3)
    conn.close()
    code, out, err = run(capsys, "--store", sqlite_url(source), "store", "migrate", "--to", pg_url,
                         "--session", SESSION[:12], "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["copied"], summary["copied_messages"], summary["inputs"]) == (2, 8, 1)
    assert summary["from"] == sqlite_url(source)
    dst = open_url(pg_url)
    try:
        assert sorted(r[0] for r in dst.execute("SELECT id FROM sessions")) == [SESSION, CHILD]
        assert [r[0] for r in dst.execute("SELECT text FROM input_history")] == ["list the files"]
    finally:
        dst.close()
    # --to defaults to the store in use too.
    code, out, err = run(capsys, "--store", pg_url, "store", "migrate", "--from", sqlite_url(source), "--json")
    assert code == 0, err
    assert (json.loads(out)["copied"], json.loads(out)["skipped"]) == (1, 2)


def test_dry_run_says_what_it_would_do_and_writes_nothing(source: Path, pg_url: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "store", "migrate", "--from", sqlite_url(source), "--to", pg_url, "--dry-run")
    assert code == 0, err
    assert f"would copy {SESSION} (6 messages)" in out and f"would copy {CHILD} (2 messages)" in out
    assert "would copy 2 sessions (8 messages), skip 0 already there, replace 0, keep 0" in out
    dst = open_url(pg_url)
    try:
        assert count(dst, "sessions") == 0
    finally:
        dst.close()


def test_the_source_is_only_read_even_an_older_schema(tmp_path: Path, pg_url: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "old.db"
    conn = opening.connect(path)
    build_session(conn, pending=False)
    # Back to schema 2, as a hermes-tui from before shared stores left it.
    conn.execute("DROP TABLE leases")
    conn.execute("ALTER TABLE sessions DROP COLUMN host")
    conn.execute("ALTER TABLE approvals DROP COLUMN host")
    conn.execute("DELETE FROM schema_version WHERE version = 3")
    conn.execute("PRAGMA user_version = 2")
    dump = list(conn.conn.iterdump())
    conn.close()
    code, out, err = run(capsys, "store", "migrate", "--from", sqlite_url(path), "--to", pg_url)
    assert code == 0, err
    assert out.startswith("copied 2 sessions (6 messages)")
    raw = sqlite3.connect(path)
    try:
        assert list(raw.iterdump()) == dump  # not migrated, not written
    finally:
        raw.close()
    dst = open_url(pg_url)
    try:
        row = dst.execute("SELECT host, max_cost_usd FROM sessions WHERE id = ?", (SESSION,)).fetchone()
        assert (row["host"], row["max_cost_usd"]) == (None, 2.5)
    finally:
        dst.close()


def test_a_session_the_target_refuses_fails_alone_and_leaves_nothing_half_copied(
        source: Path, pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    dst = open_url(pg_url)
    db.create_session(dst, "elsewhere", None, None, None)  # holds an approval with the same id
    db.add_approval(dst, "elsewhere", None, {"id": f"{SESSION}-r1", "kind": "terminal", "text": "x"})
    dst.close()
    code, out, err = run(capsys, "store", "migrate", "--from", sqlite_url(source), "--to", pg_url)
    assert code == 1, err
    assert out.startswith("copied 1 session (2 messages), skipped 0 already there, replaced 0, 1 failed")
    assert f"failed {SESSION}: " in out and "approvals_pkey" in out
    dst = open_url(pg_url)
    try:
        for table in ("turns", "messages", "tool_calls", "usage", "approval_answers"):
            assert dst.execute(f"SELECT COUNT(*) FROM {table} WHERE session_id = ?", (SESSION,)).fetchone()[0] == 0
        assert dst.execute("SELECT COUNT(*) FROM sessions WHERE id = ?", (SESSION,)).fetchone()[0] == 0
        assert dst.execute("SELECT COUNT(*) FROM input_history WHERE session_id = ?", (SESSION,)).fetchone()[0] == 0
    finally:
        dst.close()


def test_the_same_store_is_refused(source: Path, pg_server, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "store", "migrate", "--from", sqlite_url(source), "--to",
                       sqlite_url(source.parent / "." / source.name))
    assert code == 2 and "--from and --to name the same store" in err
    name = pg_server.new_database()
    socket_url, tcp_url = pg_server.url(name), pg_server.url(name, tcp=True, password=True)
    code, _, err = run(capsys, "store", "migrate", "--from", socket_url, "--to", socket_url)
    assert code == 2 and "name the same store" in err
    code, _, err = run(capsys, "store", "migrate", "--from", socket_url, "--to", tcp_url)
    assert code == 2 and "are the same database: nothing to copy" in err and PG_PASSWORD not in err
    assert err.count("\n") == 1
    code, _, err = run(capsys, "store", "migrate")
    assert code == 2 and "give --to URL" in err


def test_identity_tells_two_databases_of_one_server_apart(pg_server) -> None:
    a, b = (open_url(pg_server.url(pg_server.new_database())) for _ in range(2))
    try:
        assert identity(a) != identity(b) and identity(a) == identity(a)
    finally:
        a.close()
        b.close()


def test_unknown_session_is_one_line(source: Path, pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "store", "migrate", "--from", sqlite_url(source), "--to", pg_url,
                         "--session", "nope")
    assert (code, out) == (2, "")
    assert err.startswith("hermes-tui: store migrate: no session matches 'nope' in sqlite://") and err.count("\n") == 1


def test_progress_bar_on_a_terminal_and_summary_on_stdout(source: Path, pg_url: str, tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    try:
        done = subprocess.run([str(EXE), "store", "migrate", "--from", sqlite_url(source), "--to", pg_url],
                              stdout=subprocess.PIPE, stderr=follower, text=True, cwd=tmp_path, timeout=60,
                              env={**os.environ, "COLUMNS": "100", "TERM": "xterm"})
        os.close(follower)
        follower = -1
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    assert done.returncode == 0
    assert done.stdout.startswith("copied 2 sessions (8 messages)")
    assert b"copying" in shown and b"sessions" in shown


def test_migrate_a_few_dozen_sessions(tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "many.db"
    conn = opening.connect(path)
    for index in range(30):
        sid = f"20260202-0000{index:02d}-aaaa"
        db.create_session(conn, sid, None, None, None)
        db.start_turn(conn, sid, f"{sid}-t", "user", f"task {index}")
        for step in range(19):
            reply = db.add_message(conn, sid, f"{sid}-t", "assistant", f"step {step}", tool_calls=[{"id": f"k{step}"}])
            db.start_tool_call(conn, sid, f"{sid}-t", reply, f"k{step}", "execute_code", "{}")
            db.add_usage(conn, sid, f"{sid}-t", reply, {"input_tokens": step})
    conn.close()
    code, out, err = run(capsys, "store", "migrate", "--from", sqlite_url(path), "--to", pg_url, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["copied"], summary["copied_messages"]) == (30, 600)
    dst = open_url(pg_url)
    try:
        wrong = dst.execute("SELECT COUNT(*) FROM tool_calls c JOIN messages m ON m.id = c.message_id "
                            "WHERE m.session_id <> c.session_id OR m.tool_calls NOT LIKE '%' || c.id || '%'"
                            ).fetchone()[0]
        assert wrong == 0 and count(dst, "tool_calls") == 570
    finally:
        dst.close()


# -- info ----------------------------------------------------------------------------------------


def test_info_on_sqlite(source: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--store", sqlite_url(source), "store", "info")
    assert code == 0, err
    assert f"store:      sqlite://{source}  (chosen by --store)" in out
    assert "backend:    SQLite" in out and f"schema:     version {LATEST} (this hermes-tui writes {LATEST})" in out
    assert "sessions:   2 (1 yours, 1 of sub-agents)" in out and "messages:   8" in out
    assert "approvals:  1 pending" in out and "leases:     0 live" in out and "size:" in out
    report = json.loads(run(capsys, "--store", sqlite_url(source), "store", "info", "--json")[1])
    assert {k: report[k] for k in ("kind", "chosen_by", "sessions", "user_sessions", "subagent_sessions", "messages",
                                   "pending_approvals", "live_leases", "schema_version")} == {
        "kind": "sqlite", "chosen_by": "--store", "sessions": 2, "user_sessions": 1, "subagent_sessions": 1,
        "messages": 8, "pending_approvals": 1, "live_leases": 0, "schema_version": LATEST}
    assert report["size_bytes"] > 0


def test_info_on_a_sqlite_file_not_created_yet(hermes_home: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HERMES_TUI_STORE_URL", raising=False)
    code, out, err = run(capsys, "store", "info")
    assert code == 0, err
    assert f"sqlite://{hermes_home / 'tui' / 'sessions.db'}  (chosen by the default)" in out
    assert "not created yet" in out
    assert not (hermes_home / "tui" / "sessions.db").exists()
    report = json.loads(run(capsys, "store", "info", "--json")[1])
    assert (report["exists"], report["chosen_by"]) == (False, "default")


def test_info_on_postgres_never_shows_the_password(pg_server, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    name = pg_server.new_database()
    url = pg_server.url(name, tcp=True, password=True)
    conn = open_url(url)
    build_session(conn)
    from hermes_tui.storage import leases

    leases.take(conn, SESSION, "owner-1", "buildbox", "hermes-tui app", pid=4242)
    conn.close()
    monkeypatch.setenv("HERMES_TUI_STORE_URL", url)
    code, out, err = run(capsys, "store", "info")
    assert code == 0, err
    assert PG_PASSWORD not in out + err
    assert f"postgresql://hermes:***@127.0.0.1:{pg_server.port}/{name}  (chosen by HERMES_TUI_STORE_URL)" in out
    assert "backend:    PostgreSQL 1" in out and "leases:     1 live" in out and "approvals:  1 pending" in out
    code, out, err = run(capsys, "store", "info", "--json")
    report = json.loads(out)
    assert PG_PASSWORD not in out + err
    assert (report["sessions"], report["live_leases"], report["chosen_by"]) == (2, 1, "HERMES_TUI_STORE_URL")
    assert report["size_bytes"] > 1_000_000 and report["server_version"][:1].isdigit()
    # A wrong password: one line, and neither password in it.
    wrong = url.replace(PG_PASSWORD, "Zq9-not-the-one")
    code, out, err = run(capsys, "--store", wrong, "store", "info")
    assert (code, out) == (2, "") and len(without_password_warning(err)) == 1 and "Zq9-not-the-one" not in err
    assert "--store carries a password" in err  # it is in the command line, for every process to read
    assert "password authentication failed" in err
    # An empty database: no schema yet, nothing created by looking.
    empty = pg_server.url(pg_server.new_database())
    code, out, err = run(capsys, "--store", empty, "store", "info")
    assert code == 0, err
    assert "schema:     none yet" in out and "sessions:   0" in out
    from hermes_tui.storage.postgres import PostgresDatabase

    probe = PostgresDatabase(parse_store_url(empty))
    try:
        assert probe.execute("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'"
                             ).fetchone()[0] == 0
    finally:
        probe.close()


# -- errors, as a user meets them ----------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_bad_urls_and_an_unreachable_server_are_one_line_exit_2(source: Path, tmp_path: Path, pg_server,
                                                                 hermes_home: Path) -> None:
    env = {"HERMES_HOME": str(hermes_home)}
    nobody = f"postgresql://hermes:{PG_PASSWORD}@127.0.0.1:{_closed_port()}/hermes"
    cases = [
        (["store", "migrate", "--from", "mysql://x/y", "--to", sqlite_url(tmp_path / "a.db")], "mysql:// stores"),
        (["store", "migrate", "--from", sqlite_url(source), "--to", "postgresql://u@h:99999/db"], "port"),
        (["store", "migrate", "--from", sqlite_url(source), "--to", "not a url"], "is not a URL"),
        (["store", "migrate", "--from", sqlite_url(tmp_path / "missing.db"), "--to", sqlite_url(tmp_path / "b.db")],
         "does not exist"),
        (["store", "migrate", "--from", sqlite_url(source), "--to", nobody], "--to: the sessions store"),
        (["store", "migrate", "--from", nobody, "--to", sqlite_url(tmp_path / "c.db")], "--from: the sessions store"),
        (["--store", nobody, "store", "info"], "cannot be reached"),
        (["--store", "postgresql://hermes@127.0.0.1/", "store", "info"], "names no database"),
    ]
    for argv, expected in cases:
        done = run_exe(*argv, cwd=tmp_path, env=env)
        assert done.returncode == 2, (argv, done.stderr)
        lines = without_password_warning(done.stderr)
        assert done.stdout == "" and len(lines) == 1, (argv, done.stderr)
        assert lines[0].startswith("hermes-tui: ") and expected in lines[0], (argv, done.stderr)
        assert "Traceback" not in done.stderr and PG_PASSWORD not in done.stderr
    assert not (tmp_path / "a.db").exists() and not (tmp_path / "b.db").exists()  # nothing made for nothing
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database, just bytes " * 100)
    done = run_exe("--store", sqlite_url(garbage), "store", "info", cwd=tmp_path, env=env)
    assert done.returncode == 2 and "not a usable SQLite database" in done.stderr and done.stderr.count("\n") == 1


def test_store_help_documents_the_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["store", "migrate", "--help"])
    text = capsys.readouterr().out
    assert "--from URL" in text and "--to URL" in text and "default: the store in use" in text
    assert "--session ID" in text and "--dry-run" in text


def test_a_session_in_use_in_the_source_is_copied_and_said(source: Path, pg_url: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from hermes_tui.storage import leases

    conn = opening.connect(source)
    assert leases.take(conn, SESSION, "owner-1", "buildbox", "hermes-tui run", pid=4242).ok
    conn.close()
    code, out, err = run(capsys, "store", "migrate", "--from", sqlite_url(source), "--to", pg_url)
    assert code == 0, err
    assert f"note: 1 session in use in the source while copied ({SESSION}): run this again" in out
    dst = open_url(pg_url)
    try:
        assert count(dst, "leases") == 0 and count(dst, "sessions") == 2  # leases stay where they are
    finally:
        dst.close()


@pytest.mark.parametrize(("source", "target", "driver", "action", "why"), [
    ((5, 5), None, None, "copy", ""),
    ((5, 5), (5, 5), None, "skip", "already there"),
    ((6, 6), (5, 5), None, "replace", "it grew in the source (5 -> 6 messages)"),
    ((6, 6), (5, 5), "hermes-tui app on b", "keep", "it is in use in the target now (hermes-tui app on b)"),
    ((5, 5), (6, 6), None, "keep", "the target has more (6 messages, the source 5)"),
    ((5, 5), (5, 4), None, "replace", "it changed in the source (5 -> 5 messages)"),  # a reply finished there
    ((5, 4), (5, 5), None, "keep", "the target has more (as many messages, and it went on there since)"),
])
def test_what_is_done_with_a_session_the_target_may_have(source, target, driver, action, why) -> None:
    from hermes_tui.storage.copy import Progress, decide

    def tally(counts):
        return None if counts is None else Progress(messages=counts[0], done=counts[1])

    planned = decide("s", tally(source), tally(target), driver)
    assert (planned.action, planned.why) == (action, why)


def without_password_warning(err: str) -> list[str]:
    """stderr's lines but the warning that ``--store`` carries a password (said first)."""
    return [line for line in err.splitlines() if "warning: --store carries a password" not in line]
