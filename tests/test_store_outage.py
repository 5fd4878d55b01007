"""A shared store's server going away and coming back, against a real PostgreSQL server of the
module's own (the suite's shared one must not be stopped): writes wait and catch up, quitting
is bounded, a listener reconnects, a lease taken over is noticed, a headless run refuses a
store it cannot reach."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hermes_tui.storage import sessions as db
from hermes_tui.storage import opening
from hermes_tui.storage.writer import SessionStore
from hermes_tui.storage.errors import StoreUnavailable
from hermes_tui.storage.postgres import NotifyListener
from hermes_tui.config.store_url import parse_store_url


@pytest.fixture(scope="module")
def own_server():
    from pg_server import PostgresServer, bindir

    if bindir() is None:
        pytest.skip("PostgreSQL is not installed (.ci/run installs it: apt-get install postgresql)")
    server = PostgresServer()
    server.start()
    yield server
    server.destroy()


@pytest.fixture
def server(own_server):
    """The module's server, running (a test that stops it leaves it to be started here)."""
    if not own_server.running:
        own_server.start()
    return own_server


def test_writes_wait_for_the_server_and_are_all_there_when_it_is_back(server) -> None:
    url = parse_store_url(server.url(server.new_database()))
    news: list[tuple[bool, str]] = []
    store = SessionStore(url, on_health=lambda ok, text: news.append((ok, text)))
    try:
        store.sync(db.create_session, "s1", None, None, "/tmp")
        server.stop("fast")
        pending = [store.submit(db.add_input, "s1", f"typed while down {n}") for n in range(5)]
        deadline = time.monotonic() + 30
        while not news and time.monotonic() < deadline:
            time.sleep(0.05)
        assert news and news[0][0] is False and "Nothing is lost" in news[0][1]
        assert not any(f.done() for f in pending)  # waiting, not failed
        server.start()
        assert [f.result(timeout=60) for f in pending] == [True] * 5
        assert news[-1][0] is True and "is back" in news[-1][1]
        assert store.sync(db.load_inputs)[-5:] == [f"typed while down {n}" for n in range(5)]
    finally:
        store.close()


def test_closing_while_the_server_is_down_gives_up_after_the_wait_not_for_ever(server,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SessionStore, "CLOSE_WAIT", 1.0)
    url = parse_store_url(server.url(server.new_database()))
    store = SessionStore(url)
    store.sync(db.create_session, "s1", None, None, "/tmp")
    server.stop("fast")
    pending = [store.submit(db.add_input, "s1", f"never stored {n}") for n in range(7)]
    time.sleep(0.5)
    started = time.monotonic()
    store.close()
    took = time.monotonic() - started
    assert took < 8, f"close took {took:.1f} s"  # the wait (1 s) and one try, not one try per write
    for future in pending:
        assert isinstance(future.exception(timeout=1), StoreUnavailable)
    with pytest.raises(RuntimeError, match="closed"):
        store.submit(db.add_input, "s1", "too late")


def test_a_listener_reconnects_and_looks_up_what_it_missed(server) -> None:
    database = server.new_database()
    url = parse_store_url(server.url(database))
    connected = threading.Semaphore(0)
    heard: list[str] = []
    listener = NotifyListener(url, heard.append, connected.release)
    listener.start()
    try:
        assert connected.acquire(timeout=10)
        server.psql("NOTIFY hermes_tui, 'first'", database)
        deadline = time.monotonic() + 10
        while "first" not in heard and time.monotonic() < deadline:
            time.sleep(0.05)
        assert heard == ["first"]
        server.stop("fast")
        server.start()
        assert connected.acquire(timeout=30)  # back, and on_connect runs again (the catch-up)
        server.psql("NOTIFY hermes_tui, 'second'", database)
        deadline = time.monotonic() + 10
        while "second" not in heard and time.monotonic() < deadline:
            time.sleep(0.05)
        assert heard == ["first", "second"]
    finally:
        listener.stop()


def test_junk_notifications_are_ignored_by_the_workspace(server, hermes_home: Path, monkeypatch) -> None:
    from conftest import make_config
    from hermes_tui.agent.workspace import Workspace

    database = server.new_database()
    url = server.url(database)
    monkeypatch.setenv("HERMES_TUI_STORE_URL", url)
    answers: list[dict] = []

    async def answer(message: dict) -> dict:
        answers.append(message)
        return {"ok": False}

    async def scenario() -> None:
        workspace = Workspace(make_config(), home=hermes_home, cwd=str(hermes_home), ask=None, settings=None)  # type: ignore[arg-type]
        opened = await workspace.open("s-junk", lambda event: None)
        await workspace.listen_for_injected(opened.agent, answer)
        listening = workspace._listener.listening  # type: ignore[union-attr]
        await asyncio.to_thread(listening.wait, 10)
        for payload in ["not json", "[]", '{"event": "answer"}', json.dumps({"event": "answer", "session": "other"}),
                        "x" * 7000, json.dumps({"event": "answer", "session": "s-junk", "approval": "nope"})]:
            server.psql(f"NOTIFY hermes_tui, '{payload}'", database)
        await asyncio.sleep(1.0)
        await workspace.aclose()

    asyncio.run(scenario())
    assert answers == []  # nothing was waiting: nothing was answered, nothing broke


def test_a_lease_taken_over_is_noticed_and_the_front_end_told(server, hermes_home: Path, monkeypatch) -> None:
    from conftest import make_config
    from hermes_tui.agent.workspace import Workspace

    monkeypatch.setattr(SessionStore, "TICK_EVERY", 0.2)
    url = server.url(server.new_database())
    monkeypatch.setenv("HERMES_TUI_STORE_URL", url)
    told: list[tuple[str, str]] = []
    lost: list[str] = []

    async def scenario() -> None:
        workspace = Workspace(make_config(), home=hermes_home, cwd=str(hermes_home), ask=None, settings=None,  # type: ignore[arg-type]
                              on_store=lambda level, text: told.append((level, text)), on_lost=lost.append)
        await workspace.open("s-lease", lambda event: None)
        conn = opening.open_database(parse_store_url(url))
        try:  # another machine took it over while this one's heartbeat could not be written
            conn.execute("UPDATE leases SET owner = 'other', host = 'laptop-b', pid = 99, pid_space = 'b' "
                         "WHERE session_id = 's-lease'")
        finally:
            conn.close()
        for _ in range(50):
            if lost:
                break
            await asyncio.sleep(0.1)
        await workspace.aclose()

    asyncio.run(scenario())
    assert lost == ["s-lease"]
    assert any(level == "error" and "taken over by hermes-tui" in text and "laptop-b" in text for level, text in told)


def test_a_headless_run_refuses_a_store_it_cannot_reach(server, hermes_home: Path, tmp_path: Path) -> None:
    from fake_models import FakeModelServer

    code = "open('ran.txt', 'w').write('x')"
    with FakeModelServer([{"text": "", "tool_calls": [{"name": "execute_code", "arguments": {"code": code}}]}]) as model:
        (hermes_home / "config.yaml").write_text(
            f"model:\n  provider: custom\n  default: fake\n  base_url: {model.url}\n  max_retries: 0\n"
            f"store:\n  url: postgresql://nobody@127.0.0.1:1/nowhere\n")
        done = subprocess.run([sys.executable, "-m", "hermes_tui", "run", "--session", "j1", "go"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60, env=os.environ.copy())
    assert done.returncode == 2, done.stdout + done.stderr
    assert "cannot be reached" in done.stderr and "nothing was run" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not (tmp_path / "ran.txt").exists() and not model.requests
