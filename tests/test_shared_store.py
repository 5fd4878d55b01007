"""Two "machines" on one PostgreSQL store: two HERMES_HOMEs (each its own config, caches,
sockets and locks) whose config.yaml names the same ``store.url``, driving the real CLI in
subprocesses against a real PostgreSQL server and the scripted model on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fake_models import FakeModelServer
from hermes_tui.storage import sessions as db
from hermes_tui.storage import opening
from hermes_tui.storage import leases
from hermes_tui.config.store_url import parse_store_url

CLI = [sys.executable, "-m", "hermes_tui"]


class Machine:
    """One HERMES_HOME with its own config naming the shared store."""

    def __init__(self, root: Path, name: str, store_url: str, model: FakeModelServer | None, extra: str = "") -> None:
        self.name = name
        self.home = root / f"home-{name}"
        self.home.mkdir()
        self.cwd = root / f"work-{name}"  # outside the checkout: python -m would import the checkout first
        self.cwd.mkdir()
        model_part = (f"model:\n  provider: custom\n  default: fake\n  base_url: {model.url}\n  max_retries: 0\n"
                      if model is not None else "")
        (self.home / "config.yaml").write_text(f"{model_part}store:\n  url: {store_url}\n{extra}")

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "HERMES_TUI_STORE_URL"}
        env["HERMES_HOME"] = str(self.home)
        return env

    def cli(self, *argv: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*CLI, *argv], capture_output=True, text=True, cwd=self.cwd, timeout=timeout,
                              input="", env=self.env())

    def start(self, *argv: str) -> subprocess.Popen[str]:
        return subprocess.Popen([*CLI, *argv], cwd=self.cwd, env=self.env(), text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)


def code_call(code: str) -> dict:
    return {"name": "execute_code", "arguments": {"code": code}}


def open_store(url: str) -> db.Database:
    return opening.open_database(parse_store_url(url))


def stored_session(url: str, session: str) -> db.StoredSession:
    """The session as the store holds it."""
    conn = open_store(url)
    try:
        stored = db.load_session(conn, session)
    finally:
        conn.close()
    assert stored is not None
    return stored


def wait_until(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_pause_on_a_approve_on_b_resume_on_a(pg_url: str, tmp_path: Path) -> None:
    script = "open('made.txt', 'w').write('from A')\nprint('wrote it')"
    with FakeModelServer([{"text": "Writing.", "tool_calls": [code_call(script)]}, {"text": "All done."}]) as model:
        a = Machine(tmp_path, "a", pg_url, model)
        b = Machine(tmp_path, "b", pg_url, model)
        paused = a.cli("run", "--session", "job1", "make the file")
        assert paused.returncode == 3, paused.stdout + paused.stderr

        listed = b.cli("sessions")  # B sees A's session, and where it ran
        assert listed.returncode == 0 and "job1" in listed.stdout and os.uname().nodename in listed.stdout
        pending = json.loads(b.cli("inspect", "job1", "--pending", "--json").stdout)["pending"]
        assert [(p["kind"], p["text"]) for p in pending] == [("script", script)]
        approved = b.cli("approve", "job1", "--all")
        assert approved.returncode == 0 and "approved (once)" in approved.stdout, approved.stderr
        assert "next: hermes-tui resume job1" in approved.stdout  # nobody drives it now

        seen = json.loads(a.cli("inspect", "job1", "--pending", "--json").stdout)["pending"]
        assert seen[0]["answer"]["decision"] == "once" and "@" in seen[0]["answer"]["who"]
        resumed = a.cli("resume", "job1")
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert "All done." in resumed.stdout
    assert (a.cwd / "made.txt").read_text() == "from A"  # it ran on A, where the run lives
    assert not (b.cwd / "made.txt").exists()
    assert not (b.home / "tui" / "sessions.db").exists() and not (a.home / "tui" / "sessions.db").exists()


def test_a_session_driven_on_a_is_refused_on_b_and_taken_over_when_a_dies(pg_url: str, tmp_path: Path) -> None:
    with FakeModelServer([{"text": "Thinking", "hang": 60}, {"text": "Back on B."}]) as model:
        a = Machine(tmp_path, "a", pg_url, model)
        b = Machine(tmp_path, "b", pg_url, model)
        running = a.start("run", "--session", "job2", "think hard")
        try:
            conn = open_store(pg_url)
            try:
                wait_until(lambda: leases.lease_of(conn, "job2") is not None and len(model.requests) >= 1)
            finally:
                conn.close()
            refused = b.cli("resume", "job2")
            assert refused.returncode == 2
            assert f"session job2 is driven by hermes-tui run on {os.uname().nodename} (pid {running.pid}" \
                in refused.stderr
            assert "Traceback" not in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
            listed = b.cli("sessions").stdout
            assert "[driven by hermes-tui run on" in listed
            again = b.cli("run", "--session", "job2", "me too")
            assert again.returncode == 2 and "driven by hermes-tui run" in again.stderr
            os.killpg(running.pid, signal.SIGKILL)  # A dies without a word
        finally:
            running.wait(10)
        # The holder was on this host and its process is gone: taken over at once, not after 30 s.
        started = time.monotonic()
        resumed = b.cli("resume", "job2")
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert time.monotonic() - started < 25
        assert "Took session job2 over from hermes-tui run on" in resumed.stdout + resumed.stderr
        assert "Back on B." in resumed.stdout


def test_a_stale_lease_from_another_machine_is_taken_over_and_said(pg_url: str, tmp_path: Path) -> None:
    with FakeModelServer([{"text": "Done here."}]) as model:
        b = Machine(tmp_path, "b", pg_url, model)
        conn = open_store(pg_url)
        try:
            db.create_session(conn, "job3", "custom", "fake", str(b.cwd))
            db.start_turn(conn, "job3", "t1", "automation", "begin")
            # A machine that no longer answers: another host (its own pid space), its heartbeat stopped.
            assert leases.take(conn, "job3", "owner-a", "machine-a", "hermes-tui run", pid=4242, space="machine-a").ok
            refused = b.cli("resume", "job3")
            assert refused.returncode == 2 and "hermes-tui run on machine-a (pid 4242" in refused.stderr
            conn.execute("UPDATE leases SET heartbeat_at = heartbeat_at - 31 WHERE session_id = 'job3'")
            resumed = b.cli("resume", "job3")
            assert resumed.returncode == 0, resumed.stdout + resumed.stderr
            assert "Took session job3 over from hermes-tui run on machine-a (pid 4242" in resumed.stdout + resumed.stderr
            assert leases.lease_of(conn, "job3") is None  # released when the resume ended
        finally:
            conn.close()


def test_kill_9_mid_stream_loses_nothing_that_was_shown(pg_url: str, tmp_path: Path) -> None:
    words = "".join(f"word{n} " for n in range(200))
    with FakeModelServer([{"text": words, "chunk": 6, "delay": 0.05}]) as model:
        a = Machine(tmp_path, "a", pg_url, model)
        running = a.start("run", "--session", "job4", "--json", "stream")
        shown: list[str] = []
        try:
            assert running.stdout is not None
            for line in running.stdout:
                event = json.loads(line)
                if event["event"] == "text":
                    shown.append(event["delta"])
                if "word30 " in "".join(shown):
                    break
            os.killpg(running.pid, signal.SIGKILL)
        finally:
            running.wait(10)
    stored = stored_session(pg_url, "job4")
    replies = [m["content"] for m in stored.messages if m["role"] == "assistant"]
    assert replies and "".join(shown) in replies[-1] and "word199" not in replies[-1]  # cut mid-stream


@pytest.mark.parametrize("choice", ["approve", "deny"])
def test_an_answer_from_b_reaches_the_dialog_of_the_app_on_a_at_once(pg_url: str, tmp_path: Path, choice: str) -> None:
    from helpers.terminal import Terminal, TMUX

    if TMUX is None:
        pytest.skip("tmux is not installed (.ci/run installs it)")
    a = Machine(tmp_path, "a", pg_url, None, "approvals:\n  mode: strict\n")
    b = Machine(tmp_path, "b", pg_url, None)
    terminal = Terminal(a.home, a.cwd, "--session", "held-on-a")
    try:
        terminal.wait_for("No model: type Python")
        terminal.type("from hermes_tools import terminal; r = terminal('echo from-' + 'machine-b'); "
                      "print(r.get('status') or 'ran', r.get('output') or r.get('error'))")
        terminal.key("Enter")
        terminal.wait_for("Approve this terminal command?")
        pending = b.cli("inspect", "held-on-a", "--pending")
        assert "echo from-machine-b" in pending.stdout
        assert "the app that drives it (hermes-tui app on" in pending.stdout
        argv = ["approve", "held-on-a", "--all"] if choice == "approve" else \
            ["deny", "held-on-a", "--all", "--reason", "not from here"]
        answered = b.cli(*argv)
        assert answered.returncode == 0, answered.stderr
        assert "takes the answers at once" in answered.stdout
        if choice == "approve":
            screen = terminal.wait_for("│ran from-machine-b", timeout=10)  # the dialog closed, the command ran
        else:
            screen = terminal.wait_for("│blocked", timeout=10)
            assert "not from here" in screen.replace("│", "").replace("\n", "") or "not from here" in terminal.screen()
        assert "Approve this terminal command?" not in screen
        import getpass

        said = terminal.wait_for("Answered from", timeout=10).replace("\n", " ")
        assert f"Answered from {getpass.getuser()}@{os.uname().nodename}" in said, said
        terminal.quit()
    finally:
        terminal.close()
    conn = open_store(pg_url)
    try:
        row = conn.execute("SELECT status, decision FROM approvals WHERE session_id = 'held-on-a'").fetchone()
        assert row["status"] == "answered" and row["decision"] == ("once" if choice == "approve" else "deny")
        assert leases.lease_of(conn, "held-on-a") is None  # the app let it go when it quit
    finally:
        conn.close()


def test_postgresql_stopped_mid_session_the_app_says_so_and_catches_up(tmp_path: Path) -> None:
    from pg_server import PostgresServer, bindir
    from helpers.terminal import Terminal, TMUX

    if TMUX is None:
        pytest.skip("tmux is not installed (.ci/run installs it)")
    if bindir() is None:
        pytest.skip("PostgreSQL is not installed (.ci/run installs it: apt-get install postgresql)")
    server = PostgresServer()  # its own: stopping the suite's server would fail the other tests
    server.start()
    try:
        url = server.url(server.new_database())
        a = Machine(tmp_path, "a", url, None)
        terminal = Terminal(a.home, a.cwd, "--session", "outage")
        try:
            terminal.wait_for("No model: type Python")
            terminal.type("print('before-' + 'outage')")
            terminal.key("Enter")
            terminal.wait_for("before-outage ")
            server.stop("fast")
            terminal.type("print('during-' + 'outage')")
            terminal.key("Enter")
            screen = terminal.wait_for("kept in memory", timeout=30)
            assert "during-outage " not in screen  # the turn waits for its first write
            server.start()
            terminal.wait_for("is back", timeout=30)
            terminal.wait_for("during-outage ", timeout=30)
            server.stop("fast")  # and away again: quitting now must not wait for it for ever
            terminal.key("C-q")
            started = time.monotonic()
            while "app" in terminal.tmux("list-sessions") and time.monotonic() - started < 40:
                time.sleep(0.1)
            assert "app" not in terminal.tmux("list-sessions"), terminal.screen()
            assert time.monotonic() - started < 25  # the store's close wait (10 s) and a try, not more
        finally:
            terminal.close()
        server.start()
        stored = stored_session(url, "outage")
        typed = [m["content"] for m in stored.messages if m["role"] == "user"]
        assert typed == ["print('before-' + 'outage')", "print('during-' + 'outage')"]
        results = [c["result"] for c in stored.tool_calls.values()]
        assert sorted(r["output"].strip() for r in results) == ["before-outage", "during-outage"]
    finally:
        server.destroy()
