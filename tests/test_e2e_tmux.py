"""End to end: the installed `hermes-tui` in a real terminal (tmux): type code that calls
terminal(), approve it with a key, read the result off the screen."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

TMUX = shutil.which("tmux")
pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed (.ci/run installs it)")


class Terminal:
    def __init__(self, home: Path, cwd: Path) -> None:
        self.socket = f"hermes-e2e-{os.getpid()}"
        app = Path(sys.executable).parent / "hermes-tui"
        subprocess.run(
            [TMUX, "-L", self.socket, "-f", "/dev/null", "new-session", "-d", "-s", "app", "-x", "160", "-y", "48",
             "-e", "COLORTERM=truecolor", "-e", "LANG=C.UTF-8", "-e", f"HERMES_HOME={home}", "-c", str(cwd),
             f"exec {app}"],
            check=True, timeout=30,
        )
        self.tmux("resize-window", "-t", "app", "-x", "160", "-y", "48")

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

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", "app", "-l", text)

    def key(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "app", *keys)

    def close(self) -> None:
        self.tmux("kill-server")


def test_type_code_approve_and_read_the_result(hermes_home: Path, tmp_path: Path) -> None:
    terminal = Terminal(hermes_home, tmp_path)
    try:
        terminal.wait_for("No model: type Python")
        terminal.type("from hermes_tools import terminal; print(terminal('echo e2e-' + 'approved')['output'])")
        terminal.key("Enter")
        screen = terminal.wait_for("Approve this terminal command?")
        assert "echo e2e-approved" in screen and f"in {tmp_path}" in screen
        terminal.key("o")
        screen = terminal.wait_for("│e2e-approved ")  # the output pane's first line
        assert "success" in screen and "kernel k1" in screen
        terminal.key("C-q")
        deadline = time.monotonic() + 10
        while "app" in terminal.tmux("list-sessions") and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        terminal.close()
    log = (hermes_home / "tui" / "approvals.jsonl").read_text()
    assert '"decision": "once"' in log
