"""End to end: the installed `hermes-tui` in a real terminal (tmux): type code that calls
terminal(), approve it with a key, read the result off the screen."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

TMUX = shutil.which("tmux")
pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed (.ci/run installs it)")


def without_size_variables() -> dict[str, str]:
    """This environment less COLUMNS and LINES, for the tmux server that a test starts (its panes
    inherit its environment). A pytest-xdist worker has COLUMNS=80 and LINES=24, and an app that
    finds them draws at 80x24 whatever the size of its pane."""
    return {name: value for name, value in os.environ.items() if name not in ("COLUMNS", "LINES")}


class Terminal:
    def __init__(self, home: Path, cwd: Path, *args: str, size: tuple[int, int] = (160, 48)) -> None:
        self.socket = f"hermes-e2e-{os.getpid()}-{time.monotonic_ns()}"
        app = Path(sys.executable).parent / "hermes-tui"
        width, height = (str(n) for n in size)
        subprocess.run(
            [TMUX, "-L", self.socket, "-f", "/dev/null", "new-session", "-d", "-s", "app", "-x", width, "-y", height,
             "-e", "COLORTERM=truecolor", "-e", "LANG=C.UTF-8", "-e", f"HERMES_HOME={home}", "-c", str(cwd),
             " ".join(["exec", str(app), *args])],
            check=True, timeout=30, env=without_size_variables(),
        )
        self.tmux("resize-window", "-t", "app", "-x", width, "-y", height)

    def tmux(self, *args: str) -> str:
        return subprocess.run([TMUX, "-L", self.socket, *args], capture_output=True, text=True, timeout=30).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "app")

    def wait_for(self, text: str, timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.05)
        raise AssertionError(f"{text!r} never appeared; the screen was:\n{self.screen()}")

    def wait_armed(self, timeout: float = 10.0) -> str:
        """Wait until the approval dialog takes answers (it ignores keys while "arming…" shows)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if "arming…" not in screen:
                return screen
            time.sleep(0.05)
        raise AssertionError(f"the dialog never armed; the screen was:\n{self.screen()}")

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", "app", "-l", text)

    def key(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "app", *keys)

    def say(self, text: str, until: str) -> str:
        """Once the model is shown, send a message; return the screen once ``until`` is on it."""
        self.wait_for("fake-model")
        self.type(text)
        self.key("Enter")
        return self.wait_for(until)

    def quit(self) -> None:
        """Ctrl+Q, then wait (up to 10 s) for the app to end."""
        self.key("C-q")
        deadline = time.monotonic() + 10
        while "app" in self.tmux("list-sessions") and time.monotonic() < deadline:
            time.sleep(0.05)

    def close(self) -> None:
        self.tmux("kill-server")


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


class ModelServer:
    """tests/fake_models.py in its own process, serving ``replies``; writes config.yaml."""

    def __init__(self, home: Path, folder: Path, replies: list[dict]) -> None:
        import json

        from conftest import wait_for

        (folder / "replies.json").write_text(json.dumps(replies))
        port_file = folder / "port"
        self.process = subprocess.Popen([sys.executable, str(Path(__file__).parent / "fake_models.py"),
                                         str(folder / "replies.json"), str(port_file)])
        assert wait_for(port_file.exists, timeout=10)
        url = f"http://127.0.0.1:{port_file.read_text()}/v1"
        (home / "config.yaml").write_text(f"model:\n  provider: custom\n  default: fake-model\n  base_url: {url}\n"
                                          "approvals:\n  mode: strict\n")

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


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
