"""End to end: the installed `hermes-tui` in a real terminal (tmux): type code that calls
terminal(), approve it with a key, read the result off the screen."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.terminal import TMUX, ModelServer, Terminal

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed (.ci/run installs it)")


def test_type_code_approve_and_read_the_result(hermes_home: Path, tmp_path: Path) -> None:
    (hermes_home / "config.yaml").write_text("approvals:\n  mode: strict\n")  # every terminal() call asks
    terminal = Terminal(hermes_home, tmp_path)
    try:
        terminal.wait_for("No model: type Python")
        terminal.type("from hermes_tools import terminal; print(terminal('echo e2e-' + 'approved')['output'])")
        terminal.key("Enter")
        screen = terminal.wait_for("Approve this terminal command?")
        assert "echo e2e-approved" in screen and f"in {tmp_path}" in screen
        terminal.wait_armed()
        terminal.key("o")
        screen = terminal.wait_for("│e2e-approved ")  # the output pane's first line
        assert "success" in screen and "kernel k1" in screen
        terminal.quit()
    finally:
        terminal.close()
    log = (hermes_home / "tui" / "approvals.jsonl").read_text()
    assert '"decision": "once"' in log


def test_esc_interrupts_and_the_variable_is_still_there_at_80x24(hermes_home: Path, tmp_path: Path) -> None:
    terminal = Terminal(hermes_home, tmp_path, size=(80, 24))
    try:
        terminal.wait_for("No model")
        terminal.type("kept = 6 * 7")
        terminal.key("Enter")
        terminal.wait_for("success")
        terminal.type("import time; time.sleep(60)")
        terminal.key("Enter")
        terminal.wait_for("running")
        terminal.key("Escape")
        terminal.wait_for("interrupted")
        terminal.type("print('kept is', kept)")
        terminal.key("Enter")
        screen = terminal.wait_for("kept is 42")
        assert "NameError" not in screen
        terminal.quit()
    finally:
        terminal.close()


def kill_app(terminal: Terminal) -> None:
    import signal

    pid = int(terminal.tmux("display-message", "-p", "-t", "app", "#{pane_pid}").strip())
    os.kill(pid, signal.SIGKILL)


def test_kill_9_while_a_reply_streams_keeps_what_was_shown(hermes_home: Path, tmp_path: Path) -> None:
    import sqlite3

    words = " ".join(f"word{i:02d}" for i in range(60))
    server = ModelServer(hermes_home, tmp_path, [{"text": words, "chunk": 7, "delay": 0.15},
                                                 {"text": "Carrying on after the stop."}])
    try:
        terminal = Terminal(hermes_home, tmp_path, "--session", "e2e-stream")
        try:
            screen = terminal.say("stream something", until="word05")
            kill_app(terminal)
        finally:
            terminal.close()
        shown = [w for w in screen.split() if w.startswith("word")]
        db = sqlite3.connect(hermes_home / "tui" / "sessions.db")
        try:
            [(content, status)] = db.execute("SELECT content, status FROM messages WHERE role = 'assistant'").fetchall()
        finally:
            db.close()
        assert status == "streaming" and all(w in content.split() for w in shown)  # nothing on screen is lost
        for again in (False, True):  # Issue 32: the mark stays on every later resume, not the first only
            resumed = Terminal(hermes_home, tmp_path, "--resume", "e2e-stream")
            try:
                resumed.wait_for("the app stopped")  # the turn is marked interrupted
                resumed.wait_for("word05")  # and the reply is back as far as it was shown
                if again:  # Issue 32: the app can go on with it (it said "Nothing to retry")
                    resumed.say("/continue", until="Carrying on after the stop.")
                resumed.quit()
            finally:
                resumed.close()
            if not again:  # the cut session exports as not completed, with what was shown
                exported = subprocess.run([sys.executable, "-m", "hermes_tui", "export", "e2e-stream"], cwd=tmp_path,
                                          capture_output=True, text=True, timeout=60, env=os.environ.copy())
                record = json.loads(exported.stdout)
                assert record["completed"] is False, record
                assert "word05" in record["conversations"][-1]["value"]
    finally:
        server.close()


def test_kill_9_mid_turn_then_resume(hermes_home: Path, tmp_path: Path) -> None:
    """kill -9 of the real app while an approval waits; --resume asks again and the turn ends."""
    import sqlite3

    script = ("from hermes_tools import terminal\n"
              "print(terminal('echo resumed-' + 'ok')['output'])\n")
    server = ModelServer(hermes_home, tmp_path, [
        {"text": "Running it.", "tool_calls": [{"name": "execute_code", "arguments": {"code": script}}]},
        {"text": "After the restart the command printed resumed-ok."},
    ])
    try:
        first = Terminal(hermes_home, tmp_path, "--session", "e2e-kill")
        try:
            screen = first.say("please check the thing", until="Approve this terminal command?")
            assert "echo resumed-ok" in screen
            kill_app(first)
        finally:
            first.close()
        db = sqlite3.connect(hermes_home / "tui" / "sessions.db")
        try:
            assert db.execute("SELECT status FROM approvals").fetchall() == [("pending",)]
            assert db.execute("SELECT status FROM turns").fetchall() == [("running",)]
            shown = db.execute("SELECT content FROM messages WHERE role = 'assistant'").fetchall()
            assert shown == [("Running it.",)]  # what was on screen is stored
        finally:
            db.close()
        second = Terminal(hermes_home, tmp_path, "--resume")
        try:
            screen = second.wait_for("Approve this terminal command?")
            assert "echo resumed-ok" in screen
            second.wait_armed()
            second.key("o")
            second.wait_for("resumed-ok.")  # the final reply (the output pane shows it without the period)
            second.quit()
        finally:
            second.close()
    finally:
        server.close()
    db = sqlite3.connect(hermes_home / "tui" / "sessions.db")
    try:
        assert db.execute("SELECT status FROM turns").fetchall() == [("done",)]
        assert [r[0] for r in db.execute("SELECT role FROM messages ORDER BY id")] == [
            "user", "assistant", "tool", "assistant"]
        assert db.execute("SELECT status, decision FROM approvals").fetchall() == [("answered", "once")]
    finally:
        db.close()


def test_approve_from_a_shell_answers_the_open_dialog_of_the_app(hermes_home: Path, tmp_path: Path) -> None:
    (hermes_home / "config.yaml").write_text("approvals:\n  mode: strict\n")  # every terminal() call asks
    terminal = Terminal(hermes_home, tmp_path, "--session", "held-by-app")
    try:
        terminal.wait_for("No model: type Python")
        terminal.type("from hermes_tools import terminal; print(terminal('echo from-' + 'a-shell')['output'])")
        terminal.key("Enter")
        terminal.wait_for("Approve this terminal command?")
        pending = subprocess.run([sys.executable, "-m", "hermes_tui", "inspect", "held-by-app", "--pending"],
                                 capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert "echo from-a-shell" in pending.stdout
        answered = subprocess.run([sys.executable, "-m", "hermes_tui", "approve", "held-by-app", "--all"],
                                  capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert answered.returncode == 0 and "approved in the running app" in answered.stdout, answered.stderr
        screen = terminal.wait_for("│from-a-shell ")  # the dialog closed, the command ran
        assert "Approve this terminal command?" not in screen
        resume = subprocess.run([sys.executable, "-m", "hermes_tui", "resume", "held-by-app"],
                                capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert resume.returncode == 2 and "open in a running hermes-tui" in resume.stderr
        terminal.quit()
    finally:
        terminal.close()
    log = (hermes_home / "tui" / "approvals.jsonl").read_text()
    assert '"decision": "once"' in log
