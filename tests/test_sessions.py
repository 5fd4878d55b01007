"""Hermes-format parsing, the sessions store, and the export / sessions / inject commands."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_tui.storage import sessions as db
from hermes_tui.storage import opening
from hermes_tui.storage.writer import SessionStore
from hermes_tui.agent.models.hermes_format import HermesStreamParser
from hermes_tui.agent.tools import InvalidCall, ToolCall, validate_call

from conftest import open_store_db

REPLY = ('Checking.<tool_call>\n{"name": "terminal", "arguments": {"command": "ls -la"}}\n</tool_call>'
         ' and <tool_call>{"name": "read_file", "arguments": {"path": "a.txt"}}</tool_call> done <tool')


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(REPLY) - 1), unique=True).map(sorted))
def test_tool_calls_survive_any_chunking(cuts: list[int]) -> None:
    parser = HermesStreamParser()
    pieces = [REPLY[a:b] for a, b in zip([0, *cuts], [*cuts, len(REPLY)])]
    shown = "".join(parser.feed(p) for p in pieces) + parser.finish()
    assert shown == "Checking. and  done <tool"
    assert [(c.name, json.loads(c.arguments)) for c in parser.calls] == [
        ("terminal", {"command": "ls -la"}), ("read_file", {"path": "a.txt"})]


def test_malformed_blocks_become_errors_the_model_can_fix() -> None:
    parser = HermesStreamParser()
    parser.feed("<tool_call>{'name': 'terminal', 'arguments': {'command': 'pwd'}}</tool_call>")  # Python literal
    parser.feed("<tool_call>{not json}</tool_call><tool_call>{\"name\": \"execute_code\"")
    parser.finish()
    first, second, third = parser.calls
    assert validate_call(first).command == "pwd"
    for bad in (second, third):
        try:
            validate_call(bad)
        except InvalidCall as exc:
            assert "malformed tool call" in str(exc)
        else:
            raise AssertionError("accepted a malformed call")
    try:
        validate_call(ToolCall("c", "delegate_task", "{}"))
    except InvalidCall as exc:
        assert "unknown tool 'delegate_task'" in str(exc) and "execute_code" in str(exc)
    else:
        raise AssertionError("accepted a call of an unknown tool")


def make_session(home: Path) -> str:
    store = SessionStore.open(home)
    try:
        store.sync(db.create_session, "20261129-000000-abcd", "custom", "m", "/tmp")
        store.sync(db.start_turn, "20261129-000000-abcd", "t1", "user", "list files")
        call = {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "ls"}'}}
        message = store.sync(db.add_message, "20261129-000000-abcd", "t1", "assistant", "Listing.", tool_calls=[call])
        store.sync(db.start_tool_call, "20261129-000000-abcd", "t1", message, "c1", "terminal", '{"command": "ls"}')
        store.sync(db.finish_tool_call, "20261129-000000-abcd", "t1", "c1", "success", {"output": "a.txt"},
                   '{"output": "a.txt"}', None)
        store.sync(db.add_message, "20261129-000000-abcd", "t1", "assistant", "One file: a.txt.")
        store.sync(db.end_turn, "t1", "done")
    finally:
        store.close()
    return "20261129-000000-abcd"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hermes_tui.cli", *args], capture_output=True, text=True, timeout=60)


def test_database_is_wal_and_private(hermes_home: Path) -> None:  # the SQLite file itself: SQLite only
    make_session(hermes_home)
    path = opening.sessions_db_path(hermes_home)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    conn = opening.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.find_session(conn, "latest") == db.find_session(conn, "20261129") == "20261129-000000-abcd"
        assert db.find_session(conn, "nope") is None
    finally:
        conn.close()


def test_latest_and_a_prefix_find_the_session(store_backend: str, hermes_home: Path) -> None:
    make_session(hermes_home)
    conn = open_store_db(hermes_home)
    try:
        assert conn.kind == store_backend
        assert db.find_session(conn, "latest") == db.find_session(conn, "20261129") == "20261129-000000-abcd"
        assert db.find_session(conn, "nope") is None
    finally:
        conn.close()


def test_export_sharegpt_shape(store_backend: str, hermes_home: Path, tmp_path: Path) -> None:
    session = make_session(hermes_home)
    out = tmp_path / "trajectory.json"
    done = run_cli("export", "latest", "--format", "sharegpt", "-o", str(out))
    assert done.returncode == 0, done.stderr
    record = json.loads(out.read_text())
    assert record["id"] == session and record["completed"] is True
    turns = record["conversations"]
    assert all(set(t) == {"from", "value"} and isinstance(t["value"], str) for t in turns)
    assert [t["from"] for t in turns] == ["system", "human", "gpt", "tool", "gpt"]
    assert "<tools>\n[" in turns[0]["value"] and "execute_code" in turns[0]["value"]
    call = turns[2]["value"].split("<tool_call>")[1].split("</tool_call>")[0]
    assert json.loads(call) == {"name": "terminal", "arguments": {"command": "ls"}}
    response = turns[3]["value"].split("<tool_response>")[1].split("</tool_response>")[0]
    assert json.loads(response)["name"] == "terminal"
    assert {t["function"]["name"] for t in json.loads(record["tools"])} >= {"execute_code", "terminal"}
    to_stdout = run_cli("export", session[:8])
    assert json.loads(to_stdout.stdout)["conversations"] == turns


def test_export_with_nothing_stored_says_so(store_backend: str) -> None:
    missing = run_cli("export", "latest")
    assert missing.returncode == 2 and "no sessions stored yet" in missing.stderr


def test_cli_errors_are_one_line(store_backend: str, hermes_home: Path) -> None:
    # (With nothing stored yet: test_export_with_nothing_stored_says_so.)
    make_session(hermes_home)
    wrong = run_cli("export", "zzz")
    assert wrong.returncode == 2 and "no session matches 'zzz'" in wrong.stderr
    assert "Traceback" not in wrong.stderr
    listed = run_cli("sessions")
    assert "20261129-000000-abcd" in listed.stdout and "list files" in listed.stdout
    nobody = run_cli("inject", "hello")
    assert nobody.returncode == 2 and "no hermes-tui app is running" in nobody.stderr
    empty = run_cli("inject", " ")
    assert empty.returncode == 2 and "the message is empty" in empty.stderr
    bad_session = run_cli("--session", "../x")
    assert bad_session.returncode == 2 and "a session id is 1-64 letters" in bad_session.stderr
    bad_model = run_cli("--provider", "nope", "--model", "m")
    assert bad_model.returncode == 2 and "'nope' is not known" in bad_model.stderr
