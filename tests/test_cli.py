"""`hermes-tui exec` and the top-level command, run as real processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_tui import __version__
from helpers.terminal import on_a_terminal

CLI = [sys.executable, "-m", "hermes_tui"]

STRICT = "approvals:\n  mode: strict\n"
"""config.yaml for tests of asking: every terminal() call asks (the default asks only for flagged ones)."""


def run(*argv: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *argv], input=stdin, capture_output=True, text=True, timeout=120, cwd=cwd
    )


@pytest.fixture
def scripts(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text("import json\nx = 41\nprint('a ran')\n")
    (tmp_path / "b.py").write_text("print(x + 1)\n")
    (tmp_path / "bad.py").write_text("raise RuntimeError('bad file')\n")
    return tmp_path


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "hermes-tui"
    done = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == f"hermes-tui {__version__}"


def test_help_lists_exec() -> None:
    done = run("--help")
    assert done.returncode == 0 and "exec" in done.stdout
    sub = run("exec", "--help")
    assert sub.returncode == 0 and "--session" in sub.stdout and "--json" in sub.stdout


def test_state_carries_from_file_to_file(scripts: Path) -> None:
    done = run("exec", "a.py", "b.py", cwd=scripts)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "a ran\n42\n"


def test_json_prints_one_result_per_file(scripts: Path) -> None:
    done = run("exec", "--json", "a.py", "b.py", cwd=scripts)
    assert done.returncode == 0
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["output"] for r in results] == ["a ran\n", "42\n"]
    assert results[1]["kernel"]["reused"] is True
    assert results[0]["kernel"]["id"] == results[1]["kernel"]["id"]
    assert {"status", "tool_calls_made", "duration_seconds", "stdout_truncated", "exec_id"} <= set(results[0])


def test_failure_exits_1_and_stops_unless_keep_going(scripts: Path) -> None:
    stopped = run("exec", "a.py", "bad.py", "b.py", cwd=scripts)
    assert stopped.returncode == 1
    assert stopped.stdout.startswith("a ran\n--- stderr ---\nTraceback")
    assert "42" not in stopped.stdout
    assert "bad.py: error: RuntimeError: bad file" in stopped.stderr
    assert "1 file not run" in stopped.stderr
    going = run("exec", "--keep-going", "a.py", "bad.py", "b.py", cwd=scripts)
    assert going.returncode == 1 and going.stdout.endswith("42\n")


def test_stdin_and_reset_and_timeout(scripts: Path) -> None:
    done = run("exec", "-", stdin="print(sum(range(10)))\n")
    assert done.returncode == 0 and done.stdout == "45\n"
    slow = run("exec", "--timeout", "1", "-", stdin="import time\ntime.sleep(30)\n")
    assert slow.returncode == 1
    assert "timeout: Script timed out after 1s and was killed." in slow.stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["exec", "missing.py"], "hermes-tui: exec: no such file: missing.py"),
        (["exec", "."], "hermes-tui: exec: . is a directory, not a Python file"),
        (["exec", "--timeout", "0", "a.py"], "'0' is not allowed: must be a number of seconds > 0"),
        (["exec", "--timeout", "soon", "a.py"], "'soon' is not a number of seconds"),
        (["exec", "-", "-"], "'-' (standard input) can be given only once"),
        (["exec"], "the following arguments are required: FILE"),
    ],
)
def test_usage_errors_exit_2_without_traceback(scripts: Path, argv: list[str], message: str) -> None:
    done = run(*argv, cwd=scripts, stdin="")
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_big_output_names_the_spill_file(scripts: Path, hermes_home: Path) -> None:
    done = run("exec", "-", stdin="print('y' * 100_000)\n")
    assert done.returncode == 0
    assert "OUTPUT TRUNCATED" in done.stdout
    assert f"full output (100001 bytes): {hermes_home}/cache/exec/" in done.stderr


def test_exec_without_a_terminal_denies_terminal_commands(tmp_path: Path, hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text(STRICT)
    (tmp_path / "t.py").write_text("from hermes_tools import terminal\nprint(terminal('touch made-it'))\n")
    done = subprocess.run([*CLI, "exec", "t.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, start_new_session=True)  # no controlling terminal
    assert done.returncode == 0
    assert "'status': 'blocked'" in done.stdout and "no one to approve" in done.stdout
    assert not (tmp_path / "made-it").exists()


@pytest.mark.parametrize(("answer", "ran"), [("o", True), ("d\nnot today", False)])
def test_exec_asks_on_a_terminal(tmp_path: Path, hermes_home: Path, answer: str, ran: bool) -> None:
    (hermes_home / "config.yaml").write_text(STRICT)
    (tmp_path / "t.py").write_text("from hermes_tools import terminal\nr = terminal('touch made-it')\n"
                                   "print(r.get('status'), r.get('error'))\n")
    seen, out = on_a_terminal(tmp_path, 1, answer)
    assert b"approve this terminal command?" in seen and b"touch made-it" in seen
    assert b"[o]nce [s]ession [a]lways [d]eny" in seen
    assert (tmp_path / "made-it").exists() == ran
    assert out == ("None None\n" if ran else "blocked BLOCKED: denied by the user: not today\n")


def test_an_unanswered_question_does_not_eat_the_next_answer(tmp_path: Path, hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text("approvals:\n  mode: strict\n  timeout: 1\n")
    (tmp_path / "t.py").write_text("from hermes_tools import terminal\nprint(terminal('touch first').get('status'))\n"
                                   "print(terminal('touch second').get('status'))\n")
    seen, out = on_a_terminal(tmp_path, 2, "o")  # the first question times out, the second is answered
    assert b"no answer in time: denied" in seen and b"touch second" in seen
    assert out == "blocked\nNone\n"
    assert not (tmp_path / "first").exists() and (tmp_path / "second").exists()


def test_a_reader_that_leaves_early_ends_it_quietly(hermes_home: Path) -> None:
    """`hermes-tui sessions | head -1`: the closed pipe is not a traceback."""
    from hermes_tui.storage import opening
    from hermes_tui.storage import sessions as store
    conn = opening.connect(opening.sessions_db_path(hermes_home))
    conn.execute("BEGIN")
    for number in range(3000):  # more than a pipe holds, so a write meets the closed end
        store.create_session(conn, f"s{number:05d}", None, None, None)
        store.add_message(conn, f"s{number:05d}", None, "user", "hello")  # only sessions with messages are listed
    conn.execute("COMMIT")
    conn.close()
    process = subprocess.Popen([*CLI, "sessions"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert process.stdout is not None and process.stdout.readline().startswith(b"s02999")
        process.stdout.close()  # the reader leaves
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 1 and err == b"", err.decode()[-2000:]


def cli(*argv: str, cwd: Path | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The command with its stdin empty (or ``stdin``), in a session of its own."""
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=120, cwd=cwd,
                          input=stdin if stdin is not None else "", start_new_session=True)


def test_top_level_yolo_applies_to_exec_and_is_refused_elsewhere(hermes_home: Path, tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("from hermes_tools import terminal\nprint(terminal('echo ran')['output'], end='')\n")
    done = cli("--yolo", "exec", "t.py", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == "ran\n", done.stderr
    assert "YOLO: approvals are off for this run" in done.stderr
    refused = cli("--yolo", "cache", "ls", cwd=tmp_path)
    assert refused.returncode == 2 and refused.stdout == ""
    assert "--yolo applies to the app and to exec, not to cache" in refused.stderr


def test_exec_tracebacks_name_the_script_file(hermes_home: Path, tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text("x = 1\n")
    (tmp_path / "analyse.py").write_text("def f():\n    raise ValueError('boom')\n\nf()\n")
    done = cli("exec", "setup.py", "analyse.py", cwd=tmp_path)
    assert done.returncode == 1
    assert 'File "analyse.py", line 4, in <module>' in done.stdout + done.stderr, done.stdout + done.stderr
    assert 'File "analyse.py", line 2, in f\n    raise ValueError' in done.stdout + done.stderr
    assert "<cell" not in done.stdout + done.stderr
    piped = cli("exec", "-", cwd=tmp_path, stdin="1 / 0\n")
    assert 'File "<stdin>", line 1, in <module>' in piped.stdout + piped.stderr
