"""Issue 32, items 11-16: the small things a new user's trial found."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers.agents import harness_factory  # noqa: F401 - a fixture

CLI = [sys.executable, "-m", "hermes_tui"]


def cli(*argv: str, cwd: Path | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
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


async def test_web_tools_without_a_backend_are_not_offered_to_the_model(harness_factory) -> None:
    from fake_models import FakeModelServer

    with FakeModelServer([{"text": "hi"}, {"text": "hi"}]) as server:
        bare = await harness_factory(server)
        assert await bare.turn("hello") == "done"
        configured = await harness_factory(server, session="s2", yaml_extra=(
            "web:\n  search_backend: searxng\n  searxng_url: http://127.0.0.1:9\n  extract_backend: http\n"))
        assert await configured.turn("hello") == "done"
    offered = {t["function"]["name"]: t["function"]["description"] for t in server.requests[0]["tools"]}
    assert "web_search" not in offered and "web_extract" not in offered and "terminal" in offered
    assert "Here web_search and web_extract are off" in offered["execute_code"]
    both = {t["function"]["name"]: t["function"]["description"] for t in server.requests[1]["tools"]}
    assert {"web_search", "web_extract"} <= set(both) and "are off" not in both["execute_code"]


def test_sizes_say_mib_beside_byte_counts(hermes_home: Path) -> None:
    from hermes_tui.base.units import human_size

    assert human_size(8 << 20, " ") == "8.0 MiB" and human_size(195.3 * 1024) == "195.3KiB" and human_size(12) == "12B"
    folder = hermes_home / "cache" / "exec"
    folder.mkdir(parents=True)
    (folder / "stdout-abc123.txt").write_bytes(b"x" * 1023 + b"\n" + b"y" * (3 * 1024 * 1024 - 1024))
    listed = cli("cache", "ls")
    assert listed.returncode == 0 and "  3.0MiB  " in listed.stdout, listed.stdout
    assert "3.0M " not in listed.stdout


SAME_SECOND = ("20261129-142501-3fa2", "20261129-142501-9bc1")


def _records(folder: Path, sessions: tuple[str, ...]) -> None:
    import json
    from datetime import datetime

    from hermes_tui.runtime.records import RECORD_FORMAT

    folder.mkdir(parents=True, exist_ok=True)
    for i, session in enumerate(sessions):
        exec_id = f"20261129-142502-{i:08x}"
        when = datetime(2026, 11, 29, 14, 25, 2 + i).astimezone().isoformat()
        (folder / f"{exec_id}.json").write_text(json.dumps({
            "format": RECORD_FORMAT, "id": exec_id, "status": "success", "session": session, "kernel_id": "k1",
            "started_at": when, "finished_at": when, "title": f"print({i})", "stdout_bytes_total": 2,
            "stdout_spill_path": None, "stdout_truncated": False, "code": f"print({i})\n", "output": f"{i}\n"}))


def test_cache_ls_shows_session_ids_as_unique_prefixes(hermes_home: Path) -> None:
    from hermes_tui.base.units import unique_prefixes

    long = ("delegate::parent-20261129::child-a", "delegate::parent-20261129::child-b")
    _records(hermes_home / "cache" / "exec", SAME_SECOND + long)
    listed = cli("cache", "ls")
    assert listed.returncode == 0, listed.stderr
    everyone = SAME_SECOND + long
    labels = unique_prefixes(everyone, 16)
    assert len(set(labels.values())) == 4 and all(f"  {labels[s]}  " in listed.stdout for s in everyone)
    for label in labels.values():  # each names one session: a prefix of it and of no other
        assert len([s for s in everyone if s.startswith(label.rstrip("…"))]) == 1, listed.stdout
    assert "20261129-14250 " not in listed.stdout  # the old cut, shared by two sessions


async def test_f9_list_shows_session_ids_as_unique_prefixes(hermes_home: Path, tmp_path: Path) -> None:
    from hermes_tui.tui.app import HermesApp
    from hermes_tui.tui.screens.cache_browser import CacheBrowser
    from hermes_tui.tui.widgets.entry_list import EntryList

    long = ("delegate::parent-20261129::child-a", "delegate::parent-20261129::child-b")
    _records(hermes_home / "cache" / "exec", SAME_SECOND + long)
    app = HermesApp(cwd=str(tmp_path), home=hermes_home)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.press("f9")
        browser = app.screen
        assert isinstance(browser, CacheBrowser)
        for _ in range(200):
            if len(browser.shown) == 4:
                break
            await pilot.pause(0.05)
        table = browser.query_one(EntryList)
        cells = [table.format(row).split()[3] for row in table.rows]
        assert len(set(cells)) == 4, cells
        for cell in cells:  # each names one session: a prefix of it and of no other
            assert len([s for s in SAME_SECOND + long if s.startswith(cell.rstrip("…"))]) == 1, cells


def _spilled(folder: Path, lines: int) -> str:
    """A record whose full output (``line N`` and one ESC sequence) is in a spill file; its id."""
    import json

    from hermes_tui.runtime.records import RECORD_FORMAT

    folder.mkdir(parents=True, exist_ok=True)
    exec_id = "20261129-142502-0000beef"
    spill = folder / f"{exec_id}.stdout.txt"
    spill.write_text("".join(f"line {n}\n" for n in range(lines)) + "clear\x1b[2Jme\n")
    (folder / f"{exec_id}.json").write_text(json.dumps({
        "format": RECORD_FORMAT, "id": exec_id, "status": "success", "session": "s", "kernel_id": "k1",
        "started_at": "2026-11-29T14:25:02+00:00", "finished_at": "2026-11-29T14:25:03+00:00", "title": "t",
        "stdout_bytes_total": spill.stat().st_size, "stdout_spill_path": str(spill), "stdout_truncated": True,
        "code": "", "output": ""}))
    return exec_id


def test_cache_show_head_and_tail_together(hermes_home: Path) -> None:
    exec_id = _spilled(hermes_home / "cache" / "exec", 10)
    both = cli("cache", "show", exec_id, "--head", "3", "--tail", "2")
    assert both.returncode == 0, both.stderr
    assert both.stdout == "line 0\nline 1\nline 2\nline 9\nclear\x1b[2Jme\n"  # a pipe: the bytes as they are
    assert "bytes not shown" in both.stderr
    overlapping = cli("cache", "show", exec_id, "--head", "8", "--tail", "5")
    assert overlapping.stdout == "".join(f"line {n}\n" for n in range(10)) + "clear\x1b[2Jme\n"
    assert "not shown" not in overlapping.stderr


def _on_a_tty(*argv: str, env: dict[str, str]) -> tuple[int, bytes]:
    """Run the CLI with its stdout on a pseudo-terminal; its exit code and what it wrote there."""
    import os
    import pty

    leader, follower = pty.openpty()
    try:
        done = subprocess.run([*CLI, *argv], stdout=follower, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                              env=env, timeout=60)
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal has no writer left
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(leader)
    return done.returncode, seen


def test_cache_show_pages_escaped_text_on_a_terminal_and_never_on_a_pipe(hermes_home: Path, tmp_path: Path) -> None:
    import os

    exec_id = _spilled(hermes_home / "cache" / "exec", 5000)
    paged = tmp_path / "paged.txt"
    env = {**os.environ, "HERMES_HOME": str(hermes_home), "PAGER": f"sh -c 'cat > {paged}'"}
    code, seen = _on_a_tty("cache", "show", exec_id, env=env)
    assert code == 0 and b"line 4999" not in seen  # it went to the pager, not the terminal
    text = paged.read_text()
    assert text.startswith("line 0\n") and "line 4999\n" in text
    assert "clear\\x1b[2Jme" in text and "\x1b" not in text  # the script's text, escaped
    bin_dir = tmp_path / "bin"  # no $PAGER: less -FRX, as git does
    bin_dir.mkdir()
    (bin_dir / "less").write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/less-args\ncat > {paged}\n")
    (bin_dir / "less").chmod(0o755)
    env = {**env, "PATH": f"{bin_dir}:{env['PATH']}"}
    del env["PAGER"]
    code, _ = _on_a_tty("cache", "show", exec_id, "--tail", "1", env=env)
    assert code == 0 and (tmp_path / "less-args").read_text() == "-FRX\n" and paged.read_text() == "clear\\x1b[2Jme\n"
    paged.unlink()
    piped = subprocess.run([*CLI, "cache", "show", exec_id], capture_output=True, env=env, timeout=60)
    assert piped.returncode == 0 and not paged.exists() and piped.stdout.endswith(b"clear\x1b[2Jme\n")


async def test_model_with_no_model_configured_says_how_instead_of_an_empty_picker(
        hermes_home: Path, tmp_path: Path) -> None:
    from hermes_tui.tui.app import HermesApp
    from hermes_tui.tui.widgets.conversation import PromptInput
    from hermes_tui.tui.screens.model_picker import ModelPicker

    app = HermesApp(cwd=str(tmp_path), home=hermes_home)
    async with app.run_test(size=(120, 40)) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.focus()
        prompt.insert("/model")
        await pilot.press("enter")
        for _ in range(100):
            shown = "\n".join(str(block.render()) for block in app.query("#transcript > *"))
            if "No model is configured" in shown:
                break
            await pilot.pause(0.05)
        assert not isinstance(app.screen, ModelPicker)
        assert "/model PROVIDER:NAME" in shown and "model.provider" in shown
