"""Issue 31, item 8: a script that breaks ``$HERMES_HOME/config.yaml`` no longer keeps the app
from starting, and gains nothing by it.

The app opens with one line naming the file, the line and the key, and `hermes-tui doctor`;
a broken section that decides what may run refuses every script, command and file tool (no
default is as strict as what the file asked: approvals could fall to manual or off, the deny
list to empty, the sandbox tier be lost); a broken model section means no model; any other
broken section reads as its defaults. The real CLI in a real terminal (tmux), as the user
starts it.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import pytest

from hermes_tui.config.notes import backend_refusal
from hermes_tui.config.start import load_config_for_app
from hermes_tui.runtime import Runtime

from conftest import make_config
from helpers.terminal import ModelServer, Terminal

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")

BREAK_IT = """
import os
path = os.path.join(os.environ["HERMES_HOME"], "config.yaml")
with open(path, "a") as handle:
    handle.write("approvals:\\n  mode: [strict\\n")  # unclosed: not YAML any more
print("broke it")
"""


def squashed(text: str) -> str:
    """``text`` without spaces, newlines or box lines: a line the conversation wrapped reads whole."""
    return re.sub(r"[\s\u2500-\u259f]", "", text)  # box drawing and block elements (borders, bars)


def left_pane(screen: str) -> str:
    """The conversation alone: each line up to where it meets the pane beside it ("││"), so that
    a line it wrapped reads whole wherever the wrap fell (the temp path's length moves it)."""
    return "\n".join(line.split("││")[0] for line in screen.splitlines())


def wait_for_words(terminal: Terminal, *texts: str, timeout: float = 45.0) -> str:
    """The screen once each of ``texts`` is on it, however the pane wrapped it."""
    deadline = time.monotonic() + timeout
    while True:
        screen = terminal.screen()
        if all(squashed(text) in squashed(screen) or squashed(text) in squashed(left_pane(screen))
               for text in texts):
            return screen
        assert time.monotonic() < deadline, f"{texts} never appeared; the screen was:\n{screen}"
        time.sleep(0.05)


async def break_config_from_a_script(home: Path, cwd: Path) -> None:
    """A real kernel (unsandboxed: the sandbox would refuse the write) appends bad YAML."""
    (home / "config.yaml").write_text("approvals:\n  mode: strict\n  deny: ['rm *']\n")
    async with Runtime(make_config("code_execution:\n  sandbox: off\n"), home=home) as rt:
        result = await rt.execute_code(BREAK_IT, session="vandal", cwd=cwd)
    assert result.output == "broke it\n", result


@needs_tmux
async def test_the_app_starts_after_a_script_breaks_config_yaml_and_runs_nothing(hermes_home: Path,
                                                                                 tmp_path: Path) -> None:
    await break_config_from_a_script(hermes_home, tmp_path)
    terminal = Terminal(hermes_home, tmp_path, size=(200, 48))
    try:
        screen = wait_for_words(terminal, "config error:", "config.yaml: invalid YAML at line 6", "hermes-tui doctor")
        assert "nothing runs" in screen.strip().splitlines()[0]  # the top bar: its modes are not in force
        terminal.type("print('ran', 6 * 7)")
        terminal.key("Enter")
        screen = wait_for_words(terminal, "nothing runs until config.yaml is fixed")
        assert "ran 42" not in screen
        terminal.type("!echo bang-$((40 + 2))")
        terminal.key("Enter")
        screen = wait_for_words(terminal, "BLOCKED")
        assert "bang-42" not in screen  # refused, not run
        terminal.quit()
    finally:
        terminal.close()


@needs_tmux
def test_a_broken_approvals_value_refuses_the_model_s_scripts_but_keeps_the_model(hermes_home: Path,
                                                                                   tmp_path: Path) -> None:
    code = "print('model-ran', 6 * 7)"
    server = ModelServer(hermes_home, tmp_path, [
        {"text": "Running it.", "tool_calls": [{"name": "execute_code", "arguments": {"code": code}}]},
        {"text": "It was refused."},
    ])
    try:
        config = hermes_home / "config.yaml"
        # What a script may leave: approvals.mode strict kept, one value broken beside it.
        config.write_text(config.read_text().replace("  mode: strict\n", "  mode: strict\n  timeout: forever\n"))
        terminal = Terminal(hermes_home, tmp_path, size=(200, 48))
        try:
            wait_for_words(terminal, "line 7: approvals.timeout = 'forever' is not allowed", "hermes-tui doctor")
            terminal.say("run it", "It was refused.")  # the model is there: its section was fine
            screen = wait_for_words(terminal, "nothing runs until config.yaml is fixed")
            assert "model-ran 42" not in screen
            terminal.quit()
        finally:
            terminal.close()
    finally:
        server.close()
    import sqlite3

    from hermes_tui.storage.opening import sessions_db_path

    with sqlite3.connect(sessions_db_path(hermes_home)) as db:
        stored = "\n".join(str(row) for row in db.execute("SELECT * FROM messages"))
    assert "nothing runs until config.yaml is fixed" in stored  # what the model was told
    assert "model-ran 42" not in stored


@pytest.mark.parametrize(("broken", "runs", "model"), [
    ("approvals:\n  mode: sometimes\n", False, True),
    ("code_execution:\n  sandbox: partly\n", False, True),
    ("code_execution:\n  deny_read: 5\n", False, True),
    ("terminal:\n  env_passthrough: {a: 1}\n", False, True),
    ("command_allowlist: {a: 1}\n", False, True),
    ("model:\n  provider: [x]\n", True, False),
    ("agent:\n  max_cost_usd: lots\n", True, False),
    ("web:\n  timeout: -1\n", True, True),
    ("cache:\n  max_size: huge\n", True, True),
    ("approvals: [\n", False, False),
    ("- a list\n", False, False),
])
def test_what_each_broken_section_refuses(hermes_home: Path, broken: str, runs: bool, model: bool) -> None:
    path = hermes_home / "config.yaml"
    path.write_text("approvals:\n  mode: strict\n" + broken if not broken.startswith(("approvals", "-")) else broken)
    config = load_config_for_app(path)
    assert config.notices[0].startswith("config error: ") and "hermes-tui doctor" in config.notices[0]
    assert str(path) in config.notices[0]
    assert (backend_refusal(config.terminal) is None) == runs
    assert (getattr(config, "model_refused", None) is None) == model
    if runs and not broken.startswith(("model", "agent")):
        assert config.approvals.mode == "strict"  # the good sections are read as written
