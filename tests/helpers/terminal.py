"""Real terminals: the installed app in tmux (``Terminal``), the model server in its own process
for it (``ModelServer``), and the CLI on a pseudo-terminal (``on_a_terminal``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

CLI = [sys.executable, "-m", "hermes_tui"]


TMUX = shutil.which("tmux")


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


class ModelServer:
    """tests/fake_models.py in its own process, serving ``replies``; writes config.yaml."""

    def __init__(self, home: Path, folder: Path, replies: list[dict]) -> None:
        import json

        from conftest import wait_for

        (folder / "replies.json").write_text(json.dumps(replies))
        port_file = folder / "port"
        self.process = subprocess.Popen([sys.executable, str(Path(__file__).parent.parent / "fake_models.py"),
                                         str(folder / "replies.json"), str(port_file)])
        assert wait_for(port_file.exists, timeout=10)
        url = f"http://127.0.0.1:{port_file.read_text()}/v1"
        (home / "config.yaml").write_text(f"model:\n  provider: custom\n  default: fake-model\n  base_url: {url}\n"
                                          "approvals:\n  mode: strict\n")

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def on_a_terminal(cwd: Path, prompts: int, answer: str) -> tuple[bytes, str]:
    """Run `hermes-tui exec t.py` on a pseudo-terminal; answer once `prompts` prompts showed.

    Returns what the terminal showed and what the command printed on stdout.
    """
    import os
    import pty
    import select

    master, slave = pty.openpty()
    process = subprocess.Popen([*CLI, "exec", "t.py"], cwd=cwd, stdin=slave, stdout=subprocess.PIPE,
                               stderr=slave, start_new_session=True)
    os.close(slave)
    seen = b""
    try:
        while seen.count(b"> ") < prompts:
            ready, _, _ = select.select([master], [], [], 30)
            assert ready, f"no prompt; saw {seen!r}"
            seen += os.read(master, 4096)
        os.write(master, answer.encode() + b"\n")
        out, _ = process.communicate(timeout=30)
    finally:
        process.kill()
        process.wait()
        os.close(master)
    return seen, out.decode()
