"""Sessions without messages (issue 15): not listed, not ``latest``, removed when the app that
created them closes; and counts said in words (``1 tool call``, ``2 tool calls``)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from hermes_tui.storage import sessions as db
from hermes_tui.storage.writer import SessionStore
from hermes_tui.tui.app import HermesApp
from hermes_tui.base.units import noun, plural
from hermes_tui.tui.widgets.conversation import RunBlock

from conftest import make_config, open_store_db
from helpers.pilot import SIZE, submit, wait_until

CLI = [sys.executable, "-m", "hermes_tui"]


def run_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=60)


def add_session(home: Path, session: str, *, turn: str | None = None, updated_at: float | None = None) -> None:
    """A stored session, with one turn (its user message) when ``turn`` is given; ``updated_at``
    makes it newer or older than the others."""
    store = SessionStore.open(home)
    try:
        store.sync(db.create_session, session, None, None, "/tmp")
        if turn is not None:
            store.sync(db.start_turn, session, f"t-{session}", "user", turn)
            store.sync(db.end_turn, f"t-{session}", "done")
        if updated_at is not None:
            store.sync(lambda conn: conn.execute("UPDATE sessions SET updated_at = ? WHERE id = ?",
                                                 (updated_at, session)))
    finally:
        store.close()


def session_ids(home: Path) -> set[str]:
    conn = open_store_db(home)
    try:
        return {row["id"] for row in conn.execute("SELECT id FROM sessions")}
    finally:
        conn.close()


@pytest.fixture
def used_and_empty(store_backend: str, hermes_home: Path) -> Path:
    """``20261129-100000-used`` has a turn; ``20261129-110000-empty`` (newer) has none."""
    now = time.time()
    add_session(hermes_home, "20261129-100000-used", turn="list files", updated_at=now - 60)
    add_session(hermes_home, "20261129-110000-empty", updated_at=now)
    return hermes_home


# -- the store -----------------------------------------------------------------------------------


def test_the_store_lists_and_finds_only_sessions_with_messages(used_and_empty: Path) -> None:
    conn = open_store_db(used_and_empty)
    try:
        assert [s.id for s in db.list_sessions(conn)] == ["20261129-100000-used"]
        assert db.find_session(conn, "latest") == "20261129-100000-used"  # not the newer, empty one
        assert db.find_session(conn, "20261129-1") == "20261129-100000-used"  # the empty one does not make it ambiguous
        assert db.find_session(conn, "20261129-11") is None  # a prefix matches what is listed
        assert db.find_session(conn, "20261129-110000-empty") == "20261129-110000-empty"  # an id named in full is found
    finally:
        conn.close()


def test_latest_is_none_when_every_session_is_empty(store_backend: str, hermes_home: Path) -> None:
    add_session(hermes_home, "20261129-110000-empty")
    conn = open_store_db(hermes_home)
    try:
        assert db.find_session(conn, "latest") is None and db.list_sessions(conn) == []
    finally:
        conn.close()


def test_only_a_session_with_nothing_stored_is_deleted(store_backend: str, hermes_home: Path) -> None:
    add_session(hermes_home, "empty")
    add_session(hermes_home, "with-turn", turn="hello")
    add_session(hermes_home, "with-approval")
    add_session(hermes_home, "with-bare-turn")
    store = SessionStore.open(hermes_home)
    try:
        request = {"id": "a1", "kind": "command", "text": "rm -rf build"}
        store.sync(db.add_approval, "with-approval", None, request)  # pending, no turn
        store.sync(lambda conn: conn.execute(  # a turn row alone (no message)
            "INSERT INTO turns (id, session_id, origin, text, status, started_at) "
            "VALUES ('bare', 'with-bare-turn', 'user', '', 'running', 0)"))
        assert store.sync(db.delete_session_if_empty, "empty") is True
        for kept in ("with-turn", "with-approval", "with-bare-turn", "no-such-session"):
            assert store.sync(db.delete_session_if_empty, kept) is False, kept
    finally:
        store.close()
    assert session_ids(hermes_home) == {"with-turn", "with-approval", "with-bare-turn"}


# -- the command line ----------------------------------------------------------------------------


def test_sessions_command_skips_sessions_without_messages(used_and_empty: Path) -> None:
    listed = run_cli("sessions")
    assert listed.returncode == 0, listed.stderr
    assert "20261129-100000-used" in listed.stdout and "empty" not in listed.stdout
    assert "   1 msg        0 tok          -  list files" in listed.stdout  # one message: "msg", the column kept; no model call: "-"
    as_json = run_cli("sessions", "--json")
    assert as_json.returncode == 0, as_json.stderr
    rows = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [(r["id"], r["messages"]) for r in rows] == [("20261129-100000-used", 1)]


# The real CLI (`python -m hermes_tui --resume ...`) with the full-screen app replaced by a
# recorder and a terminal pretended: it prints the session the app would open.
RESUME_PROBE = """
import sys
import hermes_tui.tui.app


class Recorder:
    def __init__(self, config, *, session=None, **kwargs):
        self.session = session

    def run(self):
        print("OPENS", self.session)


hermes_tui.tui.app.HermesApp = Recorder
sys.stdin.isatty = sys.stdout.isatty = lambda: True
from hermes_tui.cli import main

sys.exit(main(sys.argv[1:]))
"""


def resume(*argv: str) -> subprocess.CompletedProcess[str]:
    # Run from a folder outside the checkout: `python -c` puts the working directory first on
    # sys.path; the probe is for the installed package.
    return subprocess.run([sys.executable, "-c", RESUME_PROBE, *argv], capture_output=True, text=True, timeout=60,
                          cwd=tempfile.gettempdir())


@pytest.mark.parametrize("argv", [["--resume"], ["--resume", "latest"]], ids=" ".join)
def test_resume_latest_skips_a_newer_empty_session(used_and_empty: Path, argv: list[str]) -> None:
    done = resume(*argv)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "OPENS 20261129-100000-used"


def test_resume_with_only_empty_sessions_is_one_line(store_backend: str, hermes_home: Path) -> None:
    add_session(hermes_home, "20261129-110000-empty")
    done = run_cli("--resume")
    # An opened-and-left session holds no conversation: it is not listed, so none is stored.
    assert done.returncode == 2 and "no sessions stored yet" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_export_says_how_many_messages_in_words(store_backend: str, hermes_home: Path, tmp_path: Path) -> None:
    add_session(hermes_home, "20261129-100000-used", turn="list files")
    done = run_cli("export", "latest", "-o", str(tmp_path / "out.json"))
    assert done.returncode == 0, done.stderr
    assert "(1 message) to" in done.stderr


# -- the app -------------------------------------------------------------------------------------


def no_model_app(home: Path, cwd: Path, session: str | None = None) -> HermesApp:
    return HermesApp(make_config(), cwd=str(cwd), home=home, session=session)


async def run_python(pilot, app: HermesApp, code: str) -> None:
    count = len(app.query(RunBlock))
    await submit(pilot, app, code)
    await wait_until(pilot, lambda: len(app.query(RunBlock)) > count and app.query(RunBlock).last().status == "success")


async def test_a_session_the_app_created_and_left_empty_is_removed(
        store_backend: str, hermes_home: Path, tmp_path: Path) -> None:
    add_session(hermes_home, "20261129-100000-used", turn="list files")
    app = no_model_app(hermes_home, tmp_path, session="s-nothing-said")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.agent is not None and app.workspace.listening)
        assert "s-nothing-said" in session_ids(hermes_home)  # stored while open
    assert session_ids(hermes_home) == {"20261129-100000-used"}


async def test_a_new_session_with_a_turn_is_kept_and_is_latest(
        store_backend: str, hermes_home: Path, tmp_path: Path) -> None:
    app = no_model_app(hermes_home, tmp_path, session="s-said")
    async with app.run_test(size=SIZE) as pilot:
        await run_python(pilot, app, "print(6 * 7)")
    assert session_ids(hermes_home) == {"s-said"}
    later = no_model_app(hermes_home, tmp_path)  # a new session (a fresh id), closed without a turn
    async with later.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: later.agent is not None and later.workspace.listening)
        assert later.session != "s-said"
    assert session_ids(hermes_home) == {"s-said"}
    from hermes_tui.cli.sessions_cmd import resolve_session

    assert resolve_session("latest") == "s-said"


async def test_an_empty_session_the_app_did_not_create_is_left_alone(
        store_backend: str, hermes_home: Path, tmp_path: Path) -> None:
    add_session(hermes_home, "s-made-elsewhere")  # another app's, or one from before: not this app's to remove
    app = no_model_app(hermes_home, tmp_path, session="s-made-elsewhere")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.agent is not None and app.workspace.listening)
    assert session_ids(hermes_home) == {"s-made-elsewhere"}


async def test_a_pending_approval_keeps_the_session(store_backend: str, hermes_home: Path, tmp_path: Path) -> None:
    app = no_model_app(hermes_home, tmp_path, session="s-asked")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.agent is not None and app.workspace.listening)
        request = {"id": "a1", "kind": "command", "text": "rm -rf build"}
        await app.workspace.store.call(db.add_approval, "s-asked", None, request)
    assert session_ids(hermes_home) == {"s-asked"}


async def test_the_picker_lists_sessions_with_messages_and_switching_away_removes_an_empty_one(
        store_backend: str, hermes_home: Path, tmp_path: Path) -> None:
    from hermes_tui.tui.screens.sessions import SessionsScreen

    add_session(hermes_home, "z-stored-empty", updated_at=time.time() + 3600)  # the newest row, and empty
    app = no_model_app(hermes_home, tmp_path, session="s-a")
    async with app.run_test(size=SIZE) as pilot:
        await run_python(pilot, app, "print('in a')")
        await submit(pilot, app, "/new")
        await wait_until(pilot, lambda: app.session != "s-a" and app.agent is not None
                         and app.agent.session_id == app.session and app.workspace.listening)
        fresh = app.session
        assert fresh in session_ids(hermes_home)
        await pilot.press("ctrl+o")
        await wait_until(pilot, lambda: isinstance(app.screen, SessionsScreen))
        assert [s.id for s in app.screen.sessions] == ["s-a"]  # neither the fresh one nor z-stored-empty
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.session == "s-a" and app.agent is not None
                         and app.agent.session_id == "s-a")
        assert fresh not in session_ids(hermes_home)  # left without a turn: removed on the switch
        notes = [str(n.render()) for n in app.query(".note")]
        assert any("s-a — 3 messages stored" in n for n in notes), notes
    assert session_ids(hermes_home) == {"s-a", "z-stored-empty"}  # another's empty row is not this app's


def test_the_picker_says_msg_for_one_message() -> None:
    from hermes_tui.tui.screens.sessions import SessionsScreen

    def info(messages: int) -> db.SessionInfo:
        return db.SessionInfo(id="s1", title="t", created_at=0, updated_at=0, provider=None, model=None, cwd=None,
                              messages=messages)

    screen = SessionsScreen([])
    assert "   1 msg   t" in screen._line(info(1)).plain
    assert "  12 msgs  t" in screen._line(info(12)).plain


async def test_a_resumed_session_of_one_message_says_message(
        store_backend: str, hermes_home: Path, tmp_path: Path) -> None:
    add_session(hermes_home, "s-one", turn="just this")
    app = no_model_app(hermes_home, tmp_path, session="s-one")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: any("messages stored" in str(n.render()) or "message stored" in str(n.render())
                                            for n in app.query(".note")))
        notes = [str(n.render()) for n in app.query(".note")]
        assert any("s-one — 1 message stored" in n for n in notes), notes


# -- counts in words -----------------------------------------------------------------------------


@pytest.mark.parametrize(("count", "word", "irregular", "said"), [
    (1, "tool call", None, "1 tool call"),
    (2, "tool call", None, "2 tool calls"),
    (0, "kernel", None, "0 kernels"),
    (1, "kernel", None, "1 kernel"),
    (1, "entry", None, "1 entry"),
    (3, "entry", None, "3 entries"),
    (2, "key", None, "2 keys"),
    (2, "match", None, "2 matches"),
    (2, "box", None, "2 boxes"),
    (1, "child", "children", "1 child"),
    (2, "child", "children", "2 children"),
    (-1, "degree", None, "-1 degrees"),
])
def test_plural(count: int, word: str, irregular: str | None, said: str) -> None:
    assert plural(count, word, irregular) == said
    assert noun(count, word, irregular) == said.split(" ", 1)[1]


def test_sizes_and_files_are_counted_in_words(tmp_path: Path) -> None:
    from hermes_tui.base.fsutil import size_text
    from hermes_tui.runtime.runtime import Runtime
    from hermes_tui.runtime.tools.changes import DIFF_SHOWN, capped
    from hermes_tui.runtime.tools.files import _read_pinned
    from hermes_tui.runtime.tools.opening import pin_regular

    def _read(path: Path, offset: int, limit: int) -> dict:
        with pin_regular(path) as pinned:  # type: ignore[union-attr]
            return _read_pinned(pinned.open(path), pinned.status.st_size, offset, limit, path)

    assert size_text(1) == "1 byte" and size_text(0) == "0 bytes" and size_text(812) == "812 bytes"
    one_line = tmp_path / "one.txt"
    one_line.write_text("only line\n")
    assert _read(one_line, 5, 10)["note"].endswith("the file has 1 line")
    binary = tmp_path / "one.bin"
    binary.write_bytes(b"\x00")
    assert "(1 byte)" in _read(binary, 1, 10)["error"]
    diff = "x" * (DIFF_SHOWN - 1) + "\n" + "last\n"
    assert capped(diff).endswith("... 1 more line (5 characters) of the change not shown\n")
    with pytest.raises(ValueError, match=r"unknown tool \['nope'\]"):
        Runtime._tool_set(["nope"])
    with pytest.raises(ValueError, match=r"unknown tools \['nope', 'nope2'\]"):
        Runtime._tool_set(["nope", "nope2"])


def test_one_left_out_message_is_said_in_the_singular() -> None:
    from hermes_tui.agent.history import History

    history = History()
    history.omitted = 1
    system, _, _ = history.request("base", [], hermes=False)
    assert "(1 earlier message of this conversation is left out" in system
    history.omitted = 2
    system, _, _ = history.request("base", [], hermes=False)
    assert "(2 earlier messages of this conversation are left out" in system
