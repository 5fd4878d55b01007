"""``hermes-tui --linear`` end to end (issue 39): the installed command in a real pty (pexpect),
real kernels, the scripted model server on 127.0.0.1. What a screen reader or a ``script(1)``
log gets: every event once, in order, as lines; never a cursor movement; a script's own
escapes shown, not obeyed."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from fake_models import FakeModelServer

APP = Path(sys.executable).parent / "hermes-tui"
CURSOR_MOVES = re.compile(r"\x1b\[[0-9;?]*[ABCDEFGHJKSTfsu]|\x1b[78DEM]|\x1b\[\?(?:1049|47|1047)[hl]")
"""CSI cursor movement, erasing and scrolling; save/restore, index, the alternate screen."""


class Captured:
    """Everything the command wrote to its terminal, as pexpect read it."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> None:
        self.parts.append(text)

    def flush(self) -> None:
        pass

    @property
    def text(self) -> str:
        return "".join(self.parts)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def spawn(workdir: Path, *argv: str, term: str = "dumb") -> tuple[pexpect.spawn, Captured]:
    captured = Captured()
    command = [str(APP)] if APP.exists() else [sys.executable, "-m", "hermes_tui"]
    child = pexpect.spawn(command[0], [*command[1:], "--linear", *argv], cwd=str(workdir), encoding="utf-8",
                          env={**os.environ, "TERM": term}, timeout=60, dimensions=(24, 80))
    child.logfile_read = captured
    child.expect("/help lists the commands")
    child.expect("> ")
    return child, captured


@pytest.fixture
def linear(hermes_home: Path, workdir: Path) -> Iterator[tuple[pexpect.spawn, Captured]]:
    child, captured = spawn(workdir)
    try:
        yield child, captured
    finally:
        if child.isalive():
            child.sendline("/quit")
            child.expect(pexpect.EOF, timeout=30)
        child.close(force=True)


def quit_and_check(child: pexpect.spawn, captured: Captured) -> str:
    child.sendline("/quit")
    child.expect(pexpect.EOF, timeout=30)
    child.close()
    assert child.exitstatus == 0
    assert not CURSOR_MOVES.search(captured.text), CURSOR_MOVES.findall(captured.text)
    return captured.text


def test_python_runs_its_result_prints_once_and_kernels_is_a_table(linear: tuple[pexpect.spawn, Captured]) -> None:
    child, captured = linear
    child.sendline("x = 6 * 7; print(x)")
    child.expect("← success")
    child.expect("42")
    child.expect("> ")
    child.sendline("print(x + 1)")  # the same kernel: its state kept
    child.expect("43")
    child.expect("> ")
    child.sendline("!echo from-the-shell")  # a typed command's output is printed too
    child.expect("→ terminal: echo from-the-shell")
    child.expect("\nfrom-the-shell")
    child.expect("> ")
    child.sendline("/kernels")
    child.expect(r"id\s+state\s+session\s+idle left\s+runs\s+sandbox")
    child.expect(r"k1\s+idle\s+\S+\s+\d+s\s+2\s")
    child.expect("> ")
    text = quit_and_check(child, captured)
    assert "\x1b" not in text  # TERM=dumb and no --color: not one escape
    assert text.count("→ execute_code: x = 6 * 7; print(x)") == 1 and text.count("\n42") == 1


def test_an_approval_is_a_numbered_question_answered_by_number(linear: tuple[pexpect.spawn, Captured],
                                                                 workdir: Path) -> None:
    child, captured = linear
    (workdir / "build").mkdir()
    child.sendline('from hermes_tools import terminal; r = terminal("rm -rf build"); print("code", r["exit_code"])')
    child.expect("approve this terminal command")
    child.expect("rm -rf build")
    child.expect("answer: 1 once, 2 session, 4 deny, 5 deny all")
    child.expect("answer> ")
    child.sendline("always")  # not offered for a flagged command
    child.expect("please answer with a number")
    child.expect("answer> ")
    child.sendline("1")
    child.expect("code 0")
    child.expect("> ")
    assert not (workdir / "build").exists()
    child.sendline('from hermes_tools import terminal; print(terminal("rm -rf dist"))')
    child.expect("answer> ")
    child.sendline("4")
    child.expect("reason")
    child.sendline("not now")
    child.expect("not now")
    child.expect("> ")
    quit_and_check(child, captured)
    log = (Path(os.environ["HERMES_HOME"]) / "tui" / "approvals.jsonl").read_text()
    decisions = [json.loads(line) for line in log.splitlines()]
    assert [d["decision"] for d in decisions if d.get("event") == "decision"] == ["once", "deny"]


def test_a_scripts_escapes_are_shown_not_obeyed_and_outputs_can_be_browsed(
        linear: tuple[pexpect.spawn, Captured]) -> None:
    child, captured = linear
    child.sendline(r'print("\x1b[2J\x1b[H cleared? " + "y" * 50000)')
    child.expect("← success")
    child.expect("> ")
    child.sendline("/outputs")
    child.expect(r"success\s+\S+\s+k1\s+\S+\s+(\d{8}-\d{6}-[0-9a-f]+)")
    run_id = child.match.group(1)
    child.expect("> ")
    child.sendline(f"/show {run_id[:-2]}")
    child.expect("y" * 1000)
    child.expect("> ")
    child.sendline("/show nothing-like-it")
    child.expect("no saved output 'nothing-like-it'")
    child.expect("> ")
    text = quit_and_check(child, captured)
    assert "\x1b[2J" not in text and "\\x1b[2J" in text


def test_ctrl_c_stops_a_running_script_and_the_kernel_keeps_its_state(linear: tuple[pexpect.spawn, Captured]) -> None:
    child, captured = linear
    child.sendline("kept = 'still here'")
    child.expect("> ")
    child.sendline("import time; time.sleep(60)")
    child.expect("→ execute_code")
    child.expect(pexpect.TIMEOUT, timeout=1.0)  # let it start sleeping
    child.sendintr()
    child.expect("← interrupted")
    child.expect("stopped by the user")
    child.expect("> ")
    child.sendline("print(kept)")
    child.expect("still here")
    child.expect("> ")
    quit_and_check(child, captured)


def test_readline_on_an_xterm_keeps_history_and_moves_no_cursor(hermes_home: Path, workdir: Path) -> None:
    child, captured = spawn(workdir, term="xterm-256color")
    child.sendline("print('first line')")
    child.expect("first line")
    child.expect("> ")
    text = quit_and_check(child, captured)
    assert "\x1b[?2004h" not in text  # no bracketed-paste switch either
    history = hermes_home / "tui" / "linear_history"
    assert "print('first line')" in history.read_text()
    assert history.stat().st_mode & 0o777 == 0o600
    child, captured = spawn(workdir, term="xterm-256color")
    child.send("\x1b[A\x1b[A")  # Up, Up: the line before the last run's /quit
    child.sendline("")
    child.expect("first line")
    child.expect("> ")
    child.sendline("/quit")
    child.expect(pexpect.EOF)
    child.close()


def test_a_model_turn_with_a_tool_call_and_color_only_as_sgr(hermes_home: Path, workdir: Path) -> None:
    script = "print('the model ran this')"
    with FakeModelServer([{"text": "Running it.", "tool_calls": [{"name": "execute_code",
                                                                  "arguments": {"code": script}}]},
                          {"text": "All done here."}]) as server:
        (hermes_home / "config.yaml").write_text(
            f"model:\n  provider: custom\n  default: fake\n  base_url: {server.url}\n  max_retries: 0\n")
        child, captured = spawn(workdir, "--color", term="xterm-256color")
        child.sendline("please run it")
        child.expect("Running it.")
        child.expect("→ execute_code: print\\('the model ran this'\\)")
        child.expect("the model ran this")
        child.expect("All done here.")
        child.expect("> ")
        text = quit_and_check(child, captured)
    assert "\x1b[36m→ execute_code" in text  # coloured, with SGR codes only
    assert set(re.findall(r"\x1b\[[0-9;]*([a-zA-Z])", text)) <= {"m"}
    assert len(server.requests) == 2


def test_end_of_input_leaves_and_piped_input_shows_no_prompts(hermes_home: Path, workdir: Path) -> None:
    import subprocess

    command = [str(APP)] if APP.exists() else [sys.executable, "-m", "hermes_tui"]
    done = subprocess.run([*command, "--linear"], input="print(2 ** 10)\n", capture_output=True, text=True,
                          cwd=workdir, timeout=120, env={**os.environ, "TERM": "dumb"})
    assert done.returncode == 0, done.stderr
    assert "1024" in done.stdout and "> " not in done.stdout


def test_end_of_input_at_a_question_denies_it_and_leaves(hermes_home: Path, workdir: Path) -> None:
    import subprocess

    (workdir / "build").mkdir()
    done = subprocess.run([*( [str(APP)] if APP.exists() else [sys.executable, "-m", "hermes_tui"]), "--linear"],
                          input='from hermes_tools import terminal; print(terminal("rm -rf build")["status"])\n',
                          capture_output=True, text=True, cwd=workdir, timeout=120, env={**os.environ, "TERM": "dumb"})
    assert done.returncode == 0, done.stderr
    assert "answer: 1 once" in done.stdout and "blocked" in done.stdout
    assert (workdir / "build").exists()


def test_an_answer_typed_after_its_question_was_withdrawn_is_not_run(
        linear: tuple[pexpect.spawn, Captured], workdir: Path) -> None:
    child, captured = linear
    (workdir / "build").mkdir()
    child.sendline('from hermes_tools import terminal; print(terminal("rm -rf build")["status"])')
    child.expect("answer> ")
    child.sendintr()  # Ctrl+C at the question: the run stops, the question is withdrawn
    child.expect("withdrawn")
    child.expect(r"\[turn interrupted\]")
    child.sendline("1")  # meant as "once", typed too late: not an input of its own
    child.expect("not used")
    child.expect("> ")
    child.sendline("print('next input')")
    child.expect("next input")
    child.expect("> ")
    text = quit_and_check(child, captured)
    assert "→ execute_code: 1\r" not in text
    assert (workdir / "build").exists()
